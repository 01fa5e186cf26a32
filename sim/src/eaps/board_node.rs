//! The board's EAPS node as a ring node: the switch fabric (`spotagg_boards::tops::switch_fabric`,
//! the board logic below the control link: both MAC ports, their FIFOs, the router, the bridge,
//! the MAC table, the EAPS node, its VLAN gates and PDU merges, the core) in Verilator, behind
//! [`NodePins`], so that [`HdlEapsNode`] runs it in the ring simulator as it runs the bare node.
//!
//! What differs from the bare node is the way in and out. A frame the ring delivers goes into
//! the port's GMII receive side with preamble, SFD and FCS (padded to 60 bytes), one byte a
//! clock; what either port's MAC transmits is checked (preamble, SFD, FCS) and becomes a
//! [`NodeOutputs::frames`] entry, whether the node emitted it or the bridge passed a received
//! frame on (`pass` stays 0: the bridge does it). The configuration goes in as the control
//! link writes it: the domains through the EAPS registers (`spotagg_driver::control::protocol::eaps`),
//! the system MAC as the switch MAC (configuration registers 0x00/0x01), the enable last. The
//! ring's virtual time drives the fabric's `eaps_now` (1 unit = 1 ns) and is held while an
//! event runs through the MACs, as the bare node's bench holds it: the board's processing
//! takes no virtual time, so that its PDUs and transitions carry the reference's instants.
//! The adapter counts the board idle once nothing has moved for [`QUIET`] clocks. Every clock
//! of the fabric (core, transmit, both receive clocks and the EAPS node's) runs from one clock.
//!
//! The node is behind a clock crossing (`spotagg_boards::tops::eaps_node_crossing`): its status
//! words are read by request and acknowledge, so [`NodePins::status`] clocks the fabric until
//! `eaps_out.status_valid` says the word of the address is there (what those clocks bring out is
//! kept for the next edge), and the adapter reads the domains' states once an event is over
//! ([`NodePins::status_is_live`] is false).
//!
//! [`HdlEapsNode`]: super::hdl_node::HdlEapsNode

use super::hdl_node::{hw_config, NodeOutputs, NodePins};
use crate::board_model::{fabric_build_options, BoardModelError, FabricPins};
use crate::gmii;
use crate::verilator::{PortSpec, VerilatedModel};
use spotagg_driver::control::protocol::eaps;
use spotagg_driver::control::protocol::reg;
use spotagg_spec::eaps::{DomainConfig, Port};
use std::collections::VecDeque;

/// Clocks without a byte received or sent, a register write, or the node busy, after which
/// the board counts as idle: longer than a frame takes from the receive MAC to the node.
pub const QUIET: usize = 300;

/// Clocks of inter-frame gap after each frame fed in.
const GAP: usize = 12;

/// A write the adapter has still to make: to the EAPS registers or the configuration bus.
#[derive(Debug, Clone, Copy)]
enum Write {
    Eaps(u8, u32),
    Cfg(u8, u32),
}

struct Pins {
    fabric: FabricPins,
    cfg: [u32; 3],
    eaps: [u32; 3],
    status: [u32; 2],
    link_up: u32,
    now: u32,
    forwarding: u32,
    flush: u32,
    alert: [u32; 4],
    idle: u32,
    status_valid: u32,
}

/// [`NodePins`] over a Verilator model of the switch fabric ([`module docs`](self)).
pub struct BoardNodePins {
    m: VerilatedModel,
    p: Pins,
    writes: VecDeque<Write>,
    /// The frame being handed in by [`NodePins::set_rx`], per port.
    incoming: [Vec<u8>; 2],
    /// GMII bytes to feed, per port (`None`: a gap clock).
    feed: [VecDeque<Option<u8>>; 2],
    /// What each port's MAC is sending.
    sending: [Vec<u8>; 2],
    quiet: usize,
    /// What the clocks of status reads brought out, for the next edge.
    carry: NodeOutputs,
    /// Frames a port sent with a bad preamble or FCS (0 for a correct MAC).
    pub bad_frames: u64,
    /// Clocks run.
    pub cycles: u64,
}

impl BoardNodePins {
    /// Builds (or takes from the cache) the Verilator model of a switch fabric's Verilog
    /// (with the EAPS node built in, `hdl_node::DOMAINS` domains, none configured at power-up) and
    /// runs it until its power-up job is loaded.
    pub fn build(verilog: &str, ports: &[PortSpec]) -> Result<BoardNodePins, BoardModelError> {
        let mut m = VerilatedModel::build(verilog, ports, &fabric_build_options())?;
        let id = |n: &str| m.port(n);
        let p = Pins {
            fabric: FabricPins::of(&m),
            cfg: [id("cfg_write"), id("cfg_address"), id("cfg_data")],
            eaps: [id("eaps$write"), id("eaps$address"), id("eaps$data")],
            status: [id("eaps$status_address"), id("eaps$status_data")],
            link_up: id("eaps_link_up"),
            now: id("eaps_now"),
            forwarding: id("eaps_out$forwarding"),
            flush: id("eaps_out$flush"),
            alert: [
                id("eaps_out$alert"),
                id("eaps_out$alert_second_master"),
                id("eaps_out$alert_domain"),
                id("eaps_out$alert_mac"),
            ],
            idle: id("eaps_out$idle"),
            status_valid: id("eaps_out$status_valid"),
        };
        m.set(p.fabric.start, 1);
        m.eval();
        let mut b = BoardNodePins {
            m,
            p,
            writes: VecDeque::new(),
            incoming: Default::default(),
            feed: Default::default(),
            sending: Default::default(),
            quiet: 0,
            carry: NodeOutputs::default(),
            bad_frames: 0,
            cycles: 0,
        };
        while b.m.get(b.p.fabric.configured) == 0 || b.m.get(b.p.fabric.core_idle) == 0 {
            b.step();
            if b.cycles > 100_000 {
                return Err(BoardModelError::NotConfigured(b.cycles));
            }
        }
        Ok(b)
    }

    /// Hands a whole frame (without FCS) to port `port`'s receive side, behind any frame still
    /// being fed there.
    pub fn feed(&mut self, port: Port, frame: &[u8]) {
        let wire = gmii::wrap(&gmii::padded(frame));
        self.feed[port].extend(wire.into_iter().map(Some).chain(std::iter::repeat_n(None, GAP)));
    }

    /// Writes `writes` to the fabric's configuration registers (`config_loader`'s: the job's),
    /// one a clock, as the control link makes them, and runs until the core is idle again: how a
    /// fabric built with `spotagg_boards::tops::switch_fabric::placeholder_job` takes its job.
    pub fn configure(&mut self, writes: &[(u8, u32)]) -> Result<(), BoardModelError> {
        self.writes.extend(writes.iter().map(|&(a, v)| Write::Cfg(a, v)));
        // The writes, then a few clocks for the last to reach the core (the fabric registers its
        // configuration inputs) before its idle is read.
        while !self.writes.is_empty() {
            self.step();
        }
        for _ in 0..8 {
            self.step();
        }
        let start = self.cycles;
        while self.m.get(self.p.fabric.core_idle) == 0 {
            self.step();
            if self.cycles - start > 100_000 {
                return Err(BoardModelError::NotConfigured(self.cycles));
            }
        }
        Ok(())
    }

    /// A write to the EAPS configuration registers (`offset` in 0x0700..: `16·d + r`, 0xF0 the
    /// enable), made at the next clock, as the control link makes it.
    pub fn write_eaps(&mut self, offset: u8, value: u32) {
        self.writes.push_back(Write::Eaps(offset, value));
    }

    /// Runs at least `min` clocks, then until the board is idle (at most `max` clocks in all):
    /// the frames the ports sent, in order.
    pub fn run(&mut self, min: usize, max: usize) -> Vec<(Port, Vec<u8>)> {
        let mut out = Vec::new();
        for i in 0..max {
            let o = self.edge();
            out.extend(o.frames);
            if i + 1 >= min && o.idle {
                break;
            }
        }
        out
    }
}

impl NodePins for BoardNodePins {
    fn set_domain(&mut self, d: usize, cfg: Option<&DomainConfig>) {
        let s = cfg.map(hw_config);
        let mut slots = vec![None; d + 1];
        slots[d] = s;
        // One domain's words (the enable writes that `writes` puts around them are left out:
        // `set_enable` makes them).
        for (a, v) in eaps::writes(&slots, false) {
            let off = a - reg::EAPS_CONFIG;
            if off >= eaps::DOMAIN_STRIDE * d as u16 && off < eaps::DOMAIN_STRIDE * (d as u16 + 1) {
                self.writes.push_back(Write::Eaps(off as u8, v));
            }
        }
    }
    fn set_mac(&mut self, mac: u64) {
        self.writes.push_back(Write::Cfg(0, (mac >> 32) as u32 & 0xffff));
        self.writes.push_back(Write::Cfg(1, mac as u32));
    }
    // A new time or link state starts an event: the board counts as busy from it on (its
    // `idle` reaches the pins a few clocks after the node sees the change).
    fn set_now(&mut self, now: u32) {
        self.m.set(self.p.now, u64::from(now));
        self.quiet = 0;
    }
    fn set_links(&mut self, links: [bool; 2]) {
        self.m.set(self.p.link_up, u64::from(links[0]) | (u64::from(links[1]) << 1));
        self.quiet = 0;
    }
    fn set_enable(&mut self, on: bool) {
        self.writes.push_back(Write::Eaps(eaps::ENABLE as u8, u32::from(on)));
    }
    fn set_rx(&mut self, port: Port, valid: bool, data: u8, last: bool) {
        if !valid {
            return;
        }
        self.incoming[port].push(data);
        if last {
            let frame = std::mem::take(&mut self.incoming[port]);
            self.feed(port, &frame);
        }
    }
    fn edge(&mut self) -> NodeOutputs {
        let mut o = self.step();
        let carry = std::mem::take(&mut self.carry);
        let mut frames = carry.frames;
        frames.append(&mut o.frames);
        o.frames = frames;
        o.flush |= carry.flush;
        assert!(carry.alert.is_none() || o.alert.is_none(), "two alerts at one edge (one during a status read)");
        o.alert = o.alert.or(carry.alert);
        o
    }
    fn status(&mut self, address: u8) -> u32 {
        self.m.set(self.p.status[0], u64::from(address));
        self.m.eval();
        for _ in 0..1000 {
            if self.m.get(self.p.status_valid) != 0 {
                return self.m.get(self.p.status[1]) as u32;
            }
            let o = self.step();
            self.carry.frames.extend(o.frames);
            self.carry.flush |= o.flush;
            assert!(self.carry.alert.is_none() || o.alert.is_none(), "two alerts during status reads");
            self.carry.alert = self.carry.alert.or(o.alert);
        }
        panic!("status word {address:#x}: no answer from the EAPS node's clock in 1000 clocks");
    }
    fn status_is_live(&self) -> bool {
        false
    }
}

impl BoardNodePins {
    /// One edge of every clock with the next byte of each port's feed and the next write; what
    /// the ports sent and the node's pins after it.
    fn step(&mut self) -> NodeOutputs {
        let [cw, ca, cd] = self.p.cfg;
        let [ew, ea, ed] = self.p.eaps;
        self.m.set(cw, 0);
        self.m.set(ew, 0);
        let mut busy = false;
        if let Some(w) = self.writes.pop_front() {
            busy = true;
            let (pins, a, v) = match w {
                Write::Eaps(a, v) => ([ew, ea, ed], a, v),
                Write::Cfg(a, v) => ([cw, ca, cd], a, v),
            };
            self.m.set(pins[0], 1);
            self.m.set(pins[1], u64::from(a));
            self.m.set(pins[2], u64::from(v));
        }
        for port in 0..2 {
            let b = self.feed[port].pop_front();
            busy |= b.is_some();
            let byte = b.flatten();
            self.m.set(self.p.fabric.rx_dv[port], u64::from(byte.is_some()));
            self.m.set(self.p.fabric.rxd[port], u64::from(byte.unwrap_or(0)));
            self.m.set(self.p.fabric.rx_er[port], 0);
        }
        self.m.eval();
        let mut frames = Vec::new();
        for port in 0..2 {
            if self.m.get(self.p.fabric.tx_en[port]) != 0 {
                busy = true;
                self.sending[port].push(self.m.get(self.p.fabric.txd[port]) as u8);
            } else if !self.sending[port].is_empty() {
                let w = std::mem::take(&mut self.sending[port]);
                match gmii::unwrap(&w) {
                    Ok(f) => frames.push((port, f.to_vec())),
                    Err(_) => self.bad_frames += 1,
                }
            }
        }
        let g = |m: &VerilatedModel, id: u32| m.get(id);
        let [a, sm, dom, mac] = self.p.alert;
        let alert = (g(&self.m, a) != 0).then(|| (g(&self.m, sm) != 0, g(&self.m, dom) as usize, g(&self.m, mac)));
        let forwarding = g(&self.m, self.p.forwarding) as u32;
        let flush = g(&self.m, self.p.flush) as u16;
        busy |= g(&self.m, self.p.idle) == 0 || !frames.is_empty();
        self.p.fabric.edge(&mut self.m);
        self.cycles += 1;
        self.quiet = if busy { 0 } else { self.quiet + 1 };
        let idle = self.quiet >= QUIET
            && self.writes.is_empty()
            && self.feed.iter().all(VecDeque::is_empty)
            && self.sending.iter().all(Vec::is_empty);
        NodeOutputs { tx: Default::default(), frames, forwarding, flush, alert, pass: 0, idle }
    }
}
