//! A valid/ready stream of `W`-bit words as a pair of rust-hdl interfaces: a block that sends
//! has a [`ValidReadySource`], one that takes a [`ValidReadySink`], and the owner joins them
//! (`ValidReadySource::join(&mut a.out, &mut b.input)`). A word moves on a rising edge with
//! `valid` and `ready` both high (AXI-Stream's handshake). Unlike the core's frame streams
//! (`spotagg_hdl::word_stream::StreamSource`, with `last` and `bytes`), the words carry no
//! framing of their own: what the bits mean is the blocks' business:
//! frame FIFO words ([`crate::ethernet::frame_fifo::word`]), or the core's beats packed as
//! [`beat`] says.

use rust_hdl::prelude::*;

/// The core's 32-bit beat packed into a stream word of [`beat::BITS`] bits (the register slices
/// around the core, the router's output and the dispatcher's input carry it so).
pub mod beat {
    /// Bits of a packed beat.
    pub const BITS: usize = 37;
    /// Bits 31..0: data, first byte on top.
    pub const DATA: usize = 0;
    /// Bit 32: last beat of the frame.
    pub const LAST: usize = 32;
    /// Bits 36..33: valid bytes of the last beat (1..=4).
    pub const BYTES: usize = 33;
}

/// The sending end of a stream.
#[derive(LogicInterface, Default)]
#[join = "ValidReadySink"]
pub struct ValidReadySource<const W: usize> {
    /// Word valid.
    pub valid: Signal<Out, Bit>,
    /// The word.
    pub data: Signal<Out, Bits<W>>,
    /// The sink takes the word.
    pub ready: Signal<In, Bit>,
}

/// The taking end of a stream.
#[derive(LogicInterface, Default)]
#[join = "ValidReadySource"]
pub struct ValidReadySink<const W: usize> {
    /// Word valid.
    pub valid: Signal<In, Bit>,
    /// The word.
    pub data: Signal<In, Bits<W>>,
    /// The block takes the word.
    pub ready: Signal<Out, Bit>,
}
