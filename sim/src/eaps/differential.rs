//! The differential ring scenarios: the same seeded ring runs with some nodes replaced by
//! another [`EapsEngine`] (the hardware node in rust-hdl or Verilator, `sim/tests/eaps_hdl.rs`;
//! the board's switch fabric with its MACs, `boards/tests/board_eaps_ring.rs`), compared with
//! the all-reference run: every control frame (time, node, port, bytes), every port-state
//! change, every transition and alert, and the frames lost and looped.

use super::ring::{LogKind, Ring, RingConfig, RingDomain};
use super::EapsEngine;
use spotagg_driver::wire::eaps::EapsType;
use spotagg_driver::wire::esl::{self, EslRepr, EslRole, EslState};
use spotagg_driver::wire::MacAddr;
use spotagg_spec::eaps::{DomainConfig, EapsNode, FailAction, Nanos, MS, US};

/// What a ring run produced, each list in time order (entries of one instant by node, then
/// port or domain: the order within one call is not part of the contract).
#[derive(Debug, PartialEq, Eq)]
pub struct RingTrace {
    /// Control frames sent: time, node, port, bytes.
    pub frames: Vec<(Nanos, usize, usize, Vec<u8>)>,
    /// Port-state changes: time, node, domain, port, forwarding.
    pub ports: Vec<(Nanos, usize, usize, usize, bool)>,
    /// Transitions and alerts: time, node, domain, what.
    pub log: Vec<(Nanos, usize, usize, String)>,
    /// Data frames lost.
    pub lost: u64,
    /// Data frames looped.
    pub looped: u64,
}

/// A ring scenario: its configuration, what happens to it, and how long it runs.
pub struct Scenario {
    /// What it shows.
    pub name: &'static str,
    /// The ring.
    pub cfg: RingConfig,
    /// Its failures, losses and injected frames.
    pub setup: Box<dyn Fn(&mut Ring)>,
    /// When it ends.
    pub end: Nanos,
}

/// Runs scenario `s` with node `i` made by `make(i, mac, domains)` (both links up), host
/// traffic from 1 ms to 1 ms before the end; the trace and the number of control frames sent.
pub fn run_ring(
    s: &Scenario,
    make: impl FnMut(usize, MacAddr, Vec<DomainConfig>) -> Box<dyn EapsEngine>,
) -> (RingTrace, u64) {
    let mut ring = Ring::with_nodes(s.cfg.clone(), MS, s.end - MS, make);
    (s.setup)(&mut ring);
    ring.run_until(s.end);
    let mut frames = ring.frames_out.clone();
    frames.sort_by_key(|f| (f.0, f.1, f.2));
    let mut ports = ring.port_states.clone();
    ports.sort_by_key(|p| (p.0, p.1, p.2, p.3));
    let mut log: Vec<_> = ring
        .log
        .iter()
        .map(|l| {
            let what = match l.what {
                LogKind::Transition(s) => format!("{s:?}"),
                LogKind::Alert(a) => format!("{a:?}"),
            };
            (l.at, l.node, l.domain, what)
        })
        .collect();
    log.sort();
    let r = ring.report(0, s.end);
    (RingTrace { frames, ports, log, lost: r.lost, looped: r.looped }, ring.frames_out.len() as u64)
}

/// The differential scenarios on a ring of `n` nodes (master of domain 0 at node 0): each link
/// broken in turn and restored, LINK-DOWN lost, RING-UP lost at every node, stray control
/// frames (docs/eaps.md §2), two masters in one domain, two domains (one send-alert).
pub fn scenarios(n: usize) -> Vec<Scenario> {
    let mut v = Vec::new();
    let base = RingConfig::standard(n);
    // Each link broken in turn and restored, 8 ms apart.
    let links = n;
    v.push(Scenario {
        name: "each link broken in turn",
        cfg: base.clone(),
        setup: Box::new(move |r| {
            for l in 0..links {
                r.fail_link(l, 5 * MS + l as u64 * 12 * MS);
                r.restore_link(l, 11 * MS + l as u64 * 12 * MS);
            }
        }),
        end: 8 * MS + links as u64 * 12 * MS,
    });
    // LINK-DOWN lost: the master's fail timer finds the break.
    v.push(Scenario {
        name: "LINK-DOWN lost",
        cfg: base.clone(),
        setup: Box::new(move |r| {
            r.drop_pdus(EapsType::LinkDown, None, 0, 30 * MS);
            r.fail_link(n / 2, 5 * MS);
            r.restore_link(n / 2, 15 * MS);
        }),
        end: 25 * MS,
    });
    // RING-UP flush lost everywhere: the restored ends open on their pre-forwarding timers.
    v.push(Scenario {
        name: "RING-UP lost at every node",
        cfg: base.clone(),
        setup: Box::new(move |r| {
            r.fail_link(1, 5 * MS);
            r.restore_link(1, 10 * MS);
            r.drop_pdus(EapsType::RingUpFlushFdb, None, 10 * MS, 20 * MS);
        }),
        end: 25 * MS,
    });
    // Stray control frames (docs/eaps.md §2): a damaged PDU and ESL PDUs of a link with no end
    // on the ring, injected on either side of the master; the same sequence again (dropped at
    // the master), a newer one (passed), five senders at once (the fifth refused while four
    // entries live), and the first again once its entry has lapsed (passed).
    let esl_pdu = |k: u8, seq: u16| stray_esl(MacAddr([2, 0xee, 0, 0, 0, k]), seq);
    v.push(Scenario {
        name: "stray control frames",
        cfg: base.clone(),
        setup: Box::new(move |r| {
            let stray = super::scenarios::stray_frames();
            r.inject_control(2, 0, 5 * MS, stray[0].1.clone());
            r.inject_control(n - 1, 0, 5 * MS + 500 * US, stray[0].1.clone());
            r.inject_control(2, 0, 6 * MS, esl_pdu(0, 100));
            r.inject_control(1, 1, 6 * MS + 500 * US, esl_pdu(0, 100));
            r.inject_control(1, 1, 7 * MS, esl_pdu(0, 101));
            for k in 1..=4 {
                r.inject_control(2, 0, 8 * MS + u64::from(k) * 100 * US, esl_pdu(k, 7));
            }
            r.inject_control(2, 0, 13 * MS, esl_pdu(0, 100));
        }),
        end: 16 * MS,
    });
    // Two masters in one domain.
    let mut two = base.clone();
    two.domains[0].masters = vec![0, n / 2];
    v.push(Scenario { name: "two masters", cfg: two, setup: Box::new(|_| {}), end: 12 * MS });
    // Two domains, masters at 0 and n/2, and send-alert on the second.
    let mut dd = base.clone();
    dd.domains.push(RingDomain {
        control_vlan: 20,
        protected: vec![200, 201],
        masters: vec![n / 2],
        primary: 0,
        hello: MS,
        fail: 3 * MS,
        pre_forwarding: 3 * MS,
        fail_action: FailAction::SendAlert,
    });
    for f in base.flows.clone() {
        dd.flows.push(super::ring::Flow { vlan: 200, ..f });
    }
    v.push(Scenario {
        name: "two domains (one send-alert)",
        cfg: dd,
        setup: Box::new(move |r| {
            r.fail_link(n - 1, 5 * MS);
            r.restore_link(n - 1, 12 * MS);
            r.drop_pdus(EapsType::LinkDown, Some(0), 20 * MS, 22 * MS);
            r.fail_link(0, 20 * MS);
            r.restore_link(0, 26 * MS);
        }),
        end: 32 * MS,
    });
    v
}

/// The reference node for [`run_ring`]'s `make`.
pub fn reference(_: usize, mac: MacAddr, domains: Vec<DomainConfig>) -> Box<dyn EapsEngine> {
    Box::new(EapsNode::new(mac, domains, [true, true]))
}

/// Where `got` differs from `want` (the all-reference run): the first differing control
/// frame, the port states, the log, or the lost and looped counts; `None` if identical.
pub fn difference(got: &RingTrace, want: &RingTrace) -> Option<String> {
    if got.frames.len() != want.frames.len() {
        let first = got.frames.iter().zip(&want.frames).position(|(g, w)| g != w);
        return Some(format!(
            "{} control frames, the reference {} (first difference at {first:?}: {:?} against {:?})",
            got.frames.len(),
            want.frames.len(),
            first.map(|i| &got.frames[i]),
            first.map(|i| &want.frames[i])
        ));
    }
    if let Some(i) = got.frames.iter().zip(&want.frames).position(|(g, w)| g != w) {
        return Some(format!("control frame {i}: {:02x?} against {:02x?}", got.frames[i], want.frames[i]));
    }
    if got.ports != want.ports {
        let i = got.ports.iter().zip(&want.ports).position(|(g, w)| g != w);
        return Some(format!(
            "port states ({} against {}), first difference {:?}",
            got.ports.len(),
            want.ports.len(),
            i.map(|i| (&got.ports[i], &want.ports[i]))
        ));
    }
    if got.log != want.log {
        let i = got.log.iter().zip(&want.log).position(|(g, w)| g != w);
        return Some(format!(
            "transitions ({} against {}), first difference {:?}",
            got.log.len(),
            want.log.len(),
            i.map(|i| (&got.log[i], &want.log[i]))
        ));
    }
    if (got.lost, got.looped) != (want.lost, want.looped) {
        return Some(format!("lost, looped {:?} against {:?}", (got.lost, got.looped), (want.lost, want.looped)));
    }
    None
}

/// Every scenario on `n` nodes, run once all-reference and once for each placement with node
/// `i` made by `make(placement, i, mac, domains)`: panics at the first difference, naming the
/// scenario and the placement; prints a line per scenario. Returns the rings compared and the
/// control frames of the reference runs.
pub fn compare_placements<P: std::fmt::Debug>(
    n: usize,
    placements: &[P],
    mut make: impl FnMut(&P, usize, MacAddr, Vec<DomainConfig>) -> Box<dyn EapsEngine>,
) -> (usize, u64) {
    let (mut cases, mut control) = (0, 0);
    for s in scenarios(n) {
        let (want, frames) = run_ring(&s, reference);
        assert_eq!(want.looped, 0, "{}: the reference loops", s.name);
        for p in placements {
            let (got, _) = run_ring(&s, |i, mac, domains| make(p, i, mac, domains));
            if let Some(d) = difference(&got, &want) {
                panic!("{n} nodes, {}: placement {p:?}: {d}", s.name);
            }
            cases += 1;
        }
        control += frames;
        eprintln!(
            "{n} nodes, {}: {frames} control frames, {} port-state changes, {} log entries; lost {}, looped {}",
            s.name,
            want.ports.len(),
            want.log.len(),
            want.lost,
            want.looped
        );
    }
    (cases, control)
}

/// A control frame of a shared link's controller (ESL, docs/eaps.md §11) for link 99, from
/// `mac` with EDP sequence `seq`: a link with no end on the simulated rings (stray).
pub fn stray_esl(mac: MacAddr, seq: u16) -> Vec<u8> {
    let r = EslRepr {
        edp_sequence: seq,
        control_vlan: 10,
        system_mac: mac,
        state: EslState::Blocking,
        role: EslRole::Controller,
        link_id: 99,
        failed_link: 99,
        rb_id: 0,
    };
    esl::emit_frame(&r, mac, 7)
}
