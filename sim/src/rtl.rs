//! The rust-hdl simulation harness: the portable core of `spotagg-hdl`, stepped directly (set
//! the inputs, settle, clock edge, settle — no threaded testbench), behind the [`Engine`] trait.
//!
//! [`RtlEngine`] configures the core from a [`JobConfig`] over its register bus, feeds each
//! frame as back-to-back beats, clocks until the core is idle and collects the frames it
//! sends; the counters are read from the core's counter registers. [`RtlEngine::run_stream`]
//! is the cycle-level API the benchmark ([`bench_report`]) uses.

use spotagg_driver::counters::Counters;
use spotagg_driver::engine::Engine;
use spotagg_driver::JobConfig;
use spotagg_hdl::multi_core::{MultiCore, JOB_SELECT, UNKNOWN_SOURCE_JOB_COUNTER};
use spotagg_hdl::rust_hdl::prelude::*;
use spotagg_hdl::{Core, CoreConfig};
use std::fmt;
use std::sync::Mutex;
use std::time::Instant;

/// Why an [`RtlEngine`] could not be built for a job.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct RtlError(pub String);

/// One clock cycle's view of the core's ports (beats as `u64`, first byte in the top lane).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Ports {
    pub(crate) rx_ready: bool,
    pub(crate) tx_valid: bool,
    pub(crate) tx_data: u64,
    pub(crate) tx_last: bool,
    pub(crate) tx_bytes: u8,
    pub(crate) idle: bool,
}

/// The core at one width, with direct stepping: the rust-hdl model here, the Verilated
/// model in [`crate::verilator_engine`]. Everything above the ports is shared.
pub(crate) trait CoreDriver: Send {
    fn set_rx(&mut self, valid: bool, data: u64, last: bool, bytes: u8);
    fn set_tx_ready(&mut self, ready: bool);
    fn set_cfg(&mut self, write: bool, address: u8, data: u32);
    fn read_counter(&mut self, index: u8) -> u32;
    /// Every word (`4·rank + j`) of the straggler counters (`spotagg_hdl::straggler`), if this
    /// model of the core has the read-out: clocks the idle core until its scan has shown each.
    fn read_straggler_words(&mut self) -> Option<Vec<u32>> {
        None
    }
    fn settle(&mut self) -> Ports;
    fn edge(&mut self);
}

/// The rust-hdl model of a block with the core's ports (`rx`, `tx`, `cfg`, `counter`,
/// `straggler`, `idle`): [`Core`] at one width, or [`MultiCore`] (several jobs, width 4).
struct Driver<B> {
    core: B,
    /// The waveform being written and the time of its next sample (ps; 10 ns per cycle).
    vcd: Option<(VcdWriter, u64)>,
}

type VcdWriter = rust_hdl::core::vcd_probe::VCDProbe<std::io::BufWriter<std::fs::File>>;

impl<B: Block> Driver<B> {
    /// Starts writing every signal of the core to a VCD file.
    fn open_vcd(&mut self, path: &std::path::Path) -> std::io::Result<()> {
        let f = std::io::BufWriter::new(std::fs::File::create(path)?);
        self.vcd = Some((write_vcd_header(f, &self.core), 0));
        Ok(())
    }

    fn dump(&mut self) {
        if let Some((mut probe, t)) = self.vcd.take() {
            if let Err(e) = probe.timestamp(t) {
                eprintln!("spotagg: VCD writing stopped: {e}");
                return;
            }
            self.vcd = Some((write_vcd_change(probe, &self.core), t + 5_000));
        }
    }
}

impl<const D: usize> Driver<Core<D>> {
    fn new(config: CoreConfig) -> Self {
        Driver::<Core<D>>::settled(Core::<D>::new(config))
    }
}

impl<const J: usize> Driver<MultiCore<J>> {
    fn multi(config: CoreConfig) -> Self {
        Driver::<MultiCore<J>>::settled(MultiCore::<J>::new(config))
    }
}

/// The [`CoreDriver`] of a `Driver<$block>`: the same ports by the same names.
macro_rules! core_driver {
    ($block:ty, $($generics:tt)*) => {
        impl<$($generics)*> Driver<$block> {
            fn settled(mut core: $block) -> Self {
                core.connect_all();
                let mut d = Driver { core, vcd: None };
                d.core.clock.next = false.into();
                d.core.tx.ready.next = true;
                simulate(&mut d.core, 10_000);
                d
            }
        }

        impl<$($generics)*> CoreDriver for Driver<$block> {
            fn set_rx(&mut self, valid: bool, data: u64, last: bool, bytes: u8) {
                self.core.rx.valid.next = valid;
                self.core.rx.data.next = data.into();
                self.core.rx.last.next = last;
                self.core.rx.bytes.next = u64::from(bytes).into();
            }
            fn set_tx_ready(&mut self, ready: bool) {
                self.core.tx.ready.next = ready;
            }
            fn set_cfg(&mut self, write: bool, address: u8, data: u32) {
                self.core.cfg.write.next = write;
                self.core.cfg.address.next = u64::from(address).into();
                self.core.cfg.data.next = u64::from(data).into();
            }
            fn read_counter(&mut self, index: u8) -> u32 {
                self.core.counter.address.next = u64::from(index).into();
                simulate(&mut self.core, 10_000);
                self.core.counter.data.val().to_u32()
            }
            fn read_straggler_words(&mut self) -> Option<Vec<u32>> {
                let mut words = vec![None; 128];
                for _ in 0..1024 {
                    self.settle();
                    let r = &self.core.straggler;
                    if r.valid.val() {
                        words[r.index.val().index()] = Some(r.data.val().to_u32());
                    }
                    if words.iter().all(Option::is_some) {
                        return words.into_iter().collect();
                    }
                    self.edge();
                }
                panic!("the straggler scan did not show every word in 1024 cycles");
            }
            fn settle(&mut self) -> Ports {
                assert!(simulate(&mut self.core, 10_000), "the core did not settle");
                Ports {
                    rx_ready: self.core.rx.ready.val(),
                    tx_valid: self.core.tx.valid.val(),
                    tx_data: self.core.tx.data.val().to_u64(),
                    tx_last: self.core.tx.last.val(),
                    tx_bytes: self.core.tx.bytes.val().to_u8(),
                    idle: self.core.idle.val(),
                }
            }
            fn edge(&mut self) {
                // Two samples a cycle: the settled inputs with the clock low, then the rising edge.
                self.dump();
                self.core.clock.next = true.into();
                simulate(&mut self.core, 10_000);
                self.dump();
                // The falling edge latches nothing: it settles with the next cycle's inputs.
                self.core.clock.next = false.into();
            }
        }
    };
}

core_driver!(Core<D>, const D: usize);
core_driver!(MultiCore<J>, const J: usize);

/// Cycle statistics of a stream of frames pushed back to back ([`RtlEngine::run_stream`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StreamStats {
    /// Cycles from the first beat offered until the core was idle again.
    pub cycles: u64,
    /// Cycles at which the core accepted a receive beat.
    pub rx_beats: u64,
    /// Cycles with a beat offered but `rx_ready` low (back-pressure).
    pub rx_stalls: u64,
    /// Cycles at which the core sent a beat.
    pub tx_beats: u64,
    /// Frames the core sent.
    pub frames_out: u64,
    /// Cycles from the first offered beat until the last received beat was accepted.
    pub rx_cycles: u64,
}

/// The rust-hdl core behind the [`Engine`] trait.
pub struct RtlEngine {
    driver: Mutex<Box<dyn CoreDriver>>,
    config: CoreConfig,
    width: usize,
    cycles: u64,
    tx_partial: Vec<u8>,
    name: &'static str,
    /// xorshift state of the random `tx_ready` pattern; 0 = always ready.
    tx_stall: u64,
    /// `tx_ready` as driven this cycle.
    tx_ready: bool,
    /// The cycle in which the last beat of the last frame was taken.
    rx_end: u64,
    /// The job's n (ranks reported in the metrics).
    workers: usize,
    /// Jobs on the switch: 1 for a [`Core`], more for a [`MultiCore`] (docs/switch.md §8).
    jobs: usize,
}

impl fmt::Debug for RtlEngine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RtlEngine").field("config", &self.config).field("cycles", &self.cycles).finish()
    }
}

/// Cycles without progress after which the harness declares the core stuck.
const STUCK_CYCLES: u64 = 200_000;

impl RtlEngine {
    /// A core built with `core` and configured for `job`.
    pub fn new(job: &JobConfig, core: CoreConfig) -> Result<RtlEngine, RtlError> {
        Self::check_job(job, &core)?;
        let driver: Box<dyn CoreDriver> = match core.width_bytes {
            1 => Box::new(Driver::<Core<8>>::new(core)),
            4 => Box::new(Driver::<Core<32>>::new(core)),
            8 => Box::new(Driver::<Core<64>>::new(core)),
            w => return Err(RtlError(format!("width_bytes = {w} is not supported"))),
        };
        RtlEngine::from_driver(job, core, driver, "rtl")
    }

    fn check_job(job: &JobConfig, core: &CoreConfig) -> Result<(), RtlError> {
        if job.n() > core.max_workers {
            return Err(RtlError(format!("n = {} exceeds the core's max_workers = {}", job.n(), core.max_workers)));
        }
        if job.parent.is_some() && !core.tree {
            return Err(RtlError("the job has a parent but the core is built without tree (CoreConfig::tree)".into()));
        }
        if usize::from(job.slots) > core.slots || job.slots == 0 {
            return Err(RtlError(format!("slots = {} is outside 1..={} (the core's slots)", job.slots, core.slots)));
        }
        if job.payload.bytes() > core.max_payload {
            return Err(RtlError(format!(
                "payload = {} B exceeds the core's max_payload = {}",
                job.payload.bytes(),
                core.max_payload
            )));
        }
        Ok(())
    }

    /// An engine over any model of the core (checked against `job` as in [`RtlEngine::new`]).
    pub(crate) fn from_driver(
        job: &JobConfig,
        core: CoreConfig,
        driver: Box<dyn CoreDriver>,
        name: &'static str,
    ) -> Result<RtlEngine, RtlError> {
        Self::check_job(job, &core)?;
        let mut e = RtlEngine::bare(core, driver, name, job.n(), 1);
        e.configure(job);
        Ok(e)
    }

    fn bare(core: CoreConfig, driver: Box<dyn CoreDriver>, name: &'static str, workers: usize, jobs: usize) -> Self {
        RtlEngine {
            driver: Mutex::new(driver),
            config: core,
            width: core.width_bytes,
            cycles: 0,
            tx_partial: vec![],
            name,
            tx_stall: 0,
            tx_ready: true,
            rx_end: 0,
            workers,
            jobs,
        }
    }

    /// Several jobs on one switch (docs/switch.md §8): the rust-hdl [`MultiCore`], one core
    /// built with `core` (width 4) for each of `jobs` (1 or 2,
    /// [`spotagg_hdl::job_router::MAX_JOBS`]), configured job by job through the job select.
    /// Each job must fit the core as in [`RtlEngine::new`]; its `slot_base` has no meaning here
    /// (each job has a slot memory of its own).
    pub fn multi(jobs: &[JobConfig], core: CoreConfig) -> Result<RtlEngine, RtlError> {
        if core.width_bytes != 4 {
            return Err(RtlError(format!("several jobs need width_bytes = 4, not {}", core.width_bytes)));
        }
        for (i, j) in jobs.iter().enumerate() {
            Self::check_job(j, &core).map_err(|e| RtlError(format!("job {i}: {e}")))?;
        }
        let driver: Box<dyn CoreDriver> = match jobs.len() {
            1 => Box::new(Driver::<MultiCore<1>>::multi(core)),
            2 => Box::new(Driver::<MultiCore<2>>::multi(core)),
            n => {
                return Err(RtlError(format!(
                    "{n} jobs: the hardware is built for 1..={}",
                    spotagg_hdl::job_router::MAX_JOBS
                )))
            }
        };
        let mut e = RtlEngine::bare(core, driver, "rtl", jobs[0].n(), jobs.len());
        e.configure_jobs(jobs);
        Ok(e)
    }

    /// Writes each job's configuration (job `i` after a write of `i` to the job select) and
    /// clears each job's slot state.
    pub fn configure_jobs(&mut self, jobs: &[JobConfig]) {
        assert_eq!(jobs.len(), self.jobs, "the switch is built for {} jobs", self.jobs);
        self.workers = jobs[0].n();
        for (i, job) in jobs.iter().enumerate() {
            self.write_reg(JOB_SELECT, i as u32);
            for (address, data) in spotagg_hdl::config_registers::job_writes(job) {
                self.write_reg(address, data);
            }
        }
        self.write_reg(JOB_SELECT, 0);
        let mut sink = vec![];
        self.run_until_idle(&mut sink);
    }

    /// The counters of job `i` alone (of the only job for a [`Core`]).
    pub fn job_counters(&self, i: usize) -> Counters {
        assert!(i < self.jobs, "job {i} of {}", self.jobs);
        let mut d = self.driver.lock().expect("core driver poisoned");
        let words = job_words(d.as_mut(), (self.jobs > 1).then_some(i));
        Counters::from_words(&words)
    }

    /// SwitchML frames of no job's (source address, source port), dropped by the router
    /// (0 for a single job, whose core counts them as `unknown_source` itself).
    pub fn unknown_source_job(&self) -> u64 {
        if self.jobs == 1 {
            return 0;
        }
        let mut d = self.driver.lock().expect("core driver poisoned");
        u64::from(d.read_counter(UNKNOWN_SOURCE_JOB_COUNTER as u8))
    }

    /// The rust-hdl core for `job`, writing every signal of the core to a VCD file at `vcd`
    /// (loadable in GTKWave; large: every signal, two samples per cycle).
    pub fn with_vcd(job: &JobConfig, core: CoreConfig, vcd: &std::path::Path) -> Result<RtlEngine, RtlError> {
        Self::check_job(job, &core)?;
        fn traced<const D: usize>(core: CoreConfig, vcd: &std::path::Path) -> Result<Box<dyn CoreDriver>, RtlError> {
            let mut d = Driver::<Core<D>>::new(core);
            d.open_vcd(vcd).map_err(|e| RtlError(format!("{}: {e}", vcd.display())))?;
            Ok(Box::new(d))
        }
        let driver = match core.width_bytes {
            1 => traced::<8>(core, vcd)?,
            4 => traced::<32>(core, vcd)?,
            8 => traced::<64>(core, vcd)?,
            w => return Err(RtlError(format!("width_bytes = {w} is not supported"))),
        };
        RtlEngine::from_driver(job, core, driver, "rtl")
    }

    /// A core sized for `job` (slots = S, max payload 256 B or 1024 B) at `width_bytes`.
    pub fn for_job(job: &JobConfig, width_bytes: usize) -> Result<RtlEngine, RtlError> {
        RtlEngine::new(job, Self::core_for_job(job, width_bytes)?)
    }

    /// The build parameters [`RtlEngine::for_job`] uses: slots = S, max payload 256 B or
    /// 1024 B, 32 workers.
    pub fn core_for_job(job: &JobConfig, width_bytes: usize) -> Result<CoreConfig, RtlError> {
        let max_payload = if job.payload.bytes() <= 256 { 256 } else { 1024 };
        CoreConfig::new(width_bytes, usize::from(job.slots).max(1), max_payload, 32)
            .map(|c| c.with_stragglers(true))
            .map_err(|e| RtlError(e.0))
    }

    /// The build parameters.
    pub fn core_config(&self) -> &CoreConfig {
        &self.config
    }

    /// Clock cycles run so far.
    pub fn cycles(&self) -> u64 {
        self.cycles
    }

    /// The cycle in which the core took the last beat of the last frame it was given: the time
    /// of that frame as the straggler counters see it (a contribution's commit follows its last
    /// beat by a fixed number of cycles when the core was idle; `spotagg_hdl::straggler`).
    pub fn rx_end_cycle(&self) -> u64 {
        self.rx_end
    }

    /// Clocks the core `cycles` cycles with no frame offered (a pause on the link), collecting
    /// whatever it sends into `out`.
    pub fn idle_for(&mut self, cycles: u64, out: &mut Vec<Vec<u8>>) {
        self.drv().set_rx(false, 0, false, 0);
        for _ in 0..cycles {
            let p = self.drv().settle();
            self.collect_tx(&p, out);
            self.tick();
        }
    }

    fn drv(&mut self) -> &mut Box<dyn CoreDriver> {
        self.driver.get_mut().expect("core driver poisoned")
    }

    fn write_reg(&mut self, address: u8, data: u32) {
        self.drv().set_cfg(true, address, data);
        self.drv().settle();
        self.tick();
        self.drv().set_cfg(false, 0, 0);
    }

    fn tick(&mut self) {
        self.drv().edge();
        self.cycles += 1;
        if self.tx_stall != 0 {
            let mut x = self.tx_stall;
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            self.tx_stall = x;
            // Downstream takes a beat two cycles out of three on average.
            let ready = !x.is_multiple_of(3);
            self.tx_ready = ready;
            self.drv().set_tx_ready(ready);
        }
    }

    /// From now on, lowers `tx_ready` on about one cycle in three (seeded), as a busy MAC
    /// would; the frames sent must not change.
    pub fn stall_tx_randomly(&mut self, seed: u64) {
        self.tx_stall = seed.max(1).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    }

    /// Writes the job's configuration and clears the slot state (counters are kept, as the
    /// reference switch does on a reconfiguration).
    pub fn configure(&mut self, job: &JobConfig) {
        self.workers = job.n();
        for (address, data) in spotagg_hdl::config_registers::job_writes(job) {
            self.write_reg(address, data);
        }
        let mut sink = vec![];
        self.run_until_idle(&mut sink);
    }

    /// The straggler counters of ranks 0..n (docs/switch.md §7), lags in clock cycles, read
    /// from the core (`spotagg_hdl::straggler`); `None` when the core was built without them or
    /// this model of the core has no read-out. Reading clocks the idle core until its scan has
    /// shown every word (at most 1024 cycles, not counted in [`RtlEngine::cycles`]).
    pub fn stragglers(&mut self, n: usize) -> Option<Vec<spotagg_spec::reference::StragglerCounters>> {
        if !self.config.stragglers {
            return None;
        }
        let words = self.drv().read_straggler_words()?;
        let w = |r: usize, j: usize| u64::from(words[r * spotagg_hdl::straggler::WORDS_PER_RANK + j]);
        Some(
            (0..n.min(32))
                .map(|r| spotagg_spec::reference::StragglerCounters {
                    rounds_last: w(r, 0),
                    behind_us_total: w(r, 1),
                    behind_us_max: w(r, 2),
                })
                .collect(),
        )
    }

    /// The tree counters (docs/switch.md §6), read from the core's counters 24..=27
    /// (`spotagg_hdl::counters`); `None` when the core was built without `tree`.
    pub fn tree_counters(&self) -> Option<spotagg_spec::reference::TreeCounters> {
        if !self.config.tree {
            return None;
        }
        let mut d = self.driver.lock().expect("core driver poisoned");
        let mut w = [0u64; 4];
        for (i, x) in w.iter_mut().enumerate() {
            *x = u64::from(d.read_counter(TREE_COUNTER_BASE + i as u8));
        }
        Some(spotagg_spec::reference::TreeCounters {
            partials_up: w[0],
            partials_resent: w[1],
            parent_results: w[2],
            parent_results_stale: w[3],
        })
    }

    /// Zeroes the counters.
    pub fn clear_counters(&mut self) {
        self.write_reg(0x06, 2);
    }

    fn beat_of(&self, frame: &[u8], beat: usize) -> (u64, bool, u8) {
        let w = self.width;
        let start = beat * w;
        let end = (start + w).min(frame.len()).max(start.min(frame.len()));
        let mut data = 0u64;
        for i in 0..w {
            data <<= 8;
            if start + i < end {
                data |= u64::from(frame[start + i]);
            }
        }
        // An empty frame is one last beat with no valid byte.
        (data, end == frame.len(), (end.saturating_sub(start)) as u8)
    }

    fn collect_tx(&mut self, p: &Ports, out: &mut Vec<Vec<u8>>) {
        if p.tx_valid && self.tx_ready {
            let w = self.width;
            let n = if p.tx_last { usize::from(p.tx_bytes) } else { w };
            for i in 0..n {
                self.tx_partial.push((p.tx_data >> (8 * (w - 1 - i))) as u8);
            }
            if p.tx_last {
                out.push(std::mem::take(&mut self.tx_partial));
            }
        }
    }

    fn run_until_idle(&mut self, out: &mut Vec<Vec<u8>>) {
        self.drv().set_rx(false, 0, false, 0);
        let mut quiet = 0;
        let mut guard = 0u64;
        loop {
            let p = self.drv().settle();
            self.collect_tx(&p, out);
            if p.idle && !p.tx_valid {
                quiet += 1;
                if quiet >= 2 {
                    break;
                }
            } else {
                quiet = 0;
            }
            self.tick();
            guard += 1;
            assert!(guard < STUCK_CYCLES, "the core did not become idle");
        }
    }

    /// Pushes `frames` back to back (a new beat offered every cycle the core is ready), collects
    /// the frames sent into `out`, clocks until idle, and returns the cycle statistics.
    pub fn run_stream(&mut self, frames: &[Vec<u8>], out: &mut Vec<Vec<u8>>) -> StreamStats {
        let mut s = StreamStats::default();
        let start = self.cycles;
        let before = out.len();
        let mut f = 0;
        let mut beat = 0;
        let mut since_progress = 0u64;
        while f < frames.len() {
            let frame = &frames[f];
            let (data, last, bytes) = self.beat_of(frame, beat);
            self.drv().set_rx(true, data, last, bytes);
            let p = self.drv().settle();
            self.collect_tx(&p, out);
            if p.tx_valid && self.tx_ready {
                s.tx_beats += 1;
            }
            if p.rx_ready {
                s.rx_beats += 1;
                since_progress = 0;
                if last {
                    self.rx_end = self.cycles;
                    f += 1;
                    beat = 0;
                } else {
                    beat += 1;
                }
            } else {
                s.rx_stalls += 1;
                since_progress += 1;
                assert!(since_progress < STUCK_CYCLES, "the core stopped taking frames");
            }
            self.tick();
        }
        s.rx_cycles = self.cycles - start;
        self.drv().set_rx(false, 0, false, 0);
        loop {
            let p = self.drv().settle();
            self.collect_tx(&p, out);
            if p.tx_valid && self.tx_ready {
                s.tx_beats += 1;
            }
            if p.idle && !p.tx_valid {
                break;
            }
            self.tick();
            assert!(self.cycles - start < STUCK_CYCLES * (frames.len() as u64 + 1), "the core did not become idle");
        }
        s.cycles = self.cycles - start;
        s.frames_out = (out.len() - before) as u64;
        s
    }
}

impl Engine for RtlEngine {
    fn process(&mut self, frame: &[u8], out: &mut Vec<Vec<u8>>) {
        self.run_stream(std::slice::from_ref(&frame.to_vec()), out);
    }

    fn cycles(&self) -> Option<u64> {
        Some(self.cycles)
    }

    /// The counters; of several jobs, their sum and the router's unknown (source, job) drops,
    /// as `spotagg_spec::multi_job::MultiSwitch` counts them.
    fn counters(&self) -> Counters {
        if self.jobs == 1 {
            return self.job_counters(0);
        }
        let u = self.unknown_source_job();
        let mut c = Counters { frames_in: u, ..Default::default() };
        c.drops[spotagg_driver::counters::DropReason::UnknownSource.index()] = u;
        for i in 0..self.jobs {
            c.add(&self.job_counters(i));
        }
        c
    }

    fn name(&self) -> &'static str {
        self.name
    }

    /// The counters, and the straggler counters when the core has them, under the software
    /// switch's names, lags converted from cycles to µs at [`CORE_CLOCK_MHZ`].
    fn metrics(&self) -> Vec<spotagg_driver::metrics::Family> {
        let mut f = spotagg_driver::metrics::counter_families(&self.counters(), &[]);
        if let Some(t) = self.tree_counters() {
            f.extend(spotagg_spec::reference::tree_families(&t, &[]));
        }
        if self.config.stragglers {
            let words = self.driver.lock().expect("core driver poisoned").read_straggler_words();
            if let Some(words) = words {
                let ranks: Vec<_> = words
                    .chunks(spotagg_hdl::straggler::WORDS_PER_RANK)
                    .take(self.workers)
                    .map(spotagg_driver::metrics::RankLag::from_core_words)
                    .collect();
                f.extend(spotagg_driver::metrics::straggler_families(&ranks, &[]));
            }
        }
        f
    }
}

/// The core's counter words (the tree counters included), of job `job` of a [`MultiCore`]
/// (selected, read, and job 0 selected again: two configuration writes, clocks not counted).
fn job_words(d: &mut dyn CoreDriver, job: Option<usize>) -> Vec<u64> {
    fn select(d: &mut dyn CoreDriver, j: usize) {
        d.set_cfg(true, JOB_SELECT, j as u32);
        d.settle();
        d.edge();
        d.set_cfg(false, 0, 0);
    }
    if let Some(j) = job {
        select(d, j);
    }
    let mut words: Vec<u64> = (0..Counters::WORDS as u8).map(|i| u64::from(d.read_counter(i))).collect();
    // The word after the core's registers in `Counters::from_words`'s order.
    words.push(u64::from(d.read_counter(spotagg_hdl::counters::IP_CHECKSUM_ZERO_COUNTER)));
    if job.is_some() {
        select(d, 0);
    }
    words
}

/// The core's counter index of the first tree counter (`partials_up`; then `partials_resent`,
/// `parent_results`, `parent_results_stale`).
pub const TREE_COUNTER_BASE: u8 = 24;

/// The core clock the cycle counts are converted at (the board top's `pll.clk100`; the VCD's
/// 10 ns a cycle).
pub use spotagg_driver::metrics::CORE_CLOCK_MHZ;

/// Frames for a benchmark: `rounds` complete rounds of `n` workers over `slots` slots,
/// slot after slot, set alternating per pass (what SwitchML workers send in steady state).
fn bench_frames(job: &JobConfig, rounds: usize) -> Vec<Vec<u8>> {
    use crate::trace::{contribution_frame, Contribution};
    use spotagg_driver::wire::PoolIndex;
    let k = job.payload.elements();
    let values: Vec<i32> = (0..k as i32).map(|i| i.wrapping_mul(2_654_435_761u32 as i32)).collect();
    let mut frames = vec![];
    for r in 0..rounds {
        let slot = (r % usize::from(job.slots)) as u16;
        let set = ((r / usize::from(job.slots)) % 2) as u8;
        for rank in 0..job.n() {
            frames.push(contribution_frame(
                job,
                &Contribution {
                    rank,
                    tsi: r as u32,
                    pool: PoolIndex { slot, set },
                    e0: rank as i8,
                    e1: -(rank as i8),
                    src_port: 0xBEE0,
                    dst_port: 0xBEE0,
                    values: &values,
                },
            ));
        }
    }
    frames
}

/// One benchmark measurement.
#[derive(Debug, Clone)]
pub struct BenchPoint {
    /// Stream width in bytes.
    pub width: usize,
    /// Payload bytes.
    pub payload: usize,
    /// Workers.
    pub n: usize,
    /// Frames pushed.
    pub frames: u64,
    /// Bytes of one contribution frame.
    pub frame_bytes: usize,
    /// The stream statistics.
    pub stats: StreamStats,
    /// Wall-clock seconds of the simulation.
    pub seconds: f64,
}

impl BenchPoint {
    /// Cycles per contribution, end to end (input taken and all results sent).
    pub fn cycles_per_contribution(&self) -> f64 {
        self.stats.cycles as f64 / self.frames as f64
    }
    /// Cycles per contribution at the input (until the last beat was taken).
    pub fn input_cycles_per_contribution(&self) -> f64 {
        self.stats.rx_cycles as f64 / self.frames as f64
    }
    /// Cycles a frame is on the wire at this width: ⌈bytes / W⌉.
    pub fn beats_per_frame(&self) -> u64 {
        self.frame_bytes.div_ceil(self.width) as u64
    }
    /// Cycles per frame beyond its beats at the input (idle cycles between back-to-back frames).
    pub fn idle_cycles_between_frames(&self) -> f64 {
        self.stats.rx_stalls as f64 / self.frames as f64
    }
    /// Elements aggregated per cycle in steady state (at the input's rate).
    pub fn elements_per_cycle(&self) -> f64 {
        (self.payload / 4) as f64 / self.input_cycles_per_contribution()
    }
    /// Simulated cycles per wall-clock second.
    pub fn sim_cycles_per_second(&self) -> f64 {
        self.stats.cycles as f64 / self.seconds
    }
    /// Sustained input bit rate at `clock_hz` (frame bytes, without preamble, FCS and gap).
    pub fn input_bits_per_second(&self, clock_hz: f64) -> f64 {
        self.frame_bytes as f64 * 8.0 / (self.input_cycles_per_contribution() / clock_hz)
    }
}

/// Measures the core at `width` bytes with `n` workers and `payload` bytes: `rounds` rounds
/// pushed back to back.
pub fn bench_point(width: usize, payload: spotagg_driver::wire::PayloadSize, n: usize, rounds: usize) -> BenchPoint {
    let job = JobConfig::example(n, payload, 4);
    let frames = bench_frames(&job, rounds);
    let mut e = RtlEngine::for_job(&job, width).expect("bench core");
    let mut out = vec![];
    let t = Instant::now();
    let stats = e.run_stream(&frames, &mut out);
    let seconds = t.elapsed().as_secs_f64();
    assert_eq!(out.len(), rounds * n, "every round answered to every worker");
    BenchPoint {
        width,
        payload: payload.bytes(),
        n,
        frames: frames.len() as u64,
        frame_bytes: frames[0].len(),
        stats,
        seconds,
    }
}

/// The throughput benchmark as a printable table: cycles per 256 B and 1024 B contribution,
/// elements aggregated per cycle, idle cycles between back-to-back frames at widths 1 and 4,
/// the rate at the board top's 100 MHz core clock against two Gigabit ports, and the harness's
/// simulation speed.
pub fn bench_report() -> String {
    use spotagg_driver::wire::PayloadSize;
    use std::fmt::Write;
    // The board top's core clock (the MACs run at 125 MHz on their own clocks).
    const CLOCK_HZ: f64 = 100e6;
    // Two Gigabit ports at line rate, counted in frame bytes: a 1076-byte frame occupies
    // 1076 + 8 (preamble) + 4 (FCS) + 12 (gap) byte times on the wire.
    let mut s = String::new();
    writeln!(s, "rust-hdl core, simulated: n = 4 workers, contributions pushed back to back, every result sent")
        .unwrap();
    writeln!(s, "cyc/contr: cycles per contribution in steady state (input side; the results leave at the same rate)")
        .unwrap();
    writeln!(s, "drained: cycles per contribution including draining the last round's results").unwrap();
    writeln!(
        s,
        "{:>5} {:>7} {:>6} {:>7} {:>10} {:>8} {:>6} {:>9} {:>13} {:>12} {:>11}",
        "width",
        "payload",
        "frame",
        "frames",
        "cyc/contr",
        "drained",
        "beats",
        "idle/frm",
        "elements/cyc",
        "Gb/s@100MHz",
        "sim cyc/s"
    )
    .unwrap();
    let mut headroom = vec![];
    for width in [1usize, 4] {
        for payload in [PayloadSize::B256, PayloadSize::B1024] {
            let rounds = if width == 1 { 4 } else { 16 };
            let p = bench_point(width, payload, 4, rounds);
            let gbps = p.input_bits_per_second(CLOCK_HZ) / 1e9;
            // Two ports at line rate deliver 2 Gb/s of wire time; in frame bytes that is
            // 2e9 · L / (L + 24).
            let two_ports = 2e9 * p.frame_bytes as f64 / (p.frame_bytes as f64 + 24.0) / 1e9;
            if width == 4 {
                headroom.push((payload.bytes(), gbps / two_ports));
            }
            writeln!(
                s,
                "{:>5} {:>7} {:>6} {:>7} {:>10.1} {:>8.1} {:>6} {:>9.2} {:>13.3} {:>12.2} {:>11.0}",
                width,
                payload.bytes(),
                p.frame_bytes,
                p.frames,
                p.input_cycles_per_contribution(),
                p.cycles_per_contribution(),
                p.beats_per_frame(),
                p.idle_cycles_between_frames(),
                p.elements_per_cycle(),
                gbps,
                p.sim_cycles_per_second()
            )
            .unwrap();
        }
    }
    for (payload, h) in headroom {
        writeln!(
            s,
            "width 4, {payload} B payloads, 100 MHz: {h:.2}x the input of two Gigabit ports at line rate (results out at the same rate)"
        )
        .unwrap();
    }
    s
}
