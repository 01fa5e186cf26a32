//! A free-running request/acknowledge between two clocks: the control half of a bus
//! synchronizer ([`crate::cdc::BusSync`]), for a value held in registers of the user's own
//! (an array of them, a structure).
//!
//! The source toggles `req` in every clock in which `src_load` is high, which is when the
//! acknowledge of the previous request has come back through two flip-flops; the destination
//! sees the request through two flip-flops, and in the clock in which `dst_load` is high it
//! toggles `ack`. A user loads its hold registers (source clock) with `src_load` and its
//! output registers (destination clock) from them with `dst_load`. Then each hold register
//! is stable from the clock edge at which `req` toggled (at least one destination period
//! before `dst_load`: two flip-flops) until after the edge at which the destination loads it
//! (the source changes it again only once the acknowledge has crossed back), so the output
//! registers only ever take whole values the source held, all bits from the same source
//! clock. One round takes about three clocks of each side.
//!
//! Paths between the clocks: `req` and `ack` into the first flip-flop of their synchronizer;
//! the hold registers into the output registers, which are stable for a destination period
//! at least when sampled.

use rust_hdl::prelude::*;

/// The request/acknowledge of a bus synchronizer, free-running.
#[derive(LogicBlock, Default)]
pub struct Handshake {
    /// Source clock.
    pub src_clock: Signal<In, Clock>,
    /// The source loads its hold registers in this clock.
    pub src_load: Signal<Out, Bit>,
    /// Destination clock.
    pub dst_clock: Signal<In, Clock>,
    /// The destination loads its output registers from the hold registers in this clock.
    pub dst_load: Signal<Out, Bit>,
    req: DFF<Bit>,
    ack_s1: DFF<Bit>,
    ack_s2: DFF<Bit>,
    req_d1: DFF<Bit>,
    req_d2: DFF<Bit>,
    ack: DFF<Bit>,
}

impl Logic for Handshake {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, src_clock, req, ack_s1, ack_s2);
        dff_setup!(self, dst_clock, req_d1, req_d2, ack);
        self.ack_s1.d.next = self.ack.q.val();
        self.ack_s2.d.next = self.ack_s1.q.val();
        self.src_load.next = self.req.q.val() == self.ack_s2.q.val();
        if self.src_load.val() {
            self.req.d.next = !self.req.q.val();
        }
        self.req_d1.d.next = self.req.q.val();
        self.req_d2.d.next = self.req_d1.q.val();
        self.dst_load.next = self.req_d2.q.val() != self.ack.q.val();
        if self.dst_load.val() {
            self.ack.d.next = self.req_d2.q.val();
        }
    }
}
