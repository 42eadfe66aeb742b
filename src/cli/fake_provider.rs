//! `agentci fake-provider --script FILE [--port 0] [--plain-http] [--ca-out PEM]`

use std::io::Write;
use std::path::PathBuf;

use crate::error::{Error, ExitStatus, Result};
use crate::fake::{FakeOptions, FakeProvider, Script};

/// Arguments of `agentci fake-provider`.
#[derive(Debug, clap::Args)]
pub struct FakeProviderArgs {
    /// The script (YAML or JSON) choosing the replies; see docs/fake-provider.md.
    #[arg(long)]
    pub script: PathBuf,
    /// Port on 127.0.0.1 (0 picks a free one).
    #[arg(long, default_value_t = 0)]
    pub port: u16,
    /// Serve plain HTTP instead of HTTPS.
    #[arg(long)]
    pub plain_http: bool,
    /// Where to write the test CA certificate (default: a temporary file removed at exit).
    #[arg(long, value_name = "PEM")]
    pub ca_out: Option<PathBuf>,
}

/// Runs `agentci fake-provider` until SIGINT or SIGTERM.
pub fn run(args: FakeProviderArgs) -> Result<ExitStatus> {
    let script = Script::load(&args.script)?;
    let runtime = tokio::runtime::Runtime::new()
        .map_err(|e| Error::other(format!("cannot start the async runtime: {e}"), None))?;
    runtime.block_on(serve(args, script))
}

async fn serve(args: FakeProviderArgs, script: Script) -> Result<ExitStatus> {
    let options = FakeOptions {
        port: args.port,
        plain_http: args.plain_http,
    };
    let fake = FakeProvider::start(script, options).await?;
    // Kept alive until the end of this function, so the temporary CA file outlives the server.
    let temp = tempfile::Builder::new()
        .prefix("agentci-fake-")
        .tempdir()
        .map_err(|e| Error::io(std::env::temp_dir(), e))?;
    let ca_path = args.ca_out.unwrap_or_else(|| temp.path().join("ca.pem"));
    fake.write_ca_pem(&ca_path)?;
    let mut out = std::io::stdout().lock();
    // Lines a shell can `eval`, and that tests parse; flushed so a reader sees them at once.
    let _ = writeln!(out, "export AGENTCI_FAKE_BASE_URL={}", fake.base_url());
    if !args.plain_http {
        let _ = writeln!(out, "export AGENTCI_FAKE_CA={}", ca_path.display());
    }
    let _ = out.flush();
    drop(out);
    eprintln!(
        "fake provider listening on {}; stop with Ctrl-C",
        fake.addr()
    );
    wait_for_signal().await?;
    fake.shutdown().await;
    Ok(ExitStatus::Success)
}

async fn wait_for_signal() -> Result<()> {
    let signal_error = |e: std::io::Error| Error::other(format!("cannot watch signals: {e}"), None);
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let mut term = signal(SignalKind::terminate()).map_err(signal_error)?;
        tokio::select! {
            r = tokio::signal::ctrl_c() => r.map_err(signal_error),
            _ = term.recv() => Ok(()),
        }
    }
    #[cfg(not(unix))]
    {
        tokio::signal::ctrl_c().await.map_err(signal_error)
    }
}
