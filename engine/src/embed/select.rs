//! Choosing an embedder by name (SPEC.md §23.6): `none`, `hashing`,
//! `local`, `auto` (the local model when it is installed, else none) or
//! `openai`, with the OpenAI settings and the models directory. The CLI and
//! memdb-server both build their embedder here, so they accept the same
//! names and fail with the same messages; their flags, environment
//! variables and config files only fill [`EmbedderSettings`].
//!
//! A provider left out of the build (cargo features `local-onnx`, `openai`)
//! is still a valid name: selecting it is an [`Error::InvalidInput`] naming
//! the feature, and `auto` without `local-onnx` answers "no embedder" with a
//! note, as it does when the model is not installed.

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::embed::{Embedder, Hashing};
use crate::error::{Error, Result};

/// Environment variable naming the models directory.
const MODELS_ENV: &str = "MEMDB_MODELS";

/// The models directory to use when none is given: `$MEMDB_MODELS` if set
/// and not empty, else `<data dir>/memdb/models` (on Linux
/// `~/.local/share/memdb/models`), the default of `scripts/install-model.sh`.
pub fn default_models_dir() -> Result<PathBuf> {
    if let Some(dir) = std::env::var_os(MODELS_ENV).filter(|d| !d.is_empty()) {
        return Ok(PathBuf::from(dir));
    }
    dirs::data_dir()
        .map(|d| d.join("memdb").join("models"))
        .ok_or_else(|| {
            Error::Embedding(format!(
                "no per-user data directory on this platform; set {MODELS_ENV} to the models directory"
            ))
        })
}

/// Which embedder to build. With the `clap` feature it is also the
/// `--embedder` flag's value (`clap::ValueEnum`) for the server and the CLI.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "lowercase")]
pub enum EmbedderKind {
    /// No embedder: keyword search only (hybrid falls back to keyword).
    #[default]
    None,
    /// The deterministic hashing embedder ([`Hashing`], no model files).
    Hashing,
    /// The local ONNX model from the models directory; an error when it is
    /// not installed.
    Local,
    /// The local ONNX model when it is installed, else none (with a note).
    Auto,
    /// An OpenAI-compatible `/v1/embeddings` server, configured by
    /// [`OpenAiSettings`].
    Openai,
}

impl EmbedderKind {
    /// Every kind, in the order help texts list them.
    pub const ALL: [EmbedderKind; 5] = [
        EmbedderKind::Auto,
        EmbedderKind::Local,
        EmbedderKind::Openai,
        EmbedderKind::Hashing,
        EmbedderKind::None,
    ];

    /// The name (`none`, `hashing`, `local`, `auto`, `openai`).
    pub fn as_str(self) -> &'static str {
        match self {
            EmbedderKind::None => "none",
            EmbedderKind::Hashing => "hashing",
            EmbedderKind::Local => "local",
            EmbedderKind::Auto => "auto",
            EmbedderKind::Openai => "openai",
        }
    }
}

impl fmt::Display for EmbedderKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for EmbedderKind {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        EmbedderKind::ALL
            .into_iter()
            .find(|k| k.as_str() == s)
            .ok_or_else(|| {
                Error::invalid(
                    "embedder",
                    format!("{s:?} is not one of auto, local, openai, hashing, none"),
                )
            })
    }
}

/// Settings of the `openai` embedder. Surfaces fill them from flags,
/// `MEMDB_OPENAI_*` environment variables or a config file's `[openai]`
/// table. The API key is never a setting: it is read from
/// [`OpenAiSettings::KEY_ENV`] when the embedder is built. With the `clap`
/// feature it is also the server's and the CLI's `--openai-*` flags
/// (`clap::Args`, each falling back to its environment variable); without a
/// command line, [`OpenAiSettings::from_env`] reads the same variables.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
#[serde(default, deny_unknown_fields)]
pub struct OpenAiSettings {
    /// `--embedder openai`: the API root, `/v1` included (e.g.
    /// http://localhost:11434/v1 for Ollama).
    #[cfg_attr(
        feature = "clap",
        arg(
            long = "openai-base-url",
            env = OpenAiSettings::BASE_URL_ENV,
            value_name = "URL",
            global = true
        )
    )]
    pub base_url: Option<String>,
    /// `--embedder openai`: the embedding model's name on that server.
    #[cfg_attr(
        feature = "clap",
        arg(
            long = "openai-model",
            env = OpenAiSettings::MODEL_ENV,
            value_name = "NAME",
            global = true
        )
    )]
    pub model: Option<String>,
    /// `--embedder openai`: the model's vector dimension (required; it is
    /// part of the model's identity in the store).
    #[cfg_attr(
        feature = "clap",
        arg(
            long = "openai-dimension",
            env = OpenAiSettings::DIMENSION_ENV,
            value_name = "N",
            global = true
        )
    )]
    pub dimension: Option<u32>,
}

impl OpenAiSettings {
    /// The environment variable the API key is read from.
    pub const KEY_ENV: &'static str = "MEMDB_OPENAI_API_KEY";
    /// The environment variable of [`OpenAiSettings::base_url`].
    pub const BASE_URL_ENV: &'static str = "MEMDB_OPENAI_BASE_URL";
    /// The environment variable of [`OpenAiSettings::model`].
    pub const MODEL_ENV: &'static str = "MEMDB_OPENAI_MODEL";
    /// The environment variable of [`OpenAiSettings::dimension`].
    pub const DIMENSION_ENV: &'static str = "MEMDB_OPENAI_DIMENSION";
    /// The environment variable and flag of each setting, as the error for
    /// a missing one names them.
    pub const BASE_URL_SOURCE: &'static str = "MEMDB_OPENAI_BASE_URL (--openai-base-url)";
    /// See [`OpenAiSettings::BASE_URL_SOURCE`].
    pub const MODEL_SOURCE: &'static str = "MEMDB_OPENAI_MODEL (--openai-model)";
    /// See [`OpenAiSettings::BASE_URL_SOURCE`].
    pub const DIMENSION_SOURCE: &'static str = "MEMDB_OPENAI_DIMENSION (--openai-dimension)";

    /// The settings from the `MEMDB_OPENAI_*` environment variables (for
    /// surfaces without a command line, such as the Python package); an
    /// empty variable counts as unset, a dimension that is not a number is
    /// an `InvalidInput` naming the variable.
    pub fn from_env() -> Result<OpenAiSettings> {
        let var = |name: &str| {
            std::env::var(name)
                .ok()
                .map(|v| v.trim().to_string())
                .filter(|v| !v.is_empty())
        };
        let dimension = match var(Self::DIMENSION_ENV) {
            Some(d) => Some(d.parse::<u32>().map_err(|_| {
                Error::invalid(Self::DIMENSION_ENV, format!("{d:?} is not a dimension"))
            })?),
            None => None,
        };
        Ok(OpenAiSettings {
            base_url: var(Self::BASE_URL_ENV),
            model: var(Self::MODEL_ENV),
            dimension,
        })
    }

    /// These settings, each unset one taken from `base`.
    pub fn or(&self, base: &OpenAiSettings) -> OpenAiSettings {
        OpenAiSettings {
            base_url: self.base_url.clone().or_else(|| base.base_url.clone()),
            model: self.model.clone().or_else(|| base.model.clone()),
            dimension: self.dimension.or(base.dimension),
        }
    }

    /// The embedder these settings describe, or one line saying which
    /// settings are missing or wrong. Sends no request.
    #[cfg(feature = "openai")]
    pub fn embedder(&self) -> Result<crate::embed::OpenAiEmbedder> {
        let (url, model, dimension) = self.complete()?;
        let config =
            crate::embed::OpenAiConfig::new(url, model, dimension).api_key_env(Some(Self::KEY_ENV));
        crate::embed::OpenAiEmbedder::new(config)
            .map_err(|e| Error::invalid("embedder", format!("openai settings: {e}")))
    }

    /// The three required settings, or the error naming each missing one.
    fn complete(&self) -> Result<(&str, &str, u32)> {
        fn set(v: &Option<String>) -> Option<&str> {
            v.as_deref().map(str::trim).filter(|v| !v.is_empty())
        }
        match (set(&self.base_url), set(&self.model), self.dimension) {
            (Some(url), Some(model), Some(dimension)) => Ok((url, model, dimension)),
            (url, model, dimension) => {
                let missing: Vec<&str> = [
                    (url.is_none(), Self::BASE_URL_SOURCE),
                    (model.is_none(), Self::MODEL_SOURCE),
                    (dimension.is_none(), Self::DIMENSION_SOURCE),
                ]
                .into_iter()
                .filter_map(|(missing, name)| missing.then_some(name))
                .collect();
                Err(Error::invalid(
                    "embedder",
                    format!(
                        "openai needs its server, model and dimension: set {}",
                        missing.join(", ")
                    ),
                ))
            }
        }
    }
}

/// Everything [`select_embedder`] needs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EmbedderSettings {
    /// Which embedder.
    pub kind: EmbedderKind,
    /// Where the local model lives (`None`: [`default_models_dir`]).
    pub models_dir: Option<PathBuf>,
    /// The `openai` embedder's settings (ignored by the other kinds).
    pub openai: OpenAiSettings,
    /// The model the store's messages were embedded with, when known
    /// (`Memdb::stored_message_model`): with `MEMDB_LOCAL_MODEL` and
    /// `MEMDB_LOCAL_PRECISION` unset, a local model of that identity is
    /// the one chosen, so a store embedded before the default changed
    /// keeps its model (SPEC.md §23.6).
    pub stored: Option<crate::embed::ModelIdentity>,
}

impl EmbedderSettings {
    /// Settings for `kind` with the default models directory and no OpenAI
    /// settings.
    pub fn new(kind: EmbedderKind) -> Self {
        EmbedderSettings {
            kind,
            ..EmbedderSettings::default()
        }
    }
}

/// What [`select_embedder`] built.
#[derive(Clone)]
pub struct SelectedEmbedder {
    /// The embedder (`None`: keyword search only).
    pub embedder: Option<Arc<dyn Embedder>>,
    /// Set when `auto` found no usable local model: why there is no
    /// embedder and how to get one. Surfaces show it (a CLI note, a server
    /// log line).
    pub note: Option<String>,
}

impl fmt::Debug for SelectedEmbedder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SelectedEmbedder")
            .field("embedder", &self.embedder.as_ref().map(|e| e.identity()))
            .field("note", &self.note)
            .finish()
    }
}

/// The error for a provider this build was compiled without.
#[cfg_attr(all(feature = "local-onnx", feature = "openai"), allow(dead_code))]
fn not_compiled_in(kind: EmbedderKind, feature: &str) -> Error {
    Error::invalid(
        "embedder",
        format!(
            "{kind} is not available: this build of memdb was compiled without the cargo feature `{feature}`"
        ),
    )
}

/// Builds the embedder `settings` name. `local` and `openai` fail when
/// their settings are unusable or their provider was not compiled in;
/// `auto` answers no embedder, with a note, when the local model is not
/// installed (a damaged install is an error, never silently skipped). Sends
/// no request.
pub fn select_embedder(settings: &EmbedderSettings) -> Result<SelectedEmbedder> {
    let some = |e: Arc<dyn Embedder>| SelectedEmbedder {
        embedder: Some(e),
        note: None,
    };
    let models_dir = || match &settings.models_dir {
        Some(d) => Ok(d.clone()),
        None => default_models_dir(),
    };
    match settings.kind {
        EmbedderKind::None => Ok(SelectedEmbedder {
            embedder: None,
            note: None,
        }),
        EmbedderKind::Hashing => Ok(some(Arc::new(Hashing::default()))),
        EmbedderKind::Openai => openai(&settings.openai).map(some),
        EmbedderKind::Local => local(&models_dir()?, settings.stored.as_ref()).map(some),
        EmbedderKind::Auto => auto(&models_dir()?, settings.stored.as_ref()),
    }
}

#[cfg(feature = "openai")]
fn openai(settings: &OpenAiSettings) -> Result<Arc<dyn Embedder>> {
    Ok(Arc::new(settings.embedder()?))
}

#[cfg(not(feature = "openai"))]
fn openai(settings: &OpenAiSettings) -> Result<Arc<dyn Embedder>> {
    // Missing settings are reported first, as with the feature.
    settings.complete()?;
    Err(not_compiled_in(EmbedderKind::Openai, "openai"))
}

/// Environment variable choosing how the local model multiplies:
/// `int8` (the default) or `float` (the products of stores embedded before
/// int8 products existed; SPEC.md §23.4).
pub const LOCAL_PRECISION_ENV: &str = "MEMDB_LOCAL_PRECISION";

/// The precision `MEMDB_LOCAL_PRECISION`'s value names (unset or empty:
/// int8).
#[cfg(feature = "local-onnx")]
fn local_precision(value: Option<&str>) -> Result<crate::embed::LocalPrecision> {
    use crate::embed::LocalPrecision;
    match value.map(str::trim) {
        None | Some("") | Some("int8") => Ok(LocalPrecision::Int8),
        Some("float") => Ok(LocalPrecision::Float),
        Some(other) => Err(Error::invalid(
            LOCAL_PRECISION_ENV,
            format!("{other:?} is not one of int8, float"),
        )),
    }
}

/// Environment variable choosing the local model: `e5-small-v2` (the
/// default) or `minilm` (all-MiniLM-L6-v2; SPEC.md §23.4).
pub const LOCAL_MODEL_ENV: &str = "MEMDB_LOCAL_MODEL";

/// The local model `MEMDB_LOCAL_MODEL`'s value names (unset or empty: the
/// default).
#[cfg(feature = "local-onnx")]
fn local_model(value: Option<&str>) -> Result<crate::embed::LocalModel> {
    match value.map(str::trim) {
        None | Some("") => Ok(crate::embed::LocalModel::default()),
        Some(name) => name.parse().map_err(|_| {
            Error::invalid(
                LOCAL_MODEL_ENV,
                format!("{name:?} is not one of minilm, e5-small-v2"),
            )
        }),
    }
}

#[cfg(feature = "local-onnx")]
fn local(dir: &Path, stored: Option<&crate::embed::ModelIdentity>) -> Result<Arc<dyn Embedder>> {
    let named = |var: &str| std::env::var(var).ok().filter(|v| !v.trim().is_empty());
    let (model_env, precision_env) = (named(LOCAL_MODEL_ENV), named(LOCAL_PRECISION_ENV));
    let stored = match (&model_env, &precision_env) {
        (None, None) => stored.and_then(stored_local),
        _ => None,
    };
    let (model, precision) = match stored {
        Some(found) => found,
        None => (
            local_model(model_env.as_deref())?,
            local_precision(precision_env.as_deref())?,
        ),
    };
    Ok(Arc::new(crate::embed::LocalOnnx::open_with(
        dir,
        crate::embed::LocalOnnxOptions::default()
            .model(model)
            .precision(precision),
    )?))
}

/// The local model and precision whose vectors are `model`'s, if one is.
#[cfg(feature = "local-onnx")]
fn stored_local(
    model: &crate::embed::ModelIdentity,
) -> Option<(crate::embed::LocalModel, crate::embed::LocalPrecision)> {
    use crate::embed::{LocalModel, LocalPrecision};
    if model.provider != crate::embed::LOCAL_PROVIDER {
        return None;
    }
    LocalModel::ALL.into_iter().find_map(|m| {
        [LocalPrecision::Int8, LocalPrecision::Float]
            .into_iter()
            .find(|&p| m.identity_name(p) == model.name)
            .map(|p| (m, p))
    })
}

#[cfg(not(feature = "local-onnx"))]
fn local(_dir: &Path, _stored: Option<&crate::embed::ModelIdentity>) -> Result<Arc<dyn Embedder>> {
    Err(not_compiled_in(EmbedderKind::Local, "local-onnx"))
}

fn auto(dir: &Path, stored: Option<&crate::embed::ModelIdentity>) -> Result<SelectedEmbedder> {
    let keyword_only = |note: String| SelectedEmbedder {
        embedder: None,
        note: Some(note),
    };
    if !cfg!(feature = "local-onnx") {
        return Ok(keyword_only(
            "this build of memdb has no local embedding model (cargo feature `local-onnx`): \
             keyword search only"
                .into(),
        ));
    }
    match local(dir, stored) {
        Ok(e) => Ok(SelectedEmbedder {
            embedder: Some(e),
            note: None,
        }),
        Err(Error::ModelMissing { .. }) => Ok(keyword_only(format!(
            "no embedding model installed in {}: keyword search only \
             (install it with `memdb model install` or scripts/install-model.sh)",
            dir.display()
        ))),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(feature = "local-onnx")]
    #[test]
    fn the_local_precision_is_int8_unless_float_is_named() {
        use crate::embed::LocalPrecision;
        for v in [None, Some(""), Some("int8"), Some(" int8 ")] {
            assert_eq!(local_precision(v).unwrap(), LocalPrecision::Int8, "{v:?}");
        }
        assert_eq!(
            local_precision(Some("float")).unwrap(),
            LocalPrecision::Float
        );
        let e = local_precision(Some("fp16")).unwrap_err().to_string();
        assert!(
            e.contains("MEMDB_LOCAL_PRECISION") && e.contains("\"fp16\""),
            "{e}"
        );
    }

    #[cfg(feature = "local-onnx")]
    #[test]
    fn the_local_model_is_e5_unless_another_is_named() {
        use crate::embed::LocalModel;
        for v in [None, Some(""), Some("e5-small-v2"), Some(" e5-small-v2 ")] {
            assert_eq!(local_model(v).unwrap(), LocalModel::E5SmallV2, "{v:?}");
        }
        assert_eq!(local_model(Some("minilm")).unwrap(), LocalModel::MiniLm);
        let e = local_model(Some("bge")).unwrap_err().to_string();
        assert!(
            e.contains("MEMDB_LOCAL_MODEL") && e.contains("\"bge\""),
            "{e}"
        );
    }

    #[test]
    fn kinds_parse_from_their_names_only() {
        for k in EmbedderKind::ALL {
            assert_eq!(k.as_str().parse::<EmbedderKind>().unwrap(), k);
            assert_eq!(
                serde_json::to_value(k).unwrap(),
                serde_json::Value::String(k.to_string())
            );
        }
        let e = "onnx".parse::<EmbedderKind>().unwrap_err();
        assert!(e.to_string().contains("auto, local, openai"), "{e}");
        assert_eq!(EmbedderKind::default(), EmbedderKind::None);
    }

    #[test]
    fn none_and_hashing_need_no_files() {
        let none = select_embedder(&EmbedderSettings::new(EmbedderKind::None)).unwrap();
        assert!(none.embedder.is_none() && none.note.is_none());
        let h = select_embedder(&EmbedderSettings::new(EmbedderKind::Hashing)).unwrap();
        let id = h.embedder.unwrap().identity();
        assert_eq!(
            (id.provider.as_str(), id.dimension),
            ("hashing", Hashing::DEFAULT_DIMENSION)
        );
    }

    #[test]
    fn missing_openai_settings_are_named_in_one_line() {
        let mut s = EmbedderSettings::new(EmbedderKind::Openai);
        s.openai = OpenAiSettings {
            base_url: Some("http://x/v1".into()),
            model: Some("  ".into()),
            dimension: None,
        };
        let err = select_embedder(&s).unwrap_err().to_string();
        assert!(!err.contains('\n'), "{err}");
        assert!(err.contains("MEMDB_OPENAI_MODEL (--openai-model)"), "{err}");
        assert!(err.contains("MEMDB_OPENAI_DIMENSION"), "{err}");
        assert!(!err.contains("BASE_URL"), "{err}");
    }

    #[cfg(feature = "openai")]
    #[test]
    fn openai_settings_merge_field_by_field_and_build_the_embedder() {
        let file = OpenAiSettings {
            base_url: Some("http://localhost:11434/v1".into()),
            model: Some("nomic-embed-text".into()),
            dimension: Some(768),
        };
        let flags = OpenAiSettings {
            model: Some("other".into()),
            ..OpenAiSettings::default()
        };
        let mut s = EmbedderSettings::new(EmbedderKind::Openai);
        s.openai = flags.or(&file);
        let id = select_embedder(&s).unwrap().embedder.unwrap().identity();
        assert_eq!(
            (id.provider.as_str(), id.name.as_str(), id.dimension),
            ("openai", "other", 768)
        );
        // A bad value is the provider's own error, still one line.
        s.openai.dimension = Some(0);
        let err = select_embedder(&s).unwrap_err().to_string();
        assert!(err.contains("dimension"), "{err}");
        assert!(!err.contains('\n'), "{err}");
    }

    #[cfg(not(feature = "openai"))]
    #[test]
    fn openai_without_its_feature_is_a_clear_error() {
        let mut s = EmbedderSettings::new(EmbedderKind::Openai);
        s.openai = OpenAiSettings {
            base_url: Some("http://x/v1".into()),
            model: Some("m".into()),
            dimension: Some(8),
        };
        let err = select_embedder(&s).unwrap_err().to_string();
        assert!(err.contains("cargo feature `openai`"), "{err}");
    }

    #[test]
    fn local_without_a_model_fails_and_auto_says_why_it_has_none() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = EmbedderSettings::new(EmbedderKind::Local);
        s.models_dir = Some(dir.path().to_path_buf());
        let err = select_embedder(&s).unwrap_err();
        if cfg!(feature = "local-onnx") {
            assert!(matches!(err, Error::ModelMissing { .. }), "{err}");
        } else {
            assert!(err.to_string().contains("`local-onnx`"), "{err}");
        }
        s.kind = EmbedderKind::Auto;
        let auto = select_embedder(&s).unwrap();
        assert!(auto.embedder.is_none());
        let note = auto.note.unwrap();
        assert!(note.contains(": keyword search only"), "{note}");
        if cfg!(feature = "local-onnx") {
            assert!(note.contains("memdb model install"), "{note}");
            assert!(note.contains(&dir.path().display().to_string()), "{note}");
        }
    }
}
