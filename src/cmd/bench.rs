//! `spotagg bench` (being written).

/// Arguments of `spotagg bench`.
#[derive(clap::Args)]
pub struct Args {}

/// Runs the command.
pub fn run(_args: Args) -> anyhow::Result<()> {
    anyhow::bail!("spotagg bench is not built yet")
}
