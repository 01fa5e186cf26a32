//! [`RequestAck`]: a question from one clock and its answer from another (a request and an
//! acknowledge that each carry data).
//!
//! Source side: `start` (taken while not `busy`) sends `question` (`Q` bits, held in a register
//! until the answer is back) and sets `busy`; when the answer has crossed back, `answer` (`A`
//! bits, a register) holds it, `busy` falls, and `done` is high for one clock (the clock
//! after the answer was loaded). Destination side: `pending` while a question waits, `asked`
//! is the question (stable while `pending`), and `reply` with `reply_data` answers it (loaded
//! into a register of the destination clock, held until the next question).
//!
//! Guarantee: each `done` delivers the answer to the question of the `start` before it, never
//! an earlier one: the source's request and acknowledge toggles count the questions, and an
//! answer is taken only once its acknowledge matches the request. Latency: about three clocks
//! of each side plus the destination's reply time.
//!
//! Paths between the clocks: the toggles into their first flip-flops; `asked` (the source's
//! question register, stable from two destination clocks before `pending` until the reply);
//! the destination's answer register into `answer` (stable from a source period before it is
//! sampled until the next question).

use rust_hdl::prelude::*;

/// A request/acknowledge with a `Q`-bit question and an `A`-bit answer.
#[derive(LogicBlock, Default)]
pub struct RequestAck<const Q: usize, const A: usize> {
    /// Source clock.
    pub src_clock: Signal<In, Clock>,
    /// Ask `question` (ignored while `busy`).
    pub start: Signal<In, Bit>,
    /// The question.
    pub question: Signal<In, Bits<Q>>,
    /// A question is out.
    pub busy: Signal<Out, Bit>,
    /// The last answer (a register).
    pub answer: Signal<Out, Bits<A>>,
    /// The answer to the last question has just been loaded into `answer` (one clock).
    pub done: Signal<Out, Bit>,
    /// Destination clock.
    pub dst_clock: Signal<In, Clock>,
    /// A question waits for its reply.
    pub pending: Signal<Out, Bit>,
    /// The question (the source's register; use it while `pending`).
    pub asked: Signal<Out, Bits<Q>>,
    /// Answer the pending question with `reply_data` (ignored unless `pending`).
    pub reply: Signal<In, Bit>,
    /// The answer.
    pub reply_data: Signal<In, Bits<A>>,
    req: DFF<Bit>,
    q_hold: DFF<Bits<Q>>,
    ack_s1: DFF<Bit>,
    ack_s2: DFF<Bit>,
    ack_seen: DFF<Bit>,
    a_out: DFF<Bits<A>>,
    done_q: DFF<Bit>,
    req_d1: DFF<Bit>,
    req_d2: DFF<Bit>,
    ack: DFF<Bit>,
    a_hold: DFF<Bits<A>>,
}

impl<const Q: usize, const A: usize> Logic for RequestAck<Q, A> {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, src_clock, req, q_hold, ack_s1, ack_s2, ack_seen, a_out, done_q);
        dff_setup!(self, dst_clock, req_d1, req_d2, ack, a_hold);
        // Source.
        self.ack_s1.d.next = self.ack.q.val();
        self.ack_s2.d.next = self.ack_s1.q.val();
        self.busy.next = self.req.q.val() != self.ack_seen.q.val();
        if self.start.val() & !self.busy.val() {
            self.q_hold.d.next = self.question.val();
            self.req.d.next = !self.req.q.val();
        }
        self.done_q.d.next = false;
        if self.ack_s2.q.val() != self.ack_seen.q.val() {
            self.a_out.d.next = self.a_hold.q.val();
            self.ack_seen.d.next = self.ack_s2.q.val();
            self.done_q.d.next = true;
        }
        self.answer.next = self.a_out.q.val();
        self.done.next = self.done_q.q.val();
        // Destination.
        self.req_d1.d.next = self.req.q.val();
        self.req_d2.d.next = self.req_d1.q.val();
        self.pending.next = self.req_d2.q.val() != self.ack.q.val();
        self.asked.next = self.q_hold.q.val();
        if self.pending.val() & self.reply.val() {
            self.a_hold.d.next = self.reply_data.val();
            self.ack.d.next = self.req_d2.q.val();
        }
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::cdc::two_clocks::{lint, Rng, TwoClocks, PERIODS};

    /// The source asks numbered questions at random times (sometimes at once when the last is
    /// done); the destination replies after a random delay with the question's number and a
    /// function of it. Every `done` brings the answer to the question just asked. The question
    /// register is stable for a destination period before `pending` rises, and the answer
    /// register for a source period before the source loads it (what keeps their bits together
    /// on the chip).
    #[test]
    fn every_answer_is_to_its_own_question() {
        for periods in PERIODS {
            let mut b = RequestAck::<12, 24>::default();
            b.connect_all();
            let mut clocks = TwoClocks::new(periods);
            let mut rng = Rng(0xdead_beef);
            let (mut asked, mut answered) = (0u64, 0u64);
            let mut out: Option<u64> = None;
            let mut wait = 0u32;
            let f = |q: u64| (q << 12) | ((q * 37 + 5) & 0xfff);
            let (mut q_changed, mut a_changed) = (0u64, 0u64);
            let (mut q, mut a, mut was_pending) = (b.q_hold.q.val(), b.a_hold.q.val(), false);
            while answered < 400 {
                let e = clocks.next_edge();
                if e.clock == 0 && e.rising && b.ack_s2.q.val() != b.ack_seen.q.val() {
                    assert!(clocks.now - a_changed >= periods[0], "periods {periods:?}: answer changed too late");
                }
                if e.clock == 0 {
                    b.src_clock.next = e.rising.into();
                    assert!(simulate(&mut b, 100));
                    if e.rising {
                        if b.q_hold.q.val() != q {
                            q = b.q_hold.q.val();
                            q_changed = clocks.now;
                        }
                        if b.done.val() {
                            assert!(!b.busy.val());
                            assert_eq!(b.answer.val().to_u64(), f(out.unwrap()), "periods {periods:?}");
                            answered += 1;
                            out = None;
                        }
                        b.start.next = false;
                        if out.is_none() && !b.busy.val() && !rng.one_in(3) {
                            asked += 1;
                            let q = asked & 0xfff;
                            b.start.next = true;
                            b.question.next = q.into();
                            out = Some(q);
                        }
                        assert!(simulate(&mut b, 100));
                    }
                } else {
                    b.dst_clock.next = e.rising.into();
                    assert!(simulate(&mut b, 100));
                    if e.rising {
                        if b.a_hold.q.val() != a {
                            a = b.a_hold.q.val();
                            a_changed = clocks.now;
                        }
                        if b.pending.val() && !was_pending {
                            assert!(
                                clocks.now - q_changed >= periods[1],
                                "periods {periods:?}: question changed too late"
                            );
                        }
                        was_pending = b.pending.val();
                        b.reply.next = false;
                        if b.pending.val() {
                            if wait == 0 {
                                wait = 1 + rng.next() % 6;
                            }
                            wait -= 1;
                            if wait == 0 {
                                b.reply.next = true;
                                b.reply_data.next = f(b.asked.val().to_u64()).into();
                            }
                        }
                        assert!(simulate(&mut b, 100));
                    }
                }
                assert!(clocks.now < 1_000_000_000, "periods {periods:?}: stuck after {answered} answers");
            }
            assert_eq!(asked, answered + u64::from(out.is_some()));
        }
    }

    #[test]
    fn lints_clean() {
        let mut b = RequestAck::<8, 40>::default();
        b.connect_all();
        lint("RequestAck<8, 40>", &generate_verilog(&b));
    }
}
