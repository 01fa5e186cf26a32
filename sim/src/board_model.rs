//! The MAC-level board model behind [`Engine`]: a board's switch fabric (both MAC ports, their
//! FIFOs, the merge, the core, the dispatch and the bridge; the job in its power-up ROM) in
//! Verilator, every clock from one clock, fed and read as GMII bytes ([`crate::gmii`]). It is
//! what `spotagg tap --board-model` attaches to a TAP device; the caller generates the fabric's
//! Verilog (`spotagg_boards::tops::switch_fabric`), so that this crate does not depend on the boards.

use crate::gmii;
use crate::verilator::{BuildOptions, PortSpec, VerilatedModel, VerilatorError};
use spotagg_driver::{Counters, Engine};
use spotagg_hdl::multi_core::{JOB_SELECT, UNKNOWN_SOURCE_JOB_COUNTER};

/// Why the board model could not be built.
#[derive(Debug, thiserror::Error)]
pub enum BoardModelError {
    /// Verilator failed.
    #[error(transparent)]
    Verilator(#[from] VerilatorError),
    /// The fabric did not load its power-up job.
    #[error("the board model did not load its configuration in {0} clocks")]
    NotConfigured(u64),
}

/// Idle clocks after a frame (and after the last byte any port sent) before the model counts
/// as done with it: longer than the receive path (MAC, FIFO, merge) takes to hand a frame on.
const BOARD_QUIET: usize = 300;

/// Inter-frame gap on the model's receive side, in clocks.
const BOARD_GAP: usize = 12;

/// The MAC-level board model behind [`Engine`]: the switch fabric of `spotagg_boards` (both
/// MAC ports, FIFOs, merge, core, dispatch, bridge; the job in its power-up ROM) in Verilator,
/// all clocks from one clock. `process` feeds the frame into port 0 as GMII bytes with
/// preamble, SFD, padding and FCS and runs until the board is idle again; the frames port 0
/// sends, stripped of preamble and FCS, are its output.
pub struct BoardModel {
    m: VerilatedModel,
    p: BoardPins,
    counters: Counters,
    cur: [Vec<u8>; 2],
    /// Clock cycles run.
    pub cycles: u64,
    /// Frames port 1 sent (no host there: dropped).
    pub port1_frames: u64,
    /// Frames port 0 sent with a bad preamble or FCS (dropped; always 0 for a correct MAC).
    pub bad_frames: u64,
    /// Jobs (cores) in the fabric: `SwitchFabric<J>`.
    jobs: usize,
    /// Each job's counters and the unknown (source, job) pairs, read after each frame.
    job_counters: Vec<Counters>,
    unknown_source_job: u64,
}

/// The ports of a switch fabric's (or a board logic's) Verilator model that its benches drive
/// and read, by the names rust-hdl gives them: the clocks, both GMII ports (`eth$i$...`), and the
/// fabric's status (`status$...`).
#[derive(Debug, Clone, Copy)]
pub struct FabricPins {
    /// Core, transmit, port 0 receive, port 1 receive, the EAPS node's ([`FabricPins::CLOCKS`]).
    pub clocks: [u32; 5],
    /// Start loading the power-up job.
    pub start: u32,
    /// GMII receive data, by port.
    pub rxd: [u32; 2],
    /// GMII receive data valid, by port.
    pub rx_dv: [u32; 2],
    /// GMII receive error, by port.
    pub rx_er: [u32; 2],
    /// GMII transmit data, by port.
    pub txd: [u32; 2],
    /// GMII transmit enable, by port.
    pub tx_en: [u32; 2],
    /// GMII transmit error, by port.
    pub tx_er: [u32; 2],
    /// The power-up job is loaded.
    pub configured: u32,
    /// Nothing in flight.
    pub core_idle: u32,
    /// The core takes the first word of a frame.
    pub merge_start: u32,
    /// The port of that frame.
    pub merge_port: u32,
}

impl FabricPins {
    /// The fabric's clock inputs, in the order of [`FabricPins::clocks`].
    pub const CLOCKS: [&'static str; 5] = ["core_clock", "tx_clock", "eth$0$rx_clock", "eth$1$rx_clock", "eaps_clock"];

    /// The ports of `m`; panics naming a port the model does not have.
    pub fn of(m: &VerilatedModel) -> FabricPins {
        let eth = |name: &str| [0, 1].map(|i| m.port(&format!("eth${i}${name}")));
        FabricPins {
            clocks: FabricPins::CLOCKS.map(|c| m.port(c)),
            start: m.port("start"),
            rxd: eth("rxd"),
            rx_dv: eth("rx_dv"),
            rx_er: eth("rx_er"),
            txd: eth("txd"),
            tx_en: eth("tx_en"),
            tx_er: eth("tx_er"),
            configured: m.port("status$configured"),
            core_idle: m.port("status$core_idle"),
            merge_start: m.port("status$merge_start"),
            merge_port: m.port("status$merge_port"),
        }
    }

    /// One rising and falling edge of every clock at once (all clocks from one clock).
    pub fn edge(&self, m: &mut VerilatedModel) {
        for level in [1, 0] {
            for c in self.clocks {
                m.set(c, level);
            }
            m.eval();
        }
    }
}

/// How a switch fabric's Verilog is verilated (the waivers of its generated code).
pub(crate) fn fabric_build_options() -> BuildOptions {
    BuildOptions {
        trace: false,
        config: Some(format!("{}lint_off -rule UNOPTFLAT -file \"*top.v\"\n", crate::verilator_engine::WAIVERS)),
        extra_args: vec!["-Wno-fatal".into()],
    }
}

struct BoardPins {
    fabric: FabricPins,
    counter_address: u32,
    counter_data: u32,
    cfg_write: u32,
    cfg_address: u32,
    cfg_data: u32,
}

impl BoardModel {
    /// Builds (or takes from the cache) the Verilator model of a switch fabric's Verilog (the
    /// block `spotagg_boards::tops::switch_fabric::SwitchFabric`, its ports from [`ports_of`]) and runs
    /// it until its power-up job is loaded.
    ///
    /// [`ports_of`]: crate::verilator::ports_of
    pub fn build(verilog: &str, ports: &[PortSpec]) -> Result<BoardModel, BoardModelError> {
        BoardModel::build_jobs(verilog, ports, 1)
    }

    /// [`BoardModel::build`] for a fabric of `jobs` cores (`SwitchFabric::<J>::with_jobs`,
    /// docs/switch.md §8): the counters are then the jobs' sum and the unknown (source, job)
    /// pairs, as `spotagg_spec::multi_job::MultiSwitch` counts them; [`BoardModel::job_counters`] gives
    /// each job's, read through the job select (0x0F) on the fabric's configuration inputs.
    pub fn build_jobs(verilog: &str, ports: &[PortSpec], jobs: usize) -> Result<BoardModel, BoardModelError> {
        let mut m = VerilatedModel::build(verilog, ports, &fabric_build_options())?;
        let p = BoardPins {
            fabric: FabricPins::of(&m),
            counter_address: m.port("counter_address"),
            counter_data: m.port("counter_data"),
            cfg_write: m.port("cfg_write"),
            cfg_address: m.port("cfg_address"),
            cfg_data: m.port("cfg_data"),
        };
        let (start, configured) = (p.fabric.start, p.fabric.configured);
        m.set(start, 1);
        m.eval();
        let mut b = BoardModel {
            m,
            p,
            counters: Default::default(),
            cur: [vec![], vec![]],
            cycles: 0,
            port1_frames: 0,
            bad_frames: 0,
            jobs,
            job_counters: vec![Counters::default(); jobs],
            unknown_source_job: 0,
        };
        while b.m.get(configured) == 0 || b.m.get(b.p.fabric.core_idle) == 0 {
            b.clock(false, 0, &mut vec![]);
            if b.cycles > 100_000 {
                return Err(BoardModelError::NotConfigured(b.cycles));
            }
        }
        Ok(b)
    }

    /// Writes `writes` (register address, data) on the fabric's configuration inputs, one after
    /// another, as a control link does once the power-up job is loaded: a fabric built with
    /// `spotagg_boards::tops::switch_fabric::placeholder_job` takes its real job this way
    /// (`config_loader::jobs_writes`), so that one model serves every job of its core. Runs
    /// until the core is idle again.
    pub fn configure(&mut self, writes: &[(u8, u32)]) -> Result<(), BoardModelError> {
        for &(address, data) in writes {
            self.write_reg(address, data);
        }
        // A few clocks for the last write to reach the core before its idle is read.
        for _ in 0..8 {
            self.clock(false, 0, &mut vec![]);
        }
        let start = self.cycles;
        while self.m.get(self.p.fabric.core_idle) == 0 {
            self.clock(false, 0, &mut vec![]);
            if self.cycles - start > 100_000 {
                return Err(BoardModelError::NotConfigured(self.cycles));
            }
        }
        Ok(())
    }

    /// Each job's counters as read after the last frame.
    pub fn job_counters(&self, job: usize) -> &Counters {
        &self.job_counters[job]
    }

    /// SwitchML frames of no job's (source address, source port), dropped (0 with one job).
    pub fn unknown_source_job(&self) -> u64 {
        self.unknown_source_job
    }

    /// A configuration write on the fabric's control inputs (as a control link makes it), and
    /// two clocks for it to reach the core.
    fn write_reg(&mut self, address: u8, data: u32) {
        self.m.set(self.p.cfg_write, 1);
        self.m.set(self.p.cfg_address, u64::from(address));
        self.m.set(self.p.cfg_data, u64::from(data));
        self.clock(false, 0, &mut vec![]);
        self.m.set(self.p.cfg_write, 0);
        self.clock(false, 0, &mut vec![]);
        self.clock(false, 0, &mut vec![]);
    }

    /// The core's counter registers, then `ip_checksum_zero` (`Counters::from_words`'s order).
    fn counter_words(&mut self) -> [u64; Counters::WORDS + 1] {
        let mut w = [0u64; Counters::WORDS + 1];
        for (i, v) in w.iter_mut().enumerate() {
            let a =
                if i < Counters::WORDS { i as u64 } else { u64::from(spotagg_hdl::counters::IP_CHECKSUM_ZERO_COUNTER) };
            self.m.set(self.p.counter_address, a);
            self.m.eval();
            *v = self.m.get(self.p.counter_data) & 0xffff_ffff;
        }
        w
    }

    /// Reads every job's counters (selecting each job in turn, then job 0 again).
    fn read_counters(&mut self) {
        if self.jobs == 1 {
            self.counters = Counters::from_words(&self.counter_words());
            self.job_counters[0] = self.counters.clone();
            return;
        }
        self.m.set(self.p.counter_address, UNKNOWN_SOURCE_JOB_COUNTER as u64);
        self.m.eval();
        self.unknown_source_job = self.m.get(self.p.counter_data) & 0xffff_ffff;
        let mut total = Counters { frames_in: self.unknown_source_job, ..Default::default() };
        total.drops[spotagg_driver::DropReason::UnknownSource.index()] = self.unknown_source_job;
        for j in 0..self.jobs {
            self.write_reg(JOB_SELECT, j as u32);
            let c = Counters::from_words(&self.counter_words());
            total.add(&c);
            self.job_counters[j] = c;
        }
        self.write_reg(JOB_SELECT, 0);
        self.counters = total;
    }

    /// One clock with `dv`/`d` on port 0's receive side; collects what the ports send.
    /// Returns whether a port is sending.
    fn clock(&mut self, dv: bool, d: u8, out: &mut Vec<Vec<u8>>) -> bool {
        self.m.set(self.p.fabric.rx_dv[0], u64::from(dv));
        self.m.set(self.p.fabric.rxd[0], u64::from(d));
        self.m.eval();
        let mut active = false;
        for port in 0..2 {
            if self.m.get(self.p.fabric.tx_en[port]) != 0 {
                active = true;
                let byte = self.m.get(self.p.fabric.txd[port]) as u8;
                self.cur[port].push(byte);
            } else if !self.cur[port].is_empty() {
                let w = std::mem::take(&mut self.cur[port]);
                if port == 1 {
                    self.port1_frames += 1;
                } else {
                    match gmii::unwrap(&w) {
                        Ok(f) => out.push(f.to_vec()),
                        Err(_) => self.bad_frames += 1,
                    }
                }
            }
        }
        self.p.fabric.edge(&mut self.m);
        self.cycles += 1;
        active
    }
}

impl Engine for BoardModel {
    fn process(&mut self, frame: &[u8], out: &mut Vec<Vec<u8>>) {
        for b in gmii::wrap(frame) {
            self.clock(true, b, out);
        }
        for _ in 0..BOARD_GAP {
            self.clock(false, 0, out);
        }
        let mut quiet = 0;
        while quiet < BOARD_QUIET {
            let active = self.clock(false, 0, out);
            quiet = if active || self.m.get(self.p.fabric.core_idle) == 0 { 0 } else { quiet + 1 };
        }
        self.read_counters();
    }
    fn counters(&self) -> Counters {
        self.counters.clone()
    }
    fn name(&self) -> &'static str {
        "verilator board model"
    }
}
