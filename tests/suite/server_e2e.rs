//! End to end with Sekha's real clients: starts the `memdb-server` binary
//! on a free port over a temporary data directory, installs
//! sekha-python-sdk 0.2.0 and sekha-mcp 0.2.0 into a cached virtual
//! environment, runs `tests/python/sdk_e2e.py` (every SDK method, every
//! sekha-mcp tool), then stops the server with SIGTERM and checks that it
//! exited cleanly with the data on disk.
//!
//! The venv lives in `$HOME/.cache/memdb-venv/<hash of requirements.txt>`
//! and is reused while the requirements file is unchanged.

use memdb::Systems;
use std::hash::{Hash, Hasher};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const KEY: &str = "sk-sekha-e2e-0123456789abcdefghijklmnopqrstuvwxyz";

pub(crate) fn python_dir() -> PathBuf {
    crate::manifest_dir().join("python")
}

/// Runs `tests/python/<script>` in the venv with `cmd` adding arguments
/// and environment, and asserts it succeeded and printed "checks passed".
pub(crate) fn run_checks(script: &str, cmd: impl FnOnce(&mut Command) -> &mut Command) {
    let mut c = Command::new(venv());
    c.arg(python_dir().join(script));
    cmd(&mut c);
    let out = c.output().unwrap_or_else(|e| panic!("run {script}: {e}"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{script} failed:\n{stdout}\n{stderr}");
    assert!(stdout.contains("checks passed"), "{stdout}");
}

/// The cached venv for `requirements.txt`, created on first use (once per
/// test process: tests that need it in parallel wait for the first).
pub(crate) fn venv() -> PathBuf {
    static VENV: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    VENV.get_or_init(make_venv).clone()
}

fn make_venv() -> PathBuf {
    let req = python_dir().join("requirements.txt");
    let text = std::fs::read(&req).expect("read requirements.txt");
    let mut h = std::collections::hash_map::DefaultHasher::new();
    text.hash(&mut h);
    let home = std::env::var_os("HOME").map(PathBuf::from).expect("HOME");
    let dir = home
        .join(".cache/memdb-venv")
        .join(format!("{:016x}", h.finish()));
    let python = dir.join("bin/python");
    if dir.join(".complete").exists() {
        return python;
    }
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.parent().expect("parent")).expect("mkdir");
    let ok = Command::new("python3")
        .args(["-m", "venv"])
        .arg(&dir)
        .status()
        .expect("run python3 -m venv (install python3 and python3-venv)");
    assert!(ok.success(), "python3 -m venv failed");
    let ok = Command::new(&python)
        .args([
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "-r",
        ])
        .arg(&req)
        .status()
        .expect("run pip");
    assert!(ok.success(), "pip install -r {} failed", req.display());
    std::fs::write(dir.join(".complete"), b"").expect("mark venv complete");
    python
}

/// Sends SIGTERM to `server` and waits (at most 30 s) for it to exit.
pub(crate) fn sigterm_and_wait(server: &mut std::process::Child) -> std::process::ExitStatus {
    let killed = Command::new("kill")
        .args(["-TERM", &server.id().to_string()])
        .status()
        .expect("kill");
    assert!(killed.success());
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(s) = server.try_wait().expect("wait") {
            return s;
        }
        if Instant::now() > deadline {
            let _ = server.kill();
            panic!("memdb-server did not stop within 30 s of SIGTERM");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

pub(crate) fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
        .port()
}

/// The memdb-server binary on `data`, listening on loopback `port` with
/// `key` as its only API key, once `/health` answers.
pub(crate) fn start_server(
    data: &Path,
    port: u16,
    key: &str,
    stderr: Stdio,
) -> std::process::Child {
    let mut server = Command::new(env!("CARGO_BIN_EXE_memdb-test-server"))
        .arg("--data")
        .arg(data)
        .args(["--listen", &format!("127.0.0.1:{port}")])
        .env("MEMDB_API_KEY", key)
        .env_remove("MEMDB_API_KEYS")
        .env_remove("MEMDB_CONFIG")
        .stdout(Stdio::null())
        .stderr(stderr)
        .spawn()
        .expect("start memdb-server");
    wait_healthy(port, &mut server);
    server
}

pub(crate) fn wait_healthy(port: u16, child: &mut std::process::Child) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            panic!("memdb-server exited early: {status}");
        }
        if let Ok(mut s) = std::net::TcpStream::connect(("127.0.0.1", port)) {
            use std::io::{Read, Write};
            let _ = s.write_all(b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
            let mut buf = String::new();
            let _ = s.read_to_string(&mut buf);
            if buf.starts_with("HTTP/1.1 200") {
                return;
            }
        }
        assert!(
            Instant::now() < deadline,
            "memdb-server not healthy after 60 s"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn sekha_sdk_and_mcp_clients_work_unchanged() {
    let python = venv();
    let data = crate::tmp();
    let port = free_port();
    let url = format!("http://127.0.0.1:{port}");
    let mut server = start_server(data.path(), port, KEY, Stdio::inherit());

    let out = Command::new(&python)
        .arg(python_dir().join("sdk_e2e.py"))
        .env("MEMDB_URL", &url)
        .env("MEMDB_KEY", KEY)
        .env("CONTROLLER_URL", &url)
        .env("CONTROLLER_API_KEY", KEY)
        .current_dir(data.path())
        .output()
        .expect("run sdk_e2e.py");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    println!("{stdout}");
    eprintln!("{stderr}");

    // Graceful stop: SIGTERM, in-flight requests finish, the store closes.
    let status = sigterm_and_wait(&mut server);

    assert!(
        out.status.success(),
        "sdk_e2e.py failed:\n{stdout}\n{stderr}"
    );
    assert!(stdout.contains("checks passed"), "{stdout}");
    assert!(
        status.success(),
        "memdb-server exit status after SIGTERM: {status}"
    );
    let db = memdb::Memdb::open(data.path()).expect("reopen after shutdown");
    let stats = db.sekha().stats(&memdb::Filter::default()).expect("stats");
    assert_eq!(stats.total_conversations, 3, "{stats:?}");
    assert!(db.check().expect("check").is_consistent());
}
