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
//! frames, the MAC) in `tx_clock` (125 MHz, the RGMII transmit clock), the EAPS node in
//! `eaps_clock` (50 MHz on the board, [`EapsNodeCrossing`]), the rest (merge, router, core,
//! dispatcher, loader, the VLAN gates, the EAPS registers) in `core_clock`, which needs only to
//! keep up with both ports on average (100 MHz on the board). The only crossings are the FIFOs,
//! the EAPS node's crossings (handshakes, synchronizers and FIFOs: [`EapsNodeCrossing`]), and
//! the port counters, which are read as they are: quasi-static values for a control link that
//! samples them twice.
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
use crate::ethernet::pdu_merge::PduMerge;
use crate::ethernet::result_dispatcher::ResultDispatcher;
use crate::ethernet::rx_router::RxRouter;
use crate::ethernet::stream::{beat, ValidReadySource};
use crate::ethernet::stream_slice::StreamSlice;
use crate::tops::config_loader::ConfigLoader;
use crate::tops::eaps_node_crossing::EapsNodeCrossing;
use rust_hdl::prelude::*;
use spotagg_driver::control::protocol::eaps::DomainSettings;
use spotagg_driver::wire::PayloadSize;
use spotagg_driver::JobConfig;
use spotagg_hdl::control_link::EapsRegisterAccess;
use spotagg_hdl::eaps_gate::EapsVlanGate;
use spotagg_hdl::eaps_node::EapsDomainCfgSource;
use spotagg_hdl::eaps_registers::EapsRegisters;
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

/// What the fabric's EAPS node does besides its frames, for the layers above and the benches
/// (the ring simulator's board node reads these as the node-level bench reads the node's pins),
/// all in the core clock, as the node's crossing gives them ([`EapsNodeCrossing`]).
#[derive(LogicInterface, Default)]
pub struct FabricEaps {
    /// Forwarding of domain `d`'s protected VLANs on port `p`: bit `2d + p` (the VLAN gates').
    pub forwarding: Signal<Out, Bits<32>>,
    /// The node flushes domain `d`'s FDB (bit `d`, one clock): the MAC table is flushed.
    pub flush: Signal<Out, Bits<16>>,
    /// An alert (one clock): a second master if `alert_second_master`, else the fail timer.
    pub alert: Signal<Out, Bit>,
    /// The alert is a second master.
    pub alert_second_master: Signal<Out, Bit>,
    /// The alert's domain.
    pub alert_domain: Signal<Out, Bits<4>>,
    /// The second master's system MAC.
    pub alert_mac: Signal<Out, Bits<48>>,
    /// The node has nothing pending or in progress (a PDU it has just finished may appear a
    /// few clocks later).
    pub idle: Signal<Out, Bit>,
    /// The EAPS status word (`eaps.status_data`) is the word of `eaps.status_address` (it
    /// crosses from the node's clock; the control link reads it long after it moves the
    /// address).
    pub status_valid: Signal<Out, Bit>,
}

/// The board logic with width-4 cores, one for each of `J` jobs (docs/switch.md §8;
/// `spotagg_hdl::multi_core::MultiCore`, which with one job is the core alone).
///
/// EAPS (docs/eaps.md §12): the two ports are the ring ports of an [`EapsNode`](spotagg_hdl::eaps_node::EapsNode) of `D`
/// domains (default 2) in its own clock (`eaps_clock`), behind [`EapsNodeCrossing`]. Frames to 00-E0-2B-00-00-04 go to the node as
/// bytes (not to the core; bridged only if the node passes them, while it is enabled); its
/// PDUs join each port's result FIFO between the dispatcher's frames ([`PduMerge`]); the
/// bridge and the dispatcher ask [`EapsVlanGate`]s whether a tagged frame of a protected VLAN
/// may enter and leave a ring port; its flush pulses flush the MAC table; `eaps_link_up`
/// drives its link state, `eaps_now` its time (in `eaps_clock`: the board logic counts it in µs,
/// `crate::tops::board_logic::EAPS_TIME_DIV`; a bench sets it). Its configuration registers start at the power-up default
/// ([`SwitchFabric::with_eaps`]; none: no domain, disabled, a transparent bridge as before)
/// and are written through `eaps`.
#[derive(LogicBlock)]
pub struct SwitchFabric<const J: usize = 1, const D: usize = 2> {
    /// Core clock (100 MHz on the board).
    pub core_clock: Signal<In, Clock>,
    /// Transmit clock of both ports (125 MHz).
    pub tx_clock: Signal<In, Clock>,
    /// The EAPS node's clock (50 MHz on the board).
    pub eaps_clock: Signal<In, Clock>,
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
    /// The EAPS node's configuration writes (offsets in 0x0700..: `16·d + r`, 0xF0 the
    /// enable) and status reads (`spotagg_hdl::eaps_node`'s word map), from the control link.
    pub eaps: EapsRegisterAccess,
    /// Link state of ports 0 (bit 0) and 1, from the PHYs (MDIO): a loss sends LINK-DOWN.
    pub eaps_link_up: Signal<In, Bits<2>>,
    /// The EAPS node's time, in the unit of its periods (`spotagg_hdl::eaps_node`), in
    /// `eaps_clock`.
    pub eaps_now: Signal<In, Bits<32>>,
    /// The EAPS node's port states, flushes, alerts and idle.
    pub eaps_out: FabricEaps,
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
    /// The EAPS node in its clock, with its crossings (route bits are 0 in a node frame's
    /// words: bit 36 carries the frame's port).
    node: EapsNodeCrossing<D>,
    pdu_merge: [PduMerge; 2],
    /// The bridge's gates: the frame's ingress port and its egress port.
    gate_in: EapsVlanGate<D>,
    gate_out: EapsVlanGate<D>,
    /// The dispatcher's gates: port 0, port 1.
    gate_res0: EapsVlanGate<D>,
    gate_res1: EapsVlanGate<D>,
    /// The gates' verdicts, registered (a frame's tag is taken from its fourth word, the verdict
    /// used at its last, ten words later at the least).
    bridge_pass_q: DFF<Bit>,
    gate_pass_q: DFF<Bits<2>>,
    eaps_regs: EapsRegisters<D>,
    /// The EAPS node is built in (else the ports are a transparent bridge and synthesis
    /// removes the node, its gates and registers).
    eaps_built: Constant<Bit>,
}

impl SwitchFabric<1> {
    /// The board logic for a width-4 `core` configured for `job` at power-up.
    pub fn new(core: CoreConfig, job: &JobConfig) -> Self {
        SwitchFabric::with_jobs(core, std::slice::from_ref(job))
    }
}

impl<const J: usize, const D: usize> SwitchFabric<J, D> {
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
            eaps_clock: Default::default(),
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
            eaps: Default::default(),
            eaps_link_up: Default::default(),
            eaps_now: Default::default(),
            eaps_out: Default::default(),
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
            node: Default::default(),
            pdu_merge: Default::default(),
            gate_in: Default::default(),
            gate_out: Default::default(),
            gate_res0: Default::default(),
            gate_res1: Default::default(),
            bridge_pass_q: Default::default(),
            gate_pass_q: Default::default(),
            eaps_regs: Default::default(),
            eaps_built: Constant::new(true),
        }
    }

    /// The fabric with `domains` (slot d: domain d's settings, `None` none) as the EAPS
    /// power-up default, enabled once the job is loaded if `enable` (the same values the
    /// control link's writes of `spotagg_driver::control::protocol::eaps::writes` give).
    pub fn with_eaps(mut self, domains: &[Option<DomainSettings>], enable: bool) -> Self {
        assert!(domains.len() <= D, "{} EAPS domains for a fabric built with {D}", domains.len());
        let words: Vec<Option<[u32; 7]>> = domains.iter().map(|s| s.map(|s| s.words())).collect();
        self.eaps_regs = EapsRegisters::with_defaults(&words, enable);
        self
    }

    /// The fabric without the EAPS node: the two ports are a transparent bridge, the EAPS
    /// registers read 0 and ignore writes, and synthesis leaves the node out.
    pub fn without_eaps(mut self) -> Self {
        self.eaps_built = Constant::new(false);
        self
    }
}

impl<const J: usize, const D: usize> Logic for SwitchFabric<J, D> {
    #[hdl_gen]
    fn update(&mut self) {
        clock!(self, core_clock, rx_arbiter, router, dispatcher, loader, core, mac_table, to_core, from_core);
        self.node.core_clock.next = self.core_clock.val();
        self.node.node_clock.next = self.eaps_clock.val();
        dff_setup!(
            self,
            core_clock,
            in_frame,
            mac_hi,
            mac_lo,
            cfg_write_q,
            cfg_address_q,
            cfg_data_q,
            done_q,
            idle_q,
            bridge_pass_q,
            gate_pass_q
        );
        self.switch_mac.next =
            (bit_cast::<48, 16>(self.mac_hi.q.val()) << 32) | bit_cast::<48, 32>(self.mac_lo.q.val());
        // Ports, merged into the router (the fuller receive FIFO first); the router's bridged
        // frames and the dispatcher's results go back to them.
        for i in 0..2 {
            GmiiPort::link(&mut self.eth[i], &mut self.port[i].gmii);
            self.port[i].core_clock.next = self.core_clock.val();
            self.port[i].tx_clock.next = self.tx_clock.val();
            self.port[i].switch_mac.next = self.switch_mac.val();
            ValidReadySource::<WORD_BITS>::join(&mut self.port[i].rxq, &mut self.rx_arbiter.up[i]);
            self.rx_arbiter.fill[i].next = self.port[i].rxq_fill.val();
            FrameWriter::join(&mut self.router.bridge[i], &mut self.port[i].br);
            self.pdu_merge[i].clock.next = self.core_clock.val();
            FrameWriter::join(&mut self.dispatcher.out[i], &mut self.pdu_merge[i].up);
            FrameWriter::join(&mut self.pdu_merge[i].down, &mut self.port[i].res);
            self.port[i].counter_address.next = self.port_counter_address.val().get_bits::<3>(0);
        }
        self.router.enable.next = self.done_q.q.val() & (self.in_frame.q.val() | !self.pause.val());
        if self.router.core.valid.val() & self.to_core.up.ready.val() {
            self.in_frame.d.next = !self.router.core.data.val().get_bit(32);
        }
        ValidReadySource::<WORD_BITS>::join(&mut self.rx_arbiter.down, &mut self.router.up);
        self.router.up_source.next = self.rx_arbiter.down_source.val();
        MacLearn::join(&mut self.router.learn, &mut self.mac_table.learn);
        // EAPS: the node's flushes (any domain's) flush the MAC table.
        self.mac_table.flush.next = self.eaps_built.val() & (self.node.flush.val() != 0);
        self.status.merge_start.next = self.router.merge_start.val();
        self.status.merge_port.next = self.router.merge_port.val();
        // Core, behind register slices both ways (its `rx_ready` and `tx_valid` are logic of its
        // own state: they meet the router's and the dispatcher's logic only at registers).
        ValidReadySource::<{ beat::BITS }>::join(&mut self.router.core, &mut self.to_core.up);
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
        ValidReadySource::<{ beat::BITS }>::join(&mut self.from_core.down, &mut self.dispatcher.up);
        MacLookup::join(&mut self.dispatcher.lookup, &mut self.mac_table.lookup);
        // EAPS: the configuration registers (domain d's register r at 16·d + r, the enable at
        // 0xF0), read by the node and the four gates.
        self.eaps_regs.clock.next = self.core_clock.val();
        self.eaps_regs.write.next = self.eaps.write.val() & self.eaps_built.val();
        self.eaps_regs.address.next = self.eaps.address.val();
        self.eaps_regs.data.next = self.eaps.data.val();
        for d in 0..D {
            EapsDomainCfgSource::join(&mut self.eaps_regs.cfg[d], &mut self.node.cfg[d]);
            EapsDomainCfgSource::join(&mut self.eaps_regs.cfg[d], &mut self.gate_in.cfg[d]);
            EapsDomainCfgSource::join(&mut self.eaps_regs.cfg[d], &mut self.gate_out.cfg[d]);
            EapsDomainCfgSource::join(&mut self.eaps_regs.cfg[d], &mut self.gate_res0.cfg[d]);
            EapsDomainCfgSource::join(&mut self.eaps_regs.cfg[d], &mut self.gate_res1.cfg[d]);
        }
        // The node: enabled once the job is loaded, the switch MAC its system MAC; its time in
        // its own clock.
        self.node.now.next = self.eaps_now.val();
        self.node.system_mac.next = self.switch_mac.val();
        self.node.enable.next = self.eaps_built.val() & self.eaps_regs.enable.val() & self.done_q.q.val();
        self.node.link_up.next = self.eaps_link_up.val();
        self.node.status_address.next = self.eaps.status_address.val();
        self.eaps.status_data.next = 0.into();
        self.eaps_out.forwarding.next = 0.into();
        self.eaps_out.flush.next = 0.into();
        self.eaps_out.alert.next = false;
        self.eaps_out.idle.next = true;
        self.eaps_out.status_valid.next = true;
        if self.eaps_built.val() {
            self.eaps.status_data.next = self.node.status_data.val();
            self.eaps_out.forwarding.next = self.node.forwarding.val();
            self.eaps_out.flush.next = self.node.flush.val();
            self.eaps_out.alert.next = self.node.alert.val();
            self.eaps_out.idle.next = self.node.idle.val();
            self.eaps_out.status_valid.next = self.node.status_valid.val();
        }
        self.eaps_out.alert_second_master.next = self.node.alert_second_master.val();
        self.eaps_out.alert_domain.next = self.node.alert_domain.val();
        self.eaps_out.alert_mac.next = self.node.alert_mac.val();
        // Its frames, from the router as words (the frame's port in bit 36), and its verdict on
        // each, through the crossing.
        self.router.node_on.next = self.eaps_built.val() & self.eaps_regs.enable.val();
        self.node.frames.valid.next = self.router.node.valid.val();
        self.node.frames.data.next = self.router.node.data.val().replace_bit(36, self.router.node_port.val());
        self.router.node.ready.next = self.node.frames.ready.val();
        self.router.node_done.next = self.eaps_built.val() & self.node.verdict_done.val();
        self.router.node_pass.next = self.node.verdict_pass.val();
        // Its PDUs into each port's result FIFO.
        // (Wired, not joined: a join makes one net of both ends, which the build without the
        // node must not drive.)
        for i in 0..2 {
            self.pdu_merge[i].pdu.valid.next = self.eaps_built.val() & self.node.pdu[i].valid.val();
            self.pdu_merge[i].pdu.data.next = self.node.pdu[i].data.val();
            self.node.pdu[i].ready.next = self.pdu_merge[i].pdu.ready.val();
        }
        // The VLAN gates: a bridged frame must pass its ingress and its egress port, a result
        // each port it is written to.
        self.gate_in.forwarding.next = self.node.forwarding.val();
        self.gate_out.forwarding.next = self.node.forwarding.val();
        self.gate_in.has_tag.next = self.router.tag_tagged.val();
        self.gate_out.has_tag.next = self.router.tag_tagged.val();
        self.gate_in.vid.next = self.router.tag_vid.val();
        self.gate_out.vid.next = self.router.tag_vid.val();
        self.gate_res0.forwarding.next = self.node.forwarding.val();
        self.gate_res1.forwarding.next = self.node.forwarding.val();
        self.gate_res0.has_tag.next = self.dispatcher.tag_tagged.val();
        self.gate_res1.has_tag.next = self.dispatcher.tag_tagged.val();
        self.gate_res0.vid.next = self.dispatcher.tag_vid.val();
        self.gate_res1.vid.next = self.dispatcher.tag_vid.val();
        self.gate_in.port.next = self.rx_arbiter.down_source.val();
        self.gate_out.port.next = !self.rx_arbiter.down_source.val();
        // (Registered: the path from the tag through the gates' range compares into the bridge
        // FIFO's commit and drop was among the core clock's deepest.)
        self.bridge_pass_q.d.next = !self.eaps_built.val() | (self.gate_in.pass.val() & self.gate_out.pass.val());
        self.router.bridge_pass.next = self.bridge_pass_q.q.val();
        self.gate_res0.port.next = false;
        self.gate_res1.port.next = true;
        self.gate_pass_q.d.next = bit_cast::<2, 1>(self.gate_res0.pass.val().into())
            | (bit_cast::<2, 1>(self.gate_res1.pass.val().into()) << 1);
        if !self.eaps_built.val() {
            self.gate_pass_q.d.next = 3.into();
        }
        self.dispatcher.gate_pass.next = self.gate_pass_q.q.val();
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

/// The job a fabric is built with when its job is written after power-up over the fabric's
/// configuration inputs (the writes of `config_loader::jobs_writes`, as a control link makes
/// them) rather than played from its ROM: one worker, one slot, the core's payload size. A
/// fabric's Verilog then depends on its core alone, so one Verilator model serves every job
/// that fits the core (the benches, `spotagg tap`), and the job's writes end with the slot
/// state's clear, as the ROM's do. (With one job only: the fabric takes its switch MAC from
/// any write of registers 0 and 1, whichever job is selected.)
pub fn placeholder_job(core: CoreConfig) -> JobConfig {
    let payload = PayloadSize::from_bytes(core.max_payload).unwrap_or(PayloadSize::B256);
    JobConfig::example(1, payload, 1)
}

/// The Verilog of the board logic (top module `top`), for simulation.
pub fn fabric_verilog(core: CoreConfig, job: &JobConfig) -> String {
    crate::tops::on_big_stack(|| {
        let mut f = SwitchFabric::new(core, job);
        f.connect_all();
        generate_verilog(&f)
    })
}

/// The Verilog of the board logic with one core for each of `jobs` (1 or 2; top module `top`),
/// for simulation.
pub fn fabric_verilog_jobs(core: CoreConfig, jobs: &[JobConfig]) -> String {
    fn v<const J: usize>(core: CoreConfig, jobs: &[JobConfig]) -> String {
        let mut f = SwitchFabric::<J>::with_jobs(core, jobs);
        f.connect_all();
        generate_verilog(&f)
    }
    crate::tops::on_big_stack(|| match jobs.len() {
        1 => v::<1>(core, jobs),
        2 => v::<2>(core, jobs),
        n => panic!("{n} jobs: the hardware is built for 1..={}", spotagg_hdl::job_router::MAX_JOBS),
    })
}
