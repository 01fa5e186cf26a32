//! `spotagg build`: the bitstream of a board with the open ECP5 flow (see
//! `spotagg_boards::flow`): Verilog → yosys `synth_ecp5` → nextpnr-ecp5 → ecppack, a spinner
//! per step, and a summary table at the end (LUT4s, flip-flops and DP16KD against the part's
//! totals, Fmax per clock against its constraint). Fails naming the clock when timing is not met.
//!
//! The design built today is the **core-only top** (`spotagg_boards::core_top`): the core
//! between the PLL and shift registers on port 0's pins, for utilization and timing; the board
//! top with MACs and RGMII takes its place once it exists.

use anyhow::{anyhow, Context, Result};
use indicatif::{ProgressBar, ProgressStyle};
use spotagg_boards::core_top::{core_top_lpf, core_top_verilog, CORE_TOP};
use spotagg_boards::flow::{BuildReport, Design, Flow, FlowError, Step, Toolchain};
use spotagg_boards::Board;
use spotagg_hdl::verilog::{core_verilog, slots_fitting};
use spotagg_hdl::CoreConfig;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Arguments of `spotagg build`.
#[derive(clap::Args)]
pub struct Args {
    /// Board identifier (see `spotagg_boards::boards()`).
    #[arg(long, default_value = "colorlight-5a-75b-v8")]
    board: String,
    /// Output directory (default `build/BOARD`).
    #[arg(long)]
    out: Option<PathBuf>,
    /// nextpnr placer seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Stream width of the core in bytes (1, 4 or 8).
    #[arg(long, default_value_t = 4)]
    width: usize,
    /// Slots of the core (default: the most the part's block RAM holds).
    #[arg(long)]
    slots: Option<usize>,
    /// Largest payload in bytes (256 or 1024).
    #[arg(long, default_value_t = 1024)]
    max_payload: usize,
    /// Largest number of workers (1..=32).
    #[arg(long, default_value_t = 32)]
    max_workers: usize,
}

/// The core configuration of a build: `slots` defaults to what the part's block RAM holds.
pub fn core_config(board: &Board, width: usize, slots: Option<usize>, max_payload: usize, max_workers: usize) -> Result<CoreConfig> {
    let slots = slots.unwrap_or_else(|| slots_fitting(board.part.dp16kd));
    CoreConfig::new(width, slots, max_payload, max_workers).map_err(|e| anyhow!("{e}"))
}

/// The design built for a board and a core configuration: today the core-only top.
pub fn design(board: &Board, config: &CoreConfig) -> Design {
    Design {
        top: CORE_TOP.to_string(),
        verilog: core_top_verilog(&core_verilog(config), config.width_bytes),
        lpf: core_top_lpf(board),
    }
}

fn spinner(step: Step) -> ProgressBar {
    let pb = ProgressBar::new_spinner();
    pb.set_style(ProgressStyle::with_template("{spinner} {msg} {elapsed}").expect("valid template"));
    pb.set_message(step.label());
    pb.enable_steady_tick(Duration::from_millis(120));
    pb
}

fn finish(pb: &ProgressBar, step: Step, t: Instant) {
    pb.finish_and_clear();
    eprintln!("done  {:<34} {:>6.1} s", step.label(), t.elapsed().as_secs_f64());
}

/// Runs the command.
pub fn run(args: Args) -> Result<()> {
    let board = spotagg_boards::board(&args.board).map_err(|e| anyhow!(e))?;
    let config = core_config(&board, args.width, args.slots, args.max_payload, args.max_workers)?;
    let out = args.out.unwrap_or_else(|| PathBuf::from("build").join(board.id));
    eprintln!(
        "building {} ({}, {} {}, speed {}): core-only top, width {} bytes, {}{} slots, seed {}",
        board.name,
        board.id,
        board.part.device,
        board.part.package,
        board.part.speed,
        config.width_bytes,
        if args.slots.is_none() { "up to " } else { "" },
        config.slots,
        args.seed
    );
    let started = Instant::now();

    let tools = step(Step::Install, || Toolchain::ensure(&Toolchain::default_venv()))?;

    let flow = Flow { tools, part: board.part, out: out.clone(), seed: args.seed };
    let result = build(&flow, &board, config, args.slots.is_none());
    match result {
        Ok(report) => {
            println!("\n{}", report.table());
            println!("total {:.1} s, files in {}", started.elapsed().as_secs_f64(), out.display());
            Ok(())
        }
        Err(FlowError::Timing(report)) => {
            println!("\n{}", report.table());
            Err(FlowError::Timing(report)).with_context(|| format!("no bitstream written; logs in {}", out.display()))
        }
        Err(e) => Err(e.into()),
    }
}

/// Runs one step under a spinner.
fn step<T>(step: Step, f: impl FnOnce() -> Result<T, FlowError>) -> Result<T, FlowError> {
    let pb = spinner(step);
    let t = Instant::now();
    let r = f();
    match &r {
        Ok(_) => finish(&pb, step, t),
        Err(_) => {
            pb.finish_and_clear();
            eprintln!("FAIL  {}", step.label());
        }
    }
    r
}

/// Every step of the flow. With `fit_slots`, a core whose block RAM overflows the part is
/// rebuilt with fewer slots (one DP16KD per slot at 1024-byte payloads, four slots per DP16KD
/// at 256) until it fits: the largest slot count that fits.
fn build(flow: &Flow, board: &Board, mut config: CoreConfig, fit_slots: bool) -> Result<BuildReport, FlowError> {
    let mut steps = Vec::new();
    let synth = loop {
        let design = design(board, &config);
        let t = Instant::now();
        step(Step::Write, || flow.write(&design))?;
        steps.push((Step::Write, t.elapsed()));
        let t = Instant::now();
        let synth = step(Step::Synth, || flow.synth(&design.top))?;
        steps.push((Step::Synth, t.elapsed()));
        eprintln!(
            "      {} slots: {} LUT4, {} CCU2C, {} flip-flops, {} DP16KD (of {})",
            config.slots, synth.lut4, synth.ccu2c, synth.flip_flops, synth.dp16kd, board.part.dp16kd
        );
        match synth.check_fits(&board.part) {
            Ok(()) => break synth,
            Err(FlowError::DoesNotFit { resource: "DP16KD", needed, available }) if fit_slots && config.slots > 1 => {
                let over = (needed - available) as usize;
                let per_block = (512 / config.max_elements()).max(1);
                let slots = config.slots.saturating_sub(over * per_block).max(1);
                eprintln!("      {needed} DP16KD do not fit in {available}: trying {slots} slots");
                config = CoreConfig::new(config.width_bytes, slots, config.max_payload, config.max_workers)
                    .expect("fewer slots of a valid configuration are valid");
            }
            Err(e) => return Err(e),
        }
    };
    let t = Instant::now();
    let pnr = step(Step::PlaceAndRoute, || flow.place_and_route())?;
    steps.push((Step::PlaceAndRoute, t.elapsed()));
    let mut report = BuildReport::new(CORE_TOP, flow.seed, &flow.part, synth, pnr);
    report.slots = Some(config.slots);
    report.steps = steps.clone();
    report.check_timing()?;
    let t = Instant::now();
    report.bitstream = Some(step(Step::Pack, || flow.pack())?);
    steps.push((Step::Pack, t.elapsed()));
    report.steps = steps;
    Ok(report)
}
