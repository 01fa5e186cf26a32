//! Sends each frame the core emits to the port its destination MAC was last seen on.
//!
//! In: the core's transmit beats (32 bits, `bytes` on the last). Out: writes into the two
//! ports' result FIFOs ([`crate::ethernet::frame_fifo`] words). The first two words are held while the
//! destination MAC (from those registers) is looked up in the [`crate::ethernet::mac_table::MacTable`]
//! (three clocks); a hit sends the frame
//! to that port, a miss or a group (broadcast/multicast) destination to both. A frame to both
//! moves a word only when both FIFOs have room, so the two copies are identical.
//!
//! EAPS: the frame's 802.1Q tag (from its fourth word: `tag_tagged`, `tag_vid`) is put to the
//! VLAN gate, whose verdict for each port (`gate_pass`, bit `p`) decides at the last word
//! whether the copy written to that port's FIFO is committed or dropped: a result of a
//! protected VLAN leaves a ring port only where its domain forwards (docs/eaps.md §12).
//!
//! Timing: seven clocks of overhead per frame (hold, hold, four of lookup, then the held words), then
//! one word a clock; `up.ready` is low while a FIFO is full (the core waits).

use crate::ethernet::frame_fifo::{FrameWriter, WORD_BITS};
use crate::ethernet::mac_table::MacLookup;
use crate::ethernet::stream::{beat, ValidReadySink};
use rust_hdl::prelude::*;

/// The result dispatcher.
#[derive(LogicBlock, Default)]
pub struct ResultDispatcher {
    /// Core clock.
    pub clock: Signal<In, Clock>,
    /// The core's beats ([`beat`] layout); `ready` is low while a FIFO is full.
    pub up: ValidReadySink<{ beat::BITS }>,
    /// The destination MAC's port.
    pub lookup: MacLookup,
    /// Result FIFO of each port.
    pub out: [FrameWriter; 2],
    /// Frames sent to both ports (group destination, or a MAC not in the table).
    pub flooded: Signal<Out, Bits<32>>,
    /// The current frame has an 802.1Q tag (from its fourth word on).
    pub tag_tagged: Signal<Out, Bit>,
    /// Its VID.
    pub tag_vid: Signal<Out, Bits<12>>,
    /// The frame may leave port `p` (bit `p`; read at its last word).
    pub gate_pass: Signal<In, Bits<2>>,
    /// 0 first word, 1 second word, 2 lookup, 3 write first, 4 write second, 5 stream.
    state: DFF<Bits<3>>,
    lookup_wait: DFF<Bits<2>>,
    hold0: DFF<Bits<WORD_BITS>>,
    hold1: DFF<Bits<WORD_BITS>>,
    mask: DFF<Bits<2>>,
    floods: DFF<Bits<32>>,
    /// Words streamed in state 5 (saturating at 2: the second is the frame's fourth).
    wcount: DFF<Bits<2>>,
    tagged_q: DFF<Bit>,
    vid_q: DFF<Bits<12>>,
    incoming: Signal<Local, Bits<WORD_BITS>>,
    room: Signal<Local, Bit>,
    data: Signal<Local, Bits<WORD_BITS>>,
    write: Signal<Local, Bit>,
    commit: Signal<Local, Bit>,
}

impl Logic for ResultDispatcher {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, state, lookup_wait, hold0, hold1, mask, floods, wcount, tagged_q, vid_q);
        self.tag_tagged.next = self.tagged_q.q.val();
        self.tag_vid.next = self.vid_q.q.val();
        self.incoming.next = bit_cast::<WORD_BITS, 32>(self.up.data.val().get_bits::<32>(0))
            | (bit_cast::<WORD_BITS, 3>(self.up.data.val().get_bits::<3>(33)) << 32)
            | (bit_cast::<WORD_BITS, 1>(self.up.data.val().get_bit(32).into()) << 35);
        self.room.next = (!self.mask.q.val().get_bit(0) | self.out[0].ready.val())
            & (!self.mask.q.val().get_bit(1) | self.out[1].ready.val());
        self.lookup.mac.next = (bit_cast::<48, WORD_BITS>(self.hold0.q.val() & 0xFFFF_FFFF_u64) << 16)
            | bit_cast::<48, WORD_BITS>((self.hold1.q.val() & 0xFFFF_FFFF_u64) >> 16);
        self.flooded.next = self.floods.q.val();
        self.up.ready.next = false;
        self.data.next = self.hold0.q.val();
        self.write.next = false;
        self.commit.next = false;
        match self.state.q.val().index() {
            0 => {
                self.up.ready.next = true;
                if self.up.valid.val() {
                    self.hold0.d.next = self.incoming.val();
                    self.state.d.next = 1.into();
                }
            }
            1 => {
                self.up.ready.next = true;
                if self.up.valid.val() {
                    self.hold1.d.next = self.incoming.val();
                    self.state.d.next = 2.into();
                }
            }
            2 => {
                // The MAC has been presented since entering this state; its result is in after
                // three clocks.
                self.lookup_wait.d.next = self.lookup_wait.q.val() + 1;
                if self.lookup_wait.q.val() == 3 {
                    if self.hold0.q.val().get_bit(24) | !self.lookup.hit.val() {
                        self.mask.d.next = 3.into();
                        self.floods.d.next = self.floods.q.val() + 1;
                    } else if self.lookup.port.val() {
                        self.mask.d.next = 2.into();
                    } else {
                        self.mask.d.next = 1.into();
                    }
                    self.state.d.next = 3.into();
                }
            }
            3 => {
                if self.room.val() {
                    self.write.next = true;
                    self.state.d.next = 4.into();
                }
            }
            4 => {
                self.data.next = self.hold1.q.val();
                if self.room.val() {
                    self.write.next = true;
                    if self.hold1.q.val().get_bit(35) {
                        self.commit.next = true;
                        self.state.d.next = 0.into();
                    } else {
                        self.wcount.d.next = 0.into();
                        self.state.d.next = 5.into();
                    }
                }
            }
            _ => {
                self.data.next = self.incoming.val();
                self.up.ready.next = self.room.val();
                if self.room.val() & self.up.valid.val() {
                    self.write.next = true;
                    if self.wcount.q.val() == 1 {
                        self.tagged_q.d.next = self.up.data.val().get_bits::<16>(16) == 0x8100;
                        self.vid_q.d.next = self.up.data.val().get_bits::<12>(0);
                    }
                    if self.wcount.q.val() != 2 {
                        self.wcount.d.next = self.wcount.q.val() + 1;
                    }
                    if self.up.data.val().get_bit(32) {
                        self.commit.next = true;
                        self.state.d.next = 0.into();
                    }
                }
            }
        }
        for i in 0..2 {
            self.out[i].data.next = self.data.val();
            self.out[i].enable.next = self.write.val() & self.mask.q.val().get_bit(i);
            self.out[i].commit.next =
                self.commit.val() & self.mask.q.val().get_bit(i) & self.gate_pass.val().get_bit(i);
            self.out[i].drop.next = self.commit.val() & self.mask.q.val().get_bit(i) & !self.gate_pass.val().get_bit(i);
        }
    }
}
