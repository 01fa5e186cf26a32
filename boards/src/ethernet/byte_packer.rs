//! Packs a byte stream into frame FIFO words: four bytes a word, first byte on top
//! ([`crate::ethernet::frame_fifo::word`] layout, routing bits 0), the byte count on a frame's
//! last word, which commits the frame. A word waits in a register for the FIFO's `ready`, and
//! the bytes wait with it (a byte is taken in the clock the waiting word leaves). The EAPS
//! node's PDUs go so into their clock-crossing FIFO (`crate::tops::eaps_node_crossing`).

use crate::ethernet::frame_fifo::{FrameWriter, WORD_BITS};
use rust_hdl::prelude::*;
use spotagg_hdl::byte_stream::ByteSink;

/// Bytes in, FIFO words out.
#[derive(LogicBlock, Default)]
pub struct BytePacker {
    /// Clock.
    pub clock: Signal<In, Clock>,
    /// The bytes (`last` ends a frame).
    pub bytes: ByteSink,
    /// The FIFO's writes (whole frames: `commit` with each last word, never `drop`).
    pub out: FrameWriter,
    /// Nothing begun: no byte of a frame taken whose last word has not been written.
    pub idle: Signal<Out, Bit>,
    acc: DFF<Bits<32>>,
    count: DFF<Bits<3>>,
    pend: DFF<Bit>,
    pend_last: DFF<Bit>,
    pend_word: DFF<Bits<WORD_BITS>>,
    mid: DFF<Bit>,
    take: Signal<Local, Bit>,
    leave: Signal<Local, Bit>,
    shifted: Signal<Local, Bits<32>>,
}

impl Logic for BytePacker {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, acc, count, pend, pend_last, pend_word, mid);
        // The waiting word leaves while the FIFO has room.
        self.leave.next = self.pend.q.val() & self.out.ready.val();
        self.out.data.next = self.pend_word.q.val();
        self.out.enable.next = self.leave.val();
        self.out.commit.next = self.leave.val() & self.pend_last.q.val();
        self.out.drop.next = false;
        if self.leave.val() {
            self.pend.d.next = false;
        }
        // A byte a clock while no word waits (or the waiting one leaves now).
        self.bytes.ready.next = !self.pend.q.val() | self.out.ready.val();
        self.take.next = self.bytes.valid.val() & self.bytes.ready.val();
        self.shifted.next = (self.acc.q.val() << 8) | bit_cast::<32, 8>(self.bytes.data.val());
        if self.take.val() {
            self.mid.d.next = !self.bytes.last.val();
            self.acc.d.next = self.shifted.val();
            self.count.d.next = self.count.q.val() + 1;
            if (self.count.q.val() == 3) | self.bytes.last.val() {
                self.pend.d.next = true;
                self.pend_last.d.next = self.bytes.last.val();
                self.count.d.next = 0.into();
                self.acc.d.next = 0.into();
                // First byte on top: a short last word is shifted up into place.
                self.pend_word.d.next = bit_cast::<WORD_BITS, 32>(self.shifted.val())
                    | (bit_cast::<WORD_BITS, 3>(self.count.q.val() + 1) << 32)
                    | (bit_cast::<WORD_BITS, 1>(self.bytes.last.val().into()) << 35);
                if self.bytes.last.val() & (self.count.q.val() == 0) {
                    self.pend_word.d.next = (bit_cast::<WORD_BITS, 32>(self.shifted.val()) << 24) | 0x9_0000_0000_u64;
                }
                if self.bytes.last.val() & (self.count.q.val() == 1) {
                    self.pend_word.d.next = (bit_cast::<WORD_BITS, 32>(self.shifted.val()) << 16) | 0xA_0000_0000_u64;
                }
                if self.bytes.last.val() & (self.count.q.val() == 2) {
                    self.pend_word.d.next = (bit_cast::<WORD_BITS, 32>(self.shifted.val()) << 8) | 0xB_0000_0000_u64;
                }
            }
        }
        self.idle.next = !self.mid.q.val() & !self.pend.q.val();
    }
}

#[cfg(test)]
mod test {
    use super::*;

    /// Frames of 1..=9 and 106 bytes offered with gaps while the FIFO is full now and then:
    /// the words hold the bytes first on top, the byte count and `commit` on each last word.
    #[test]
    fn packs_frames_into_words() {
        let mut m = BytePacker::default();
        m.connect_all();
        let frames: Vec<Vec<u8>> =
            (1..=9).chain([106]).map(|len| (0..len).map(|i| (i * 7 + len) as u8).collect()).collect();
        let stream: Vec<(u8, bool)> =
            frames.iter().flat_map(|f| f.iter().enumerate().map(|(i, &b)| (b, i + 1 == f.len()))).collect();
        let (mut sent, mut words) = (0, vec![]);
        for cycle in 0..1000 {
            let offer = sent < stream.len() && cycle % 5 != 2;
            m.bytes.valid.next = offer;
            m.bytes.data.next = u64::from(stream.get(sent).map_or(0, |s| s.0)).into();
            m.bytes.last.next = stream.get(sent).is_some_and(|s| s.1);
            m.out.ready.next = cycle % 7 != 3;
            assert!(simulate(&mut m, 1000));
            if offer && m.bytes.ready.val() {
                sent += 1;
            }
            if m.out.enable.val() {
                words.push((m.out.data.val().to_u64(), m.out.commit.val()));
            }
            m.clock.next = true.into();
            assert!(simulate(&mut m, 1000));
            m.clock.next = false.into();
            assert!(simulate(&mut m, 1000));
        }
        assert_eq!(sent, stream.len());
        assert!(m.idle.val());
        let mut got: Vec<Vec<u8>> = vec![vec![]];
        for &(w, commit) in &words {
            let last = (w >> 35) & 1 == 1;
            assert_eq!(commit, last);
            assert_eq!(w >> 36, 0, "routing bits");
            let n = if last { ((w >> 32) & 7) as usize } else { 4 };
            for b in 0..n {
                got.last_mut().unwrap().push((w >> (24 - 8 * b)) as u8);
            }
            if last {
                got.push(vec![]);
            }
        }
        got.pop();
        assert_eq!(got, frames);
    }
}
