//! `spotagg switch` (being written).

/// Arguments of `spotagg switch`.
#[derive(clap::Args)]
pub struct Args {}

/// Runs the command.
pub fn run(_args: Args) -> anyhow::Result<()> {
    anyhow::bail!("spotagg switch is not built yet")
}
