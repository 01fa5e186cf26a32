//! `spotagg flash`: loads a bitstream into a board with openFPGALoader (Debian package
//! `openfpgaloader`): into SRAM by default (lost at power-off), into the SPI flash with
//! `--write-flash`. `--board` picks openFPGALoader's board name from the board definition
//! (`Board::loader_board`); `--cable` names the JTAG cable (`openFPGALoader --list-cables`).
//! `--dry-run` prints the exact command instead of running it.
//!
//! Failures name what was tried: the command line and the cable (given, or the board's
//! default), with openFPGALoader's own words; a missing openFPGALoader says how to install it.

use anyhow::{anyhow, bail, Result};
use spotagg_boards::Board;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Arguments of `spotagg flash`.
#[derive(clap::Args)]
pub struct Args {
    /// Board identifier (see `spotagg_boards::boards()`).
    #[arg(long)]
    board: String,
    /// The bitstream (`.bit` from `spotagg build`).
    #[arg(long)]
    bitstream: PathBuf,
    /// openFPGALoader cable name (default: the board's default cable, if it has one).
    #[arg(long)]
    cable: Option<String>,
    /// Write the SPI flash (kept across power cycles) instead of the SRAM.
    #[arg(long)]
    write_flash: bool,
    /// Print the command instead of running it.
    #[arg(long)]
    dry_run: bool,
}

/// The openFPGALoader program name.
pub const LOADER: &str = "openFPGALoader";

/// The openFPGALoader argument list (program first) for a board, a bitstream and a cable.
pub fn loader_command(board: &Board, bitstream: &Path, cable: Option<&str>, write_flash: bool) -> Result<Vec<String>> {
    if board.loader_board.is_none() && cable.is_none() {
        bail!(
            "openFPGALoader has no board name for {} ({}): give the JTAG cable with --cable NAME",
            board.name,
            board.id
        );
    }
    let mut v = vec![LOADER.to_string()];
    if let Some(b) = board.loader_board {
        v.extend(["--board".into(), b.into()]);
    }
    if let Some(c) = cable {
        v.extend(["--cable".into(), c.into()]);
    }
    v.push(if write_flash { "--write-flash" } else { "--write-sram" }.into());
    v.push(bitstream.display().to_string());
    Ok(v)
}

/// One argument quoted for a POSIX shell when it needs it.
fn shell_quote(a: &str) -> String {
    if !a.is_empty() && a.chars().all(|c| c.is_ascii_alphanumeric() || "-_./=:@+,%".contains(c)) {
        a.to_string()
    } else {
        format!("'{}'", a.replace('\'', r"'\''"))
    }
}

/// The command as one shell line.
pub fn command_line(argv: &[String]) -> String {
    argv.iter().map(|a| shell_quote(a)).collect::<Vec<_>>().join(" ")
}

/// What `--dry-run` prints: the command line and a newline.
pub fn dry_run_output(board: &Board, bitstream: &Path, cable: Option<&str>, write_flash: bool) -> Result<String> {
    check_bitstream(bitstream)?;
    Ok(command_line(&loader_command(board, bitstream, cable, write_flash)?) + "\n")
}

fn check_bitstream(bitstream: &Path) -> Result<()> {
    match std::fs::metadata(bitstream) {
        Ok(m) if m.is_file() => Ok(()),
        Ok(_) => bail!("bitstream {} is not a file", bitstream.display()),
        Err(e) => bail!("bitstream {}: {e} (build one with `spotagg build`)", bitstream.display()),
    }
}

/// Runs the command.
pub fn run(args: Args) -> Result<()> {
    let board = spotagg_boards::board(&args.board).map_err(|e| anyhow!(e))?;
    if args.dry_run {
        print!("{}", dry_run_output(&board, &args.bitstream, args.cable.as_deref(), args.write_flash)?);
        return Ok(());
    }
    check_bitstream(&args.bitstream)?;
    let argv = loader_command(&board, &args.bitstream, args.cable.as_deref(), args.write_flash)?;
    let line = command_line(&argv);
    let cable = match (&args.cable, board.loader_board) {
        (Some(c), _) => format!("cable {c}"),
        (None, Some(b)) => format!("openFPGALoader's default cable for board {b} (none given with --cable)"),
        (None, None) => unreachable!("loader_command needs a board name or a cable"),
    };
    let target = if args.write_flash { "SPI flash" } else { "SRAM" };
    eprintln!("loading {} into the {target} of {} with {cable}\n$ {line}", args.bitstream.display(), board.name);
    let out = match Command::new(&argv[0]).args(&argv[1..]).stdin(Stdio::null()).output() {
        Ok(o) => o,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            bail!("{LOADER} is not installed (not on PATH); on Debian: apt-get install openfpgaloader. Tried: {line}")
        }
        Err(e) => bail!("could not run {LOADER}: {e}. Tried: {line}"),
    };
    let said = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    print!("{said}");
    if !out.status.success() {
        bail!(
            "{LOADER} could not load the board with {cable} ({}). Tried: {line}\n{LOADER} said: {}\n\
             Is a JTAG cable attached and powered? Name it with --cable (list: {LOADER} --list-cables; \
             attached probes: {LOADER} --scan-usb).",
            out.status,
            said.trim()
        );
    }
    Ok(())
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn quotes_only_what_needs_it() {
        assert_eq!(shell_quote("build/top.bit"), "build/top.bit");
        assert_eq!(shell_quote("my top.bit"), "'my top.bit'");
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
    }
}
