//! spotagg's executable specifications: plain Rust, frame in and frames (or actions) out, no
//! I/O and no clock of their own. Each is the reference implementation of a specification page:
//!
//! - [`reference`](mod@reference): the reference switch, the executable specification of docs/switch.md
//!   (classification of a received frame, the slot algorithm, the frames the switch sends);
//! - [`multi_job`]: several jobs on one switch (docs/switch.md §8): which job a frame is for
//!   ([`multi_job::route`]) and one reference switch per job;
//! - [`eaps`]: the reference EAPS node (RFC 3619) and the shared port ([`eaps::shared`]), the
//!   executable specification of docs/eaps.md.
//!
//! The wire format they read and write is `spotagg_driver::wire`'s (frame offsets in
//! `spotagg_driver::wire::layout`); this crate sits between the driver and the HDL and never
//! depends on rust-hdl.
//!
//! Production code runs on them: the software switch's server ([`udp_switch`], with its metrics
//! endpoint [`metrics_http`]) behind `spotagg switch` and the Python package, and the EAPS
//! daemon (`spotagg eaps`), which only does the I/O of the node's decisions. Every other
//! implementation (the rust-hdl blocks and core, the Verilator model, the board) is tested
//! against these on the same seeded inputs: the HDL blocks' unit tests directly, the rest
//! through the harnesses, traces and simulators of `spotagg-sim`.

pub mod eaps;
pub mod metrics_http;
pub mod multi_job;
pub mod reference;
pub mod udp_switch;
