//! The controller's options, shared by `spotagg switch --controller` (the software switch) and
//! `spotagg ctl serve` (a board): docs/controller.md.

use anyhow::{Context, Result};
use spotagg_controller::registry::{Ipv4Net, Settings};
use spotagg_driver::wire::{Ipv4Addr, MacAddr};
use std::path::PathBuf;
use std::time::Duration;

/// The controller's options.
#[derive(clap::Args, Debug, Clone)]
pub struct ControllerArgs {
    /// A job's first worker port when a worker does not say (SwitchML's default).
    #[arg(long, default_value_t = 4000)]
    pub worker_port: u16,
    /// Consecutive worker ports when a worker does not say (SwitchML's threads).
    #[arg(long, default_value_t = 16)]
    pub worker_ports: u16,
    /// A file whose first line is the token that admits any peer (`spotagg-token` metadata;
    /// our workers send SPOTAGG_TOKEN).
    #[arg(long)]
    pub token_file: Option<PathBuf>,
    /// A network whose peers register without a token (repeated; SwitchML's client sends none).
    /// With neither this nor --token-file, only loopback peers.
    #[arg(long)]
    pub allow: Vec<Ipv4Net>,
    /// A session whose workers have sent nothing for this many seconds ends and frees its slots
    /// (0: never; a board's sessions do not time out: they end by a new rank 0 or EndSession).
    #[arg(long, default_value_t = 300.0)]
    pub session_timeout: f64,
}

impl ControllerArgs {
    /// The settings for a switch at `mac` / `ip`, its first UDP port `port`.
    pub fn settings(&self, mac: MacAddr, ip: Ipv4Addr, port: u16) -> Result<Settings> {
        let mut s = Settings::new(mac, ip);
        s.switch_port = port;
        s.worker_port = self.worker_port;
        s.worker_ports = self.worker_ports;
        s.allow = self.allow.clone();
        anyhow::ensure!(
            self.session_timeout >= 0.0 && self.session_timeout.is_finite(),
            "--session-timeout {}: must be seconds, 0 or more",
            self.session_timeout
        );
        s.session_timeout = Duration::from_secs_f64(self.session_timeout);
        if let Some(p) = &self.token_file {
            let text = std::fs::read_to_string(p).with_context(|| format!("--token-file {}", p.display()))?;
            let t = text.lines().next().unwrap_or("").trim().to_string();
            anyhow::ensure!(!t.is_empty(), "--token-file {}: the first line (the token) is empty", p.display());
            s.token = Some(t);
        }
        Ok(s)
    }
}
