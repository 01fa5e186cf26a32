//! Merges the EAPS node's PDUs for one port (bytes) into the writes of that port's result
//! FIFO, between the result dispatcher's frames.
//!
//! In: the dispatcher's writes (`up`, a [`FrameWriteSink`]: it writes only while `ready`) and
//! the node's bytes (`pdu`, a [`ByteSink`]). Out: the FIFO's writes (`down`). Whole frames
//! only: the node's frame is taken at a boundary of the dispatcher's (`up.ready` is low from
//! the clock a PDU byte waits with no dispatcher frame begun until the PDU's last word is
//! written), and the dispatcher's frame, once begun, is never cut into. The node's bytes are
//! packed four to a word ([`crate::ethernet::frame_fifo::word`] layout, the byte count on the
//! last word); a word waits in a register for the FIFO's `ready`, and the node waits with it.
//! A PDU takes a byte a clock, so its 106 bytes are 27 words.

use crate::ethernet::frame_fifo::{FrameWriteSink, FrameWriter, WORD_BITS};
use rust_hdl::prelude::*;
use spotagg_hdl::byte_stream::ByteSink;

/// The merge of one port's PDUs into its result FIFO.
#[derive(LogicBlock, Default)]
pub struct PduMerge {
    /// Core clock.
    pub clock: Signal<In, Clock>,
    /// The dispatcher's writes.
    pub up: FrameWriteSink,
    /// The node's PDU bytes.
    pub pdu: ByteSink,
    /// The FIFO's writes.
    pub down: FrameWriter,
    /// The node owns the FIFO's write port (from its first byte to its last word).
    owner: DFF<Bit>,
    /// The dispatcher has begun a frame (a word written, no commit or drop yet).
    disp_mid: DFF<Bit>,
    acc: DFF<Bits<32>>,
    count: DFF<Bits<3>>,
    pend: DFF<Bit>,
    pend_last: DFF<Bit>,
    pend_word: DFF<Bits<WORD_BITS>>,
    claim: Signal<Local, Bit>,
    take: Signal<Local, Bit>,
    shifted: Signal<Local, Bits<32>>,
}

impl Logic for PduMerge {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, owner, disp_mid, acc, count, pend, pend_last, pend_word);
        // The node claims the port at a boundary of the dispatcher's frames.
        self.claim.next = !self.owner.q.val() & !self.disp_mid.q.val() & self.pdu.valid.val();
        if self.claim.val() {
            self.owner.d.next = true;
        }
        self.up.ready.next = self.down.ready.val() & !self.owner.q.val() & !self.claim.val();
        if self.up.enable.val() {
            self.disp_mid.d.next = true;
        }
        if self.up.commit.val() | self.up.drop.val() {
            self.disp_mid.d.next = false;
        }
        // Packing: a byte a clock while no word waits.
        self.pdu.ready.next = self.owner.q.val() & !self.pend.q.val();
        self.take.next = self.owner.q.val() & !self.pend.q.val() & self.pdu.valid.val();
        self.shifted.next = (self.acc.q.val() << 8) | bit_cast::<32, 8>(self.pdu.data.val());
        if self.take.val() {
            self.acc.d.next = self.shifted.val();
            self.count.d.next = self.count.q.val() + 1;
            if (self.count.q.val() == 3) | self.pdu.last.val() {
                self.pend.d.next = true;
                self.pend_last.d.next = self.pdu.last.val();
                self.count.d.next = 0.into();
                self.acc.d.next = 0.into();
                // First byte on top: a short last word is shifted up into place.
                self.pend_word.d.next = bit_cast::<WORD_BITS, 32>(self.shifted.val())
                    | (bit_cast::<WORD_BITS, 3>(self.count.q.val() + 1) << 32)
                    | (bit_cast::<WORD_BITS, 1>(self.pdu.last.val().into()) << 35);
                if self.pdu.last.val() & (self.count.q.val() == 0) {
                    self.pend_word.d.next = (bit_cast::<WORD_BITS, 32>(self.shifted.val()) << 24) | 0x9_0000_0000_u64;
                }
                if self.pdu.last.val() & (self.count.q.val() == 1) {
                    self.pend_word.d.next = (bit_cast::<WORD_BITS, 32>(self.shifted.val()) << 16) | 0xA_0000_0000_u64;
                }
                if self.pdu.last.val() & (self.count.q.val() == 2) {
                    self.pend_word.d.next = (bit_cast::<WORD_BITS, 32>(self.shifted.val()) << 8) | 0xB_0000_0000_u64;
                }
            }
        }
        // The FIFO's writes: the node's waiting word while it owns the port, else the dispatcher's.
        self.down.data.next = self.up.data.val();
        self.down.enable.next = self.up.enable.val();
        self.down.commit.next = self.up.commit.val();
        self.down.drop.next = self.up.drop.val();
        if self.owner.q.val() {
            self.down.data.next = self.pend_word.q.val();
            self.down.enable.next = self.pend.q.val() & self.down.ready.val();
            self.down.commit.next = self.pend.q.val() & self.down.ready.val() & self.pend_last.q.val();
            self.down.drop.next = false;
            if self.pend.q.val() & self.down.ready.val() {
                self.pend.d.next = false;
                if self.pend_last.q.val() {
                    self.owner.d.next = false;
                }
            }
        }
    }
}

#[cfg(test)]
mod test {
    use super::*;

    fn edge(m: &mut PduMerge) {
        m.clock.next = true.into();
        assert!(simulate(m, 1000));
        m.clock.next = false.into();
        assert!(simulate(m, 1000));
    }

    /// A PDU of `len` bytes offered while the dispatcher writes a frame of words: the FIFO sees
    /// the dispatcher's frame whole, then the PDU packed, first byte on top, the byte count on
    /// its last word.
    #[test]
    fn packs_a_pdu_between_whole_frames() {
        for len in [5usize, 6, 7, 8, 106] {
            let mut m = PduMerge::default();
            m.connect_all();
            m.down.ready.next = true;
            assert!(simulate(&mut m, 1000));
            let bytes: Vec<u8> = (0..len).map(|i| (i * 7 + 1) as u8).collect();
            let mut sent = 0;
            let mut disp = 0u64;
            let mut words = vec![];
            for cycle in 0..400 {
                // The dispatcher writes a 3-word frame from clock 0 while ready; the PDU waits
                // from clock 1.
                m.up.enable.next = false;
                m.up.commit.next = false;
                if disp < 3 && m.up.ready.val() {
                    m.up.enable.next = true;
                    m.up.data.next = (0xD000 + disp).into();
                    m.up.commit.next = disp == 2;
                }
                m.pdu.valid.next = cycle >= 1 && sent < len;
                m.pdu.data.next = u64::from(*bytes.get(sent).unwrap_or(&0)).into();
                m.pdu.last.next = sent + 1 == len;
                // The FIFO is full now and then.
                m.down.ready.next = cycle % 7 != 3;
                assert!(simulate(&mut m, 1000));
                if m.up.enable.val() {
                    disp += 1;
                }
                if m.pdu.valid.val() && m.pdu.ready.val() {
                    sent += 1;
                }
                if m.down.enable.val() {
                    words.push((m.down.data.val().to_u64(), m.down.commit.val()));
                }
                edge(&mut m);
            }
            assert_eq!(disp, 3);
            assert_eq!(sent, len);
            assert_eq!(words[..3], [(0xD000, false), (0xD001, false), (0xD002, true)], "len {len}");
            let pdu = &words[3..];
            assert_eq!(pdu.len(), len.div_ceil(4), "len {len}");
            let mut got = vec![];
            for (i, &(w, commit)) in pdu.iter().enumerate() {
                let last = i + 1 == pdu.len();
                assert_eq!(commit, last);
                assert_eq!((w >> 35) & 1 == 1, last);
                let n = if last { ((w >> 32) & 7) as usize } else { 4 };
                for b in 0..n {
                    got.push((w >> (24 - 8 * b)) as u8);
                }
            }
            assert_eq!(got, bytes, "len {len}");
        }
    }
}
