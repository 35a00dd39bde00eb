//! Embedding providers: text in, vectors out (issue #4).
//!
//! [`Embedder`] is the one abstraction the rest of the engine sees: it names
//! its model ([`ModelIdentity`]: provider, model name, dimension, metric) and
//! turns a batch of texts into vectors. Three providers live here:
//!
//! - `LocalOnnx` (cargo feature `local-onnx`, on by default), the default:
//!   e5-small-v2 (or all-MiniLM-L6-v2, `LocalModel`; int8 ONNX, 384
//!   dimensions) run in-process by ONNX Runtime (`ort`, loaded dynamically
//!   from the models directory) with a HuggingFace `tokenizers` tokenizer;
//!   mean pooling over the attention mask, L2 normalisation, batched; e5
//!   reads queries as `query: ...` ([`Embedder::embed_query`]) and other
//!   texts as `passage: ...`. Its files are installed by
//!   `scripts/install-model.sh` and verified by SHA-256 when it loads; its
//!   graph is rewritten so each token's activations are quantized on their
//!   own (`int8.rs`, through the protobuf wire reader and writer of
//!   `protowire.rs`; MiniLM's int8 weights also multiplied as int8).
//! - [`Hashing`]: a deterministic *lexical* embedder (feature hashing of
//!   words and word pairs). It needs no model, so tests and users who want no
//!   model can use it; it is never substituted for a configured model.
//! - `OpenAiEmbedder` (cargo feature `openai`, on by default): any
//!   OpenAI-compatible `/v1/embeddings` server (OpenAI, Ollama, vLLM,
//!   LiteLLM), batched, with retries (`crate::util::http`).
//!
//! [`select_embedder`] builds one of them by name (`select.rs`, shared by
//! the CLI and the server).
//!
//! The design choice: the identity travels with the vectors. A vector space
//! records the identity of the embedder that filled it, and vectors from two
//! identities are never compared, so switching models means re-embedding,
//! never silently mixing.
//!
//! ```
//! use memdb::{Embedder, Hashing, Metric};
//! let e = Hashing::default();
//! let id = e.identity();
//! assert_eq!((id.provider.as_str(), id.dimension, id.metric), ("hashing", 384, Metric::Cosine));
//! let v = e.embed(&["reset my password", "password reset"]).unwrap();
//! assert_eq!(v.len(), 2);
//! ```
//!
//! What it is not: no caching (the query cache sits above this), no storage.

use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::model::metric::Metric;

mod hashing;
#[cfg(feature = "local-onnx")]
mod int8;
#[cfg(feature = "local-onnx")]
mod local;
#[cfg(feature = "openai")]
mod openai;
pub(crate) mod passage;
#[cfg(feature = "local-onnx")]
mod protowire;
mod select;
mod windows;

pub use hashing::Hashing;
#[cfg(feature = "local-onnx")]
pub use local::{LocalModel, LocalOnnx, LocalOnnxOptions, LocalPrecision};

/// The local model's identity (`LocalOnnx::PROVIDER`, `LocalOnnx::NAME`),
/// known without the `local-onnx` feature too: a store keeps its vectors
/// and their identity whichever build opens it.
pub(crate) const LOCAL_PROVIDER: &str = "local-onnx";
pub(crate) const LOCAL_NAME: &str = "all-MiniLM-L6-v2";
/// The local model's name when run with int8 products (`LocalPrecision::Int8`).
pub(crate) const LOCAL_NAME_INT8: &str = "all-MiniLM-L6-v2-int8";
/// e5-small-v2's name (`LocalModel::E5SmallV2`, its int8 export with
/// activations quantized per row; `e5-small-v2-int8`, its export as
/// shipped, was stop 51's).
pub(crate) const LOCAL_NAME_E5: &str = "e5-small-v2-int8-rows";
#[cfg(feature = "openai")]
pub use openai::{OpenAiConfig, OpenAiEmbedder};
pub use passage::{LongPassage, NEIGHBOUR_CHARS, Passage};
pub use select::{
    EmbedderKind, EmbedderSettings, LOCAL_MODEL_ENV, LOCAL_PRECISION_ENV, OpenAiSettings,
    SelectedEmbedder, default_models_dir, select_embedder,
};
pub use windows::{spread_windows, token_windows};

/// Which model produced a vector: vectors with different identities must
/// never share a vector space.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ModelIdentity {
    /// The provider, e.g. `local-onnx`, `hashing`, `openai`.
    pub provider: String,
    /// The model name within the provider, e.g. `all-MiniLM-L6-v2`.
    pub name: String,
    /// Output dimension.
    pub dimension: u32,
    /// The metric the vectors are meant to be compared with.
    pub metric: Metric,
}

/// The vectors of one [`Embedder::embed_report`] call, with what was lost.
#[derive(Debug, Clone, PartialEq)]
pub struct Embeddings {
    /// One vector per input text, in input order.
    pub vectors: Vec<Vec<f32>>,
    /// `truncated[i]` is true when text `i` was longer than the model's token
    /// limit and only its beginning was embedded.
    pub truncated: Vec<bool>,
}

/// Turns texts into vectors. Implementations are deterministic for a given
/// identity: the same text always yields the same vector (up to float noise).
pub trait Embedder: Send + Sync {
    /// The model's identity (stored with the vector space).
    fn identity(&self) -> ModelIdentity;

    /// Embeds a batch of texts: one vector of `identity().dimension` floats
    /// per text, in order. An empty slice gives an empty result.
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        Ok(self.embed_report(texts)?.vectors)
    }

    /// Like [`embed`](Embedder::embed), and also says which texts were
    /// truncated to the model's token limit.
    fn embed_report(&self, texts: &[&str]) -> Result<Embeddings>;

    /// Embeds a search query (one text). A model trained to read queries
    /// with an instruction in front puts it there; the default embeds the
    /// query as any text.
    fn embed_query(&self, query: &str) -> Result<Embeddings> {
        self.embed_report(&[query])
    }

    /// The longest input, in model tokens, embedded whole (`None`: no limit).
    fn max_tokens(&self) -> Option<usize> {
        None
    }

    /// The passages `text` is embedded as when every part of it should
    /// count (SPEC.md §10.5): byte ranges of `text` on character
    /// boundaries, in order, each short enough for the model to read
    /// whole, together covering the text. The default, for a model without
    /// a token limit, is the whole text.
    fn passages(&self, text: &str) -> Result<Vec<std::ops::Range<usize>>> {
        Ok(std::iter::once(0..text.len()).collect())
    }

    /// Lets go of what the model keeps between calls (inference sessions,
    /// their scratch memory) before a step that needs the memory more; the
    /// next call makes it again. The embedding pipeline calls this before
    /// it builds a vector generation (SPEC.md §9.2). The default keeps
    /// nothing, so it does nothing.
    fn release_idle(&self) {}
}

/// Scales `v` to unit L2 norm in place; a zero vector stays zero.
pub(crate) fn l2_normalize(v: &mut [f32]) {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        for x in v.iter_mut() {
            *x /= norm;
        }
    }
}
