//! `spotagg replay`: feeds every frame of a pcap to an engine, in order, and writes every frame
//! the engine emits, in order, to a pcap; then prints the engine's counters.
//!
//! The input must be a classic pcap with link type Ethernet (1) and no FCS; any other link
//! type is refused with an error naming the file and the link type. Each emitted frame gets
//! the timestamp of the input frame that caused it, and the output keeps the input's
//! timestamp resolution. The counters are printed as a table, or with `--json` as one JSON
//! object whose keys are those of `Counters::named()` in that order.

use crate::engines::{load_job, EngineKind};
use anyhow::Result;
use spotagg_driver::Counters;
use spotagg_sim::pcap::{read_pcap, PcapFrameWriter};
use std::path::PathBuf;

/// Arguments of `spotagg replay`.
#[derive(clap::Args)]
pub struct Args {
    /// The switch implementation.
    #[arg(long, value_enum, default_value = "model")]
    engine: EngineKind,
    /// The job configuration (TOML).
    #[arg(long)]
    config: PathBuf,
    /// Frames as they reach the switch (pcap, Ethernet link type, no FCS).
    #[arg(long)]
    input: PathBuf,
    /// Where to write the frames the switch emits (pcap).
    #[arg(long)]
    output: PathBuf,
    /// Print the counters as one JSON object instead of a table.
    #[arg(long)]
    json: bool,
    /// Write a waveform of every signal of the simulated core (rtl and verilator engines) to
    /// this VCD file, loadable in GTKWave.
    #[arg(long)]
    vcd: Option<PathBuf>,
}

/// The counters as one JSON object, keys in the order of `Counters::named()`.
pub fn counters_json(c: &Counters) -> String {
    let fields: Vec<String> = c.named().iter().map(|(k, v)| format!("\"{k}\": {v}")).collect();
    format!("{{{}}}", fields.join(", "))
}

/// The counters as a two-column table.
pub fn counters_table(c: &Counters) -> String {
    let width = c.named().iter().map(|(k, _)| k.len()).max().unwrap_or(0);
    c.named().iter().map(|(k, v)| format!("{k:<width$}  {v:>10}\n")).collect()
}

/// Runs the command.
pub fn run(args: Args) -> Result<()> {
    let job = load_job(&args.config)?;
    let mut engine = args.engine.build_traced(&job, args.vcd.as_deref())?;
    let input = read_pcap(&args.input)?;
    let mut writer = PcapFrameWriter::create(&args.output, input.resolution)?;
    let mut out = Vec::new();
    let mut emitted = 0usize;
    for frame in &input.frames {
        engine.process(&frame.data, &mut out);
        for f in out.drain(..) {
            writer.write(frame.timestamp, &f)?;
            emitted += 1;
        }
    }
    writer.finish()?;
    let c = engine.counters();
    if args.json {
        println!("{}", counters_json(&c));
    } else {
        println!(
            "spotagg replay: {} frames from {} through the {} engine, {} frames to {}",
            input.frames.len(),
            args.input.display(),
            engine.name(),
            emitted,
            args.output.display()
        );
        print!("{}", counters_table(&c));
    }
    anyhow::ensure!(c.is_consistent(), "the {} engine's counters are inconsistent: {c:?}", engine.name());
    Ok(())
}
