//! Round-robin arbiter of whole frames between two word streams.
//!
//! Inputs and output carry [`crate::ethernet::frame_fifo`] words (the `last` bit ends a frame). A frame,
//! once started, is passed whole (the arbiter switches only after a `last` word); when both
//! inputs have a frame waiting, the one whose FIFO holds more (`in0_fill`, `in1_fill`, compared
//! in a register: one clock old) goes first, and with equal fills they alternate (tie the
//! fills to zero for plain round robin). Serving the fuller queue first pools the two FIFOs
//! when the downstream is the bottleneck, instead of letting the busier input's FIFO fill
//! alone. `out_source` names the input the current word
//! comes from; `out_first` marks the first word of a frame.
//!
//! Timing: the output is registered with a skid register behind it, so `out_valid`,
//! `out_data`, `out_source`, `out_first` and the inputs' `ready` all come from flip-flops
//! (no combinational path from `out_ready` to an input, none from an input to the output);
//! one clock of latency, a word a clock, no bubble between frames.

use crate::ethernet::frame_fifo::WORD_BITS;
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
    /// Words waiting behind input 0 (its FIFO's fill).
    pub in0_fill: Signal<In, Bits<16>>,
    /// Words waiting behind input 1.
    pub in1_fill: Signal<In, Bits<16>>,
    more0: DFF<Bit>,
    more1: DFF<Bit>,
    busy: DFF<Bit>,
    current: DFF<Bit>,
    prefer: DFF<Bit>,
    o_valid: DFF<Bit>,
    o_data: DFF<Bits<WORD_BITS>>,
    o_source: DFF<Bit>,
    o_first: DFF<Bit>,
    s_valid: DFF<Bit>,
    s_data: DFF<Bits<WORD_BITS>>,
    s_source: DFF<Bit>,
    s_first: DFF<Bit>,
    sel: Signal<Local, Bit>,
    in_valid: Signal<Local, Bit>,
    in_data: Signal<Local, Bits<WORD_BITS>>,
    take: Signal<Local, Bit>,
    drain: Signal<Local, Bit>,
}

impl Logic for FrameArbiter {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self, clock, more0, more1, busy, current, prefer, o_valid, o_data, o_source, o_first, s_valid, s_data,
            s_source, s_first
        );
        self.more0.d.next = self.in0_fill.val() > self.in1_fill.val();
        self.more1.d.next = self.in1_fill.val() > self.in0_fill.val();
        if self.busy.q.val() {
            self.sel.next = self.current.q.val();
        } else if self.in0_valid.val() & self.in1_valid.val() & self.more1.q.val() {
            self.sel.next = true;
        } else if self.in0_valid.val() & self.in1_valid.val() & self.more0.q.val() {
            self.sel.next = false;
        } else if self.prefer.q.val() {
            self.sel.next = self.in1_valid.val() | !self.in0_valid.val();
        } else {
            self.sel.next = !self.in0_valid.val() & self.in1_valid.val();
        }
        if self.sel.val() {
            self.in_valid.next = self.in1_valid.val();
            self.in_data.next = self.in1_data.val();
        } else {
            self.in_valid.next = self.in0_valid.val();
            self.in_data.next = self.in0_data.val();
        }
        // An input word is taken while the skid register is empty.
        self.in0_ready.next = !self.s_valid.q.val() & !self.sel.val();
        self.in1_ready.next = !self.s_valid.q.val() & self.sel.val();
        self.take.next = self.in_valid.val() & !self.s_valid.q.val();
        // The output register is free this clock.
        self.drain.next = !self.o_valid.q.val() | self.out_ready.val();
        if self.take.val() {
            if self.in_data.val().get_bit(35) {
                self.busy.d.next = false;
                self.prefer.d.next = !self.sel.val();
            } else {
                self.busy.d.next = true;
                self.current.d.next = self.sel.val();
            }
        }
        if self.drain.val() {
            if self.s_valid.q.val() {
                self.o_valid.d.next = true;
                self.o_data.d.next = self.s_data.q.val();
                self.o_source.d.next = self.s_source.q.val();
                self.o_first.d.next = self.s_first.q.val();
                self.s_valid.d.next = false;
            } else {
                self.o_valid.d.next = self.take.val();
                self.o_data.d.next = self.in_data.val();
                self.o_source.d.next = self.sel.val();
                self.o_first.d.next = !self.busy.q.val();
            }
        } else if self.take.val() {
            self.s_valid.d.next = true;
            self.s_data.d.next = self.in_data.val();
            self.s_source.d.next = self.sel.val();
            self.s_first.d.next = !self.busy.q.val();
        }
        self.out_valid.next = self.o_valid.q.val();
        self.out_data.next = self.o_data.q.val();
        self.out_source.next = self.o_source.q.val();
        self.out_first.next = self.o_first.q.val();
    }
}
