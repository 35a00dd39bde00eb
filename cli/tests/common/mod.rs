//! Running the built `memdb` binary from the CLI's integration tests
//! (shared by `cli.rs` and `openai.rs`; each uses part of it).
#![allow(dead_code)]

use std::io::Write as _;
use std::process::{Command, Stdio};

use serde_json::Value;

/// What one run of the binary produced.
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e}):\n{}", self.stdout))
    }

    #[track_caller]
    pub fn ok(self) -> Run {
        assert_eq!(self.code, 0, "expected success; stderr: {}", self.stderr);
        self
    }

    /// Asserts exit 1 with exactly one `error: ...` line on stderr mentioning
    /// every one of `needles`.
    #[track_caller]
    pub fn fails_with(self, needles: &[&str]) -> Run {
        assert_eq!(
            self.code, 1,
            "expected exit 1; stdout: {} stderr: {}",
            self.stdout, self.stderr
        );
        let err = self.stderr.trim_end();
        assert_eq!(err.lines().count(), 1, "stderr is not one line: {err}");
        assert!(err.starts_with("error: "), "{err}");
        for n in needles {
            assert!(err.contains(n), "stderr {err:?} does not mention {n:?}");
        }
        self
    }

    #[track_caller]
    pub fn usage_error(self) -> Run {
        assert_eq!(self.code, 2, "expected exit 2; stderr: {}", self.stderr);
        assert!(self.stderr.contains("error"), "{}", self.stderr);
        self
    }
}

/// Runs `cmd` with `stdin` (written from a thread: the child may exit
/// without reading it) and collects its exit code and output.
pub fn exec(mut cmd: Command, stdin: Option<&[u8]>) -> Run {
    cmd.stdin(if stdin.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    })
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn memdb");
    let writer = stdin.map(|bytes| {
        let mut pipe = child.stdin.take().expect("stdin");
        let bytes = bytes.to_vec();
        // The child may exit without reading everything; ignore EPIPE.
        std::thread::spawn(move || {
            let _ = pipe.write_all(&bytes);
        })
    });
    let out = child.wait_with_output().expect("wait memdb");
    if let Some(w) = writer {
        w.join().expect("stdin writer");
    }
    Run {
        code: out.status.code().expect("exit code"),
        stdout: String::from_utf8(out.stdout).expect("utf-8 stdout"),
        stderr: String::from_utf8(out.stderr).expect("utf-8 stderr"),
    }
}
