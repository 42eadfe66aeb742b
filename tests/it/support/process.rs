//! Background processes (the agentci proxy, the fake-provider command) that print
//! `export NAME=VALUE` lines when ready, and are stopped when dropped.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// A running child process and the environment it announced on stdout.
pub struct Running {
    child: Child,
    /// `NAME=VALUE` pairs from `export NAME=VALUE` lines.
    pub env: BTreeMap<String, String>,
    /// Every stdout line seen so far.
    pub stdout: Vec<String>,
    lines: mpsc::Receiver<String>,
    stderr_path: PathBuf,
    _stderr_dir: tempfile::TempDir,
}

impl Running {
    /// Starts `command` and reads stdout until `ready(env)` holds, failing after `timeout`
    /// with the process's output.
    pub fn spawn(
        mut command: Command,
        ready: impl Fn(&BTreeMap<String, String>) -> bool,
        timeout: Duration,
    ) -> Running {
        let stderr_dir = super::temp_dir();
        let stderr_path = stderr_dir.path().join("stderr.txt");
        let stderr = std::fs::File::create(&stderr_path).expect("stderr file");
        let mut child = command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {command:?}: {e}"));
        let stdout = child.stdout.take().expect("piped stdout");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut running = Running {
            child,
            env: BTreeMap::new(),
            stdout: Vec::new(),
            lines,
            stderr_path,
            _stderr_dir: stderr_dir,
        };
        let deadline = Instant::now() + timeout;
        while !ready(&running.env) {
            let left = deadline.saturating_duration_since(Instant::now());
            match running.lines.recv_timeout(left) {
                Ok(line) => running.take_line(line),
                Err(_) => panic!(
                    "{command:?} did not become ready within {timeout:?}\nstdout:\n{}\nstderr:\n{}",
                    running.stdout.join("\n"),
                    running.stderr()
                ),
            }
        }
        running
    }

    fn take_line(&mut self, line: String) {
        let export = line.strip_prefix("export ").unwrap_or(&line);
        if let Some((name, value)) = export.split_once('=')
            && !name.is_empty()
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        {
            let value = value.trim_matches(|c| c == '\'' || c == '"');
            self.env.insert(name.to_string(), value.to_string());
        }
        self.stdout.push(line);
    }

    /// An announced variable, panicking with the output when it is missing.
    pub fn var(&self, name: &str) -> &str {
        self.env.get(name).map(String::as_str).unwrap_or_else(|| {
            panic!(
                "{name} not announced\nstdout:\n{}\nstderr:\n{}",
                self.stdout.join("\n"),
                self.stderr()
            )
        })
    }

    /// The process's stderr so far.
    pub fn stderr(&self) -> String {
        std::fs::read_to_string(&self.stderr_path).unwrap_or_default()
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Sends `signal` (e.g. "TERM", "INT", "KILL") and waits up to `timeout` for the exit.
    pub fn stop(&mut self, signal: &str, timeout: Duration) -> ExitStatus {
        let sent = Command::new("kill")
            .args([format!("-{signal}"), self.child.id().to_string()])
            .status()
            .expect("run kill");
        assert!(sent.success(), "kill -{signal} failed");
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = self.child.try_wait().expect("wait") {
                // Pick up lines printed at exit (reports, summaries).
                while let Ok(line) = self.lines.recv_timeout(Duration::from_millis(200)) {
                    self.take_line(line);
                }
                return status;
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                panic!(
                    "process did not exit within {timeout:?} after SIG{signal}\nstderr:\n{}",
                    self.stderr()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}
