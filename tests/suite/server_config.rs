//! memdb-server's configuration sources through the real binary (issue
//! 19): the file found without `--config` (`~/.memdb/config.toml` only,
//! never `./config.toml`: issue 56), Sekha's `SEKHA__*` aliases, and the
//! order flags > environment (`MEMDB_*`, then `SEKHA__*`) > file >
//! defaults, each observed as the port the server answers on; then what a
//! config file may not do (issue 56): a planted `./config.toml` changes
//! nothing, `kuradb_open` with a `*` CORS origin or allowed host is
//! refused, `kuradb_open` can be turned off by flag and environment, and a
//! discovered file that sets a key is named at WARN.

use std::io::Read as _;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use crate::server_e2e::{free_port, wait_healthy};
use crate::server_util::{KEY, RO_KEY, Resp, assert_error, raw};

/// memdb-server started in `cwd` with `HOME=home`, no `MEMDB_*` or
/// `SEKHA__*` settings but `env` and `args`.
fn command(cwd: &Path, home: &Path, env: &[(&str, String)], args: &[String]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_memdb-test-server"));
    cmd.current_dir(cwd)
        .env("HOME", home)
        .env("MEMDB_EMBEDDER", "none")
        .env("MEMDB_LOG", "warn")
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    for (k, _) in std::env::vars() {
        if (k.starts_with("MEMDB_") && k != "MEMDB_EMBEDDER" && k != "MEMDB_LOG")
            || k.starts_with("SEKHA__")
        {
            cmd.env_remove(k);
        }
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd
}

/// Starts the server, checks it answers on `port`, stops it.
fn answers_on(cwd: &Path, home: &Path, env: &[(&str, String)], args: &[String], port: u16) {
    let mut child = command(cwd, home, env, args)
        .spawn()
        .expect("start memdb-server");
    wait_healthy(port, &mut child);
    let _ = child.kill();
    let _ = child.wait();
}

/// A scratch root holding `cwd/` and `home/.memdb/` (empty: no config file
/// is found there until a test writes one), and the path of `data/`.
fn dirs() -> (tempfile::TempDir, PathBuf, PathBuf, PathBuf) {
    let root = crate::tmp();
    let (cwd, home, data) = (
        root.path().join("cwd"),
        root.path().join("home"),
        root.path().join("data"),
    );
    std::fs::create_dir_all(&cwd).unwrap();
    std::fs::create_dir_all(home.join(".memdb")).unwrap();
    (root, cwd, home, data)
}

fn file(listen_port: u16, data: &Path) -> String {
    format!(
        "listen = \"127.0.0.1:{listen_port}\"\napi_keys = [\"{KEY}\"]\ndata = {:?}\nrate_limit_per_second = 0.0\n",
        data.display().to_string()
    )
}

#[test]
fn config_file_discovery_sekha_aliases_and_precedence() {
    let (_root, cwd, home, data) = dirs();

    // ~/.memdb/config.toml when the directory has none.
    let home_port = free_port();
    std::fs::write(home.join(".memdb/config.toml"), file(home_port, &data)).unwrap();
    answers_on(&cwd, &home, &[], &[], home_port);

    // ./config.toml is never read: the home file still decides.
    let cwd_port = free_port();
    std::fs::write(cwd.join("config.toml"), file(cwd_port, &data)).unwrap();
    answers_on(&cwd, &home, &[], &[], home_port);

    // SEKHA__SERVER__PORT over the file; MEMDB_LISTEN over SEKHA__; the
    // flag over both.
    let sekha_port = free_port();
    let sekha = ("SEKHA__SERVER__PORT", sekha_port.to_string());
    answers_on(&cwd, &home, std::slice::from_ref(&sekha), &[], sekha_port);
    let memdb_port = free_port();
    let memdb = ("MEMDB_LISTEN", format!("127.0.0.1:{memdb_port}"));
    answers_on(
        &cwd,
        &home,
        &[sekha.clone(), memdb.clone()],
        &[],
        memdb_port,
    );
    let flag_port = free_port();
    answers_on(
        &cwd,
        &home,
        &[sekha, memdb],
        &["--listen".into(), format!("127.0.0.1:{flag_port}")],
        flag_port,
    );

    // A discovered file is read like a named one: a bad key fails the start
    // with the file's path; so does a Sekha variable that does not parse.
    std::fs::write(home.join(".memdb/config.toml"), "nope = 1\n").unwrap();
    let out = command(&cwd, &home, &[], &[]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains(".memdb/config.toml") && stderr.contains("nope"),
        "{stderr}"
    );
    std::fs::remove_file(home.join(".memdb/config.toml")).unwrap();
    let out = command(&cwd, &home, &[("SEKHA__SERVER_PORT", "http".into())], &[])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("SEKHA__SERVER_PORT"), "{stderr}");
}

/// A key of the attacker's: long enough to be accepted.
const PLANTED_KEY: &str = "planted-key-0123456789abcdefghijklmnopqrstuvwxyz";

/// An HTTP request to `port`; `key` as a bearer token, `origin` as `Origin`.
fn get(port: u16, path: &str, key: Option<&str>, origin: Option<&str>) -> Resp {
    let mut headers = Vec::new();
    if let Some(k) = key {
        headers.push(("Authorization".to_string(), format!("Bearer {k}")));
    }
    if let Some(o) = origin {
        headers.push(("Origin".to_string(), o.to_string()));
    }
    raw(
        SocketAddr::from(([127, 0, 0, 1], port)),
        "GET",
        path,
        &headers,
        None,
    )
}

/// A started server, killed on drop.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts the server (stderr piped) and waits until it answers on `port`.
fn running(cwd: &Path, home: &Path, env: &[(&str, String)], args: &[String], port: u16) -> Running {
    let mut child = command(cwd, home, env, args)
        .spawn()
        .expect("start memdb-server");
    wait_healthy(port, &mut child);
    Running(child)
}

/// Stops the server and returns what it wrote to stderr.
fn stop(mut r: Running) -> String {
    let _ = r.0.kill();
    let _ = r.0.wait();
    let mut err = String::new();
    if let Some(mut pipe) = r.0.stderr.take() {
        let _ = pipe.read_to_string(&mut err);
    }
    err
}

/// `--data DIR --listen 127.0.0.1:PORT`.
fn place(data: &Path, port: u16) -> Vec<String> {
    vec![
        "--data".into(),
        data.display().to_string(),
        "--listen".into(),
        format!("127.0.0.1:{port}"),
    ]
}

/// A server started where a `./config.toml` was planted (a read-only key,
/// CORS for any origin, `kuradb_open`, an upstream URL) behaves as
/// without it: the file is not read at all.
#[test]
fn a_planted_working_directory_config_changes_nothing() {
    let (_root, cwd, home, data) = dirs();
    std::fs::write(
        cwd.join("config.toml"),
        format!(
            "readonly_api_keys = [\"{PLANTED_KEY}\"]\ncors_origins = [\"*\"]\nallowed_hosts = [\"*\"]\nkuradb_open = true\n[proxy]\nupstream_url = \"http://127.0.0.1:9/v1\"\n"
        ),
    )
    .unwrap();
    let port = free_port();
    let env = [("MEMDB_API_KEY", KEY.to_string())];
    let server = running(&cwd, &home, &env, &place(&data, port), port);
    // The planted key is refused; the environment's key works.
    let r = get(port, "/api/v1/conversations", Some(PLANTED_KEY), None);
    assert_error(&r, 401);
    assert_eq!(
        get(port, "/api/v1/conversations", Some(KEY), None).status,
        200
    );
    // No CORS header for an arbitrary origin.
    let r = get(
        port,
        "/api/v1/conversations",
        Some(KEY),
        Some("https://evil.example"),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(
        r.header("access-control-allow-origin"),
        None,
        "{:?}",
        r.headers
    );
    // KuraDB's routes still need a key.
    assert_error(&get(port, "/api/list", None, None), 401);
    assert_eq!(get(port, "/api/list", Some(KEY), None).status, 200);
    // The upstream URL was not taken: the proxy is off (503), nothing is
    // sent anywhere.
    let r = raw(
        SocketAddr::from(([127, 0, 0, 1], port)),
        "POST",
        "/v1/chat/completions",
        &[
            ("Authorization".to_string(), format!("Bearer {KEY}")),
            ("Content-Type".to_string(), "application/json".to_string()),
        ],
        Some(br#"{"model":"m","messages":[{"role":"user","content":"hi"}]}"#),
    );
    assert_eq!(r.status, 503, "{}", r.text());
    let stderr = stop(server);
    assert!(!stderr.contains("config.toml"), "{stderr}");
}

/// `kuradb_open` with `*` CORS origins or allowed hosts is refused at
/// startup, whichever source sets them, naming both settings.
#[test]
fn kuradb_open_with_a_wildcard_refuses_to_start() {
    let (root, cwd, home, data) = dirs();
    let named = root.path().join("named.toml");
    std::fs::write(
        &named,
        format!("api_keys = [\"{KEY}\"]\nkuradb_open = true\ncors_origins = [\"*\"]\n"),
    )
    .unwrap();
    let key = ("MEMDB_API_KEY", KEY.to_string());
    let mut args = place(&data, free_port());
    let refused = |env: &[(&str, String)], extra: &[&str], what: &str| {
        let mut all = args.clone();
        all.extend(extra.iter().map(|s| s.to_string()));
        let out = command(&cwd, &home, env, &all).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{extra:?} started");
        assert!(
            stderr.contains("kuradb_open") && stderr.contains(what),
            "{extra:?}: {stderr}"
        );
    };
    // From a --config file, and from MEMDB_CONFIG.
    refused(&[], &["--config", named.to_str().unwrap()], "cors_origins");
    refused(
        &[("MEMDB_CONFIG", named.display().to_string())],
        &[],
        "cors_origins",
    );
    // From flags, and from the environment.
    refused(
        std::slice::from_ref(&key),
        &["--kuradb-open", "--cors-origins", "*"],
        "cors_origins",
    );
    refused(
        &[
            key.clone(),
            ("MEMDB_KURADB_OPEN", "true".into()),
            ("MEMDB_ALLOWED_HOSTS", "*".into()),
        ],
        &[],
        "allowed_hosts",
    );
    // Mixed: the file's kuradb_open and the flag's wildcard host.
    std::fs::write(
        &named,
        format!("api_keys = [\"{KEY}\"]\nkuradb_open = true\n"),
    )
    .unwrap();
    refused(
        &[],
        &["--config", named.to_str().unwrap(), "--allowed-hosts=*"],
        "allowed_hosts",
    );
    // Without the wildcard the same file starts.
    let port = free_port();
    args = place(&data, port);
    args.extend(["--config".into(), named.display().to_string()]);
    let server = running(&cwd, &home, &[], &args, port);
    assert_eq!(get(port, "/api/list", None, None).status, 200);
    drop(server);
    // A list given empty replaces the file's: MEMDB_CORS_ORIGINS= clears
    // the file's `*`, so its kuradb_open starts, without CORS.
    std::fs::write(
        &named,
        format!("api_keys = [\"{KEY}\"]\nkuradb_open = true\ncors_origins = [\"*\"]\n"),
    )
    .unwrap();
    let server = running(
        &cwd,
        &home,
        &[("MEMDB_CORS_ORIGINS", String::new())],
        &args,
        port,
    );
    let r = get(port, "/api/list", None, Some("https://evil.example"));
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.header("access-control-allow-origin"), None);
    drop(server);
}

/// A case of [`kuradb_open_is_turned_off_by_flag_and_environment`]:
/// environment, extra flags, and whether `/api/list` answers without a key.
type Case = (
    &'static [(&'static str, &'static str)],
    &'static [&'static str],
    bool,
);

/// `--kuradb-open=false` and `MEMDB_KURADB_OPEN=false` turn off a file's
/// `kuradb_open = true`; a flag beats the environment both ways.
#[test]
fn kuradb_open_is_turned_off_by_flag_and_environment() {
    let (root, cwd, home, data) = dirs();
    let named = root.path().join("open.toml");
    std::fs::write(
        &named,
        format!("api_keys = [\"{KEY}\"]\nkuradb_open = true\n"),
    )
    .unwrap();
    let cases: [Case; 6] = [
        (&[], &[], true),
        (&[], &["--kuradb-open=false"], false),
        (&[("MEMDB_KURADB_OPEN", "false")], &[], false),
        (&[("MEMDB_KURADB_OPEN", "false")], &["--kuradb-open"], true),
        (
            &[("MEMDB_KURADB_OPEN", "true")],
            &["--kuradb-open=false"],
            false,
        ),
        (&[("MEMDB_KURADB_OPEN", "0")], &[], false),
    ];
    for (env, flags, open) in cases {
        let port = free_port();
        let mut args = place(&data, port);
        args.extend(["--config".into(), named.display().to_string()]);
        args.extend(flags.iter().map(|f| f.to_string()));
        let env: Vec<(&str, String)> = env.iter().map(|(k, v)| (*k, v.to_string())).collect();
        let server = running(&cwd, &home, &env, &args, port);
        let r = get(port, "/api/list", None, None);
        assert_eq!(
            r.status,
            if open { 200 } else { 401 },
            "{env:?} {flags:?}: {}",
            r.text()
        );
        drop(server);
    }
    // A flag with another word is an error, not a silent true.
    let mut args = place(&data, free_port());
    args.push("--kuradb-open=maybe".into());
    let out = command(&cwd, &home, &[("MEMDB_API_KEY", KEY.into())], &args)
        .output()
        .unwrap();
    assert!(!out.status.success());
}

/// A file found without being named (`~/.memdb/config.toml`) that sets a
/// key is named at WARN with the settings it set; the same file named by
/// `--config` is not.
#[test]
fn a_discovered_config_that_sets_keys_is_named_at_warn() {
    let (_root, cwd, home, data) = dirs();
    let in_home = home.join(".memdb/config.toml");
    std::fs::write(
        &in_home,
        format!(
            "api_keys = [\"{KEY}\"]\nreadonly_api_keys = [\"{RO_KEY}\"]\nrate_limit_burst = 10\n"
        ),
    )
    .unwrap();
    let port = free_port();
    let server = running(&cwd, &home, &[], &place(&data, port), port);
    assert_eq!(
        get(port, "/api/v1/conversations", Some(RO_KEY), None).status,
        200
    );
    let stderr = stop(server);
    let warn = stderr
        .lines()
        .find(|l| l.contains("WARN") && l.contains(".memdb/config.toml"))
        .unwrap_or_else(|| panic!("no WARN naming the file: {stderr}"));
    assert!(
        warn.contains("api_keys") && warn.contains("readonly_api_keys"),
        "{warn}"
    );
    assert!(!warn.contains("rate_limit_burst"), "{warn}");
    assert!(
        !warn.contains(KEY) && !warn.contains(RO_KEY),
        "a key leaked: {warn}"
    );
    // Named explicitly: no warning.
    let port = free_port();
    let mut args = place(&data, port);
    args.extend(["--config".into(), in_home.display().to_string()]);
    let stderr = stop(running(&cwd, &home, &[], &args, port));
    assert!(!stderr.contains("WARN"), "{stderr}");
}
