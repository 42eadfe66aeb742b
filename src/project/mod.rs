//! The files agentci writes into a user's repository: the scaffold of
//! `agentci init` (spec, cassette folder, git attributes, GitHub workflow) and the
//! pre-push hook of `agentci install-hooks`, for whichever hook manager the
//! repository uses. Existing files are never overwritten without `force`.

use std::fmt;
use std::path::{Path, PathBuf};

use crate::atomic::{self, Visibility};
use crate::error::{Error, Result};

pub mod hooks;
pub mod init;

/// What happened to one file of the user's repository.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// The file did not exist and was written.
    Created,
    /// The file existed and was replaced (`--force`).
    Overwritten,
    /// Lines or a block were added to an existing file.
    Extended,
    /// The file already had what we would add.
    Unchanged,
    /// The file exists and differs; left alone without `--force`.
    Kept,
}

/// One file and what happened to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileChange {
    /// The file, relative to the project root.
    pub path: PathBuf,
    /// What was done.
    pub action: Action,
}

impl fmt::Display for FileChange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let path = self.path.display();
        match self.action {
            Action::Created => write!(f, "created   {path}"),
            Action::Overwritten => write!(f, "replaced  {path}"),
            Action::Extended => write!(f, "updated   {path}"),
            Action::Unchanged => write!(f, "unchanged {path}"),
            Action::Kept => write!(f, "kept      {path} (it exists; --force replaces it)"),
        }
    }
}

/// The text of `path`, or `None` when it does not exist.
fn read_optional(path: &Path) -> Result<Option<String>> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(Some(text)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Error::io(path, e)),
    }
}

/// Writes a whole file under `root`, unless it exists (then kept, or replaced with `force`).
fn write_file(
    root: &Path,
    rel: &Path,
    text: &str,
    visibility: Visibility,
    force: bool,
) -> Result<FileChange> {
    let path = root.join(rel);
    let action = match read_optional(&path)? {
        Some(existing) if existing == text => Action::Unchanged,
        Some(_) if !force => Action::Kept,
        Some(_) => Action::Overwritten,
        None => Action::Created,
    };
    if matches!(action, Action::Created | Action::Overwritten) {
        atomic::write(&path, text.as_bytes(), visibility)?;
    }
    Ok(FileChange {
        path: rel.to_path_buf(),
        action,
    })
}

/// Adds each of `lines` that `rel` does not hold yet at its end (a missing file is created).
fn ensure_lines(root: &Path, rel: &Path, lines: &[&str]) -> Result<FileChange> {
    let path = root.join(rel);
    let existing = read_optional(&path)?;
    let text = existing.as_deref().unwrap_or("");
    let missing: Vec<&str> = lines
        .iter()
        .copied()
        .filter(|line| !text.lines().any(|l| l.trim() == line.trim()))
        .collect();
    let action = match (&existing, missing.is_empty()) {
        (_, true) => Action::Unchanged,
        (None, false) => Action::Created,
        (Some(_), false) => Action::Extended,
    };
    if !missing.is_empty() {
        let mut out = text.to_string();
        if !out.is_empty() && !out.ends_with('\n') {
            out.push('\n');
        }
        for line in missing {
            out.push_str(line);
            out.push('\n');
        }
        atomic::write(&path, out.as_bytes(), Visibility::Public)?;
    }
    Ok(FileChange {
        path: rel.to_path_buf(),
        action,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_files_are_kept_unless_forced_and_lines_are_added_once() {
        let dir = tempfile::tempdir().unwrap();
        let rel = Path::new("a/b.txt");
        let write = |text: &str, force| {
            write_file(dir.path(), rel, text, Visibility::Public, force)
                .unwrap()
                .action
        };
        assert_eq!(write("one\n", false), Action::Created);
        assert_eq!(write("one\n", false), Action::Unchanged);
        assert_eq!(write("two\n", false), Action::Kept);
        assert_eq!(
            std::fs::read_to_string(dir.path().join(rel)).unwrap(),
            "one\n"
        );
        assert_eq!(write("two\n", true), Action::Overwritten);
        assert_eq!(
            std::fs::read_to_string(dir.path().join(rel)).unwrap(),
            "two\n"
        );

        let attrs = Path::new(".gitattributes");
        std::fs::write(dir.path().join(attrs), "*.png binary").unwrap();
        let ensure = |lines: &[&str]| ensure_lines(dir.path(), attrs, lines).unwrap().action;
        assert_eq!(ensure(&["x linguist-generated=true"]), Action::Extended);
        assert_eq!(ensure(&["x linguist-generated=true"]), Action::Unchanged);
        assert_eq!(
            std::fs::read_to_string(dir.path().join(attrs)).unwrap(),
            "*.png binary\nx linguist-generated=true\n"
        );
        let fresh = Path::new(".gitignore");
        assert_eq!(
            ensure_lines(dir.path(), fresh, &["/.agentci/"])
                .unwrap()
                .action,
            Action::Created
        );
    }
}
