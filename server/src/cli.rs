//! The `memdb-server` command line (also `memdb serve`): flags and `MEMDB_*`
//! environment variables over an optional TOML file, then [`run`].

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;

use clap::{Args, Parser};

use crate::config::{EmbedderKind, OpenAiSettings, ServerConfig};
use crate::error::ServerError;

/// Server settings given on the command line or in the environment.
#[derive(Debug, Clone, Default, Args)]
pub struct ServeArgs {
    /// Address to listen on [default: 127.0.0.1:8080].
    #[arg(long, env = "MEMDB_LISTEN", value_name = "ADDR")]
    pub listen: Option<SocketAddr>,
    /// TOML configuration file (keys: listen, data, api_keys, ...)
    /// [default: ~/.memdb/config.toml, when it exists; never ./config.toml].
    #[arg(long, env = "MEMDB_CONFIG", value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// An API key (read-write), at least 32 characters.
    #[arg(long, env = "MEMDB_API_KEY", hide_env_values = true)]
    pub api_key: Option<String>,
    /// Read-write API keys, comma-separated.
    #[arg(
        long,
        env = "MEMDB_API_KEYS",
        value_delimiter = ',',
        hide_env_values = true
    )]
    pub api_keys: Vec<String>,
    /// Read-only API keys, comma-separated (writes answer 403).
    #[arg(
        long,
        env = "MEMDB_READONLY_API_KEYS",
        value_delimiter = ',',
        hide_env_values = true
    )]
    pub readonly_api_keys: Vec<String>,
    /// Limit a key to namespaces: `KEY=NS[,NS...]` (the first is its
    /// default); repeat the flag, or separate entries with `;` in the
    /// environment variable. The key must be one of the keys above.
    #[arg(
        long,
        env = "MEMDB_KEY_NAMESPACES",
        value_delimiter = ';',
        hide_env_values = true,
        value_name = "KEY=NS[,NS...]"
    )]
    pub key_namespaces: Vec<crate::auth::KeyNamespaces>,
    /// CORS origins allowed, comma-separated (`*` for any; empty: none,
    /// whatever the file says) [default: none].
    #[arg(long, env = "MEMDB_CORS_ORIGINS", value_delimiter = ',')]
    pub cors_origins: Option<Vec<String>>,
    /// Sustained requests per second per client (0 disables) [default: 50].
    #[arg(long, env = "MEMDB_RATE_LIMIT")]
    pub rate_limit: Option<f64>,
    /// Burst size per client [default: 200].
    #[arg(long, env = "MEMDB_RATE_BURST")]
    pub rate_burst: Option<u32>,
    /// Proxies whose X-Forwarded-For is trusted, comma-separated IPs.
    #[arg(long, env = "MEMDB_TRUSTED_PROXIES", value_delimiter = ',')]
    pub trusted_proxies: Vec<IpAddr>,
    /// Largest request body in bytes [default: 16 MiB].
    #[arg(long, env = "MEMDB_BODY_LIMIT")]
    pub body_limit: Option<usize>,
    /// Host names accepted besides IP literals and localhost, comma-separated
    /// (`*` for any; empty: none, whatever the file says) [default: none].
    #[arg(long, env = "MEMDB_ALLOWED_HOSTS", value_delimiter = ',')]
    pub allowed_hosts: Option<Vec<String>>,
    /// Browser origins allowed on /mcp, comma-separated (empty: none,
    /// whatever the file says) [default: loopback origins when listening on
    /// loopback].
    #[arg(long, env = "MEMDB_ALLOWED_ORIGINS", value_delimiter = ',')]
    pub allowed_origins: Option<Vec<String>>,
    /// Seconds to receive a request's headers; also the idle keep-alive limit [default: 10].
    #[arg(long, env = "MEMDB_HEADER_TIMEOUT", value_name = "SECS")]
    pub header_timeout: Option<u64>,
    /// Seconds to receive a request's body [default: 30].
    #[arg(long, env = "MEMDB_BODY_TIMEOUT", value_name = "SECS")]
    pub body_timeout: Option<u64>,
    /// Seconds a request may take in all [default: 120].
    #[arg(long, env = "MEMDB_REQUEST_TIMEOUT", value_name = "SECS")]
    pub request_timeout: Option<u64>,
    /// Connections served at once [default: 1024].
    #[arg(long, env = "MEMDB_MAX_CONNECTIONS")]
    pub max_connections: Option<usize>,
    /// Connections per client address [default: 64].
    #[arg(long, env = "MEMDB_MAX_CONNECTIONS_PER_IP")]
    pub max_connections_per_ip: Option<usize>,
    /// Open MCP sessions per API key [default: 16].
    #[arg(long, env = "MEMDB_MCP_SESSIONS_PER_KEY")]
    pub mcp_sessions_per_key: Option<usize>,
    /// MCP tool sets `/mcp` serves: `sekha`, `memorg` or both (comma
    /// separated), or `all` [default: all].
    #[arg(long, env = "MEMDB_MCP_TOOLS", value_name = "SETS")]
    pub tools: Option<String>,
    /// Seconds between polling passes over the KuraDB knowledge bases'
    /// folders, the fallback (change events sync sooner); 0 turns the
    /// watcher off [default: 10].
    #[arg(long, env = "MEMDB_KB_WATCH", value_name = "SECS")]
    pub kb_watch: Option<u64>,
    /// Serve KuraDB's read-only `/api/list`, `/api/search`, `/api/keyword`
    /// and `/api/semantic` without a key (loopback listeners only, never
    /// with `*` CORS origins or allowed hosts), as KuraDB does.
    /// `--kuradb-open=false` turns off the file's `kuradb_open = true`
    /// [default: false].
    #[arg(
        long,
        env = "MEMDB_KURADB_OPEN",
        value_name = "BOOL",
        action = clap::ArgAction::Set,
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "true",
        value_parser = parse_bool
    )]
    pub kuradb_open: Option<bool>,
    /// What a new message vector space embeds per message: `turn`,
    /// `with-previous` or `with-neighbours` (an existing space keeps its
    /// rule until `memdb rebuild-embeddings`).
    #[arg(long, env = "MEMDB_PASSAGE", value_name = "RULE", value_parser = parse_passage)]
    pub passage: Option<memdb::Passage>,
    /// redb's page cache in MiB [default: 1024].
    #[arg(long, env = "MEMDB_STORE_CACHE_MB", value_name = "MIB")]
    pub store_cache_mb: Option<u64>,
    /// The chat model of summaries, labels and importance.
    #[command(flatten)]
    pub chat: crate::chat::ChatSettings,
    /// The OpenAI-compatible proxy.
    #[command(flatten)]
    pub proxy: crate::proxy::ProxySettings,
}

/// A boolean flag's value: true/false, yes/no, on/off, 1/0; empty (an
/// empty variable) is false, as it was before the flag took a value.
fn parse_bool(s: &str) -> Result<bool, String> {
    match s.trim().to_ascii_lowercase().as_str() {
        "" | "false" | "no" | "off" | "0" | "n" | "f" => Ok(false),
        "true" | "yes" | "on" | "1" | "y" | "t" => Ok(true),
        _ => Err(format!("{s:?} is not a boolean: true or false")),
    }
}

fn parse_passage(s: &str) -> Result<memdb::Passage, String> {
    memdb::Passage::parse(s).map_err(|e| e.to_string())
}

/// The `memdb-server` binary's arguments.
#[derive(Debug, Parser)]
#[command(
    name = "memdb-server",
    version,
    about = "Serve a memdb data directory over Sekha's REST API"
)]
pub struct ServerCli {
    /// Data directory [default: $MEMDB_DATA, else the platform data dir + /memdb].
    #[arg(long, env = "MEMDB_DATA", value_name = "DIR")]
    pub data: Option<PathBuf>,
    /// Embedder for semantic and hybrid search [default: auto: the local
    /// model when installed, else none with a logged note].
    #[arg(long, env = "MEMDB_EMBEDDER", value_enum)]
    pub embedder: Option<EmbedderKind>,
    /// Directory of the local embedding model.
    #[arg(long, env = "MEMDB_MODELS", value_name = "DIR")]
    pub models_dir: Option<PathBuf>,
    /// Settings of `--embedder openai`.
    #[command(flatten)]
    pub openai: OpenAiSettings,
    /// Server settings.
    #[command(flatten)]
    pub serve: ServeArgs,
}

impl ServeArgs {
    /// Defaults, then the file, then these arguments (and the data
    /// directory and embedder settings, which `memdb` passes as global
    /// flags); validated.
    pub fn config(
        &self,
        data: Option<PathBuf>,
        embedder: Option<EmbedderKind>,
        models_dir: Option<PathBuf>,
        openai: &OpenAiSettings,
    ) -> Result<ServerConfig, ServerError> {
        // Only a file named by --config / MEMDB_CONFIG, or the user's own
        // ~/.memdb/config.toml: never one in the working directory.
        let (file, discovered) = match &self.config {
            Some(path) => (Some(path.clone()), false),
            None => (
                crate::config::discover_config(dirs::home_dir().as_deref()),
                true,
            ),
        };
        let mut c = match &file {
            Some(path) => ServerConfig::from_file(path)?,
            None => ServerConfig::default(),
        };
        if discovered {
            c.discovered_sets = c.sensitive_settings();
        }
        c.config_file = file;
        c.sekha_env = crate::config::apply_sekha_env(&mut c, &|name| std::env::var(name).ok())?;
        if let Some(d) = data {
            c.data = Some(d);
        }
        if let Some(l) = self.listen {
            c.listen = l;
        }
        let mut keys: Vec<String> = self.api_key.iter().cloned().collect();
        keys.extend(self.api_keys.iter().map(|k| k.trim().to_string()));
        keys.retain(|k| !k.is_empty());
        if !keys.is_empty() {
            c.api_keys = keys;
        }
        let ro: Vec<String> = self
            .readonly_api_keys
            .iter()
            .map(|k| k.trim().to_string())
            .filter(|k| !k.is_empty())
            .collect();
        if !ro.is_empty() {
            c.readonly_api_keys = ro;
        }
        if !self.key_namespaces.is_empty() {
            c.key_namespaces = self.key_namespaces.clone();
        }
        // A list given (flag or variable) replaces the file's, an empty
        // one included: `MEMDB_CORS_ORIGINS=` turns the file's CORS off.
        let list = |given: &Option<Vec<String>>, field: &mut Vec<String>| {
            if let Some(v) = given {
                *field = v
                    .iter()
                    .map(|s| s.trim().to_string())
                    .filter(|s| !s.is_empty())
                    .collect();
            }
        };
        list(&self.cors_origins, &mut c.cors_origins);
        if let Some(r) = self.rate_limit {
            c.rate_limit_per_second = r;
        }
        if let Some(b) = self.rate_burst {
            c.rate_limit_burst = b;
        }
        if !self.trusted_proxies.is_empty() {
            c.trusted_proxies = self.trusted_proxies.clone();
        }
        if let Some(b) = self.body_limit {
            c.body_limit = b;
        }
        list(&self.allowed_hosts, &mut c.allowed_hosts);
        list(&self.allowed_origins, &mut c.allowed_origins);
        fn set<T>(v: Option<T>, field: &mut T) {
            if let Some(v) = v {
                *field = v;
            }
        }
        set(self.header_timeout, &mut c.header_timeout_secs);
        set(self.body_timeout, &mut c.body_timeout_secs);
        set(self.request_timeout, &mut c.request_timeout_secs);
        set(self.max_connections, &mut c.max_connections);
        set(self.max_connections_per_ip, &mut c.max_connections_per_ip);
        set(self.mcp_sessions_per_key, &mut c.mcp_sessions_per_key);
        if let Some(t) = &self.tools {
            c.mcp_tools = t.clone();
        }
        set(self.kb_watch, &mut c.kb_watch_secs);
        set(self.kuradb_open, &mut c.kuradb_open);
        set(self.passage, &mut c.message_passage);
        set(self.store_cache_mb, &mut c.store_cache_mb);
        if let Some(e) = embedder {
            c.embedder = e;
        }
        if let Some(m) = models_dir {
            c.models_dir = Some(m);
        }
        c.openai = openai.or(&c.openai);
        c.chat = self.chat.or(&c.chat);
        c.proxy = self.proxy.or(&c.proxy);
        c.validate()?;
        Ok(c)
    }
}

/// Opens the store and serves until SIGINT/SIGTERM; blocks the thread.
pub fn run(config: ServerConfig) -> Result<(), ServerError> {
    crate::logs::init_tracing();
    if let Some(f) = &config.config_file {
        if config.discovered_sets.is_empty() {
            tracing::info!("configuration file {}", f.display());
        } else {
            tracing::warn!(
                "configuration file {} (found, not named by --config or MEMDB_CONFIG) sets {}",
                f.display(),
                config.discovered_sets.join(", ")
            );
        }
    }
    if !config.sekha_env.is_empty() {
        tracing::info!("Sekha variables read: {}", config.sekha_env.join(", "));
    }
    config.validate()?;
    let data = match &config.data {
        Some(d) => d.clone(),
        None => dirs::data_dir()
            .map(|d| d.join("memdb"))
            .ok_or_else(|| ServerError::Config("no data directory: pass --data".into()))?,
    };
    let engine = crate::config::engine_config(&config, &data)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(ServerError::Serve)?;
    runtime.block_on(async move {
        let db = tokio::task::spawn_blocking(move || memdb::Memdb::open_with(&data, engine))
            .await
            .map_err(|e| ServerError::Serve(std::io::Error::other(e)))?
            .map_err(ServerError::Open)?;
        let listener = tokio::net::TcpListener::bind(config.listen)
            .await
            .map_err(ServerError::Bind)?;
        crate::serve::serve(config, db, listener, crate::listen::shutdown_signal()).await
    })
}

/// The `memdb-server` binary: parse, run, map the outcome to an exit code.
pub fn main_entry() -> std::process::ExitCode {
    // First: a parse worker serves its one file and exits here; otherwise
    // KuraDB's third-party parsers run in worker children (SPEC §15.3).
    memdb::kuradb::parse::isolate_parsers();
    memdb::limit_malloc_arenas(memdb::MALLOC_ARENAS);
    let cli = ServerCli::parse();
    let result = cli
        .serve
        .config(cli.data, cli.embedder, cli.models_dir, &cli.openai)
        .and_then(run);
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
