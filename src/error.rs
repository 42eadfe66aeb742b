//! Typed errors that know what went wrong, where, and how to fix it.

use std::path::PathBuf;

/// The process exit status of a command (REFERENCE.md section 5).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitStatus {
    /// Every correctness check passed (warnings allowed), or the command succeeded.
    Success,
    /// A correctness failure, a forbidden tool, or an invalid spec under `validate`.
    Failure,
    /// The run itself failed: invalid input, cassette miss, agent crash, infrastructure.
    Error,
}

impl ExitStatus {
    /// The numeric process exit code.
    pub fn code(self) -> u8 {
        match self {
            ExitStatus::Success => 0,
            ExitStatus::Failure => 1,
            ExitStatus::Error => 2,
        }
    }
}

/// A location in a file, for messages of the form `file:line:col: message`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Location {
    /// The file, as the user named it.
    pub path: PathBuf,
    /// 1-based line, when known.
    pub line: Option<usize>,
    /// 1-based column, when known.
    pub column: Option<usize>,
}

impl std::fmt::Display for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.path.display())?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
            if let Some(col) = self.column {
                write!(f, ":{col}")?;
            }
        }
        Ok(())
    }
}

/// Every error the library reports. Each variant renders as one line; `hint()`
/// gives the follow-up `hint:` line.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A spec file failed to load or validate; holds every finding.
    #[error("{}", .0.iter().map(|d| d.to_string()).collect::<Vec<_>>().join("\n"))]
    Spec(Vec<crate::spec::Diagnostic>),

    /// A cassette file is unreadable or malformed.
    #[error("{location}: {message}")]
    Cassette {
        /// Where.
        location: Location,
        /// What.
        message: String,
        /// How to fix it.
        hint: Option<String>,
    },

    /// A file could not be read or written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },

    /// A cassette would have contained a secret; nothing was written.
    #[error("{}: refusing to write: {finding}", path.display())]
    SecretFound {
        /// The cassette that was not written.
        path: PathBuf,
        /// What was found (never the secret itself).
        finding: String,
    },

    /// Replay found no recorded response for one or more requests.
    #[error("{0}")]
    CassetteMiss(String),

    /// The proxy, the CA or an upstream connection failed.
    #[error("{0}")]
    Proxy(String),

    /// A judge call failed or returned an unparseable verdict (infrastructure, exit 2).
    #[error("judge: {0}")]
    Judge(String),

    /// Anything else that stops a command, with an optional hint.
    #[error("{message}")]
    Other {
        /// What went wrong.
        message: String,
        /// How to fix it.
        hint: Option<String>,
    },
}

impl Error {
    /// Builds an [`Error::Io`] for `path`.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            source,
        }
    }

    /// Builds an [`Error::Other`] with a hint.
    pub fn other(message: impl Into<String>, hint: Option<String>) -> Self {
        Error::Other {
            message: message.into(),
            hint,
        }
    }

    /// The `hint:` line shown under the error, when there is one.
    pub fn hint(&self) -> Option<String> {
        match self {
            Error::Spec(_) => None, // each diagnostic carries its own hint
            Error::Cassette { hint, .. } | Error::Other { hint, .. } => hint.clone(),
            Error::SecretFound { .. } => Some(
                "add the value's variable to the environment (names ending in _KEY, _TOKEN or _SECRET are redacted) or list the field in proxy.redact_body_fields".into(),
            ),
            Error::CassetteMiss(_) => {
                Some("re-record the case with `agentci record --case ID`".into())
            }
            Error::Io { .. } | Error::Proxy(_) | Error::Judge(_) => None,
        }
    }

    /// The exit status this error maps to: `validate` maps spec errors to 1 itself;
    /// everywhere else an error means the run failed (2).
    pub fn exit_status(&self) -> ExitStatus {
        ExitStatus::Error
    }
}

/// Library result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
