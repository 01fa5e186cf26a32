//! Shared ports: the EAPSv2 controller/partner scheme (ExtremeXOS) for two or more rings whose
//! domains share one common link, sans-I/O like [`super::EapsNode`] (docs/eaps.md §11).
//!
//! Each end of the common link runs one [`SharedPort`]: the shared port itself and one
//! **segment port** per ring (the ring port that is not the shared port). Both ends send a
//! segment health PDU ([`spotagg_driver::wire::esl`]) every segment-hello period out of the
//! shared port and out of every segment port; the other end hears it on the shared port while
//! the common link works, and on segment port i while segment i (the ring minus the common
//! link) is intact, since every EAPS node forwards EDP frames on its control VLANs. So each end
//! knows the common link's state and which segments are intact.
//!
//! The **controller** decides; the partner never blocks:
//! - **Ready**: the common link is up; the shared port decides nothing.
//! - **Blocking**: the common link is down (link lost at this end, or no segment health on the
//!   shared port for the segment timeout with action segment-down). Of the intact segments the
//!   first (in configuration order) is kept **Active-Open**; every other intact segment port is
//!   blocked. A broken segment's port is open: a loop needs two intact segments.
//! - **Pre-forwarding**: the common link is back; the ports stay as in Blocking for the hold
//!   period (longer than the masters' hello plus a ring round trip, so that both masters have
//!   blocked their secondaries again), then Ready.
//!
//! A second failure while Blocking: when the Active-Open segment breaks (its health stops, or
//! the segment port's link goes down), the next intact segment becomes Active-Open and its port
//! opens; when a blocked segment breaks its port opens, so that its nodes are reached through
//! it (the root-blocker rule for one common link: one blocker, the controller, whose choice
//! follows the segments' health).

use super::Nanos;
use spotagg_driver::wire::esl::{emit_frame, parse_frame, EslRepr, EslRole, EslState};
use spotagg_driver::wire::{Error as WireError, MacAddr};

/// Which end of the common link this is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SharedRole {
    /// Blocks segment ports while the common link is down.
    Controller,
    /// Reports only.
    Partner,
}

/// What a segment timeout does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SegmentTimeoutAction {
    /// Treat the silent link or segment as down.
    SegmentDown,
    /// Raise an alert and keep the link's (or segment's) last known state.
    SendAlert,
}

/// A shared port's configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SharedConfig {
    /// Controller or partner.
    pub role: SharedRole,
    /// The common link's ID (equal at both ends).
    pub link_id: u16,
    /// Control VLAN that tags the segment health PDUs on the shared port.
    pub shared_vlan: u16,
    /// Per segment port: the control VLAN of its ring's domain (tags its PDUs).
    pub segment_vlans: Vec<u16>,
    /// Segment health period.
    pub hello: Nanos,
    /// Segment timeout: no health for this long means down (with [`SegmentTimeoutAction::SegmentDown`]).
    pub timeout: Nanos,
    /// What the timeout does.
    pub timeout_action: SegmentTimeoutAction,
    /// Pre-forwarding hold of the controller after the common link returns.
    pub hold: Nanos,
    /// The root-blocker rule for several common links (docs/eaps.md §11): on unless a test
    /// shows the superloop it prevents.
    pub root_blocker: bool,
    /// The segment RB ID relay (docs/eaps.md §11): segment health PDUs carry the lowest failed
    /// common link ID heard through the sender's other segments, and a controller is the root
    /// blocker only if its link ID is lower than those too. On unless a test shows what it adds.
    pub rb_relay: bool,
}

/// Where a frame goes or came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Where {
    /// The shared port (the common link).
    Shared,
    /// Segment port i.
    Segment(usize),
}

/// The shared port's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SharedState {
    /// Not enabled.
    Idle,
    /// Common link up.
    Ready,
    /// Common link down.
    Blocking,
    /// Common link back, holding.
    PreForwarding,
}

/// Why a transition happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SharedCause {
    /// Enabled.
    Enabled,
    /// The shared port's link went down.
    LinkDown,
    /// The shared port's link came up (and health is heard, or the timeout action is send-alert).
    LinkUp,
    /// No segment health on the shared port for the timeout.
    SegmentTimeout,
    /// Segment health heard again on the shared port.
    HealthReturned,
    /// The hold ended.
    HoldExpired,
}

/// What the caller must do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SharedAction {
    /// Send this frame out of this port.
    Send {
        /// Port.
        to: Where,
        /// Frame (no FCS).
        frame: Vec<u8>,
    },
    /// The shared port lets segment port i forward (true) or blocks it.
    SegmentPort {
        /// Segment index.
        segment: usize,
        /// Forwarding.
        forwarding: bool,
    },
    /// A transition.
    Transition {
        /// From.
        from: SharedState,
        /// To.
        to: SharedState,
        /// Why.
        cause: SharedCause,
    },
    /// Health stopped on the shared port or on a segment, with the send-alert action.
    Alert {
        /// Where.
        at: Where,
    },
    /// The frame is another common link's segment health: not taken here; the ring node passes
    /// it on like any other EDP frame on its control VLAN (docs/eaps.md §11).
    PassOn {
        /// Its link ID.
        link_id: u16,
    },
}

/// One end of a common link.
#[derive(Debug, Clone)]
pub struct SharedPort {
    mac: MacAddr,
    cfg: SharedConfig,
    state: SharedState,
    link_up: bool,
    segment_link: Vec<bool>,
    heard_shared: Option<Nanos>,
    heard_segment: Vec<Option<Nanos>>,
    common_ok: bool,
    segment_ok: Vec<bool>,
    /// Per segment port: the lowest ID of another failed common link whose end is heard on it
    /// (a PDU with that link ID and its failed-link field set), and when it was last heard.
    adjacent_failed: Vec<Option<(u16, Nanos)>>,
    /// Per segment: the lowest segment RB ID heard on it (ID, the reporter's link ID, when).
    adjacent_rb: Vec<Option<(u16, u16, Nanos)>>,
    forwarding: Vec<bool>,
    next_hello: Option<Nanos>,
    hold_until: Option<Nanos>,
    edp_seq: u16,
    /// PDUs sent and received.
    pub tx: u64,
    /// PDUs of this link received.
    pub rx: u64,
    /// PDUs of other common links received (passed on).
    pub foreign_rx: u64,
}

impl SharedPort {
    /// A shared port; `link_up` is the shared port's link, `segment_link` each segment port's.
    pub fn new(mac: MacAddr, cfg: SharedConfig, link_up: bool, segment_link: Vec<bool>) -> SharedPort {
        let n = cfg.segment_vlans.len();
        assert_eq!(segment_link.len(), n, "one link state per segment port");
        SharedPort {
            mac,
            cfg,
            state: SharedState::Idle,
            link_up,
            segment_link,
            heard_shared: None,
            heard_segment: vec![None; n],
            common_ok: link_up,
            segment_ok: vec![true; n],
            adjacent_failed: vec![None; n],
            adjacent_rb: vec![None; n],
            forwarding: vec![true; n],
            next_hello: None,
            hold_until: None,
            edp_seq: 0,
            tx: 0,
            rx: 0,
            foreign_rx: 0,
        }
    }

    /// State.
    pub fn state(&self) -> SharedState {
        self.state
    }
    /// Whether the shared port lets segment port i forward.
    pub fn forwarding(&self, segment: usize) -> bool {
        self.forwarding[segment]
    }
    /// Whether segment i is believed intact.
    pub fn segment_intact(&self, segment: usize) -> bool {
        self.segment_ok[segment]
    }
    /// Whether the common link is believed up.
    pub fn common_link_up(&self) -> bool {
        self.common_ok
    }
    /// Configuration.
    pub fn config(&self) -> &SharedConfig {
        &self.cfg
    }

    /// Starts: health now; Ready if the shared port's link is up, else Blocking. Every link and
    /// segment counts as heard at enable (a grace of one timeout).
    pub fn enable(&mut self, now: Nanos) -> Vec<SharedAction> {
        let mut out = Vec::new();
        self.heard_shared = Some(now);
        self.heard_segment.iter_mut().for_each(|h| *h = Some(now));
        self.common_ok = self.link_up;
        let to = if self.common_ok { SharedState::Ready } else { SharedState::Blocking };
        self.transition(to, SharedCause::Enabled, &mut out);
        self.apply(now, &mut out);
        self.hello(now, &mut out);
        out
    }

    /// The earliest time [`SharedPort::handle_timeout`] has work.
    pub fn poll_timeout(&self) -> Option<Nanos> {
        if self.state == SharedState::Idle {
            return None;
        }
        let t = self.cfg.timeout;
        let mut ts = vec![self.next_hello, self.hold_until];
        if self.common_ok {
            ts.push(self.heard_shared.map(|h| h + t));
        }
        for (i, h) in self.heard_segment.iter().enumerate() {
            if self.segment_ok[i] {
                ts.push(h.map(|h| h + t));
            }
        }
        ts.extend(self.adjacent_failed.iter().map(|a| a.map(|(_, h)| h + t)));
        ts.extend(self.adjacent_rb.iter().map(|a| a.map(|(_, _, h)| h + t)));
        ts.into_iter().flatten().min()
    }

    /// Runs the timers due at `now`.
    pub fn handle_timeout(&mut self, now: Nanos) -> Vec<SharedAction> {
        let mut out = Vec::new();
        if self.state == SharedState::Idle {
            return out;
        }
        if self.next_hello.is_some_and(|t| t <= now) {
            self.hello(now, &mut out);
        }
        let t = self.cfg.timeout;
        let down = self.cfg.timeout_action == SegmentTimeoutAction::SegmentDown;
        if self.common_ok && self.heard_shared.is_some_and(|h| h + t <= now) {
            self.heard_shared = Some(now); // alert once per timeout
            if down {
                self.common_down(SharedCause::SegmentTimeout, &mut out);
            } else {
                out.push(SharedAction::Alert { at: Where::Shared });
            }
        }
        for i in 0..self.segment_ok.len() {
            if self.segment_ok[i] && self.heard_segment[i].is_some_and(|h| h + t <= now) {
                self.heard_segment[i] = Some(now);
                if down {
                    self.segment_ok[i] = false;
                } else {
                    out.push(SharedAction::Alert { at: Where::Segment(i) });
                }
            }
        }
        for a in self.adjacent_failed.iter_mut() {
            if a.is_some_and(|(_, h)| h + t <= now) {
                *a = None;
            }
        }
        for a in self.adjacent_rb.iter_mut() {
            if a.is_some_and(|(_, _, h)| h + t <= now) {
                *a = None;
            }
        }
        if self.hold_until.is_some_and(|h| h <= now) {
            self.hold_until = None;
            if self.state == SharedState::PreForwarding {
                self.transition(SharedState::Ready, SharedCause::HoldExpired, &mut out);
            }
        }
        self.apply(now, &mut out);
        out
    }

    /// The shared port's link changed.
    pub fn shared_link(&mut self, now: Nanos, up: bool) -> Vec<SharedAction> {
        let mut out = Vec::new();
        if self.link_up == up {
            return out;
        }
        self.link_up = up;
        if self.state == SharedState::Idle {
            return out;
        }
        if up {
            // Back only once the other end is heard, unless the timeout only alerts.
            if self.cfg.timeout_action == SegmentTimeoutAction::SendAlert {
                self.common_up(now, SharedCause::LinkUp, &mut out);
            }
        } else {
            self.common_down(SharedCause::LinkDown, &mut out);
        }
        self.apply(now, &mut out);
        out
    }

    /// Segment port i's link changed: a segment port down is a broken segment.
    pub fn segment_link(&mut self, now: Nanos, segment: usize, up: bool) -> Vec<SharedAction> {
        let mut out = Vec::new();
        self.segment_link[segment] = up;
        if !up {
            self.segment_ok[segment] = false;
            self.adjacent_failed[segment] = None;
            self.adjacent_rb[segment] = None;
        }
        self.apply(now, &mut out);
        out
    }

    /// A frame received on the shared port or a segment port: an ESL PDU of this common link is
    /// taken; one of another common link is answered with [`SharedAction::PassOn`] (the caller
    /// passes it on as the ring node would), after noting, on a segment port, whether that
    /// link's end reports it failed; anything else is [`WireError::Unsupported`] (the caller
    /// tries it as EAPS).
    pub fn handle_frame(&mut self, now: Nanos, at: Where, frame: &[u8]) -> Result<Vec<SharedAction>, WireError> {
        let (_vid, pdu) = parse_frame(frame)?;
        let mut out = Vec::new();
        if self.state == SharedState::Idle || pdu.system_mac == self.mac {
            return Ok(out);
        }
        if pdu.link_id != self.cfg.link_id {
            self.foreign_rx += 1;
            if let Where::Segment(i) = at {
                let a = &mut self.adjacent_failed[i];
                if pdu.failed_link != 0 {
                    if a.is_none_or(|(id, h)| pdu.link_id <= id || h + self.cfg.timeout <= now) {
                        *a = Some((pdu.link_id, now));
                    }
                } else if a.is_some_and(|(id, _)| id == pdu.link_id) {
                    *a = None;
                }
                let r = &mut self.adjacent_rb[i];
                if pdu.rb_id != 0 {
                    if r.is_none_or(|(rb, from, h)| {
                        pdu.rb_id <= rb || from == pdu.link_id || h + self.cfg.timeout <= now
                    }) {
                        *r = Some((pdu.rb_id, pdu.link_id, now));
                    }
                } else if r.is_some_and(|(_, from, _)| from == pdu.link_id) {
                    *r = None;
                }
                self.apply(now, &mut out);
            }
            out.push(SharedAction::PassOn { link_id: pdu.link_id });
            return Ok(out);
        }
        self.rx += 1;
        match at {
            Where::Shared => {
                self.heard_shared = Some(now);
                if !self.common_ok && self.link_up {
                    self.common_up(now, SharedCause::HealthReturned, &mut out);
                }
            }
            Where::Segment(i) => {
                self.heard_segment[i] = Some(now);
                if self.segment_link[i] {
                    self.segment_ok[i] = true;
                }
            }
        }
        self.apply(now, &mut out);
        Ok(out)
    }

    fn common_down(&mut self, cause: SharedCause, out: &mut Vec<SharedAction>) {
        self.common_ok = false;
        self.hold_until = None;
        self.transition(SharedState::Blocking, cause, out);
    }

    fn common_up(&mut self, now: Nanos, cause: SharedCause, out: &mut Vec<SharedAction>) {
        self.common_ok = true;
        self.heard_shared = Some(now);
        match self.cfg.role {
            SharedRole::Controller => {
                self.hold_until = Some(now + self.cfg.hold);
                self.transition(SharedState::PreForwarding, cause, out);
            }
            SharedRole::Partner => self.transition(SharedState::Ready, cause, out),
        }
    }

    /// Whether this end is the root blocker now: a blocking controller whose common link has
    /// the lowest ID among the failed common links whose ends it hears on its segment ports.
    pub fn root_blocker(&self) -> bool {
        let relayed = !self.cfg.rb_relay || self.adjacent_rb.iter().flatten().all(|&(rb, _, _)| self.cfg.link_id < rb);
        self.blocking() && relayed && self.adjacent_failed.iter().flatten().all(|&(id, _)| self.cfg.link_id < id)
    }

    /// The segment RB ID to send out of segment `to` (`None`: the shared port): the lowest
    /// failed common link ID heard, directly or relayed, on the other segment ports; 0 for none
    /// or with the relay off. Not what was heard on `to` itself (split horizon), so that two
    /// nodes cannot keep a lapsed ID alive by relaying it back and forth.
    fn rb_out(&self, to: Option<usize>) -> u16 {
        if !self.cfg.rb_relay {
            return 0;
        }
        let others = (0..self.adjacent_failed.len()).filter(|&j| Some(j) != to);
        others
            .flat_map(|j| [self.adjacent_failed[j].map(|(id, _)| id), self.adjacent_rb[j].map(|(rb, _, _)| rb)])
            .flatten()
            .min()
            .unwrap_or(0)
    }

    fn blocking(&self) -> bool {
        self.cfg.role == SharedRole::Controller
            && matches!(self.state, SharedState::Blocking | SharedState::PreForwarding)
    }

    /// Sets the segment ports from the state: all open in Ready (and at a partner); otherwise
    /// the first segment that closes a loop open (Active-Open), the others that close one
    /// blocked, the rest open. A segment closes a loop while it is intact, and, at the root
    /// blocker, also while the end of another failed common link is heard on it: the path
    /// through that end's rings leads back to this link's other end (a superloop).
    fn apply(&mut self, now: Nanos, out: &mut Vec<SharedAction>) {
        let blocking = self.blocking();
        let root = self.cfg.root_blocker && self.root_blocker();
        let t = self.cfg.timeout;
        let mut open_one = false;
        for i in 0..self.forwarding.len() {
            let adjacent = root && self.adjacent_failed[i].is_some_and(|(_, h)| h + t > now);
            let f = if !blocking || !(self.segment_ok[i] || adjacent) {
                true
            } else if !open_one {
                open_one = true;
                true
            } else {
                false
            };
            if self.forwarding[i] != f {
                self.forwarding[i] = f;
                out.push(SharedAction::SegmentPort { segment: i, forwarding: f });
            }
        }
    }

    fn hello(&mut self, now: Nanos, out: &mut Vec<SharedAction>) {
        self.next_hello = Some(now + self.cfg.hello);
        let state = match self.state {
            SharedState::Ready | SharedState::Idle => EslState::Ready,
            SharedState::Blocking => EslState::Blocking,
            SharedState::PreForwarding => EslState::PreForwarding,
        };
        let role = match self.cfg.role {
            SharedRole::Controller => EslRole::Controller,
            SharedRole::Partner => EslRole::Partner,
        };
        let failed_link = if self.common_ok { 0 } else { self.cfg.link_id };
        let mut targets = vec![(Where::Shared, self.cfg.shared_vlan, self.link_up)];
        for (i, &v) in self.cfg.segment_vlans.iter().enumerate() {
            targets.push((Where::Segment(i), v, self.segment_link[i]));
        }
        for (to, control_vlan, up) in targets {
            if !up {
                continue;
            }
            let rb_id = self.rb_out(match to {
                Where::Shared => None,
                Where::Segment(i) => Some(i),
            });
            let pdu = EslRepr {
                edp_sequence: self.edp_seq,
                control_vlan,
                system_mac: self.mac,
                state,
                role,
                link_id: self.cfg.link_id,
                failed_link,
                rb_id,
            };
            self.edp_seq = self.edp_seq.wrapping_add(1);
            self.tx += 1;
            out.push(SharedAction::Send { to, frame: emit_frame(&pdu, self.mac, 7) });
        }
    }

    fn transition(&mut self, to: SharedState, cause: SharedCause, out: &mut Vec<SharedAction>) {
        let to = if self.cfg.role == SharedRole::Partner && to == SharedState::PreForwarding {
            SharedState::Ready
        } else {
            to
        };
        if self.state != to {
            out.push(SharedAction::Transition { from: self.state, to, cause });
            self.state = to;
        }
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::eaps::MS;

    fn cfg(role: SharedRole) -> SharedConfig {
        SharedConfig {
            role,
            link_id: 34,
            shared_vlan: 10,
            segment_vlans: vec![10, 20],
            hello: 10 * MS,
            timeout: 30 * MS,
            timeout_action: SegmentTimeoutAction::SegmentDown,
            hold: 100 * MS,
            root_blocker: true,
            rb_relay: true,
        }
    }

    fn frames(a: &[SharedAction]) -> Vec<(Where, Vec<u8>)> {
        a.iter()
            .filter_map(|a| match a {
                SharedAction::Send { to, frame } => Some((*to, frame.clone())),
                _ => None,
            })
            .collect()
    }

    /// Delivers the partner's health to the controller as if every path were intact except the ones listed.
    fn deliver(c: &mut SharedPort, now: Nanos, sent: &[(Where, Vec<u8>)], broken: &[Where]) {
        for (w, f) in sent {
            if !broken.contains(w) {
                c.handle_frame(now, *w, f).unwrap();
            }
        }
    }

    #[test]
    fn controller_blocks_one_segment_while_the_common_link_is_down() {
        let mac_c = MacAddr([2, 0, 0, 0, 0, 3]);
        let mac_p = MacAddr([2, 0, 0, 0, 0, 4]);
        let mut c = SharedPort::new(mac_c, cfg(SharedRole::Controller), true, vec![true, true]);
        let mut p = SharedPort::new(mac_p, cfg(SharedRole::Partner), true, vec![true, true]);
        c.enable(0);
        let sent = frames(&p.enable(0));
        assert_eq!(sent.len(), 3, "health out of the shared port and both segment ports");
        assert_eq!(c.state(), SharedState::Ready);
        deliver(&mut c, MS, &sent, &[]);
        // The common link goes down at the controller: Blocking, segment 0 Active-Open, segment 1 blocked.
        let a = c.shared_link(2 * MS, false);
        assert!(a.contains(&SharedAction::Transition {
            from: SharedState::Ready,
            to: SharedState::Blocking,
            cause: SharedCause::LinkDown
        }));
        assert!(c.forwarding(0) && !c.forwarding(1));
        // The partner keeps forwarding whatever happens.
        p.shared_link(2 * MS, false);
        assert!(p.forwarding(0) && p.forwarding(1));
        // Second failure: segment 0 (the Active-Open one) breaks: its health stops, so segment 1 opens.
        let mut t = 2 * MS;
        while t < 60 * MS {
            t += 10 * MS;
            let s = frames(&p.handle_timeout(t));
            deliver(&mut c, t, &s, &[Where::Shared, Where::Segment(0)]);
            c.handle_timeout(t);
        }
        assert!(!c.segment_intact(0) && c.segment_intact(1));
        assert!(c.forwarding(0) && c.forwarding(1), "a broken segment's port opens, the intact one is Active-Open");
        // Segment 0 repaired: it is intact again, so one of the two is blocked again (segment 1: the first intact is 0).
        let s = frames(&p.handle_timeout(t + 10 * MS));
        deliver(&mut c, t + 10 * MS, &s, &[Where::Shared]);
        assert!(c.forwarding(0) && !c.forwarding(1));
        // The common link returns: health on the shared port; Pre-forwarding holds the block for 100 ms.
        c.shared_link(t + 11 * MS, true);
        p.shared_link(t + 11 * MS, true);
        assert_eq!(c.state(), SharedState::Blocking, "up, but the partner not heard yet");
        let s = frames(&p.handle_timeout(t + 20 * MS));
        deliver(&mut c, t + 20 * MS, &s, &[]);
        assert_eq!(c.state(), SharedState::PreForwarding);
        assert!(!c.forwarding(1));
        let mut u = t + 20 * MS;
        while c.state() == SharedState::PreForwarding {
            u += 10 * MS;
            let s = frames(&p.handle_timeout(u));
            deliver(&mut c, u, &s, &[]);
            c.handle_timeout(u);
        }
        assert_eq!(c.state(), SharedState::Ready);
        assert_eq!(u, t + 20 * MS + 100 * MS, "the hold is 100 ms");
        assert!(c.forwarding(0) && c.forwarding(1));
    }

    #[test]
    fn segment_timeout_actions() {
        let mut c = SharedPort::new(MacAddr([2, 0, 0, 0, 0, 3]), cfg(SharedRole::Controller), true, vec![true, true]);
        c.enable(0);
        // Nothing heard on the shared port for 30 ms: segment-down blocks.
        let a = c.handle_timeout(30 * MS);
        assert!(a.contains(&SharedAction::Transition {
            from: SharedState::Ready,
            to: SharedState::Blocking,
            cause: SharedCause::SegmentTimeout
        }));
        let mut k = cfg(SharedRole::Controller);
        k.timeout_action = SegmentTimeoutAction::SendAlert;
        let mut c = SharedPort::new(MacAddr([2, 0, 0, 0, 0, 3]), k, true, vec![true, true]);
        c.enable(0);
        let a = c.handle_timeout(30 * MS);
        assert!(a.contains(&SharedAction::Alert { at: Where::Shared }));
        assert_eq!(c.state(), SharedState::Ready);
        // A PDU for another common link is passed on, not taken.
        let mut other = cfg(SharedRole::Partner);
        other.link_id = 99;
        let mut p = SharedPort::new(MacAddr([2, 0, 0, 0, 0, 4]), other, true, vec![true, true]);
        let (w, f) = frames(&p.enable(0)).remove(0);
        assert_eq!(c.handle_frame(MS, w, &f).unwrap(), vec![SharedAction::PassOn { link_id: 99 }]);
    }

    /// The segment RB ID (docs/eaps.md §11): what is heard on one segment port goes out of the
    /// others only (split horizon), the lowest of the failed IDs and RB IDs heard, until the
    /// timeout; a controller is root blocker only below the RB IDs it hears; off, nothing is sent.
    #[test]
    fn segment_rb_id_relay() {
        let foreign = |link_id: u16, failed_link: u16, rb_id: u16| {
            let m = MacAddr([2, 0, 0, 0, 0, 9]);
            let r = EslRepr {
                edp_sequence: 1,
                control_vlan: 10,
                system_mac: m,
                state: EslState::Blocking,
                role: EslRole::Controller,
                link_id,
                failed_link,
                rb_id,
            };
            emit_frame(&r, m, 7)
        };
        let rb_sent = |a: &[SharedAction]| -> Vec<(Where, u16)> {
            frames(a).iter().map(|(w, f)| (*w, parse_frame(f).unwrap().1.rb_id)).collect()
        };
        let mut c = SharedPort::new(MacAddr([2, 0, 0, 0, 0, 3]), cfg(SharedRole::Controller), true, vec![true, true]);
        c.enable(0);
        // Link 56's end, reporting 56 failed and RB ID 12, heard on segment 0; link 78's, RB 40, too.
        c.handle_frame(MS, Where::Segment(0), &foreign(56, 56, 12)).unwrap();
        c.handle_frame(MS, Where::Segment(0), &foreign(78, 0, 40)).unwrap();
        let a = c.handle_timeout(10 * MS);
        assert_eq!(rb_sent(&a), vec![(Where::Shared, 12), (Where::Segment(0), 0), (Where::Segment(1), 12)]);
        // Blocking: 34 is below 56 but not below 12, so not the root blocker.
        c.shared_link(11 * MS, false);
        assert!(!c.root_blocker());
        let mut off = cfg(SharedRole::Controller);
        off.rb_relay = false;
        let mut d = SharedPort::new(MacAddr([2, 0, 0, 0, 0, 3]), off, true, vec![true, true]);
        d.enable(0);
        d.handle_frame(MS, Where::Segment(0), &foreign(56, 56, 12)).unwrap();
        d.shared_link(2 * MS, false);
        assert!(d.root_blocker(), "without the relay only the failed ID 56 counts");
        assert!(rb_sent(&d.handle_timeout(10 * MS)).iter().all(|&(_, rb)| rb == 0));
        // Link 56's end reports RB 0 now: its RB 12 is cleared (the segment keeps only the lowest
        // RB ID, so 78's 40 was not kept), its failed 56 is still heard; nothing heard for the
        // 30 ms timeout: lapsed. (The shared port's link is down: PDUs out of the segment ports.)
        c.handle_frame(12 * MS, Where::Segment(0), &foreign(56, 56, 0)).unwrap();
        assert_eq!(rb_sent(&c.handle_timeout(20 * MS)), vec![(Where::Segment(0), 0), (Where::Segment(1), 56)]);
        assert_eq!(c.poll_timeout(), Some(30 * MS));
        c.handle_timeout(30 * MS);
        assert_eq!(c.poll_timeout(), Some(40 * MS));
        c.handle_timeout(40 * MS);
        assert_eq!(c.poll_timeout(), Some(42 * MS), "the failed ID 56 heard at 12 ms lapses");
        c.handle_timeout(42 * MS);
        assert_eq!(rb_sent(&c.handle_timeout(50 * MS)), vec![(Where::Segment(0), 0), (Where::Segment(1), 0)]);
        assert!(c.root_blocker(), "every heard ID has lapsed");
    }
}
