//! spotagg's controller (docs/controller.md): SwitchML's gRPC `Session` and `Sync` services, so
//! that a job sets itself up when its workers start instead of from a hand-written job file.
//!
//! - [`proto`]: the messages, SwitchML's field numbers and spotagg's extensions;
//! - [`registry`]: sessions, their refusals and access control, without I/O;
//! - [`sync`]: Barrier and Broadcast;
//! - [`server`]: the services over tonic; [`client`]: a worker's side of the sequence.

#![warn(missing_docs)]

pub mod client;
pub mod proto;
pub mod registry;
pub mod server;
pub mod sync;

/// The services' server and client code (build.rs).
#[allow(missing_docs, clippy::all)]
pub mod generated {
    include!(concat!(env!("OUT_DIR"), "/switchml_proto.Session.rs"));
    include!(concat!(env!("OUT_DIR"), "/switchml_proto.Sync.rs"));
    include!(concat!(env!("OUT_DIR"), "/spotagg_proto.Control.rs"));
}
