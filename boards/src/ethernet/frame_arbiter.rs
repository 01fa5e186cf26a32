//! Round-robin arbiter of whole frames between two word streams.
//!
//! Inputs and output carry [`crate::ethernet::frame_fifo`] words (the `last` bit ends a frame). A frame,
//! once started, is passed whole (the arbiter switches only after a `last` word); when both
//! inputs have a frame waiting, the one whose FIFO holds more (`fill`, compared in a register:
//! one clock old) goes first, and with equal fills they alternate (tie the
//! fills to zero for plain round robin). Serving the fuller queue first pools the two FIFOs
//! when the downstream is the bottleneck, instead of letting the busier input's FIFO fill
//! alone. `down_source` names the input the current word
//! comes from; `down_first` marks the first word of a frame.
//!
//! Timing: the chosen word, its source and its first-word flag go through a [`StreamSlice`]
//! (output register with a skid register behind it), so the output and the inputs' `ready`
//! all come from flip-flops (no combinational path from `down.ready` to an input, none from an
//! input to the output); one clock of latency, a word a clock, no bubble between frames.

use crate::ethernet::frame_fifo::WORD_BITS;
use crate::ethernet::stream::{ValidReadySink, ValidReadySource};
use crate::ethernet::stream_slice::StreamSlice;
use rust_hdl::prelude::*;

/// A word in the slice: the FIFO word, its source (bit 38) and its first-word flag (bit 39).
const TAGGED: usize = WORD_BITS + 2;

/// Two-input frame arbiter.
#[derive(LogicBlock, Default)]
pub struct FrameArbiter {
    /// Clock.
    pub clock: Signal<In, Clock>,
    /// The inputs.
    pub up: [ValidReadySink<WORD_BITS>; 2],
    /// Words waiting behind each input (its FIFO's fill).
    pub fill: [Signal<In, Bits<16>>; 2],
    /// The frames, whole.
    pub down: ValidReadySource<WORD_BITS>,
    /// Input the word comes from.
    pub down_source: Signal<Out, Bit>,
    /// First word of a frame.
    pub down_first: Signal<Out, Bit>,
    more0: DFF<Bit>,
    more1: DFF<Bit>,
    busy: DFF<Bit>,
    current: DFF<Bit>,
    prefer: DFF<Bit>,
    slice: StreamSlice<TAGGED>,
    sel: Signal<Local, Bit>,
    in_data: Signal<Local, Bits<WORD_BITS>>,
    take: Signal<Local, Bit>,
}

impl Logic for FrameArbiter {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, more0, more1, busy, current, prefer);
        clock!(self, clock, slice);
        self.more0.d.next = self.fill[0].val() > self.fill[1].val();
        self.more1.d.next = self.fill[1].val() > self.fill[0].val();
        if self.busy.q.val() {
            self.sel.next = self.current.q.val();
        } else if self.up[0].valid.val() & self.up[1].valid.val() & self.more1.q.val() {
            self.sel.next = true;
        } else if self.up[0].valid.val() & self.up[1].valid.val() & self.more0.q.val() {
            self.sel.next = false;
        } else if self.prefer.q.val() {
            self.sel.next = self.up[1].valid.val() | !self.up[0].valid.val();
        } else {
            self.sel.next = !self.up[0].valid.val() & self.up[1].valid.val();
        }
        if self.sel.val() {
            self.slice.up.valid.next = self.up[1].valid.val();
            self.in_data.next = self.up[1].data.val();
        } else {
            self.slice.up.valid.next = self.up[0].valid.val();
            self.in_data.next = self.up[0].data.val();
        }
        self.slice.up.data.next = bit_cast::<TAGGED, WORD_BITS>(self.in_data.val())
            | (bit_cast::<TAGGED, 1>(self.sel.val().into()) << 38)
            | (bit_cast::<TAGGED, 1>((!self.busy.q.val()).into()) << 39);
        // An input word is taken while the slice's skid register is empty.
        self.up[0].ready.next = self.slice.up.ready.val() & !self.sel.val();
        self.up[1].ready.next = self.slice.up.ready.val() & self.sel.val();
        self.take.next = self.slice.up.valid.val() & self.slice.up.ready.val();
        if self.take.val() {
            if self.in_data.val().get_bit(35) {
                self.busy.d.next = false;
                self.prefer.d.next = !self.sel.val();
            } else {
                self.busy.d.next = true;
                self.current.d.next = self.sel.val();
            }
        }
        self.down.valid.next = self.slice.down.valid.val();
        self.down.data.next = self.slice.down.data.val().get_bits::<WORD_BITS>(0);
        self.down_source.next = self.slice.down.data.val().get_bit(38);
        self.down_first.next = self.slice.down.data.val().get_bit(39);
        self.slice.down.ready.next = self.down.ready.val();
    }
}
