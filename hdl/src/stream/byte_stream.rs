//! A byte stream (one byte a clock at most) as a pair of rust-hdl interfaces, the MAC-side
//! counterpart of [`crate::word_stream`]: a block that sends bytes has a [`ByteSource`], one
//! that takes them a [`ByteSink`]. A byte moves on a rising edge with `valid` and `ready` high;
//! `last` marks a frame's final byte.

use rust_hdl::prelude::*;

interface_pair! {
    /// The sending end of a byte stream.
    pub struct ByteSource join "ByteSink";
    /// The taking end of a byte stream.
    pub struct ByteSink join "ByteSource";
    {
        /// Byte valid.
        valid: Out Bit,
        /// The byte.
        data: Out Bits<8>,
        /// Last byte of the frame.
        last: Out Bit,
        /// The sink takes the byte.
        ready: In Bit,
    }
}
