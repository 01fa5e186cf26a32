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
pub use crate::eaps::domain::{cause, DomCfg, DomRegs, DomState, EapsDomainCfg, EapsDomainCfgSource, Job};

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
    prx: [EapsRx; 2],
    etx: EapsTx,
    // The master's pass rule (docs/eaps.md §2): each port's frame checked as an ESL PDU, and
    // the table of senders passed.
    esl: [EslCheck; 2],
    seen: EslSeen,
    f_esl_mac: Signal<Local, Bits<48>>,
    f_esl_seq: Signal<Local, Bits<16>>,
    enabled: DFF<Bit>,
    link_q: DFF<Bits<2>>,
    edp_seq: DFF<Bits<16>>,
    phase: DFF<NodePhase>,
    job: DFF<Job>,
    jport: DFF<Bit>,
    /// Take the held frame of port `jport` this clock (set by the step that finished with it: the
    /// take, which loads the port's ~180 hold registers, then starts from flip-flops).
    take_held: DFF<Bit>,
    dom: DFF<Bits<4>>,
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
    st: [DFF<DomState>; D],
    fwd: [DFFWithInit<Bits<2>>; D],
    hseq: [DFF<Bits<16>>; D],
    armed: [DFF<Bits<5>>; D],
    hello_at: [DFF<Bits<32>>; D],
    fail_at: [DFF<Bits<32>>; D],
    pf0_at: [DFF<Bits<32>>; D],
    pf1_at: [DFF<Bits<32>>; D],
    om_at: [DFF<Bits<32>>; D],
    counts: [DFF<DomCounts>; D],
    /// The domain step, on the registered domain.
    dstep: DomainStep,
    // The domain `dom` names (chosen combinationally, registered in NodePhase::Load).
    ks: Signal<Local, DomRegs>,
    kns: Signal<Local, DomCounts>,
    kcs: Signal<Local, DomCfg>,
    k_dues: Signal<Local, Bits<4>>,
    k_q: DFF<DomRegs>,
    kn_q: DFF<DomCounts>,
    kc_q: DFF<DomCfg>,
    kdue_q: DFF<Bits<4>>,
    /// The registered domain is `dom`'s (Step, Send, SendWait).
    k_valid: Signal<Local, Bit>,
    // The current domain's registers, counters and configuration, and what the step makes of them.
    k: Signal<Local, DomRegs>,
    kn: Signal<Local, DomCounts>,
    kc: Signal<Local, DomCfg>,
    nn: Signal<Local, DomCounts>,
    /// The event's port, as a mask.
    jm: Signal<Local, Bits<2>>,
    any_due: Signal<Local, Bit>,
    // The frame at the port being handled.
    f: Signal<Local, HeldPdu>,
    fm_hit: Signal<Local, Bit>,
    fm_dom: Signal<Local, Bits<4>>,
    write: Signal<Local, Bit>,
    st_code: Signal<Local, Bits<32>>,
    n_dom: Signal<Local, Bits<5>>,
    domains: Constant<Bits<5>>,
    no_regs: Constant<DomRegs>,
    no_counts: Constant<DomCounts>,
    no_cfg: Constant<DomCfg>,
    n_flush: Signal<Local, Bits<16>>,
    tx_inc: Signal<Local, Bit>,
    fsel: Signal<Local, Bit>,
    fmask: Signal<Local, Bits<2>>,
    due: [Signal<Local, Bits<4>>; D],
    k_due: Signal<Local, Bits<4>>,
    dh: [Signal<Local, Bits<32>>; D],
    df: [Signal<Local, Bits<32>>; D],
    dp0: [Signal<Local, Bits<32>>; D],
    dp1: [Signal<Local, Bits<32>>; D],
    // The domain the status address names.
    s_words: Signal<Local, Bit>,
    s: Signal<Local, DomRegs>,
    sn: Signal<Local, DomCounts>,
    s_cfgbits: Signal<Local, Bits<3>>,
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
            prx: Default::default(),
            etx: Default::default(),
            esl: Default::default(),
            seen: Default::default(),
            f_esl_mac: Default::default(),
            f_esl_seq: Default::default(),
            enabled: Default::default(),
            link_q: Default::default(),
            edp_seq: Default::default(),
            phase: Default::default(),
            job: Default::default(),
            jport: Default::default(),
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
            st: std::array::from_fn(|_| Default::default()),
            fwd: std::array::from_fn(|_| DFFWithInit::new(3.into())),
            hseq: std::array::from_fn(|_| Default::default()),
            armed: std::array::from_fn(|_| Default::default()),
            hello_at: std::array::from_fn(|_| Default::default()),
            fail_at: std::array::from_fn(|_| Default::default()),
            pf0_at: std::array::from_fn(|_| Default::default()),
            pf1_at: std::array::from_fn(|_| Default::default()),
            om_at: std::array::from_fn(|_| Default::default()),
            counts: std::array::from_fn(|_| Default::default()),
            dstep: Default::default(),
            ks: Default::default(),
            kns: Default::default(),
            kcs: Default::default(),
            k_dues: Default::default(),
            k_q: Default::default(),
            kn_q: Default::default(),
            kc_q: Default::default(),
            kdue_q: Default::default(),
            k_valid: Default::default(),
            k: Default::default(),
            kn: Default::default(),
            kc: Default::default(),
            nn: Default::default(),
            jm: Default::default(),
            any_due: Default::default(),
            f: Default::default(),
            fm_hit: Default::default(),
            fm_dom: Default::default(),
            write: Default::default(),
            st_code: Default::default(),
            n_dom: Default::default(),
            domains: Constant::new((D as u64).into()),
            no_regs: Constant::new(DomRegs::default()),
            no_counts: Constant::new(DomCounts::default()),
            no_cfg: Constant::new(DomCfg::default()),
            n_flush: Default::default(),
            tx_inc: Default::default(),
            fsel: Default::default(),
            fmask: Default::default(),
            due: std::array::from_fn(|_| Default::default()),
            k_due: Default::default(),
            dh: std::array::from_fn(|_| Default::default()),
            df: std::array::from_fn(|_| Default::default()),
            dp0: std::array::from_fn(|_| Default::default()),
            dp1: std::array::from_fn(|_| Default::default()),
            s_words: Default::default(),
            s: Default::default(),
            sn: Default::default(),
            s_cfgbits: Default::default(),
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
            job,
            jport,
            dom,
            step,
            send,
            flush_q,
            alert_q,
            alert_sm_q,
            alert_dom_q,
            alert_mac_q,
            pass_q,
            k_q,
            kn_q,
            kc_q,
            kdue_q
        );
        for i in 0..D {
            self.st[i].clock.next = self.clock.val();
            self.st[i].d.next = self.st[i].q.val();
            self.fwd[i].clock.next = self.clock.val();
            self.fwd[i].d.next = self.fwd[i].q.val();
            self.hseq[i].clock.next = self.clock.val();
            self.hseq[i].d.next = self.hseq[i].q.val();
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
        self.prx[0].clock.next = self.clock.val();
        self.prx[1].clock.next = self.clock.val();
        self.etx.clock.next = self.clock.val();
        ByteSink::link(&mut self.rx0, &mut self.prx[0].rx);
        ByteSink::link(&mut self.rx1, &mut self.prx[1].rx);
        ByteSource::link(&mut self.tx0, &mut self.etx.tx0);
        ByteSource::link(&mut self.tx1, &mut self.etx.tx1);
        self.prx[0].take.next = self.take_held.q.val() & !self.jport.q.val();
        self.prx[1].take.next = self.take_held.q.val() & self.jport.q.val();
        self.take_held.d.next = false;
        self.etx.start.next = false;
        // (Port 1 unless the plan's mask has port 0; a field's bit is not selectable in rust-hdl's
        // Verilog, hence the mask compare.)
        self.etx.port.next = (self.send.q.val().mask & 1) == 0;
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
            self.dh[i].next = self.now.val() - self.hello_at[i].q.val();
            self.df[i].next = self.now.val() - self.fail_at[i].q.val();
            self.dp0[i].next = self.now.val() - self.pf0_at[i].q.val();
            self.dp1[i].next = self.now.val() - self.pf1_at[i].q.val();
            self.due[i].next = 0.into();
            self.due[i].next =
                self.due[i].val().replace_bit(0, self.armed[i].q.val().get_bit(0) & !self.dh[i].val().get_bit(31));
            self.due[i].next =
                self.due[i].val().replace_bit(1, self.armed[i].q.val().get_bit(1) & !self.df[i].val().get_bit(31));
            self.due[i].next =
                self.due[i].val().replace_bit(2, self.armed[i].q.val().get_bit(2) & !self.dp0[i].val().get_bit(31));
            self.due[i].next =
                self.due[i].val().replace_bit(3, self.armed[i].q.val().get_bit(3) & !self.dp1[i].val().get_bit(31));
            if self.due[i].val().any() {
                self.any_due.next = true;
            }
        }

        // The domain `dom` names, chosen; the step reads it from the registers Load fills.
        self.ks.next = self.no_regs.val();
        self.kns.next = self.no_counts.val();
        self.kcs.next = self.no_cfg.val();
        self.k_dues.next = 0.into();
        for i in 0..D {
            if self.dom.q.val().index() == i {
                self.ks.next.st = self.st[i].q.val();
                self.ks.next.fwd = self.fwd[i].q.val();
                self.ks.next.hseq = self.hseq[i].q.val();
                self.ks.next.armed = self.armed[i].q.val();
                self.ks.next.hello_at = self.hello_at[i].q.val();
                self.ks.next.fail_at = self.fail_at[i].q.val();
                self.ks.next.pf0_at = self.pf0_at[i].q.val();
                self.ks.next.pf1_at = self.pf1_at[i].q.val();
                self.ks.next.om_at = self.om_at[i].q.val();
                self.kns.next = self.counts[i].q.val();
                self.k_dues.next = self.due[i].val();
                self.kcs.next.active = self.cfg[i].active.val();
                self.kcs.next.master = self.cfg[i].master.val();
                self.kcs.next.primary = self.cfg[i].primary.val();
                self.kcs.next.send_alert = self.cfg[i].send_alert.val();
                self.kcs.next.control_vlan = self.cfg[i].control_vlan.val();
                self.kcs.next.hello = self.cfg[i].hello.val();
                self.kcs.next.fail = self.cfg[i].fail.val();
                self.kcs.next.pre_forwarding = self.cfg[i].pre_forwarding.val();
                self.kcs.next.hello_field = self.cfg[i].hello_field.val();
                self.kcs.next.fail_field = self.cfg[i].fail_field.val();
            }
        }
        self.k_valid.next = (self.phase.q.val() == NodePhase::Step)
            | (self.phase.q.val() == NodePhase::Send)
            | (self.phase.q.val() == NodePhase::SendWait);
        if self.phase.q.val() == NodePhase::Load {
            self.k_q.d.next = self.ks.val();
            self.kn_q.d.next = self.kns.val();
            self.kc_q.d.next = self.kcs.val();
            self.kdue_q.d.next = self.k_dues.val();
        }
        self.k.next = self.k_q.q.val();
        self.kn.next = self.kn_q.q.val();
        self.kc.next = self.kc_q.q.val();
        self.k_due.next = self.kdue_q.q.val();
        self.jm.next = 1.into();
        if self.jport.q.val() {
            self.jm.next = 2.into();
        }

        // The PDU at the port being (or about to be) handled, and its domain.
        self.fsel.next = self.jport.q.val();
        if self.phase.q.val() == NodePhase::Idle {
            self.fsel.next = !self.prx[0].full.val();
        }
        self.fmask.next = 1.into();
        if self.fsel.val() {
            self.fmask.next = 2.into();
        }
        self.f.next.vid = 0.into();
        self.f.next.eaps_type = 0.into();
        self.f.next.control_vlan = 0.into();
        self.f.next.system_mac = 0.into();
        self.f.next.other = false;
        self.f.next.state = 0.into();
        self.f.next.malformed = 0.into();
        for p in 0..2 {
            if self.fmask.val().get_bit(p) {
                self.f.next.state = self.prx[p].pdu.state.val();
                self.f.next.malformed = self.prx[p].malformed.val();
                self.f.next.vid = self.prx[p].vid.val();
                self.f.next.eaps_type = self.prx[p].pdu.eaps_type.val();
                self.f.next.control_vlan = self.prx[p].pdu.control_vlan.val();
                self.f.next.system_mac = self.prx[p].pdu.system_mac.val();
                self.f.next.other = self.prx[p].other.val();
            }
        }
        self.f.next.esl_ok = false;
        self.f_esl_mac.next = 0.into();
        self.f_esl_seq.next = 0.into();
        for p in 0..2 {
            if self.fmask.val().get_bit(p) {
                self.f.next.esl_ok = self.esl[p].ok.val();
                self.f_esl_mac.next = self.esl[p].mac.val();
                self.f_esl_seq.next = self.esl[p].seq.val();
            }
        }
        self.fm_hit.next = false;
        self.fm_dom.next = 0.into();
        for i in 0..D {
            if !self.fm_hit.val() & self.cfg[i].active.val() & (self.cfg[i].control_vlan.val() == self.f.val().vid) {
                self.fm_hit.next = true;
                self.fm_dom.next = i.to_bits();
            }
        }

        // The emitter's fields: a forwarded PDU's own, or this node's.
        self.etx.pdu.src.next = self.system_mac.val();
        self.etx.pdu.pcp.next = 7.into();
        self.etx.pdu.edp_seq.next = self.edp_seq.q.val();
        self.etx.pdu.eaps_type.next = self.send.q.val().eaps_type;
        self.etx.pdu.control_vlan.next = bit_cast::<16, 12>(self.kc.val().control_vlan);
        self.etx.pdu.system_mac.next = self.system_mac.val();
        self.etx.pdu.hello_timer.next = self.kc.val().hello_field;
        self.etx.pdu.fail_timer.next = self.kc.val().fail_field;
        self.etx.pdu.state.next = self.send.q.val().state;
        self.etx.pdu.hello_seq.next = self.k.val().hseq;
        for p in 0..2 {
            if self.send.q.val().forward & self.jm.val().get_bit(p) {
                self.etx.pdu.src.next = self.prx[p].pdu.src.val();
                self.etx.pdu.pcp.next = self.prx[p].pdu.pcp.val();
                self.etx.pdu.edp_seq.next = self.prx[p].pdu.edp_seq.val();
                self.etx.pdu.eaps_type.next = self.prx[p].pdu.eaps_type.val();
                self.etx.pdu.control_vlan.next = self.prx[p].pdu.control_vlan.val();
                self.etx.pdu.system_mac.next = self.prx[p].pdu.system_mac.val();
                self.etx.pdu.hello_timer.next = self.prx[p].pdu.hello_timer.val();
                self.etx.pdu.fail_timer.next = self.prx[p].pdu.fail_timer.val();
                self.etx.pdu.state.next = self.prx[p].pdu.state.val();
                self.etx.pdu.hello_seq.next = self.prx[p].pdu.hello_seq.val();
            }
        }

        // One domain step (written back in NodePhase::Step).
        self.dstep.job.next = self.job.q.val();
        self.dstep.step.next = self.step.q.val();
        self.dstep.port.next = self.jport.q.val();
        self.dstep.link.next = self.link_q.q.val();
        self.dstep.now.next = self.now.val();
        self.dstep.system_mac.next = self.system_mac.val();
        self.dstep.k.next = self.k.val();
        self.dstep.cfg.next = self.kc.val();
        self.dstep.due.next = self.k_due.val();
        self.dstep.pdu.next = self.f.val();
        self.dstep.esl_pass.next = self.seen.pass.val();
        // Its alert registers follow it in every phase; the pulse only when it is written.
        if self.dstep.alert.val() {
            self.alert_sm_q.d.next = self.dstep.alert_second_master.val();
            self.alert_dom_q.d.next = self.dom.q.val();
            if self.dstep.alert_second_master.val() {
                self.alert_mac_q.d.next = self.f.val().system_mac;
            }
        }

        // The sequencer.
        self.write.next = false;
        self.tx_inc.next = false;
        self.n_dom.next = bit_cast::<5, 4>(self.dom.q.val()) + 1;
        match self.phase.q.val() {
            NodePhase::Idle => {
                if self.take_held.q.val() {
                    // The frame just handled is taken this clock: nothing else starts.
                    self.phase.d.next = NodePhase::Idle;
                } else if self.enable.val() & !self.enabled.q.val() {
                    self.enabled.d.next = true;
                    self.job.d.next = Job::Enable;
                    self.dom.d.next = 0.into();
                    self.step.d.next = 0.into();
                    self.phase.d.next = NodePhase::Load;
                } else if self.prx[0].full.val() | self.prx[1].full.val() {
                    self.jport.d.next = self.fsel.val();
                    self.job.d.next = Job::Frame;
                    self.dom.d.next = self.fm_dom.val();
                    self.step.d.next = 0.into();
                    if self.fm_hit.val() {
                        self.phase.d.next = NodePhase::Load;
                    } else {
                        self.take_held.d.next = true;
                    }
                } else if self.link_up.val().get_bit(0) != self.link_q.q.val().get_bit(0) {
                    self.link_q.d.next = self.link_q.q.val().replace_bit(0, self.link_up.val().get_bit(0));
                    self.jport.d.next = false;
                    self.job.d.next = Job::LinkDown;
                    if self.link_up.val().get_bit(0) {
                        self.job.d.next = Job::LinkUp;
                    }
                    self.dom.d.next = 0.into();
                    self.step.d.next = 0.into();
                    self.phase.d.next = NodePhase::Load;
                } else if self.link_up.val().get_bit(1) != self.link_q.q.val().get_bit(1) {
                    self.link_q.d.next = self.link_q.q.val().replace_bit(1, self.link_up.val().get_bit(1));
                    self.jport.d.next = true;
                    self.job.d.next = Job::LinkDown;
                    if self.link_up.val().get_bit(1) {
                        self.job.d.next = Job::LinkUp;
                    }
                    self.dom.d.next = 0.into();
                    self.step.d.next = 0.into();
                    self.phase.d.next = NodePhase::Load;
                } else if self.any_due.val() {
                    self.job.d.next = Job::Timers;
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
                self.k_q.d.next = self.dstep.n.val();
                self.send.d.next = self.dstep.send.val();
                if self.dstep.send.val().mask.any() {
                    self.phase.d.next = NodePhase::Send;
                } else if self.job.q.val() == Job::Frame {
                    self.take_held.d.next = true;
                    self.phase.d.next = NodePhase::Idle;
                } else if !self.dstep.last_step.val() {
                    // The same domain's next timer: its registers are in k_q already.
                    self.step.d.next = self.step.q.val() + 1;
                } else if self.n_dom.val() < self.domains.val() {
                    self.dom.d.next = self.dom.q.val() + 1;
                    self.step.d.next = 0.into();
                    self.phase.d.next = NodePhase::Load;
                } else {
                    self.phase.d.next = NodePhase::Idle;
                }
            }
            NodePhase::Send => {
                self.etx.start.next = true;
                self.phase.d.next = NodePhase::SendWait;
            }
            NodePhase::SendWait => {
                if self.etx.done.val() {
                    if !self.send.q.val().forward {
                        self.edp_seq.d.next = self.edp_seq.q.val() + 1;
                        self.tx_inc.next = true;
                    }
                    if self.send.q.val().mask == 3 {
                        self.send.d.next.mask = 2.into();
                        self.phase.d.next = NodePhase::Send;
                    } else if self.job.q.val() == Job::Frame {
                        self.take_held.d.next = true;
                        self.phase.d.next = NodePhase::Idle;
                    } else if !self.dstep.last_step.val() {
                        self.step.d.next = self.step.q.val() + 1;
                        self.phase.d.next = NodePhase::Load;
                    } else if self.n_dom.val() < self.domains.val() {
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
        self.nn.next = self.kn.val();
        if self.write.val() {
            if self.dstep.inc_rx.val() {
                self.nn.next.rx = self.kn.val().rx + 1;
            }
            if self.dstep.inc_fwd.val() {
                self.nn.next.forwarded = self.kn.val().forwarded + 1;
            }
            if self.dstep.inc_drop.val() {
                self.nn.next.dropped = self.kn.val().dropped + 1;
            }
            match self.dstep.inc_malformed.val().index() {
                1 => {
                    self.nn.next.malformed_length = self.kn.val().malformed_length + 1;
                }
                2 => {
                    self.nn.next.malformed_version = self.kn.val().malformed_version + 1;
                }
                3 => {
                    self.nn.next.malformed_checksum = self.kn.val().malformed_checksum + 1;
                }
                4 => {
                    self.nn.next.malformed_tlv = self.kn.val().malformed_tlv + 1;
                }
                _ => {}
            }
            if self.dstep.n.val().st != self.k.val().st {
                self.nn.next.transition_time = self.now.val();
                self.nn.next.transition_cause = self.dstep.cause.val();
            }
        }
        if self.tx_inc.val() {
            self.nn.next.tx = self.kn.val().tx + 1;
        }
        self.n_flush.next = 0.into();
        for i in 0..D {
            if self.dom.q.val().index() == i {
                if self.write.val() {
                    self.st[i].d.next = self.dstep.n.val().st;
                    self.fwd[i].d.next = self.dstep.n.val().fwd;
                    self.hseq[i].d.next = self.dstep.n.val().hseq;
                    self.armed[i].d.next = self.dstep.n.val().armed;
                    self.hello_at[i].d.next = self.dstep.n.val().hello_at;
                    self.fail_at[i].d.next = self.dstep.n.val().fail_at;
                    self.pf0_at[i].d.next = self.dstep.n.val().pf0_at;
                    self.pf1_at[i].d.next = self.dstep.n.val().pf1_at;
                    self.om_at[i].d.next = self.dstep.n.val().om_at;
                    self.n_flush.next = self.n_flush.val().replace_bit(i, self.dstep.flush.val());
                }
                if self.k_valid.val() {
                    self.counts[i].d.next = self.nn.val();
                }
            }
        }
        if self.k_valid.val() {
            self.kn_q.d.next = self.nn.val();
        }
        self.flush_q.d.next = self.n_flush.val();
        if self.write.val() & self.dstep.pass.val() {
            self.pass_q.d.next = self.jm.val();
        }
        // The master's pass rule: the ESL checks hold the frame EapsRx holds (loaded when
        // nothing is held or what is held is taken this clock); the table records a pass.
        self.seen.clock.next = self.clock.val();
        self.seen.now.next = self.now.val();
        self.seen.dom.next = self.dom.q.val();
        self.seen.mac.next = self.f_esl_mac.val();
        self.seen.seq.next = self.f_esl_seq.val();
        self.seen.age.next = self.kc.val().fail;
        self.seen.write.next = self.write.val() & self.dstep.esl_write.val();
        self.esl[0].clock.next = self.clock.val();
        self.esl[0].data.next = self.rx0.data.val();
        self.esl[0].valid.next = self.rx0.valid.val();
        self.esl[0].last.next = self.rx0.last.val();
        self.esl[0].load.next = !self.prx[0].full.val() | self.prx[0].take.val();
        self.esl[1].clock.next = self.clock.val();
        self.esl[1].data.next = self.rx1.data.val();
        self.esl[1].valid.next = self.rx1.valid.val();
        self.esl[1].last.next = self.rx1.last.val();
        self.esl[1].load.next = !self.prx[1].full.val() | self.prx[1].take.val();
        self.alert_q.d.next = self.write.val() & self.dstep.alert.val();

        self.idle.next = (self.phase.q.val() == NodePhase::Idle)
            & !self.prx[0].full.val()
            & !self.prx[1].full.val()
            & !self.prx[0].pending.val()
            & !self.prx[1].pending.val()
            & (self.link_up.val() == self.link_q.q.val())
            & !(self.enable.val() & !self.enabled.q.val())
            & !self.any_due.val()
            & !self.etx.busy.val();

        // Status words.
        self.status_data.next = 0.into();
        self.st_code.next = 0.into();
        self.s_words.next = false;
        self.s.next = self.no_regs.val();
        self.sn.next = self.no_counts.val();
        self.s_cfgbits.next = 0.into();
        for i in 0..D {
            if self.status_address.val().get_bits::<4>(4).index() == i {
                self.s.next.st = self.st[i].q.val();
                self.s.next.fwd = self.fwd[i].q.val();
                self.s.next.hseq = self.hseq[i].q.val();
                self.s.next.armed = self.armed[i].q.val();
                self.s.next.hello_at = self.hello_at[i].q.val();
                self.s.next.fail_at = self.fail_at[i].q.val();
                self.s.next.pf0_at = self.pf0_at[i].q.val();
                self.s.next.pf1_at = self.pf1_at[i].q.val();
                self.s.next.om_at = self.om_at[i].q.val();
                self.sn.next = self.counts[i].q.val();
                self.s_cfgbits.next = self.s_cfgbits.val().replace_bit(0, self.cfg[i].master.val());
                self.s_cfgbits.next = self.s_cfgbits.val().replace_bit(1, self.cfg[i].primary.val());
                self.s_cfgbits.next = self.s_cfgbits.val().replace_bit(2, self.cfg[i].active.val());
                self.s_words.next = true;
            }
        }
        match self.s.val().st {
            DomState::Idle => {
                self.st_code.next = 0.into();
            }
            DomState::Init => {
                self.st_code.next = 1.into();
            }
            DomState::Complete => {
                self.st_code.next = 2.into();
            }
            DomState::Failed => {
                self.st_code.next = 3.into();
            }
            DomState::LinksUp => {
                self.st_code.next = 4.into();
            }
            DomState::LinksDown => {
                self.st_code.next = 5.into();
            }
            DomState::PreForwarding => {
                self.st_code.next = 6.into();
            }
        }
        if self.s_words.val() {
            match self.status_address.val().get_bits::<4>(0).index() {
                0 => {
                    self.status_data.next = self.st_code.val()
                        | (bit_cast::<32, 2>(self.s.val().fwd) << 4)
                        | (bit_cast::<32, 3>(self.s_cfgbits.val()) << 8);
                }
                1 => {
                    self.status_data.next = self.sn.val().tx;
                }
                2 => {
                    self.status_data.next = self.sn.val().rx;
                }
                3 => {
                    self.status_data.next = self.sn.val().forwarded;
                }
                4 => {
                    self.status_data.next = self.sn.val().dropped;
                }
                5 => {
                    self.status_data.next = self.sn.val().transition_time;
                }
                6 => {
                    self.status_data.next = bit_cast::<32, 4>(self.sn.val().transition_cause);
                }
                7 => {
                    self.status_data.next = self.s.val().hello_at;
                }
                8 => {
                    self.status_data.next = self.s.val().fail_at;
                }
                9 => {
                    self.status_data.next = self.s.val().pf0_at;
                }
                10 => {
                    self.status_data.next = self.s.val().pf1_at;
                }
                11 => {
                    self.status_data.next = bit_cast::<32, 5>(self.s.val().armed);
                }
                12 => {
                    self.status_data.next = bit_cast::<32, 16>(self.s.val().hseq);
                }
                13 => {
                    self.status_data.next = self.s.val().om_at;
                }
                14 => {
                    self.status_data.next = bit_cast::<32, 16>(self.sn.val().malformed_length)
                        | (bit_cast::<32, 16>(self.sn.val().malformed_version) << 16);
                }
                15 => {
                    self.status_data.next = bit_cast::<32, 16>(self.sn.val().malformed_checksum)
                        | (bit_cast::<32, 16>(self.sn.val().malformed_tlv) << 16);
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
                self.status_data.next = bit_cast::<32, 16>(self.prx[0].rejected.val())
                    | (bit_cast::<32, 16>(self.prx[0].overruns.val()) << 16);
            }
            243 => {
                self.status_data.next = bit_cast::<32, 16>(self.prx[1].rejected.val())
                    | (bit_cast::<32, 16>(self.prx[1].overruns.val()) << 16);
            }
            _ => {}
        }
    }
}
