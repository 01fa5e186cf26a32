//! spotagg reference switch (the executable specification of docs/switch.md) and the
//! simulation harnesses that drive the hardware descriptions.

pub mod pcap;
pub mod reference;
pub mod rtl;
pub mod trace;
pub mod verilator;
pub mod verilator_engine;
