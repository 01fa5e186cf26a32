//! One EAPS domain step (docs/eaps.md §3–§6): what one event does to one domain's registers,
//! which PDU it sends and what the node counts, passes, flushes and alerts. Combinational; the
//! [`crate::eaps_node::EapsNode`]'s sequencer loads the domain's registers and configuration
//! into flip-flops first, applies `next_regs` and the pulses when it writes the step back, and
//! emits the planned PDU through its emitter.
//!
//! Contract (the reference is `spotagg_spec::eaps::EapsNode`, whose calls the node replays):
//! - In: the event (`event_kind`; for `Event::Timers`, which of the four timers `step` is:
//!   hello, fail, pre-forwarding 0, 1), the port it concerns (`port`), the links as the node
//!   acts on them (`link`), the time, the node's MAC, the domain's registers (`regs`),
//!   configuration (`cfg`) and due timers (`due`: bits hello, fail, pre-forwarding 0, 1), and
//!   for `Event::Frame` the held PDU's fields and the ESL check's verdicts.
//! - Out: the registers after the step (`next_regs`), the transition's cause (`cause`,
//!   [`cause`]: the node records it when `next_regs.state` differs from `regs.state`), the
//!   counters to increment, whether the frame is passed (`pass`) and the ESL table written
//!   (`esl_write`), a flush, an alert, and the PDU to send: `mask` (ports, none for no PDU),
//!   `forward` (re-emit the held PDU's own fields, else this node's with `pdu_type` and
//!   `pdu_state`). `last_step`: the event has no further step for this domain.
//!
//! [`cause`]: crate::eaps::domain::cause

use crate::eaps::domain::{DomCfg, DomRegs, DomState, Event};
use rust_hdl::prelude::*;

/// The PDU the node holds, as a step reads it (the node gathers it from the port's `EapsRx`
/// and `EslCheck`).
#[derive(Copy, Clone, Debug, PartialEq, Default, LogicStruct)]
pub struct HeldPdu {
    /// The VLAN it came on.
    pub vid: Bits<12>,
    /// Its EAPS type.
    pub eaps_type: Bits<8>,
    /// Its control VLAN field.
    pub control_vlan: Bits<16>,
    /// Its system MAC field.
    pub system_mac: Bits<48>,
    /// Its state field.
    pub state: Bits<8>,
    /// It is another EDP frame on the control VLAN (docs/eaps.md §11), not a PDU.
    pub other: Bit,
    /// It is a malformed EDP frame (docs/eaps.md §1.1): its reason, 1..=4 (0: it is not).
    pub malformed: Bits<3>,
    /// It is a valid ESL PDU.
    pub esl_ok: Bit,
}

/// The PDU a step sends, as the node holds it while its emitter sends it.
#[derive(Copy, Clone, Debug, PartialEq, Default, LogicStruct)]
pub struct PduPlan {
    /// The ports to send it out of (none: no PDU).
    pub mask: Bits<2>,
    /// It is the held PDU, re-emitted from its fields (§6.12).
    pub forward: Bit,
    /// Else this node's, of this type.
    pub eaps_type: Bits<8>,
    /// And this state field.
    pub state: Bits<8>,
}

/// One domain's step for one event.
#[derive(LogicBlock, Default)]
pub struct DomainStep {
    /// The event.
    pub event_kind: Signal<In, Event>,
    /// The timer a `Event::Timers` step looks at: 0 hello, 1 fail, 2 and 3 pre-forwarding.
    pub step: Signal<In, Bits<2>>,
    /// The port of a link event or a PDU.
    pub port: Signal<In, Bit>,
    /// The links as the node acts on them (bit `p`).
    pub link: Signal<In, Bits<2>>,
    /// Time.
    pub now: Signal<In, Bits<32>>,
    /// The node's system MAC.
    pub system_mac: Signal<In, Bits<48>>,
    /// The domain's registers.
    pub regs: Signal<In, DomRegs>,
    /// Its configuration.
    pub cfg: Signal<In, DomCfg>,
    /// Its due timers: hello, fail, pre-forwarding 0, 1.
    pub due: Signal<In, Bits<4>>,
    /// The held PDU (`Event::Frame`).
    pub pdu: Signal<In, HeldPdu>,
    /// The ESL table lets it through (newer than its sender's last).
    pub esl_pass: Signal<In, Bit>,
    /// The registers after the step.
    pub next_regs: Signal<Out, DomRegs>,
    /// The cause of a transition.
    pub cause: Signal<Out, Bits<4>>,
    /// Count a received PDU.
    pub inc_rx: Signal<Out, Bit>,
    /// Count a forwarded one.
    pub inc_fwd: Signal<Out, Bit>,
    /// Count a dropped one.
    pub inc_drop: Signal<Out, Bit>,
    /// Count a malformed frame of this reason (1..=4; 0 none).
    pub inc_malformed: Signal<Out, Bits<3>>,
    /// Pass the frame out of the other ring port.
    pub pass: Signal<Out, Bit>,
    /// Record the passed ESL PDU's sender.
    pub esl_write: Signal<Out, Bit>,
    /// Flush the domain's FDB.
    pub flush: Signal<Out, Bit>,
    /// Raise an alert.
    pub alert: Signal<Out, Bit>,
    /// The alert is a second master (else the fail timer).
    pub alert_second_master: Signal<Out, Bit>,
    /// The PDU to send.
    pub send: Signal<Out, PduPlan>,
    /// The event has no further step for this domain.
    pub last_step: Signal<Out, Bit>,
    // The primary and secondary ports' masks, the event's port and the other one.
    primary_mask: Signal<Local, Bits<2>>,
    secondary_mask: Signal<Local, Bits<2>>,
    port_mask: Signal<Local, Bits<2>>,
    other_port_mask: Signal<Local, Bits<2>>,
    // Another master was heard within the fail period (`om_left`: the other-master deadline
    // less `now`).
    om_left: Signal<Local, Bits<32>>,
    om_active: Signal<Local, Bit>,
    may_fail: Signal<Local, Bit>,
    // The state field of this master's HEALTH.
    wire_state: Signal<Local, Bits<8>>,
    derive: Signal<Local, Bit>,
    fail_ring: Signal<Local, Bit>,
    opened: Signal<Local, Bit>,
    // A transit's ports that wait for evidence (docs/eaps.md §4): up and blocked; of them the
    // armed ones, whose hold has run out.
    waiting: Signal<Local, Bits<2>>,
    ready: Signal<Local, Bits<2>>,
}

impl Logic for DomainStep {
    #[hdl_gen]
    fn update(&mut self) {
        self.primary_mask.next = 1.into();
        if self.cfg.val().primary {
            self.primary_mask.next = 2.into();
        }
        self.secondary_mask.next = !self.primary_mask.val();
        self.port_mask.next = 1.into();
        if self.port.val() {
            self.port_mask.next = 2.into();
        }
        self.other_port_mask.next = !self.port_mask.val();
        self.om_left.next = self.regs.val().om_at - self.now.val();
        self.om_active.next =
            (self.regs.val().armed & 16).any() & !self.om_left.val().get_bit(31) & self.om_left.val().any();
        // Master: a reported failure opens the ring in Init and Complete, and in Failed while the
        // secondary is held blocked and up.
        self.may_fail.next = (self.regs.val().state == DomState::Init)
            | (self.regs.val().state == DomState::Complete)
            | ((self.regs.val().state == DomState::Failed)
                & !(self.regs.val().fwd & self.secondary_mask.val()).any()
                & (self.link.val() & self.secondary_mask.val()).any());
        self.wire_state.next = 0.into();
        if self.regs.val().state == DomState::Complete {
            self.wire_state.next = 1.into();
        }
        if self.regs.val().state == DomState::Failed {
            self.wire_state.next = 2.into();
        }

        self.waiting.next = self.link.val() & !self.regs.val().fwd;
        self.ready.next = self.waiting.val() & !bit_cast::<2, 5>(self.regs.val().armed >> 2);

        self.next_regs.next = self.regs.val();
        self.cause.next = 0.into();
        self.derive.next = false;
        self.inc_rx.next = false;
        self.inc_fwd.next = false;
        self.inc_drop.next = false;
        self.inc_malformed.next = 0.into();
        self.pass.next = false;
        self.esl_write.next = false;
        self.flush.next = false;
        self.alert.next = false;
        self.alert_second_master.next = false;
        self.fail_ring.next = false;
        self.opened.next = false;
        self.send.next.mask = 0.into();
        self.send.next.forward = false;
        self.send.next.eaps_type = 0.into();
        self.send.next.state = 0.into();
        self.last_step.next = true;
        if self.event_kind.val() == Event::Timers {
            self.last_step.next = self.step.val() == 3;
        }
        match self.event_kind.val() {
            Event::Enable => {
                if self.cfg.val().active {
                    self.cause.next = 1.into(); // cause::ENABLED
                    if self.cfg.val().master {
                        self.next_regs.next.fwd = self.primary_mask.val();
                        self.next_regs.next.state = DomState::Init;
                        self.next_regs.next.fail_at = self.now.val() + self.cfg.val().fail;
                        self.next_regs.next.hello_at = self.now.val() + self.cfg.val().hello;
                        self.next_regs.next.armed = self.regs.val().armed | 3;
                        self.next_regs.next.hello_seq = self.regs.val().hello_seq + 1;
                        if (self.link.val() & self.primary_mask.val()).any() {
                            self.send.next.mask = self.primary_mask.val();
                            self.send.next.eaps_type = 5.into();
                        }
                    } else {
                        // Every port blocked; one that is up waits as after a link up (§6.11).
                        self.next_regs.next.fwd = 0.into();
                        if self.link.val().get_bit(0) {
                            self.next_regs.next.pf0_at = self.now.val() + self.cfg.val().pre_forwarding;
                        }
                        if self.link.val().get_bit(1) {
                            self.next_regs.next.pf1_at = self.now.val() + self.cfg.val().pre_forwarding;
                        }
                        self.next_regs.next.armed = self.regs.val().armed | (bit_cast::<5, 2>(self.link.val()) << 2);
                        self.derive.next = true;
                    }
                }
            }
            Event::LinkDown => {
                if self.regs.val().state != DomState::Idle {
                    self.next_regs.next.fwd = self.regs.val().fwd & self.other_port_mask.val();
                    if self.port.val() {
                        self.next_regs.next.armed = self.regs.val().armed & 0x17;
                    } else {
                        self.next_regs.next.armed = self.regs.val().armed & 0x1b;
                    }
                    if self.cfg.val().master {
                        // may_fail with this port already down and blocked.
                        if (self.regs.val().state == DomState::Init)
                            | (self.regs.val().state == DomState::Complete)
                            | ((self.regs.val().state == DomState::Failed)
                                & !(self.next_regs.val().fwd & self.secondary_mask.val()).any()
                                & (self.link.val() & self.secondary_mask.val()).any())
                        {
                            self.fail_ring.next = true;
                            self.cause.next = 4.into(); // cause::LOCAL_LINK_DOWN0, port 1: 5
                            if self.port.val() {
                                self.cause.next = 5.into();
                            }
                        }
                    } else {
                        if (self.link.val() & self.other_port_mask.val()).any() {
                            self.send.next.mask = self.other_port_mask.val();
                            self.send.next.eaps_type = 8.into();
                            self.send.next.state = 4.into();
                        }
                        self.next_regs.next.state = DomState::LinksDown;
                        self.cause.next = 4.into(); // cause::LOCAL_LINK_DOWN0, port 1: 5
                        if self.port.val() {
                            self.cause.next = 5.into();
                        }
                    }
                }
            }
            Event::LinkUp => {
                if self.regs.val().state != DomState::Idle {
                    self.next_regs.next.fwd = self.regs.val().fwd & self.other_port_mask.val();
                    if !self.cfg.val().master {
                        if self.port.val() {
                            self.next_regs.next.pf1_at = self.now.val() + self.cfg.val().pre_forwarding;
                            self.next_regs.next.armed = self.regs.val().armed | 8;
                        } else {
                            self.next_regs.next.pf0_at = self.now.val() + self.cfg.val().pre_forwarding;
                            self.next_regs.next.armed = self.regs.val().armed | 4;
                        }
                        self.derive.next = true;
                        self.cause.next = 6.into(); // cause::LOCAL_LINK_UP0, port 1: 7
                        if self.port.val() {
                            self.cause.next = 7.into();
                        }
                    }
                }
            }
            Event::Frame => {
                if (self.regs.val().state != DomState::Idle) & self.pdu.val().malformed.any() {
                    // Malformed: dropped at the first node, counted by reason (§1.1).
                    self.inc_malformed.next = self.pdu.val().malformed;
                } else if (self.regs.val().state != DomState::Idle) & self.pdu.val().other {
                    // Another EDP frame: passed on unchanged, whatever the port states; by a
                    // master only a valid ESL PDU newer than its sender's last (§2).
                    if (self.link.val() & self.other_port_mask.val()).any() {
                        if self.cfg.val().master & !(self.pdu.val().esl_ok & self.esl_pass.val()) {
                            self.inc_drop.next = true;
                        } else {
                            self.inc_fwd.next = true;
                            self.pass.next = true;
                            self.esl_write.next = self.cfg.val().master;
                        }
                    }
                } else if self.regs.val().state != DomState::Idle {
                    self.inc_rx.next = true;
                    if self.pdu.val().control_vlan != bit_cast::<16, 12>(self.pdu.val().vid) {
                        self.inc_drop.next = true;
                    } else if self.cfg.val().master {
                        if ((self.pdu.val().eaps_type == 5)
                            | (self.pdu.val().eaps_type == 6)
                            | (self.pdu.val().eaps_type == 7))
                            & (self.pdu.val().system_mac != self.system_mac.val())
                        {
                            self.inc_drop.next = true;
                            if !self.om_active.val() {
                                self.alert.next = true;
                                self.alert_second_master.next = true;
                            }
                            self.next_regs.next.om_at = self.now.val() + self.cfg.val().fail;
                            self.next_regs.next.armed = self.regs.val().armed | 16;
                        } else if (self.pdu.val().eaps_type == 5) & (self.port_mask.val() == self.secondary_mask.val())
                        {
                            self.next_regs.next.fail_at = self.now.val() + self.cfg.val().fail;
                            self.next_regs.next.armed = self.regs.val().armed | 2;
                            if (self.regs.val().state == DomState::Init) | (self.regs.val().state == DomState::Failed) {
                                self.next_regs.next.fwd = self.primary_mask.val();
                                self.flush.next = true;
                                self.next_regs.next.state = DomState::Complete;
                                self.cause.next = 2.into(); // cause::HEALTH_RETURNED
                                self.send.next.mask = self.link.val();
                                self.send.next.eaps_type = 6.into();
                                self.send.next.state = 1.into();
                            }
                        } else if (self.pdu.val().eaps_type == 8) & self.may_fail.val() {
                            self.fail_ring.next = true;
                            self.cause.next = 3.into(); // cause::LINK_DOWN_PDU
                        }
                    } else {
                        if (self.link.val() & self.other_port_mask.val()).any() {
                            self.inc_fwd.next = true;
                            self.send.next.mask = self.other_port_mask.val();
                            self.send.next.forward = true;
                        }
                        if self.pdu.val().eaps_type == 6 {
                            self.flush.next = true;
                            // Only a port waiting (held or armed) on the other side opens
                            // (docs/eaps.md §6.10).
                            if (self.waiting.val() & self.other_port_mask.val()).any() {
                                self.opened.next = true;
                                self.next_regs.next.armed =
                                    self.regs.val().armed & !(bit_cast::<5, 2>(self.other_port_mask.val()) << 2);
                                self.next_regs.next.fwd = self.regs.val().fwd | self.other_port_mask.val();
                            }
                            if self.opened.val() {
                                self.derive.next = true;
                                self.cause.next = 9.into(); // cause::RING_UP_FLUSH
                            }
                        }
                        // HEALTH carrying the master's Complete state: every armed port opens (§4).
                        if (self.pdu.val().eaps_type == 5) & (self.pdu.val().state == 1) & self.ready.val().any() {
                            self.flush.next = true;
                            self.next_regs.next.fwd = self.regs.val().fwd | self.ready.val();
                            self.derive.next = true;
                            self.cause.next = 10.into(); // cause::HEALTH_COMPLETE
                        }
                        if self.pdu.val().eaps_type == 7 {
                            self.flush.next = true;
                        }
                    }
                }
            }
            Event::Timers => match self.step.val().index() {
                0 => {
                    if self.due.val().get_bit(0) {
                        self.next_regs.next.hello_at = self.now.val() + self.cfg.val().hello;
                        self.next_regs.next.hello_seq = self.regs.val().hello_seq + 1;
                        if (self.link.val() & self.primary_mask.val()).any() {
                            self.send.next.mask = self.primary_mask.val();
                            self.send.next.eaps_type = 5.into();
                            self.send.next.state = self.wire_state.val();
                        }
                    }
                }
                1 => {
                    if self.due.val().get_bit(1) {
                        self.next_regs.next.armed = self.regs.val().armed & 0x1d;
                        if (self.regs.val().state == DomState::Init) | (self.regs.val().state == DomState::Complete) {
                            self.alert.next = true;
                            self.cause.next = 8.into(); // cause::FAIL_TIMER
                            if !self.cfg.val().send_alert & !self.om_active.val() {
                                self.fail_ring.next = true;
                            } else {
                                self.next_regs.next.state = DomState::Failed;
                            }
                        }
                    }
                }
                // A port's hold runs out: it is armed (its timer bit clears), still blocked (§4).
                2 => {
                    if self.due.val().get_bit(2) {
                        self.next_regs.next.armed = self.regs.val().armed & 0x1b;
                    }
                }
                _ => {
                    if self.due.val().get_bit(3) {
                        self.next_regs.next.armed = self.regs.val().armed & 0x17;
                    }
                }
            },
        }
        // Master: Failed, secondary open where its link is up, flush, RING-DOWN out of the
        // ports that are up.
        if self.fail_ring.val() {
            self.next_regs.next.armed = self.next_regs.val().armed & 0x1d;
            self.next_regs.next.fwd = self.next_regs.val().fwd | (self.link.val() & self.secondary_mask.val());
            self.flush.next = true;
            self.next_regs.next.state = DomState::Failed;
            self.send.next.mask = self.link.val();
            self.send.next.eaps_type = 7.into();
            self.send.next.state = 2.into();
        }
        // Transit: the state follows from the links and the port states.
        if self.derive.val() {
            if self.link.val() != 3 {
                self.next_regs.next.state = DomState::LinksDown;
            } else if (self.next_regs.val().armed & 12).any() | (self.next_regs.val().fwd != 3) {
                self.next_regs.next.state = DomState::PreForwarding;
            } else {
                self.next_regs.next.state = DomState::LinksUp;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    //! The block against the transition tables of docs/eaps.md §3 (master), §4 (transit) and
    //! §5 (timers), with the choices of §6, row by row: one domain, one event, every output.
    use super::*;
    use crate::eaps::domain::cause;
    use spotagg_driver::wire::eaps::EapsType;

    const MAC: u64 = 0x0200_5a00_0001;
    const OTHER_MAC: u64 = 0x0200_5a00_0009;
    const NOW: u64 = 1_000;
    const HELLO: u64 = 10;
    const FAIL: u64 = 30;
    const PRE: u64 = 40;
    const VLAN: u64 = 100;
    // Armed bits.
    const A_HELLO: u64 = 1;
    const A_FAIL: u64 = 2;
    const A_PF0: u64 = 4;
    const A_PF1: u64 = 8;
    const A_OM: u64 = 16;

    fn c(cause: u32) -> Bits<4> {
        (cause as u64).into()
    }

    type Setup = Box<dyn FnOnce(&mut DomainStep)>;

    fn ty(t: EapsType) -> Bits<8> {
        (u8::from(t) as u64).into()
    }

    /// Everything the block says.
    #[derive(Debug, PartialEq)]
    struct Out {
        n: DomRegs,
        cause: Bits<4>,
        inc_rx: bool,
        inc_fwd: bool,
        inc_drop: bool,
        inc_malformed: Bits<3>,
        pass: bool,
        esl_write: bool,
        flush: bool,
        alert: bool,
        alert_second_master: bool,
        send: PduPlan,
        last_step: bool,
    }

    impl Out {
        /// Nothing happens: the registers stay `k`.
        fn quiet(k: DomRegs) -> Self {
            Out {
                n: k,
                cause: 0.into(),
                inc_rx: false,
                inc_fwd: false,
                inc_drop: false,
                inc_malformed: 0.into(),
                pass: false,
                esl_write: false,
                flush: false,
                alert: false,
                alert_second_master: false,
                send: PduPlan::default(),
                last_step: true,
            }
        }

        /// A PDU of this node's out of `mask`.
        fn send(mut self, mask: u64, t: EapsType, state: u64) -> Self {
            self.send.mask = mask.into();
            self.send.eaps_type = ty(t);
            self.send.state = state.into();
            self
        }
    }

    /// A domain's registers: state `state`, forwarding `fwd`, armed `armed`; the deadlines in
    /// the future, the hello sequence 7.
    fn regs(state: DomState, fwd: u64, armed: u64) -> DomRegs {
        DomRegs {
            state,
            fwd: fwd.into(),
            hello_seq: 7.into(),
            armed: armed.into(),
            hello_at: (NOW + 5).into(),
            fail_at: (NOW + 20).into(),
            pf0_at: (NOW + 25).into(),
            pf1_at: (NOW + 26).into(),
            om_at: (NOW + 27).into(),
        }
    }

    /// The event `event` on port `port` to a domain (master or transit, primary port 0) with
    /// registers `k` and links `link`; `f` sets anything else (the frame, the due timers).
    fn step(master: bool, event: Event, port: bool, link: u64, k: DomRegs, f: impl FnOnce(&mut DomainStep)) -> Out {
        let mut b = DomainStep::default();
        b.connect_all();
        b.event_kind.next = event;
        b.step.next = 0.into();
        b.port.next = port;
        b.link.next = link.into();
        b.now.next = NOW.into();
        b.system_mac.next = MAC.into();
        b.regs.next = k;
        b.cfg.next = DomCfg {
            active: true,
            master,
            primary: false,
            send_alert: false,
            control_vlan: VLAN.into(),
            hello: HELLO.into(),
            fail: FAIL.into(),
            pre_forwarding: PRE.into(),
            hello_field: 1.into(),
            fail_field: 3.into(),
        };
        b.due.next = 0.into();
        b.pdu.next =
            HeldPdu { vid: VLAN.into(), control_vlan: VLAN.into(), system_mac: MAC.into(), ..Default::default() };
        b.esl_pass.next = false;
        f(&mut b);
        crate::step::settle(&mut b);
        Out {
            n: b.next_regs.val(),
            cause: b.cause.val(),
            inc_rx: b.inc_rx.val(),
            inc_fwd: b.inc_fwd.val(),
            inc_drop: b.inc_drop.val(),
            inc_malformed: b.inc_malformed.val(),
            pass: b.pass.val(),
            esl_write: b.esl_write.val(),
            flush: b.flush.val(),
            alert: b.alert.val(),
            alert_second_master: b.alert_second_master.val(),
            send: b.send.val(),
            last_step: b.last_step.val(),
        }
    }

    /// A PDU of type `t` from system MAC `mac`.
    fn pdu(t: EapsType, mac: u64) -> impl FnOnce(&mut DomainStep) {
        move |b| {
            held(b, |p| {
                p.eaps_type = ty(t);
                p.system_mac = mac.into();
            });
        }
    }

    /// Changes the held PDU.
    fn held(b: &mut DomainStep, f: impl FnOnce(&mut HeldPdu)) {
        let mut p = b.pdu.val();
        f(&mut p);
        b.pdu.next = p;
    }

    /// Timer `which` (0 hello, 1 fail, 2 and 3 pre-forwarding) due.
    fn timer(b: &mut DomainStep, which: u64) {
        b.step.next = which.into();
        b.due.next = (1u64 << which).into();
    }

    #[test]
    fn master_follows_section_3() {
        use DomState::*;
        let m = |event, port, link, k, f: Setup| step(true, event, port, link, k, f);
        let none = |_: &mut DomainStep| {};

        // Idle, enable: Init, primary forwarding, HEALTH out of it, hello and fail started.
        let k = regs(Idle, 0, 0);
        let mut e = Out::quiet(k).send(1, EapsType::Health, 0);
        e.n.state = Init;
        e.n.fwd = 1.into();
        e.n.armed = (A_HELLO | A_FAIL).into();
        e.n.hello_seq = 8.into();
        e.n.hello_at = (NOW + HELLO).into();
        e.n.fail_at = (NOW + FAIL).into();
        e.cause = c(cause::ENABLED);
        assert_eq!(m(Event::Enable, false, 3, k, Box::new(none)), e, "enable");
        // With the primary down: no HEALTH.
        let mut e2 = e;
        e2.send = PduPlan::default();
        assert_eq!(m(Event::Enable, false, 2, k, Box::new(none)), e2, "enable, primary down");

        // Init or Failed, own HEALTH on the secondary: Complete, flush, RING-UP out of both.
        for from in [Init, Failed] {
            let k = regs(from, 3, A_HELLO | A_FAIL);
            let mut e = Out::quiet(k).send(3, EapsType::RingUpFlushFdb, 1);
            e.n.state = Complete;
            e.n.fwd = 1.into();
            e.n.fail_at = (NOW + FAIL).into();
            e.inc_rx = true;
            e.flush = true;
            e.cause = c(cause::HEALTH_RETURNED);
            assert_eq!(m(Event::Frame, true, 3, k, Box::new(pdu(EapsType::Health, MAC))), e, "{from:?}, HEALTH back");
        }
        // Complete, own HEALTH: the fail timer restarts, nothing else.
        let k = regs(Complete, 1, A_HELLO | A_FAIL);
        let mut e = Out::quiet(k);
        e.n.fail_at = (NOW + FAIL).into();
        e.inc_rx = true;
        assert_eq!(m(Event::Frame, true, 3, k, Box::new(pdu(EapsType::Health, MAC))), e, "Complete, HEALTH back");
        // Own HEALTH on the primary: received, nothing done.
        let mut e = Out::quiet(k);
        e.inc_rx = true;
        assert_eq!(m(Event::Frame, false, 3, k, Box::new(pdu(EapsType::Health, MAC))), e, "HEALTH on the primary");

        // Complete, the primary's link down (the node acts on links = secondary only): Failed,
        // secondary open, flush, RING-DOWN out of the port that is up.
        // (Entering Failed stops the fail timer: the ring is known broken.)
        let mut e = Out::quiet(k).send(2, EapsType::RingDownFlushFdb, 2);
        e.n.state = Failed;
        e.n.fwd = 2.into();
        e.n.armed = A_HELLO.into();
        e.flush = true;
        e.cause = c(cause::LOCAL_LINK_DOWN0);
        assert_eq!(m(Event::LinkDown, false, 2, k, Box::new(none)), e, "Complete, port 0 down");
        // The secondary's link down: Failed, nothing to open; RING-DOWN out of the primary.
        let mut e = Out::quiet(k).send(1, EapsType::RingDownFlushFdb, 2);
        e.n.state = Failed;
        e.n.armed = A_HELLO.into();
        e.flush = true;
        e.cause = c(cause::LOCAL_LINK_DOWN1);
        assert_eq!(m(Event::LinkDown, true, 1, k, Box::new(none)), e, "Complete, port 1 down");
        // LINK-DOWN received: as a local failure.
        let mut e = Out::quiet(k).send(3, EapsType::RingDownFlushFdb, 2);
        e.n.state = Failed;
        e.n.fwd = 3.into();
        e.n.armed = A_HELLO.into();
        e.inc_rx = true;
        e.flush = true;
        e.cause = c(cause::LINK_DOWN_PDU);
        assert_eq!(m(Event::Frame, false, 3, k, Box::new(pdu(EapsType::LinkDown, OTHER_MAC))), e, "LINK-DOWN");
        // In Failed with the secondary already open, LINK-DOWN does nothing more (§3 "same").
        let kf = regs(Failed, 3, A_HELLO);
        let mut e = Out::quiet(kf);
        e.inc_rx = true;
        assert_eq!(m(Event::Frame, false, 3, kf, Box::new(pdu(EapsType::LinkDown, OTHER_MAC))), e, "Failed, open");

        // The fail timer, open-secondary, no other master: Failed, alert, secondary open.
        for from in [Init, Complete] {
            let k = regs(from, 1, A_HELLO | A_FAIL);
            let mut e = Out::quiet(k).send(3, EapsType::RingDownFlushFdb, 2);
            e.n.state = Failed;
            e.n.fwd = 3.into();
            e.n.armed = A_HELLO.into();
            e.flush = true;
            e.alert = true;
            e.cause = c(cause::FAIL_TIMER);
            e.last_step = false;
            assert_eq!(
                m(Event::Timers, false, 3, k, Box::new(|b: &mut DomainStep| timer(b, 1))),
                e,
                "{from:?}, fail timer"
            );
        }
        // The same with send-alert, or with another master heard: Failed, secondary blocked.
        let k = regs(Complete, 1, A_HELLO | A_FAIL);
        let mut e = Out::quiet(k);
        e.n.state = Failed;
        e.n.armed = A_HELLO.into();
        e.alert = true;
        e.cause = c(cause::FAIL_TIMER);
        e.last_step = false;
        let send_alert = |b: &mut DomainStep| {
            timer(b, 1);
            let mut c = b.cfg.val();
            c.send_alert = true;
            b.cfg.next = c;
        };
        assert_eq!(m(Event::Timers, false, 3, k, Box::new(send_alert)), e, "fail timer, send-alert");
        let k_om = regs(Complete, 1, A_HELLO | A_FAIL | A_OM);
        let mut e = Out::quiet(k_om);
        e.n.state = Failed;
        e.n.armed = (A_HELLO | A_OM).into();
        e.alert = true;
        e.cause = c(cause::FAIL_TIMER);
        e.last_step = false;
        assert_eq!(
            m(Event::Timers, false, 3, k_om, Box::new(|b: &mut DomainStep| timer(b, 1))),
            e,
            "fail timer, other master"
        );

        // Another master's HEALTH, RING-UP or RING-DOWN: dropped, alert once per fail period.
        for t in [EapsType::Health, EapsType::RingUpFlushFdb, EapsType::RingDownFlushFdb] {
            let mut e = Out::quiet(k);
            e.n.om_at = (NOW + FAIL).into();
            e.n.armed = (A_HELLO | A_FAIL | A_OM).into();
            e.inc_rx = true;
            e.inc_drop = true;
            e.alert = true;
            e.alert_second_master = true;
            assert_eq!(m(Event::Frame, true, 3, k, Box::new(pdu(t, OTHER_MAC))), e, "second master, {t:?}");
            // Heard within the fail period: no second alert.
            e.alert = false;
            e.alert_second_master = false;
            assert_eq!(m(Event::Frame, true, 3, k_om, Box::new(pdu(t, OTHER_MAC))), e, "second master again, {t:?}");
        }

        // Link up: that port stays blocked.
        let k = regs(Failed, 1, A_HELLO);
        assert_eq!(m(Event::LinkUp, true, 3, k, Box::new(none)), Out::quiet(k), "link up");

        // The hello timer: HEALTH out of the primary with the state, the sequence +1.
        for (st, wire) in [(Init, 0), (Complete, 1), (Failed, 2)] {
            let k = regs(st, 1, A_HELLO | A_FAIL);
            let mut e = Out::quiet(k).send(1, EapsType::Health, wire);
            e.n.hello_at = (NOW + HELLO).into();
            e.n.hello_seq = 8.into();
            e.last_step = false;
            assert_eq!(m(Event::Timers, false, 3, k, Box::new(|b: &mut DomainStep| timer(b, 0))), e, "hello, {st:?}");
            // The primary down: the sequence still counts, nothing is sent (§6.7).
            let mut e2 = Out::quiet(k);
            e2.n = e.n;
            e2.last_step = false;
            assert_eq!(
                m(Event::Timers, false, 2, k, Box::new(|b: &mut DomainStep| timer(b, 0))),
                e2,
                "hello, primary down"
            );
        }

        // A PDU whose control VLAN field is not the VLAN it came on: received, dropped.
        let k = regs(Complete, 1, A_HELLO | A_FAIL);
        let mut e = Out::quiet(k);
        e.inc_rx = true;
        e.inc_drop = true;
        let wrong_vlan = |b: &mut DomainStep| {
            held(b, |p| {
                p.eaps_type = ty(EapsType::Health);
                p.control_vlan = (VLAN + 1).into();
            });
        };
        assert_eq!(m(Event::Frame, true, 3, k, Box::new(wrong_vlan)), e, "control VLAN mismatch");

        // Another EDP frame (§2, §11): passed only as a valid ESL PDU newer than the last.
        for (ok, newer) in [(false, false), (true, false), (false, true), (true, true)] {
            let mut e = Out::quiet(k);
            e.inc_drop = !(ok && newer);
            e.inc_fwd = ok && newer;
            e.pass = ok && newer;
            e.esl_write = ok && newer;
            let other = move |b: &mut DomainStep| {
                held(b, |p| {
                    p.other = true;
                    p.esl_ok = ok;
                });
                b.esl_pass.next = newer;
            };
            assert_eq!(m(Event::Frame, false, 3, k, Box::new(other)), e, "master, ESL ok {ok}, newer {newer}");
        }
    }

    #[test]
    fn transit_follows_section_4() {
        use DomState::*;
        let t = |event, port, link, k, f: Setup| step(false, event, port, link, k, f);
        let none = |_: &mut DomainStep| {};

        // Idle, enable (§6.11): every port blocked, the ports that are up wait.
        let k = regs(Idle, 3, 0);
        for (link, st, armed) in [(3, PreForwarding, A_PF0 | A_PF1), (1, LinksDown, A_PF0), (0, LinksDown, 0)] {
            let mut e = Out::quiet(k);
            e.n.state = st;
            e.n.fwd = 0.into();
            e.n.armed = armed.into();
            if link & 1 != 0 {
                e.n.pf0_at = (NOW + PRE).into();
            }
            if link & 2 != 0 {
                e.n.pf1_at = (NOW + PRE).into();
            }
            e.cause = c(cause::ENABLED);
            assert_eq!(t(Event::Enable, false, link, k, Box::new(none)), e, "enable, links {link}");
        }

        // Links-Up, port 1 down: Links-Down, port 1 blocked, LINK-DOWN out of port 0.
        let up = regs(LinksUp, 3, 0);
        let mut e = Out::quiet(up).send(1, EapsType::LinkDown, 4);
        e.n.state = LinksDown;
        e.n.fwd = 1.into();
        e.cause = c(cause::LOCAL_LINK_DOWN1);
        assert_eq!(t(Event::LinkDown, true, 1, up, Box::new(none)), e, "port 1 down");
        // Both down: nothing to send it out of; a waiting port's timer is cancelled.
        let k = regs(LinksDown, 0, A_PF0);
        let mut e = Out::quiet(k);
        e.n.armed = 0.into();
        e.cause = c(cause::LOCAL_LINK_DOWN0);
        assert_eq!(t(Event::LinkDown, false, 0, k, Box::new(none)), e, "port 0 down too");

        // Links-Down, port 1 comes up: it stays blocked, its timer starts.
        let k = regs(LinksDown, 1, 0);
        let mut e = Out::quiet(k);
        e.n.state = PreForwarding;
        e.n.armed = A_PF1.into();
        e.n.pf1_at = (NOW + PRE).into();
        e.cause = c(cause::LOCAL_LINK_UP1);
        assert_eq!(t(Event::LinkUp, true, 3, k, Box::new(none)), e, "port 1 up");
        // With port 0 still down: Links-Down.
        let k0 = regs(LinksDown, 0, 0);
        let mut e = Out::quiet(k0);
        e.n.armed = A_PF1.into();
        e.n.pf1_at = (NOW + PRE).into();
        e.cause = c(cause::LOCAL_LINK_UP1);
        assert_eq!(t(Event::LinkUp, true, 2, k0, Box::new(none)), e, "port 1 up, port 0 down");

        // Port 1 waiting; RING-UP on port 0 (the other port, §6.10): port 1 opens, flush,
        // Links-Up; the PDU goes on out of port 1.
        let waiting = regs(PreForwarding, 1, A_PF1);
        let mut e = Out::quiet(waiting);
        e.n.state = LinksUp;
        e.n.fwd = 3.into();
        e.n.armed = 0.into();
        e.inc_rx = true;
        e.inc_fwd = true;
        e.flush = true;
        e.send.mask = 2.into();
        e.send.forward = true;
        e.cause = c(cause::RING_UP_FLUSH);
        assert_eq!(
            t(Event::Frame, false, 3, waiting, Box::new(pdu(EapsType::RingUpFlushFdb, OTHER_MAC))),
            e,
            "RING-UP, other port"
        );
        // RING-UP on port 1 itself: flush and forward, the port keeps waiting.
        let mut e = Out::quiet(waiting);
        e.inc_rx = true;
        e.inc_fwd = true;
        e.flush = true;
        e.send.mask = 1.into();
        e.send.forward = true;
        assert_eq!(
            t(Event::Frame, true, 3, waiting, Box::new(pdu(EapsType::RingUpFlushFdb, OTHER_MAC))),
            e,
            "RING-UP, same port"
        );

        // RING-DOWN: flush, forwarded. HEALTH and LINK-DOWN: forwarded only.
        for (ty_, flush) in [(EapsType::RingDownFlushFdb, true), (EapsType::Health, false), (EapsType::LinkDown, false)]
        {
            let mut e = Out::quiet(up);
            e.inc_rx = true;
            e.inc_fwd = true;
            e.flush = flush;
            e.send.mask = 2.into();
            e.send.forward = true;
            assert_eq!(t(Event::Frame, false, 3, up, Box::new(pdu(ty_, OTHER_MAC))), e, "{ty_:?}");
            // The other port down: received, not forwarded.
            let mut e2 = Out::quiet(up);
            e2.inc_rx = true;
            e2.flush = flush;
            assert_eq!(t(Event::Frame, false, 1, up, Box::new(pdu(ty_, OTHER_MAC))), e2, "{ty_:?}, other port down");
        }

        // A port's pre-forwarding hold runs out: it is armed (its timer bit clears), still blocked,
        // nothing else (§4: the hold alone opens nothing).
        for which in [2u64, 3] {
            let k = regs(PreForwarding, 3 ^ (1 << (which - 2)), A_PF0 << (which - 2));
            let mut e = Out::quiet(k);
            e.n.armed = 0.into();
            e.last_step = which == 3;
            assert_eq!(
                t(Event::Timers, false, 3, k, Box::new(move |b: &mut DomainStep| timer(b, which))),
                e,
                "timer {which}"
            );
        }
        // HEALTH-Complete: every armed port (up, blocked, hold over) opens, flush, derived state;
        // a held port keeps waiting; a Failed master's HEALTH opens nothing.
        let health = |state: u64| {
            move |b: &mut DomainStep| {
                held(b, |p| {
                    p.eaps_type = ty(EapsType::Health);
                    p.system_mac = OTHER_MAC.into();
                    p.state = state.into();
                })
            }
        };
        for (fwd, armed, open, st) in [(2u64, 0u64, 3u64, LinksUp), (0, 0, 3, LinksUp), (0, A_PF1, 1, PreForwarding)] {
            let k = regs(PreForwarding, fwd, armed);
            let mut e = Out::quiet(k);
            e.inc_rx = true;
            e.inc_fwd = true;
            e.send.mask = 2.into();
            e.send.forward = true;
            e.flush = true;
            e.n.fwd = open.into();
            e.n.state = st;
            e.cause = c(cause::HEALTH_COMPLETE);
            assert_eq!(
                t(Event::Frame, false, 3, k, Box::new(health(1))),
                e,
                "HEALTH-Complete, fwd {fwd}, armed {armed}"
            );
            let mut e = Out::quiet(k);
            e.inc_rx = true;
            e.inc_fwd = true;
            e.send.mask = 2.into();
            e.send.forward = true;
            assert_eq!(t(Event::Frame, false, 3, k, Box::new(health(2))), e, "HEALTH-Failed, fwd {fwd}, armed {armed}");
        }
        // Only held ports: HEALTH-Complete opens nothing.
        let k = regs(PreForwarding, 2, A_PF0);
        let mut e = Out::quiet(k);
        e.inc_rx = true;
        e.inc_fwd = true;
        e.send.mask = 2.into();
        e.send.forward = true;
        assert_eq!(t(Event::Frame, false, 3, k, Box::new(health(1))), e, "HEALTH-Complete, port held");
        // RING-UP on the other port opens an armed port too.
        let k = regs(PreForwarding, 1, 0);
        let mut e = Out::quiet(k);
        e.n.state = LinksUp;
        e.n.fwd = 3.into();
        e.inc_rx = true;
        e.inc_fwd = true;
        e.flush = true;
        e.send.mask = 2.into();
        e.send.forward = true;
        e.cause = c(cause::RING_UP_FLUSH);
        assert_eq!(
            t(Event::Frame, false, 3, k, Box::new(pdu(EapsType::RingUpFlushFdb, OTHER_MAC))),
            e,
            "RING-UP, armed"
        );
        // A malformed frame: counted by reason, nothing else; in Idle not even that.
        for code in 1..=4u64 {
            let bad = move |b: &mut DomainStep| held(b, |p| p.malformed = code.into());
            let mut e = Out::quiet(up);
            e.inc_malformed = code.into();
            assert_eq!(t(Event::Frame, false, 3, up, Box::new(bad)), e, "malformed {code}");
        }
        let idle = regs(Idle, 3, 0);
        let bad = |b: &mut DomainStep| held(b, |p| p.malformed = 3.into());
        assert_eq!(t(Event::Frame, false, 3, idle, Box::new(bad)), Out::quiet(idle), "malformed, Idle");

        // Another EDP frame: passed whenever the other port is up, whatever the ESL check.
        let mut e = Out::quiet(up);
        e.inc_fwd = true;
        e.pass = true;
        assert_eq!(
            t(Event::Frame, true, 3, up, Box::new(|b: &mut DomainStep| held(b, |p| p.other = true))),
            e,
            "other EDP"
        );
        let e2 = Out::quiet(up);
        assert_eq!(
            t(Event::Frame, true, 2, up, Box::new(|b: &mut DomainStep| held(b, |p| p.other = true))),
            e2,
            "other EDP, port 0 down"
        );
    }

    #[test]
    fn idle_domain_and_timers_not_due_do_nothing() {
        for master in [false, true] {
            let idle = regs(DomState::Idle, 3, 0);
            for event in [Event::LinkDown, Event::LinkUp, Event::Frame] {
                let f = |b: &mut DomainStep| {
                    held(b, |p| {
                        p.eaps_type = ty(EapsType::Health);
                        p.other = true;
                    });
                };
                assert_eq!(step(master, event, false, 3, idle, f), Out::quiet(idle), "{event:?} on Idle");
            }
            // An inactive domain ignores enable.
            let off = |b: &mut DomainStep| {
                let mut c = b.cfg.val();
                c.active = false;
                b.cfg.next = c;
            };
            assert_eq!(step(master, Event::Enable, false, 3, idle, off), Out::quiet(idle), "enable, inactive");
            // A timer step whose timer is not due.
            let k = regs(if master { DomState::Complete } else { DomState::PreForwarding }, 1, 0x1f);
            for which in 0..4u64 {
                let mut e = Out::quiet(k);
                e.last_step = which == 3;
                let f = move |b: &mut DomainStep| {
                    b.step.next = which.into();
                    b.due.next = (0xf ^ (1u64 << which)).into();
                };
                assert_eq!(step(master, Event::Timers, false, 3, k, f), e, "timer {which} not due");
            }
        }
    }
}
