//! `spotagg worker` (being written).

/// Arguments of `spotagg worker`.
#[derive(clap::Args)]
pub struct Args {}

/// Runs the command.
pub fn run(_args: Args) -> anyhow::Result<()> {
    anyhow::bail!("spotagg worker is not built yet")
}
