//! Starting the agent process for one case: environment contract, output
//! capture, and a timeout that kills the whole process group.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use tokio::io::AsyncReadExt;

use crate::error::{Error, Result};
use crate::spec::Command;

/// How to start the agent for one case.
#[derive(Debug, Clone)]
pub struct AgentInvocation {
    /// The command from `runner.command`.
    pub command: Command,
    /// Environment added to the inherited one (contract variables, proxy settings, `runner.env`).
    pub env: Vec<(String, String)>,
    /// Variables removed from the inherited environment (`NO_PROXY` and friends).
    pub env_remove: Vec<String>,
    /// Working directory: the directory the spec was loaded from.
    pub cwd: PathBuf,
    /// Kill the process group after this long.
    pub timeout: Duration,
}

/// How the agent process ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentOutcome {
    /// Exit code; `None` when killed by a signal or by the timeout.
    pub exit_code: Option<i32>,
    /// Everything written to stdout (lossy UTF-8).
    pub stdout: String,
    /// The last 64 KiB written to stderr (lossy UTF-8).
    pub stderr: String,
    /// Wall time from spawn to exit.
    pub duration_ms: u64,
    /// The timeout fired and the process group was killed.
    pub timed_out: bool,
}

impl AgentOutcome {
    /// The answer as the agent printed it, without the trailing newline.
    pub fn answer(&self) -> String {
        self.stdout.trim_end_matches(['\n', '\r']).to_string()
    }

    /// Whether the agent ran to completion with exit code 0.
    pub fn succeeded(&self) -> bool {
        self.exit_code == Some(0) && !self.timed_out
    }
}

/// Keep this much of stderr for reports; an agent that logs megabytes must not bloat the run store.
const STDERR_TAIL: usize = 64 * 1024;

/// Runs the agent to completion or timeout.
pub async fn run_agent(inv: &AgentInvocation) -> Result<AgentOutcome> {
    let mut cmd = match &inv.command {
        Command::Argv(argv) => {
            let (program, args) = argv.split_first().ok_or_else(|| {
                Error::other(
                    "runner.command is an empty list",
                    Some(
                        "give the program and its arguments, e.g. [\"python3\", \"agent.py\"]"
                            .into(),
                    ),
                )
            })?;
            let mut cmd = tokio::process::Command::new(program);
            cmd.args(args);
            cmd
        }
        Command::Shell(line) => {
            let mut cmd = tokio::process::Command::new("sh");
            cmd.arg("-c").arg(line);
            cmd
        }
    };
    for name in &inv.env_remove {
        cmd.env_remove(name);
    }
    cmd.envs(inv.env.iter().map(|(k, v)| (k, v)))
        .current_dir(&inv.cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // Its own process group, so a timeout kills the agent's children too.
        .process_group(0)
        .kill_on_drop(true);

    let started = Instant::now();
    let mut child = cmd.spawn().map_err(|e| {
        Error::other(
            format!("cannot start the agent ({}): {e}", describe(&inv.command)),
            Some(format!(
                "check runner.command; it runs in {}",
                inv.cwd.display()
            )),
        )
    })?;
    let pid = child.id();
    let mut stdout = child.stdout.take();
    let mut stderr = child.stderr.take();
    let read_out = async {
        let mut buf = Vec::new();
        if let Some(out) = stdout.as_mut() {
            // A read error ends the capture; what was read so far is the answer.
            let _ = out.read_to_end(&mut buf).await;
        }
        buf
    };
    let read_err = async {
        let mut buf = Vec::new();
        if let Some(err) = stderr.as_mut() {
            let _ = err.read_to_end(&mut buf).await;
        }
        buf
    };
    let wait = async {
        let (out, err, status) = tokio::join!(read_out, read_err, child.wait());
        (out, err, status)
    };
    match tokio::time::timeout(inv.timeout, wait).await {
        Ok((out, err, status)) => {
            let status =
                status.map_err(|e| Error::other(format!("waiting for the agent: {e}"), None))?;
            Ok(AgentOutcome {
                exit_code: status.code(),
                stdout: String::from_utf8_lossy(&out).into_owned(),
                stderr: tail(&err),
                duration_ms: started.elapsed().as_millis() as u64,
                timed_out: false,
            })
        }
        Err(_) => {
            if let Some(pid) = pid {
                kill_group(pid);
            }
            let _ = child.kill().await;
            Ok(AgentOutcome {
                exit_code: None,
                stdout: String::new(),
                stderr: String::new(),
                duration_ms: started.elapsed().as_millis() as u64,
                timed_out: true,
            })
        }
    }
}

fn kill_group(pid: u32) {
    if let Some(pid) = rustix::process::Pid::from_raw(pid as i32) {
        // The group may already be gone; nothing to do then.
        let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
    }
}

fn tail(bytes: &[u8]) -> String {
    let start = bytes.len().saturating_sub(STDERR_TAIL);
    String::from_utf8_lossy(&bytes[start..]).into_owned()
}

/// A one-line rendering of the command for messages.
pub fn describe(command: &Command) -> String {
    match command {
        Command::Argv(argv) => argv.join(" "),
        Command::Shell(line) => line.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inv(command: Command, timeout_ms: u64) -> AgentInvocation {
        AgentInvocation {
            command,
            env: vec![("AGENTCI_QUERY".into(), "hello".into())],
            env_remove: vec![],
            cwd: std::env::temp_dir(),
            timeout: Duration::from_millis(timeout_ms),
        }
    }

    #[tokio::test]
    async fn captures_stdout_and_exit_code() {
        let out = run_agent(&inv(
            Command::Shell("printf '%s\\n' \"$AGENTCI_QUERY\"; exit 3".into()),
            10_000,
        ))
        .await
        .unwrap();
        assert_eq!(out.exit_code, Some(3));
        assert_eq!(out.answer(), "hello");
        assert!(!out.timed_out);
    }

    #[tokio::test]
    async fn timeout_kills_the_process_group() {
        // The agent sleeps in a grandchild; killing only `sh` would leave it running.
        let dir = tempfile::tempdir().unwrap();
        let pid_file = dir.path().join("pid");
        let line = format!("sleep 30 & echo $! > {}; wait", pid_file.display());
        let out = run_agent(&inv(Command::Shell(line), 500)).await.unwrap();
        assert!(out.timed_out);
        assert_eq!(out.exit_code, None);
        let pid = std::fs::read_to_string(&pid_file)
            .unwrap()
            .trim()
            .to_string();
        let alive = |pid: &str| {
            std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .map(|stat| !stat.contains(") Z "))
                .unwrap_or(false)
        };
        // Reaping by init is asynchronous: poll briefly (bounded) for the grandchild to go.
        for _ in 0..50 {
            if !alive(&pid) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        panic!("grandchild {pid} survived the timeout");
    }

    #[tokio::test]
    async fn missing_program_is_a_clear_error() {
        let err = run_agent(&inv(Command::Argv(vec!["/nonexistent/agent".into()]), 1000))
            .await
            .unwrap_err();
        assert!(
            err.to_string()
                .contains("cannot start the agent (/nonexistent/agent)"),
            "{err}"
        );
    }
}
