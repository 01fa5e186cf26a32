//! Several jobs on one switch (docs/switch.md §8) in hardware: one [`Core`] per job behind a
//! [`JobRouter`], their results merged frame by frame onto one stream.
//!
//! ```text
//!               ┌─ Core (job 0) ─┐
//! rx ─ JobRouter ┼─ Core (job 1) ─┼─ merge (whole frames, round robin) ─ tx
//!               └─ …            ─┘
//! ```
//!
//! Each job has a core of its own: its own slot memory (the core's `slots`, so a job's
//! `slot_base` places it only in the software switches' shared memory), worker table, session,
//! counters and straggler counters. A job's frames reach only its core, so they never touch
//! another job's slots or counters.
//!
//! Configuration: the bus of [`Core`] with one more register, 0x0F, the job select: a write of
//! j (0..J) sends every later write to job j's registers (0 after reset). The counter port and
//! the straggler read-out are those of the selected job; counter 28 is the switch's
//! `unknown_source_job` ([`JobRouter`]'s count, 0 with one job). With `J = 1` this is the core
//! alone: the router is a wire, 0x0F is ignored.
//!
//! Width 4 only (the boards' core).

use crate::config::CoreConfig;
use crate::config_registers::ConfigBus;
use crate::core::Core;
use crate::counters::CounterPort;
use crate::job_router::JobRouter;
use crate::straggler::StragglerRead;
use crate::word_stream::{BeatSink, BeatSource};
use rust_hdl::prelude::*;

/// The job-select register of a [`MultiCore`]'s configuration bus.
pub const JOB_SELECT: u8 = 0x0F;

/// Counter index of the switch's `unknown_source_job` on a [`MultiCore`]'s counter port.
pub const UNKNOWN_SOURCE_JOB_COUNTER: usize = 28;

/// `J` aggregation cores (one a job) behind a [`JobRouter`], width 4.
#[derive(LogicBlock)]
pub struct MultiCore<const J: usize> {
    /// Clock.
    pub clock: Signal<In, Clock>,
    /// The received frames, 4 bytes a beat.
    pub rx: BeatSink<32>,
    /// The frames sent, 4 bytes a beat.
    pub tx: BeatSource<32>,
    /// The configuration bus (the core's, plus the job select 0x0F).
    pub cfg: ConfigBus,
    /// The selected job's counters, and the switch's `unknown_source_job` at 28
    /// (combinational, as the core's).
    pub counter: CounterPort<5>,
    /// The counter `counter.address` named a clock earlier, of the job selected now: each core's
    /// read is registered before the choice between jobs, so that a board's read-out path is
    /// one core's counter multiplexer, not two cores' and the job select behind them.
    pub counter_q: Signal<Out, Bits<32>>,
    /// The selected job's straggler counters.
    pub straggler: StragglerRead,
    /// Nothing in flight in any core or the router.
    pub idle: Signal<Out, Bit>,
    router: JobRouter<J>,
    cores: [Core<32>; J],
    sel: DFF<Bits<2>>,
    core_counter_q: [DFF<Bits<32>>; J],
    unknown_q: DFF<Bits<32>>,
    addr_28_q: DFF<Bit>,
    cur: DFF<Bits<2>>,
    locked: DFF<Bit>,
    last_j: DFF<Bits<2>>,
    pick: Signal<Local, Bits<2>>,
    index: [Constant<Bits<2>>; J],
    single: Constant<Bit>,
    _config: CoreConfig,
}

impl<const J: usize> MultiCore<J> {
    /// `J` cores built with `config` (width 4).
    pub fn new(config: CoreConfig) -> Self {
        assert_eq!(config.width_bytes, 4, "MultiCore needs width_bytes = 4, not {}", config.width_bytes);
        Self {
            clock: Default::default(),
            rx: Default::default(),
            tx: Default::default(),
            cfg: Default::default(),
            counter: Default::default(),
            counter_q: Default::default(),
            straggler: Default::default(),
            idle: Default::default(),
            core_counter_q: std::array::from_fn(|_| Default::default()),
            unknown_q: Default::default(),
            addr_28_q: Default::default(),
            router: JobRouter::new(config.tree),
            cores: std::array::from_fn(|_| Core::new(config)),
            sel: Default::default(),
            cur: Default::default(),
            locked: Default::default(),
            last_j: Default::default(),
            pick: Default::default(),
            index: std::array::from_fn(|i| Constant::new((i as u64).into())),
            single: Constant::new(J == 1),
            _config: config,
        }
    }

    /// The build parameters of each core.
    pub fn config(&self) -> &CoreConfig {
        &self._config
    }
}

impl<const J: usize> Logic for MultiCore<J> {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, sel, unknown_q, addr_28_q, cur, locked, last_j);
        self.router.clock.next = self.clock.val();
        // Receive: through the router.
        self.router.rx.valid.next = self.rx.valid.val();
        self.router.rx.data.next = self.rx.data.val();
        self.router.rx.last.next = self.rx.last.val();
        self.router.rx.bytes.next = self.rx.bytes.val();
        self.rx.ready.next = self.router.rx.ready.val();
        // Configuration: 0x0F selects the job the other writes are for.
        if self.cfg.write.val() & (self.cfg.address.val() == 15) & !self.single.val() {
            self.sel.d.next = self.cfg.data.val().get_bits::<2>(0);
        }
        self.router.cfg.write.next = self.cfg.write.val() & (self.cfg.address.val() != 15);
        self.router.cfg.address.next = self.cfg.address.val();
        self.router.cfg.data.next = self.cfg.data.val();
        self.router.sel.next = self.sel.q.val();
        self.counter.data.next = 0.into();
        self.counter_q.next = 0.into();
        self.unknown_q.d.next = self.router.unknown.val();
        self.addr_28_q.d.next = (self.counter.address.val() == 28) & !self.single.val();
        self.straggler.index.next = 0.into();
        self.straggler.data.next = 0.into();
        self.straggler.valid.next = false;
        self.idle.next = !self.router.busy.val();
        // Transmit: whole frames; of two jobs with a frame ready, the one not sent last.
        self.pick.next = 0.into();
        for i in 0..J {
            if self.cores[i].tx.valid.val() {
                self.pick.next = self.index[i].val();
            }
        }
        for i in 0..J {
            if self.cores[i].tx.valid.val() & (self.index[i].val() != self.last_j.q.val()) {
                self.pick.next = self.index[i].val();
            }
        }
        // (One job: the pick is the constant 0, so no path runs from `cur` and `locked`
        // through the core's `tx.ready` into its result builder.)
        if self.locked.q.val() & !self.single.val() {
            self.pick.next = self.cur.q.val();
        }
        self.tx.valid.next = false;
        self.tx.data.next = 0.into();
        self.tx.last.next = false;
        self.tx.bytes.next = 0.into();
        for i in 0..J {
            self.cores[i].clock.next = self.clock.val();
            BeatSource::<32>::join(&mut self.router.out[i], &mut self.cores[i].rx);
            self.cores[i].cfg.write.next = self.router.cfg.write.val() & (self.sel.q.val().index() == i);
            self.cores[i].cfg.address.next = self.cfg.address.val();
            self.cores[i].cfg.data.next = self.cfg.data.val();
            self.cores[i].counter.address.next = self.counter.address.val();
            self.core_counter_q[i].clock.next = self.clock.val();
            self.core_counter_q[i].d.next = self.cores[i].counter.data.val();
            self.cores[i].tx.ready.next = false;
            if self.sel.q.val().index() == i {
                self.counter.data.next = self.cores[i].counter.data.val();
                self.counter_q.next = self.core_counter_q[i].q.val();
                self.straggler.index.next = self.cores[i].straggler.index.val();
                self.straggler.data.next = self.cores[i].straggler.data.val();
                self.straggler.valid.next = self.cores[i].straggler.valid.val();
            }
            if !self.cores[i].idle.val() {
                self.idle.next = false;
            }
            if self.pick.val().index() == i {
                self.tx.valid.next = self.cores[i].tx.valid.val();
                self.tx.data.next = self.cores[i].tx.data.val();
                self.tx.last.next = self.cores[i].tx.last.val();
                self.tx.bytes.next = self.cores[i].tx.bytes.val();
                self.cores[i].tx.ready.next = self.tx.ready.val();
            }
        }
        if self.tx.valid.val() & self.tx.ready.val() {
            self.cur.d.next = self.pick.val();
            self.locked.d.next = !self.tx.last.val();
            if self.tx.last.val() {
                self.last_j.d.next = self.pick.val();
            }
        }
        if (self.counter.address.val() == 28) & !self.single.val() {
            self.counter.data.next = self.router.unknown.val();
        }
        if self.addr_28_q.q.val() {
            self.counter_q.next = self.unknown_q.q.val();
        }
    }
}

/// The Verilog of `J` cores behind a router (top module `top`).
pub fn multi_core_verilog<const J: usize>(config: &CoreConfig) -> String {
    let mut b = MultiCore::<J>::new(*config);
    b.connect_all();
    generate_verilog(&b)
}
