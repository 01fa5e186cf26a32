//! `spotagg build`: the bitstream of a board with the open ECP5 flow (see
//! `spotagg_boards::flow`): Verilog → yosys `synth_ecp5` → nextpnr-ecp5 → ecppack, a spinner
//! per step, and a summary table at the end (LUT4s, flip-flops and DP16KD against the part's
//! totals, Fmax per clock against its constraint). Fails naming the clock when timing is not met.
//!
//! Two designs (`--top`): `board` (the default), the board top of `spotagg_boards::tops::top` (PLL,
//! RGMII, MACs, switch fabric and core, a job baked in: `--job FILE` or a 4-worker example), and
//! `core`, the core-only top of `spotagg_boards::tops::core_top` (the core between the PLL and shift
//! registers on port 0's pins), for the core's own utilization and timing.

use anyhow::{anyhow, bail, Context, Result};
use indicatif::{ProgressBar, ProgressStyle};
use spotagg_boards::flow::{BuildReport, Design, Flow, FlowError, Step, Toolchain};
use spotagg_boards::tops::core_clock::CoreClock;
use spotagg_boards::tops::core_top::{core_top_lpf, core_top_verilog, CORE_TOP};
use spotagg_boards::tops::top::EapsBuild;
use spotagg_boards::Board;
use spotagg_driver::control::protocol::eaps::{DomainSettings, BOARD_DOMAINS};
use spotagg_driver::wire::PayloadSize;
use spotagg_driver::JobConfig;
use spotagg_hdl::verilog::{core_verilog, slots_fitting};
use spotagg_hdl::CoreConfig;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Which top module is built.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum TopKind {
    /// The board top: PLL, RGMII, MACs, switch fabric, core.
    Board,
    /// The core alone between the PLL and shift registers (no MAC: not a working switch).
    Core,
}

/// Arguments of `spotagg build`.
#[derive(clap::Args)]
pub struct Args {
    /// The design: the board top, or the core alone.
    #[arg(long, value_enum, default_value = "board")]
    top: TopKind,
    /// The job baked into the board top (TOML, as for `spotagg replay`); default: a 4-worker
    /// example job with the core's payload size and slots.
    #[arg(long)]
    job: Option<PathBuf>,
    /// Board identifier (see `spotagg_boards::boards()`).
    #[arg(long, default_value = "colorlight-5a-75b-v8")]
    board: String,
    /// Output directory (default `build/BOARD`).
    #[arg(long)]
    out: Option<PathBuf>,
    /// nextpnr placer seed (the first of a sweep with --seeds).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Place and route with this many seeds (SEED, SEED+1, ...), as many at once as there are
    /// cores, stopping after the round in which one meets timing; keeps the fastest. (The
    /// 30-slot board top's 125 MHz transmit clock spreads 147-159 MHz over seeds 1-4.)
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u64).range(1..=64))]
    seeds: u64,
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
    /// Write the bitstream even when a clock misses its constraint (a warning names it).
    #[arg(long)]
    allow_timing_fail: bool,
    /// Build the per-rank straggler counters (docs/switch.md §7) into the core: `auto` builds
    /// them on parts with more than 56 DP16KD (the i9's LFE5U-45F), not on the LFE5U-25F,
    /// whose block RAM the 5A-75B's 30 slots fill to 55 of 56 (the counters take one more:
    /// 56 of 56, not placed and routed yet). The board top's control link reads them
    /// (docs/control.md, 0x0600..).
    #[arg(long, value_enum, default_value = "auto")]
    stragglers: Stragglers,
    /// Jobs the board serves at once (docs/switch.md §8): one core each, with `--slots` slots
    /// each, behind the job router (1 or 2; the board top only). The job of `--job` is job 0's
    /// at power-up; the others are empty until `spotagg ctl configure --jobs` writes them. With
    /// two, the core clock is 83.33 MHz rather than 100 (docs/performance.md, "Two jobs on the
    /// i9"; the board still takes both ports at line rate there).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u8).range(1..=2))]
    jobs: u8,
    /// Build the EAPS node into the board top (docs/eaps.md §12: the two ports are ring ports,
    /// the node in its own 50 MHz clock). The default with one job; with `--jobs 2` the node
    /// is built only with this flag (or `--eaps-config`): the i9's two-core top with it misses
    /// its 83.33 MHz core clock at seeds 1-3 (docs/performance.md, "Two jobs on the i9").
    #[arg(long, overrides_with = "no_eaps")]
    eaps: bool,
    /// Leave the EAPS node out of the board top: the two ports are a transparent bridge, the
    /// EAPS registers answer unknown (docs/control.md).
    #[arg(long = "no-eaps", overrides_with = "eaps")]
    no_eaps: bool,
    /// Configure and enable the EAPS domains of this ring file at power-up (the format of
    /// `spotagg eaps` and `spotagg ctl eaps configure`, whose checks it passes: the board's
    /// ports `"0"`/`"eth0"` and `"1"`/`"eth1"`, at most 2 domains, one contiguous range of
    /// protected VLANs each, no shared port), so that the board protects its ring from power-up
    /// rather than bridging until the control link configures it. Without it the node starts
    /// with no domain.
    #[arg(long = "eaps-config", value_name = "RING.toml", conflicts_with = "no_eaps")]
    eaps_config: Option<PathBuf>,
}

/// Whether the core has the straggler counters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Stragglers {
    /// On parts with more than 56 DP16KD.
    Auto,
    /// Always.
    On,
    /// Never.
    Off,
}

impl Stragglers {
    /// Whether a core for `board` gets the counters.
    pub fn on(self, board: &Board) -> bool {
        match self {
            Stragglers::Auto => board.part.dp16kd > 56,
            Stragglers::On => true,
            Stragglers::Off => false,
        }
    }
}

/// The core configuration of a build: `slots` defaults to what the part's block RAM holds.
pub fn core_config(
    board: &Board,
    width: usize,
    slots: Option<usize>,
    max_payload: usize,
    max_workers: usize,
    stragglers: Stragglers,
) -> Result<CoreConfig> {
    let slots = slots.unwrap_or_else(|| slots_fitting(board.part.dp16kd));
    CoreConfig::new(width, slots, max_payload, max_workers)
        .map(|c| c.with_stragglers(stragglers.on(board)))
        .map_err(|e| anyhow!("{e}"))
}

/// The design built for a board, a top and a core configuration (`job` for the board top).
pub fn design(
    board: &Board,
    top: TopKind,
    config: &CoreConfig,
    job: &JobConfig,
    jobs: usize,
    eaps: &EapsBuild,
) -> Design {
    match top {
        TopKind::Board => Design {
            top: "top".to_string(),
            verilog: spotagg_boards::tops::top::board_verilog_jobs(
                board,
                *config,
                job,
                spotagg_boards::flow::source_stamp(Path::new(".")),
                jobs,
                eaps,
            ),
            lpf: spotagg_boards::board::lpf::lpf_with_core_clock(board, CoreClock::for_jobs(jobs)),
        },
        TopKind::Core => Design {
            top: CORE_TOP.to_string(),
            verilog: core_top_verilog(&core_verilog(config), config.width_bytes),
            lpf: core_top_lpf(board),
        },
    }
}

/// The job baked into the board top: `given`, else the 4-worker example with the core's payload
/// size and its slots.
pub fn job(given: Option<&JobConfig>, config: &CoreConfig) -> JobConfig {
    match given {
        Some(j) => j.clone(),
        None => {
            let payload = if config.max_payload == 1024 { PayloadSize::B1024 } else { PayloadSize::B256 };
            JobConfig::example(4, payload, config.slots.min(u16::MAX as usize) as u16)
        }
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
    // The slot search's first try for the board top: the block RAM it leaves to its cores
    // (`BOARD_TOP_DP16KD`), shared by the jobs. A wrong first try costs one more synthesis, not
    // a wrong answer: the search settles on the largest count that fits.
    let slots = args.slots.or_else(|| {
        let left = board.part.dp16kd.saturating_sub(spotagg_boards::tops::top::BOARD_TOP_DP16KD);
        (args.top == TopKind::Board).then(|| slots_fitting(left / usize::from(args.jobs.max(1))).max(1))
    });
    let config = core_config(&board, args.width, slots, args.max_payload, args.max_workers, args.stragglers)?;
    if args.top == TopKind::Board && config.width_bytes != 4 {
        bail!("the board top takes a width-4 core; --width {} is for --top core", config.width_bytes);
    }
    if args.top == TopKind::Core && args.jobs > 1 {
        bail!("--jobs {}: several jobs are built into the board top, not --top core", args.jobs);
    }
    if args.top == TopKind::Core && (args.eaps || args.eaps_config.is_some()) {
        bail!("--eaps, --eaps-config: the EAPS node is built into the board top, not --top core");
    }
    // The board top has the node unless --no-eaps, by default with one job and on request
    // with two (the core-only top never has it), with the ring file's domains at power-up when
    // one is given (read before anything is built).
    let built = eaps_built(args.top, args.jobs, args.eaps || args.eaps_config.is_some(), args.no_eaps);
    if args.top == TopKind::Board && args.jobs > 1 && !built && !args.no_eaps {
        eprintln!(
            "note: no EAPS node with --jobs {}: --eaps builds it in (the two-core top with it does not meet \
             timing yet; docs/performance.md)",
            args.jobs
        );
    }
    let eaps = match (&args.eaps_config, built) {
        (_, false) => EapsBuild::Off,
        (None, true) => EapsBuild::On,
        (Some(path), true) => EapsBuild::Baked(power_up_domains(path)?),
    };
    let out = args.out.unwrap_or_else(|| PathBuf::from("build").join(board.id));
    eprintln!(
        "building {} ({}, {} {}, speed {}): {}, width {} bytes, {}{} slots, straggler counters {}, {} job{}, EAPS {}, {}, {}",
        board.name,
        board.id,
        board.part.device,
        board.part.package,
        board.part.speed,
        match args.top {
            TopKind::Board => "board top",
            TopKind::Core => "core-only top",
        },
        config.width_bytes,
        if args.slots.is_none() { "up to " } else { "" },
        config.slots,
        if config.stragglers { "on" } else { "off" },
        args.jobs,
        if args.jobs == 1 { "" } else { "s (a core each)" },
        match &eaps {
            EapsBuild::Off => "off".to_string(),
            EapsBuild::On => "on".to_string(),
            EapsBuild::Baked(d) => format!("on ({} domain{} at power-up)", d.len(), if d.len() == 1 { "" } else { "s" }),
        },
        match args.top {
            TopKind::Board => format!("core clock {} MHz", CoreClock::for_jobs(usize::from(args.jobs)).mhz_text()),
            TopKind::Core => format!("core clock {} MHz", spotagg_boards::tops::core_top::CORE_TOP_PLL.clkop_mhz()),
        },
        if args.seeds > 1 {
            format!("seeds {}..={}", args.seed, args.seed + args.seeds - 1)
        } else {
            format!("seed {}", args.seed)
        }
    );
    let started = Instant::now();

    let tools = step(Step::Install, || Toolchain::ensure(&Toolchain::default_venv()))?;

    let flow = Flow { tools, part: board.part, out: out.clone(), seed: args.seed };
    let given_job = match &args.job {
        Some(p) => {
            let job = JobConfig::load(p)?;
            if let Some(why) = job.core_unsupported() {
                bail!("{}: {why}", p.display());
            }
            Some(job)
        }
        None => None,
    };
    let target = Target {
        board: &board,
        top: args.top,
        job: given_job,
        seeds: (args.seed..args.seed + args.seeds).collect(),
        jobs: usize::from(args.jobs),
        eaps,
    };
    let result = build(&flow, &target, config, args.slots.is_none(), args.allow_timing_fail);
    match result {
        Ok(report) => {
            println!("\n{}", report.table());
            println!("total {:.1} s, files in {}", started.elapsed().as_secs_f64(), out.display());
            if let Err(e) = report.check_timing() {
                eprintln!("spotagg: warning: {e}; bitstream written anyway (--allow-timing-fail)");
            }
            Ok(())
        }
        Err(FlowError::Timing(report)) => {
            println!("\n{}", report.table());
            Err(FlowError::Timing(report)).with_context(|| format!("no bitstream written; logs in {}", out.display()))
        }
        Err(e) => Err(e.into()),
    }
}

/// What is built.
struct Target<'a> {
    board: &'a Board,
    top: TopKind,
    job: Option<JobConfig>,
    seeds: Vec<u64>,
    jobs: usize,
    eaps: EapsBuild,
}

/// Whether the EAPS node is built: into the board top only, unless `--no-eaps`; by default
/// with one job, with two only when asked for (`requested`: `--eaps` or `--eaps-config`).
fn eaps_built(top: TopKind, jobs: u8, requested: bool, no_eaps: bool) -> bool {
    top == TopKind::Board && !no_eaps && (jobs == 1 || requested)
}

/// The board's power-up EAPS domains from a ring file, checked as `spotagg ctl eaps configure`
/// checks it (errors name the file, the key and the value).
pub fn power_up_domains(path: &Path) -> Result<Vec<Option<DomainSettings>>> {
    let ring = crate::cmd::eaps::config::load(path)?;
    crate::cmd::eaps::config::board_settings(&ring, BOARD_DOMAINS)
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
/// at 256) until it fits, then with more while block RAM is left over and fewer than the
/// smallest failing count: the largest slot count that fits.
fn build(
    flow: &Flow,
    target: &Target,
    mut config: CoreConfig,
    fit_slots: bool,
    allow_timing_fail: bool,
) -> Result<BuildReport, FlowError> {
    let mut steps = Vec::new();
    let board = target.board;
    let with_slots = |c: &CoreConfig, slots: usize| {
        CoreConfig::new(c.width_bytes, slots, c.max_payload, c.max_workers)
            .expect("a slot count in 1..=the first is valid")
            .with_stragglers(c.stragglers)
    };
    let per_block = (512 / (2 * config.max_elements())).max(1);
    // The largest slot count known to fit, and the smallest known not to.
    let mut fitting: Option<usize> = None;
    let mut too_big: Option<usize> = None;
    let synth = loop {
        let job = job(target.job.as_ref(), &config);
        let design = design(board, target.top, &config, &job, target.jobs, &target.eaps);
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
        let next = match spotagg_boards::flow::check_fits(&synth, &board.part) {
            Ok(()) => {
                fitting = Some(config.slots);
                let spare = board.part.dp16kd as u64 - synth.dp16kd;
                match too_big {
                    // Fewer slots than a failed try fit with block RAM to spare: try more.
                    Some(big) if fit_slots && spare > 0 && config.slots + 1 < big => {
                        // (Each job's core has the slots: a slot costs that many times more.)
                        (config.slots + (spare as usize * per_block / target.jobs).max(1)).min(big - 1)
                    }
                    _ => break synth,
                }
            }
            Err(FlowError::DoesNotFit { resource: "DP16KD", needed, available }) if fit_slots && config.slots > 1 => {
                too_big = Some(config.slots);
                let over = (needed - available) as usize;
                let next = config.slots.saturating_sub(over.div_ceil(target.jobs) * per_block).max(1);
                match fitting {
                    Some(f) if next <= f => f,
                    _ => next,
                }
            }
            Err(e) => return Err(e),
        };
        if fitting == Some(next) {
            // Back to the largest that fit: synthesize it again (top.json is the last try's).
            eprintln!("      {} slots is the largest that fits", next);
        } else {
            eprintln!("      trying {next} slots");
        }
        config = with_slots(&config, next);
    };
    let t = Instant::now();
    let jobs = std::thread::available_parallelism().map_or(1, |n| n.get());
    let pb = spinner(Step::PlaceAndRoute);
    let several = target.seeds.len() > 1;
    let on_done = |seed: u64, r: &spotagg_boards::flow::PnrReport| {
        if several {
            let clocks: Vec<String> = r.fmax.iter().map(|c| format!("{} {:.2}", c.clock, c.achieved_mhz)).collect();
            let verdict = if r.meets_timing() { "met" } else { "not met" };
            let line = format!("      seed {seed}: {} MHz, {verdict}", clocks.join(", "));
            if pb.is_hidden() {
                eprintln!("{line}");
            } else {
                pb.println(line);
            }
        }
    };
    let sweep = flow.place_and_route_seeds(&target.seeds, jobs, &on_done);
    match &sweep {
        Ok(_) => finish(&pb, Step::PlaceAndRoute, t),
        Err(_) => {
            pb.finish_and_clear();
            eprintln!("FAIL  {}", Step::PlaceAndRoute.label());
        }
    }
    let sweep = sweep?;
    steps.push((Step::PlaceAndRoute, t.elapsed()));
    let top = if target.top == TopKind::Board { "top" } else { CORE_TOP };
    let mut report = BuildReport::new(top, sweep.seed, &flow.part, synth, sweep.report);
    if several {
        report.seeds_tried = sweep.tried;
    }
    report.slots = Some(config.slots);
    report.steps = steps.clone();
    if !allow_timing_fail {
        report.check_timing()?;
    }
    let t = Instant::now();
    report.bitstream = Some(step(Step::Pack, || flow.pack())?);
    steps.push((Step::Pack, t.elapsed()));
    report.steps = steps;
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The node by default with one job, on request with two, never in the core-only top nor
    /// with `--no-eaps`.
    #[test]
    fn the_node_is_built_by_default_with_one_job() {
        assert!(eaps_built(TopKind::Board, 1, false, false));
        assert!(!eaps_built(TopKind::Board, 2, false, false));
        assert!(eaps_built(TopKind::Board, 2, true, false));
        assert!(!eaps_built(TopKind::Board, 1, true, true));
        assert!(!eaps_built(TopKind::Core, 1, false, false));
    }

    /// A ring file's domains become the board top's power-up EAPS registers: the settings
    /// `ctl eaps configure` would write, as the reset values of the EAPS registers in the
    /// Verilog the flow synthesizes.
    #[test]
    fn a_power_up_ring_reaches_the_board_top() {
        let dir = tempfile::tempdir().unwrap();
        let ring = dir.path().join("ring.toml");
        std::fs::write(
            &ring,
            "bridge = \"board\"\n[[domain]]\nname = \"a\"\nrole = \"master\"\nprimary = \"eth1\"\nsecondary = \"eth0\"\n\
             control_vlan = 4000\nprotected_vlans = [100, 101, 102]\nhello_ms = 1000\nfail_ms = 3000\n",
        )
        .unwrap();
        let domains = power_up_domains(&ring).unwrap();
        assert_eq!(domains.len(), 1);
        let d = domains[0].unwrap();
        assert!(d.master && d.primary_port1, "{d:?}");
        assert_eq!((d.control_vlan, d.protected), (4000, (100, 102)), "{d:?}");
        assert_eq!((d.hello, d.fail), (1_000_000, 3_000_000), "{d:?}: periods in µs");
        let board = spotagg_boards::board("colorlight-5a-75b-v8").unwrap();
        let config = CoreConfig::new(4, 1, 256, 32).unwrap();
        let j = job(None, &config);
        let on = design(&board, TopKind::Board, &config, &j, 1, &EapsBuild::On);
        let baked = design(&board, TopKind::Board, &config, &j, 1, &EapsBuild::Baked(domains));
        assert_ne!(on.verilog, baked.verilog, "the ring's domains are not in the Verilog");
        // The registers' reset values: the hello and fail periods, the control VLAN and the
        // protected range.
        for lit in ["32'hf4240", "32'h2dc6c0", "12'hfa0", "12'h64", "12'h66"] {
            let init = format!("localparam  init = {lit};");
            assert!(baked.verilog.contains(&init) && !on.verilog.contains(&init), "{init}: the domain's reset value");
        }
    }
}
