//! The first header words of a received frame (words 1..=12, bytes 4..52; word 0 is the
//! destination MAC's start, which every reply replaces), as a pair of rust-hdl interfaces: the
//! parser hands them to the aggregator in its descriptor, the aggregator to the reply header
//! composer ([`crate::reply::header_composer`]).

use rust_hdl::prelude::*;

interface_pair! {
    /// Header words 1..=12 of a frame, sending end.
    pub struct HeaderWordsSource join "HeaderWords";
    /// Header words 1..=12 of a frame, taking end.
    pub struct HeaderWords join "HeaderWordsSource";
    {
        /// Header word 1 (bytes 4..8) of the frame.
        h1: Out Bits<32>,
        /// Header word 2 (bytes 8..12) of the frame.
        h2: Out Bits<32>,
        /// Header word 3 (bytes 12..16) of the frame.
        h3: Out Bits<32>,
        /// Header word 4 (bytes 16..20) of the frame.
        h4: Out Bits<32>,
        /// Header word 5 (bytes 20..24) of the frame.
        h5: Out Bits<32>,
        /// Header word 6 (bytes 24..28) of the frame.
        h6: Out Bits<32>,
        /// Header word 7 (bytes 28..32) of the frame.
        h7: Out Bits<32>,
        /// Header word 8 (bytes 32..36) of the frame.
        h8: Out Bits<32>,
        /// Header word 9 (bytes 36..40) of the frame.
        h9: Out Bits<32>,
        /// Header word 10 (bytes 40..44) of the frame.
        h10: Out Bits<32>,
        /// Header word 11 (bytes 44..48) of the frame.
        h11: Out Bits<32>,
        /// Header word 12 (bytes 48..52) of the frame.
        h12: Out Bits<32>,
    }
}

impl HeaderWords {
    /// Words 1..=12 in order, to drive from a test bench.
    pub fn words_mut(&mut self) -> [&mut Signal<In, Bits<32>>; 12] {
        [
            &mut self.h1,
            &mut self.h2,
            &mut self.h3,
            &mut self.h4,
            &mut self.h5,
            &mut self.h6,
            &mut self.h7,
            &mut self.h8,
            &mut self.h9,
            &mut self.h10,
            &mut self.h11,
            &mut self.h12,
        ]
    }
}
