//! Rings sharing links, simulated with reference nodes ([`EapsNode`]) and, optionally, shared
//! ports ([`SharedPort`]) at both ends of each common link, so that the superloop and its
//! prevention are shown without the kernel (docs/eaps.md §11). Two [`Topology`]s:
//!
//! - [`Topology::two_rings`], the namespace ring's (docs/eaps.md §10): nodes 1..=6; ring 1 is
//!   1–2–3–4–1 (master 1, control VLAN 10), ring 2 is 3–5–6–4 (master 5, control VLAN 20); the
//!   common link is 3–4 (controller 3, link ID 34). Host 6 is watched.
//! - [`Topology::three_rings`]: the same rings 1 and 2 (ring 2's master at 6), and ring 3,
//!   5–7–8–6 (master 7, control VLAN 30), which shares link 5–6 with ring 2 (controller 5, link
//!   ID 56). Host 8 is watched. With both common links down a superloop runs 3–2–1–4–6–8–7–5–3
//!   unless one controller, the root blocker, blocks it.
//! - [`Topology::four_rings`]: ring 3's master at 8, and ring 4, 7–9–10–8 (master 9, control
//!   VLAN 40), which shares link 7–8 with ring 3 (controller 7, link ID 12). Host 7 is watched.
//!   With all three common links down the superloop runs round the outside of the four rings;
//!   controllers 3 and 7 each hear only larger failed IDs directly (56), so without the
//!   segment RB ID relay both block and cut host 7 off; with it controller 3 learns of link 12.
//!
//! Each node is a learning bridge with a host; a
//! ring port passes data only while every domain on it (and the shared port) lets it. Time
//! advances in steps of [`STEP`]; a frame crosses one link per step; a link's ends see its
//! failure or repair [`DETECT`] later. Host 1 sends a broadcast every 100 µs. A data frame that
//! crosses the same link in the same direction twice is counted as looped (every crossing after
//! the first), and dropped after [`HOP_LIMIT`] hops, so that a loop stays bounded.

use spotagg_driver::wire::MacAddr;
use spotagg_spec::eaps::shared::{SegmentTimeoutAction, SharedAction, SharedConfig, SharedPort, SharedRole, Where};
use spotagg_spec::eaps::{Action, DomainConfig, EapsNode, FailAction, Nanos, Role, MS};
use std::collections::HashSet;

/// Simulation step (and link latency).
pub const STEP: Nanos = 10_000;
/// Link-state detection delay.
pub const DETECT: Nanos = 100_000;
/// Hops after which a data frame is dropped.
pub const HOP_LIMIT: u32 = 64;

/// The links of [`Topology::two_rings`] (the first seven of [`Topology::three_rings`]).
pub const LINKS: [(usize, usize); 7] = [(1, 2), (2, 3), (3, 4), (4, 1), (3, 5), (5, 6), (6, 4)];
/// The common link 3–4's index in the links.
pub const COMMON: usize = 2;
/// Link 5–6's index: ring 2's and ring 3's common link in [`Topology::three_rings`].
pub const COMMON_56: usize = 5;
/// Link 7–8's index: ring 3's and ring 4's common link in [`Topology::four_rings`].
pub const COMMON_78: usize = 8;

/// A domain at a node: role, primary peer, secondary peer, control VLAN.
pub type DomainPlan = (Role, usize, usize, u16);

/// A shared port: its node, the common link's index, controller (else partner), link ID.
pub type SharedPlan = (usize, usize, bool, u16);

/// What is simulated.
#[derive(Debug, Clone)]
pub struct Topology {
    /// The links: (node a, node b), nodes numbered from 1.
    pub links: Vec<(usize, usize)>,
    /// Per node (node 1 first): its domains.
    pub plan: Vec<Vec<DomainPlan>>,
    /// The shared ports.
    pub shared: Vec<SharedPlan>,
    /// The root-blocker rule at the shared ports.
    pub root_blocker: bool,
    /// The segment RB ID relay at the shared ports.
    pub rb_relay: bool,
    /// The node whose host's receipt of host 1's broadcasts [`Report::reached`] counts.
    pub watched: usize,
}

impl Topology {
    /// Two rings sharing link 3–4; `shared`: shared ports at 3 (controller) and 4 (partner).
    pub fn two_rings(shared: bool) -> Topology {
        Topology {
            links: LINKS.to_vec(),
            plan: vec![
                vec![(Role::Master, 2, 4, 10)],
                vec![(Role::Transit, 1, 3, 10)],
                vec![(Role::Transit, 2, 4, 10), (Role::Transit, 5, 4, 20)],
                vec![(Role::Transit, 1, 3, 10), (Role::Transit, 6, 3, 20)],
                vec![(Role::Master, 6, 3, 20)],
                vec![(Role::Transit, 5, 4, 20)],
            ],
            shared: if shared { vec![(3, COMMON, true, 34), (4, COMMON, false, 34)] } else { vec![] },
            root_blocker: true,
            rb_relay: true,
            watched: 6,
        }
    }

    /// Three rings in a chain, rings 1 and 2 sharing 3–4, rings 2 and 3 sharing 5–6; shared
    /// ports at both ends of both common links (controllers 3 and 5).
    pub fn three_rings(root_blocker: bool) -> Topology {
        let mut links = LINKS.to_vec();
        links.extend([(5, 7), (7, 8), (8, 6)]);
        Topology {
            links,
            plan: vec![
                vec![(Role::Master, 2, 4, 10)],
                vec![(Role::Transit, 1, 3, 10)],
                vec![(Role::Transit, 2, 4, 10), (Role::Transit, 5, 4, 20)],
                vec![(Role::Transit, 1, 3, 10), (Role::Transit, 6, 3, 20)],
                vec![(Role::Transit, 3, 6, 20), (Role::Transit, 7, 6, 30)],
                vec![(Role::Master, 5, 4, 20), (Role::Transit, 8, 5, 30)],
                vec![(Role::Master, 5, 8, 30)],
                vec![(Role::Transit, 7, 6, 30)],
            ],
            shared: vec![
                (3, COMMON, true, 34),
                (4, COMMON, false, 34),
                (5, COMMON_56, true, 56),
                (6, COMMON_56, false, 56),
            ],
            root_blocker,
            rb_relay: true,
            watched: 8,
        }
    }

    /// Four rings in a chain: [`Topology::three_rings`]' rings 1 to 3 (ring 3's master moved
    /// to node 8, primary 7, so that no master's secondary is a shared port), and ring 4,
    /// 7–9–10–8 (master 9), sharing link 7–8 with ring 3 (controller 7, partner 8, link ID 12).
    pub fn four_rings(root_blocker: bool, rb_relay: bool) -> Topology {
        let mut t = Topology::three_rings(root_blocker);
        t.links.extend([(7, 9), (9, 10), (10, 8)]);
        t.plan[6] = vec![(Role::Transit, 5, 8, 30), (Role::Transit, 9, 8, 40)];
        t.plan[7] = vec![(Role::Master, 7, 6, 30), (Role::Transit, 10, 7, 40)];
        t.plan.push(vec![(Role::Master, 7, 10, 40)]);
        t.plan.push(vec![(Role::Transit, 9, 8, 40)]);
        t.shared.extend([(7, COMMON_78, true, 12), (8, COMMON_78, false, 12)]);
        t.rb_relay = rb_relay;
        t.watched = 7;
        t
    }
}

#[derive(Clone)]
enum Frame {
    Pdu(Vec<u8>),
    Data { id: u64, src: usize, hops: u32 },
}

struct Node {
    /// Link index of each port.
    ports: Vec<usize>,
    link: Vec<bool>,
    /// (ports of the group as port indices, node).
    groups: Vec<([usize; 2], EapsNode)>,
    /// Shared port: its port, its segment ports, the machine.
    shared: Option<(usize, Vec<usize>, SharedPort)>,
    /// Learned: host → port.
    fdb: Vec<(usize, usize)>,
}

/// What a run measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Report {
    /// Data-frame crossings of a link direction already crossed by the same frame.
    pub looped: u64,
    /// Frames dropped at the hop limit.
    pub hop_limited: u64,
    /// Broadcasts from host 1 that reached the watched host, of those sent.
    pub reached: u64,
    /// Broadcasts sent.
    pub sent: u64,
}

/// The simulated pair of rings.
pub struct SharedRing {
    links: Vec<(usize, usize)>,
    watched: usize,
    nodes: Vec<Node>,
    link_up: Vec<bool>,
    in_flight: Vec<(usize, usize, Frame)>, // (node, port, frame) arriving next step
    pending_seen: Vec<(Nanos, usize, bool)>, // (time, link, up) for the ends
    seen: HashSet<(u64, usize, bool)>,
    now: Nanos,
    next_id: u64,
    report: Report,
}

fn dom(role: Role, primary: usize, vlan: u16) -> DomainConfig {
    DomainConfig {
        role,
        primary,
        control_vlan: vlan,
        protected: vec![100],
        hello: MS,
        fail: 3 * MS,
        pre_forwarding: 3 * MS,
        fail_action: FailAction::OpenSecondary,
    }
}

impl SharedRing {
    /// The two rings, all links up; `shared`: shared ports at nodes 3 (controller) and 4
    /// (partner). Every node is enabled at time 0.
    pub fn new(shared: bool) -> SharedRing {
        SharedRing::with(Topology::two_rings(shared))
    }

    /// Any topology, all links up; every node enabled at time 0.
    pub fn with(t: Topology) -> SharedRing {
        let links = t.links.clone();
        let port_to =
            |n: usize, peer: usize| links.iter().position(|&(a, b)| (a == n && b == peer) || (b == n && a == peer));
        let mut nodes = Vec::new();
        for (i, doms) in t.plan.iter().enumerate() {
            let n = i + 1;
            let mut ports: Vec<usize> = Vec::new();
            let idx = |l: usize, ports: &mut Vec<usize>| match ports.iter().position(|&x| x == l) {
                Some(i) => i,
                None => {
                    ports.push(l);
                    ports.len() - 1
                }
            };
            let mut groups = Vec::new();
            let mut vlans = Vec::new();
            for &(role, p, s, vlan) in doms {
                let pi = idx(port_to(n, p).unwrap(), &mut ports);
                let si = idx(port_to(n, s).unwrap(), &mut ports);
                let node =
                    EapsNode::new(MacAddr([2, 0, 0, 0, n as u8, vlan as u8]), vec![dom(role, 0, vlan)], [true, true]);
                groups.push(([pi, si], node));
                vlans.push(vlan);
            }
            let shared = t.shared.iter().find(|x| x.0 == n).map(|&(_, common, controller, link_id)| {
                let sp = ports.iter().position(|&l| l == common).unwrap();
                let (segs, segment_vlans): (Vec<usize>, Vec<u16>) = groups
                    .iter()
                    .zip(&vlans)
                    .filter(|((g, _), _)| g.contains(&sp))
                    .map(|((g, _), &v)| (if g[0] == sp { g[1] } else { g[0] }, v))
                    .unzip();
                let cfg = SharedConfig {
                    role: if controller { SharedRole::Controller } else { SharedRole::Partner },
                    link_id,
                    shared_vlan: segment_vlans[0],
                    hello: MS,
                    timeout: 3 * MS,
                    timeout_action: SegmentTimeoutAction::SegmentDown,
                    hold: 3 * MS,
                    root_blocker: t.root_blocker,
                    rb_relay: t.rb_relay,
                    segment_vlans,
                };
                let k = segs.len();
                (sp, segs, SharedPort::new(MacAddr([2, 0, 0, 1, n as u8, 0]), cfg, true, vec![true; k]))
            });
            let k = ports.len();
            nodes.push(Node { ports, link: vec![true; k], groups, shared, fdb: Vec::new() });
        }
        let mut r = SharedRing {
            link_up: vec![true; links.len()],
            links,
            watched: t.watched,
            nodes,
            in_flight: Vec::new(),
            pending_seen: Vec::new(),
            seen: HashSet::new(),
            now: 0,
            next_id: 0,
            report: Report::default(),
        };
        for n in 0..r.nodes.len() {
            for g in 0..r.nodes[n].groups.len() {
                let a = r.nodes[n].groups[g].1.enable(0);
                r.eaps_actions(n, g, a);
            }
            if let Some((_, _, sp)) = r.nodes[n].shared.as_mut() {
                let a = sp.enable(0);
                r.shared_actions(n, a);
            }
        }
        r
    }

    /// Fails (`up` false) or restores a link now.
    pub fn set_link(&mut self, link: usize, up: bool) {
        self.link_up[link] = up;
        self.pending_seen.push((self.now + DETECT, link, up));
    }

    /// What was measured since the last [`SharedRing::reset_report`].
    pub fn report(&self) -> Report {
        self.report
    }
    /// Starts counting afresh.
    pub fn reset_report(&mut self) {
        self.report = Report::default();
    }
    /// Whether node n's shared port (if any) blocks some segment port now.
    pub fn shared_blocking(&self, n: usize) -> bool {
        self.nodes[n - 1].shared.as_ref().is_some_and(|(_, segs, sp)| (0..segs.len()).any(|i| !sp.forwarding(i)))
    }

    /// Whether node n's shared port (if any) is the root blocker now.
    pub fn root_blocker(&self, n: usize) -> bool {
        self.nodes[n - 1].shared.as_ref().is_some_and(|(_, _, sp)| sp.root_blocker())
    }

    fn forwarding(&self, n: usize, port: usize) -> bool {
        let node = &self.nodes[n];
        let groups = node.groups.iter().all(|(g, e)| match g.iter().position(|&x| x == port) {
            Some(l) => e.forwarding(0, l),
            None => true,
        });
        let shared = node.shared.as_ref().is_none_or(|(_, segs, sp)| match segs.iter().position(|&x| x == port) {
            Some(i) => sp.forwarding(i),
            None => true,
        });
        groups && shared && node.link[port]
    }

    fn send(&mut self, n: usize, port: usize, f: Frame) {
        let l = self.nodes[n].ports[port];
        if !self.link_up[l] {
            return;
        }
        let (a, b) = self.links[l];
        let (peer, forward) = if a == n + 1 { (b - 1, true) } else { (a - 1, false) };
        if let Frame::Data { id, .. } = f {
            if !self.seen.insert((id, l, forward)) {
                self.report.looped += 1;
            }
        }
        let pp = self.nodes[peer].ports.iter().position(|&x| x == l).unwrap();
        self.in_flight.push((peer, pp, f));
    }

    fn eaps_actions(&mut self, n: usize, g: usize, actions: Vec<Action>) {
        let ports = self.nodes[n].groups[g].0;
        for a in actions {
            match a {
                Action::Send { port, frame } => self.send(n, ports[port], Frame::Pdu(frame)),
                Action::FlushFdb { .. } => self.nodes[n].fdb.retain(|&(_, p)| !ports.contains(&p)),
                _ => {}
            }
        }
    }

    fn shared_actions(&mut self, n: usize, actions: Vec<SharedAction>) {
        for a in actions {
            if let SharedAction::Send { to, frame } = a {
                let (sp, segs, _) = self.nodes[n].shared.as_ref().unwrap();
                let port = match to {
                    Where::Shared => *sp,
                    Where::Segment(i) => segs[i],
                };
                self.send(n, port, Frame::Pdu(frame));
            }
        }
    }

    fn receive(&mut self, n: usize, port: usize, f: Frame) {
        match f {
            Frame::Pdu(bytes) => {
                let now = self.now;
                if let Some((sp, segs, shp)) = self.nodes[n].shared.as_mut() {
                    let w = if *sp == port {
                        Some(Where::Shared)
                    } else {
                        segs.iter().position(|&x| x == port).map(Where::Segment)
                    };
                    if let Some(w) = w {
                        if let Ok(a) = shp.handle_frame(now, w, &bytes) {
                            // Another common link's PDU goes on through the ring nodes below.
                            let pass_on = a.iter().any(|x| matches!(x, SharedAction::PassOn { .. }));
                            self.shared_actions(n, a);
                            if !pass_on {
                                return;
                            }
                        }
                    }
                }
                for g in 0..self.nodes[n].groups.len() {
                    let Some(l) = self.nodes[n].groups[g].0.iter().position(|&x| x == port) else { continue };
                    if let Ok(a) = self.nodes[n].groups[g].1.handle_frame(now, l, &bytes) {
                        self.eaps_actions(n, g, a);
                        return;
                    }
                }
            }
            Frame::Data { id, src, hops } => {
                if !self.forwarding(n, port) {
                    return;
                }
                if hops >= HOP_LIMIT {
                    self.report.hop_limited += 1;
                    return;
                }
                self.nodes[n].fdb.retain(|&(h, _)| h != src);
                self.nodes[n].fdb.push((src, port));
                if n + 1 == self.watched && src == 0 {
                    self.report.reached += 1;
                }
                for p in 0..self.nodes[n].ports.len() {
                    if p != port && self.forwarding(n, p) {
                        self.send(n, p, Frame::Data { id, src, hops: hops + 1 });
                    }
                }
            }
        }
    }

    /// Runs to `until`, host 1 sending a broadcast every 100 µs.
    pub fn run_until(&mut self, until: Nanos) {
        while self.now < until {
            self.now += STEP;
            let now = self.now;
            let due: Vec<(Nanos, usize, bool)> = self.pending_seen.iter().copied().filter(|e| e.0 <= now).collect();
            self.pending_seen.retain(|e| e.0 > now);
            for (_, l, up) in due {
                for end in [self.links[l].0 - 1, self.links[l].1 - 1] {
                    let p = self.nodes[end].ports.iter().position(|&x| x == l).unwrap();
                    self.nodes[end].link[p] = up;
                    for g in 0..self.nodes[end].groups.len() {
                        if let Some(local) = self.nodes[end].groups[g].0.iter().position(|&x| x == p) {
                            let e = &mut self.nodes[end].groups[g].1;
                            let a = if up { e.link_up(now, local) } else { e.link_down(now, local) };
                            self.eaps_actions(end, g, a);
                        }
                    }
                    if let Some((sp, segs, shp)) = self.nodes[end].shared.as_mut() {
                        let a = if *sp == p {
                            shp.shared_link(now, up)
                        } else if let Some(i) = segs.iter().position(|&x| x == p) {
                            shp.segment_link(now, i, up)
                        } else {
                            vec![]
                        };
                        self.shared_actions(end, a);
                    }
                    if !up {
                        self.nodes[end].fdb.retain(|&(_, q)| q != p);
                    }
                }
            }
            for (n, p, f) in std::mem::take(&mut self.in_flight) {
                self.receive(n, p, f);
            }
            for n in 0..self.nodes.len() {
                for g in 0..self.nodes[n].groups.len() {
                    if self.nodes[n].groups[g].1.poll_timeout().is_some_and(|t| t <= now) {
                        let a = self.nodes[n].groups[g].1.handle_timeout(now);
                        self.eaps_actions(n, g, a);
                    }
                }
                let due = self.nodes[n].shared.as_ref().and_then(|s| s.2.poll_timeout()).is_some_and(|t| t <= now);
                if due {
                    let a = self.nodes[n].shared.as_mut().unwrap().2.handle_timeout(now);
                    self.shared_actions(n, a);
                }
            }
            if now.is_multiple_of(100_000) {
                self.report.sent += 1;
                self.next_id += 1;
                let id = self.next_id;
                for p in 0..self.nodes[0].ports.len() {
                    if self.forwarding(0, p) {
                        self.send(0, p, Frame::Data { id, src: 0, hops: 1 });
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod test {
    use super::*;

    /// The common link fails for 4 ms: without shared ports the broadcasts loop round both rings
    /// (bounded by the hop limit and by the repair); with them, nothing loops and host 6 keeps
    /// receiving. Then, with shared ports, a second failure (link 6–4) while the common link is
    /// down: the controller opens ring 2's segment port and host 6 is still reached.
    #[test]
    fn superloop_with_and_without_shared_ports() {
        let mut out = Vec::new();
        for shared in [false, true] {
            let mut r = SharedRing::new(shared);
            r.run_until(10 * MS);
            assert_eq!(r.report().looped, 0, "shared {shared}: a loop before any failure");
            r.reset_report();
            r.set_link(COMMON, false);
            r.run_until(14 * MS);
            let down = r.report();
            if shared {
                assert!(r.shared_blocking(3), "the controller blocks a segment port");
            }
            r.set_link(COMMON, true);
            r.run_until(30 * MS);
            r.reset_report();
            r.run_until(40 * MS);
            let after = r.report();
            out.push((shared, down, after));
        }
        for (shared, down, after) in &out {
            eprintln!("shared ports {shared}: common link down 4 ms: {down:?}; 10 ms after repair: {after:?}");
            assert_eq!(after.looped, 0, "shared {shared}: still looping after the repair");
            assert_eq!(after.reached, after.sent, "shared {shared}: host 6 not reached after the repair");
        }
        let (no, with) = (out[0].1, out[1].1);
        assert!(no.looped > 1000 && no.hop_limited > 0, "without shared ports the superloop forms: {no:?}");
        assert_eq!(with.looped, 0, "with shared ports: {with:?}");
        assert!(with.reached >= with.sent - 3, "with shared ports host 6 keeps receiving: {with:?}");

        let mut r = SharedRing::new(true);
        r.run_until(10 * MS);
        r.set_link(COMMON, false);
        r.run_until(15 * MS);
        r.set_link(6, false); // 6-4: ring 2's segment broken too
        r.run_until(25 * MS);
        r.reset_report();
        r.run_until(30 * MS);
        let second = r.report();
        eprintln!("shared ports, second failure (6-4): {second:?}");
        assert_eq!(second.looped, 0);
        assert_eq!(second.reached, second.sent, "host 6 reached through the reopened segment port: {second:?}");
        assert!(!r.shared_blocking(3), "a broken segment's port is open");
    }

    /// Three rings, two common links. Link 3–4 fails, then 5–6 too: without the root-blocker
    /// rule controller 3 sees ring 2's segment broken and opens it, controller 5 likewise, and
    /// broadcasts circle 3–2–1–4–6–8–7–5–3; with it, controller 3 (link 34, the lower ID, which
    /// hears controller 5's failed link 56 on its ring-2 segment port) keeps that port blocked,
    /// nothing loops and host 8 is still reached. After both repairs nothing loops either way.
    #[test]
    fn root_blocker_with_two_failed_common_links() {
        let mut out = Vec::new();
        for rule in [false, true] {
            let mut r = SharedRing::with(Topology::three_rings(rule));
            r.run_until(10 * MS);
            assert_eq!(r.report().looped, 0, "rule {rule}: a loop before any failure");
            // (The broadcast sent at 10 ms is still on its way.)
            assert_eq!(r.report().reached, r.report().sent - 1, "rule {rule}: host 8 not reached");
            r.reset_report();
            r.set_link(COMMON, false);
            r.run_until(15 * MS);
            let one = r.report();
            assert_eq!(one.looped, 0, "rule {rule}: one common link down: {one:?}");
            assert!(r.shared_blocking(3) && !r.shared_blocking(5));
            r.reset_report();
            r.set_link(COMMON_56, false);
            r.run_until(25 * MS);
            let two = r.report();
            let roots = [r.root_blocker(3), r.root_blocker(5)];
            let blocking = [r.shared_blocking(3), r.shared_blocking(5)];
            r.set_link(COMMON, true);
            r.set_link(COMMON_56, true);
            r.run_until(40 * MS);
            r.reset_report();
            r.run_until(50 * MS);
            let after = r.report();
            eprintln!(
                "root blocker {rule}: 3-4 down 5 ms {one:?}; 5-6 down too 10 ms {two:?}; roots {roots:?}, \
                 blocking {blocking:?}; 10 ms after both repairs {after:?}"
            );
            assert_eq!(after.looped, 0, "rule {rule}: looping after the repairs");
            assert_eq!(after.reached, after.sent, "rule {rule}: host 8 not reached after the repairs");
            out.push((two, roots, blocking));
        }
        let (without, _, blocking) = out[0];
        assert!(without.looped > 1000 && without.hop_limited > 0, "without the rule the superloop forms: {without:?}");
        assert_eq!(blocking, [false, false], "without the rule neither controller blocks");
        let (with, roots, blocking) = out[1];
        assert_eq!(with.looped, 0, "with the rule: {with:?}");
        assert_eq!(with.reached, with.sent, "with the rule host 8 is reached: {with:?}");
        assert_eq!(roots, [true, false], "controller 3 (link 34) is the root blocker, 5 (link 56) is not");
        assert_eq!(blocking, [true, false], "only the root blocker blocks");
    }

    /// Four rings, three common links, all down (3–4 at 10 ms, 5–6 at 12 ms, 7–8 at 14 ms):
    /// without the root-blocker rule the superloop forms; with the rule but no relay controllers
    /// 3 (link 34, hearing 56) and 7 (link 12, hearing 56) both block, which cuts nodes 5 and 7
    /// off host 1; with the segment RB ID relay controller 3 hears of 12 through 5 and 6 and
    /// stands down, 7 alone blocks, nothing loops and host 7 is reached. After all repairs
    /// nothing loops either way.
    #[test]
    fn rb_id_relay_with_three_failed_common_links() {
        let mut out = Vec::new();
        for (rule, relay) in [(false, false), (true, false), (true, true)] {
            let mut r = SharedRing::with(Topology::four_rings(rule, relay));
            r.run_until(10 * MS);
            assert_eq!(r.report().looped, 0, "rule {rule} relay {relay}: a loop before any failure");
            r.set_link(COMMON, false);
            r.run_until(12 * MS);
            r.set_link(COMMON_56, false);
            r.run_until(14 * MS);
            r.set_link(COMMON_78, false);
            r.run_until(20 * MS);
            r.reset_report();
            r.run_until(30 * MS);
            let down = r.report();
            let roots = [r.root_blocker(3), r.root_blocker(5), r.root_blocker(7)];
            let blocking = [r.shared_blocking(3), r.shared_blocking(5), r.shared_blocking(7)];
            for l in [COMMON, COMMON_56, COMMON_78] {
                r.set_link(l, true);
            }
            r.run_until(45 * MS);
            r.reset_report();
            r.run_until(55 * MS);
            let after = r.report();
            eprintln!(
                "root blocker {rule}, relay {relay}: all three down 10 ms {down:?}; roots {roots:?}, blocking \
                 {blocking:?}; 10 ms after the repairs {after:?}"
            );
            assert_eq!(after.looped, 0, "rule {rule} relay {relay}: looping after the repairs");
            assert_eq!(after.reached, after.sent, "rule {rule} relay {relay}: host 7 not reached after the repairs");
            out.push((down, roots, blocking));
        }
        let (none, _, _) = out[0];
        assert!(none.looped > 1000, "without the rule the superloop forms: {none:?}");
        let (direct, roots, blocking) = out[1];
        assert_eq!(direct.looped, 0, "rule without relay: {direct:?}");
        assert_eq!(roots, [true, false, true], "without the relay 3 and 7 are both root blockers");
        assert_eq!(blocking, [true, false, true]);
        assert_eq!(direct.reached, 0, "two blockers cut host 7 off: {direct:?}");
        let (relayed, roots, blocking) = out[2];
        assert_eq!(relayed.looped, 0, "rule with relay: {relayed:?}");
        assert_eq!(roots, [false, false, true], "with the relay only 7 (link 12) is the root blocker");
        assert_eq!(blocking, [false, false, true]);
        assert_eq!(relayed.reached, relayed.sent, "with the relay host 7 is reached: {relayed:?}");
    }
}
