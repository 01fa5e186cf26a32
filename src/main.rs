//! `spotagg`: run the software switch and workers, replay traces through any engine, run the
//! demo and the benchmarks.

mod cmd;
mod engines;
mod units;

use clap::{Parser, Subcommand};

/// spotagg: in-network gradient aggregation (SwitchML wire format) on an FPGA NIC.
#[derive(Parser)]
#[command(version, about, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// All-reduce a tensor with N in-process workers through an engine, verified against the exact sum.
    Demo(cmd::demo::Args),
    /// Feed every frame of a pcap to an engine and write the frames it emits to a pcap.
    Replay(cmd::replay::Args),
    /// Serve the reference switch over a UDP socket.
    Switch(cmd::switch::Args),
    /// Attach an engine to a Linux TAP device: the kernel's network stack talks to the switch.
    Tap(cmd::tap::Args),
    /// Run one worker process: all-reduce a seeded tensor through a switch.
    Worker(cmd::worker::Args),
    /// Print performance figures.
    Bench(cmd::bench::Args),
    /// The load generator of `spotagg bench --switch-alone` (started by the benchmark).
    #[command(hide = true)]
    LoadGenerator(cmd::loadgen::Args),
    /// Write the core's Verilog for a set of build parameters.
    Verilog(cmd::verilog::Args),
    /// Build a board's bitstream with the open ECP5 flow (yosys, nextpnr-ecp5, ecppack).
    Build(cmd::build::Args),
    /// Load a bitstream into a board with openFPGALoader (SRAM, or SPI flash with --write-flash).
    Flash(cmd::flash::Args),
    /// Control link to a board over a serial port: id, status, counters, configure, reset-counters.
    Ctl(cmd::ctl::Args),
    /// EAPS ring node daemon for a Linux bridge (`spotagg eaps --config RING.toml`; `spotagg eaps status`).
    Eaps(cmd::eaps::Args),
}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Demo(a) => cmd::demo::run(a),
        Command::Replay(a) => cmd::replay::run(a),
        Command::Switch(a) => cmd::switch::run(a),
        Command::Worker(a) => cmd::worker::run(a),
        Command::Tap(a) => cmd::tap::run(a),
        Command::Bench(a) => cmd::bench::run(a),
        Command::LoadGenerator(a) => cmd::loadgen::run(a),
        Command::Verilog(a) => cmd::verilog::run(a),
        Command::Build(a) => cmd::build::run(a),
        Command::Flash(a) => cmd::flash::run(a),
        Command::Ctl(a) => cmd::ctl::run(a),
        Command::Eaps(a) => cmd::eaps::run(a),
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("spotagg: error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
