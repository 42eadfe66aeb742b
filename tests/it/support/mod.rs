//! Shared test helpers: temporary directories, the agentci binary and other
//! background processes, a plain HTTP client, and the SDK client environments.
#![allow(dead_code)] // each test module uses its own subset

pub mod http;
pub mod process;
pub mod project;
pub mod sdk;

use std::path::PathBuf;

/// A fresh temporary directory, removed on drop.
pub fn temp_dir() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("agentci-test-")
        .tempdir()
        .expect("temporary directory")
}

/// The `agentci` binary under test.
pub fn agentci_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_agentci"))
}

/// The repository root.
pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The cargo target directory (where cached client environments live).
pub fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .map(|p| {
            if p.is_absolute() {
                p
            } else {
                repo_root().join(p)
            }
        })
        .unwrap_or_else(|| repo_root().join("target"))
}

/// A multi-threaded tokio runtime for tests that mix async servers and blocking clients.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime")
}

/// Copies the folder `from` to `to` recursively (Python's `__pycache__` left out).
pub fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            if entry.file_name() != "__pycache__" {
                copy_dir(&entry.path(), &target);
            }
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}
