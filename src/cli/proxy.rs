//! `agentci proxy`: the record/replay proxy alone, for agents started by hand.

use std::io::Write;
use std::path::PathBuf;

use crate::error::{Error, ExitStatus, Result};
use crate::vcr::proxy::{Mode, Pace, Proxy, ProxyOptions, ProxyReport, RecordMode};

/// Arguments of `agentci proxy`.
#[derive(Debug, clap::Args)]
pub struct ProxyArgs {
    /// Record live traffic or replay the cassette.
    #[arg(long, value_enum)]
    pub mode: Mode,
    /// The cassette file (JSONL).
    #[arg(long)]
    pub cassette: PathBuf,
    /// Port on 127.0.0.1; 0 picks a free one.
    #[arg(long, default_value_t = 0)]
    pub port: u16,
    /// Extra CA certificate (PEM) to trust for upstream connections; repeatable.
    #[arg(long = "upstream-ca", value_name = "PEM")]
    pub upstream_ca: Vec<PathBuf>,
    /// How recording treats an existing cassette (record mode only).
    #[arg(long, value_enum, default_value_t = RecordMode::All)]
    pub record_mode: RecordMode,
    /// Replay speed.
    #[arg(long, value_enum, default_value_t = Pace::Instant)]
    pub pace: Pace,
    /// Extra base-URL route NAME=URL (`/NAME/...` forwards to `URL/...`); repeatable.
    #[arg(long = "route", value_name = "NAME=URL")]
    pub routes: Vec<String>,
    /// Connect to URL whenever the client asks for HOST, recording it as HOST (repeatable);
    /// e.g. api.openai.com=https://127.0.0.1:8443 records a test double as OpenAI.
    #[arg(long = "upstream-override", value_name = "HOST=URL")]
    pub upstream_overrides: Vec<String>,
    /// Serve the last recording again once a request's recordings are used up (load tests).
    #[arg(long)]
    pub allow_repeats: bool,
}

/// Runs `agentci proxy` until SIGINT or SIGTERM.
pub fn run(args: ProxyArgs) -> Result<ExitStatus> {
    let mut options = ProxyOptions::new(args.cassette, args.mode);
    options.port = args.port;
    options.upstream_ca = args.upstream_ca;
    options.record_mode = args.record_mode;
    options.pace = args.pace;
    options.allow_repeats = args.allow_repeats;
    options.upstream_overrides = parse_overrides(&args.upstream_overrides)?;
    for route in &args.routes {
        let (name, url) = route.split_once('=').ok_or_else(|| {
            Error::other(
                format!("--route {route:?} is not NAME=URL"),
                Some("e.g. --route mistral=https://api.mistral.ai".into()),
            )
        })?;
        options.routes.insert(name.to_string(), url.to_string());
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| Error::Proxy(format!("cannot start the async runtime: {e}")))?;
    runtime.block_on(async move {
        let proxy = Proxy::start(options).await?;
        let mut out = std::io::stdout().lock();
        // A closed stdout only loses the printout; the proxy still serves.
        for (name, value) in proxy.client_env() {
            let _ = writeln!(out, "export {name}={}", shell_quote(&value));
        }
        let _ = writeln!(
            out,
            "# agentci proxy listening on {} (port {}); Ctrl-C to stop",
            proxy.addr(),
            proxy.addr().port()
        );
        let _ = out.flush();
        drop(out);
        wait_for_signal().await?;
        let report = proxy.finish(None).await?;
        Ok(summarize(&report))
    })
}

/// Single-quotes a value for POSIX shells.
fn shell_quote(value: &str) -> String {
    format!("'{}'", value.replace('\'', r"'\''"))
}

#[cfg(unix)]
async fn wait_for_signal() -> Result<()> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate())
        .map_err(|e| Error::Proxy(format!("cannot watch SIGTERM: {e}")))?;
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
    Ok(())
}

#[cfg(not(unix))]
async fn wait_for_signal() -> Result<()> {
    tokio::signal::ctrl_c()
        .await
        .map_err(|e| Error::Proxy(format!("cannot watch Ctrl-C: {e}")))
}

/// Prints what happened to stderr; exit 2 when replay missed anything.
fn summarize(report: &ProxyReport) -> ExitStatus {
    let mut err = std::io::stderr().lock();
    let cassette = report.cassette.display();
    if report.cassette_written {
        let _ = writeln!(
            err,
            "recorded {} exchange(s) to {cassette}",
            report.recorded.len()
        );
    }
    if report.replayed > 0 {
        let _ = writeln!(
            err,
            "replayed {} response(s) from {cassette}",
            report.replayed
        );
    }
    if !report.unused.is_empty() {
        let _ = writeln!(
            err,
            "warning: {} recorded exchange(s) never requested (seq {:?})",
            report.unused.len(),
            report.unused
        );
    }
    for miss in &report.misses {
        let _ = writeln!(err, "error: cassette miss: {} {}", miss.method, miss.url);
        match &miss.diff {
            Some(diff) => {
                let _ = writeln!(
                    err,
                    "nearest recorded request (- recorded, + actual):\n{diff}"
                );
            }
            None => {
                let _ = writeln!(err, "no recorded request for this endpoint");
            }
        }
    }
    if report.misses.is_empty() {
        ExitStatus::Success
    } else {
        let _ = writeln!(
            err,
            "hint: re-record with: agentci proxy --mode record --record-mode new_episodes --cassette {cassette}"
        );
        ExitStatus::Error
    }
}

/// Parses `HOST=URL` items of `--upstream-override`.
pub fn parse_overrides(items: &[String]) -> Result<std::collections::BTreeMap<String, String>> {
    items
        .iter()
        .map(|item| {
            item.split_once('=')
                .map(|(host, url)| (host.trim().to_string(), url.trim().to_string()))
                .ok_or_else(|| {
                    Error::other(
                        format!("--upstream-override {item:?} is not HOST=URL"),
                        Some(
                            "e.g. --upstream-override api.openai.com=https://127.0.0.1:8443".into(),
                        ),
                    )
                })
        })
        .collect()
}
