//! A byte stream (one byte a clock at most) as a pair of rust-hdl interfaces, the MAC-side
//! counterpart of [`crate::word_stream`]: a block that sends bytes has a [`ByteSource`], one
//! that takes them a [`ByteSink`]. A byte moves on a rising edge with `valid` and `ready` high;
//! `last` marks a frame's final byte.

use rust_hdl::prelude::*;

/// The sending end of a byte stream.
#[derive(LogicInterface, Default)]
#[join = "ByteSink"]
pub struct ByteSource {
    /// Byte valid.
    pub valid: Signal<Out, Bit>,
    /// The byte.
    pub data: Signal<Out, Bits<8>>,
    /// Last byte of the frame.
    pub last: Signal<Out, Bit>,
    /// The sink takes the byte.
    pub ready: Signal<In, Bit>,
}

/// The taking end of a byte stream.
#[derive(LogicInterface, Default)]
#[join = "ByteSource"]
pub struct ByteSink {
    /// Byte valid.
    pub valid: Signal<In, Bit>,
    /// The byte.
    pub data: Signal<In, Bits<8>>,
    /// Last byte of the frame.
    pub last: Signal<In, Bit>,
    /// The block takes the byte.
    pub ready: Signal<Out, Bit>,
}
