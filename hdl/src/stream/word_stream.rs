//! The core's streams as a pair of rust-hdl interfaces: a block that sends beats has a
//! [`StreamSource`], one that takes them a [`StreamSink`], and the owner joins them
//! (`WordSource::join(&mut a.word, &mut b.word)`) in place of five assignments, or links a
//! block's stream to its own port of the same kind (`StreamSink::<D, 4>::link`).
//!
//! A beat carries `D / 8` bytes, the first byte in the top lane; `bytes` (`B` bits) counts the
//! valid bytes of the last beat of a frame, the leading lanes. Handshake as AXI-Stream: a beat
//! moves on a rising edge with `valid` and `ready` both high.
//!
//! Two kinds are used: the internal 32-bit word stream ([`WordSource`]/[`WordSink`], `bytes`
//! 1..=4 in 3 bits) and the core's external Ethernet stream of `D` bits a beat
//! ([`BeatSource`]/[`BeatSink`], `bytes` 1..=W in 4 bits).

use rust_hdl::prelude::*;

interface_pair! {
    /// The sending end of a stream of `D`-bit beats with a `B`-bit byte count.
    pub struct StreamSource<const D: usize, const B: usize> join "StreamSink";
    /// The taking end of a stream of `D`-bit beats with a `B`-bit byte count.
    pub struct StreamSink join "StreamSource";
    {
        /// Beat valid.
        valid: Out Bit,
        /// Beat data, first byte on top.
        data: Out Bits<D>,
        /// Last beat of the frame.
        last: Out Bit,
        /// Valid bytes of the last beat.
        bytes: Out Bits<B>,
        /// The sink takes the beat.
        ready: In Bit,
    }
}

/// The sending end of the core's internal 32-bit word stream.
pub type WordSource = StreamSource<32, 3>;
/// The taking end of the core's internal 32-bit word stream.
pub type WordSink = StreamSink<32, 3>;
/// The sending end of the core's external stream of `D`-bit beats (`bytes` 1..=W).
pub type BeatSource<const D: usize> = StreamSource<D, 4>;
/// The taking end of the core's external stream of `D`-bit beats (`bytes` 1..=W).
pub type BeatSink<const D: usize> = StreamSink<D, 4>;
