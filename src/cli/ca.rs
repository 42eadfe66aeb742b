//! `agentci ca path|bundle`: the local interception CA.

use std::path::PathBuf;

use crate::error::{ExitStatus, Result};
use crate::vcr::ca::{CertificateAuthority, ca_dir, home_dir};

/// Arguments of `agentci ca`.
#[derive(Debug, clap::Args)]
pub struct CaArgs {
    /// What to do.
    #[command(subcommand)]
    pub command: CaCommand,
}

/// `agentci ca` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum CaCommand {
    /// Print the CA certificate's path (creating the CA on first use).
    Path,
    /// Write a CA bundle (system roots + the agentci CA) for SSL_CERT_FILE / REQUESTS_CA_BUNDLE.
    Bundle {
        /// Where to write it; default: the bundle next to the CA.
        #[arg(long)]
        out: Option<PathBuf>,
    },
}

/// Runs `agentci ca`.
pub fn run(args: CaArgs) -> Result<ExitStatus> {
    let ca = CertificateAuthority::load_or_create(&ca_dir(&home_dir()?))?;
    let path = match args.command {
        CaCommand::Path => ca.cert_path(),
        CaCommand::Bundle { out } => {
            let out = out.unwrap_or_else(|| ca.bundle_path());
            ca.write_bundle(&out)?;
            out
        }
    };
    println!("{}", path.display());
    Ok(ExitStatus::Success)
}
