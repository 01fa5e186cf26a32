//! The ring simulator's scenarios (after the INET MRP examples): each link broken in turn and
//! restored, the master's primary and secondary port, a lost LINK-DOWN, a lost RING-UP flush,
//! two masters in one domain, two domains on one ring. Each one checks the states the protocol
//! must reach (an `Err` names the node, domain and state that differ) and returns a row per
//! event with the figures of [`EventReport`].

use super::ring::{Flow, LogKind, Ring, RingConfig, RingDomain};
use spotagg_driver::wire::eaps::EapsType;
use spotagg_spec::eaps::{Alert, Cause, State, MS};
use std::fmt;

/// One event's figures.
#[derive(Debug, Clone)]
pub struct Row {
    /// Scenario.
    pub scenario: String,
    /// Ring size.
    pub nodes: usize,
    /// The event ("down", "up", "start").
    pub event: &'static str,
    /// Number of events aggregated (links broken in turn).
    pub events: usize,
    /// The largest convergence time over the events (`None`: some flow never recovered).
    pub convergence: Option<u64>,
    /// Largest number of frames lost in one event.
    pub lost: u64,
    /// Frames looped, over all events.
    pub looped: u64,
    /// Largest number of FDB entries flushed in one event.
    pub flushed: u64,
    /// Largest number of flush operations in one event.
    pub flushes: u64,
}

impl fmt::Display for Row {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let conv = match self.convergence {
            Some(c) => format!("{:.3}", c as f64 / 1e6),
            None => "no recovery".into(),
        };
        write!(
            f,
            "| {} | {} | {} | {} | {} | {} | {} | {} / {} |",
            self.scenario,
            self.nodes,
            self.event,
            self.events,
            conv,
            self.lost,
            self.looped,
            self.flushed,
            self.flushes
        )
    }
}

/// The table header matching [`Row`]'s Display.
pub const HEADER: &str = "| scenario | nodes | event | events | convergence (ms, max) | frames lost (max) | frames looped (sum) | FDB entries flushed / flush ops (max) |\n|---|---|---|---|---|---|---|---|";

const T_FAIL: u64 = 10 * MS;
const T_CHECK_DOWN: u64 = 25 * MS;
const T_RESTORE: u64 = 30 * MS;
const T_CHECK_UP: u64 = 45 * MS;
const T_END: u64 = 50 * MS;

fn merge(rows: &mut Vec<Row>, scenario: &str, nodes: usize, event: &'static str, r: &super::ring::EventReport) {
    if let Some(row) = rows.iter_mut().find(|x| x.scenario == scenario && x.event == event && x.nodes == nodes) {
        row.events += 1;
        row.convergence = match (row.convergence, r.convergence) {
            (Some(a), Some(b)) => Some(a.max(b)),
            _ => None,
        };
        row.lost = row.lost.max(r.lost);
        row.looped += r.looped;
        row.flushed = row.flushed.max(r.flushed);
        row.flushes = row.flushes.max(r.flushes);
    } else {
        rows.push(Row {
            scenario: scenario.into(),
            nodes,
            event,
            events: 1,
            convergence: r.convergence,
            lost: r.lost,
            looped: r.looped,
            flushed: r.flushed,
            flushes: r.flushes,
        });
    }
}

fn expect(ring: &Ring, node: usize, d: usize, state: State, fwd: [bool; 2], when: &str) -> Result<(), String> {
    let e = &ring.nodes()[node];
    let got = (e.state(d), [e.forwarding(d, 0), e.forwarding(d, 1)]);
    if got != (state, fwd) {
        return Err(format!("{when}: node {node} domain {d}: {got:?}, expected {:?}", (state, fwd)));
    }
    Ok(())
}

/// Checks every node of domain `d` (single master `m`, primary port 1) with link `broken`
/// down (`Some`) or every link up (`None`).
fn check_domain(ring: &Ring, d: usize, m: usize, broken: Option<usize>, when: &str) -> Result<(), String> {
    let n = ring.nodes().len();
    for i in 0..n {
        let (port0_up, port1_up) = match broken {
            Some(l) => ((i + n - 1) % n != l, i != l),
            None => (true, true),
        };
        if i == m {
            match broken {
                Some(_) => expect(ring, i, d, State::Failed, [port0_up, port1_up], when)?,
                None => expect(ring, i, d, State::Complete, [false, true], when)?,
            }
        } else if port0_up && port1_up {
            expect(ring, i, d, State::LinksUp, [true, true], when)?;
        } else {
            expect(ring, i, d, State::LinksDown, [port0_up, port1_up], when)?;
        }
    }
    Ok(())
}

/// Link `link` of an `n`-node ring fails at 10 ms and is restored at 30 ms; `drop` loses every
/// PDU of a type in a window. Returns the down and up reports after checking the states.
fn cycle(
    cfg: RingConfig,
    link: usize,
    drop: &[(EapsType, Option<usize>, u64, u64)],
) -> Result<(Ring, super::ring::EventReport, super::ring::EventReport), String> {
    let masters: Vec<usize> = cfg.domains.iter().map(|d| d.masters[0]).collect();
    let mut ring = Ring::new(cfg, 4 * MS, T_END);
    for &(t, l, a, b) in drop {
        ring.drop_pdus(t, l, a, b);
    }
    ring.fail_link(link, T_FAIL);
    ring.restore_link(link, T_RESTORE);
    ring.run_until(T_FAIL);
    for (d, &m) in masters.iter().enumerate() {
        check_domain(&ring, d, m, None, "before the failure")?;
    }
    ring.run_until(T_CHECK_DOWN);
    for (d, &m) in masters.iter().enumerate() {
        check_domain(&ring, d, m, Some(link), &format!("link {link} down"))?;
    }
    ring.run_until(T_CHECK_UP);
    for (d, &m) in masters.iter().enumerate() {
        check_domain(&ring, d, m, None, &format!("link {link} restored"))?;
    }
    ring.run_until(T_END + 2 * MS);
    let down = ring.report(T_FAIL, T_RESTORE);
    let up = ring.report(T_RESTORE, T_END);
    Ok((ring, down, up))
}

/// Each link of an `n`-node ring broken in turn and restored; the master's primary (link 0)
/// and secondary (link n-1) get rows of their own too.
pub fn each_link(n: usize, rows: &mut Vec<Row>) -> Result<(), String> {
    for link in 0..n {
        let (_, down, up) = cycle(RingConfig::standard(n), link, &[])?;
        merge(rows, "each link broken in turn", n, "down", &down);
        merge(rows, "each link broken in turn", n, "up", &up);
        let special = if link == 0 {
            Some("master's primary port")
        } else if link == n - 1 {
            Some("master's secondary port")
        } else {
            None
        };
        if let Some(s) = special {
            merge(rows, s, n, "down", &down);
            merge(rows, s, n, "up", &up);
        }
    }
    Ok(())
}

/// Each link broken in turn with link-down detection taking `detect` (the PHY or the MDIO poll
/// being slower than the standard 100 µs), down events only.
pub fn each_link_detect(n: usize, detect: u64, rows: &mut Vec<Row>) -> Result<(), String> {
    let name = format!("each link, link-down detection {} us", detect / 1000);
    for link in 0..n {
        let mut cfg = RingConfig::standard(n);
        cfg.detect = detect;
        let (_, down, _) = cycle(cfg, link, &[])?;
        merge(rows, &name, n, "down", &down);
    }
    Ok(())
}

/// Link n/2 fails and every LINK-DOWN PDU is lost: the master finds out by its fail timer.
pub fn link_down_lost(n: usize, rows: &mut Vec<Row>) -> Result<(), String> {
    let link = n / 2;
    let (ring, down, up) = cycle(RingConfig::standard(n), link, &[(EapsType::LinkDown, None, T_FAIL, T_RESTORE)])?;
    let cause = ring.nodes()[0].last_transition(0);
    let failed_by_timer = ring.log.iter().any(|l| {
        l.node == 0 && l.what == LogKind::Alert(Alert::FailTimerExpired) && l.at >= T_FAIL && l.at < T_RESTORE
    });
    if !failed_by_timer || ring.pdus_dropped == 0 {
        return Err(format!("LINK-DOWN lost: the master did not fail by its timer (last transition {cause:?})"));
    }
    merge(rows, "LINK-DOWN lost (fail timer)", n, "down", &down);
    merge(rows, "LINK-DOWN lost (fail timer)", n, "up", &up);
    Ok(())
}

/// Link n/2 is restored and the RING-UP-FLUSH-FDB PDUs that would reach its two end nodes
/// are lost (on links n/2-1 and n/2+1): the restored ports open when their pre-forwarding
/// timer expires. With `everywhere`, every RING-UP-FLUSH-FDB is lost instead: then the other
/// nodes keep FDB entries that point at the master's now blocked secondary port, and only
/// ageing (not simulated) would repair them; the row shows that.
pub fn flush_lost(n: usize, everywhere: bool, rows: &mut Vec<Row>) -> Result<(), String> {
    let link = n / 2;
    let drops: Vec<_> = if everywhere {
        vec![(EapsType::RingUpFlushFdb, None, T_RESTORE, T_END)]
    } else {
        vec![
            (EapsType::RingUpFlushFdb, Some(link - 1), T_RESTORE, T_END),
            (EapsType::RingUpFlushFdb, Some((link + 1) % n), T_RESTORE, T_END),
        ]
    };
    let (ring, down, up) = cycle(RingConfig::standard(n), link, &drops)?;
    for node in [link, (link + 1) % n] {
        match ring.nodes()[node].last_transition(0) {
            Some((_, Cause::HealthComplete)) => {}
            other => return Err(format!("flush lost: node {node} last transition {other:?}, not HEALTH-Complete")),
        }
    }
    let name = if everywhere {
        "RING-UP flush lost at every node"
    } else {
        "RING-UP flush lost at the restored link (pre-forwarding)"
    };
    merge(rows, name, n, "up", &up);
    let _ = down;
    Ok(())
}

/// Nodes 0 and n/2 are both configured master of the one domain: both detect the other and
/// keep their secondary blocked, so the ring is cut in two but nothing loops.
pub fn two_masters(n: usize, rows: &mut Vec<Row>) -> Result<(), String> {
    let mut cfg = RingConfig::standard(n);
    cfg.domains[0].masters = vec![0, n / 2];
    let mut ring = Ring::new(cfg, 4 * MS, T_END);
    ring.run_until(T_END + 2 * MS);
    for m in [0, n / 2] {
        expect(&ring, m, 0, State::Failed, [false, true], "two masters")?;
        let other = ring.nodes()[if m == 0 { n / 2 } else { 0 }].mac();
        if !ring.log.iter().any(|l| l.node == m && l.what == LogKind::Alert(Alert::SecondMaster(other))) {
            return Err(format!("two masters: node {m} did not report the other master"));
        }
    }
    merge(rows, "two masters in one domain", n, "start", &ring.report(4 * MS, T_END));
    Ok(())
}

/// Two domains: A (control VLAN 10, protects VLAN 100, master node 0) and B (control VLAN 20,
/// protects VLAN 200, master node n/2), each with four flows; link n/4 fails and is restored.
pub fn two_domains(n: usize, rows: &mut Vec<Row>) -> Result<(), String> {
    let mut cfg = RingConfig::standard(n);
    let mut b = cfg.domains[0].clone();
    b.control_vlan = 20;
    b.protected = vec![200];
    b.masters = vec![n / 2];
    cfg.domains.push(RingDomain { ..b });
    let h = n / 2;
    let shifted: Vec<Flow> =
        cfg.flows.iter().map(|f| Flow { src: (f.src + h) % n, dst: (f.dst + h) % n, vlan: 200 }).collect();
    cfg.flows.extend(shifted);
    let (ring, down, up) = cycle(cfg, n / 4, &[])?;
    // Spatial reuse: the two domains block at different nodes.
    if ring.nodes()[0].forwarding(0, 0) || !ring.nodes()[0].forwarding(1, 0) || ring.nodes()[h].forwarding(1, 0) {
        return Err("two domains: the secondary ports are not blocked per domain".into());
    }
    merge(rows, "two domains on one ring", n, "down", &down);
    merge(rows, "two domains on one ring", n, "up", &up);
    Ok(())
}

/// Every scenario at one ring size.
pub fn all(n: usize) -> Result<Vec<Row>, String> {
    let mut rows = Vec::new();
    each_link(n, &mut rows)?;
    link_down_lost(n, &mut rows)?;
    flush_lost(n, false, &mut rows)?;
    flush_lost(n, true, &mut rows)?;
    two_masters(n, &mut rows)?;
    two_domains(n, &mut rows)?;
    Ok(rows)
}

/// What became of one control frame injected into a complete ring ([`stray_control_frames`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StrayRow {
    /// The frame.
    pub frame: &'static str,
    /// Ring size.
    pub nodes: usize,
    /// The master's pass rule (docs/eaps.md §2) on.
    pub rule: bool,
    /// Link crossings in the window.
    pub crossings: u64,
    /// Crossings of a link direction the frame had crossed before.
    pub looped: u64,
    /// Times the master (node 0) sent it on: its trips round the ring.
    pub master_passes: u64,
    /// Host frames looped in the window.
    pub data_looped: u64,
}

impl fmt::Display for StrayRow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let rule = if self.rule { "on" } else { "off" };
        write!(
            f,
            "| {} | {} | {rule} | {} | {} | {} | {} |",
            self.frame, self.nodes, self.crossings, self.looped, self.master_passes, self.data_looped
        )
    }
}

/// The table header matching [`StrayRow`]'s Display.
pub const STRAY_HEADER: &str =
    "| frame | nodes | master's pass rule | link crossings | looped crossings | passed on by the master | host frames looped |\n|---|---|---|---|---|---|---|";

/// The injected frames of [`stray_control_frames`]: a LINK-DOWN with a damaged checksum, an
/// ESL segment health PDU of a common link (ID 99) with no end on the ring, and a copy of that
/// ESL PDU sent again with the same EDP sequence (a replay), all on control VLAN 10.
pub fn stray_frames() -> Vec<(&'static str, Vec<u8>)> {
    use spotagg_driver::wire::eaps::{emit_frame, EapsRepr, EapsState};
    use spotagg_driver::wire::MacAddr;
    let mac = MacAddr([0x02, 0xee, 0, 0, 0, 0x99]);
    let mut damaged = emit_frame(
        &EapsRepr {
            edp_sequence: 7,
            eaps_type: EapsType::LinkDown,
            control_vlan: 10,
            system_mac: MacAddr([0x02, 0xea, 0, 0, 0, 2]),
            hello_timer: 1,
            fail_timer: 3,
            state: EapsState::LinksDown,
            hello_seq: 0,
        },
        MacAddr([0x02, 0xea, 0, 0, 0, 2]),
        7,
    );
    damaged[70] ^= 0x10; // a reserved byte: the EDP checksum no longer verifies
    let stray = super::differential::stray_esl(mac, 0x1234);
    vec![("damaged LINK-DOWN (bad EDP checksum)", damaged), ("ESL PDU of link 99 (no end on the ring)", stray)]
}

/// Injects [`stray_frames`] into a complete `n`-node ring (the standard domain and flows, master
/// node 0) at node 2's port 0, 5 ms and 6 ms after the start, with the master's pass rule on or
/// off; counts each frame's link crossings up to 15 ms. Checks that every node is still
/// as in a complete ring at the end.
pub fn stray_control_frames(n: usize, rule: bool) -> Result<Vec<StrayRow>, String> {
    let cfg = RingConfig::standard(n);
    let mut ring = Ring::with_nodes(cfg, 4 * MS, 15 * MS, |_, mac, domains| {
        let mut node = spotagg_spec::eaps::EapsNode::new(mac, domains, [true, true]);
        node.set_master_pass_rule(rule);
        Box::new(node)
    });
    ring.run_until(5 * MS);
    check_domain(&ring, 0, 0, None, "before the injection")?;
    let frames = stray_frames();
    for (i, (_, f)) in frames.iter().enumerate() {
        ring.inject_control(2, 0, (5 + i as u64) * MS, f.clone());
    }
    ring.run_until(15 * MS);
    check_domain(&ring, 0, 0, None, "after the injection")?;
    let data_looped = ring.report(4 * MS, 15 * MS).looped;
    Ok(frames
        .iter()
        .zip(&ring.control_crossings)
        .map(|((name, f), &(crossings, looped))| {
            let master_passes = ring.frames_out.iter().filter(|(_, node, _, g)| *node == 0 && g == f).count() as u64;
            StrayRow { frame: name, nodes: n, rule, crossings, looped, master_passes, data_looped }
        })
        .collect())
}
