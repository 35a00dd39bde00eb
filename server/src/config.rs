//! Server configuration: defaults, then a TOML file (`--config` /
//! `MEMDB_CONFIG`, else `~/.memdb/config.toml` when it exists:
//! [`discover_config`]; never the working directory's), then Sekha's
//! `SEKHA__*` environment variables where they name a memdb setting
//! ([`apply_sekha_env`]), then `MEMDB_*` environment variables and flags
//! (clap merges those two, the flag winning), each overriding the
//! previous. [`ServerConfig::validate`] refuses unusable settings before
//! anything listens.

use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::error::ServerError;

/// Shortest accepted API key (Sekha's rule).
pub const MIN_KEY_LEN: usize = 32;

// The `--embedder` and `--openai-*` flags are the engine's own types
// (`memdb`'s `clap` feature), so the server, the CLI and the engine spell
// each setting once.
pub use memdb::{EmbedderKind, OpenAiSettings};

/// Everything the server needs besides the engine.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ServerConfig {
    /// Address to listen on (default 127.0.0.1:8080).
    pub listen: SocketAddr,
    /// The memdb data directory (default: the platform data dir + /memdb).
    pub data: Option<PathBuf>,
    /// Keys that may read and write (each at least 32 characters).
    pub api_keys: Vec<String>,
    /// Keys that may only read: writes answer 403.
    pub readonly_api_keys: Vec<String>,
    /// Keys limited to namespaces (SPEC §12), each one of the keys above:
    /// `[[key_namespaces]]` tables with `key` and `namespaces`. Other keys
    /// may use every namespace.
    pub key_namespaces: Vec<crate::auth::KeyNamespaces>,
    /// Origins allowed by CORS (none by default: no CORS headers at all).
    pub cors_origins: Vec<String>,
    /// Sustained requests per second per client; 0 disables rate limiting.
    pub rate_limit_per_second: f64,
    /// Bucket size: requests a client may burst above the sustained rate.
    pub rate_limit_burst: u32,
    /// Peers whose `X-Forwarded-For` is trusted to name the client.
    pub trusted_proxies: Vec<IpAddr>,
    /// Largest accepted request body in bytes (413 above it).
    pub body_limit: usize,
    /// The embedder given to the engine.
    pub embedder: EmbedderKind,
    /// Where the local model lives (default: `$MEMDB_MODELS` or the platform dir).
    pub models_dir: Option<PathBuf>,
    /// The `openai` embedder's server, model and dimension.
    pub openai: OpenAiSettings,
    /// `Host` header names accepted (besides IP literals and `localhost`,
    /// always accepted: DNS rebinding needs a name the attacker controls);
    /// `*` accepts any. Empty by default.
    pub allowed_hosts: Vec<String>,
    /// Browser origins allowed to call `/mcp` (`scheme://host[:port]`, or
    /// `*`). Loopback origins are allowed when the server listens on
    /// loopback; CORS origins are allowed too. A request with any other
    /// `Origin` answers 403; requests without one (non-browser clients) pass.
    pub allowed_origins: Vec<String>,
    /// Seconds a client has to send a request's headers, also the idle
    /// keep-alive limit between requests (HTTP/1). Default 10.
    pub header_timeout_secs: u64,
    /// Seconds a client has to send a request's body. Default 30.
    pub body_timeout_secs: u64,
    /// Seconds a request may take from headers to response (the MCP event
    /// stream excepted). Default 120.
    pub request_timeout_secs: u64,
    /// Open connections served at once; more are closed on accept. Default 1024.
    pub max_connections: usize,
    /// Open connections per client address (trusted proxies exempt). Default 64.
    pub max_connections_per_ip: usize,
    /// Open MCP sessions per API key; `initialize` beyond it answers 429. Default 16.
    pub mcp_sessions_per_key: usize,
    /// MCP tool sets `/mcp` lists and calls (`sekha,memorg`, `all`).
    pub mcp_tools: String,
    /// Seconds between the KuraDB watcher's polling passes over every
    /// knowledge base (SPEC §15.2): the fallback, as change events through
    /// `notify` sync a base sooner; 0 turns the watcher off. Default 10,
    /// KuraDB's interval.
    pub kb_watch_secs: u64,
    /// Serve KuraDB's read-only `GET /api/list`, `/api/search` and its
    /// deprecated `/api/keyword` and `/api/semantic` without a key, as KuraDB serves them to its local clients. Loopback
    /// listeners only: startup refuses it on any other address. Every other
    /// route still needs a key. Default false.
    pub kuradb_open: bool,
    /// What a new message vector space embeds per message (`turn`,
    /// `with-previous`, `with-neighbours`; engine SPEC §10.1). An existing
    /// space keeps its rule until `memdb rebuild-embeddings`.
    pub message_passage: memdb::Passage,
    /// redb's page cache in MiB (`memdb::Config::store_cache_bytes`;
    /// default 128). Lower it to bound the memory of a large
    /// knowledge-base ingest further; bulk imports slow down
    /// (benches/README.md).
    pub store_cache_mb: u64,
    /// The chat model of summaries, label suggestions and importance
    /// scores (`[chat]`; none by default: extractive and heuristic).
    pub chat: crate::chat::ChatSettings,
    /// The OpenAI-compatible proxy (`[proxy]`; off without an upstream URL).
    pub proxy: crate::proxy::ProxySettings,
    /// The file these settings were read from (not a file key).
    #[serde(skip)]
    pub config_file: Option<PathBuf>,
    /// The security-relevant settings [`ServerConfig::config_file`] set
    /// when it was found by [`discover_config`] rather than named by
    /// `--config` / `MEMDB_CONFIG` ([`ServerConfig::sensitive_settings`];
    /// not a file key): startup names them at WARN.
    #[serde(skip)]
    pub discovered_sets: Vec<&'static str>,
    /// The `SEKHA__*` variables applied (not a file key).
    #[serde(skip)]
    pub sekha_env: Vec<String>,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            listen: SocketAddr::from(([127, 0, 0, 1], 8080)),
            data: None,
            api_keys: Vec::new(),
            readonly_api_keys: Vec::new(),
            key_namespaces: Vec::new(),
            cors_origins: Vec::new(),
            rate_limit_per_second: 50.0,
            rate_limit_burst: 200,
            trusted_proxies: Vec::new(),
            body_limit: 16 << 20,
            // As the CLI: the local model when installed, else keyword
            // only with a logged note.
            embedder: EmbedderKind::Auto,
            models_dir: None,
            openai: OpenAiSettings::default(),
            allowed_hosts: Vec::new(),
            allowed_origins: Vec::new(),
            header_timeout_secs: 10,
            body_timeout_secs: 30,
            request_timeout_secs: 120,
            max_connections: 1024,
            max_connections_per_ip: 64,
            mcp_sessions_per_key: 16,
            mcp_tools: "all".into(),
            kb_watch_secs: 10,
            kuradb_open: false,
            message_passage: memdb::Config::default().message_passage,
            store_cache_mb: (memdb::DEFAULT_STORE_CACHE_BYTES >> 20) as u64,
            chat: crate::chat::ChatSettings::default(),
            proxy: crate::proxy::ProxySettings::default(),
            config_file: None,
            discovered_sets: Vec::new(),
            sekha_env: Vec::new(),
        }
    }
}

/// The configuration file read when neither `--config` nor `MEMDB_CONFIG`
/// names one: `.memdb/config.toml` in `home` when it exists, else none.
/// The working directory is never searched: a `config.toml` planted in a
/// cloned repository or a shared folder must not configure a server
/// started there.
pub fn discover_config(home: Option<&Path>) -> Option<PathBuf> {
    home.map(|h| h.join(".memdb").join("config.toml"))
        .filter(|p| p.is_file())
}

/// Sekha's environment variables memdb reads (`SEKHA__` + a key of
/// Sekha's flat config; a `__` inside the key, as in
/// `SEKHA__SERVER__PORT`, is read as `_`), each with the memdb setting it
/// sets. Sekha's other keys (database, Chroma, Ollama, bridge, summary and
/// pruning switches) name nothing memdb has and are ignored.
pub const SEKHA_ENV: &[(&str, &str)] = &[
    ("server_host", "listen (its address)"),
    ("server_port", "listen (its port)"),
    ("mcp_api_key", "api_keys"),
    ("rest_api_key", "api_keys"),
    ("additional_api_keys", "api_keys (comma-separated)"),
    (
        "rate_limit_per_minute",
        "rate_limit_per_second (divided by 60)",
    ),
    ("cors_enabled", "cors_origins (true: `*`, false: none)"),
];

/// Applies the `SEKHA__*` variables of [`SEKHA_ENV`] that `get` finds to
/// `c`; returns the variable names used. A value that does not parse is
/// an error naming the variable. The keys given replace `api_keys`.
pub fn apply_sekha_env(
    c: &mut ServerConfig,
    get: &dyn Fn(&str) -> Option<String>,
) -> Result<Vec<String>, ServerError> {
    let mut used = Vec::new();
    let mut read = |key: &str| -> Option<(String, String)> {
        let flat = format!("SEKHA__{}", key.to_uppercase());
        let nested = key
            .split_once('_')
            .map(|(a, b)| format!("SEKHA__{}__{}", a.to_uppercase(), b.to_uppercase()));
        for name in std::iter::once(flat).chain(nested) {
            if let Some(v) = get(&name).map(|v| v.trim().to_string())
                && !v.is_empty()
            {
                used.push(name.clone());
                return Some((name, v));
            }
        }
        None
    };
    let bad = |name: &str, v: &str, what: &str| {
        ServerError::Config(format!("{name}={v:?} is not {what}"))
    };
    if let Some((name, v)) = read("server_host") {
        let ip: IpAddr = if v.eq_ignore_ascii_case("localhost") {
            IpAddr::from([127, 0, 0, 1])
        } else {
            v.parse().map_err(|_| bad(&name, &v, "an IP address"))?
        };
        c.listen.set_ip(ip);
    }
    if let Some((name, v)) = read("server_port") {
        c.listen
            .set_port(v.parse().map_err(|_| bad(&name, &v, "a port number"))?);
    }
    let mut keys = Vec::new();
    for key in ["mcp_api_key", "rest_api_key", "additional_api_keys"] {
        if let Some((_, v)) = read(key) {
            for k in v.split(',').map(str::trim).filter(|k| !k.is_empty()) {
                if !keys.iter().any(|x| x == k) {
                    keys.push(k.to_string());
                }
            }
        }
    }
    if !keys.is_empty() {
        c.api_keys = keys;
    }
    if let Some((name, v)) = read("rate_limit_per_minute") {
        let n: u32 = v.parse().map_err(|_| bad(&name, &v, "a whole number"))?;
        c.rate_limit_per_second = f64::from(n) / 60.0;
    }
    if let Some((name, v)) = read("cors_enabled") {
        c.cors_origins = match v.to_ascii_lowercase().as_str() {
            "true" | "1" | "yes" => vec!["*".into()],
            "false" | "0" | "no" => Vec::new(),
            _ => return Err(bad(&name, &v, "true or false")),
        };
    }
    Ok(used)
}

impl ServerConfig {
    /// Reads a TOML file whose keys are this struct's fields.
    pub fn from_file(path: &Path) -> Result<Self, ServerError> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            ServerError::Config(format!("cannot read config file {}: {e}", path.display()))
        })?;
        toml::from_str(&text).map_err(|e| {
            ServerError::Config(format!("config file {}: {}", path.display(), e.message()))
        })
    }

    /// The settings of these (a file's) that decide who may call the
    /// server, which web pages may, or where stored text is sent: keys,
    /// CORS origins, allowed hosts and origins, `kuradb_open`, and every
    /// URL (and the keys sent to them). Named at WARN when a file that was
    /// not named explicitly sets any.
    pub fn sensitive_settings(&self) -> Vec<&'static str> {
        let set = |name: &'static str, is: bool| is.then_some(name);
        [
            set("api_keys", !self.api_keys.is_empty()),
            set("readonly_api_keys", !self.readonly_api_keys.is_empty()),
            set("key_namespaces", !self.key_namespaces.is_empty()),
            set("cors_origins", !self.cors_origins.is_empty()),
            set("allowed_hosts", !self.allowed_hosts.is_empty()),
            set("allowed_origins", !self.allowed_origins.is_empty()),
            set("kuradb_open", self.kuradb_open),
            set("openai.base_url", self.openai.base_url.is_some()),
            set("chat.base_url", self.chat.base_url.is_some()),
            set("chat.key", self.chat.key.is_some()),
            set("proxy.upstream_url", self.proxy.upstream_url.is_some()),
            set("proxy.upstream_key", self.proxy.upstream_key.is_some()),
        ]
        .into_iter()
        .flatten()
        .collect()
    }

    /// Checks keys, origins and limits; the error says what to fix.
    pub fn validate(&self) -> Result<(), ServerError> {
        if self.kuradb_open && !self.listen.ip().is_loopback() {
            return Err(ServerError::Config(format!(
                "kuradb_open serves KuraDB's /api routes without a key, which is \
                 only allowed on a loopback address; {} is not one",
                self.listen
            )));
        }
        if self.kuradb_open {
            let wild = |list: &[String]| list.iter().any(|v| v.trim() == "*");
            for (name, list) in [
                ("cors_origins", &self.cors_origins),
                ("allowed_hosts", &self.allowed_hosts),
            ] {
                if wild(list) {
                    return Err(ServerError::Config(format!(
                        "kuradb_open cannot be combined with {name} = [\"*\"]: \
                         KuraDB's /api routes answer without a key, so any web page \
                         could read every knowledge base; turn kuradb_open off \
                         (--kuradb-open=false, MEMDB_KURADB_OPEN=false) or list \
                         {name} explicitly"
                    )));
                }
            }
        }
        if self.api_keys.is_empty() && self.readonly_api_keys.is_empty() {
            return Err(ServerError::Config(
                "no API key configured: set MEMDB_API_KEY (or MEMDB_API_KEYS, comma-separated)"
                    .into(),
            ));
        }
        for (i, key) in self
            .api_keys
            .iter()
            .chain(&self.readonly_api_keys)
            .enumerate()
        {
            if key.chars().count() < MIN_KEY_LEN {
                return Err(ServerError::Config(format!(
                    "API key #{} is shorter than {MIN_KEY_LEN} characters",
                    i + 1
                )));
            }
            if key.chars().any(|c| c.is_whitespace() || c.is_control()) {
                return Err(ServerError::Config(format!(
                    "API key #{} contains whitespace or control characters",
                    i + 1
                )));
            }
        }
        for (i, limit) in self.key_namespaces.iter().enumerate() {
            let n = i + 1;
            if !self
                .api_keys
                .iter()
                .chain(&self.readonly_api_keys)
                .any(|k| *k == limit.key)
            {
                return Err(ServerError::Config(format!(
                    "key_namespaces #{n} names a key that is not one of api_keys or readonly_api_keys"
                )));
            }
            if limit.namespaces.is_empty() {
                return Err(ServerError::Config(format!(
                    "key_namespaces #{n} lists no namespace"
                )));
            }
            for name in &limit.namespaces {
                memdb::validate_namespace(name).map_err(|e| {
                    ServerError::Config(format!("key_namespaces #{n}: {name:?}: {e}"))
                })?;
            }
        }
        for origin in &self.cors_origins {
            if origin != "*" && axum::http::HeaderValue::from_str(origin).is_err() {
                return Err(ServerError::Config(format!(
                    "invalid CORS origin {origin:?}"
                )));
            }
        }
        if !(self.rate_limit_per_second.is_finite() && self.rate_limit_per_second >= 0.0) {
            return Err(ServerError::Config(
                "rate_limit_per_second must be a number >= 0".into(),
            ));
        }
        if self.rate_limit_per_second > 0.0 && self.rate_limit_burst == 0 {
            return Err(ServerError::Config(
                "rate_limit_burst must be at least 1".into(),
            ));
        }
        for origin in &self.allowed_origins {
            if origin != "*" && crate::guard::Origin::parse(origin).is_none() {
                return Err(ServerError::Config(format!(
                    "invalid allowed origin {origin:?}: expected scheme://host[:port]"
                )));
            }
        }
        for (name, v) in [
            ("header_timeout_secs", self.header_timeout_secs),
            ("body_timeout_secs", self.body_timeout_secs),
            ("request_timeout_secs", self.request_timeout_secs),
        ] {
            if !(1..=3600).contains(&v) {
                return Err(ServerError::Config(format!(
                    "{name} must be between 1 and 3600 seconds"
                )));
            }
        }
        for (name, v) in [
            ("max_connections", self.max_connections),
            ("max_connections_per_ip", self.max_connections_per_ip),
            ("mcp_sessions_per_key", self.mcp_sessions_per_key),
        ] {
            if v == 0 {
                return Err(ServerError::Config(format!("{name} must be at least 1")));
            }
        }
        crate::toolsets::ToolSets::parse(&self.mcp_tools)
            .map_err(|e| ServerError::Config(format!("mcp_tools: {e}")))?;
        if self.body_limit < 1024 {
            return Err(ServerError::Config(
                "body_limit must be at least 1024 bytes".into(),
            ));
        }
        self.chat.build()?;
        self.proxy.build()?;
        Ok(())
    }
}

/// The engine configuration for the chosen embedder, built by the engine
/// (`memdb::select_embedder`, the CLI's too; a store embedded with one
/// local model keeps it unless `MEMDB_LOCAL_MODEL` names another). `auto`
/// without an installed model logs the engine's note and runs keyword
/// only. `data` is the data directory the configuration is for.
pub fn engine_config(c: &ServerConfig, data: &Path) -> Result<memdb::Config, ServerError> {
    let settings = memdb::EmbedderSettings {
        kind: c.embedder,
        models_dir: c.models_dir.clone(),
        openai: c.openai.clone(),
        stored: memdb::Memdb::stored_message_model(data),
    };
    let selected = memdb::select_embedder(&settings).map_err(|e| match e {
        memdb::Error::InvalidInput { .. } => ServerError::Config(e.to_string()),
        other => ServerError::Open(other),
    })?;
    if let Some(note) = &selected.note {
        tracing::warn!("{note}");
    }
    let mut engine = match selected.embedder {
        Some(e) => memdb::Config::with_embedder(e),
        None => memdb::Config::default(),
    };
    engine.message_passage = c.message_passage;
    engine
        .set_store_cache_mb(c.store_cache_mb)
        .map_err(|e| ServerError::Config(e.to_string()))?;
    Ok(engine)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(c: char) -> String {
        std::iter::repeat_n(c, MIN_KEY_LEN).collect()
    }

    #[test]
    fn the_config_file_is_found_in_home_only() {
        let root = std::env::temp_dir().join(format!("memdb-discover-{}", std::process::id()));
        let home = root.join("home");
        std::fs::create_dir_all(home.join(".memdb")).unwrap();
        assert_eq!(discover_config(Some(&home)), None);
        assert_eq!(discover_config(None), None);
        // A config.toml beside the home (as in a working directory) is not read.
        std::fs::write(home.join("config.toml"), "").unwrap();
        assert_eq!(discover_config(Some(&home)), None);
        let in_home = home.join(".memdb").join("config.toml");
        std::fs::write(&in_home, "").unwrap();
        assert_eq!(discover_config(Some(&home)), Some(in_home));
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn kuradb_open_with_a_wildcard_is_refused_on_any_listener() {
        let base = ServerConfig {
            api_keys: vec![key('a')],
            kuradb_open: true,
            ..ServerConfig::default()
        };
        assert!(base.validate().is_ok());
        for (cors, hosts, named) in [
            (vec!["*".to_string()], vec![], "cors_origins"),
            (vec![], vec![" * ".to_string()], "allowed_hosts"),
        ] {
            let c = ServerConfig {
                cors_origins: cors,
                allowed_hosts: hosts,
                ..base.clone()
            };
            let e = c.validate().unwrap_err().to_string();
            assert!(e.contains("kuradb_open") && e.contains(named), "{e}");
            let c = ServerConfig {
                kuradb_open: false,
                ..c
            };
            assert!(c.validate().is_ok());
        }
        let c = ServerConfig {
            cors_origins: vec!["http://localhost:3000".into()],
            allowed_hosts: vec!["memdb.example".into()],
            ..base
        };
        assert!(c.validate().is_ok());
    }

    #[test]
    fn sensitive_settings_name_what_a_file_set() {
        let c: ServerConfig = toml::from_str(
            "readonly_api_keys = [\"k\"]\ncors_origins = [\"*\"]\nkuradb_open = true\nrate_limit_burst = 3\n[proxy]\nupstream_url = \"http://x/v1\"",
        )
        .unwrap();
        assert_eq!(
            c.sensitive_settings(),
            [
                "readonly_api_keys",
                "cors_origins",
                "kuradb_open",
                "proxy.upstream_url"
            ]
        );
        assert!(ServerConfig::default().sensitive_settings().is_empty());
    }

    #[test]
    fn sekha_variables_map_onto_memdb_settings() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                pairs
                    .iter()
                    .find(|(k, _)| *k == name)
                    .map(|(_, v)| v.to_string())
            }
        };
        let mut c = ServerConfig::default();
        let used = apply_sekha_env(
            &mut c,
            &env(&[
                ("SEKHA__SERVER__PORT", "9090"),
                ("SEKHA__SERVER_HOST", "0.0.0.0"),
                ("SEKHA__MCP_API_KEY", "k1k1k1k1k1k1k1k1k1k1k1k1k1k1k1k1"),
                (
                    "SEKHA__ADDITIONAL_API_KEYS",
                    "k2k2k2k2k2k2k2k2k2k2k2k2k2k2k2k2, k1k1k1k1k1k1k1k1k1k1k1k1k1k1k1k1",
                ),
                ("SEKHA__RATE_LIMIT_PER_MINUTE", "120"),
                ("SEKHA__CORS_ENABLED", "true"),
                ("SEKHA__DATABASE_URL", "sqlite://sekha.db"),
            ]),
        )
        .unwrap();
        assert_eq!(c.listen, "0.0.0.0:9090".parse::<SocketAddr>().unwrap());
        assert_eq!(
            c.api_keys,
            [
                "k1k1k1k1k1k1k1k1k1k1k1k1k1k1k1k1",
                "k2k2k2k2k2k2k2k2k2k2k2k2k2k2k2k2"
            ]
        );
        assert_eq!(c.rate_limit_per_second, 2.0);
        assert_eq!(c.cors_origins, ["*"]);
        assert_eq!(used.len(), 6, "{used:?}");
        // The flat spelling is read first.
        let mut c = ServerConfig::default();
        apply_sekha_env(
            &mut c,
            &env(&[
                ("SEKHA__SERVER_PORT", "7000"),
                ("SEKHA__SERVER__PORT", "7001"),
            ]),
        )
        .unwrap();
        assert_eq!(c.listen.port(), 7000);
        // Nothing set: nothing changes.
        let mut c = ServerConfig::default();
        assert!(apply_sekha_env(&mut c, &env(&[])).unwrap().is_empty());
        assert_eq!(c.listen, ServerConfig::default().listen);
        let e = apply_sekha_env(&mut c, &env(&[("SEKHA__SERVER__PORT", "http")])).unwrap_err();
        assert!(e.to_string().contains("SEKHA__SERVER__PORT"), "{e}");
    }

    #[test]
    fn short_or_missing_keys_are_refused() {
        let mut c = ServerConfig::default();
        assert!(c.validate().is_err());
        c.api_keys = vec!["short".into()];
        assert!(c.validate().is_err());
        c.api_keys = vec![key('a')];
        assert!(c.validate().is_ok());
        c.readonly_api_keys = vec![format!("{} ", key('b'))];
        assert!(c.validate().is_err());
    }

    #[test]
    fn file_keys_parse_and_unknown_keys_fail() {
        let c: ServerConfig = toml::from_str(
            "listen = \"0.0.0.0:9000\"\napi_keys = [\"k\"]\nrate_limit_per_second = 2.5\nembedder = \"hashing\"",
        )
        .unwrap();
        assert_eq!(c.listen.port(), 9000);
        assert_eq!(c.rate_limit_per_second, 2.5);
        assert_eq!(c.embedder, EmbedderKind::Hashing);
        assert!(toml::from_str::<ServerConfig>("nope = 1").is_err());
    }

    #[test]
    fn openai_settings_come_from_the_file_then_flags() {
        let c: ServerConfig = toml::from_str(
            "embedder = \"openai\"\n[openai]\nbase_url = \"http://localhost:11434/v1\"\nmodel = \"nomic-embed-text\"\ndimension = 768",
        )
        .unwrap();
        assert_eq!(c.embedder, EmbedderKind::Openai);
        assert_eq!(c.openai.dimension, Some(768));
        assert!(toml::from_str::<ServerConfig>("[openai]\nkey = \"x\"").is_err());
        // Flags and environment win, field by field.
        let flags = OpenAiSettings {
            model: Some("other".into()),
            ..OpenAiSettings::default()
        };
        let merged = flags.or(&c.openai);
        assert_eq!(merged.model.as_deref(), Some("other"));
        assert_eq!(
            merged.base_url.as_deref(),
            Some("http://localhost:11434/v1")
        );
        let e = merged.embedder().unwrap();
        let id = memdb::Embedder::identity(&e);
        assert_eq!(
            (id.provider.as_str(), id.name.as_str(), id.dimension),
            ("openai", "other", 768)
        );
    }

    #[test]
    fn missing_openai_settings_are_the_engines_one_line_error() {
        let c = ServerConfig {
            embedder: EmbedderKind::Openai,
            openai: OpenAiSettings {
                base_url: Some("http://x/v1".into()),
                model: Some("  ".into()),
                dimension: None,
            },
            ..ServerConfig::default()
        };
        let err = crate::config::engine_config(&c, Path::new("/nonexistent")).unwrap_err();
        assert!(matches!(err, ServerError::Config(_)), "{err}");
        let err = err.to_string();
        assert!(!err.contains('\n'), "{err}");
        assert!(err.contains("MEMDB_OPENAI_MODEL (--openai-model)"), "{err}");
        assert!(err.contains("MEMDB_OPENAI_DIMENSION"), "{err}");
        assert!(!err.contains("BASE_URL"), "{err}");
    }

    /// `store_cache_mb` reaches the engine's redb cache from the file (and
    /// the default is the engine's); 0 is a startup error naming the key.
    #[test]
    fn the_store_cache_comes_from_the_file_in_mib() {
        let engine = crate::config::engine_config(
            &ServerConfig {
                embedder: EmbedderKind::None,
                ..ServerConfig::default()
            },
            Path::new("/nonexistent"),
        )
        .unwrap();
        assert_eq!(
            engine.store_cache_bytes,
            memdb::Config::default().store_cache_bytes
        );
        let mut c: ServerConfig = toml::from_str("store_cache_mb = 64").unwrap();
        c.embedder = EmbedderKind::None;
        assert_eq!(
            crate::config::engine_config(&c, Path::new("/nonexistent"))
                .unwrap()
                .store_cache_bytes,
            64 << 20
        );
        c.store_cache_mb = 0;
        let err = crate::config::engine_config(&c, Path::new("/nonexistent")).unwrap_err();
        assert!(matches!(err, ServerError::Config(_)), "{err}");
        assert!(err.to_string().contains("store_cache_mb"), "{err}");
    }
}
