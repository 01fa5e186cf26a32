//! Board definitions: each board as typed data (part, pins, I/O standards, clocks, PHY delays;
//! the types are at the crate root) and the constraint file generated from it.

pub mod colorlight_5a_75b_v8;
pub mod colorlight_i5;
pub mod lpf;
