//! The reference EAPS node (RFC 3619): the executable specification of docs/eaps.md.
//!
//! Sans-I/O: the caller owns time and the wire. It passes in link events
//! ([`EapsNode::link_down`], [`EapsNode::link_up`]), received control-VLAN frames
//! ([`EapsNode::handle_frame`]) and timer expiries ([`EapsNode::handle_timeout`] at or after
//! [`EapsNode::poll_timeout`]); every call returns the [`Action`]s to carry out: frames to send
//! per ring port, port-state changes per domain (a domain's state applies to its protected
//! VLANs), FDB flushes, state transitions and alerts. Time is virtual, in nanoseconds.
//!
//! A node has two ring ports (0 and 1) and any number of domains on them, each with its own
//! role, control VLAN, protected VLANs and timers (spatial reuse). [`shared`] is the shared
//! port of docs/eaps.md §11. The ring simulators that run N of them, and the hardware nodes
//! checked against them, are `spotagg_sim::eaps`'s; the Linux daemon (`spotagg eaps`) runs one.

pub mod shared;

use spotagg_driver::wire::eaps::{emit_frame, parse_edp, EapsRepr, EapsState, EapsType, Edp, Malformed};
use spotagg_driver::wire::{esl, Error as WireError, MacAddr};

/// Virtual time in nanoseconds.
pub type Nanos = u64;
/// One millisecond.
pub const MS: Nanos = 1_000_000;
/// One microsecond.
pub const US: Nanos = 1_000;
/// A ring port: 0 or 1.
pub type Port = usize;

/// The role of the node in one domain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Sends HEALTH, blocks its secondary port while the ring is complete.
    Master,
    /// Forwards control PDUs, reports its link failures.
    Transit,
}

/// What a master does when its fail timer expires (no HEALTH came back in time).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailAction {
    /// Enter Failed and open the secondary port (RFC 3619).
    OpenSecondary,
    /// Enter Failed and raise an alert, keeping the secondary port blocked (ExtremeXOS
    /// `send-alert`): safe where a link can fail without the PHY noticing, at the price of
    /// no recovery in that case.
    SendAlert,
}

/// One domain's configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DomainConfig {
    /// Role.
    pub role: Role,
    /// The primary port (the master sends HEALTH out of it); the other port is secondary.
    pub primary: Port,
    /// The control VLAN (PDUs are tagged with it; never blocked).
    pub control_vlan: u16,
    /// The protected VLANs, which the port states apply to.
    pub protected: Vec<u16>,
    /// Hello period (master).
    pub hello: Nanos,
    /// Fail period: a master not receiving its HEALTH back for this long declares a failure.
    pub fail: Nanos,
    /// Pre-forwarding hold: how long a transit port that came up waits before a HEALTH carrying
    /// the master's Complete state may open it (RING-UP-FLUSH-FDB opens it at any time; the
    /// hold alone opens nothing). Must exceed `hello` plus the ring's round trip (docs/eaps.md
    /// §4, §5).
    pub pre_forwarding: Nanos,
    /// Master's action on fail-timer expiry.
    pub fail_action: FailAction,
}

impl DomainConfig {
    /// The secondary port.
    pub fn secondary(&self) -> Port {
        1 - self.primary
    }
    /// The hello and fail timers as PDU fields (milliseconds, saturated to 16 bits).
    fn timer_fields(&self) -> (u16, u16) {
        let ms = |n: Nanos| (n / 1_000_000).min(u64::from(u16::MAX)) as u16;
        (ms(self.hello), ms(self.fail))
    }
}

/// The state of a domain at this node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum State {
    /// Not enabled.
    Idle,
    /// Master, enabled, no HEALTH back yet.
    Init,
    /// Master, ring complete: secondary blocked.
    Complete,
    /// Master, ring broken: secondary open (or held blocked, see [`FailAction::SendAlert`]).
    Failed,
    /// Transit, both ports up and forwarding.
    LinksUp,
    /// Transit, a port down.
    LinksDown,
    /// Transit, both ports up, one still blocked until RING-UP-FLUSH-FDB, or HEALTH-Complete
    /// after the hold.
    PreForwarding,
}

impl State {
    /// The state as the PDU carries it (Init is sent as Idle: the format has no Init).
    pub fn wire(self) -> EapsState {
        match self {
            State::Idle | State::Init => EapsState::Idle,
            State::Complete => EapsState::Complete,
            State::Failed => EapsState::Failed,
            State::LinksUp => EapsState::LinksUp,
            State::LinksDown => EapsState::LinksDown,
            State::PreForwarding => EapsState::PreForwarding,
        }
    }
}

/// Why a transition happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cause {
    /// The domain was enabled.
    Enabled,
    /// The master's HEALTH came back on its secondary port.
    HealthReturned,
    /// A LINK-DOWN PDU arrived.
    LinkDownPdu,
    /// A ring port of this node went down.
    LocalLinkDown(Port),
    /// A ring port of this node came up.
    LocalLinkUp(Port),
    /// The fail timer expired.
    FailTimer,
    /// RING-UP-FLUSH-FDB arrived.
    RingUpFlush,
    /// A HEALTH carrying the master's Complete state reached a port whose pre-forwarding hold
    /// had run out (docs/eaps.md §4).
    HealthComplete,
}

/// A condition for the operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Alert {
    /// The master's fail timer expired.
    FailTimerExpired,
    /// A master heard a master PDU from another system on its control VLAN.
    SecondMaster(MacAddr),
}

/// What the caller must do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Send this frame (a tagged EAPS PDU, no FCS) out of this ring port.
    Send {
        /// Ring port.
        port: Port,
        /// The frame.
        frame: Vec<u8>,
    },
    /// The domain's protected VLANs now forward (`true`) or are blocked on this port.
    PortState {
        /// Domain index.
        domain: usize,
        /// Ring port.
        port: Port,
        /// Forwarding.
        forwarding: bool,
    },
    /// Flush the learned addresses of the domain's protected VLANs.
    FlushFdb {
        /// Domain index.
        domain: usize,
    },
    /// The domain changed state.
    Transition {
        /// Domain index.
        domain: usize,
        /// Old state.
        from: State,
        /// New state.
        to: State,
        /// Why.
        cause: Cause,
    },
    /// An alert.
    Alert {
        /// Domain index.
        domain: usize,
        /// What.
        alert: Alert,
    },
}

/// Per-domain PDU counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counters {
    /// PDUs this node originated.
    pub tx: u64,
    /// PDUs received on the control VLAN (before forwarding).
    pub rx: u64,
    /// PDUs forwarded from one ring port to the other (transit).
    pub forwarded: u64,
    /// PDUs dropped: tag and control VLAN field disagree, or a foreign master's PDU.
    pub dropped: u64,
    /// Malformed EDP frames on the control VLAN, dropped, by reason (docs/eaps.md §1.1), in
    /// the order of [`Malformed::ALL`]: length, version, checksum, TLV list.
    pub malformed: [u64; 4],
}

impl Counters {
    /// Malformed frames of one reason.
    pub fn malformed(&self, reason: Malformed) -> u64 {
        self.malformed[reason.index()]
    }
}

#[derive(Debug, Clone)]
struct Domain {
    cfg: DomainConfig,
    state: State,
    forwarding: [bool; 2],
    hello_seq: u16,
    next_hello: Option<Nanos>,
    fail_deadline: Option<Nanos>,
    /// A port waiting for evidence (docs/eaps.md §4), its hold running until then.
    pre_forwarding: [Option<Nanos>; 2],
    /// A port waiting for evidence whose hold has run out: the next HEALTH-Complete opens it.
    armed: [bool; 2],
    other_master_until: Option<Nanos>,
    counters: Counters,
    last_transition: Option<(Nanos, Cause)>,
}

/// A frame the node could not take.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    /// Not an EAPS PDU (or damaged): the wire error says why.
    #[error("not an EAPS PDU: {0}")]
    Wire(WireError),
    /// An EAPS PDU on a VLAN none of this node's domains uses as control VLAN.
    #[error("EAPS PDU on VLAN {0}, which is no domain's control VLAN here")]
    UnknownDomain(u16),
}

/// How many ESL senders a master remembers for its pass rule (docs/eaps.md §2): the ends of
/// two common links on its ring. The hardware node's table has the same size.
pub const ESL_SEEN: usize = 4;

/// An entry of a master's table of ESL senders (docs/eaps.md §2): the last EDP sequence passed
/// from `mac` on domain `domain`'s control VLAN; live while the time is before `until`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EslSeen {
    /// Domain index.
    pub domain: usize,
    /// The ESL PDU's system MAC.
    pub mac: MacAddr,
    /// The EDP sequence of the last PDU passed.
    pub seq: u16,
    /// Live until then: the time it was passed plus the domain's fail period.
    pub until: Nanos,
}

/// A reference EAPS node.
#[derive(Debug, Clone)]
pub struct EapsNode {
    mac: MacAddr,
    link_up: [bool; 2],
    edp_seq: u16,
    domains: Vec<Domain>,
    esl_seen: [Option<EslSeen>; ESL_SEEN],
    master_pass_rule: bool,
}

impl EapsNode {
    /// A node with system MAC `mac` and these domains, all Idle. `link_up` is the ring ports'
    /// link state at start.
    pub fn new(mac: MacAddr, domains: Vec<DomainConfig>, link_up: [bool; 2]) -> EapsNode {
        let domains = domains
            .into_iter()
            .map(|cfg| Domain {
                cfg,
                state: State::Idle,
                forwarding: [true, true],
                hello_seq: 0,
                next_hello: None,
                fail_deadline: None,
                pre_forwarding: [None; 2],
                armed: [false; 2],
                other_master_until: None,
                counters: Counters::default(),
                last_transition: None,
            })
            .collect();
        EapsNode { mac, link_up, edp_seq: 0, domains, esl_seen: [None; ESL_SEEN], master_pass_rule: true }
    }

    /// Turns the master's pass rule for other EDP frames (docs/eaps.md §2) off (`false`: a
    /// master passes every one, as before the rule, so that a damaged PDU circles a complete
    /// ring; only to show that loop) or on (the default).
    pub fn set_master_pass_rule(&mut self, on: bool) {
        self.master_pass_rule = on;
    }

    /// The master's table of ESL senders (docs/eaps.md §2).
    pub fn esl_seen(&self) -> &[Option<EslSeen>; ESL_SEEN] {
        &self.esl_seen
    }

    /// System MAC.
    pub fn mac(&self) -> MacAddr {
        self.mac
    }
    /// Number of domains.
    pub fn domain_count(&self) -> usize {
        self.domains.len()
    }
    /// A domain's configuration.
    pub fn config(&self, d: usize) -> &DomainConfig {
        &self.domains[d].cfg
    }
    /// A domain's state.
    pub fn state(&self, d: usize) -> State {
        self.domains[d].state
    }
    /// Whether the domain's protected VLANs forward on `port` (link state aside).
    pub fn forwarding(&self, d: usize, port: Port) -> bool {
        self.domains[d].forwarding[port]
    }
    /// A domain's PDU counters.
    pub fn counters(&self, d: usize) -> Counters {
        self.domains[d].counters
    }
    /// Time and cause of the domain's last transition.
    pub fn last_transition(&self, d: usize) -> Option<(Nanos, Cause)> {
        self.domains[d].last_transition
    }
    /// The domain whose protected VLANs include `vlan`, if any.
    pub fn domain_of_vlan(&self, vlan: u16) -> Option<usize> {
        self.domains.iter().position(|d| d.cfg.protected.contains(&vlan))
    }
    /// Link state of a ring port.
    pub fn link(&self, port: Port) -> bool {
        self.link_up[port]
    }

    /// Enables every domain: masters enter Init (secondary blocked, first HEALTH now),
    /// transits enter Pre-Forwarding or Links-Down, every port blocked: a port up at start opens
    /// on RING-UP-FLUSH-FDB (from its other port) or on HEALTH-Complete after its hold, as
    /// after a link up; a port down at start waits for its link.
    pub fn enable(&mut self, now: Nanos) -> Vec<Action> {
        let mut out = Vec::new();
        for d in 0..self.domains.len() {
            let (role, p, s) = {
                let c = &self.domains[d].cfg;
                (c.role, c.primary, c.secondary())
            };
            match role {
                Role::Master => {
                    self.set_forwarding(d, p, true, &mut out);
                    self.set_forwarding(d, s, false, &mut out);
                    self.transition(d, State::Init, Cause::Enabled, now, &mut out);
                    self.domains[d].fail_deadline = Some(now + self.domains[d].cfg.fail);
                    self.send_health(d, now, &mut out);
                }
                Role::Transit => {
                    // A port that is up at enable waits as one that just came up (RING-UP or
                    // pre-forwarding): the master may be in Failed with its secondary open, as
                    // when a transit restarts (docs/eaps.md §6.11).
                    for port in 0..2 {
                        self.set_forwarding(d, port, false, &mut out);
                        if self.link_up[port] {
                            self.domains[d].pre_forwarding[port] = Some(now + self.domains[d].cfg.pre_forwarding);
                        }
                    }
                    let st = self.transit_state(d);
                    self.transition(d, st, Cause::Enabled, now, &mut out);
                }
            }
        }
        out
    }

    /// The earliest time at which [`EapsNode::handle_timeout`] has work.
    pub fn poll_timeout(&self) -> Option<Nanos> {
        self.domains
            .iter()
            .flat_map(|d| [d.next_hello, d.fail_deadline, d.pre_forwarding[0], d.pre_forwarding[1]])
            .flatten()
            .min()
    }

    /// Runs every timer due at `now`.
    pub fn handle_timeout(&mut self, now: Nanos) -> Vec<Action> {
        let mut out = Vec::new();
        for d in 0..self.domains.len() {
            if let Some(due) = self.domains[d].next_hello.filter(|&t| t <= now) {
                // Served a whole hello period late, the master's host stalled (a Linux daemon;
                // hardware never is) and sent no HEALTH meanwhile: none could come back, so the
                // fail timer runs again from this HEALTH (docs/eaps.md §5). It only delays an
                // opening, never causes one.
                let dom = &mut self.domains[d];
                if now - due >= dom.cfg.hello {
                    if let Some(f) = dom.fail_deadline.as_mut() {
                        *f = (*f).max(now + dom.cfg.fail);
                    }
                }
                self.send_health(d, now, &mut out);
            }
            if self.domains[d].fail_deadline.is_some_and(|t| t <= now) {
                self.domains[d].fail_deadline = None;
                self.fail_timer_expired(d, now, &mut out);
            }
            // The hold ran out: the port is armed, still blocked (docs/eaps.md §4).
            for port in 0..2 {
                if self.domains[d].pre_forwarding[port].is_some_and(|t| t <= now) {
                    self.domains[d].pre_forwarding[port] = None;
                    self.domains[d].armed[port] = true;
                }
            }
        }
        out
    }

    /// A ring port lost its link (hardware detection: the PHY's link status).
    pub fn link_down(&mut self, now: Nanos, port: Port) -> Vec<Action> {
        let mut out = Vec::new();
        if !self.link_up[port] {
            return out;
        }
        self.link_up[port] = false;
        for d in 0..self.domains.len() {
            if self.domains[d].state == State::Idle {
                continue;
            }
            self.domains[d].pre_forwarding[port] = None;
            self.domains[d].armed[port] = false;
            self.set_forwarding(d, port, false, &mut out);
            match self.domains[d].cfg.role {
                Role::Master => {
                    if self.may_fail(d) {
                        self.ring_failed(d, Cause::LocalLinkDown(port), now, &mut out);
                    }
                }
                Role::Transit => {
                    let other = 1 - port;
                    if self.link_up[other] {
                        let pdu = self.pdu(d, EapsType::LinkDown, State::LinksDown);
                        self.send(d, other, &pdu, &mut out);
                    }
                    self.transition(d, State::LinksDown, Cause::LocalLinkDown(port), now, &mut out);
                }
            }
        }
        out
    }

    /// A ring port regained its link. It stays blocked for the protected VLANs: at a transit
    /// until RING-UP-FLUSH-FDB, or HEALTH-Complete after its hold, at the master until its
    /// HEALTH comes back.
    pub fn link_up(&mut self, now: Nanos, port: Port) -> Vec<Action> {
        let mut out = Vec::new();
        if self.link_up[port] {
            return out;
        }
        self.link_up[port] = true;
        for d in 0..self.domains.len() {
            if self.domains[d].state == State::Idle {
                continue;
            }
            self.set_forwarding(d, port, false, &mut out);
            if self.domains[d].cfg.role == Role::Transit {
                self.domains[d].pre_forwarding[port] = Some(now + self.domains[d].cfg.pre_forwarding);
                self.domains[d].armed[port] = false;
                let st = self.transit_state(d);
                self.transition(d, st, Cause::LocalLinkUp(port), now, &mut out);
            }
        }
        out
    }

    /// A frame received on a ring port on some domain's control VLAN, read by the receiver
    /// rules of docs/eaps.md §1.1: an EAPS PDU is acted on (and forwarded by a transit),
    /// another EDP frame passed on (§2), a malformed one dropped and counted by reason.
    pub fn handle_frame(&mut self, now: Nanos, port: Port, frame: &[u8]) -> Result<Vec<Action>, FrameError> {
        let (vid, pdu) = match parse_edp(frame) {
            None => return Err(FrameError::Wire(WireError::Unsupported)),
            Some(Edp::Other { vid }) => return self.forward_other_edp(now, port, frame, vid),
            Some(Edp::Malformed { vid, reason }) => {
                let d = self.domain_of_control_vlan(vid)?;
                if self.domains[d].state != State::Idle {
                    self.domains[d].counters.malformed[reason.index()] += 1;
                }
                return Ok(Vec::new());
            }
            Some(Edp::Eaps { vid, pdu, .. }) => (vid, pdu),
        };
        let d = self.domain_of_control_vlan(vid)?;
        let mut out = Vec::new();
        if self.domains[d].state == State::Idle {
            return Ok(out);
        }
        self.domains[d].counters.rx += 1;
        if pdu.control_vlan != vid {
            self.domains[d].counters.dropped += 1;
            return Ok(out);
        }
        match self.domains[d].cfg.role {
            Role::Master => self.master_rx(d, now, port, &pdu, &mut out),
            Role::Transit => {
                let other = 1 - port;
                if self.link_up[other] {
                    self.domains[d].counters.forwarded += 1;
                    out.push(Action::Send { port: other, frame: forwarded_frame(frame, &pdu) });
                }
                match pdu.eaps_type {
                    EapsType::RingUpFlushFdb => {
                        out.push(Action::FlushFdb { domain: d });
                        let mut opened = false;
                        // Only a pending port other than the arrival port opens: the copy that came
                        // in on the other port has swept, in FIFO order, every frame that passed
                        // the master's secondary before it blocked (docs/eaps.md §6.10).
                        for p in (0..2).filter(|&p| p != port) {
                            let held = self.domains[d].pre_forwarding[p].take().is_some();
                            if held | std::mem::take(&mut self.domains[d].armed[p]) {
                                self.set_forwarding(d, p, true, &mut out);
                                opened = true;
                            }
                        }
                        if opened {
                            let st = self.transit_state(d);
                            self.transition(d, st, Cause::RingUpFlush, now, &mut out);
                        }
                    }
                    EapsType::RingDownFlushFdb => out.push(Action::FlushFdb { domain: d }),
                    // The master says its secondary is blocked: armed ports open (docs/eaps.md §4).
                    EapsType::Health if pdu.state == EapsState::Complete && self.domains[d].armed.contains(&true) => {
                        out.push(Action::FlushFdb { domain: d });
                        for p in 0..2 {
                            if std::mem::take(&mut self.domains[d].armed[p]) {
                                self.set_forwarding(d, p, true, &mut out);
                            }
                        }
                        let st = self.transit_state(d);
                        self.transition(d, st, Cause::HealthComplete, now, &mut out);
                    }
                    _ => {}
                }
            }
        }
        Ok(out)
    }

    /// The domain whose control VLAN is `vid`.
    fn domain_of_control_vlan(&self, vid: u16) -> Result<usize, FrameError> {
        self.domains.iter().position(|d| d.cfg.control_vlan == vid).ok_or(FrameError::UnknownDomain(vid))
    }

    /// Another EDP frame (a well-formed one without an EAPS TLV, such as an ESL segment health
    /// PDU of docs/eaps.md §11, or another PID) on one of this node's control VLANs: a transit
    /// passes it to its other ring port, whatever the port states, as the control VLAN is
    /// never blocked; a master passes only a valid ESL PDU newer than the last it passed from
    /// that sender (§2), and drops the rest.
    fn forward_other_edp(&mut self, now: Nanos, port: Port, frame: &[u8], vid: u16) -> Result<Vec<Action>, FrameError> {
        let d = self.domain_of_control_vlan(vid)?;
        let other = 1 - port;
        if self.domains[d].state == State::Idle || !self.link_up[other] {
            return Ok(Vec::new());
        }
        if self.domains[d].cfg.role == Role::Master && self.master_pass_rule && !self.master_passes(now, d, frame) {
            self.domains[d].counters.dropped += 1;
            return Ok(Vec::new());
        }
        self.domains[d].counters.forwarded += 1;
        Ok(vec![Action::Send { port: other, frame: frame.to_vec() }])
    }

    /// The master's pass rule (docs/eaps.md §2): `frame` must be a valid ESL PDU (what
    /// `esl::parse_frame` accepts) whose EDP sequence is newer (16-bit serial order) than the
    /// last one passed from its system MAC on domain `d` while that entry lives (the domain's
    /// fail period after it was passed); a sender not in the table takes the first entry that is
    /// empty or no longer live; with none, the PDU is dropped. Passing refreshes the entry.
    fn master_passes(&mut self, now: Nanos, d: usize, frame: &[u8]) -> bool {
        let Ok((_, pdu)) = esl::parse_frame(frame) else { return false };
        let (mac, seq, until) = (pdu.system_mac, pdu.edp_sequence, now + self.domains[d].cfg.fail);
        let live = |e: &Option<EslSeen>| e.is_some_and(|e| now < e.until);
        let hit = self.esl_seen.iter_mut().find(|e| live(e) && e.is_some_and(|e| e.domain == d && e.mac == mac));
        if let Some(e) = hit.and_then(|e| e.as_mut()) {
            if (seq.wrapping_sub(e.seq) as i16) <= 0 {
                return false;
            }
            e.seq = seq;
            e.until = until;
            return true;
        }
        match self.esl_seen.iter_mut().find(|e| !live(e)) {
            Some(e) => {
                *e = Some(EslSeen { domain: d, mac, seq, until });
                true
            }
            None => false,
        }
    }

    fn master_rx(&mut self, d: usize, now: Nanos, port: Port, pdu: &EapsRepr, out: &mut Vec<Action>) {
        let from_master =
            matches!(pdu.eaps_type, EapsType::Health | EapsType::RingUpFlushFdb | EapsType::RingDownFlushFdb);
        if from_master && pdu.system_mac != self.mac {
            let dom = &mut self.domains[d];
            dom.counters.dropped += 1;
            if dom.other_master_until.is_none_or(|t| t <= now) {
                out.push(Action::Alert { domain: d, alert: Alert::SecondMaster(pdu.system_mac) });
            }
            dom.other_master_until = Some(now + dom.cfg.fail);
            return;
        }
        match pdu.eaps_type {
            EapsType::Health if port == self.domains[d].cfg.secondary() => {
                let fail = self.domains[d].cfg.fail;
                self.domains[d].fail_deadline = Some(now + fail);
                if matches!(self.domains[d].state, State::Init | State::Failed) {
                    let (p, s) = (self.domains[d].cfg.primary, self.domains[d].cfg.secondary());
                    self.set_forwarding(d, s, false, out);
                    self.set_forwarding(d, p, true, out);
                    out.push(Action::FlushFdb { domain: d });
                    self.transition(d, State::Complete, Cause::HealthReturned, now, out);
                    let pdu = self.pdu(d, EapsType::RingUpFlushFdb, State::Complete);
                    for q in 0..2 {
                        if self.link_up[q] {
                            self.send(d, q, &pdu, out);
                        }
                    }
                }
            }
            EapsType::LinkDown if self.may_fail(d) => {
                self.ring_failed(d, Cause::LinkDownPdu, now, out);
            }
            _ => {}
        }
    }

    /// Master: whether a reported link failure opens the ring: in Init and Complete, and in
    /// Failed while the secondary is held blocked (send-alert, second master) and is up.
    fn may_fail(&self, d: usize) -> bool {
        let dom = &self.domains[d];
        let s = dom.cfg.secondary();
        match dom.state {
            State::Init | State::Complete => true,
            State::Failed => !dom.forwarding[s] && self.link_up[s],
            _ => false,
        }
    }

    fn fail_timer_expired(&mut self, d: usize, now: Nanos, out: &mut Vec<Action>) {
        if !matches!(self.domains[d].state, State::Init | State::Complete) {
            return;
        }
        out.push(Action::Alert { domain: d, alert: Alert::FailTimerExpired });
        let other_master = self.domains[d].other_master_until.is_some_and(|t| t > now);
        if self.domains[d].cfg.fail_action == FailAction::OpenSecondary && !other_master {
            self.ring_failed(d, Cause::FailTimer, now, out);
        } else {
            self.transition(d, State::Failed, Cause::FailTimer, now, out);
        }
    }

    /// Master: Failed, secondary open (where its link is up), flush, RING-DOWN-FLUSH-FDB out
    /// of every port that is up.
    fn ring_failed(&mut self, d: usize, cause: Cause, now: Nanos, out: &mut Vec<Action>) {
        let s = self.domains[d].cfg.secondary();
        self.domains[d].fail_deadline = None;
        if self.link_up[s] {
            self.set_forwarding(d, s, true, out);
        }
        out.push(Action::FlushFdb { domain: d });
        self.transition(d, State::Failed, cause, now, out);
        let pdu = self.pdu(d, EapsType::RingDownFlushFdb, State::Failed);
        for q in 0..2 {
            if self.link_up[q] {
                self.send(d, q, &pdu, out);
            }
        }
    }

    fn send_health(&mut self, d: usize, now: Nanos, out: &mut Vec<Action>) {
        let dom = &mut self.domains[d];
        dom.next_hello = Some(now + dom.cfg.hello);
        dom.hello_seq = dom.hello_seq.wrapping_add(1);
        let p = dom.cfg.primary;
        let st = dom.state;
        if self.link_up[p] {
            let pdu = self.pdu(d, EapsType::Health, st);
            self.send(d, p, &pdu, out);
        }
    }

    fn pdu(&self, d: usize, eaps_type: EapsType, state: State) -> EapsRepr {
        let dom = &self.domains[d];
        let (hello_timer, fail_timer) = dom.cfg.timer_fields();
        EapsRepr {
            edp_sequence: self.edp_seq,
            eaps_type,
            control_vlan: dom.cfg.control_vlan,
            system_mac: self.mac,
            hello_timer,
            fail_timer,
            state: state.wire(),
            hello_seq: dom.hello_seq,
        }
    }

    fn send(&mut self, d: usize, port: Port, pdu: &EapsRepr, out: &mut Vec<Action>) {
        let pdu = EapsRepr { edp_sequence: self.edp_seq, ..*pdu };
        self.edp_seq = self.edp_seq.wrapping_add(1);
        self.domains[d].counters.tx += 1;
        out.push(Action::Send { port, frame: emit_frame(&pdu, self.mac, 7) });
    }

    fn set_forwarding(&mut self, d: usize, port: Port, forwarding: bool, out: &mut Vec<Action>) {
        if self.domains[d].forwarding[port] != forwarding {
            self.domains[d].forwarding[port] = forwarding;
            out.push(Action::PortState { domain: d, port, forwarding });
        }
    }

    fn transit_state(&self, d: usize) -> State {
        let dom = &self.domains[d];
        if !self.link_up[0] || !self.link_up[1] {
            State::LinksDown
        } else if dom.pre_forwarding.iter().any(Option::is_some) || !dom.forwarding[0] || !dom.forwarding[1] {
            State::PreForwarding
        } else {
            State::LinksUp
        }
    }

    fn transition(&mut self, d: usize, to: State, cause: Cause, now: Nanos, out: &mut Vec<Action>) {
        let from = self.domains[d].state;
        if from != to {
            self.domains[d].state = to;
            self.domains[d].last_transition = Some((now, cause));
            out.push(Action::Transition { domain: d, from, to, cause });
        }
    }
}

/// The tag's VID if `frame` is another EDP frame that [`EapsNode`] passes on (docs/eaps.md
/// §1.1 steps 1 and 6: well-formed, no EAPS TLV; or LLC/SNAP of another PID).
pub fn other_edp_vlan(frame: &[u8]) -> Option<u16> {
    match parse_edp(frame) {
        Some(Edp::Other { vid }) => Some(vid),
        _ => None,
    }
}

/// The frame a transit forwards for a received PDU: the PDU emitted again from its fields
/// (docs/eaps.md §6.12), with the sender's source MAC and priority kept. Reserved bytes go out
/// as zero, the DEI bit as 0, the machine MAC as the system MAC, other TLVs and padding left
/// out, the null TLV after the EAPS TLV: §1's 110 bytes; for a PDU as §1 defines it this is
/// the received frame byte for byte.
pub fn forwarded_frame(frame: &[u8], pdu: &EapsRepr) -> Vec<u8> {
    let src = MacAddr::from_bytes(&frame[6..12]);
    let pcp = frame[14] >> 5;
    emit_frame(pdu, src, pcp)
}

/// An EAPS PDU with random fields (an unknown type one time in ten): the one generator of the
/// EAPS tests (the HDL blocks' unit tests, the node's differential tests in `spotagg-sim`).
pub fn random_repr(rng: &mut rand_chacha::ChaCha8Rng) -> EapsRepr {
    use rand::Rng;
    let types = [EapsType::Health, EapsType::RingUpFlushFdb, EapsType::RingDownFlushFdb, EapsType::LinkDown];
    let states = [EapsState::Idle, EapsState::Complete, EapsState::Failed, EapsState::LinksUp, EapsState::LinksDown];
    EapsRepr {
        edp_sequence: rng.gen(),
        eaps_type: if rng.gen_bool(0.1) { EapsType::Unknown(rng.gen()) } else { types[rng.gen_range(0..4)] },
        control_vlan: rng.gen_range(1..4095),
        system_mac: MacAddr::from_bytes(&rng.gen::<[u8; 6]>()),
        hello_timer: rng.gen(),
        fail_timer: rng.gen(),
        state: states[rng.gen_range(0..states.len())],
        hello_seq: rng.gen(),
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use spotagg_driver::wire::eaps::parse_frame;

    fn cfg(role: Role) -> DomainConfig {
        DomainConfig {
            role,
            primary: 1,
            control_vlan: 10,
            protected: vec![100],
            hello: MS,
            fail: 3 * MS,
            pre_forwarding: 3 * MS,
            fail_action: FailAction::OpenSecondary,
        }
    }

    /// The first frame that `a` sends.
    fn first_sent(a: &[Action]) -> Vec<u8> {
        a.iter()
            .find_map(|a| match a {
                Action::Send { frame, .. } => Some(frame.clone()),
                _ => None,
            })
            .expect("a frame sent")
    }

    fn sent(a: &[Action]) -> Vec<(Port, EapsType)> {
        a.iter()
            .filter_map(|a| match a {
                Action::Send { port, frame } => Some((*port, parse_frame(frame).unwrap().2.eaps_type)),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn master_init_complete_failed() {
        let mut m = EapsNode::new(MacAddr([2, 0, 0, 0, 0, 1]), vec![cfg(Role::Master)], [true, true]);
        let a = m.enable(0);
        assert_eq!(m.state(0), State::Init);
        assert!(!m.forwarding(0, 0) && m.forwarding(0, 1));
        assert_eq!(sent(&a), vec![(1, EapsType::Health)]);
        let health = match &a.last().unwrap() {
            Action::Send { frame, .. } => frame.clone(),
            _ => unreachable!(),
        };
        // The HEALTH comes back on the secondary: Complete, flush, RING-UP on both ports.
        let a = m.handle_frame(10_000, 0, &health).unwrap();
        assert_eq!(m.state(0), State::Complete);
        assert!(a.contains(&Action::FlushFdb { domain: 0 }));
        assert_eq!(sent(&a), vec![(0, EapsType::RingUpFlushFdb), (1, EapsType::RingUpFlushFdb)]);
        // No HEALTH for the fail period: Failed, secondary open, RING-DOWN.
        let mut t = 10_000;
        while m.state(0) == State::Complete {
            t = m.poll_timeout().unwrap();
            m.handle_timeout(t);
        }
        assert_eq!(t, 10_000 + 3 * MS);
        assert_eq!(m.state(0), State::Failed);
        assert!(m.forwarding(0, 0));
        assert_eq!(m.last_transition(0), Some((t, Cause::FailTimer)));
    }

    /// Serves every timer of `n` due up to `t`, each at its time (a host that never stalls).
    fn run_until(n: &mut EapsNode, t: Nanos) -> Vec<Action> {
        let mut out = Vec::new();
        while let Some(due) = n.poll_timeout().filter(|&d| d <= t) {
            out.extend(n.handle_timeout(due));
        }
        out
    }

    /// A master whose host stalls (its hello served a hello period late or more) restarts its
    /// fail timer with the HEALTH it then sends; on time, the fail timer runs on.
    #[test]
    fn a_stalled_master_restarts_its_fail_timer() {
        let mut m = EapsNode::new(MacAddr([2, 0, 0, 0, 0, 1]), vec![cfg(Role::Master)], [true, true]);
        let a = m.enable(0);
        let health = match &a.last().unwrap() {
            Action::Send { frame, .. } => frame.clone(),
            _ => unreachable!(),
        };
        m.handle_frame(10_000, 0, &health).unwrap();
        assert_eq!(m.state(0), State::Complete);
        // The hello due at 1 ms is served at 2.5 ms: 1.5 hello periods late.
        let stalled = 2 * MS + MS / 2;
        assert_eq!(sent(&m.handle_timeout(stalled)), vec![(1, EapsType::Health)]);
        assert_eq!(m.poll_timeout(), Some(stalled + MS), "the next hello");
        // The fail timer would have run out at 3.01 ms; it now runs out 3 ms after the stall.
        let mut t = stalled;
        while m.state(0) == State::Complete {
            t = m.poll_timeout().unwrap();
            m.handle_timeout(t);
        }
        assert_eq!(t, stalled + 3 * MS);
        assert_eq!(m.last_transition(0), Some((t, Cause::FailTimer)));
        // Served less than a hello period late, nothing changes: Complete again at 10 ms, a
        // hello due at 11.5 ms served at 12.4 ms, and Failed at 13 ms as without the delay.
        let back = 10 * MS;
        m.handle_frame(back, 0, &health).unwrap();
        assert_eq!(m.state(0), State::Complete);
        while m.poll_timeout().unwrap() < back {
            m.handle_timeout(m.poll_timeout().unwrap());
        }
        let due = m.poll_timeout().unwrap();
        m.handle_timeout(due + 9 * MS / 10);
        let mut t = due;
        while m.state(0) == State::Complete {
            t = m.poll_timeout().unwrap();
            m.handle_timeout(t);
        }
        assert_eq!(t, back + 3 * MS);
    }

    /// A HEALTH from a master in `state`.
    fn health(state: EapsState) -> Vec<u8> {
        let r = EapsRepr {
            edp_sequence: 1,
            eaps_type: EapsType::Health,
            control_vlan: 10,
            system_mac: MacAddr([2, 0, 0, 0, 0, 1]),
            hello_timer: 1,
            fail_timer: 3,
            state,
            hello_seq: 1,
        };
        emit_frame(&r, r.system_mac, 7)
    }

    #[test]
    fn transit_link_down_and_pre_forwarding() {
        let mut n = EapsNode::new(MacAddr([2, 0, 0, 0, 0, 2]), vec![cfg(Role::Transit)], [true, true]);
        n.enable(0);
        // Enabled with both links up: both ports wait as after a link up (§6.11).
        assert_eq!(n.state(0), State::PreForwarding);
        assert!(!n.forwarding(0, 0) && !n.forwarding(0, 1));
        // The hold alone opens nothing; a HEALTH-Complete before it runs out neither.
        n.handle_frame(MS, 0, &health(EapsState::Complete)).unwrap();
        assert!(n.handle_timeout(3 * MS).is_empty());
        assert_eq!(n.state(0), State::PreForwarding);
        assert_eq!(n.poll_timeout(), None);
        // A Failed master's HEALTH opens nothing; a Complete one opens both armed ports.
        n.handle_frame(4 * MS, 0, &health(EapsState::Failed)).unwrap();
        assert_eq!(n.state(0), State::PreForwarding);
        let a = n.handle_frame(4 * MS, 0, &health(EapsState::Complete)).unwrap();
        assert!(a.contains(&Action::FlushFdb { domain: 0 }));
        assert_eq!(n.state(0), State::LinksUp);
        assert_eq!(n.last_transition(0), Some((4 * MS, Cause::HealthComplete)));
        let a = n.link_down(100, 0);
        assert_eq!(sent(&a), vec![(1, EapsType::LinkDown)]);
        assert_eq!(n.state(0), State::LinksDown);
        n.link_up(200, 0);
        assert_eq!(n.state(0), State::PreForwarding);
        assert!(!n.forwarding(0, 0));
        assert_eq!(n.poll_timeout(), Some(200 + 3 * MS));
        n.handle_timeout(200 + 3 * MS);
        assert_eq!(n.state(0), State::PreForwarding, "a silent master: the port stays blocked");
        assert!(!n.forwarding(0, 0));
        n.handle_frame(200 + 4 * MS, 1, &health(EapsState::Complete)).unwrap();
        assert!(n.forwarding(0, 0));
        // RING-UP opens a pending port only when it arrives on the other port.
        let mut m = EapsNode::new(MacAddr([2, 0, 0, 0, 0, 1]), vec![cfg(Role::Master)], [true, true]);
        let Action::Send { frame: health, .. } = m.enable(0).pop().unwrap() else { unreachable!() };
        let up = m.handle_frame(MS, 0, &health).unwrap();
        let ring_up = first_sent(&up);
        n.link_down(5 * MS, 0);
        n.link_up(6 * MS, 0);
        let a = n.handle_frame(6 * MS + 1, 0, &ring_up).unwrap();
        assert!(a.contains(&Action::FlushFdb { domain: 0 }));
        assert_eq!(n.state(0), State::PreForwarding);
        n.handle_frame(6 * MS + 2, 1, &ring_up).unwrap();
        assert_eq!(n.state(0), State::LinksUp);
        assert_eq!(n.last_transition(0), Some((6 * MS + 2, Cause::RingUpFlush)));
    }

    #[test]
    fn second_master_keeps_secondary_blocked() {
        let mut m = EapsNode::new(MacAddr([2, 0, 0, 0, 0, 1]), vec![cfg(Role::Master)], [true, true]);
        let mut other = EapsNode::new(MacAddr([2, 0, 0, 0, 0, 9]), vec![cfg(Role::Master)], [true, true]);
        m.enable(0);
        let a = other.enable(0);
        let Action::Send { frame, .. } = a.last().unwrap() else { unreachable!() };
        let a = m.handle_frame(1000, 0, frame).unwrap();
        assert_eq!(a, vec![Action::Alert { domain: 0, alert: Alert::SecondMaster(MacAddr([2, 0, 0, 0, 0, 9])) }]);
        run_until(&mut m, 3 * MS);
        assert_eq!(m.state(0), State::Failed);
        assert!(!m.forwarding(0, 0), "secondary held blocked while another master is heard");
    }

    #[test]
    fn send_alert_holds_secondary_until_a_real_failure() {
        let mut c = cfg(Role::Master);
        c.fail_action = FailAction::SendAlert;
        let mut m = EapsNode::new(MacAddr([2, 0, 0, 0, 0, 1]), vec![c], [true, true]);
        m.enable(0);
        let a = run_until(&mut m, 3 * MS);
        assert!(a.contains(&Action::Alert { domain: 0, alert: Alert::FailTimerExpired }));
        assert_eq!(m.state(0), State::Failed);
        assert!(!m.forwarding(0, 0));
        assert!(sent(&a).iter().all(|&(_, t)| t == EapsType::Health));
        // A transit reports a link down: now the secondary opens and the ring is flushed.
        let mut t = EapsNode::new(MacAddr([2, 0, 0, 0, 0, 2]), vec![cfg(Role::Transit)], [true, true]);
        t.enable(0);
        let down = t.link_down(4 * MS, 1);
        let frame = first_sent(&down);
        let a = m.handle_frame(4 * MS, 1, &frame).unwrap();
        assert!(m.forwarding(0, 0));
        assert_eq!(sent(&a), vec![(0, EapsType::RingDownFlushFdb), (1, EapsType::RingDownFlushFdb)]);
    }

    fn esl(mac: u8, seq: u16, vlan: u16) -> Vec<u8> {
        use spotagg_driver::wire::esl::{EslRepr, EslRole, EslState};
        let m = MacAddr([2, 0, 0, 1, 0, mac]);
        let pdu = EslRepr {
            edp_sequence: seq,
            control_vlan: vlan,
            system_mac: m,
            state: EslState::Ready,
            role: EslRole::Partner,
            link_id: 34,
            failed_link: 0,
            rb_id: 0,
        };
        esl::emit_frame(&pdu, m, 7)
    }

    /// The master's pass rule (docs/eaps.md §2): only valid ESL PDUs, each sender's EDP sequence
    /// strictly newer than the last passed while its entry lives (the fail period), at most
    /// [`ESL_SEEN`] senders; a transit passes everything.
    #[test]
    fn master_passes_each_esl_pdu_once() {
        let mut m = EapsNode::new(MacAddr([2, 0, 0, 0, 0, 1]), vec![cfg(Role::Master)], [true, true]);
        m.enable(0);
        let passed =
            |a: Result<Vec<Action>, FrameError>| matches!(a.unwrap().as_slice(), [Action::Send { port: 1, .. }]);
        assert!(passed(m.handle_frame(10, 0, &esl(1, 5, 10))));
        assert!(!passed(m.handle_frame(20, 0, &esl(1, 5, 10))), "the same PDU again");
        assert!(!passed(m.handle_frame(30, 0, &esl(1, 4, 10))), "an older one");
        assert!(passed(m.handle_frame(40, 0, &esl(1, 6, 10))));
        assert!(passed(m.handle_frame(50, 0, &esl(1, 6u16.wrapping_add(0x7fff), 10))), "newer in serial order");
        assert!(!passed(m.handle_frame(60, 0, &esl(1, 6, 10))), "now older in serial order");
        let mut bad = esl(2, 1, 10);
        bad[60] ^= 1;
        assert!(!passed(m.handle_frame(70, 0, &bad)), "a damaged ESL PDU");
        assert_eq!(m.counters(0).dropped, 3);
        assert_eq!(m.counters(0).malformed(Malformed::Checksum), 1);
        for mac in 2..=4 {
            assert!(passed(m.handle_frame(80, 0, &esl(mac, 1, 10))));
        }
        assert!(!passed(m.handle_frame(90, 0, &esl(5, 1, 10))), "the table is full");
        // Sender 1's entry was refreshed at 50: it lives until 50 + fail.
        assert!(!passed(m.handle_frame(50 + 3 * MS - 1, 0, &esl(5, 1, 10))));
        assert!(passed(m.handle_frame(50 + 3 * MS, 0, &esl(5, 1, 10))), "sender 1's entry expired");
        assert!(m.esl_seen().iter().flatten().any(|e| e.mac == MacAddr([2, 0, 0, 1, 0, 5]) && e.seq == 1));
        // After its entry expires a sender is taken afresh, whatever its sequence.
        assert!(passed(m.handle_frame(80 + 3 * MS, 0, &esl(2, 0, 10))));
        // A transit passes every other EDP frame, repeated or not; a damaged one it drops and
        // counts (docs/eaps.md §1.1).
        let mut t = EapsNode::new(MacAddr([2, 0, 0, 0, 0, 2]), vec![cfg(Role::Transit)], [true, true]);
        t.enable(0);
        for _ in 0..3 {
            assert!(passed(t.handle_frame(10, 0, &esl(2, 1, 10))));
            assert!(!passed(t.handle_frame(10, 0, &bad)));
        }
        assert_eq!(t.counters(0).malformed(Malformed::Checksum), 3);
        // With the rule off, a master passes valid ones it would refuse.
        m.set_master_pass_rule(false);
        assert!(passed(m.handle_frame(90 + 3 * MS, 0, &esl(1, 1, 10))));
    }

    /// Malformed PDUs (docs/eaps.md §1.1) are dropped and counted by reason at a transit and at
    /// a master, never forwarded; a PDU with other TLVs or without the null TLV is taken.
    #[test]
    fn malformed_pdus_dropped_and_counted() {
        let mut t = EapsNode::new(MacAddr([2, 0, 0, 0, 0, 2]), vec![cfg(Role::Transit)], [true, true]);
        t.enable(0);
        let good = health(EapsState::Complete);
        let mut bad_sum = good.clone();
        bad_sum[70] ^= 1;
        let truncated = good[..60].to_vec();
        let mut v2 = good.clone();
        v2[46] = 2;
        let c = u16::from_be_bytes([v2[30], v2[31]]);
        // One's-complement fix-up of the checksum for the version byte's +1 (high byte of a word).
        let sum = !c as u32 + 0x0100;
        let fixed = !(((sum & 0xffff) + (sum >> 16)) as u16);
        v2[30..32].copy_from_slice(&fixed.to_be_bytes());
        let mut zeros = good.clone();
        zeros[106..110].fill(0);
        for (f, reason) in [(&bad_sum, Malformed::Checksum), (&truncated, Malformed::Length), (&v2, Malformed::Version)]
        {
            assert_eq!(t.handle_frame(MS, 0, f), Ok(vec![]), "{reason:?}");
            assert_eq!(t.counters(0).malformed(reason), 1, "{reason:?}");
        }
        // Zeros in place of the null TLV: the checksum no longer verifies first.
        assert_eq!(t.handle_frame(MS, 0, &zeros), Ok(vec![]));
        assert_eq!(t.counters(0).malformed, [1, 1, 2, 0]);
        assert_eq!(t.counters(0).forwarded, 0);
        // 80 bytes, no null TLV: forwarded as §1's 110 bytes.
        let mut old = good[..106].to_vec();
        old[17] = 88;
        old[29] = 80;
        old[30..32].fill(0);
        let c = spotagg_driver::wire::checksum::compute(&old[26..106]);
        old[30..32].copy_from_slice(&c.to_be_bytes());
        let a = t.handle_frame(MS, 0, &old).unwrap();
        assert_eq!(a[0], Action::Send { port: 1, frame: good.clone() });
        let mut m = EapsNode::new(MacAddr([2, 0, 0, 0, 0, 1]), vec![cfg(Role::Master)], [true, true]);
        m.enable(0);
        assert_eq!(m.handle_frame(MS, 0, &bad_sum), Ok(vec![]));
        assert_eq!(m.counters(0).malformed(Malformed::Checksum), 1);
        let mut other_vlan = bad_sum.clone();
        other_vlan[15] = 11;
        assert_eq!(t.handle_frame(MS, 0, &other_vlan), Err(FrameError::UnknownDomain(11)));
    }
}
