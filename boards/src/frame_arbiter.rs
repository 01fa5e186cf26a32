//! Round-robin arbiter of whole frames between two word streams.
//!
//! Inputs and output carry [`crate::frame_fifo`] words (the `last` bit ends a frame). A frame,
//! once started, is passed whole (the arbiter switches only after a `last` word); when both
//! inputs have a frame waiting, they alternate. The path is combinational (no added latency,
//! no bubble between frames): `out_valid`/`out_data` are the chosen input's, and `ready` goes
//! back to it only. `out_source` names the input the current word comes from; `out_first`
//! marks the first word of a frame.

use crate::frame_fifo::WORD_BITS;
use rust_hdl::prelude::*;

/// Two-input frame arbiter.
#[derive(LogicBlock, Default)]
pub struct FrameArbiter {
    /// Clock.
    pub clock: Signal<In, Clock>,
    /// Input 0 word valid.
    pub in0_valid: Signal<In, Bit>,
    /// Input 0 word.
    pub in0_data: Signal<In, Bits<WORD_BITS>>,
    /// Input 0 word taken.
    pub in0_ready: Signal<Out, Bit>,
    /// Input 1 word valid.
    pub in1_valid: Signal<In, Bit>,
    /// Input 1 word.
    pub in1_data: Signal<In, Bits<WORD_BITS>>,
    /// Input 1 word taken.
    pub in1_ready: Signal<Out, Bit>,
    /// Output word valid.
    pub out_valid: Signal<Out, Bit>,
    /// Output word.
    pub out_data: Signal<Out, Bits<WORD_BITS>>,
    /// Input the word comes from.
    pub out_source: Signal<Out, Bit>,
    /// First word of a frame.
    pub out_first: Signal<Out, Bit>,
    /// Downstream takes the word.
    pub out_ready: Signal<In, Bit>,
    busy: DFF<Bit>,
    current: DFF<Bit>,
    prefer: DFF<Bit>,
    sel: Signal<Local, Bit>,
}

impl Logic for FrameArbiter {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, busy, current, prefer);
        if self.busy.q.val() {
            self.sel.next = self.current.q.val();
        } else if self.prefer.q.val() {
            self.sel.next = self.in1_valid.val() | !self.in0_valid.val();
        } else {
            self.sel.next = !self.in0_valid.val() & self.in1_valid.val();
        }
        self.in0_ready.next = false;
        self.in1_ready.next = false;
        if self.sel.val() {
            self.out_valid.next = self.in1_valid.val();
            self.out_data.next = self.in1_data.val();
            self.in1_ready.next = self.out_ready.val();
        } else {
            self.out_valid.next = self.in0_valid.val();
            self.out_data.next = self.in0_data.val();
            self.in0_ready.next = self.out_ready.val();
        }
        self.out_source.next = self.sel.val();
        self.out_first.next = !self.busy.q.val();
        if self.out_valid.val() & self.out_ready.val() {
            if self.out_data.val().get_bit(35) {
                self.busy.d.next = false;
                self.prefer.d.next = !self.sel.val();
            } else {
                self.busy.d.next = true;
                self.current.d.next = self.sel.val();
            }
        }
    }
}
