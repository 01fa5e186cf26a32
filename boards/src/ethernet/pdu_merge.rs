//! Merges the EAPS node's PDUs for one port (whole frames of FIFO words, from the node's
//! clock-crossing FIFO) into the writes of that port's result FIFO, between the result
//! dispatcher's frames.
//!
//! In: the dispatcher's writes (`up`, a [`FrameWriteSink`]: it writes only while `ready`) and
//! the PDU FIFO's words (`pdu`: a committed frame, [`crate::ethernet::frame_fifo::word`]
//! layout, a word a clock once its first is valid). Out: the FIFO's writes (`down`). Whole
//! frames only: a PDU is taken at a boundary of the dispatcher's frames (`up.ready` is low from
//! the clock after a PDU word waits, once no dispatcher frame is begun, until the PDU's last
//! word is written), and the dispatcher's frame, once begun, is never cut into. A PDU's 106
//! bytes are 27 words: the port is the node's for 28 clocks.
//!
//! Timing: `up.ready` is a function of registers and `down.ready` only. The PDU FIFO's `valid`
//! is registered (`waiting`) before it reaches `up.ready`, so no path runs from the node's
//! FIFO through the dispatcher's room check into the result FIFO's write (that path was the
//! core clock's worst on the 5A-75B, 13 LUTs).

use crate::ethernet::frame_fifo::{FrameWriteSink, FrameWriter, WORD_BITS};
use crate::ethernet::stream::ValidReadySink;
use rust_hdl::prelude::*;

/// Width of the PDU FIFO's words (data, byte count, last; no routing bits).
pub const PDU_WORD_BITS: usize = 36;

/// The merge of one port's PDUs into its result FIFO.
#[derive(LogicBlock, Default)]
pub struct PduMerge {
    /// Core clock.
    pub clock: Signal<In, Clock>,
    /// The dispatcher's writes.
    pub up: FrameWriteSink,
    /// The node's PDUs, whole frames of words.
    pub pdu: ValidReadySink<PDU_WORD_BITS>,
    /// The FIFO's writes.
    pub down: FrameWriter,
    /// The node owns the FIFO's write port (from the clock after its first word waits to its
    /// last word).
    owner: DFF<Bit>,
    /// The dispatcher has begun a frame (a word written, no commit or drop yet).
    disp_mid: DFF<Bit>,
    /// A PDU word waited in the clock before, with the port not the node's.
    waiting: DFF<Bit>,
    /// The dispatcher must wait: a PDU waits and no dispatcher frame is begun.
    hold_up: Signal<Local, Bit>,
    claim: Signal<Local, Bit>,
    move_word: Signal<Local, Bit>,
}

impl Logic for PduMerge {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, owner, disp_mid, waiting);
        // The node claims the port at a boundary of the dispatcher's frames, a clock after its
        // PDU waits: the dispatcher was held off (`hold_up`) in that clock, so none begins.
        self.waiting.d.next = self.pdu.valid.val() & !self.owner.q.val();
        self.hold_up.next = self.waiting.q.val() & !self.disp_mid.q.val();
        self.claim.next = !self.owner.q.val() & self.hold_up.val() & self.pdu.valid.val();
        if self.claim.val() {
            self.owner.d.next = true;
        }
        self.up.ready.next = self.down.ready.val() & !self.owner.q.val() & !self.hold_up.val();
        if self.up.enable.val() {
            self.disp_mid.d.next = true;
        }
        if self.up.commit.val() | self.up.drop.val() {
            self.disp_mid.d.next = false;
        }
        // The FIFO's writes: the node's words while it owns the port, else the dispatcher's (bit
        // 35 of a word: its frame's last).
        self.move_word.next = self.owner.q.val() & self.pdu.valid.val() & self.down.ready.val();
        self.pdu.ready.next = self.owner.q.val() & self.down.ready.val();
        self.down.data.next = self.up.data.val();
        self.down.enable.next = self.up.enable.val();
        self.down.commit.next = self.up.commit.val();
        self.down.drop.next = self.up.drop.val();
        if self.owner.q.val() {
            self.down.data.next = bit_cast::<WORD_BITS, PDU_WORD_BITS>(self.pdu.data.val());
            self.down.enable.next = self.move_word.val();
            self.down.commit.next = self.move_word.val() & self.pdu.data.val().get_bit(35);
            self.down.drop.next = false;
            if self.move_word.val() & self.pdu.data.val().get_bit(35) {
                self.owner.d.next = false;
            }
        }
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::ethernet::frame_fifo::word;

    fn edge(m: &mut PduMerge) {
        m.clock.next = true.into();
        assert!(simulate(m, 1000));
        m.clock.next = false.into();
        assert!(simulate(m, 1000));
    }

    /// A PDU of `n` words offered while the dispatcher writes a frame, and the dispatcher's next
    /// frame offered while the PDU goes in: the FIFO sees the first dispatcher frame whole, the
    /// PDU whole, then the second dispatcher frame.
    #[test]
    fn a_pdu_between_whole_frames() {
        for n in [1u64, 2, 27] {
            let mut m = PduMerge::default();
            m.connect_all();
            let pdu: Vec<u64> =
                (0..n).map(|i| (0xA000 + i) | (4 << word::BYTES) | (u64::from(i + 1 == n) << word::LAST)).collect();
            let (mut disp, mut sent, mut writes) = (0u64, 0usize, vec![]);
            for cycle in 0..200 {
                // The FIFO is full now and then; the PDU waits from clock 1.
                m.down.ready.next = cycle % 7 != 3;
                m.pdu.valid.next = cycle >= 1 && sent < pdu.len();
                m.pdu.data.next = pdu.get(sent).copied().unwrap_or(0).into();
                m.up.enable.next = false;
                m.up.commit.next = false;
                m.up.drop.next = false;
                assert!(simulate(&mut m, 1000));
                // The dispatcher writes two 3-word frames from clock 0 while ready.
                if disp < 6 && m.up.ready.val() {
                    m.up.enable.next = true;
                    m.up.data.next = (0xD000 + disp).into();
                    m.up.commit.next = disp % 3 == 2;
                }
                assert!(simulate(&mut m, 1000));
                if m.up.enable.val() {
                    disp += 1;
                }
                if m.pdu.valid.val() && m.pdu.ready.val() {
                    sent += 1;
                }
                if m.down.enable.val() || m.down.commit.val() {
                    assert!(m.down.ready.val() || !m.down.enable.val(), "a write without room");
                    writes.push((m.down.data.val().to_u64(), m.down.commit.val()));
                }
                edge(&mut m);
            }
            assert_eq!((disp, sent), (6, n as usize));
            let d = |i: u64| (0xD000 + i, i % 3 == 2);
            let expect: Vec<(u64, bool)> =
                (0..3).map(d).chain(pdu.iter().map(|&w| (w, w >> word::LAST & 1 == 1))).chain((3..6).map(d)).collect();
            assert_eq!(writes, expect, "{n} words");
        }
    }
}
