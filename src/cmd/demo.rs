//! `spotagg demo` (being written).

/// Arguments of `spotagg demo`.
#[derive(clap::Args)]
pub struct Args {}

/// Runs the command.
pub fn run(_args: Args) -> anyhow::Result<()> {
    anyhow::bail!("spotagg demo is not built yet")
}
