//! `memdb daemon start|stop|status|restart` end to end: the built binary
//! forks a real memdb-server on a loopback port. Covered: start prints the
//! endpoint and health answers; a second start says it is running; status
//! says what runs where (exit 0 / 1 / 3); stop drains on SIGTERM and the
//! endpoint file goes; a stale endpoint after kill -9 is detected and
//! replaced; a pinned port, a taken pinned port, restart keeping the port;
//! stop escalating to SIGKILL; a server that cannot start is reported.
//! Every wait polls with a deadline; nothing is timed.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

mod common;
use common::{Run, exec};

use serde_json::Value;

const KEY: &str = "daemon-test-key-0123456789abcdef0123456789";

/// A data directory whose server, if any, is stopped when the test ends
/// (also when it fails).
struct Daemon {
    dir: tempfile::TempDir,
}

impl Daemon {
    fn new() -> Daemon {
        Daemon {
            dir: tempfile::tempdir().expect("tempdir"),
        }
    }

    fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    fn cmd(&self, key: Option<&str>) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_memdb"));
        cmd.env_remove("MEMDB_DATA")
            .env_remove("MEMDB_API_KEY")
            .env_remove("MEMDB_API_KEYS")
            .env_remove("MEMDB_READONLY_API_KEYS")
            .env_remove("MEMDB_CONFIG")
            .env_remove("MEMDB_LISTEN")
            .args(["--embedder", "none", "--data"])
            .arg(self.data());
        if let Some(k) = key {
            cmd.env("MEMDB_API_KEY", k);
        }
        cmd
    }

    fn run(&self, args: &[&str]) -> Run {
        let mut cmd = self.cmd(Some(KEY));
        cmd.args(args);
        exec(cmd, None)
    }

    fn endpoint(&self) -> Option<Value> {
        let bytes = std::fs::read(self.data().join("server.json")).ok()?;
        serde_json::from_slice(&bytes).ok()
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.data().join("server.log")).unwrap_or_default()
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        if let Some(e) = self.endpoint()
            && let Some(pid) = e["pid"].as_u64()
        {
            let _ = Command::new("kill")
                .args(["-KILL", &pid.to_string()])
                .status();
        }
    }
}

/// `GET {url}/api/health`'s body.
fn health(url: &str) -> String {
    ureq::get(format!("{url}/api/health"))
        .call()
        .expect("health answers")
        .body_mut()
        .read_to_string()
        .expect("health body")
}

/// Whether `pid` runs (a zombie, exited but not reaped, does not).
fn alive(pid: u64) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !matches!(
            stat.rsplit_once(')')
                .and_then(|(_, r)| r.trim_start().chars().next()),
            Some('Z' | 'X')
        ),
        Err(_) => false,
    }
}

fn wait_until(what: &str, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !f() {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn start(d: &Daemon, extra: &[&str]) -> Value {
    let mut args = vec!["--json", "daemon", "start"];
    args.extend_from_slice(extra);
    d.run(&args).ok().json()
}

#[test]
fn start_prints_the_endpoint_status_reports_and_stop_drains() {
    let d = Daemon::new();
    // Not running yet: status exits 3, stop has nothing to do.
    let r = d.run(&["daemon", "status"]);
    assert_eq!(r.code, 3, "{}", r.stderr);
    assert!(r.stdout.contains("not running"), "{}", r.stdout);

    let human = d.run(&["daemon", "start"]).ok();
    let e = d.endpoint().expect("server.json written");
    let url = e["url"].as_str().expect("url").to_string();
    let pid = e["pid"].as_u64().expect("pid");
    assert!(url.starts_with("http://127.0.0.1:"), "{url}");
    let port: u16 = url.rsplit(':').next().unwrap().parse().unwrap();
    assert!((10000..=65535).contains(&port), "{port}");
    assert!(
        e["started_at"].as_str().is_some_and(|s| s.ends_with('Z')),
        "{e}"
    );
    assert!(
        human
            .stdout
            .contains(&format!("running at {url} (pid {pid})")),
        "{}",
        human.stdout
    );
    assert!(human.stdout.contains("server.log"), "{}", human.stdout);
    assert_eq!(health(&url), "OK");
    assert!(alive(pid));

    // A second start starts nothing.
    let again = start(&d, &[]);
    assert_eq!(again["already_running"], true, "{again}");
    assert_eq!(again["pid"].as_u64(), Some(pid));
    let r = d.run(&["daemon", "start"]).ok();
    assert!(r.stdout.contains("already running"), "{}", r.stdout);
    assert_eq!(d.endpoint().unwrap()["pid"].as_u64(), Some(pid));

    let st = d.run(&["--json", "daemon", "status"]).ok().json();
    assert_eq!(st["status"], "running");
    assert_eq!(st["url"], url.as_str());
    assert_eq!(st["pid"].as_u64(), Some(pid));
    let st = d.run(&["daemon", "status"]).ok();
    assert!(
        st.stdout.contains(&url) && st.stdout.contains("since"),
        "{}",
        st.stdout
    );

    // Stop: SIGTERM, the server drains and removes its endpoint file.
    let stopped = d.run(&["--json", "daemon", "stop"]).ok().json();
    assert_eq!(stopped["stopped"], true, "{stopped}");
    assert_eq!(stopped["killed"], false, "{stopped}");
    assert!(d.endpoint().is_none(), "server.json left behind");
    assert!(!alive(pid));
    let log = d.log();
    assert!(log.contains("SIGTERM received"), "{log}");
    assert!(log.contains("store closed"), "{log}");
    assert!(!log.contains('\u{1b}'), "colour codes in the log");

    let r = d.run(&["daemon", "status"]);
    assert_eq!(r.code, 3);
    let r = d.run(&["daemon", "stop"]).ok();
    assert!(r.stdout.contains("not running"), "{}", r.stdout);
}

#[test]
fn a_stale_endpoint_after_kill_9_is_detected_and_replaced() {
    let d = Daemon::new();
    let first = start(&d, &[]);
    let old = first["pid"].as_u64().unwrap();
    let killed = Command::new("kill")
        .args(["-KILL", &old.to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    wait_until("the server died", || !alive(old));
    // The endpoint file outlived it.
    assert_eq!(d.endpoint().unwrap()["pid"].as_u64(), Some(old));
    let st = d.run(&["daemon", "status"]);
    assert_eq!(st.code, 1, "{} {}", st.stdout, st.stderr);
    assert!(st.stderr.contains("stale endpoint file"), "{}", st.stderr);
    assert!(
        st.stderr.contains(&format!("process {old} is not running")),
        "{}",
        st.stderr
    );

    let second = start(&d, &[]);
    let new = second["pid"].as_u64().unwrap();
    assert_ne!(new, old);
    assert_eq!(second["already_running"], false);
    assert!(
        second["notes"][0]
            .as_str()
            .is_some_and(|n| n.contains("removed a stale endpoint file")),
        "{second}"
    );
    assert_eq!(d.endpoint().unwrap()["pid"].as_u64(), Some(new));
    assert_eq!(health(second["url"].as_str().unwrap()), "OK");
    d.run(&["daemon", "stop"]).ok();

    // A stale file found by stop is removed too.
    let third = start(&d, &[]);
    let pid = third["pid"].as_u64().unwrap();
    Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .status()
        .unwrap();
    wait_until("the server died", || !alive(pid));
    let r = d.run(&["daemon", "stop"]).ok();
    assert!(r.stdout.contains("stale endpoint file"), "{}", r.stdout);
    assert!(d.endpoint().is_none());
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("free port")
        .port()
}

#[test]
fn a_pinned_port_is_used_kept_across_restart_and_a_taken_one_is_an_error() {
    let d = Daemon::new();
    let port = free_port();
    let e = start(&d, &["--port", &port.to_string()]);
    let url = format!("http://127.0.0.1:{port}");
    assert_eq!(e["url"], url.as_str(), "{e}");
    assert_eq!(health(&url), "OK");
    let old = e["pid"].as_u64().unwrap();

    // Restart without --port keeps the port.
    let r = d.run(&["--json", "daemon", "restart"]).ok().json();
    assert_eq!(r["stopped"]["stopped"], true, "{r}");
    assert_eq!(r["url"], url.as_str(), "{r}");
    let new = r["pid"].as_u64().unwrap();
    assert_ne!(new, old);
    assert!(!alive(old));
    assert_eq!(health(&url), "OK");

    // Another directory cannot take a pinned port that is in use.
    let other = Daemon::new();
    other
        .run(&["daemon", "start", "--port", &port.to_string()])
        .fails_with(&[
            &format!("could not listen on 127.0.0.1:{port}"),
            "binding the listen address",
        ]);
    assert!(other.endpoint().is_none());
    d.run(&["daemon", "stop"]).ok();
    assert!(d.endpoint().is_none());
}

#[test]
fn a_server_that_cannot_start_is_reported() {
    let d = Daemon::new();
    let mut cmd = d.cmd(None);
    cmd.args(["daemon", "start"]);
    exec(cmd, None).fails_with(&["exited at startup", "no API key configured", "server.log"]);
    assert!(d.endpoint().is_none());
    assert!(d.log().contains("no API key configured"));
}

/// A process that ignores SIGTERM and calls itself memdb stands in for a
/// hung server: stop waits `--timeout`, then kills it.
#[test]
fn stop_escalates_to_sigkill_after_the_timeout() {
    let d = Daemon::new();
    std::fs::create_dir_all(d.data()).unwrap();
    let mut hung = Command::new("bash")
        .args(["-c", "trap '' TERM; exec -a memdb-hung sleep 600"])
        .spawn()
        .expect("bash");
    let pid = u64::from(hung.id());
    // Wait for the exec (the name check reads its command line).
    wait_until("the stand-in runs", || {
        std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| c.starts_with(b"memdb-hung"))
    });
    write_endpoint(&d.data(), pid, "http://127.0.0.1:9");
    let st = d.run(&["daemon", "status"]);
    assert_eq!(st.code, 1);
    assert!(st.stderr.contains("does not answer"), "{}", st.stderr);

    let r = d
        .run(&["--json", "daemon", "stop", "--timeout", "0.5"])
        .ok()
        .json();
    assert_eq!(r["killed"], true, "{r}");
    let status = hung.wait().unwrap();
    use std::os::unix::process::ExitStatusExt as _;
    assert_eq!(status.signal(), Some(9), "{status:?}");
    assert!(d.endpoint().is_none(), "server.json left behind");
}

fn write_endpoint(dir: &Path, pid: u64, url: &str) {
    std::fs::write(
        dir.join("server.json"),
        serde_json::json!({"url": url, "pid": pid}).to_string(),
    )
    .unwrap();
}
