//! spotagg reference switch (the executable specification of docs/switch.md) and the
//! simulation harnesses that drive the hardware descriptions.

#[cfg(feature = "hdl")]
pub mod board_model;
pub mod cluster;
pub mod eaps;
pub mod gmii;
pub mod metrics_http;
pub mod multi_job;
pub mod pcap;
pub mod reference;
#[cfg(feature = "hdl")]
pub mod rtl;
pub mod trace;
pub mod udp_switch;
#[cfg(feature = "hdl")]
pub mod verilator;
#[cfg(feature = "hdl")]
pub mod verilator_engine;
