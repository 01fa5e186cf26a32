//! EAPS (docs/eaps.md) in simulation: the ring simulators that run the reference node
//! ([`spotagg_spec::eaps::EapsNode`]) and the shared port ([`spotagg_spec::eaps::shared`]), the
//! hardware nodes behind the same calls, and the harnesses that compare them.
//!
//! - [`ring`]: N nodes on a ring of links, in virtual time; [`scenarios`] the failures it is
//!   run through; [`shared_ring`] rings with shared ports;
//! - [`EapsEngine`]: what the ring simulator needs of a node, so that a hardware node
//!   (`hdl_node` in rust-hdl, `board_node` the board's Verilog in Verilator) takes a
//!   reference node's place; [`differential`] compares such rings with all-reference rings;
//! - [`allreduce`]: an all-reduce through reference switches on a ring while it fails over.

pub mod allreduce;
#[cfg(feature = "hdl")]
pub mod board_node;
pub mod differential;
#[cfg(feature = "hdl")]
pub mod hdl_node;
pub mod ring;
pub mod scenarios;
pub mod shared_ring;

use spotagg_driver::wire::MacAddr;
use spotagg_spec::eaps::{Action, Cause, Counters, DomainConfig, EapsNode, FrameError, Nanos, Port, State};

/// What the ring simulator needs of a node: the reference [`EapsNode`], or a hardware node
/// (`hdl_node`, `board_node`) stepped behind the same calls. Every call that changes the node returns the
/// [`Action`]s to carry out, as [`EapsNode`]'s do.
pub trait EapsEngine {
    /// System MAC.
    fn mac(&self) -> MacAddr;
    /// A domain's configuration.
    fn config(&self, d: usize) -> &DomainConfig;
    /// A domain's state.
    fn state(&self, d: usize) -> State;
    /// Whether the domain's protected VLANs forward on `port`.
    fn forwarding(&self, d: usize, port: Port) -> bool;
    /// A domain's PDU counters.
    fn counters(&self, d: usize) -> Counters;
    /// Time and cause of the domain's last transition.
    fn last_transition(&self, d: usize) -> Option<(Nanos, Cause)>;
    /// Link state of a ring port as the node last acted on it.
    fn link(&self, port: Port) -> bool;
    /// The domain protecting `vlan`.
    fn domain_of_vlan(&self, vlan: u16) -> Option<usize>;
    /// Enables every domain.
    fn enable(&mut self, now: Nanos) -> Vec<Action>;
    /// The earliest time at which [`EapsEngine::handle_timeout`] has work.
    fn poll_timeout(&self) -> Option<Nanos>;
    /// Runs every timer due at `now`.
    fn handle_timeout(&mut self, now: Nanos) -> Vec<Action>;
    /// A ring port lost its link.
    fn link_down(&mut self, now: Nanos, port: Port) -> Vec<Action>;
    /// A ring port regained its link.
    fn link_up(&mut self, now: Nanos, port: Port) -> Vec<Action>;
    /// A frame received on a ring port on some domain's control VLAN.
    fn handle_frame(&mut self, now: Nanos, port: Port, frame: &[u8]) -> Result<Vec<Action>, FrameError>;
}

impl EapsEngine for EapsNode {
    fn mac(&self) -> MacAddr {
        EapsNode::mac(self)
    }
    fn config(&self, d: usize) -> &DomainConfig {
        EapsNode::config(self, d)
    }
    fn state(&self, d: usize) -> State {
        EapsNode::state(self, d)
    }
    fn forwarding(&self, d: usize, port: Port) -> bool {
        EapsNode::forwarding(self, d, port)
    }
    fn counters(&self, d: usize) -> Counters {
        EapsNode::counters(self, d)
    }
    fn last_transition(&self, d: usize) -> Option<(Nanos, Cause)> {
        EapsNode::last_transition(self, d)
    }
    fn link(&self, port: Port) -> bool {
        EapsNode::link(self, port)
    }
    fn domain_of_vlan(&self, vlan: u16) -> Option<usize> {
        EapsNode::domain_of_vlan(self, vlan)
    }
    fn enable(&mut self, now: Nanos) -> Vec<Action> {
        EapsNode::enable(self, now)
    }
    fn poll_timeout(&self) -> Option<Nanos> {
        EapsNode::poll_timeout(self)
    }
    fn handle_timeout(&mut self, now: Nanos) -> Vec<Action> {
        EapsNode::handle_timeout(self, now)
    }
    fn link_down(&mut self, now: Nanos, port: Port) -> Vec<Action> {
        EapsNode::link_down(self, now, port)
    }
    fn link_up(&mut self, now: Nanos, port: Port) -> Vec<Action> {
        EapsNode::link_up(self, now, port)
    }
    fn handle_frame(&mut self, now: Nanos, port: Port, frame: &[u8]) -> Result<Vec<Action>, FrameError> {
        EapsNode::handle_frame(self, now, port, frame)
    }
}
