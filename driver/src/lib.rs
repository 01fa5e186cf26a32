//! spotagg host side: the wire format (one definition for every part of the project), the
//! all-reduce worker library, its transports, float/fixed conversion, the job configuration
//! and the control link. A training host depends on this crate alone.

pub mod batch;
pub mod config;
pub mod control;
pub mod counters;
pub mod engine;
pub mod fixedpoint;
pub mod metrics;
pub mod rtt;
pub mod transport;
pub mod wire;
pub mod worker;

pub use config::{JobConfig, JobVlan, WorkerEntry};
pub use counters::{Counters, DropReason};
pub use engine::Engine;
pub use transport::{allreduce_f32, Transport};
pub use worker::{AllReduce, Error, Stats, Worker};
