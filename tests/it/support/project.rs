//! A project folder to run agentci in, with an isolated AGENTCI_HOME and no
//! proxy or GitHub variables leaking in from the test's environment, and a
//! scripted fake provider that `agentci record` reaches as "api.openai.com".

use std::path::PathBuf;
use std::process::Output;

use agentci::fake::{FakeOptions, FakeProvider, Script};

/// Exit code, stdout and stderr of a finished command, for assertion messages.
pub fn text(out: &Output) -> String {
    format!(
        "exit {:?}\n--- stdout\n{}\n--- stderr\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// A project folder with a spec, the fake provider's CA and a cassette dir.
pub struct Project {
    /// The folder, removed on drop.
    pub dir: tempfile::TempDir,
}

impl Project {
    /// A fresh empty project folder.
    pub fn new() -> Project {
        Project {
            dir: super::temp_dir(),
        }
    }

    /// A path inside the project.
    pub fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    /// Writes `text` to `rel`, creating folders.
    pub fn write(&self, rel: &str, text: &str) -> PathBuf {
        let path = self.path(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        path
    }

    /// Runs agentci in the project folder with an isolated AGENTCI_HOME.
    pub fn agentci(&self, args: &[&str], env: &[(&str, &str)]) -> Output {
        let mut cmd = std::process::Command::new(super::agentci_bin());
        cmd.args(args)
            .current_dir(self.dir.path())
            .env("AGENTCI_HOME", self.path(".home"))
            .env("NO_COLOR", "1")
            .env_remove("GITHUB_ACTIONS")
            .env_remove("GITHUB_STEP_SUMMARY")
            .env_remove("HTTPS_PROXY")
            .env_remove("https_proxy")
            .env_remove("HTTP_PROXY")
            .env_remove("http_proxy");
        for (k, v) in env {
            cmd.env(k, v);
        }
        cmd.output().expect("run agentci")
    }
}

/// A scripted fake provider whose CA a project trusts, to record shell agents
/// that call "api.openai.com" (redirected to the fake with --upstream-override).
pub struct ScriptedUpstream {
    rt: tokio::runtime::Runtime,
    /// The fake provider.
    pub fake: FakeProvider,
    /// Its CA certificate (PEM), inside the project.
    pub ca: PathBuf,
}

impl ScriptedUpstream {
    /// Starts the fake provider with a YAML `script`.
    pub fn start(project: &Project, script: &str) -> ScriptedUpstream {
        let rt = super::runtime();
        let script = Script::parse(script).unwrap();
        let fake = rt
            .block_on(FakeProvider::start(script, FakeOptions::default()))
            .unwrap();
        let ca = project.path("fake-ca.pem");
        fake.write_ca_pem(&ca).unwrap();
        ScriptedUpstream { rt, fake, ca }
    }

    /// `agentci record --spec SPEC` against the fake, plus `extra` arguments.
    pub fn record(
        &self,
        project: &Project,
        spec: &str,
        extra: &[&str],
        env: &[(&str, &str)],
    ) -> Output {
        let override_arg = format!("api.openai.com={}", self.fake.base_url());
        let mut args = vec![
            "record",
            "--spec",
            spec,
            "--upstream-ca",
            self.ca.to_str().unwrap(),
            "--upstream-override",
            &override_arg,
        ];
        args.extend_from_slice(extra);
        project.agentci(&args, env)
    }

    /// Shuts the fake provider down.
    pub fn stop(self) {
        self.rt.block_on(self.fake.shutdown());
    }
}
