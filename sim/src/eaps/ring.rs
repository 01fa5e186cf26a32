//! A ring of [`EapsNode`]s with links, learning bridges and hosts: the ring simulator.
//!
//! Node `i`'s port 1 is linked to node `i+1`'s port 0 (link `i`; link `N-1` closes the ring
//! back to node 0). Each node is a learning bridge with three ports (0 and 1 on the ring, 2 to
//! its host) whose ring ports drop the protected VLANs of a domain wherever that domain's EAPS
//! state blocks them; the bridge hands control-VLAN frames to the EAPS node and carries out
//! its actions (sends, FDB flushes). Links have a latency, a bandwidth (frames queue behind
//! each other per direction) and a failure schedule; a failed link loses what is on it, and
//! each end learns of the failure after the detection delay (the PHY's link status).
//!
//! Hosts send fixed-size unicast frames to each other at a fixed period ([`Flow`]). The
//! simulator records every frame's fate: delivered, lost, or looped (seen twice on the same
//! link direction, or past a hop limit: a storm), and every FDB entry flushed. [`Ring::report`]
//! turns that into the figures of an event: the time until traffic flows again, the frames
//! lost, looped and the FDB entries flushed.

use super::EapsEngine;
use spotagg_driver::wire::eaps::{parse_frame, EapsType};
use spotagg_driver::wire::MacAddr;
use spotagg_spec::eaps::{Action, DomainConfig, EapsNode, FailAction, Nanos, Port, Role, State, MS, US};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, HashSet};

/// A domain on the ring.
#[derive(Debug, Clone)]
pub struct RingDomain {
    /// Control VLAN.
    pub control_vlan: u16,
    /// Protected VLANs.
    pub protected: Vec<u16>,
    /// The nodes configured as master (one, or two to test second-master detection).
    pub masters: Vec<usize>,
    /// Every node's primary port in this domain.
    pub primary: Port,
    /// Hello period.
    pub hello: Nanos,
    /// Fail period.
    pub fail: Nanos,
    /// Pre-forwarding period.
    pub pre_forwarding: Nanos,
    /// Master's fail-timer action.
    pub fail_action: FailAction,
}

/// Host traffic: the host at `src` sends to the host at `dst` on `vlan`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Flow {
    /// Sending node.
    pub src: usize,
    /// Receiving node.
    pub dst: usize,
    /// VLAN.
    pub vlan: u16,
}

/// The ring's configuration.
#[derive(Debug, Clone)]
pub struct RingConfig {
    /// Number of nodes.
    pub nodes: usize,
    /// Propagation delay of each link.
    pub latency: Nanos,
    /// Bit rate of each link direction.
    pub bits_per_second: u64,
    /// Time from a link's failure (or repair) to its ends' link-down (link-up) event.
    pub detect: Nanos,
    /// The domains.
    pub domains: Vec<RingDomain>,
    /// The host flows.
    pub flows: Vec<Flow>,
    /// Each flow sends one frame per period.
    pub period: Nanos,
    /// Data frame length in bytes (on the wire: plus 20 bytes of preamble and gap).
    pub frame_len: usize,
}

impl RingConfig {
    /// `nodes` nodes, 1 Gb/s links of 1 µs latency, 100 µs link-down detection, one domain
    /// (control VLAN 10, protecting VLAN 100, master node 0 with primary port 1, hello 1 ms,
    /// fail 3 ms, pre-forwarding 3 ms), and four flows on VLAN 100 that together cross every
    /// link but the master's secondary: 0 <-> N/2 and 1 <-> N-1, 256-byte frames every 20 µs.
    pub fn standard(nodes: usize) -> RingConfig {
        assert!(nodes >= 3, "a ring needs at least 3 nodes");
        let flows = [(0, nodes / 2), (nodes / 2, 0), (1, nodes - 1), (nodes - 1, 1)]
            .into_iter()
            .map(|(src, dst)| Flow { src, dst, vlan: 100 })
            .collect();
        RingConfig {
            nodes,
            latency: US,
            bits_per_second: 1_000_000_000,
            detect: 100 * US,
            domains: vec![RingDomain {
                control_vlan: 10,
                protected: vec![100],
                masters: vec![0],
                primary: 1,
                hello: MS,
                fail: 3 * MS,
                pre_forwarding: 3 * MS,
                fail_action: FailAction::OpenSecondary,
            }],
            flows,
            period: 20 * US,
            frame_len: 256,
        }
    }
}

#[derive(Debug, Clone)]
struct Data {
    flow: usize,
    seq: usize,
    vlan: u16,
    src: u64,
    dst: u64,
    hops: usize,
    /// An application frame's bytes (flow is `APP`): delivered to the host inbox.
    app: Option<std::rc::Rc<Vec<u8>>>,
}

const APP: usize = usize::MAX;

#[derive(Debug, Clone)]
enum Frame {
    Control(Vec<u8>),
    Data(Data),
}

#[derive(Debug)]
enum Ev {
    Arrive { link: usize, epoch: u64, node: usize, port: Port, frame: Frame },
    Wake { node: usize },
    Fail { link: usize },
    Restore { link: usize },
    Detect { node: usize, port: Port, up: bool },
    Send { flow: usize },
    Control { node: usize, port: Port, frame: Vec<u8> },
}

/// A state transition seen in the ring.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Logged {
    /// When.
    pub at: Nanos,
    /// Node.
    pub node: usize,
    /// Domain.
    pub domain: usize,
    /// The action (a transition or an alert).
    pub what: LogKind,
}

/// What was logged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogKind {
    /// A transition to this state.
    Transition(State),
    /// An alert.
    Alert(spotagg_spec::eaps::Alert),
}

/// The figures of one event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventReport {
    /// When the event happened.
    pub at: Nanos,
    /// Time from the event until every flow delivers again (the send time of the last frame
    /// lost, plus one period, minus the event time; 0 when nothing was lost; `None` when a
    /// flow had not recovered by the window's end).
    pub convergence: Option<Nanos>,
    /// Frames sent in the window and never delivered.
    pub lost: u64,
    /// Frames sent in the window that looped.
    pub looped: u64,
    /// Frames delivered.
    pub delivered: u64,
    /// FDB entries flushed in the window.
    pub flushed: u64,
    /// FDB flush operations in the window (one per node and domain flush).
    pub flushes: u64,
}

/// The ring simulator.
pub struct Ring {
    cfg: RingConfig,
    nodes: Vec<Box<dyn EapsEngine>>,
    fdb: Vec<HashMap<(u16, u64), Port>>,
    now: Nanos,
    seq: u64,
    queue: BinaryHeap<Reverse<(Nanos, u64, usize)>>,
    events: HashMap<usize, Ev>,
    next_event: usize,
    link_up: Vec<bool>,
    link_epoch: Vec<u64>,
    busy: Vec<[Nanos; 2]>,
    wake_at: Vec<Option<Nanos>>,
    sent: Vec<Vec<Nanos>>,
    delivered: Vec<Vec<bool>>,
    looped: Vec<HashSet<usize>>,
    seen: HashSet<(usize, usize, usize, u8)>,
    flushes: Vec<(Nanos, u64)>,
    drop_rules: Vec<(EapsType, Option<usize>, Nanos, Nanos)>,
    /// PDUs dropped by the drop rules.
    pub pdus_dropped: u64,
    /// Every transition and alert, in order.
    pub log: Vec<Logged>,
    traffic_until: Nanos,
    host_macs: Vec<Vec<u64>>,
    inbox: Vec<(usize, Vec<u8>)>,
    app_seq: usize,
    /// Application frames that looped.
    pub app_looped: u64,
    /// Every control frame a node sent, in order: (time, node, port, frame). What the
    /// differential tests compare between rings of reference and hardware nodes.
    pub frames_out: Vec<(Nanos, usize, Port, Vec<u8>)>,
    /// Every port-state change, in order: (time, node, domain, port, forwarding).
    pub port_states: Vec<(Nanos, usize, usize, Port, bool)>,
    /// The control frames given to [`Ring::inject_control`], whose crossings are counted.
    watched: Vec<Vec<u8>>,
    watched_seen: HashSet<(usize, usize, u8)>,
    /// Per injected control frame (in injection order): link crossings, and those of a link
    /// direction it had crossed before (looped).
    pub control_crossings: Vec<(u64, u64)>,
}

impl Ring {
    /// Builds the ring, all links up, every node's domains enabled at time 0; host traffic
    /// starts at `traffic_from` and stops at `traffic_until`.
    pub fn new(cfg: RingConfig, traffic_from: Nanos, traffic_until: Nanos) -> Ring {
        Ring::with_nodes(cfg, traffic_from, traffic_until, |_, mac, domains| {
            Box::new(EapsNode::new(mac, domains, [true, true]))
        })
    }

    /// As [`Ring::new`], with node `i` made by `make(i, system MAC, domain configurations)`
    /// (links up at start): a ring of mixed reference and hardware nodes.
    pub fn with_nodes(
        cfg: RingConfig,
        traffic_from: Nanos,
        traffic_until: Nanos,
        mut make: impl FnMut(usize, MacAddr, Vec<DomainConfig>) -> Box<dyn EapsEngine>,
    ) -> Ring {
        let n = cfg.nodes;
        let nodes: Vec<Box<dyn EapsEngine>> = (0..n)
            .map(|i| {
                let domains = cfg
                    .domains
                    .iter()
                    .map(|d| DomainConfig {
                        role: if d.masters.contains(&i) { Role::Master } else { Role::Transit },
                        primary: d.primary,
                        control_vlan: d.control_vlan,
                        protected: d.protected.clone(),
                        hello: d.hello,
                        fail: d.fail,
                        pre_forwarding: d.pre_forwarding,
                        fail_action: d.fail_action,
                    })
                    .collect();
                make(i, MacAddr([0x02, 0xea, 0, 0, (i >> 8) as u8, i as u8]), domains)
            })
            .collect();
        let flows = cfg.flows.len();
        let mut r = Ring {
            nodes,
            fdb: vec![HashMap::new(); n],
            now: 0,
            seq: 0,
            queue: BinaryHeap::new(),
            events: HashMap::new(),
            next_event: 0,
            link_up: vec![true; n],
            link_epoch: vec![0; n],
            busy: vec![[0; 2]; n],
            wake_at: vec![None; n],
            sent: vec![Vec::new(); flows],
            delivered: vec![Vec::new(); flows],
            looped: vec![HashSet::new(); flows],
            seen: HashSet::new(),
            flushes: Vec::new(),
            drop_rules: Vec::new(),
            pdus_dropped: 0,
            log: Vec::new(),
            traffic_until,
            host_macs: vec![Vec::new(); n],
            inbox: Vec::new(),
            app_seq: 0,
            app_looped: 0,
            frames_out: Vec::new(),
            port_states: Vec::new(),
            watched: Vec::new(),
            watched_seen: HashSet::new(),
            control_crossings: Vec::new(),
            cfg,
        };
        for i in 0..n {
            let a = r.nodes[i].enable(0);
            r.apply(i, a);
        }
        for f in 0..flows {
            r.push(traffic_from, Ev::Send { flow: f });
        }
        r
    }

    fn push(&mut self, at: Nanos, ev: Ev) {
        let id = self.next_event;
        self.next_event += 1;
        self.events.insert(id, ev);
        self.seq += 1;
        self.queue.push(Reverse((at, self.seq, id)));
    }

    /// Link `link` fails at `at`.
    pub fn fail_link(&mut self, link: usize, at: Nanos) {
        self.push(at, Ev::Fail { link });
    }
    /// Link `link` is repaired at `at`.
    pub fn restore_link(&mut self, link: usize, at: Nanos) {
        self.push(at, Ev::Restore { link });
    }
    /// Every PDU of type `t` sent in `[from, to)` on link `link` (on every link: `None`) is lost.
    pub fn drop_pdus(&mut self, t: EapsType, link: Option<usize>, from: Nanos, to: Nanos) {
        self.drop_rules.push((t, link, from, to));
    }
    /// Control frame `frame` (tagged, no FCS) arrives at `node` on ring `port` at `at`, as if
    /// from the link: a damaged PDU or a stray EDP frame. Its every crossing of a link is then
    /// counted in [`Ring::control_crossings`] (matched by its bytes).
    pub fn inject_control(&mut self, node: usize, port: Port, at: Nanos, frame: Vec<u8>) {
        self.watched.push(frame.clone());
        self.control_crossings.push((0, 0));
        self.push(at, Ev::Control { node, port, frame });
    }
    /// The host at `node` also answers to `mac` (application frames to it reach the inbox).
    pub fn attach_host_mac(&mut self, node: usize, mac: MacAddr) {
        self.host_macs[node].push(mac.to_u64());
    }
    /// The host at `node` sends an Ethernet frame (no FCS) on `vlan` now.
    pub fn inject(&mut self, node: usize, vlan: u16, frame: Vec<u8>) {
        let src = MacAddr::from_bytes(&frame[6..12]).to_u64();
        let dst = MacAddr::from_bytes(&frame[0..6]).to_u64();
        let seq = self.app_seq;
        self.app_seq += 1;
        let d = Data { flow: APP, seq, vlan, src, dst, hops: 0, app: Some(std::rc::Rc::new(frame)) };
        self.bridge(node, 2, d);
    }
    /// Application frames delivered to hosts since the last call: (node, frame).
    pub fn take_inbox(&mut self) -> Vec<(usize, Vec<u8>)> {
        std::mem::take(&mut self.inbox)
    }
    /// The time of the next pending event.
    pub fn next_event(&self) -> Option<Nanos> {
        self.queue.peek().map(|Reverse((t, _, _))| *t)
    }
    /// The nodes.
    pub fn nodes(&self) -> &[Box<dyn EapsEngine>] {
        &self.nodes
    }
    /// Current time.
    pub fn now(&self) -> Nanos {
        self.now
    }

    /// Runs every event before `until`.
    pub fn run_until(&mut self, until: Nanos) {
        while let Some(&Reverse((t, _, id))) = self.queue.peek() {
            if t >= until {
                break;
            }
            self.queue.pop();
            self.now = t;
            let ev = self.events.remove(&id).expect("event stored");
            self.handle(ev);
        }
        self.now = until;
    }

    fn handle(&mut self, ev: Ev) {
        let n = self.cfg.nodes;
        match ev {
            Ev::Send { flow } => {
                let f = self.cfg.flows[flow];
                let seq = self.sent[flow].len();
                self.sent[flow].push(self.now);
                self.delivered[flow].push(false);
                let d =
                    Data { flow, seq, vlan: f.vlan, src: host_mac(f.src), dst: host_mac(f.dst), hops: 0, app: None };
                self.bridge(f.src, 2, d);
                let next = self.now + self.cfg.period;
                if next < self.traffic_until {
                    self.push(next, Ev::Send { flow });
                }
            }
            Ev::Arrive { link, epoch, node, port, frame } => {
                if !self.link_up[link] || self.link_epoch[link] != epoch {
                    return; // lost on the failed link
                }
                match frame {
                    Frame::Data(d) => self.bridge(node, port, d),
                    Frame::Control(bytes) => {
                        if let Ok(a) = self.nodes[node].handle_frame(self.now, port, &bytes) {
                            self.apply(node, a);
                        }
                    }
                }
            }
            Ev::Control { node, port, frame } => {
                if let Ok(a) = self.nodes[node].handle_frame(self.now, port, &frame) {
                    self.apply(node, a);
                }
            }
            Ev::Wake { node } => {
                if self.wake_at[node] == Some(self.now) {
                    self.wake_at[node] = None;
                }
                if self.nodes[node].poll_timeout().is_some_and(|t| t <= self.now) {
                    let a = self.nodes[node].handle_timeout(self.now);
                    self.apply(node, a);
                }
            }
            Ev::Fail { link } => {
                if self.link_up[link] {
                    self.link_up[link] = false;
                    self.link_epoch[link] += 1;
                    let at = self.now + self.cfg.detect;
                    self.push(at, Ev::Detect { node: link, port: 1, up: false });
                    self.push(at, Ev::Detect { node: (link + 1) % n, port: 0, up: false });
                }
            }
            Ev::Restore { link } => {
                if !self.link_up[link] {
                    self.link_up[link] = true;
                    self.link_epoch[link] += 1;
                    self.busy[link] = [self.now; 2];
                    let at = self.now + self.cfg.detect;
                    self.push(at, Ev::Detect { node: link, port: 1, up: true });
                    self.push(at, Ev::Detect { node: (link + 1) % n, port: 0, up: true });
                }
            }
            Ev::Detect { node, port, up } => {
                let a = if up {
                    self.nodes[node].link_up(self.now, port)
                } else {
                    self.nodes[node].link_down(self.now, port)
                };
                self.apply(node, a);
            }
        }
    }

    /// Whether node `node` lets `vlan` through ring port `port`.
    fn passes(&self, node: usize, port: Port, vlan: u16) -> bool {
        let e = &self.nodes[node];
        e.link(port) && e.domain_of_vlan(vlan).is_none_or(|d| e.forwarding(d, port))
    }

    fn bridge(&mut self, node: usize, port: Port, d: Data) {
        if port < 2 && !self.passes(node, port, d.vlan) {
            return;
        }
        self.fdb[node].insert((d.vlan, d.src), port);
        let outs: Vec<Port> = match self.fdb[node].get(&(d.vlan, d.dst)) {
            Some(&q) if q == port => vec![],
            Some(&q) => vec![q],
            None => (0..3).filter(|&q| q != port).collect(),
        };
        for q in outs {
            if q == 2 {
                if let Some(bytes) = &d.app {
                    if self.host_macs[node].contains(&d.dst) {
                        self.inbox.push((node, bytes.to_vec()));
                    }
                } else if d.dst == host_mac(node) {
                    self.delivered[d.flow][d.seq] = true;
                }
            } else if self.passes(node, q, d.vlan) {
                let mut d2 = d.clone();
                d2.hops += 1;
                self.transmit(node, q, Frame::Data(d2));
            }
        }
    }

    fn transmit(&mut self, node: usize, port: Port, frame: Frame) {
        let n = self.cfg.nodes;
        let (link, dir, peer, peer_port) =
            if port == 1 { (node, 0, (node + 1) % n, 0) } else { ((node + n - 1) % n, 1, (node + n - 1) % n, 1) };
        let bytes =
            match &frame {
                Frame::Control(b) => {
                    if let Ok((_, _, pdu)) = parse_frame(b) {
                        let t = pdu.eaps_type;
                        let now = self.now;
                        if self.drop_rules.iter().any(|&(rt, l, from, to)| {
                            rt == t && l.is_none_or(|l| l == link) && (from..to).contains(&now)
                        }) {
                            self.pdus_dropped += 1;
                            return;
                        }
                    }
                    b.len().max(60) + 4
                }
                Frame::Data(d) => {
                    if !self.seen.insert((d.flow, d.seq, link, dir)) || d.hops > 2 * n {
                        if d.flow == APP {
                            self.app_looped += 1;
                        } else {
                            self.looped[d.flow].insert(d.seq);
                        }
                        return;
                    }
                    d.app.as_ref().map_or(self.cfg.frame_len, |b| b.len().max(60) + 4)
                }
            };
        if !self.link_up[link] {
            return;
        }
        if let Frame::Control(b) = &frame {
            if let Some(i) = self.watched.iter().position(|w| w == b) {
                self.control_crossings[i].0 += 1;
                if !self.watched_seen.insert((i, link, dir)) {
                    self.control_crossings[i].1 += 1;
                }
            }
        }
        let ser = ((bytes + 20) as u64 * 8 * 1_000_000_000).div_ceil(self.cfg.bits_per_second);
        let start = self.busy[link][dir as usize].max(self.now);
        self.busy[link][dir as usize] = start + ser;
        let at = start + ser + self.cfg.latency;
        let epoch = self.link_epoch[link];
        self.push(at, Ev::Arrive { link, epoch, node: peer, port: peer_port, frame });
    }

    fn apply(&mut self, node: usize, actions: Vec<Action>) {
        for a in actions {
            match a {
                Action::Send { port, frame } => {
                    self.frames_out.push((self.now, node, port, frame.clone()));
                    self.transmit(node, port, Frame::Control(frame))
                }
                Action::PortState { domain, port, forwarding } => {
                    self.port_states.push((self.now, node, domain, port, forwarding))
                }
                Action::FlushFdb { domain } => {
                    let vlans = self.nodes[node].config(domain).protected.clone();
                    let before = self.fdb[node].len();
                    self.fdb[node].retain(|(v, _), _| !vlans.contains(v));
                    self.flushes.push((self.now, (before - self.fdb[node].len()) as u64));
                }
                Action::Transition { domain, to, .. } => {
                    self.log.push(Logged { at: self.now, node, domain, what: LogKind::Transition(to) })
                }
                Action::Alert { domain, alert } => {
                    self.log.push(Logged { at: self.now, node, domain, what: LogKind::Alert(alert) })
                }
            }
        }
        if let Some(t) = self.nodes[node].poll_timeout() {
            let t = t.max(self.now);
            if self.wake_at[node].is_none_or(|w| t < w || w < self.now) {
                self.wake_at[node] = Some(t);
                self.push(t, Ev::Wake { node });
            }
        }
    }

    /// The figures for frames sent, and flushes done, in `[from, to)`.
    pub fn report(&self, from: Nanos, to: Nanos) -> EventReport {
        let mut r =
            EventReport { at: from, convergence: Some(0), lost: 0, looped: 0, delivered: 0, flushed: 0, flushes: 0 };
        for f in 0..self.cfg.flows.len() {
            let mut last_lost = None;
            let mut last_in_window = None;
            for (s, &t) in self.sent[f].iter().enumerate() {
                if t < from || t >= to {
                    continue;
                }
                last_in_window = Some(s);
                if self.delivered[f][s] {
                    r.delivered += 1;
                } else {
                    r.lost += 1;
                    last_lost = Some(s);
                }
                if self.looped[f].contains(&s) {
                    r.looped += 1;
                }
            }
            if let Some(s) = last_lost {
                if Some(s) == last_in_window {
                    r.convergence = None;
                } else if let Some(c) = r.convergence {
                    r.convergence = Some(c.max(self.sent[f][s] + self.cfg.period - from));
                }
            }
        }
        for &(t, k) in &self.flushes {
            if (from..to).contains(&t) {
                r.flushed += k;
                r.flushes += 1;
            }
        }
        r
    }
}

/// The MAC address of the host at node `i`.
pub fn host_mac(i: usize) -> u64 {
    0x0200_0000_1000 + i as u64
}
