//! The EAPS node ([`EapsNode`], docs/eaps.md §12) in a clock of its own (`node_clock`, 50 MHz
//! on the board: it handles a few control PDUs a hello period, and its long paths get 20 ns),
//! with every crossing between it and the core clock, where the router, the PDU merges, the
//! VLAN gates, the MAC table, the EAPS registers and the control link are.
//!
//! ```text
//!  core clock                                    │ node clock
//!  router ─ frames ─ StreamCrossing (a word) ────┼─ TxWidth<8> ─ rx0/rx1 ─┐
//!  router ← verdict_done/pass ─ RequestAck ──────┼─ after the frame's last byte, node idle ─ EapsNode
//!  PduMerge p ← pdu[p] ─ LutFrameFifo ──────────┼─ BytePacker ─ tx0/tx1 ────────────────┤
//!  EapsRegisters, system MAC, enable ─ Handshake ┼─ their copy (one value: atomic) ──────┤
//!  link_up ─ register ─ BitSync ─────────────────┼───────────────────────────────────────┤
//!  gates ← forwarding ─ BusSync ─────────────────┼───────────────────────────────────────┤
//!  MAC table ← flush ─ PulseSync ────────────────┼───────────────────────────────────────┤
//!  benches ← alert* ─ PulseSync + held data ─────┼───────────────────────────────────────┤
//!  benches ← idle ─ BitSync ─────────────────────┼───────────────────────────────────────┤
//!  control link ─ status_address/data ─ RequestAck (polled) ─ address register ─────────┘
//!  eaps_now (time base in the node clock) ───────┼─ now
//! ```
//!
//! - **Frames in**: the router's node frames (FIFO words, the frame's port in bit 36) cross one
//!   word at a time ([`StreamCrossing`]) into the node's byte unpacker. When the crossing takes
//!   a frame's last word it asks for the verdict ([`RequestAck`]); the node's side answers once
//!   the frame's last byte has gone into the node and the node has then been idle for two
//!   clocks, with the `pass` bits the node raised since that last byte. The answer (for that
//!   frame, never an earlier one: the router sends nothing more until it has it) comes back as
//!   `verdict_done` for a clock with `verdict_pass` held.
//! - **PDUs out**: each port's bytes are packed into words ([`BytePacker`]) and cross in a
//!   32-word [`LutFrameFifo`] (LUT RAM; whole frames: the reader sees a PDU only once it is all
//!   there, then a word a clock).
//! - **Configuration**: the domains' registers, the system MAC and the enable (the core
//!   clock's [`EapsRegisters`](spotagg_hdl::eaps_registers::EapsRegisters), the switch MAC, the
//!   enable with the job loaded) cross together, as one value, through a free-running
//!   [`Handshake`]: the node never sees the enable with half of the configuration written before
//!   it (the control link writes the enable last, `spotagg_driver::control::protocol::eaps::writes`).
//! - **Port states**: `forwarding` crosses back as one value ([`BusSync`]), so the gates never
//!   see one port's bit of a domain a clock before the other's (which could open both ports).
//! - **Pulses**: the flushes ([`PulseSync`], a line a domain) and the alerts (a line a domain,
//!   the second master's MAC and the kind held a domain in node-clock registers; the core side
//!   gives them out one a clock, the lowest domain first).
//! - **Status**: the control link's status address is polled continuously ([`RequestAck`]):
//!   the node's side registers the address, reads the word a clock later and answers with the
//!   word and its address; `status_data` is the last answer and `status_valid` says it is the
//!   word of the present `status_address` (at most about two rounds, ~20 clocks, old: the link
//!   uses a word at least ten bit times after it moved the address).
//! - **Time**: `now` is an input in the node clock (the board's time base counts in it; a
//!   bench sets it).
//!
//! Every output is in the core clock but `now`'s input. `idle` is the node's idle (two
//! flip-flops late) with nothing in the crossings of frames in and of the verdict, and no PDU
//! waiting at the core side; a PDU the node has just finished may become visible a few clocks
//! after `idle` rises.

use crate::cdc::{BitSync, BusSync, Handshake, PulseSync, RequestAck, StreamCrossing};
use crate::ethernet::byte_packer::BytePacker;
use crate::ethernet::frame_fifo::{FrameWriter, WORD_BITS};
use crate::ethernet::lut_frame_fifo::LutFrameFifo;
use crate::ethernet::pdu_merge::PDU_WORD_BITS;
use crate::ethernet::stream::{ValidReadySink, ValidReadySource};
use rust_hdl::prelude::*;
use spotagg_hdl::byte_stream::ByteSource;
use spotagg_hdl::eaps_node::{EapsDomainCfg, EapsNode};
use spotagg_hdl::stream_width::TxWidth;

/// Words of each port's PDU FIFO (a PDU is 27).
pub const PDU_FIFO_WORDS: usize = 32;

/// The EAPS node in its own clock, and its crossings ([module docs](self)).
#[derive(LogicBlock)]
pub struct EapsNodeCrossing<const D: usize> {
    /// Core clock.
    pub core_clock: Signal<In, Clock>,
    /// The node's clock.
    pub node_clock: Signal<In, Clock>,
    /// The router's node frames (FIFO words; bit 36: the frame's port).
    pub frames: ValidReadySink<WORD_BITS>,
    /// The verdict on the frame whose last word `frames` took last has arrived (one clock).
    pub verdict_done: Signal<Out, Bit>,
    /// The verdict: pass (bit `p`) the frame that came in on port `p`.
    pub verdict_pass: Signal<Out, Bits<2>>,
    /// The PDUs the node sends out of ports 0 and 1: whole frames of words.
    pub pdu: [ValidReadySource<PDU_WORD_BITS>; 2],
    /// The domains' configuration (core clock; quasi-static: changed while the enable is low).
    pub cfg: [EapsDomainCfg; D],
    /// The node's system MAC.
    pub system_mac: Signal<In, Bits<48>>,
    /// Enable the node.
    pub enable: Signal<In, Bit>,
    /// Link state of ports 0 (bit 0) and 1.
    pub link_up: Signal<In, Bits<2>>,
    /// The node's port states (`EapsNode::forwarding`, bit `2d + p`), as one value.
    pub forwarding: Signal<Out, Bits<32>>,
    /// Flush domain `d`'s FDB (bit `d`, one clock a flush).
    pub flush: Signal<Out, Bits<16>>,
    /// An alert (one clock).
    pub alert: Signal<Out, Bit>,
    /// The alert is a second master (else the fail timer expired).
    pub alert_second_master: Signal<Out, Bit>,
    /// The alert's domain.
    pub alert_domain: Signal<Out, Bits<4>>,
    /// The second master's system MAC.
    pub alert_mac: Signal<Out, Bits<48>>,
    /// The node has nothing pending or in progress, and nothing is in the crossings in.
    pub idle: Signal<Out, Bit>,
    /// Status word address (`EapsNode`'s word map).
    pub status_address: Signal<In, Bits<8>>,
    /// The status word last read.
    pub status_data: Signal<Out, Bits<32>>,
    /// `status_data` is the word of `status_address`.
    pub status_valid: Signal<Out, Bit>,
    /// The node's time (node clock).
    pub now: Signal<In, Bits<32>>,
    node: EapsNode<D>,
    // Frames in, and the verdict.
    words: StreamCrossing<WORD_BITS>,
    unpack: TxWidth<8>,
    port_now: Signal<Local, Bit>,
    verdict: RequestAck<1, 2>,
    got_last: DFF<Bit>,
    pass_acc: DFF<Bits<2>>,
    idle_q: DFF<Bit>,
    // PDUs out.
    packer: [BytePacker; 2],
    pdu_fifo: [LutFrameFifo<PDU_WORD_BITS, 5, 6>; 2],
    // Configuration: hold registers (core clock) and the node's copy.
    cfg_hs: Handshake,
    flags_in: [Signal<Local, Bits<4>>; D],
    flags_h: [DFF<Bits<4>>; D],
    vlan_h: [DFF<Bits<12>>; D],
    hello_h: [DFF<Bits<32>>; D],
    fail_h: [DFF<Bits<32>>; D],
    pf_h: [DFF<Bits<32>>; D],
    hfield_h: [DFF<Bits<16>>; D],
    ffield_h: [DFF<Bits<16>>; D],
    mac_h: DFF<Bits<48>>,
    enable_h: DFF<Bit>,
    flags_o: [DFF<Bits<4>>; D],
    vlan_o: [DFF<Bits<12>>; D],
    hello_o: [DFF<Bits<32>>; D],
    fail_o: [DFF<Bits<32>>; D],
    pf_o: [DFF<Bits<32>>; D],
    hfield_o: [DFF<Bits<16>>; D],
    ffield_o: [DFF<Bits<16>>; D],
    mac_o: DFF<Bits<48>>,
    enable_o: DFF<Bit>,
    // Link states: registered in the core clock, then synchronized.
    link_q: DFF<Bits<2>>,
    link_sync: BitSync<2>,
    // Back to the core clock.
    fwd_sync: BusSync<32>,
    flush_sync: PulseSync<16>,
    alert_sync: PulseSync<16>,
    alert_line: Signal<Local, Bits<16>>,
    alert_sm_h: DFF<Bits<16>>,
    alert_mac_h: [DFF<Bits<48>>; D],
    alert_pend: DFF<Bits<16>>,
    alert_left: Signal<Local, Bits<16>>,
    alert_picked: Signal<Local, Bit>,
    alert_q: DFF<Bit>,
    alert_sm_q: DFF<Bit>,
    alert_dom_q: DFF<Bits<4>>,
    alert_mac_q: DFF<Bits<48>>,
    idle_sync: BitSync<1>,
    // Status reads.
    status: RequestAck<8, 40>,
    st_addr: DFF<Bits<8>>,
    st_phase: DFF<Bit>,
}

impl<const D: usize> Default for EapsNodeCrossing<D> {
    fn default() -> Self {
        let fwd_init = (1u64 << (2 * D)) - 1;
        Self {
            core_clock: Default::default(),
            node_clock: Default::default(),
            frames: Default::default(),
            verdict_done: Default::default(),
            verdict_pass: Default::default(),
            pdu: Default::default(),
            cfg: std::array::from_fn(|_| Default::default()),
            system_mac: Default::default(),
            enable: Default::default(),
            link_up: Default::default(),
            forwarding: Default::default(),
            flush: Default::default(),
            alert: Default::default(),
            alert_second_master: Default::default(),
            alert_domain: Default::default(),
            alert_mac: Default::default(),
            idle: Default::default(),
            status_address: Default::default(),
            status_data: Default::default(),
            status_valid: Default::default(),
            now: Default::default(),
            node: Default::default(),
            words: Default::default(),
            unpack: TxWidth::new(),
            port_now: Default::default(),
            verdict: Default::default(),
            got_last: Default::default(),
            pass_acc: Default::default(),
            idle_q: Default::default(),
            packer: Default::default(),
            pdu_fifo: Default::default(),
            cfg_hs: Default::default(),
            flags_in: std::array::from_fn(|_| Default::default()),
            flags_h: std::array::from_fn(|_| Default::default()),
            vlan_h: std::array::from_fn(|_| Default::default()),
            hello_h: std::array::from_fn(|_| Default::default()),
            fail_h: std::array::from_fn(|_| Default::default()),
            pf_h: std::array::from_fn(|_| Default::default()),
            hfield_h: std::array::from_fn(|_| Default::default()),
            ffield_h: std::array::from_fn(|_| Default::default()),
            mac_h: Default::default(),
            enable_h: Default::default(),
            flags_o: std::array::from_fn(|_| Default::default()),
            vlan_o: std::array::from_fn(|_| Default::default()),
            hello_o: std::array::from_fn(|_| Default::default()),
            fail_o: std::array::from_fn(|_| Default::default()),
            pf_o: std::array::from_fn(|_| Default::default()),
            hfield_o: std::array::from_fn(|_| Default::default()),
            ffield_o: std::array::from_fn(|_| Default::default()),
            mac_o: Default::default(),
            enable_o: Default::default(),
            link_q: Default::default(),
            link_sync: Default::default(),
            fwd_sync: BusSync::with_init(fwd_init.into()),
            flush_sync: Default::default(),
            alert_sync: Default::default(),
            alert_line: Default::default(),
            alert_sm_h: Default::default(),
            alert_mac_h: std::array::from_fn(|_| Default::default()),
            alert_pend: Default::default(),
            alert_left: Default::default(),
            alert_picked: Default::default(),
            alert_q: Default::default(),
            alert_sm_q: Default::default(),
            alert_dom_q: Default::default(),
            alert_mac_q: Default::default(),
            idle_sync: Default::default(),
            status: Default::default(),
            st_addr: Default::default(),
            st_phase: Default::default(),
        }
    }
}

impl<const D: usize> Logic for EapsNodeCrossing<D> {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self,
            core_clock,
            mac_h,
            enable_h,
            link_q,
            alert_pend,
            alert_q,
            alert_sm_q,
            alert_dom_q,
            alert_mac_q
        );
        dff_setup!(self, node_clock, got_last, pass_acc, idle_q, mac_o, enable_o, alert_sm_h, st_addr, st_phase);
        clock!(self, node_clock, node, unpack);
        for d in 0..D {
            self.flags_h[d].clock.next = self.core_clock.val();
            self.flags_h[d].d.next = self.flags_h[d].q.val();
            self.vlan_h[d].clock.next = self.core_clock.val();
            self.vlan_h[d].d.next = self.vlan_h[d].q.val();
            self.hello_h[d].clock.next = self.core_clock.val();
            self.hello_h[d].d.next = self.hello_h[d].q.val();
            self.fail_h[d].clock.next = self.core_clock.val();
            self.fail_h[d].d.next = self.fail_h[d].q.val();
            self.pf_h[d].clock.next = self.core_clock.val();
            self.pf_h[d].d.next = self.pf_h[d].q.val();
            self.hfield_h[d].clock.next = self.core_clock.val();
            self.hfield_h[d].d.next = self.hfield_h[d].q.val();
            self.ffield_h[d].clock.next = self.core_clock.val();
            self.ffield_h[d].d.next = self.ffield_h[d].q.val();
            self.flags_o[d].clock.next = self.node_clock.val();
            self.flags_o[d].d.next = self.flags_o[d].q.val();
            self.vlan_o[d].clock.next = self.node_clock.val();
            self.vlan_o[d].d.next = self.vlan_o[d].q.val();
            self.hello_o[d].clock.next = self.node_clock.val();
            self.hello_o[d].d.next = self.hello_o[d].q.val();
            self.fail_o[d].clock.next = self.node_clock.val();
            self.fail_o[d].d.next = self.fail_o[d].q.val();
            self.pf_o[d].clock.next = self.node_clock.val();
            self.pf_o[d].d.next = self.pf_o[d].q.val();
            self.hfield_o[d].clock.next = self.node_clock.val();
            self.hfield_o[d].d.next = self.hfield_o[d].q.val();
            self.ffield_o[d].clock.next = self.node_clock.val();
            self.ffield_o[d].d.next = self.ffield_o[d].q.val();
            self.alert_mac_h[d].clock.next = self.node_clock.val();
            self.alert_mac_h[d].d.next = self.alert_mac_h[d].q.val();
        }

        // Configuration, system MAC and enable: one value through the handshake.
        self.cfg_hs.src_clock.next = self.core_clock.val();
        self.cfg_hs.dst_clock.next = self.node_clock.val();
        if self.cfg_hs.src_load.val() {
            self.mac_h.d.next = self.system_mac.val();
            self.enable_h.d.next = self.enable.val();
        }
        if self.cfg_hs.dst_load.val() {
            self.mac_o.d.next = self.mac_h.q.val();
            self.enable_o.d.next = self.enable_h.q.val();
        }
        for d in 0..D {
            self.flags_in[d].next = 0.into();
            self.flags_in[d].next = self.flags_in[d].val().replace_bit(0, self.cfg[d].active.val());
            self.flags_in[d].next = self.flags_in[d].val().replace_bit(1, self.cfg[d].master.val());
            self.flags_in[d].next = self.flags_in[d].val().replace_bit(2, self.cfg[d].primary.val());
            self.flags_in[d].next = self.flags_in[d].val().replace_bit(3, self.cfg[d].send_alert.val());
            if self.cfg_hs.src_load.val() {
                self.flags_h[d].d.next = self.flags_in[d].val();
                self.vlan_h[d].d.next = self.cfg[d].control_vlan.val();
                self.hello_h[d].d.next = self.cfg[d].hello.val();
                self.fail_h[d].d.next = self.cfg[d].fail.val();
                self.pf_h[d].d.next = self.cfg[d].pre_forwarding.val();
                self.hfield_h[d].d.next = self.cfg[d].hello_field.val();
                self.ffield_h[d].d.next = self.cfg[d].fail_field.val();
            }
            if self.cfg_hs.dst_load.val() {
                self.flags_o[d].d.next = self.flags_h[d].q.val();
                self.vlan_o[d].d.next = self.vlan_h[d].q.val();
                self.hello_o[d].d.next = self.hello_h[d].q.val();
                self.fail_o[d].d.next = self.fail_h[d].q.val();
                self.pf_o[d].d.next = self.pf_h[d].q.val();
                self.hfield_o[d].d.next = self.hfield_h[d].q.val();
                self.ffield_o[d].d.next = self.ffield_h[d].q.val();
            }
            self.node.cfg[d].active.next = self.flags_o[d].q.val().get_bit(0);
            self.node.cfg[d].master.next = self.flags_o[d].q.val().get_bit(1);
            self.node.cfg[d].primary.next = self.flags_o[d].q.val().get_bit(2);
            self.node.cfg[d].send_alert.next = self.flags_o[d].q.val().get_bit(3);
            self.node.cfg[d].control_vlan.next = self.vlan_o[d].q.val();
            // The node does not read the protected range (the gates do, in the core clock).
            self.node.cfg[d].protected_lo.next = 0.into();
            self.node.cfg[d].protected_hi.next = 0.into();
            self.node.cfg[d].hello.next = self.hello_o[d].q.val();
            self.node.cfg[d].fail.next = self.fail_o[d].q.val();
            self.node.cfg[d].pre_forwarding.next = self.pf_o[d].q.val();
            self.node.cfg[d].hello_field.next = self.hfield_o[d].q.val();
            self.node.cfg[d].fail_field.next = self.ffield_o[d].q.val();
        }
        self.node.system_mac.next = self.mac_o.q.val();
        self.node.enable.next = self.enable_o.q.val();
        self.node.now.next = self.now.val();
        // Link states: from a register of the core clock (the input may be logic), bit by bit.
        self.link_q.d.next = self.link_up.val();
        self.link_sync.clock.next = self.node_clock.val();
        self.link_sync.sig_in.next = self.link_q.q.val();
        self.node.link_up.next = self.link_sync.sig_out.val();

        // Frames in: a word at a time, unpacked into the port's receive stream (the word layout
        // of `crate::ethernet::frame_fifo::word`: data 31..0, bytes 34..32, last 35, port 36;
        // hdl_gen takes literals, not the module's constants).
        self.words.src_clock.next = self.core_clock.val();
        self.words.dst_clock.next = self.node_clock.val();
        self.words.up.valid.next = self.frames.valid.val();
        self.words.up.data.next = self.frames.data.val();
        self.frames.ready.next = self.words.up.ready.val();
        self.unpack.word.valid.next = self.words.down.valid.val();
        self.unpack.word.data.next = self.words.down.data.val().get_bits::<32>(0);
        self.unpack.word.last.next = self.words.down.data.val().get_bit(35);
        self.unpack.word.bytes.next = self.words.down.data.val().get_bits::<3>(32);
        self.words.down.ready.next = self.unpack.word.ready.val();
        self.port_now.next = self.words.down.data.val().get_bit(36);
        self.node.rx0.valid.next = self.unpack.out_valid.val() & !self.port_now.val();
        self.node.rx1.valid.next = self.unpack.out_valid.val() & self.port_now.val();
        self.node.rx0.data.next = self.unpack.out_data.val();
        self.node.rx1.data.next = self.unpack.out_data.val();
        self.node.rx0.last.next = self.unpack.out_last.val();
        self.node.rx1.last.next = self.unpack.out_last.val();
        if self.port_now.val() {
            self.unpack.out_ready.next = self.node.rx1.ready.val();
        } else {
            self.unpack.out_ready.next = self.node.rx0.ready.val();
        }
        // The verdict: asked when the frame's last word crosses; answered once its last byte is
        // in the node and the node has been idle two clocks since, with the passes since then.
        self.verdict.src_clock.next = self.core_clock.val();
        self.verdict.dst_clock.next = self.node_clock.val();
        self.verdict.start.next =
            self.frames.valid.val() & self.words.up.ready.val() & self.frames.data.val().get_bit(35);
        self.verdict.question.next = 0.into();
        self.verdict_done.next = self.verdict.done.val();
        self.verdict_pass.next = self.verdict.answer.val();
        self.idle_q.d.next = self.node.idle.val();
        if self.got_last.q.val() {
            self.pass_acc.d.next = self.pass_acc.q.val() | self.node.pass.val();
        }
        if self.unpack.out_valid.val() & self.unpack.out_ready.val() & self.unpack.out_last.val() {
            self.got_last.d.next = true;
            self.pass_acc.d.next = 0.into();
        }
        self.verdict.reply.next = self.got_last.q.val() & self.node.idle.val() & self.idle_q.q.val();
        self.verdict.reply_data.next = self.pass_acc.q.val() | self.node.pass.val();
        if self.verdict.pending.val() & self.verdict.reply.val() {
            self.got_last.d.next = false;
        }

        // PDUs out: packed into words, each port's through its FIFO, whole frames.
        for p in 0..2 {
            self.packer[p].clock.next = self.node_clock.val();
            self.pdu_fifo[p].write_clock.next = self.node_clock.val();
            self.pdu_fifo[p].read_clock.next = self.core_clock.val();
            FrameWriter::join(&mut self.packer[p].out, &mut self.pdu_fifo[p].write);
            ValidReadySource::<PDU_WORD_BITS>::link(&mut self.pdu[p], &mut self.pdu_fifo[p].read);
        }
        ByteSource::join(&mut self.node.tx0, &mut self.packer[0].bytes);
        ByteSource::join(&mut self.node.tx1, &mut self.packer[1].bytes);

        // Port states back as one value; flushes as pulses.
        self.fwd_sync.src_clock.next = self.node_clock.val();
        self.fwd_sync.dst_clock.next = self.core_clock.val();
        self.fwd_sync.src_value.next = self.node.forwarding.val();
        self.forwarding.next = self.fwd_sync.dst_value.val();
        self.flush_sync.src_clock.next = self.node_clock.val();
        self.flush_sync.dst_clock.next = self.core_clock.val();
        self.flush_sync.pulse.next = self.node.flush.val();
        self.flush.next = self.flush_sync.out.val();
        // Alerts: a pulse line a domain, its kind and MAC held until that domain's next alert;
        // given out one a clock, the lowest domain first.
        self.alert_line.next = 0.into();
        for d in 0..D {
            if self.node.alert.val() & (self.node.alert_domain.val().index() == d) {
                self.alert_line.next = self.alert_line.val().replace_bit(d, true);
                self.alert_sm_h.d.next = self.alert_sm_h.q.val().replace_bit(d, self.node.alert_second_master.val());
                self.alert_mac_h[d].d.next = self.node.alert_mac.val();
            }
        }
        self.alert_sync.src_clock.next = self.node_clock.val();
        self.alert_sync.dst_clock.next = self.core_clock.val();
        self.alert_sync.pulse.next = self.alert_line.val();
        self.alert_left.next = self.alert_pend.q.val() | self.alert_sync.out.val();
        self.alert_picked.next = false;
        self.alert_q.d.next = false;
        for d in 0..D {
            if self.alert_left.val().get_bit(d) & !self.alert_picked.val() {
                self.alert_picked.next = true;
                self.alert_left.next = self.alert_left.val().replace_bit(d, false);
                self.alert_q.d.next = true;
                self.alert_dom_q.d.next = d.to_bits();
                self.alert_sm_q.d.next = self.alert_sm_h.q.val().get_bit(d);
                self.alert_mac_q.d.next = self.alert_mac_h[d].q.val();
            }
        }
        self.alert_pend.d.next = self.alert_left.val();
        self.alert.next = self.alert_q.q.val();
        self.alert_second_master.next = self.alert_sm_q.q.val();
        self.alert_domain.next = self.alert_dom_q.q.val();
        self.alert_mac.next = self.alert_mac_q.q.val();
        // Idle: the node's (registered, then synchronized), and nothing in the crossings in.
        self.idle_sync.clock.next = self.core_clock.val();
        self.idle_sync.sig_in.next = bit_cast::<1, 1>(self.idle_q.q.val().into());
        self.idle.next = self.idle_sync.sig_out.val().any()
            & self.words.src_idle.val()
            & !self.verdict.busy.val()
            & !self.pdu[0].valid.val()
            & !self.pdu[1].valid.val();

        // Status: the address polled, read a clock after it is registered in the node clock.
        self.status.src_clock.next = self.core_clock.val();
        self.status.dst_clock.next = self.node_clock.val();
        self.status.start.next = true;
        self.status.question.next = self.status_address.val();
        self.status_data.next = self.status.answer.val().get_bits::<32>(0);
        self.status_valid.next = self.status.answer.val().get_bits::<8>(32) == self.status_address.val();
        self.node.status_address.next = self.st_addr.q.val();
        self.status.reply.next = self.st_phase.q.val();
        self.status.reply_data.next =
            bit_cast::<40, 32>(self.node.status_data.val()) | (bit_cast::<40, 8>(self.st_addr.q.val()) << 32);
        self.st_phase.d.next = false;
        if self.status.pending.val() & !self.st_phase.q.val() {
            self.st_addr.d.next = self.status.asked.val();
            self.st_phase.d.next = true;
        }
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::cdc::two_clocks::TwoClocks;
    use spotagg_driver::wire::eaps::{emit_frame, EapsRepr, EapsState, EapsType};
    use spotagg_driver::wire::MacAddr;
    use spotagg_spec::eaps::{Action, DomainConfig, EapsNode as RefNode, FailAction, Role};

    /// A frame as the router hands it to the node: FIFO words, the port in bit 36.
    fn words(frame: &[u8], port: usize) -> Vec<u64> {
        let chunks: Vec<&[u8]> = frame.chunks(4).collect();
        chunks
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let data = c.iter().enumerate().fold(0u64, |a, (k, &b)| a | (u64::from(b) << (24 - 8 * k)));
                let last = i + 1 == chunks.len();
                let bytes = if last { (c.len() as u64) << 32 } else { 0 };
                data | bytes | (u64::from(last) << 35) | ((port as u64) << 36)
            })
            .collect()
    }

    /// The bytes of a PDU FIFO's words.
    fn bytes(words: &[u64]) -> Vec<u8> {
        let mut out = vec![];
        for &w in words {
            let n = if w >> 35 & 1 == 1 { ((w >> 32) & 7) as usize } else { 4 };
            for k in 0..n {
                out.push((w >> (24 - 8 * k)) as u8);
            }
        }
        out
    }

    /// A transit domain behind the crossing, the core clock and the node's of unrelated
    /// periods. Four control frames in turn on alternating ports, the router's way (the next
    /// only once the verdict on the last is back): two HEALTH PDUs, which the node forwards
    /// itself out of the other port (verdict: no pass), and each made into another EDP frame
    /// (its TLV not an EAPS one; verdict: pass on its own port). Each verdict is the one on its own frame, each PDU
    /// crosses whole and equals the reference node's, and the status words read across the
    /// crossing give the reference's counters and state.
    #[test]
    fn verdicts_pdus_and_status_cross_between_unrelated_clocks() {
        let (cvlan, hello, fail, pf) = (4000u16, 1u32 << 28, 3u32 << 28, 6u32 << 28);
        let mac = MacAddr([0x02, 0, 0, 0, 0, 0x01]);
        let master = MacAddr([0x02, 0, 0, 0, 0, 0x4d]);
        let health = |seq: u16| {
            emit_frame(
                &EapsRepr {
                    edp_sequence: seq,
                    eaps_type: EapsType::Health,
                    control_vlan: cvlan,
                    system_mac: master,
                    hello_timer: 1,
                    fail_timer: 3,
                    state: EapsState::Complete,
                    hello_seq: seq,
                },
                master,
                6,
            )
        };
        // Another EDP frame: the PDU with its TLV's type changed from EAPS (0x0b) to another
        // (0x0e) and the checksum made good again: an EDP frame with no EAPS TLV, which a node
        // passes on (docs/eaps.md §1.1; a damaged PDU would be dropped as malformed).
        let damaged = |seq: u16| {
            let mut f = health(seq);
            assert_eq!(&f[42..44], [0x99, 0x0b], "the EAPS TLV's marker and type");
            f[43] = 0x0e;
            spotagg_driver::wire::eaps::EapsPacket::new_checked(&mut f[18..]).expect("our PDU").fill_checksum();
            f
        };
        // (port, frame, other EDP frame)
        let frames =
            [(0usize, health(17), false), (1, damaged(18), true), (1, health(19), false), (0, damaged(20), true)];
        for periods in [[10_000u64, 20_000], [9_007, 13_001]] {
            let mut reference = RefNode::new(
                mac,
                vec![DomainConfig {
                    role: Role::Transit,
                    primary: 0,
                    control_vlan: cvlan,
                    protected: vec![],
                    hello: hello.into(),
                    fail: fail.into(),
                    pre_forwarding: pf.into(),
                    fail_action: FailAction::OpenSecondary,
                }],
                [true, true],
            );
            reference.enable(0);
            let mut c = EapsNodeCrossing::<2>::default();
            c.connect_all();
            c.cfg[0].active.next = true;
            c.cfg[0].control_vlan.next = u64::from(cvlan).into();
            c.cfg[0].hello.next = u64::from(hello).into();
            c.cfg[0].fail.next = u64::from(fail).into();
            c.cfg[0].pre_forwarding.next = u64::from(pf).into();
            c.cfg[0].hello_field.next = 1.into();
            c.cfg[0].fail_field.next = 3.into();
            c.system_mac.next = mac.to_u64().into();
            c.link_up.next = 3.into();
            c.enable.next = true;
            c.pdu[0].ready.next = true;
            c.pdu[1].ready.next = true;
            assert!(simulate(&mut c, 1000));
            let mut clocks = TwoClocks::new(periods);
            let (mut frame, mut word, mut asked) = (0usize, 0usize, false);
            let mut got: [Vec<u64>; 2] = Default::default();
            let mut verdicts = vec![];
            let mut core_edges = 0u64;
            // Core clocks from each frame's first word offered to its verdict.
            let (mut first_at, mut waits) = (None::<u64>, vec![]);
            // Let the configuration cross and the node enable before the first frame.
            while verdicts.len() < frames.len() || core_edges < 2000 {
                let e = clocks.next_edge();
                if e.clock == 0 && e.rising {
                    core_edges += 1;
                    if c.frames.valid.val() && c.frames.ready.val() {
                        word += 1;
                    }
                    for (p, words) in got.iter_mut().enumerate() {
                        if c.pdu[p].valid.val() && c.pdu[p].ready.val() {
                            words.push(c.pdu[p].data.val().to_u64());
                        }
                    }
                }
                if e.clock == 0 {
                    c.core_clock.next = e.rising.into();
                } else {
                    c.node_clock.next = e.rising.into();
                }
                assert!(simulate(&mut c, 1000));
                if e.clock == 0 && e.rising {
                    if c.verdict_done.val() {
                        assert!(asked, "periods {periods:?}: a verdict nobody asked for");
                        verdicts.push(c.verdict_pass.val().to_u64());
                        waits.push(core_edges - first_at.take().unwrap_or(core_edges));
                        asked = false;
                        frame += 1;
                        word = 0;
                    }
                    let w = frames.get(frame).map(|(p, f, _)| words(f, *p));
                    let offer = core_edges > 300 && !asked && w.as_ref().is_some_and(|w| word < w.len());
                    c.frames.valid.next = offer;
                    if offer && first_at.is_none() {
                        first_at = Some(core_edges);
                    }
                    c.frames.data.next = w.as_ref().map_or(0, |w| w.get(word).copied().unwrap_or(0)).into();
                    if offer && word + 1 == w.as_ref().unwrap().len() && c.frames.ready.val() {
                        asked = true;
                    }
                    assert!(simulate(&mut c, 1000));
                }
                assert!(clocks.now < 2_000_000_000, "periods {periods:?}: stuck at frame {frame}");
            }
            // The verdicts: a pass on its own port for each other EDP frame, none for a PDU.
            let want_verdicts: Vec<u64> = frames.iter().map(|(p, _, other)| if *other { 1 << p } else { 0 }).collect();
            assert_eq!(verdicts, want_verdicts, "periods {periods:?}");
            eprintln!(
                "periods {periods:?} ps (core, node): core clocks from a frame's first word to its verdict: {waits:?} \
                 (PDU, other EDP frame, PDU, other EDP frame)"
            );
            // The PDUs: those the reference sends, whole, on their ports.
            let mut want: [Vec<Vec<u8>>; 2] = Default::default();
            for (p, f, other) in &frames {
                for a in reference.handle_frame(0, *p, f).expect("a control frame") {
                    if let Action::Send { port, frame } = a {
                        if !other {
                            want[port].push(frame);
                        }
                    }
                }
            }
            for p in 0..2 {
                let mut sent = vec![];
                let mut cur = vec![];
                for &w in &got[p] {
                    cur.push(w);
                    if w >> 35 & 1 == 1 {
                        sent.push(bytes(&std::mem::take(&mut cur)));
                    }
                }
                assert_eq!(sent, want[p], "periods {periods:?}: PDUs out of port {p}");
            }
            // Status words through the crossing: received, forwarded, dropped; the state.
            let mut status = |c: &mut EapsNodeCrossing<2>, address: u64| {
                c.status_address.next = address.into();
                assert!(simulate(c, 1000));
                for _ in 0..400 {
                    if c.status_valid.val() {
                        return c.status_data.val().to_u32();
                    }
                    let e = clocks.next_edge();
                    if e.clock == 0 {
                        c.core_clock.next = e.rising.into();
                    } else {
                        c.node_clock.next = e.rising.into();
                    }
                    assert!(simulate(c, 1000));
                }
                panic!("periods {periods:?}: status word {address} did not cross");
            };
            let counters = reference.counters(0);
            let hw = [status(&mut c, 2), status(&mut c, 3), status(&mut c, 4)];
            assert_eq!(
                hw,
                [counters.rx as u32, counters.forwarded as u32, counters.dropped as u32],
                "periods {periods:?}"
            );
            let state = spotagg_hdl::eaps_node::state_code(status(&mut c, 0) & 0xf).unwrap().replace('-', "");
            assert_eq!(state, format!("{:?}", reference.state(0)), "periods {periods:?}");
        }
    }
}
