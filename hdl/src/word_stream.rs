//! The core's internal 32-bit word stream, as a pair of rust-hdl interfaces: a block that sends
//! words has a [`WordSource`], one that takes them a [`WordSink`], and the owner joins them
//! (`WordSource::join(&mut a.word, &mut b.word)`) in place of five assignments.
//!
//! A word carries 4 bytes, the first byte in the top lane; `bytes` (1..=4) counts the valid
//! bytes of the last word of a frame, the leading lanes. Handshake as AXI-Stream: a word moves
//! on a rising edge with `valid` and `ready` both high.

use rust_hdl::prelude::*;

/// The sending end of a word stream.
#[derive(LogicInterface, Default)]
#[join = "WordSink"]
pub struct WordSource {
    /// Word valid.
    pub valid: Signal<Out, Bit>,
    /// Word data, first byte on top.
    pub data: Signal<Out, Bits<32>>,
    /// Last word of the frame.
    pub last: Signal<Out, Bit>,
    /// Valid bytes of the last word (1..=4).
    pub bytes: Signal<Out, Bits<3>>,
    /// The sink takes the word.
    pub ready: Signal<In, Bit>,
}

/// The taking end of a word stream.
#[derive(LogicInterface, Default)]
#[join = "WordSource"]
pub struct WordSink {
    /// Word valid.
    pub valid: Signal<In, Bit>,
    /// Word data, first byte on top.
    pub data: Signal<In, Bits<32>>,
    /// Last word of the frame.
    pub last: Signal<In, Bit>,
    /// Valid bytes of the last word (1..=4).
    pub bytes: Signal<In, Bits<3>>,
    /// The block takes the word.
    pub ready: Signal<Out, Bit>,
}
