//! One module per subcommand: its arguments and its `run`.

pub mod bench;
pub mod demo;
pub mod replay;
pub mod switch;
pub mod worker;
