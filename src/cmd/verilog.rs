//! `spotagg verilog`: the portable core's Verilog for a set of build parameters, as synthesized
//! for a board and as simulated by Verilator (top module `top`).

use anyhow::{Context, Result};
use spotagg_hdl::CoreConfig;
use std::path::PathBuf;

/// Arguments of `spotagg verilog`.
#[derive(clap::Args)]
pub struct Args {
    /// Datapath width in bytes (1, 4 or 8).
    #[arg(long, default_value_t = 4)]
    width: usize,
    /// Slots the slot memory holds (two sets each).
    #[arg(long, default_value_t = 16)]
    slots: usize,
    /// Largest payload in bytes (256 or 1024).
    #[arg(long, default_value_t = 1024)]
    max_payload: usize,
    /// Largest number of workers (1..=32).
    #[arg(long, default_value_t = 32)]
    max_workers: usize,
    /// Build the per-rank straggler counters (docs/switch.md §7) into the core.
    #[arg(long)]
    stragglers: bool,
    /// Where to write the Verilog.
    #[arg(short, long)]
    output: PathBuf,
}

/// Runs the command.
pub fn run(a: Args) -> Result<()> {
    let config = CoreConfig::new(a.width, a.slots, a.max_payload, a.max_workers)
        .map(|c| c.with_stragglers(a.stragglers))
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let v = spotagg_hdl::verilog::core_verilog(&config);
    std::fs::write(&a.output, &v).with_context(|| format!("writing {}", a.output.display()))?;
    eprintln!("spotagg verilog: {config:?}: {} lines to {}", v.lines().count(), a.output.display());
    Ok(())
}
