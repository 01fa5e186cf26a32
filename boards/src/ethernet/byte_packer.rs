//! Packs a byte stream into frame FIFO words: four bytes a word, first byte on top
//! ([`crate::ethernet::frame_fifo::word`] layout, routing bits 0), the byte count on a frame's
//! last word, which commits the frame. Each byte goes straight into its lane of the word
//! register (no shifting: a short last word has its bytes in place, the lanes after them hold
//! what they held); a full word waits there for the FIFO's `ready`, and the bytes wait with it
//! (a byte is taken in the clock the waiting word leaves: the FIFO takes the word at the edge
//! where the byte enters lane 0). The EAPS node's PDUs go so into their clock-crossing FIFO
//! (`crate::tops::eaps_node_crossing`).

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
    lane0: DFF<Bits<8>>,
    lane1: DFF<Bits<8>>,
    lane2: DFF<Bits<8>>,
    lane3: DFF<Bits<8>>,
    count: DFF<Bits<2>>,
    full: DFF<Bit>,
    full_bytes: DFF<Bits<3>>,
    full_last: DFF<Bit>,
    mid: DFF<Bit>,
    take: Signal<Local, Bit>,
    leave: Signal<Local, Bit>,
}

impl Logic for BytePacker {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, lane0, lane1, lane2, lane3, count, full, full_bytes, full_last, mid);
        // The full word leaves while the FIFO has room.
        self.leave.next = self.full.q.val() & self.out.ready.val();
        self.out.data.next = (bit_cast::<WORD_BITS, 8>(self.lane0.q.val()) << 24)
            | (bit_cast::<WORD_BITS, 8>(self.lane1.q.val()) << 16)
            | (bit_cast::<WORD_BITS, 8>(self.lane2.q.val()) << 8)
            | bit_cast::<WORD_BITS, 8>(self.lane3.q.val())
            | (bit_cast::<WORD_BITS, 3>(self.full_bytes.q.val()) << 32)
            | (bit_cast::<WORD_BITS, 1>(self.full_last.q.val().into()) << 35);
        self.out.enable.next = self.leave.val();
        self.out.commit.next = self.leave.val() & self.full_last.q.val();
        self.out.drop.next = false;
        if self.leave.val() {
            self.full.d.next = false;
        }
        // A byte a clock into its lane while no word waits (or the waiting one leaves now).
        self.bytes.ready.next = !self.full.q.val() | self.out.ready.val();
        self.take.next = self.bytes.valid.val() & self.bytes.ready.val();
        if self.take.val() {
            self.mid.d.next = !self.bytes.last.val();
            match self.count.q.val().index() {
                0 => self.lane0.d.next = self.bytes.data.val(),
                1 => self.lane1.d.next = self.bytes.data.val(),
                2 => self.lane2.d.next = self.bytes.data.val(),
                _ => self.lane3.d.next = self.bytes.data.val(),
            }
            self.count.d.next = self.count.q.val() + 1;
            if (self.count.q.val() == 3) | self.bytes.last.val() {
                self.full.d.next = true;
                self.full_bytes.d.next = bit_cast::<3, 2>(self.count.q.val()) + 1;
                self.full_last.d.next = self.bytes.last.val();
                self.count.d.next = 0.into();
            }
        }
        self.idle.next = !self.mid.q.val() & !self.full.q.val();
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
