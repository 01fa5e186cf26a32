//! One module per subcommand: its arguments and its `run`.

pub mod bench;
pub mod build;
pub mod controller_args;
pub mod ctl;
pub mod demo;
pub mod eaps;
pub mod flash;
pub mod loadgen;
pub mod replay;
pub mod switch;
pub mod tap;
pub mod verilog;
pub mod worker;
