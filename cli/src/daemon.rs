//! `memdb daemon start|stop|status|restart`: memdb-server as a background
//! service of one data directory, as KuraDB's `kura` / `kura stop` and
//! Sekha's `start --daemon` / `stop` / `status` run theirs.
//!
//! The state is two files in the data directory: `server.json` (`{url, pid,
//! started_at}`), which the server itself writes once it listens and
//! removes when it shuts down (`memdb_server::mcp::forward`), and
//! `server.log`, the server's stdout and stderr (appended). `start` runs
//! `memdb serve` as a detached child (its own process group, stdin closed,
//! output to the log) on a loopback port, pinned with `--port` or random in
//! 10000..=65535 (ten tries when a port is taken), waits until the
//! endpoint file names the child and `GET /api/health` answers `OK`, and
//! prints the endpoint. `stop` sends SIGTERM (the server drains its
//! requests, closes the store and removes the endpoint file) and escalates
//! to SIGKILL after `--timeout`. An endpoint file whose process is gone
//! (kill -9, a crash, a reboot) or is no memdb process is *stale*: `status`
//! reports it, `start` and `stop` remove it.
//!
//! For a supervisor (systemd, Agenvoy), run `memdb serve` in the
//! foreground instead: logs on stderr, exit 0 after SIGTERM, 1 on failure.
//! What this is not: a supervisor. Nothing restarts a server that dies.

use std::ffi::OsString;
use std::fs::OpenOptions;
use std::io::{Read as _, Seek as _, SeekFrom, Write as _};
use std::net::{Ipv4Addr, TcpListener};
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, anyhow, bail};
use memdb_server::mcp::forward::{ENDPOINT_FILE, Endpoint, read_endpoint};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde_json::{Value, json};

use crate::args::{Cli, Command as CliCommand, DaemonAction, EmbedderKind};

/// The server's log file in the data directory.
pub const LOG_FILE: &str = "server.log";
/// Random ports are drawn from KuraDB's range.
const PORT_RANGE: std::ops::RangeInclusive<u16> = 10000..=65535;
/// Ports tried when the port is not pinned (KuraDB's 10).
const PORT_TRIES: usize = 10;
/// How often the endpoint, health and liveness are polled.
const POLL: Duration = Duration::from_millis(100);
/// Time a killed process gets to disappear.
const KILL_GRACE: Duration = Duration::from_secs(5);

/// What a daemon command reports: human text, JSON data, and how it ended.
pub struct Report {
    /// The human rendering.
    pub text: String,
    /// The `--json` rendering.
    pub data: Value,
    /// How the command ended (the exit code is chosen in `main`).
    pub exit: Exit,
}

/// How a daemon command ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Exit {
    /// Done (exit 0).
    Ok,
    /// `status`: nothing runs and no endpoint file is left (exit 3, LSB's
    /// "program is not running").
    NotRunning,
    /// `status`: an endpoint file without its server, or a server that
    /// does not answer (exit 1, with this reason).
    Failed(String),
}

/// The global flags `start` hands to the server it forks.
struct Globals {
    /// `None` when left at its default: the server's file then decides.
    embedder: Option<EmbedderKind>,
    models: Option<PathBuf>,
    openai: crate::args::OpenAiSettings,
}

/// Runs `memdb daemon ACTION` on the `--data` directory.
pub fn run(cli: &Cli) -> Result<Report> {
    let CliCommand::Daemon { action } = &cli.command else {
        bail!("not a daemon command");
    };
    let dir = crate::options::data_dir(cli.data.clone())?;
    // Absolute in messages and in the server's arguments (a missing
    // directory stays as given: `start` creates it, the others report it).
    let dir = std::fs::canonicalize(&dir).unwrap_or(dir);
    let globals = Globals {
        embedder: crate::serve::embedder_given().then_some(cli.embedder),
        models: cli.models.clone(),
        openai: cli.openai.clone(),
    };
    match action {
        DaemonAction::Start {
            port,
            wait,
            serve_args,
        } => start(&dir, &globals, *port, None, secs(*wait)?, serve_args),
        DaemonAction::Stop { timeout } => stop(&dir, secs(*timeout)?).map(|s| s.report),
        DaemonAction::Status => Ok(status(&dir)),
        DaemonAction::Restart {
            port,
            wait,
            timeout,
            serve_args,
        } => {
            let stopped = stop(&dir, secs(*timeout)?)?;
            // Clients keep their URL: the old port is tried first.
            let mut r = start(
                &dir,
                &globals,
                *port,
                stopped.port,
                secs(*wait)?,
                serve_args,
            )?;
            r.text = format!("{}\n{}", stopped.report.text, r.text);
            r.data["stopped"] = stopped.report.data;
            Ok(r)
        }
    }
}

fn secs(s: f64) -> Result<Duration> {
    Duration::try_from_secs_f64(s)
        .ok()
        .filter(|d| !d.is_zero())
        .ok_or_else(|| anyhow!("invalid duration {s}: give a positive number of seconds"))
}

/// Where the directory's server stands.
enum State {
    /// The endpoint's process is alive and answers health checks.
    Running(Endpoint),
    /// The endpoint's process is a live memdb process that does not answer
    /// (starting, hung, or listening elsewhere).
    Unresponsive(Endpoint),
    /// An endpoint file whose process is gone or is no memdb process.
    Stale(Endpoint, String),
    /// No endpoint file.
    Absent,
}

fn state(dir: &Path) -> State {
    let Some(e) = read_endpoint(dir) else {
        return State::Absent;
    };
    if !alive(e.pid) {
        let why = format!("process {} is not running", e.pid);
        return State::Stale(e, why);
    }
    if healthy(&e.url) {
        return State::Running(e);
    }
    if looks_like_memdb(e.pid) {
        State::Unresponsive(e)
    } else {
        let why = format!("process {} is not a memdb server", e.pid);
        State::Stale(e, why)
    }
}

/// Whether `pid` is a live process (a zombie, exited but not reaped, is
/// not).
fn alive(pid: u32) -> bool {
    let Ok(raw) = i32::try_from(pid) else {
        return false;
    };
    if raw <= 0 || kill(Pid::from_raw(raw), None).is_err() {
        return false;
    }
    // `/proc/PID/stat`: "pid (comm) S ..."; the state follows the last ')'.
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !matches!(
            stat.rsplit_once(')')
                .and_then(|(_, rest)| rest.trim_start().chars().next()),
            Some('Z' | 'X')
        ),
        // No procfs: kill(pid, 0) succeeding is all there is.
        Err(_) => !Path::new("/proc/self").exists(),
    }
}

/// Whether `pid`'s command line names memdb (a pid reused by another
/// program after a crash is not ours to signal). Without procfs: yes.
fn looks_like_memdb(pid: u32) -> bool {
    match std::fs::read(format!("/proc/{pid}/cmdline")) {
        Ok(cmd) => cmd
            .split(|b| *b == 0)
            .next()
            .is_some_and(|argv0| String::from_utf8_lossy(argv0).contains("memdb")),
        Err(_) => !Path::new("/proc/self").exists(),
    }
}

/// `GET {url}/api/health` answers 200 `OK` within a second.
fn healthy(url: &str) -> bool {
    let agent = ureq::Agent::config_builder()
        .timeout_global(Some(Duration::from_secs(1)))
        .http_status_as_error(false)
        .build()
        .new_agent();
    match agent.get(format!("{url}/api/health")).call() {
        Ok(mut r) => {
            r.status() == 200
                && r.body_mut()
                    .read_to_string()
                    .is_ok_and(|b| b.trim() == "OK")
        }
        Err(_) => false,
    }
}

fn port_of(url: &str) -> Option<u16> {
    url.rsplit_once(':')?.1.trim_end_matches('/').parse().ok()
}

fn endpoint_json(e: &Endpoint, dir: &Path) -> Value {
    json!({
        "url": e.url,
        "pid": e.pid,
        "started_at": e.started_at,
        "data": dir,
        "log": dir.join(LOG_FILE),
    })
}

/// Removes the endpoint file if it still names `pid` (the server, or a
/// new one, may have replaced it meanwhile).
fn remove_endpoint(dir: &Path, pid: u32) -> Result<()> {
    if read_endpoint(dir).is_some_and(|e| e.pid == pid) {
        let path = dir.join(ENDPOINT_FILE);
        match std::fs::remove_file(&path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e).with_context(|| format!("removing {}", path.display())),
        }
    }
    Ok(())
}

/// A port in [`PORT_RANGE`] nobody listens on right now (the server binds
/// it a moment later; a race is retried).
fn random_free_port(attempt: usize) -> Option<u16> {
    use std::hash::{BuildHasher as _, Hasher as _};
    let span = u64::from(PORT_RANGE.end() - PORT_RANGE.start()) + 1;
    for i in 0..64u64 {
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u64(i);
        h.write_usize(attempt);
        h.write_u32(std::process::id());
        let port = PORT_RANGE.start() + u16::try_from(h.finish() % span).ok()?;
        if TcpListener::bind((Ipv4Addr::LOCALHOST, port)).is_ok() {
            return Some(port);
        }
    }
    None
}

/// The last `error:` line the server wrote to the log after `from`, else
/// its last line.
fn log_error(log: &Path, from: u64) -> String {
    let mut text = String::new();
    if let Ok(mut f) = std::fs::File::open(log)
        && f.seek(SeekFrom::Start(from)).is_ok()
    {
        let _ = f.take(1 << 20).read_to_string(&mut text);
    }
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    lines
        .iter()
        .rev()
        .find(|l| l.starts_with("error:"))
        .or(lines.last())
        .map(|l| l.trim_start_matches("error:").trim().to_string())
        .unwrap_or_else(|| "no output".into())
}

fn start(
    dir: &Path,
    globals: &Globals,
    pinned: Option<u16>,
    preferred: Option<u16>,
    wait: Duration,
    serve_args: &[OsString],
) -> Result<Report> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let canonical =
        std::fs::canonicalize(dir).with_context(|| format!("resolving {}", dir.display()))?;
    let dir = canonical.as_path();
    let mut notes = Vec::new();
    match state(dir) {
        State::Running(e) => {
            let mut data = endpoint_json(&e, dir);
            data["status"] = "running".into();
            data["already_running"] = true.into();
            return Ok(Report {
                text: format!(
                    "memdb-server is already running at {} (pid {})",
                    e.url, e.pid
                ),
                data,
                exit: Exit::Ok,
            });
        }
        State::Unresponsive(e) => bail!(
            "memdb-server (pid {}) holds {} but does not answer at {}; `memdb daemon stop` it first",
            e.pid,
            dir.display(),
            e.url
        ),
        State::Stale(e, why) => {
            remove_endpoint(dir, e.pid)?;
            notes.push(format!("removed a stale endpoint file ({why})"));
        }
        State::Absent => {}
    }
    let exe = std::env::current_exe().context("finding the memdb executable")?;
    let log_path = dir.join(LOG_FILE);
    let tries = if pinned.is_some() { 1 } else { PORT_TRIES };
    let mut last_error = String::new();
    for attempt in 0..tries {
        let port = match pinned.or(preferred.filter(|_| attempt == 0)) {
            Some(p) => p,
            None => random_free_port(attempt)
                .ok_or_else(|| anyhow!("no free loopback port in 10000-65535"))?,
        };
        let mut log = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log_path)
            .with_context(|| format!("opening {}", log_path.display()))?;
        let from = log.metadata().map(|m| m.len()).unwrap_or(0);
        let _ = writeln!(
            log,
            "--- memdb daemon start: {} on 127.0.0.1:{port}",
            chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
        );
        let mut cmd = Command::new(&exe);
        cmd.arg("--data").arg(dir);
        if let Some(name) = globals
            .embedder
            .as_ref()
            .and_then(clap::ValueEnum::to_possible_value)
        {
            cmd.arg("--embedder").arg(name.get_name());
        }
        if let Some(m) = &globals.models {
            cmd.arg("--models").arg(m);
        }
        if let Some(u) = &globals.openai.base_url {
            cmd.arg("--openai-base-url").arg(u);
        }
        if let Some(m) = &globals.openai.model {
            cmd.arg("--openai-model").arg(m);
        }
        if let Some(d) = globals.openai.dimension {
            cmd.arg("--openai-dimension").arg(d.to_string());
        }
        cmd.arg("serve")
            .arg("--listen")
            .arg(format!("127.0.0.1:{port}"))
            .args(serve_args)
            // Plain text in the log file (tracing honours NO_COLOR).
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .stdout(log.try_clone().context("duplicating the log handle")?)
            .stderr(log)
            // Its own process group: a Ctrl-C in this terminal is not its.
            .process_group(0);
        let mut child = cmd
            .spawn()
            .with_context(|| format!("starting {}", exe.display()))?;
        match wait_ready(dir, &mut child, wait) {
            Ready::Up(e) => {
                let mut data = endpoint_json(&e, dir);
                data["status"] = "running".into();
                data["already_running"] = false.into();
                data["notes"] = json!(notes);
                let mut text = notes.join("\n");
                if !text.is_empty() {
                    text.push('\n');
                }
                text.push_str(&format!(
                    "memdb-server running at {} (pid {})\nlog: {}",
                    e.url,
                    e.pid,
                    log_path.display()
                ));
                return Ok(Report {
                    text,
                    data,
                    exit: Exit::Ok,
                });
            }
            Ready::Exited => {
                last_error = log_error(&log_path, from);
                if last_error.contains("binding the listen address") {
                    if pinned.is_some() {
                        bail!(
                            "memdb-server could not listen on 127.0.0.1:{port}: {last_error} (log: {})",
                            log_path.display()
                        );
                    }
                    // A port taken between the check and the bind: another.
                    continue;
                }
                bail!(
                    "memdb-server exited at startup: {last_error} (log: {})",
                    log_path.display()
                );
            }
            Ready::TimedOut => {
                let pid = child.id();
                let _ = terminate(pid, Duration::from_secs(5));
                let _ = child.wait();
                remove_endpoint(dir, pid)?;
                bail!(
                    "memdb-server did not answer within {} s; stopped it (log: {})",
                    wait.as_secs_f64(),
                    log_path.display()
                );
            }
        }
    }
    bail!(
        "memdb-server could not bind a loopback port in {tries} tries: {last_error} (log: {})",
        log_path.display()
    )
}

enum Ready {
    Up(Endpoint),
    Exited,
    TimedOut,
}

/// Waits until the endpoint file names `child` and its health check
/// answers, the child exits, or `wait` passes.
fn wait_ready(dir: &Path, child: &mut Child, wait: Duration) -> Ready {
    let deadline = Instant::now() + wait;
    loop {
        if let Some(e) = read_endpoint(dir).filter(|e| e.pid == child.id())
            && healthy(&e.url)
        {
            return Ready::Up(e);
        }
        if matches!(child.try_wait(), Ok(Some(_)) | Err(_)) {
            return Ready::Exited;
        }
        if Instant::now() >= deadline {
            return Ready::TimedOut;
        }
        std::thread::sleep(POLL);
    }
}

/// How a signalled process ended.
enum Ended {
    /// It exited after SIGTERM.
    Terminated,
    /// It was still there after the timeout and got SIGKILL.
    Killed,
}

/// SIGTERM, then up to `timeout` for `pid` to exit, then SIGKILL.
fn terminate(pid: u32, timeout: Duration) -> Result<Ended> {
    let target = Pid::from_raw(i32::try_from(pid).context("pid out of range")?);
    kill(target, Signal::SIGTERM).with_context(|| format!("sending SIGTERM to {pid}"))?;
    if gone_within(pid, timeout) {
        return Ok(Ended::Terminated);
    }
    kill(target, Signal::SIGKILL).with_context(|| format!("sending SIGKILL to {pid}"))?;
    if gone_within(pid, KILL_GRACE) {
        Ok(Ended::Killed)
    } else {
        bail!("process {pid} is still running after SIGKILL")
    }
}

fn gone_within(pid: u32, timeout: Duration) -> bool {
    let deadline = Instant::now() + timeout;
    while alive(pid) {
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(POLL);
    }
    true
}

/// What `stop` did, and the port the server had (restart reuses it).
struct Stopped {
    report: Report,
    port: Option<u16>,
}

fn stop(dir: &Path, timeout: Duration) -> Result<Stopped> {
    let (e, was_healthy) = match state(dir) {
        State::Absent => {
            return Ok(Stopped {
                report: Report {
                    text: "memdb-server is not running".into(),
                    data: json!({"status": "not running", "stopped": false, "data": dir}),
                    exit: Exit::Ok,
                },
                port: None,
            });
        }
        State::Stale(e, why) => {
            remove_endpoint(dir, e.pid)?;
            return Ok(Stopped {
                report: Report {
                    text: format!(
                        "memdb-server is not running; removed a stale endpoint file ({why})"
                    ),
                    data: json!({"status": "not running", "stopped": false,
                        "stale_pid": e.pid, "data": dir}),
                    exit: Exit::Ok,
                },
                port: port_of(&e.url),
            });
        }
        State::Running(e) => (e, true),
        State::Unresponsive(e) => (e, false),
    };
    let started = Instant::now();
    let ended = terminate(e.pid, timeout)?;
    // A drained server removed its endpoint file; a killed one could not.
    remove_endpoint(dir, e.pid)?;
    let ms = started.elapsed().as_millis();
    let (text, killed) = match ended {
        Ended::Terminated => (
            format!("stopped memdb-server (pid {}) in {ms} ms", e.pid),
            false,
        ),
        Ended::Killed => (
            format!(
                "killed memdb-server (pid {}): still running {} s after SIGTERM",
                e.pid,
                timeout.as_secs_f64()
            ),
            true,
        ),
    };
    let mut data = endpoint_json(&e, dir);
    data["status"] = "stopped".into();
    data["stopped"] = true.into();
    data["killed"] = killed.into();
    data["was_answering"] = was_healthy.into();
    Ok(Stopped {
        report: Report {
            text,
            data,
            exit: Exit::Ok,
        },
        port: port_of(&e.url),
    })
}

fn status(dir: &Path) -> Report {
    match state(dir) {
        State::Running(e) => {
            let mut data = endpoint_json(&e, dir);
            data["status"] = "running".into();
            Report {
                text: format!(
                    "memdb-server is running at {} (pid {}, since {}); data {}; log {}",
                    e.url,
                    e.pid,
                    e.started_at.as_deref().unwrap_or("unknown"),
                    dir.display(),
                    dir.join(LOG_FILE).display()
                ),
                data,
                exit: Exit::Ok,
            }
        }
        State::Unresponsive(e) => {
            let why = format!(
                "memdb-server (pid {}) is running but does not answer at {}",
                e.pid, e.url
            );
            failed_status(why, &e, dir, "not answering")
        }
        State::Stale(e, why) => {
            let why = format!(
                "memdb-server is not running: stale endpoint file {} ({why})",
                dir.join(ENDPOINT_FILE).display()
            );
            failed_status(why, &e, dir, "stale")
        }
        State::Absent => Report {
            text: format!("memdb-server is not running (data {})", dir.display()),
            data: json!({"status": "not running", "data": dir}),
            exit: Exit::NotRunning,
        },
    }
}

/// A `status` that found a server it cannot vouch for: `why` is both the
/// text and the error line.
fn failed_status(why: String, e: &Endpoint, dir: &Path, status: &str) -> Report {
    let mut data = endpoint_json(e, dir);
    data["status"] = status.into();
    Report {
        text: why.clone(),
        data,
        exit: Exit::Failed(why),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports_come_from_urls() {
        assert_eq!(port_of("http://127.0.0.1:10123"), Some(10123));
        assert_eq!(port_of("http://[::1]:8080/"), Some(8080));
        assert_eq!(port_of("http://localhost"), None);
    }

    #[test]
    fn this_process_is_alive_and_pid_zero_is_not_ours() {
        assert!(alive(std::process::id()));
        assert!(!alive(0));
        assert!(!alive(u32::MAX));
    }

    #[test]
    fn the_log_names_the_error() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("server.log");
        std::fs::write(
            &log,
            "old: error: not this one\n--- start\nINFO x\nerror: configuration: no API key\n",
        )
        .unwrap();
        assert_eq!(log_error(&log, 0), "configuration: no API key");
        std::fs::write(&log, "only a line\n").unwrap();
        assert_eq!(log_error(&log, 0), "only a line");
        assert_eq!(log_error(&dir.path().join("none"), 0), "no output");
    }

    #[test]
    fn durations_must_be_positive() {
        assert!(secs(0.0).is_err());
        assert!(secs(-1.0).is_err());
        assert!(secs(f64::NAN).is_err());
        assert_eq!(secs(0.5).unwrap(), Duration::from_millis(500));
    }
}
