//! The switch engine seen from the host: Ethernet frames in, Ethernet frames out.
//!
//! The reference switch, the rust-hdl simulation and the Verilator model all implement
//! [`Engine`]; the in-process transport drives any of them.

use crate::counters::Counters;

/// A switch that takes one Ethernet frame (no preamble, no FCS) at a time and returns the
/// frames it emits because of it, in order. No I/O, no clock of its own.
pub trait Engine: Send {
    /// Feeds one frame; appends every frame the switch emits to `out`, in order.
    fn process(&mut self, frame: &[u8], out: &mut Vec<Vec<u8>>);
    /// The counters so far.
    fn counters(&self) -> Counters;
    /// A short name for reports ("model", "rtl", "verilator").
    fn name(&self) -> &'static str;
    /// The epoch of the open session (docs/switch.md §2.1), `None` before the first session
    /// or for an engine that does not report it.
    fn session_epoch(&self) -> Option<u8> {
        None
    }
    /// The MAC of the worker (or parent switch) at `ip`, for an engine whose jobs change while
    /// it runs (a switch with a controller, docs/controller.md): the software switch frames a
    /// datagram from an address its own job does not list with it. `None` by default.
    fn peer_mac(&self, _ip: crate::wire::Ipv4Addr) -> Option<crate::wire::MacAddr> {
        None
    }
    /// Clock cycles simulated so far, for an engine that simulates hardware.
    fn cycles(&self) -> Option<u64> {
        None
    }
    /// The time of the frames fed next, µs from any origin, for an engine that keeps
    /// time-stamped counters (the reference switch's straggler counters); others ignore it.
    fn set_clock(&mut self, _now_us: u64) {}
    /// The engine's metrics for Prometheus ([`crate::metrics`]): the counters, and whatever
    /// else the engine keeps (the reference switch: tree and straggler counters).
    fn metrics(&self) -> Vec<crate::metrics::Family> {
        crate::metrics::counter_families(&self.counters(), &[])
    }
}
