//! Everything of the board top but the FPGA primitives: the two ports' MACs and FIFOs, the
//! merge into the core, the core, the dispatch of its frames to the ports, the bridge, and the
//! configuration loader. This is what the board-level simulation runs.
//!
//! ```text
//! port 0 rx FIFO ─┐                       ┌─ core ─ ResultDispatcher ─┬─ port 0 result FIFO
//!                 ├─ FrameArbiter ─ RxRouter                          └─ port 1 result FIFO
//! port 1 rx FIFO ─┘ (fuller FIFO first)   └─ port 0 / port 1 bridge FIFO (the other port's)
//!                             └─ learn (source MAC, port) ─ MacTable ─ lookup ┘
//! ```
//!
//! Clocks: each port's receive side runs in its receive clock (`eth[i].rx_clock`), each
//! port's transmit side (the transmit FIFOs' read ends, the merge of results and bridged
//! frames, the MAC) in `tx_clock` (125 MHz, the RGMII transmit clock), the rest (merge, router,
//! core, dispatcher, loader) in `core_clock`, which needs only to keep up with both ports on
//! average (100 MHz on the board). The only crossings are the FIFOs (and the port counters,
//! which are read as they are: quasi-static values for a control link that samples them twice).
//!
//! Timing: everything crossing into or out of the core meets a register on the fabric's side:
//! the stream handshakes both ways through a [`StreamSlice`], the configuration bus and `idle`.
//! The counter ports stay combinational (a model reads them between clocks); the board logic
//! registers what it reads, and reads the core's through `counter_data_q`, registered in the
//! core before the choice between jobs.
//!
//! Guarantees: whole frames only, in per-port order; a frame with a bad FCS, a runt or a giant
//! never reaches the core or the bridge; nothing is dropped for capacity as long as the core
//! and the transmit ports keep up on average (the receive FIFOs absorb 8 KiB per port of
//! burst), and a frame that does not fit is dropped whole and counted (`frames_overflow`).
//!
//! Control: once the loader is done, `cfg_*` (a control link's writes) reach the core's
//! configuration bus; `pause` holds the core's input at the next frame boundary (a frame
//! already begun is taken whole), for a consistent counter snapshot. The switch MAC the ports
//! classify frames by follows the core's registers 0x00/0x01 (the ROM job's at power-up, then
//! whatever is written; the receive side reads it as a quasi-static value).
//!
//! Port counters (`port_counter_address`): 0 good frames, 1 bad FCS, 2 runts, 3 giants,
//! 4 dropped for capacity, 5 frames sent — port 0 at 0..=5, port 1 at 8..=13; 6 frames the
//! dispatcher sent to both ports (group destination or unknown MAC).

use crate::ethernet::eth_port::EthPort;
use crate::ethernet::frame_arbiter::FrameArbiter;
use crate::ethernet::frame_fifo::{FrameWriter, WORD_BITS};
use crate::ethernet::gmii::GmiiPort;
use crate::ethernet::mac_table::{MacLearn, MacLookup, MacTable};
use crate::ethernet::result_dispatcher::ResultDispatcher;
use crate::ethernet::rx_router::RxRouter;
use crate::ethernet::stream::{beat, StreamSource};
use crate::ethernet::stream_slice::StreamSlice;
use crate::tops::config_loader::ConfigLoader;
use rust_hdl::prelude::*;
use spotagg_driver::JobConfig;
use spotagg_hdl::multi_core::MultiCore;
use spotagg_hdl::straggler::StragglerRead;
use spotagg_hdl::CoreConfig;

/// What the fabric says of its state, to the layers above and the board tests.
#[derive(LogicInterface, Default)]
pub struct FabricStatus {
    /// The configuration is loaded.
    pub configured: Signal<Out, Bit>,
    /// Nothing in flight: the core idle, no frame begun on the way in, nothing held in the
    /// register slices around the core (registered: a clock late).
    pub core_idle: Signal<Out, Bit>,
    /// The core takes the first word of a frame.
    pub merge_start: Signal<Out, Bit>,
    /// The port that frame came in on.
    pub merge_port: Signal<Out, Bit>,
}

/// The board logic with width-4 cores, one for each of `J` jobs (docs/switch.md §8;
/// `spotagg_hdl::multi_core::MultiCore`, which with one job is the core alone).
#[derive(LogicBlock)]
pub struct SwitchFabric<const J: usize = 1> {
    /// Core clock (100 MHz on the board).
    pub core_clock: Signal<In, Clock>,
    /// Transmit clock of both ports (125 MHz).
    pub tx_clock: Signal<In, Clock>,
    /// Start loading the configuration (the PLL has locked).
    pub start: Signal<In, Bit>,
    /// The two ports' GMII, port 0 first.
    pub eth: [GmiiPort; 2],
    /// Core counter index (of the selected job; 28 the unknown (source, job) pairs).
    pub counter_address: Signal<In, Bits<5>>,
    /// Core counter value (combinational, as the core's).
    pub counter_data: Signal<Out, Bits<32>>,
    /// Core counter value of the index `counter_address` named a clock earlier (each job's core
    /// read registered before the choice between jobs: what a control link reads).
    pub counter_data_q: Signal<Out, Bits<32>>,
    /// Port counter index.
    pub port_counter_address: Signal<In, Bits<4>>,
    /// Port counter value (combinational).
    pub port_counter_data: Signal<Out, Bits<32>>,
    /// Configuration write from a control link (taken once the loader is done).
    pub cfg_write: Signal<In, Bit>,
    /// Its register address.
    pub cfg_address: Signal<In, Bits<8>>,
    /// Its data.
    pub cfg_data: Signal<In, Bits<32>>,
    /// Hold the core's input from the next frame boundary on.
    pub pause: Signal<In, Bit>,
    /// Loaded, idle, and the frames the core takes.
    pub status: FabricStatus,
    /// The core's straggler counters, scanned (`spotagg_hdl::straggler`; zero unless the core
    /// has them).
    pub straggler: StragglerRead,
    port: [EthPort; 2],
    rx_arbiter: FrameArbiter,
    router: RxRouter,
    mac_table: MacTable,
    dispatcher: ResultDispatcher,
    loader: ConfigLoader,
    core: MultiCore<J>,
    to_core: StreamSlice<{ beat::BITS }>,
    from_core: StreamSlice<{ beat::BITS }>,
    idle_q: DFF<Bit>,
    mac_hi: DFFWithInit<Bits<16>>,
    mac_lo: DFFWithInit<Bits<32>>,
    switch_mac: Signal<Local, Bits<48>>,
    in_frame: DFF<Bit>,
    cfg_write_q: DFF<Bit>,
    cfg_address_q: DFF<Bits<8>>,
    cfg_data_q: DFF<Bits<32>>,
    done_q: DFF<Bit>,
}

impl SwitchFabric<1> {
    /// The board logic for a width-4 `core` configured for `job` at power-up.
    pub fn new(core: CoreConfig, job: &JobConfig) -> Self {
        SwitchFabric::with_jobs(core, std::slice::from_ref(job))
    }
}

impl<const J: usize> SwitchFabric<J> {
    /// The board logic with `J` width-4 cores built with `core`, configured for `jobs` (1..=J:
    /// the first cores', the others' left empty, with no workers) at power-up; job 0's
    /// switch MAC.
    pub fn with_jobs(core: CoreConfig, jobs: &[JobConfig]) -> Self {
        assert_eq!(core.width_bytes, 4, "the board top needs a core of width_bytes = 4, not {}", core.width_bytes);
        assert!((1..=J).contains(&jobs.len()), "{} jobs for a fabric of {J}", jobs.len());
        for job in jobs {
            assert!(job.n() <= core.max_workers, "n = {} exceeds max_workers = {}", job.n(), core.max_workers);
            assert!(
                usize::from(job.slots) <= core.slots,
                "slots = {} exceeds the core's {} slots",
                job.slots,
                core.slots
            );
        }
        let m = jobs[0].switch_mac.0;
        let mac = m.iter().fold(0u64, |a, &b| (a << 8) | u64::from(b));
        Self {
            core_clock: Default::default(),
            tx_clock: Default::default(),
            start: Default::default(),
            eth: Default::default(),
            counter_address: Default::default(),
            counter_data: Default::default(),
            counter_data_q: Default::default(),
            port_counter_address: Default::default(),
            port_counter_data: Default::default(),
            cfg_write: Default::default(),
            cfg_address: Default::default(),
            cfg_data: Default::default(),
            pause: Default::default(),
            status: Default::default(),
            straggler: Default::default(),
            port: Default::default(),
            rx_arbiter: Default::default(),
            router: Default::default(),
            mac_table: Default::default(),
            dispatcher: Default::default(),
            loader: ConfigLoader::for_jobs(jobs),
            core: MultiCore::<J>::new(core),
            to_core: Default::default(),
            from_core: Default::default(),
            idle_q: Default::default(),
            mac_hi: DFFWithInit::new((mac >> 32).into()),
            mac_lo: DFFWithInit::new((mac & 0xffff_ffff).into()),
            switch_mac: Default::default(),
            in_frame: Default::default(),
            cfg_write_q: Default::default(),
            cfg_address_q: Default::default(),
            cfg_data_q: Default::default(),
            done_q: Default::default(),
        }
    }
}

impl<const J: usize> Logic for SwitchFabric<J> {
    #[hdl_gen]
    fn update(&mut self) {
        clock!(self, core_clock, rx_arbiter, router, dispatcher, loader, core, mac_table, to_core, from_core);
        dff_setup!(self, core_clock, in_frame, mac_hi, mac_lo, cfg_write_q, cfg_address_q, cfg_data_q, done_q, idle_q);
        self.switch_mac.next =
            (bit_cast::<48, 16>(self.mac_hi.q.val()) << 32) | bit_cast::<48, 32>(self.mac_lo.q.val());
        // Ports, merged into the router (the fuller receive FIFO first); the router's bridged
        // frames and the dispatcher's results go back to them.
        for i in 0..2 {
            GmiiPort::link(&mut self.eth[i], &mut self.port[i].gmii);
            self.port[i].core_clock.next = self.core_clock.val();
            self.port[i].tx_clock.next = self.tx_clock.val();
            self.port[i].switch_mac.next = self.switch_mac.val();
            StreamSource::<WORD_BITS>::join(&mut self.port[i].rxq, &mut self.rx_arbiter.up[i]);
            self.rx_arbiter.fill[i].next = self.port[i].rxq_fill.val();
            FrameWriter::join(&mut self.router.bridge[i], &mut self.port[i].br);
            FrameWriter::join(&mut self.dispatcher.out[i], &mut self.port[i].res);
            self.port[i].counter_address.next = self.port_counter_address.val().get_bits::<3>(0);
        }
        self.router.enable.next = self.done_q.q.val() & (self.in_frame.q.val() | !self.pause.val());
        if self.router.core.valid.val() & self.to_core.up.ready.val() {
            self.in_frame.d.next = !self.router.core.data.val().get_bit(32);
        }
        StreamSource::<WORD_BITS>::join(&mut self.rx_arbiter.down, &mut self.router.up);
        self.router.up_source.next = self.rx_arbiter.down_source.val();
        MacLearn::join(&mut self.router.learn, &mut self.mac_table.learn);
        // Flushed by the EAPS node once it is wired in (issue 17 item 5); never until then.
        self.mac_table.flush.next = false;
        self.status.merge_start.next = self.router.merge_start.val();
        self.status.merge_port.next = self.router.merge_port.val();
        // Core, behind register slices both ways (its `rx_ready` and `tx_valid` are logic of its
        // own state: they meet the router's and the dispatcher's logic only at registers).
        StreamSource::<{ beat::BITS }>::join(&mut self.router.core, &mut self.to_core.up);
        self.core.rx.valid.next = self.to_core.down.valid.val();
        self.core.rx.data.next = self.to_core.down.data.val().get_bits::<32>(0);
        self.core.rx.last.next = self.to_core.down.data.val().get_bit(32);
        self.core.rx.bytes.next = self.to_core.down.data.val().get_bits::<4>(33);
        self.to_core.down.ready.next = self.core.rx.ready.val();
        self.loader.start.next = self.start.val();
        // The configuration bus: the loader's or (once it is done) the link's, chosen into
        // registers, so the core's decode starts from flip-flops (a write reaches the core a cycle
        // after its master drives it; `configured` follows the loader's last write likewise).
        self.cfg_write_q.d.next = self.loader.cfg_write.val() | (self.loader.done.val() & self.cfg_write.val());
        self.cfg_address_q.d.next = self.loader.cfg_address.val();
        self.cfg_data_q.d.next = self.loader.cfg_data.val();
        if self.loader.done.val() {
            self.cfg_address_q.d.next = self.cfg_address.val();
            self.cfg_data_q.d.next = self.cfg_data.val();
        }
        self.done_q.d.next = self.loader.done.val();
        self.core.cfg.write.next = self.cfg_write_q.q.val();
        self.core.cfg.address.next = self.cfg_address_q.q.val();
        self.core.cfg.data.next = self.cfg_data_q.q.val();
        if self.loader.done.val() & self.cfg_write.val() & (self.cfg_address.val() == 0) {
            self.mac_hi.d.next = self.cfg_data.val().get_bits::<16>(0);
        }
        if self.loader.done.val() & self.cfg_write.val() & (self.cfg_address.val() == 1) {
            self.mac_lo.d.next = self.cfg_data.val();
        }
        self.status.configured.next = self.done_q.q.val();
        self.core.counter.address.next = self.counter_address.val();
        self.counter_data.next = self.core.counter.data.val();
        self.counter_data_q.next = self.core.counter_q.val();
        StragglerRead::link(&mut self.straggler, &mut self.core.straggler);
        // Idle: the core, and no frame begun or held on the way in or out (registered).
        self.idle_q.d.next =
            self.core.idle.val() & !self.in_frame.q.val() & self.to_core.empty.val() & self.from_core.empty.val();
        self.status.core_idle.next = self.idle_q.q.val();
        // Dispatch.
        self.from_core.up.valid.next = self.core.tx.valid.val();
        self.from_core.up.data.next = bit_cast::<{ beat::BITS }, 32>(self.core.tx.data.val())
            | (bit_cast::<{ beat::BITS }, 1>(self.core.tx.last.val().into()) << 32)
            | (bit_cast::<{ beat::BITS }, 4>(self.core.tx.bytes.val()) << 33);
        self.core.tx.ready.next = self.from_core.up.ready.val();
        StreamSource::<{ beat::BITS }>::join(&mut self.from_core.down, &mut self.dispatcher.up);
        MacLookup::join(&mut self.dispatcher.lookup, &mut self.mac_table.lookup);
        // Port counters: port 0 at 0..=5, the dispatcher's floods at 6, port 1 at 8..=13.
        if self.port_counter_address.val() == 6 {
            self.port_counter_data.next = self.dispatcher.flooded.val();
        } else if self.port_counter_address.val().get_bit(3) {
            self.port_counter_data.next = self.port[1].counter_data.val();
        } else {
            self.port_counter_data.next = self.port[0].counter_data.val();
        }
    }
}

/// The Verilog of the board logic (top module `top`), for simulation.
pub fn fabric_verilog(core: CoreConfig, job: &JobConfig) -> String {
    let mut f = SwitchFabric::new(core, job);
    f.connect_all();
    generate_verilog(&f)
}

/// The Verilog of the board logic with one core for each of `jobs` (1 or 2; top module `top`),
/// for simulation.
pub fn fabric_verilog_jobs(core: CoreConfig, jobs: &[JobConfig]) -> String {
    fn v<const J: usize>(core: CoreConfig, jobs: &[JobConfig]) -> String {
        let mut f = SwitchFabric::<J>::with_jobs(core, jobs);
        f.connect_all();
        generate_verilog(&f)
    }
    match jobs.len() {
        1 => v::<1>(core, jobs),
        2 => v::<2>(core, jobs),
        n => panic!("{n} jobs: the hardware is built for 1..={}", spotagg_hdl::job_router::MAX_JOBS),
    }
}
