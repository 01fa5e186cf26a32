//! `spotagg replay` (being written).

/// Arguments of `spotagg replay`.
#[derive(clap::Args)]
pub struct Args {}

/// Runs the command.
pub fn run(_args: Args) -> anyhow::Result<()> {
    anyhow::bail!("spotagg replay is not built yet")
}
