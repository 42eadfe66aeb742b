//! Writing files so that readers (and crashes) see the old content or the new,
//! never a mix: a temp file in the same directory, fsync, rename. Every file
//! agentci writes (cassettes, the CA, reports, runs, verdict caches) goes through here.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// Who may read the written file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Visibility {
    /// 0644: cassettes, reports, baselines are meant to be committed and shared.
    Public,
    /// 0600 from creation: private keys.
    Private,
    /// 0755: scripts git runs, such as the pre-push hook.
    Executable,
}

/// Writes `bytes` to `path` atomically and durably, creating missing parent directories.
pub fn write(path: &Path, bytes: &[u8], visibility: Visibility) -> Result<()> {
    write_with(path, &[bytes], visibility, true)
}

/// [`write`] without the fsyncs, for files agentci regenerates by running
/// again (the run store): still never half-written, but a power cut may lose
/// the newest file. Syncing a large run's `run.json` took longer than
/// serialising it.
pub fn write_unsynced(path: &Path, bytes: &[u8], visibility: Visibility) -> Result<()> {
    write_with(path, &[bytes], visibility, false)
}

/// [`write_unsynced`] of the concatenation of `parts`, without building it.
pub fn write_parts_unsynced(path: &Path, parts: &[&[u8]], visibility: Visibility) -> Result<()> {
    write_with(path, parts, visibility, false)
}

fn write_with(path: &Path, parts: &[&[u8]], visibility: Visibility, sync: bool) -> Result<()> {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
    // tempfile creates the file 0600, so a private file is never readable by others, not even briefly.
    let mut tmp = tempfile::Builder::new()
        .prefix(".agentci-")
        .suffix(".tmp")
        .tempfile_in(&dir)
        .map_err(|e| Error::io(&dir, e))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = match visibility {
            Visibility::Public => Some(0o644),
            Visibility::Executable => Some(0o755),
            Visibility::Private => None,
        };
        if let Some(mode) = mode {
            tmp.as_file()
                .set_permissions(std::fs::Permissions::from_mode(mode))
                .map_err(|e| Error::io(tmp.path(), e))?;
        }
    }
    #[cfg(not(unix))]
    let _ = visibility;
    for bytes in parts {
        tmp.write_all(bytes).map_err(|e| Error::io(tmp.path(), e))?;
    }
    if sync {
        tmp.as_file()
            .sync_all()
            .map_err(|e| Error::io(tmp.path(), e))?;
    }
    tmp.persist(path).map_err(|e| Error::io(path, e.error))?;
    // Make the rename itself durable; some filesystems cannot sync a directory, and
    // the data is already safe under either name, so a failure here is not an error.
    #[cfg(unix)]
    if sync && let Ok(d) = std::fs::File::open(&dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_whole_files_with_the_asked_mode_and_leaves_no_temp_files() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a/b/file.txt");
        write(&path, b"old", Visibility::Public).unwrap();
        write(&path, b"new", Visibility::Public).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"new");
        let key = dir.path().join("key.pem");
        write(&key, b"secret", Visibility::Private).unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode(&path), 0o644);
            assert_eq!(mode(&key), 0o600);
        }
        let names: Vec<_> = std::fs::read_dir(path.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["file.txt"]);
    }
}
