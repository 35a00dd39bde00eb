//! Running untrusted work in a child process under resource limits.
//!
//! A third-party parser can abort the process in ways `catch_unwind`
//! cannot catch: a stack overflow, an allocation the allocator refuses, an
//! infinite loop. [`run_child`] runs such work in a child process instead:
//! the child gets its input on stdin and writes its answer to stdout, with
//! an address-space limit (`RLIMIT_AS`: an oversized allocation fails in the
//! child), a CPU-time limit (`RLIMIT_CPU`: the kernel kills a busy child), a
//! wall-clock limit (the parent kills a child that takes too long, e.g.
//! one blocked), no core dumps, and a bound on what the parent reads back.
//! The child is also killed when the parent dies (`PR_SET_PDEATHSIG`).
//! Whatever the child does, the parent gets a `Result`.

#![allow(unsafe_code)]

use std::io::{Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The limits one child runs under.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Address space, in bytes (`RLIMIT_AS`).
    pub address_space: u64,
    /// CPU time, in seconds (`RLIMIT_CPU`).
    pub cpu_seconds: u64,
    /// Wall-clock time before the parent kills the child.
    pub wall: Duration,
    /// Most bytes of output read back; more is an error.
    pub output: usize,
}

/// Runs `exe` with `env` set, `input` on its stdin, under `limits`, and
/// returns its stdout when it exits with status 0. Every other outcome is
/// an error saying what happened: killed by a signal (a crash, or the CPU
/// limit), killed at the wall-clock limit, a non-zero exit (with the last
/// line of its stderr), or output over the bound.
pub fn run_child(
    exe: &Path,
    env: &[(&str, &str)],
    input: &[u8],
    limits: &Limits,
) -> Result<Vec<u8>, String> {
    let mut cmd = Command::new(exe);
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let limits_in_child = *limits;
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        // SAFETY: the closure runs in the forked child before exec and calls
        // only async-signal-safe functions (setrlimit, prctl) on values it
        // owns; it allocates nothing and takes no lock.
        unsafe {
            cmd.pre_exec(move || apply_limits(&limits_in_child));
        }
    }
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", exe.display()))?;
    let mut stdin = child.stdin.take();
    let input = input.to_vec();
    // Writing and reading at once: a child that answers before it has
    // read everything must not deadlock us on a full pipe.
    let writer = std::thread::spawn(move || {
        if let Some(mut s) = stdin.take() {
            // A child that exits early closes the pipe: not our error.
            let _ = s.write_all(&input);
        }
    });
    let stdout = child.stdout.take();
    let cap = limits.output;
    let reader = std::thread::spawn(move || -> Result<Vec<u8>, String> {
        let mut out = Vec::new();
        if let Some(s) = stdout {
            s.take(cap as u64 + 1)
                .read_to_end(&mut out)
                .map_err(|e| format!("reading the child's output: {e}"))?;
        }
        Ok(out)
    });
    let stderr = child.stderr.take();
    let err_reader = std::thread::spawn(move || {
        let mut out = Vec::new();
        if let Some(s) = stderr {
            let _ = s.take(64 << 10).read_to_end(&mut out);
        }
        out
    });
    let started = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if started.elapsed() >= limits.wall => {
                let _ = child.kill();
                let _ = child.wait();
                let _ = writer.join();
                let _ = reader.join();
                let _ = err_reader.join();
                return Err(format!(
                    "stopped after {} s (the wall-clock limit)",
                    limits.wall.as_secs()
                ));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(2)),
            Err(e) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("waiting for the child: {e}"));
            }
        }
    };
    let _ = writer.join();
    let out = reader
        .join()
        .map_err(|_| "the output reader panicked".to_string())??;
    let err = err_reader.join().unwrap_or_default();
    if !status.success() {
        return Err(describe_failure(status, &err, limits));
    }
    if out.len() > cap {
        return Err(format!("the child's output is over {cap} bytes"));
    }
    Ok(out)
}

/// What a failed child did, for a person reading `kb status`.
fn describe_failure(status: std::process::ExitStatus, stderr: &[u8], limits: &Limits) -> String {
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(sig) = status.signal() {
            let what = match sig {
                libc::SIGXCPU | libc::SIGKILL => format!(
                    "killed by signal {sig} (the {} s CPU limit, or killed)",
                    limits.cpu_seconds
                ),
                libc::SIGSEGV | libc::SIGBUS => {
                    format!("crashed with signal {sig} (a stack overflow or a bad access)")
                }
                libc::SIGABRT => format!(
                    "aborted (signal {sig}): an allocation over the {} MiB memory limit, or a panic that aborts",
                    limits.address_space >> 20
                ),
                _ => format!("killed by signal {sig}"),
            };
            return what;
        }
    }
    let last = String::from_utf8_lossy(stderr);
    let last = last
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("");
    let last: String = last.chars().take(300).collect();
    format!("exited with {status}: {last}")
}

#[cfg(unix)]
fn apply_limits(limits: &Limits) -> std::io::Result<()> {
    let set = |resource, value: u64| -> std::io::Result<()> {
        let lim = libc::rlimit {
            rlim_cur: value as libc::rlim_t,
            rlim_max: value as libc::rlim_t,
        };
        // SAFETY: setrlimit reads the struct we pass and nothing else.
        if unsafe { libc::setrlimit(resource, &lim) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(())
    };
    set(libc::RLIMIT_AS, limits.address_space)?;
    set(libc::RLIMIT_CPU, limits.cpu_seconds.max(1))?;
    set(libc::RLIMIT_CORE, 0)?;
    // SAFETY: prctl with PR_SET_PDEATHSIG takes a signal number only.
    #[cfg(target_os = "linux")]
    unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits() -> Limits {
        Limits {
            address_space: 1 << 30,
            cpu_seconds: 5,
            wall: Duration::from_secs(10),
            output: 1 << 20,
        }
    }

    #[test]
    fn a_child_answers_with_its_stdout() {
        let out = run_child(Path::new("/bin/cat"), &[], b"hello", &limits()).unwrap();
        assert_eq!(out, b"hello");
    }

    #[test]
    fn a_failing_child_is_an_error_naming_what_happened() {
        let sh = Path::new("/bin/sh");
        let env = [("SCRIPT", "echo oops >&2; exit 3")];
        // `sh -c` reads its script from the environment through `eval`.
        let mut l = limits();
        let e = run_child(sh, &env, b"eval \"$SCRIPT\"\n", &l).unwrap_err();
        assert!(e.contains("exit status: 3") && e.contains("oops"), "{e}");
        // A crash: the child kills itself with SIGSEGV.
        let e = run_child(sh, &[], b"kill -SEGV $$\n", &l).unwrap_err();
        assert!(e.contains("signal 11"), "{e}");
        // The wall-clock limit.
        l.wall = Duration::from_millis(200);
        let e = run_child(sh, &[], b"sleep 5\n", &l).unwrap_err();
        assert!(e.contains("wall-clock"), "{e}");
        // Output over the bound.
        l.wall = Duration::from_secs(10);
        l.output = 10;
        let e = run_child(Path::new("/bin/cat"), &[], &[b'x'; 100], &l).unwrap_err();
        assert!(e.contains("over 10 bytes"), "{e}");
    }

    #[test]
    fn the_memory_limit_holds_in_the_child() {
        // 256 MiB of address space cannot hold a 400 MB string: the shell
        // fails to allocate and exits non-zero; the parent does not.
        let mut l = limits();
        l.address_space = 256 << 20;
        let e = run_child(
            Path::new("/bin/sh"),
            &[],
            b"v=$(head -c 400000000 /dev/zero | tr '\\0' x); echo ${#v}\n",
            &l,
        );
        assert!(e.is_err(), "{e:?}");
    }
}
