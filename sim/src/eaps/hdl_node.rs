//! The hardware EAPS node (`spotagg_hdl::eaps_node::EapsNode`) behind [`EapsEngine`], so that
//! the ring simulator runs it beside reference nodes and the differential tests compare the two
//! frame for frame.
//!
//! The ring's virtual time drives the node's `now` input directly (1 unit = 1 ns). Each call
//! sets `now`, presents its event (a frame byte by byte, a change of `link_up`, the rising edge
//! of `enable`) and clocks the node until it is idle, with `now` held: the node's processing
//! takes no virtual time, as the reference's does not, so both see every event at the same
//! instant. What the node does on the way is read from its pins and turned into [`Action`]s:
//! its transmit streams (frames), `pass` (the frame just received, sent unchanged out of the
//! other port, as the board's bridge would), `forwarding` (port states), `flush`, `alert`, and
//! the status words (state, cause, timers). [`NodePins`] is that pin access; [`RustHdlPins`] implements it
//! over rust-hdl's simulation, [`VerilatorPins`] over a Verilator model of the block's
//! generated Verilog.

use super::EapsEngine;
use spotagg_driver::control::protocol::eaps::DomainSettings;
use spotagg_driver::wire::MacAddr;
use spotagg_hdl::eaps_node::EapsNode as HdlNode;
use spotagg_hdl::rust_hdl::prelude::*;
use spotagg_spec::eaps::{
    Action, Alert, Cause, Counters, DomainConfig, FailAction, FrameError, Nanos, Port, Role, State,
};

/// Domains of the simulated node (the board's default build).
pub const DOMAINS: usize = 2;

/// Clocks a node may take for one event before the adapter gives up (a hung sequencer).
const MAX_CYCLES: usize = 100_000;

/// The outputs of the node after a rising edge.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NodeOutputs {
    /// Transmit streams: (valid, data, last) per port.
    pub tx: [(bool, u8, bool); 2],
    /// Whole frames that left a port at this edge (where the pins see frames rather than a
    /// byte stream: the board's MACs, [`super::board_node::BoardNodePins`]).
    pub frames: Vec<(Port, Vec<u8>)>,
    /// Forwarding bits (2d + p).
    pub forwarding: u32,
    /// Flush bits (d).
    pub flush: u16,
    /// Alert pulse, second master (else fail timer), domain, MAC.
    pub alert: Option<(bool, usize, u64)>,
    /// Pass bits (p: the frame that last ended on port p goes out of the other port).
    pub pass: u8,
    /// Idle.
    pub idle: bool,
}

/// Pin-level access to a hardware EAPS node with [`DOMAINS`] domains.
pub trait NodePins {
    /// Sets the configuration of domain `d` (and whether it exists).
    fn set_domain(&mut self, d: usize, cfg: Option<&DomainConfig>);
    /// Sets the system MAC.
    fn set_mac(&mut self, mac: u64);
    /// Sets `now`.
    fn set_now(&mut self, now: u32);
    /// Sets `link_up`.
    fn set_links(&mut self, links: [bool; 2]);
    /// Sets `enable`.
    fn set_enable(&mut self, on: bool);
    /// Sets port `port`'s receive stream for the next edge.
    fn set_rx(&mut self, port: Port, valid: bool, data: u8, last: bool);
    /// One rising edge; the outputs after it.
    fn edge(&mut self) -> NodeOutputs;
    /// Reads a status word.
    fn status(&mut self, address: u8) -> u32;
    /// Whether a status word can be read at any edge without clocking (the bare node's status
    /// port is combinational). Where a read takes clocks (the board, whose node is behind a
    /// clock crossing), the adapter reads the domains' states once each event is over rather
    /// than at every edge.
    fn status_is_live(&self) -> bool {
        true
    }
}

/// [`NodePins`] over rust-hdl's simulation of the block.
pub struct RustHdlPins {
    uut: Box<HdlNode<DOMAINS>>,
}

impl Default for RustHdlPins {
    fn default() -> Self {
        Self::new()
    }
}

impl RustHdlPins {
    /// A node, all inputs low.
    pub fn new() -> RustHdlPins {
        let mut uut = Box::<HdlNode<DOMAINS>>::default();
        uut.connect_all();
        uut.clock.next = false.into();
        uut.tx0.ready.next = true;
        uut.tx1.ready.next = true;
        let mut p = RustHdlPins { uut };
        p.settle();
        p
    }
    fn settle(&mut self) {
        assert!(simulate(&mut *self.uut, 10_000), "the EAPS node did not settle");
    }
}

impl NodePins for RustHdlPins {
    fn set_domain(&mut self, d: usize, cfg: Option<&DomainConfig>) {
        let c = &mut self.uut.cfg[d];
        c.active.next = cfg.is_some();
        if let Some(cfg) = cfg {
            let f = hw_config(cfg);
            c.master.next = f.master;
            c.primary.next = f.primary_port1;
            c.send_alert.next = f.send_alert;
            c.control_vlan.next = u64::from(f.control_vlan).into();
            c.protected_lo.next = u64::from(f.protected.0).into();
            c.protected_hi.next = u64::from(f.protected.1).into();
            c.hello.next = u64::from(f.hello).into();
            c.fail.next = u64::from(f.fail).into();
            c.pre_forwarding.next = u64::from(f.pre_forwarding).into();
            c.hello_field.next = u64::from(f.hello_field).into();
            c.fail_field.next = u64::from(f.fail_field).into();
        }
    }
    fn set_mac(&mut self, mac: u64) {
        self.uut.system_mac.next = mac.into();
    }
    fn set_now(&mut self, now: u32) {
        self.uut.now.next = u64::from(now).into();
    }
    fn set_links(&mut self, links: [bool; 2]) {
        self.uut.link_up.next = (u64::from(links[0]) | (u64::from(links[1]) << 1)).into();
    }
    fn set_enable(&mut self, on: bool) {
        self.uut.enable.next = on;
    }
    fn set_rx(&mut self, port: Port, valid: bool, data: u8, last: bool) {
        let rx = if port == 0 { &mut self.uut.rx0 } else { &mut self.uut.rx1 };
        rx.valid.next = valid;
        rx.data.next = u64::from(data).into();
        rx.last.next = last;
    }
    fn edge(&mut self) -> NodeOutputs {
        self.settle();
        self.uut.clock.next = true.into();
        self.settle();
        self.uut.clock.next = false.into();
        self.settle();
        let u = &self.uut;
        NodeOutputs {
            tx: [
                (u.tx0.valid.val(), u.tx0.data.val().to_u8(), u.tx0.last.val()),
                (u.tx1.valid.val(), u.tx1.data.val().to_u8(), u.tx1.last.val()),
            ],
            forwarding: u.forwarding.val().to_u32(),
            flush: u.flush.val().to_u32() as u16,
            alert: u
                .alert
                .val()
                .then(|| (u.alert_second_master.val(), u.alert_domain.val().index(), u.alert_mac.val().to_u64())),
            pass: u.pass.val().to_u8(),
            idle: u.idle.val(),
            frames: Vec::new(),
        }
    }
    fn status(&mut self, address: u8) -> u32 {
        self.uut.status_address.next = u64::from(address).into();
        self.settle();
        self.uut.status_data.val().to_u32()
    }
}

/// The hardware form of a reference domain configuration (what the control link writes,
/// periods in the node's time unit, here ns). Panics where the hardware cannot hold it:
/// protected VLANs that are not one contiguous range, a period of 2^31 ns or more.
pub fn hw_config(c: &DomainConfig) -> DomainSettings {
    let lo = c.protected.iter().copied().min().unwrap_or(1);
    let hi = c.protected.iter().copied().max().unwrap_or(0);
    assert!(
        c.protected.is_empty() || usize::from(hi - lo) + 1 == c.protected.len(),
        "protected VLANs {:?}: the hardware node takes one contiguous range",
        c.protected
    );
    let period = |n: Nanos, what: &str| {
        assert!(n < 1 << 31, "{what} period {n} ns: the hardware's timers take < 2^31 units");
        n as u32
    };
    let ms = |n: Nanos| (n / 1_000_000).min(u64::from(u16::MAX)) as u16;
    DomainSettings {
        master: c.role == Role::Master,
        primary_port1: c.primary == 1,
        send_alert: c.fail_action == FailAction::SendAlert,
        control_vlan: c.control_vlan,
        protected: (lo, hi),
        hello: period(c.hello, "hello"),
        fail: period(c.fail, "fail"),
        pre_forwarding: period(c.pre_forwarding, "pre-forwarding"),
        hello_field: ms(c.hello),
        fail_field: ms(c.fail),
    }
}

fn state_of(code: u32) -> State {
    match code {
        0 => State::Idle,
        1 => State::Init,
        2 => State::Complete,
        3 => State::Failed,
        4 => State::LinksUp,
        5 => State::LinksDown,
        6 => State::PreForwarding,
        c => panic!("hardware EAPS state code {c}"),
    }
}

fn cause_of(code: u32) -> Cause {
    use spotagg_hdl::eaps_node::cause as c;
    match code {
        c::ENABLED => Cause::Enabled,
        c::HEALTH_RETURNED => Cause::HealthReturned,
        c::LINK_DOWN_PDU => Cause::LinkDownPdu,
        c::LOCAL_LINK_DOWN0 => Cause::LocalLinkDown(0),
        c::LOCAL_LINK_DOWN1 => Cause::LocalLinkDown(1),
        c::LOCAL_LINK_UP0 => Cause::LocalLinkUp(0),
        c::LOCAL_LINK_UP1 => Cause::LocalLinkUp(1),
        c::FAIL_TIMER => Cause::FailTimer,
        c::RING_UP_FLUSH => Cause::RingUpFlush,
        c::HEALTH_COMPLETE => Cause::HealthComplete,
        c => panic!("hardware EAPS cause code {c}"),
    }
}

#[derive(Debug, Clone, Copy, Default)]
struct DomainView {
    state: Option<State>,
    forwarding: [bool; 2],
    counters: Counters,
    last: Option<(Nanos, Cause)>,
    deadline: Option<Nanos>,
}

/// A hardware EAPS node behind [`EapsEngine`].
pub struct HdlEapsNode<P: NodePins = RustHdlPins> {
    pins: P,
    mac: MacAddr,
    cfgs: Vec<DomainConfig>,
    link: [bool; 2],
    now: Nanos,
    view: Vec<DomainView>,
    tx: [Vec<u8>; 2],
    /// The frame last received on each port: what the board's bridge holds for `pass`.
    rx: [Vec<u8>; 2],
    /// Clocks run so far.
    pub cycles: u64,
}

impl HdlEapsNode<RustHdlPins> {
    /// The node in rust-hdl's simulation.
    pub fn new(mac: MacAddr, domains: Vec<DomainConfig>, link_up: [bool; 2]) -> Self {
        HdlEapsNode::with_pins(RustHdlPins::new(), mac, domains, link_up)
    }
}

impl<P: NodePins> HdlEapsNode<P> {
    /// The node behind `pins`, configured with `domains` (at most [`DOMAINS`]).
    pub fn with_pins(mut pins: P, mac: MacAddr, domains: Vec<DomainConfig>, link_up: [bool; 2]) -> Self {
        assert!(domains.len() <= DOMAINS, "{} domains: the hardware node has {DOMAINS}", domains.len());
        for d in 0..DOMAINS {
            pins.set_domain(d, domains.get(d));
        }
        pins.set_mac(mac.to_u64());
        pins.set_links(link_up);
        pins.set_now(0);
        let view = vec![
            DomainView { state: Some(State::Idle), forwarding: [true, true], ..Default::default() };
            domains.len()
        ];
        let mut n = HdlEapsNode {
            pins,
            mac,
            cfgs: domains,
            link: link_up,
            now: 0,
            view,
            tx: Default::default(),
            rx: Default::default(),
            cycles: 0,
        };
        // Let the link inputs register before anything happens.
        let mut out = Vec::new();
        n.run(&mut out);
        n.refresh(&mut out);
        n
    }

    fn run(&mut self, out: &mut Vec<Action>) {
        for _ in 0..MAX_CYCLES {
            let o = self.pins.edge();
            self.cycles += 1;
            self.collect(&o, out);
            if o.idle && self.tx.iter().all(Vec::is_empty) {
                if !self.pins.status_is_live() {
                    self.transitions(out);
                }
                return;
            }
        }
        panic!("the hardware EAPS node did not go idle within {MAX_CYCLES} clocks");
    }

    fn collect(&mut self, o: &NodeOutputs, out: &mut Vec<Action>) {
        for (p, &(valid, data, last)) in o.tx.iter().enumerate() {
            if valid {
                self.tx[p].push(data);
                if last {
                    out.push(Action::Send { port: p, frame: std::mem::take(&mut self.tx[p]) });
                }
            }
        }
        for (port, frame) in &o.frames {
            out.push(Action::Send { port: *port, frame: frame.clone() });
        }
        // Another EDP frame passed on: the bridge sends the received bytes out of the other port.
        for p in 0..2 {
            if o.pass & (1 << p) != 0 {
                out.push(Action::Send { port: 1 - p, frame: self.rx[p].clone() });
            }
        }
        for d in 0..self.cfgs.len() {
            if o.flush & (1 << d) != 0 {
                out.push(Action::FlushFdb { domain: d });
            }
        }
        if let Some((second, d, mac)) = o.alert {
            let alert = if second {
                let b = mac.to_be_bytes();
                Alert::SecondMaster(MacAddr::from_bytes(&b[2..8]))
            } else {
                Alert::FailTimerExpired
            };
            out.push(Action::Alert { domain: d, alert });
        }
        for d in 0..self.cfgs.len() {
            for p in 0..2 {
                let f = o.forwarding & (1 << (2 * d + p)) != 0;
                if f != self.view[d].forwarding[p] {
                    self.view[d].forwarding[p] = f;
                    out.push(Action::PortState { domain: d, port: p, forwarding: f });
                }
            }
        }
        if self.pins.status_is_live() {
            self.transitions(out);
        }
    }

    /// The domains' transitions since the last look, from their state and cause words.
    fn transitions(&mut self, out: &mut Vec<Action>) {
        for d in 0..self.cfgs.len() {
            let code = self.pins.status((16 * d) as u8) & 0xf;
            let to = state_of(code);
            let from = self.view[d].state.unwrap_or(State::Idle);
            if to != from {
                let cause = cause_of(self.pins.status((16 * d + 6) as u8));
                self.view[d].state = Some(to);
                self.view[d].last = Some((self.now, cause));
                out.push(Action::Transition { domain: d, from, to, cause });
            }
        }
    }

    /// Reads the counters and the next deadline.
    fn refresh(&mut self, _out: &mut [Action]) {
        let now32 = self.now as u32;
        for d in 0..self.cfgs.len() {
            let s = |n: &mut Self, r: usize| n.pins.status((16 * d + r) as u8);
            let c = Counters {
                tx: u64::from(s(self, 1)),
                rx: u64::from(s(self, 2)),
                forwarded: u64::from(s(self, 3)),
                dropped: u64::from(s(self, 4)),
                malformed: {
                    let (w14, w15) = (s(self, 14), s(self, 15));
                    [w14 & 0xffff, w14 >> 16, w15 & 0xffff, w15 >> 16].map(u64::from)
                },
            };
            let armed = s(self, 11);
            let mut deadline: Option<Nanos> = None;
            for (bit, reg) in [(0, 7), (1, 8), (2, 9), (3, 10)] {
                if armed & (1 << bit) != 0 {
                    let at = s(self, reg);
                    let ahead = at.wrapping_sub(now32) as i32;
                    let t = (self.now as i64 + i64::from(ahead)).max(0) as Nanos;
                    deadline = Some(deadline.map_or(t, |x| x.min(t)));
                }
            }
            self.view[d].counters = c;
            self.view[d].deadline = deadline;
        }
    }

    fn at(&mut self, now: Nanos) {
        self.now = now;
        self.pins.set_now(now as u32);
    }

    fn finish(&mut self, mut out: Vec<Action>) -> Vec<Action> {
        self.run(&mut out);
        self.refresh(&mut out);
        out
    }

    /// A status word of the node (docs in `spotagg_hdl::eaps_node`).
    pub fn status(&mut self, address: u8) -> u32 {
        self.pins.status(address)
    }
}

impl<P: NodePins> EapsEngine for HdlEapsNode<P> {
    fn mac(&self) -> MacAddr {
        self.mac
    }
    fn config(&self, d: usize) -> &DomainConfig {
        &self.cfgs[d]
    }
    fn state(&self, d: usize) -> State {
        self.view[d].state.unwrap_or(State::Idle)
    }
    fn forwarding(&self, d: usize, port: Port) -> bool {
        self.view[d].forwarding[port]
    }
    fn counters(&self, d: usize) -> Counters {
        self.view[d].counters
    }
    fn last_transition(&self, d: usize) -> Option<(Nanos, Cause)> {
        self.view[d].last
    }
    fn link(&self, port: Port) -> bool {
        self.link[port]
    }
    fn domain_of_vlan(&self, vlan: u16) -> Option<usize> {
        self.cfgs.iter().position(|d| d.protected.contains(&vlan))
    }
    fn enable(&mut self, now: Nanos) -> Vec<Action> {
        self.at(now);
        self.pins.set_enable(true);
        self.finish(Vec::new())
    }
    fn poll_timeout(&self) -> Option<Nanos> {
        self.view.iter().filter_map(|v| v.deadline).min()
    }
    fn handle_timeout(&mut self, now: Nanos) -> Vec<Action> {
        self.at(now);
        self.finish(Vec::new())
    }
    fn link_down(&mut self, now: Nanos, port: Port) -> Vec<Action> {
        if !self.link[port] {
            return Vec::new();
        }
        self.link[port] = false;
        self.at(now);
        self.pins.set_links(self.link);
        self.finish(Vec::new())
    }
    fn link_up(&mut self, now: Nanos, port: Port) -> Vec<Action> {
        if self.link[port] {
            return Vec::new();
        }
        self.link[port] = true;
        self.at(now);
        self.pins.set_links(self.link);
        self.finish(Vec::new())
    }
    fn handle_frame(&mut self, now: Nanos, port: Port, frame: &[u8]) -> Result<Vec<Action>, FrameError> {
        self.at(now);
        self.rx[port] = frame.to_vec();
        let mut out = Vec::new();
        for (i, &b) in frame.iter().enumerate() {
            self.pins.set_rx(port, true, b, i + 1 == frame.len());
            let o = self.pins.edge();
            self.cycles += 1;
            self.collect(&o, &mut out);
        }
        self.pins.set_rx(port, false, 0, false);
        Ok(self.finish(out))
    }
}

/// [`NodePins`] over a Verilator model of the block's generated Verilog (the same Verilog
/// Yosys maps for the board).
pub struct VerilatorPins {
    m: crate::verilator::VerilatedModel,
    pins: VPins,
}

struct VPins {
    clock: u32,
    now: u32,
    system_mac: u32,
    enable: u32,
    link_up: u32,
    cfg: Vec<[u32; 11]>,
    rx: [[u32; 3]; 2],
    tx: [[u32; 3]; 2],
    forwarding: u32,
    flush: u32,
    alert: [u32; 4],
    pass: u32,
    idle: u32,
    status_address: u32,
    status_data: u32,
}

impl VerilatorPins {
    /// Builds (or takes from the cache) the Verilator model of the [`DOMAINS`]-domain node.
    pub fn new() -> Result<VerilatorPins, crate::verilator::VerilatorError> {
        use crate::verilator::{ports_of, BuildOptions, VerilatedModel};
        let mut block = HdlNode::<DOMAINS>::default();
        block.connect_all();
        let verilog = generate_verilog(&block);
        let ports = ports_of(&block);
        let opts = BuildOptions {
            trace: false,
            config: Some(crate::verilator_engine::WAIVERS.to_string()),
            extra_args: vec!["-Wno-fatal".into()],
        };
        let m = VerilatedModel::build(&verilog, &ports, &opts)?;
        let id = |n: &str| m.port(n);
        let cfg = (0..DOMAINS)
            .map(|d| {
                let f = |n: &str| id(&format!("cfg${d}${n}"));
                [
                    f("active"),
                    f("master"),
                    f("primary"),
                    f("send_alert"),
                    f("control_vlan"),
                    f("protected_lo"),
                    f("protected_hi"),
                    f("hello"),
                    f("fail"),
                    f("pre_forwarding"),
                    f("hello_field"),
                ]
            })
            .collect();
        let pins = VPins {
            clock: id("clock"),
            now: id("now"),
            system_mac: id("system_mac"),
            enable: id("enable"),
            link_up: id("link_up"),
            cfg,
            rx: [0, 1].map(|p| [id(&format!("rx{p}$valid")), id(&format!("rx{p}$data")), id(&format!("rx{p}$last"))]),
            tx: [0, 1].map(|p| [id(&format!("tx{p}$valid")), id(&format!("tx{p}$data")), id(&format!("tx{p}$last"))]),
            forwarding: id("forwarding"),
            flush: id("flush"),
            alert: [id("alert"), id("alert_second_master"), id("alert_domain"), id("alert_mac")],
            pass: id("pass"),
            idle: id("idle"),
            status_address: id("status_address"),
            status_data: id("status_data"),
        };
        let mut v = VerilatorPins { m, pins };
        let (r0, r1) = (v.m.port("tx0$ready"), v.m.port("tx1$ready"));
        v.m.set(r0, 1);
        v.m.set(r1, 1);
        v.m.eval();
        Ok(v)
    }
}

impl NodePins for VerilatorPins {
    fn set_domain(&mut self, d: usize, cfg: Option<&DomainConfig>) {
        let p = self.pins.cfg[d];
        self.m.set(p[0], u64::from(cfg.is_some()));
        if let Some(cfg) = cfg {
            let f = hw_config(cfg);
            let fail_field = self.m.port(&format!("cfg${d}$fail_field"));
            for (pin, v) in p.iter().skip(1).zip([
                u64::from(f.master),
                u64::from(f.primary_port1),
                u64::from(f.send_alert),
                u64::from(f.control_vlan),
                u64::from(f.protected.0),
                u64::from(f.protected.1),
                u64::from(f.hello),
                u64::from(f.fail),
                u64::from(f.pre_forwarding),
                u64::from(f.hello_field),
            ]) {
                self.m.set(*pin, v);
            }
            self.m.set(fail_field, u64::from(f.fail_field));
        }
    }
    fn set_mac(&mut self, mac: u64) {
        self.m.set(self.pins.system_mac, mac);
    }
    fn set_now(&mut self, now: u32) {
        self.m.set(self.pins.now, u64::from(now));
    }
    fn set_links(&mut self, links: [bool; 2]) {
        self.m.set(self.pins.link_up, u64::from(links[0]) | (u64::from(links[1]) << 1));
    }
    fn set_enable(&mut self, on: bool) {
        self.m.set(self.pins.enable, u64::from(on));
    }
    fn set_rx(&mut self, port: Port, valid: bool, data: u8, last: bool) {
        let [v, d, l] = self.pins.rx[port];
        self.m.set(v, u64::from(valid));
        self.m.set(d, u64::from(data));
        self.m.set(l, u64::from(last));
    }
    fn edge(&mut self) -> NodeOutputs {
        self.m.eval();
        self.m.tick(self.pins.clock);
        let g = |m: &crate::verilator::VerilatedModel, id: u32| m.get(id);
        let tx = self.pins.tx.map(|[v, d, l]| (g(&self.m, v) != 0, g(&self.m, d) as u8, g(&self.m, l) != 0));
        let [a, sm, dom, mac] = self.pins.alert;
        NodeOutputs {
            tx,
            forwarding: g(&self.m, self.pins.forwarding) as u32,
            flush: g(&self.m, self.pins.flush) as u16,
            alert: (g(&self.m, a) != 0).then(|| (g(&self.m, sm) != 0, g(&self.m, dom) as usize, g(&self.m, mac))),
            pass: g(&self.m, self.pins.pass) as u8,
            idle: g(&self.m, self.pins.idle) != 0,
            frames: Vec::new(),
        }
    }
    fn status(&mut self, address: u8) -> u32 {
        self.m.set(self.pins.status_address, u64::from(address));
        self.m.eval();
        self.m.get(self.pins.status_data) as u32
    }
}

impl HdlEapsNode<VerilatorPins> {
    /// The node in Verilator.
    pub fn verilated(
        mac: MacAddr,
        domains: Vec<DomainConfig>,
        link_up: [bool; 2],
    ) -> Result<Self, crate::verilator::VerilatorError> {
        Ok(HdlEapsNode::with_pins(VerilatorPins::new()?, mac, domains, link_up))
    }
}
