//! The EAPS node in hardware: docs/eaps.md §2–§5 for `D` domains on two ring ports, the same
//! transitions, PDUs and timers as the reference node `spotagg_spec::eaps::EapsNode`, which the
//! tests here and `sim/tests/eaps_hdl.rs` hold it to, frame for frame.
//!
//! One sequencer handles one event at a time, domain by domain in index order, exactly as the
//! reference's calls do: the rising edge of `enable`, a PDU from a port's [`EapsRx`], a change
//! of a port's `link_up`, or the timers that are due. Each domain step updates that domain's
//! registers in one clock and then emits its PDUs (at most one per port) through the shared
//! [`EapsTx`], the EDP sequence counting every PDU the node originates. A transit forwards a
//! PDU by emitting it again from its fields (§6.12). Another EDP frame on an enabled domain's
//! control VLAN (§11: what [`EapsRx`] holds with `other`) is not re-emitted: the node raises
//! `pass` for the port it arrived on, and the board's bridge sends the frame it has just
//! received unchanged out of the other ring port, as the reference does; a master only for a
//! valid ESL PDU newer than the last it passed from that sender ([`crate::eaps_esl`], §2).
//!
//! Time is the input `now`, a free-running count of time units (1 ns in the simulations, any
//! unit on a board: the periods in [`EapsDomainCfg`] use the same unit). A timer is a
//! deadline register, due when `now - deadline` is not negative as a 32-bit two's-complement
//! number, so periods must stay below 2^31 units.
//!
//! Status (`status_address` → `status_data`, combinational): domain `d` at `16·d + r` with
//! `r` = 0 state code ([`state_code`]) | forwarding bits << 4 | master << 8 | primary << 9 |
//! active << 10, 1 PDUs sent, 2 received, 3 forwarded, 4 dropped, 5 time of the last
//! transition, 6 its cause ([`cause`]), 7..=10 the hello, fail, pre-forwarding 0 and 1
//! deadlines, 11 armed bits (hello, fail, pre-forwarding 0, 1, other master), 12 hello
//! sequence, 13 other-master deadline, 14 malformed frames (docs/eaps.md §1.1) of bad length |
//! unsupported version << 16, 15 of bad checksum | bad TLV list << 16; 0xf0 EDP sequence, 0xf1 link state as acted on | busy
//! << 2, 0xf2 port 0 rejected | overruns << 16, 0xf3 the same for port 1.

use crate::byte_stream::{ByteSink, ByteSource};
use crate::eaps_esl::{EslCheck, EslSeen};
use crate::eaps_pdu::{EapsRx, EapsTx};
use crate::eaps_step::{DomainStep, HeldPdu, PduPlan};
use rust_hdl::prelude::*;

// A domain's types, at their old paths too.
pub use crate::eaps::domain::{cause, DomCfg, DomRegs, DomState, EapsDomainCfg, EapsDomainCfgSource, Event};

/// A domain's counters and its last transition (status words 1..=6).
#[derive(Copy, Clone, Debug, PartialEq, Default, LogicStruct)]
pub struct DomCounts {
    /// PDUs sent.
    pub tx: Bits<32>,
    /// Received.
    pub rx: Bits<32>,
    /// Forwarded.
    pub forwarded: Bits<32>,
    /// Dropped.
    pub dropped: Bits<32>,
    /// Malformed EDP frames by reason (docs/eaps.md §1.1): length, version, checksum, TLV list
    /// (16 bits each, wrapping).
    pub malformed_length: Bits<16>,
    /// Of an unsupported EDP or EAPS version.
    pub malformed_version: Bits<16>,
    /// With a bad EDP checksum.
    pub malformed_checksum: Bits<16>,
    /// With a bad TLV list.
    pub malformed_tlv: Bits<16>,
    /// Time of the last transition.
    pub transition_time: Bits<32>,
    /// Its cause ([`cause`]).
    pub transition_cause: Bits<4>,
}

/// The numeric state in status word 0 (0 Idle, 1 Init, 2 Complete, 3 Failed, 4 Links-Up,
/// 5 Links-Down, 6 Pre-Forwarding); the PDU's state field is this minus one (Idle and Init
/// both 0).
pub fn state_code(code: u32) -> Option<&'static str> {
    ["Idle", "Init", "Complete", "Failed", "Links-Up", "Links-Down", "Pre-Forwarding"].get(code as usize).copied()
}

/// What the sequencer is doing.
#[derive(Copy, Clone, Debug, PartialEq, Eq, LogicState)]
pub enum NodePhase {
    /// Waiting for an event.
    Idle,
    /// Before each domain step: the domain's registers, counters, configuration and due
    /// timers chosen by `dom` into registers (and, for a PDU, its fields held for the ESL
    /// table's registered answer), so that the step starts from flip-flops.
    Load,
    /// One domain step: update its registers, plan its PDUs.
    Step,
    /// Start the next planned PDU.
    Send,
    /// Wait for the emitter.
    SendWait,
}

/// The EAPS node of `D` domains (1..=15).
#[derive(LogicBlock)]
pub struct EapsNode<const D: usize> {
    /// Clock.
    pub clock: Signal<In, Clock>,
    /// Time, in the unit of the periods.
    pub now: Signal<In, Bits<32>>,
    /// The node's system MAC.
    pub system_mac: Signal<In, Bits<48>>,
    /// Enable every active domain (rising edge; configuration must be in place).
    pub enable: Signal<In, Bit>,
    /// Link state of ports 0 (bit 0) and 1.
    pub link_up: Signal<In, Bits<2>>,
    /// The domains' configuration.
    pub cfg: [EapsDomainCfg; D],
    /// Port 0's received PDU candidates.
    pub rx0: ByteSink,
    /// Port 1's.
    pub rx1: ByteSink,
    /// PDUs out of port 0.
    pub tx0: ByteSource,
    /// PDUs out of port 1.
    pub tx1: ByteSource,
    /// Forwarding of domain `d`'s protected VLANs on port `p`: bit `2d + p`.
    pub forwarding: Signal<Out, Bits<32>>,
    /// Flush the FDB of domain `d`: bit `d`, one clock.
    pub flush: Signal<Out, Bits<16>>,
    /// An alert (one clock).
    pub alert: Signal<Out, Bit>,
    /// The alert is a second master (else the fail timer expired).
    pub alert_second_master: Signal<Out, Bit>,
    /// The alert's domain.
    pub alert_domain: Signal<Out, Bits<4>>,
    /// The second master's system MAC.
    pub alert_mac: Signal<Out, Bits<48>>,
    /// Pass the frame that last ended on port `p` (bit `p`) unchanged out of the other ring
    /// port: another EDP frame on an enabled domain's control VLAN whose other port is up
    /// (docs/eaps.md §11), at a master only one the pass rule lets through (§2). One clock, a few clocks after the frame's last byte when the node is
    /// idle, later when it is busy with another event; never for a frame counted as an overrun.
    pub pass: Signal<Out, Bits<2>>,
    /// Nothing pending or in progress (no event, no due timer).
    pub idle: Signal<Out, Bit>,
    /// Status word address.
    pub status_address: Signal<In, Bits<8>>,
    /// Status word.
    pub status_data: Signal<Out, Bits<32>>,
    pdu_rx: [EapsRx; 2],
    pdu_tx: EapsTx,
    // The master's pass rule (docs/eaps.md §2): each port's frame checked as an ESL PDU, and
    // the table of senders passed.
    esl: [EslCheck; 2],
    seen: EslSeen,
    held_esl_mac: Signal<Local, Bits<48>>,
    held_esl_seq: Signal<Local, Bits<16>>,
    enabled: DFF<Bit>,
    link_q: DFF<Bits<2>>,
    edp_seq: DFF<Bits<16>>,
    phase: DFF<NodePhase>,
    /// The event being handled.
    event_kind: DFF<Event>,
    /// The port of a link event or a PDU.
    event_port: DFF<Bit>,
    /// Take the held frame of port `event_port` this clock (set by the step that finished with
    /// it: the take, which loads the port's ~180 hold registers, then starts from flip-flops).
    take_held: DFF<Bit>,
    /// The domain being stepped.
    dom: DFF<Bits<4>>,
    /// The timer an `Event::Timers` step looks at (the step's `step`).
    step: DFF<Bits<2>>,
    /// The PDU the step planned, while the emitter sends it.
    send: DFF<PduPlan>,
    flush_q: DFF<Bits<16>>,
    alert_q: DFF<Bit>,
    alert_sm_q: DFF<Bit>,
    alert_dom_q: DFF<Bits<4>>,
    alert_mac_q: DFF<Bits<48>>,
    pass_q: DFF<Bits<2>>,
    // Each domain's protocol registers, one array a field ([`DomRegs`]): rust-hdl cannot take
    // a field of an array element's value inside a loop, and the timers are compared domain by
    // domain.
    state: [DFF<DomState>; D],
    fwd: [DFFWithInit<Bits<2>>; D],
    hello_seq: [DFF<Bits<16>>; D],
    armed: [DFF<Bits<5>>; D],
    hello_at: [DFF<Bits<32>>; D],
    fail_at: [DFF<Bits<32>>; D],
    pf0_at: [DFF<Bits<32>>; D],
    pf1_at: [DFF<Bits<32>>; D],
    om_at: [DFF<Bits<32>>; D],
    counts: [DFF<DomCounts>; D],
    /// The domain step, on the registered domain.
    dstep: DomainStep,
    // The domain `dom` names: selected combinationally (`sel_`), registered in NodePhase::Load
    // (`cur_`).
    sel_regs: Signal<Local, DomRegs>,
    sel_counts: Signal<Local, DomCounts>,
    sel_cfg: Signal<Local, DomCfg>,
    sel_due: Signal<Local, Bits<4>>,
    cur_regs_q: DFF<DomRegs>,
    cur_counts_q: DFF<DomCounts>,
    cur_cfg_q: DFF<DomCfg>,
    cur_due_q: DFF<Bits<4>>,
    /// The registered domain is `dom`'s (Step, Send, SendWait).
    cur_valid: Signal<Local, Bit>,
    // The current domain's registers, counters and configuration, and what the step makes of them.
    cur_regs: Signal<Local, DomRegs>,
    cur_counts: Signal<Local, DomCounts>,
    cur_cfg: Signal<Local, DomCfg>,
    new_counts: Signal<Local, DomCounts>,
    /// The event's port, as a mask.
    event_port_mask: Signal<Local, Bits<2>>,
    any_due: Signal<Local, Bit>,
    // The held frame at the port being (or about to be) handled, and the first active domain
    // whose control VLAN is its VLAN.
    held: Signal<Local, HeldPdu>,
    held_dom_hit: Signal<Local, Bit>,
    held_dom: Signal<Local, Bits<4>>,
    write: Signal<Local, Bit>,
    stat_state_code: Signal<Local, Bits<32>>,
    next_dom: Signal<Local, Bits<5>>,
    domains: Constant<Bits<5>>,
    no_regs: Constant<DomRegs>,
    no_counts: Constant<DomCounts>,
    no_cfg: Constant<DomCfg>,
    n_flush: Signal<Local, Bits<16>>,
    tx_inc: Signal<Local, Bit>,
    /// The port of the held frame, and as a mask.
    held_port: Signal<Local, Bit>,
    held_port_mask: Signal<Local, Bits<2>>,
    /// Each domain's due timers (bits hello, fail, pre-forwarding 0, 1).
    due: [Signal<Local, Bits<4>>; D],
    /// The registered domain's.
    cur_due: Signal<Local, Bits<4>>,
    // Each timer's `now - deadline`: due when not negative.
    hello_late: [Signal<Local, Bits<32>>; D],
    fail_late: [Signal<Local, Bits<32>>; D],
    pf0_late: [Signal<Local, Bits<32>>; D],
    pf1_late: [Signal<Local, Bits<32>>; D],
    // The domain the status address names.
    stat_dom_hit: Signal<Local, Bit>,
    stat_regs: Signal<Local, DomRegs>,
    stat_counts: Signal<Local, DomCounts>,
    stat_cfg_bits: Signal<Local, Bits<3>>,
}

impl<const D: usize> Default for EapsNode<D> {
    fn default() -> Self {
        assert!((1..=15).contains(&D), "EAPS domains {D}: the node supports 1..=15");
        Self {
            clock: Default::default(),
            now: Default::default(),
            system_mac: Default::default(),
            enable: Default::default(),
            link_up: Default::default(),
            cfg: std::array::from_fn(|_| Default::default()),
            rx0: Default::default(),
            rx1: Default::default(),
            tx0: Default::default(),
            tx1: Default::default(),
            forwarding: Default::default(),
            flush: Default::default(),
            alert: Default::default(),
            alert_second_master: Default::default(),
            alert_domain: Default::default(),
            alert_mac: Default::default(),
            pass: Default::default(),
            idle: Default::default(),
            status_address: Default::default(),
            status_data: Default::default(),
            pdu_rx: Default::default(),
            pdu_tx: Default::default(),
            esl: Default::default(),
            seen: Default::default(),
            held_esl_mac: Default::default(),
            held_esl_seq: Default::default(),
            enabled: Default::default(),
            link_q: Default::default(),
            edp_seq: Default::default(),
            phase: Default::default(),
            event_kind: Default::default(),
            event_port: Default::default(),
            take_held: Default::default(),
            dom: Default::default(),
            step: Default::default(),
            send: Default::default(),
            flush_q: Default::default(),
            alert_q: Default::default(),
            alert_sm_q: Default::default(),
            alert_dom_q: Default::default(),
            alert_mac_q: Default::default(),
            pass_q: Default::default(),
            state: std::array::from_fn(|_| Default::default()),
            fwd: std::array::from_fn(|_| DFFWithInit::new(3.into())),
            hello_seq: std::array::from_fn(|_| Default::default()),
            armed: std::array::from_fn(|_| Default::default()),
            hello_at: std::array::from_fn(|_| Default::default()),
            fail_at: std::array::from_fn(|_| Default::default()),
            pf0_at: std::array::from_fn(|_| Default::default()),
            pf1_at: std::array::from_fn(|_| Default::default()),
            om_at: std::array::from_fn(|_| Default::default()),
            counts: std::array::from_fn(|_| Default::default()),
            dstep: Default::default(),
            sel_regs: Default::default(),
            sel_counts: Default::default(),
            sel_cfg: Default::default(),
            sel_due: Default::default(),
            cur_regs_q: Default::default(),
            cur_counts_q: Default::default(),
            cur_cfg_q: Default::default(),
            cur_due_q: Default::default(),
            cur_valid: Default::default(),
            cur_regs: Default::default(),
            cur_counts: Default::default(),
            cur_cfg: Default::default(),
            new_counts: Default::default(),
            event_port_mask: Default::default(),
            any_due: Default::default(),
            held: Default::default(),
            held_dom_hit: Default::default(),
            held_dom: Default::default(),
            write: Default::default(),
            stat_state_code: Default::default(),
            next_dom: Default::default(),
            domains: Constant::new((D as u64).into()),
            no_regs: Constant::new(DomRegs::default()),
            no_counts: Constant::new(DomCounts::default()),
            no_cfg: Constant::new(DomCfg::default()),
            n_flush: Default::default(),
            tx_inc: Default::default(),
            held_port: Default::default(),
            held_port_mask: Default::default(),
            due: std::array::from_fn(|_| Default::default()),
            cur_due: Default::default(),
            hello_late: std::array::from_fn(|_| Default::default()),
            fail_late: std::array::from_fn(|_| Default::default()),
            pf0_late: std::array::from_fn(|_| Default::default()),
            pf1_late: std::array::from_fn(|_| Default::default()),
            stat_dom_hit: Default::default(),
            stat_regs: Default::default(),
            stat_counts: Default::default(),
            stat_cfg_bits: Default::default(),
        }
    }
}

impl<const D: usize> Logic for EapsNode<D> {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self,
            clock,
            take_held,
            enabled,
            link_q,
            edp_seq,
            phase,
            event_kind,
            event_port,
            dom,
            step,
            send,
            flush_q,
            alert_q,
            alert_sm_q,
            alert_dom_q,
            alert_mac_q,
            pass_q,
            cur_regs_q,
            cur_counts_q,
            cur_cfg_q,
            cur_due_q
        );
        for i in 0..D {
            self.state[i].clock.next = self.clock.val();
            self.state[i].d.next = self.state[i].q.val();
            self.fwd[i].clock.next = self.clock.val();
            self.fwd[i].d.next = self.fwd[i].q.val();
            self.hello_seq[i].clock.next = self.clock.val();
            self.hello_seq[i].d.next = self.hello_seq[i].q.val();
            self.armed[i].clock.next = self.clock.val();
            self.armed[i].d.next = self.armed[i].q.val();
            self.hello_at[i].clock.next = self.clock.val();
            self.hello_at[i].d.next = self.hello_at[i].q.val();
            self.fail_at[i].clock.next = self.clock.val();
            self.fail_at[i].d.next = self.fail_at[i].q.val();
            self.pf0_at[i].clock.next = self.clock.val();
            self.pf0_at[i].d.next = self.pf0_at[i].q.val();
            self.pf1_at[i].clock.next = self.clock.val();
            self.pf1_at[i].d.next = self.pf1_at[i].q.val();
            self.om_at[i].clock.next = self.clock.val();
            self.om_at[i].d.next = self.om_at[i].q.val();
            self.counts[i].clock.next = self.clock.val();
            self.counts[i].d.next = self.counts[i].q.val();
        }
        self.pdu_rx[0].clock.next = self.clock.val();
        self.pdu_rx[1].clock.next = self.clock.val();
        self.pdu_tx.clock.next = self.clock.val();
        ByteSink::link(&mut self.rx0, &mut self.pdu_rx[0].rx);
        ByteSink::link(&mut self.rx1, &mut self.pdu_rx[1].rx);
        ByteSource::link(&mut self.tx0, &mut self.pdu_tx.tx0);
        ByteSource::link(&mut self.tx1, &mut self.pdu_tx.tx1);
        self.pdu_rx[0].take.next = self.take_held.q.val() & !self.event_port.q.val();
        self.pdu_rx[1].take.next = self.take_held.q.val() & self.event_port.q.val();
        self.take_held.d.next = false;
        self.pdu_tx.start.next = false;
        // (Port 1 unless the plan's mask has port 0; a field's bit is not selectable in rust-hdl's
        // Verilog, hence the mask compare.)
        self.pdu_tx.port.next = (self.send.q.val().mask & 1) == 0;
        self.flush_q.d.next = 0.into();
        self.alert_q.d.next = false;
        self.pass_q.d.next = 0.into();
        self.pass.next = self.pass_q.q.val();
        self.flush.next = self.flush_q.q.val();
        self.alert.next = self.alert_q.q.val();
        self.alert_second_master.next = self.alert_sm_q.q.val();
        self.alert_domain.next = self.alert_dom_q.q.val();
        self.alert_mac.next = self.alert_mac_q.q.val();

        // Each domain's timers: due when now - deadline >= 0 (bits hello, fail, pf0, pf1).
        self.forwarding.next = 0.into();
        self.any_due.next = false;
        for i in 0..D {
            self.forwarding.next = self.forwarding.val().replace_bit(2 * i, self.fwd[i].q.val().get_bit(0));
            self.forwarding.next = self.forwarding.val().replace_bit(2 * i + 1, self.fwd[i].q.val().get_bit(1));
            self.hello_late[i].next = self.now.val() - self.hello_at[i].q.val();
            self.fail_late[i].next = self.now.val() - self.fail_at[i].q.val();
            self.pf0_late[i].next = self.now.val() - self.pf0_at[i].q.val();
            self.pf1_late[i].next = self.now.val() - self.pf1_at[i].q.val();
            self.due[i].next = 0.into();
            self.due[i].next = self.due[i]
                .val()
                .replace_bit(0, self.armed[i].q.val().get_bit(0) & !self.hello_late[i].val().get_bit(31));
            self.due[i].next = self.due[i]
                .val()
                .replace_bit(1, self.armed[i].q.val().get_bit(1) & !self.fail_late[i].val().get_bit(31));
            self.due[i].next = self.due[i]
                .val()
                .replace_bit(2, self.armed[i].q.val().get_bit(2) & !self.pf0_late[i].val().get_bit(31));
            self.due[i].next = self.due[i]
                .val()
                .replace_bit(3, self.armed[i].q.val().get_bit(3) & !self.pf1_late[i].val().get_bit(31));
            if self.due[i].val().any() {
                self.any_due.next = true;
            }
        }

        // The domain `dom` names, chosen; the step reads it from the registers Load fills.
        self.sel_regs.next = self.no_regs.val();
        self.sel_counts.next = self.no_counts.val();
        self.sel_cfg.next = self.no_cfg.val();
        self.sel_due.next = 0.into();
        for i in 0..D {
            if self.dom.q.val().index() == i {
                self.sel_regs.next.state = self.state[i].q.val();
                self.sel_regs.next.fwd = self.fwd[i].q.val();
                self.sel_regs.next.hello_seq = self.hello_seq[i].q.val();
                self.sel_regs.next.armed = self.armed[i].q.val();
                self.sel_regs.next.hello_at = self.hello_at[i].q.val();
                self.sel_regs.next.fail_at = self.fail_at[i].q.val();
                self.sel_regs.next.pf0_at = self.pf0_at[i].q.val();
                self.sel_regs.next.pf1_at = self.pf1_at[i].q.val();
                self.sel_regs.next.om_at = self.om_at[i].q.val();
                self.sel_counts.next = self.counts[i].q.val();
                self.sel_due.next = self.due[i].val();
                self.sel_cfg.next.active = self.cfg[i].active.val();
                self.sel_cfg.next.master = self.cfg[i].master.val();
                self.sel_cfg.next.primary = self.cfg[i].primary.val();
                self.sel_cfg.next.send_alert = self.cfg[i].send_alert.val();
                self.sel_cfg.next.control_vlan = self.cfg[i].control_vlan.val();
                self.sel_cfg.next.hello = self.cfg[i].hello.val();
                self.sel_cfg.next.fail = self.cfg[i].fail.val();
                self.sel_cfg.next.pre_forwarding = self.cfg[i].pre_forwarding.val();
                self.sel_cfg.next.hello_field = self.cfg[i].hello_field.val();
                self.sel_cfg.next.fail_field = self.cfg[i].fail_field.val();
            }
        }
        self.cur_valid.next = (self.phase.q.val() == NodePhase::Step)
            | (self.phase.q.val() == NodePhase::Send)
            | (self.phase.q.val() == NodePhase::SendWait);
        if self.phase.q.val() == NodePhase::Load {
            self.cur_regs_q.d.next = self.sel_regs.val();
            self.cur_counts_q.d.next = self.sel_counts.val();
            self.cur_cfg_q.d.next = self.sel_cfg.val();
            self.cur_due_q.d.next = self.sel_due.val();
        }
        self.cur_regs.next = self.cur_regs_q.q.val();
        self.cur_counts.next = self.cur_counts_q.q.val();
        self.cur_cfg.next = self.cur_cfg_q.q.val();
        self.cur_due.next = self.cur_due_q.q.val();
        self.event_port_mask.next = 1.into();
        if self.event_port.q.val() {
            self.event_port_mask.next = 2.into();
        }

        // The PDU at the port being (or about to be) handled, and its domain.
        self.held_port.next = self.event_port.q.val();
        if self.phase.q.val() == NodePhase::Idle {
            self.held_port.next = !self.pdu_rx[0].full.val();
        }
        self.held_port_mask.next = 1.into();
        if self.held_port.val() {
            self.held_port_mask.next = 2.into();
        }
        self.held.next.vid = 0.into();
        self.held.next.eaps_type = 0.into();
        self.held.next.control_vlan = 0.into();
        self.held.next.system_mac = 0.into();
        self.held.next.other = false;
        self.held.next.state = 0.into();
        self.held.next.malformed = 0.into();
        for p in 0..2 {
            if self.held_port_mask.val().get_bit(p) {
                self.held.next.state = self.pdu_rx[p].pdu.state.val();
                self.held.next.malformed = self.pdu_rx[p].malformed.val();
                self.held.next.vid = self.pdu_rx[p].vid.val();
                self.held.next.eaps_type = self.pdu_rx[p].pdu.eaps_type.val();
                self.held.next.control_vlan = self.pdu_rx[p].pdu.control_vlan.val();
                self.held.next.system_mac = self.pdu_rx[p].pdu.system_mac.val();
                self.held.next.other = self.pdu_rx[p].other.val();
            }
        }
        self.held.next.esl_ok = false;
        self.held_esl_mac.next = 0.into();
        self.held_esl_seq.next = 0.into();
        for p in 0..2 {
            if self.held_port_mask.val().get_bit(p) {
                self.held.next.esl_ok = self.esl[p].ok.val();
                self.held_esl_mac.next = self.esl[p].mac.val();
                self.held_esl_seq.next = self.esl[p].seq.val();
            }
        }
        self.held_dom_hit.next = false;
        self.held_dom.next = 0.into();
        for i in 0..D {
            if !self.held_dom_hit.val()
                & self.cfg[i].active.val()
                & (self.cfg[i].control_vlan.val() == self.held.val().vid)
            {
                self.held_dom_hit.next = true;
                self.held_dom.next = i.to_bits();
            }
        }

        // The emitter's fields: a forwarded PDU's own, or this node's.
        self.pdu_tx.pdu.src.next = self.system_mac.val();
        self.pdu_tx.pdu.pcp.next = 7.into();
        self.pdu_tx.pdu.edp_seq.next = self.edp_seq.q.val();
        self.pdu_tx.pdu.eaps_type.next = self.send.q.val().eaps_type;
        self.pdu_tx.pdu.control_vlan.next = bit_cast::<16, 12>(self.cur_cfg.val().control_vlan);
        self.pdu_tx.pdu.system_mac.next = self.system_mac.val();
        self.pdu_tx.pdu.hello_timer.next = self.cur_cfg.val().hello_field;
        self.pdu_tx.pdu.fail_timer.next = self.cur_cfg.val().fail_field;
        self.pdu_tx.pdu.state.next = self.send.q.val().state;
        self.pdu_tx.pdu.hello_seq.next = self.cur_regs.val().hello_seq;
        for p in 0..2 {
            if self.send.q.val().forward & self.event_port_mask.val().get_bit(p) {
                self.pdu_tx.pdu.src.next = self.pdu_rx[p].pdu.src.val();
                self.pdu_tx.pdu.pcp.next = self.pdu_rx[p].pdu.pcp.val();
                self.pdu_tx.pdu.edp_seq.next = self.pdu_rx[p].pdu.edp_seq.val();
                self.pdu_tx.pdu.eaps_type.next = self.pdu_rx[p].pdu.eaps_type.val();
                self.pdu_tx.pdu.control_vlan.next = self.pdu_rx[p].pdu.control_vlan.val();
                self.pdu_tx.pdu.system_mac.next = self.pdu_rx[p].pdu.system_mac.val();
                self.pdu_tx.pdu.hello_timer.next = self.pdu_rx[p].pdu.hello_timer.val();
                self.pdu_tx.pdu.fail_timer.next = self.pdu_rx[p].pdu.fail_timer.val();
                self.pdu_tx.pdu.state.next = self.pdu_rx[p].pdu.state.val();
                self.pdu_tx.pdu.hello_seq.next = self.pdu_rx[p].pdu.hello_seq.val();
            }
        }

        // One domain step (written back in NodePhase::Step).
        self.dstep.event_kind.next = self.event_kind.q.val();
        self.dstep.step.next = self.step.q.val();
        self.dstep.port.next = self.event_port.q.val();
        self.dstep.link.next = self.link_q.q.val();
        self.dstep.now.next = self.now.val();
        self.dstep.system_mac.next = self.system_mac.val();
        self.dstep.regs.next = self.cur_regs.val();
        self.dstep.cfg.next = self.cur_cfg.val();
        self.dstep.due.next = self.cur_due.val();
        self.dstep.pdu.next = self.held.val();
        self.dstep.esl_pass.next = self.seen.pass.val();
        // Its alert registers follow it in every phase; the pulse only when it is written.
        if self.dstep.alert.val() {
            self.alert_sm_q.d.next = self.dstep.alert_second_master.val();
            self.alert_dom_q.d.next = self.dom.q.val();
            if self.dstep.alert_second_master.val() {
                self.alert_mac_q.d.next = self.held.val().system_mac;
            }
        }

        // The sequencer.
        self.write.next = false;
        self.tx_inc.next = false;
        self.next_dom.next = bit_cast::<5, 4>(self.dom.q.val()) + 1;
        match self.phase.q.val() {
            NodePhase::Idle => {
                if self.take_held.q.val() {
                    // The frame just handled is taken this clock: nothing else starts.
                    self.phase.d.next = NodePhase::Idle;
                } else if self.enable.val() & !self.enabled.q.val() {
                    self.enabled.d.next = true;
                    self.event_kind.d.next = Event::Enable;
                    self.dom.d.next = 0.into();
                    self.step.d.next = 0.into();
                    self.phase.d.next = NodePhase::Load;
                } else if self.pdu_rx[0].full.val() | self.pdu_rx[1].full.val() {
                    self.event_port.d.next = self.held_port.val();
                    self.event_kind.d.next = Event::Frame;
                    self.dom.d.next = self.held_dom.val();
                    self.step.d.next = 0.into();
                    if self.held_dom_hit.val() {
                        self.phase.d.next = NodePhase::Load;
                    } else {
                        self.take_held.d.next = true;
                    }
                } else if self.link_up.val().get_bit(0) != self.link_q.q.val().get_bit(0) {
                    self.link_q.d.next = self.link_q.q.val().replace_bit(0, self.link_up.val().get_bit(0));
                    self.event_port.d.next = false;
                    self.event_kind.d.next = Event::LinkDown;
                    if self.link_up.val().get_bit(0) {
                        self.event_kind.d.next = Event::LinkUp;
                    }
                    self.dom.d.next = 0.into();
                    self.step.d.next = 0.into();
                    self.phase.d.next = NodePhase::Load;
                } else if self.link_up.val().get_bit(1) != self.link_q.q.val().get_bit(1) {
                    self.link_q.d.next = self.link_q.q.val().replace_bit(1, self.link_up.val().get_bit(1));
                    self.event_port.d.next = true;
                    self.event_kind.d.next = Event::LinkDown;
                    if self.link_up.val().get_bit(1) {
                        self.event_kind.d.next = Event::LinkUp;
                    }
                    self.dom.d.next = 0.into();
                    self.step.d.next = 0.into();
                    self.phase.d.next = NodePhase::Load;
                } else if self.any_due.val() {
                    self.event_kind.d.next = Event::Timers;
                    self.dom.d.next = 0.into();
                    self.step.d.next = 0.into();
                    self.phase.d.next = NodePhase::Load;
                }
            }
            NodePhase::Load => {
                self.phase.d.next = NodePhase::Step;
            }
            NodePhase::Step => {
                self.write.next = true;
                // The next step of this domain, and its PDUs, see what this one wrote.
                self.cur_regs_q.d.next = self.dstep.next_regs.val();
                self.send.d.next = self.dstep.send.val();
                if self.dstep.send.val().mask.any() {
                    self.phase.d.next = NodePhase::Send;
                } else if self.event_kind.q.val() == Event::Frame {
                    self.take_held.d.next = true;
                    self.phase.d.next = NodePhase::Idle;
                } else if !self.dstep.last_step.val() {
                    // The same domain's next timer: its registers are in cur_regs_q already.
                    self.step.d.next = self.step.q.val() + 1;
                } else if self.next_dom.val() < self.domains.val() {
                    self.dom.d.next = self.dom.q.val() + 1;
                    self.step.d.next = 0.into();
                    self.phase.d.next = NodePhase::Load;
                } else {
                    self.phase.d.next = NodePhase::Idle;
                }
            }
            NodePhase::Send => {
                self.pdu_tx.start.next = true;
                self.phase.d.next = NodePhase::SendWait;
            }
            NodePhase::SendWait => {
                if self.pdu_tx.done.val() {
                    if !self.send.q.val().forward {
                        self.edp_seq.d.next = self.edp_seq.q.val() + 1;
                        self.tx_inc.next = true;
                    }
                    if self.send.q.val().mask == 3 {
                        self.send.d.next.mask = 2.into();
                        self.phase.d.next = NodePhase::Send;
                    } else if self.event_kind.q.val() == Event::Frame {
                        self.take_held.d.next = true;
                        self.phase.d.next = NodePhase::Idle;
                    } else if !self.dstep.last_step.val() {
                        self.step.d.next = self.step.q.val() + 1;
                        self.phase.d.next = NodePhase::Load;
                    } else if self.next_dom.val() < self.domains.val() {
                        self.dom.d.next = self.dom.q.val() + 1;
                        self.step.d.next = 0.into();
                        self.phase.d.next = NodePhase::Load;
                    } else {
                        self.phase.d.next = NodePhase::Idle;
                    }
                }
            }
        }

        // Write the step back, and the outputs it pulses.
        self.new_counts.next = self.cur_counts.val();
        if self.write.val() {
            if self.dstep.inc_rx.val() {
                self.new_counts.next.rx = self.cur_counts.val().rx + 1;
            }
            if self.dstep.inc_fwd.val() {
                self.new_counts.next.forwarded = self.cur_counts.val().forwarded + 1;
            }
            if self.dstep.inc_drop.val() {
                self.new_counts.next.dropped = self.cur_counts.val().dropped + 1;
            }
            match self.dstep.inc_malformed.val().index() {
                1 => {
                    self.new_counts.next.malformed_length = self.cur_counts.val().malformed_length + 1;
                }
                2 => {
                    self.new_counts.next.malformed_version = self.cur_counts.val().malformed_version + 1;
                }
                3 => {
                    self.new_counts.next.malformed_checksum = self.cur_counts.val().malformed_checksum + 1;
                }
                4 => {
                    self.new_counts.next.malformed_tlv = self.cur_counts.val().malformed_tlv + 1;
                }
                _ => {}
            }
            if self.dstep.next_regs.val().state != self.cur_regs.val().state {
                self.new_counts.next.transition_time = self.now.val();
                self.new_counts.next.transition_cause = self.dstep.cause.val();
            }
        }
        if self.tx_inc.val() {
            self.new_counts.next.tx = self.cur_counts.val().tx + 1;
        }
        self.n_flush.next = 0.into();
        for i in 0..D {
            if self.dom.q.val().index() == i {
                if self.write.val() {
                    self.state[i].d.next = self.dstep.next_regs.val().state;
                    self.fwd[i].d.next = self.dstep.next_regs.val().fwd;
                    self.hello_seq[i].d.next = self.dstep.next_regs.val().hello_seq;
                    self.armed[i].d.next = self.dstep.next_regs.val().armed;
                    self.hello_at[i].d.next = self.dstep.next_regs.val().hello_at;
                    self.fail_at[i].d.next = self.dstep.next_regs.val().fail_at;
                    self.pf0_at[i].d.next = self.dstep.next_regs.val().pf0_at;
                    self.pf1_at[i].d.next = self.dstep.next_regs.val().pf1_at;
                    self.om_at[i].d.next = self.dstep.next_regs.val().om_at;
                    self.n_flush.next = self.n_flush.val().replace_bit(i, self.dstep.flush.val());
                }
                if self.cur_valid.val() {
                    self.counts[i].d.next = self.new_counts.val();
                }
            }
        }
        if self.cur_valid.val() {
            self.cur_counts_q.d.next = self.new_counts.val();
        }
        self.flush_q.d.next = self.n_flush.val();
        if self.write.val() & self.dstep.pass.val() {
            self.pass_q.d.next = self.event_port_mask.val();
        }
        // The master's pass rule: the ESL checks hold the frame EapsRx holds (loaded when
        // nothing is held or what is held is taken this clock); the table records a pass.
        self.seen.clock.next = self.clock.val();
        self.seen.now.next = self.now.val();
        self.seen.dom.next = self.dom.q.val();
        self.seen.mac.next = self.held_esl_mac.val();
        self.seen.seq.next = self.held_esl_seq.val();
        self.seen.age.next = self.cur_cfg.val().fail;
        self.seen.write.next = self.write.val() & self.dstep.esl_write.val();
        self.esl[0].clock.next = self.clock.val();
        self.esl[0].data.next = self.rx0.data.val();
        self.esl[0].valid.next = self.rx0.valid.val();
        self.esl[0].last.next = self.rx0.last.val();
        self.esl[0].load.next = !self.pdu_rx[0].full.val() | self.pdu_rx[0].take.val();
        self.esl[1].clock.next = self.clock.val();
        self.esl[1].data.next = self.rx1.data.val();
        self.esl[1].valid.next = self.rx1.valid.val();
        self.esl[1].last.next = self.rx1.last.val();
        self.esl[1].load.next = !self.pdu_rx[1].full.val() | self.pdu_rx[1].take.val();
        self.alert_q.d.next = self.write.val() & self.dstep.alert.val();

        self.idle.next = (self.phase.q.val() == NodePhase::Idle)
            & !self.pdu_rx[0].full.val()
            & !self.pdu_rx[1].full.val()
            & !self.pdu_rx[0].pending.val()
            & !self.pdu_rx[1].pending.val()
            & (self.link_up.val() == self.link_q.q.val())
            & !(self.enable.val() & !self.enabled.q.val())
            & !self.any_due.val()
            & !self.pdu_tx.busy.val();

        // Status words.
        self.status_data.next = 0.into();
        self.stat_state_code.next = 0.into();
        self.stat_dom_hit.next = false;
        self.stat_regs.next = self.no_regs.val();
        self.stat_counts.next = self.no_counts.val();
        self.stat_cfg_bits.next = 0.into();
        for i in 0..D {
            if self.status_address.val().get_bits::<4>(4).index() == i {
                self.stat_regs.next.state = self.state[i].q.val();
                self.stat_regs.next.fwd = self.fwd[i].q.val();
                self.stat_regs.next.hello_seq = self.hello_seq[i].q.val();
                self.stat_regs.next.armed = self.armed[i].q.val();
                self.stat_regs.next.hello_at = self.hello_at[i].q.val();
                self.stat_regs.next.fail_at = self.fail_at[i].q.val();
                self.stat_regs.next.pf0_at = self.pf0_at[i].q.val();
                self.stat_regs.next.pf1_at = self.pf1_at[i].q.val();
                self.stat_regs.next.om_at = self.om_at[i].q.val();
                self.stat_counts.next = self.counts[i].q.val();
                self.stat_cfg_bits.next = self.stat_cfg_bits.val().replace_bit(0, self.cfg[i].master.val());
                self.stat_cfg_bits.next = self.stat_cfg_bits.val().replace_bit(1, self.cfg[i].primary.val());
                self.stat_cfg_bits.next = self.stat_cfg_bits.val().replace_bit(2, self.cfg[i].active.val());
                self.stat_dom_hit.next = true;
            }
        }
        match self.stat_regs.val().state {
            DomState::Idle => {
                self.stat_state_code.next = 0.into();
            }
            DomState::Init => {
                self.stat_state_code.next = 1.into();
            }
            DomState::Complete => {
                self.stat_state_code.next = 2.into();
            }
            DomState::Failed => {
                self.stat_state_code.next = 3.into();
            }
            DomState::LinksUp => {
                self.stat_state_code.next = 4.into();
            }
            DomState::LinksDown => {
                self.stat_state_code.next = 5.into();
            }
            DomState::PreForwarding => {
                self.stat_state_code.next = 6.into();
            }
        }
        if self.stat_dom_hit.val() {
            match self.status_address.val().get_bits::<4>(0).index() {
                0 => {
                    self.status_data.next = self.stat_state_code.val()
                        | (bit_cast::<32, 2>(self.stat_regs.val().fwd) << 4)
                        | (bit_cast::<32, 3>(self.stat_cfg_bits.val()) << 8);
                }
                1 => {
                    self.status_data.next = self.stat_counts.val().tx;
                }
                2 => {
                    self.status_data.next = self.stat_counts.val().rx;
                }
                3 => {
                    self.status_data.next = self.stat_counts.val().forwarded;
                }
                4 => {
                    self.status_data.next = self.stat_counts.val().dropped;
                }
                5 => {
                    self.status_data.next = self.stat_counts.val().transition_time;
                }
                6 => {
                    self.status_data.next = bit_cast::<32, 4>(self.stat_counts.val().transition_cause);
                }
                7 => {
                    self.status_data.next = self.stat_regs.val().hello_at;
                }
                8 => {
                    self.status_data.next = self.stat_regs.val().fail_at;
                }
                9 => {
                    self.status_data.next = self.stat_regs.val().pf0_at;
                }
                10 => {
                    self.status_data.next = self.stat_regs.val().pf1_at;
                }
                11 => {
                    self.status_data.next = bit_cast::<32, 5>(self.stat_regs.val().armed);
                }
                12 => {
                    self.status_data.next = bit_cast::<32, 16>(self.stat_regs.val().hello_seq);
                }
                13 => {
                    self.status_data.next = self.stat_regs.val().om_at;
                }
                14 => {
                    self.status_data.next = bit_cast::<32, 16>(self.stat_counts.val().malformed_length)
                        | (bit_cast::<32, 16>(self.stat_counts.val().malformed_version) << 16);
                }
                15 => {
                    self.status_data.next = bit_cast::<32, 16>(self.stat_counts.val().malformed_checksum)
                        | (bit_cast::<32, 16>(self.stat_counts.val().malformed_tlv) << 16);
                }
                _ => {}
            }
        }
        match self.status_address.val().index() {
            240 => {
                self.status_data.next = bit_cast::<32, 16>(self.edp_seq.q.val());
            }
            241 => {
                self.status_data.next = bit_cast::<32, 2>(self.link_q.q.val())
                    | (bit_cast::<32, 1>((self.phase.q.val() != NodePhase::Idle).into()) << 2);
            }
            242 => {
                self.status_data.next = bit_cast::<32, 16>(self.pdu_rx[0].rejected.val())
                    | (bit_cast::<32, 16>(self.pdu_rx[0].overruns.val()) << 16);
            }
            243 => {
                self.status_data.next = bit_cast::<32, 16>(self.pdu_rx[1].rejected.val())
                    | (bit_cast::<32, 16>(self.pdu_rx[1].overruns.val()) << 16);
            }
            _ => {}
        }
    }
}
