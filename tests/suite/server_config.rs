//! memdb-server's configuration sources through the real binary (issue
//! 19): the file found without `--config` (`./config.toml`, else
//! `~/.memdb/config.toml`), Sekha's `SEKHA__*` aliases, and the order
//! flags > environment (`MEMDB_*`, then `SEKHA__*`) > file > defaults,
//! each observed as the port the server answers on.

use std::path::Path;
use std::process::{Command, Stdio};

use crate::server_e2e::{free_port, wait_healthy};
use crate::server_util::KEY;

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

fn file(listen_port: u16, data: &Path) -> String {
    format!(
        "listen = \"127.0.0.1:{listen_port}\"\napi_keys = [\"{KEY}\"]\ndata = {:?}\nrate_limit_per_second = 0.0\n",
        data.display().to_string()
    )
}

#[test]
fn config_file_discovery_sekha_aliases_and_precedence() {
    let root = crate::tmp();
    let (cwd, home, data) = (
        root.path().join("cwd"),
        root.path().join("home"),
        root.path().join("data"),
    );
    std::fs::create_dir_all(home.join(".memdb")).unwrap();
    std::fs::create_dir_all(&cwd).unwrap();

    // ~/.memdb/config.toml when the directory has none.
    let home_port = free_port();
    std::fs::write(home.join(".memdb/config.toml"), file(home_port, &data)).unwrap();
    answers_on(&cwd, &home, &[], &[], home_port);

    // ./config.toml first.
    let cwd_port = free_port();
    std::fs::write(cwd.join("config.toml"), file(cwd_port, &data)).unwrap();
    answers_on(&cwd, &home, &[], &[], cwd_port);

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
    std::fs::write(cwd.join("config.toml"), "nope = 1\n").unwrap();
    let out = command(&cwd, &home, &[], &[]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("config.toml") && stderr.contains("nope"),
        "{stderr}"
    );
    std::fs::remove_file(cwd.join("config.toml")).unwrap();
    let out = command(&cwd, &home, &[("SEKHA__SERVER_PORT", "http".into())], &[])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("SEKHA__SERVER_PORT"), "{stderr}");
}
