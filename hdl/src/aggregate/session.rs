//! The session state of docs/switch.md §2.1: the current epoch `E`, whether a session has been
//! opened since the job was configured (`open`), and the bitmap `J` of the ranks that joined
//! epoch `E + 1`, with the verdict on one session message.
//!
//! Contract:
//! - `configure` (a one-cycle pulse, the job's slot-state clear) sets `E = job_number`,
//!   `open = 0`, `J = 0` at its edge; it wins over a `commit` in the same cycle.
//! - A message is `rank` (< n), `is_join` (the set bit: 1 join, 0 probe) and `proposal` (its
//!   `job_number`). The verdict is registered: when the message has been stable for a cycle and
//!   no `commit` or `configure` edge came in between, `counted` (a join of `E + 1` whose rank has
//!   not joined: filed as a contribution), `silent` (a join of `E + 1` already counted: a
//!   silent duplicate) and `opens` (counted, and the n-th distinct join) describe it; a message
//!   that is neither counted nor silent (a probe, a join of another epoch) is answered with the
//!   current epoch.
//! - `commit` in a cycle where the verdict is valid applies it at that edge: a counted join
//!   sets its rank's bit; an opening join sets `E = proposal`, `open = 1`, `J = 0`, and
//!   `clear_slots` is high in that same cycle (combinational from `commit` and the registered
//!   verdict: the scoreboard starts its clear pass at the edge that opens the session).
//! - `epoch` and `open` are flip-flops: after the opening edge they give the new epoch, which
//!   is the one the opening multicast carries.
//!
//! Guarantees: nothing changes without `commit` or `configure`; a probe or a join of another
//! epoch never changes the state; the number of joins is counted beside `J` (a 6-bit counter
//! compared with the registered n − 1), so no population count is needed.

use rust_hdl::prelude::*;

/// Epoch, open flag and join bitmap, with the verdict on a session message.
#[derive(LogicBlock, Default)]
pub struct Session {
    /// Clock.
    pub clock: Signal<In, Clock>,
    /// One-cycle pulse: the job is (re)configured.
    pub configure: Signal<In, Bit>,
    /// The job's `job_number`: the epoch after (re)configuration.
    pub job_number: Signal<In, Bits<8>>,
    /// Number of workers n (1..=32).
    pub workers: Signal<In, Bits<6>>,
    /// The sender's rank.
    pub rank: Signal<In, Bits<5>>,
    /// The message is a join (set bit 1), not a probe.
    pub is_join: Signal<In, Bit>,
    /// The message's `job_number`: a join's proposed epoch.
    pub proposal: Signal<In, Bits<8>>,
    /// Apply the verdict.
    pub commit: Signal<In, Bit>,
    /// The current epoch E.
    pub epoch: Signal<Out, Bits<8>>,
    /// A session has been opened since the job was configured.
    pub open: Signal<Out, Bit>,
    /// Verdict: a join of E + 1 from a rank that had not joined (a contribution).
    pub counted: Signal<Out, Bit>,
    /// Verdict: a join of E + 1 from a rank that had joined (a silent duplicate).
    pub silent: Signal<Out, Bit>,
    /// Verdict: a counted join that is the n-th: the session opens.
    pub opens: Signal<Out, Bit>,
    /// The session opens at this edge: clear every slot.
    pub clear_slots: Signal<Out, Bit>,
    e: DFF<Bits<8>>,
    is_open: DFF<Bit>,
    joined: DFF<Bits<32>>,
    joins: DFF<Bits<6>>,
    w_m1: DFF<Bits<6>>,
    r_counted: DFF<Bit>,
    r_silent: DFF<Bit>,
    r_opens: DFF<Bit>,
    r_bit: DFF<Bits<32>>,
    next_epoch: Signal<Local, Bits<8>>,
    proposes_next: Signal<Local, Bit>,
    had: Signal<Local, Bit>,
    shifted: Signal<Local, Bits<32>>,
}

impl Logic for Session {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, e, is_open, joined, joins, w_m1, r_counted, r_silent, r_opens, r_bit);
        self.epoch.next = self.e.q.val();
        self.open.next = self.is_open.q.val();
        self.counted.next = self.r_counted.q.val();
        self.silent.next = self.r_silent.q.val();
        self.opens.next = self.r_opens.q.val();
        self.clear_slots.next = self.commit.val() & self.r_opens.q.val() & !self.configure.val();
        // The verdict, registered every cycle from the state and the message.
        self.w_m1.d.next = self.workers.val() - 1;
        self.next_epoch.next = self.e.q.val() + 1;
        self.proposes_next.next = self.is_join.val() & (self.proposal.val() == self.next_epoch.val());
        self.shifted.next = self.joined.q.val() >> bit_cast::<32, 5>(self.rank.val());
        self.had.next = self.shifted.val().get_bit(0);
        self.r_counted.d.next = self.proposes_next.val() & !self.had.val();
        self.r_silent.d.next = self.proposes_next.val() & self.had.val();
        self.r_opens.d.next = self.proposes_next.val() & !self.had.val() & (self.joins.q.val() == self.w_m1.q.val());
        self.r_bit.d.next = bits::<32>(1) << bit_cast::<32, 5>(self.rank.val());
        if self.commit.val() & self.r_counted.q.val() {
            if self.r_opens.q.val() {
                self.e.d.next = self.proposal.val();
                self.is_open.d.next = true;
                self.joined.d.next = 0.into();
                self.joins.d.next = 0.into();
            } else {
                self.joined.d.next = self.joined.q.val() | self.r_bit.q.val();
                self.joins.d.next = self.joins.q.val() + 1;
            }
        }
        if self.configure.val() {
            self.e.d.next = self.job_number.val();
            self.is_open.d.next = false;
            self.joined.d.next = 0.into();
            self.joins.d.next = 0.into();
        }
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::bench::Rng;
    use crate::step::settle;

    /// The contract's model: docs/switch.md §2.1's state and verdict.
    #[derive(Debug, Default, Clone, Copy, PartialEq)]
    struct Model {
        epoch: u8,
        open: bool,
        joined: u32,
    }

    /// What the model says of a message: (counted, silent, opens).
    impl Model {
        fn verdict(&self, n: u32, rank: u32, join: bool, proposal: u8) -> (bool, bool, bool) {
            let proposes_next = join && proposal == self.epoch.wrapping_add(1);
            let had = self.joined & (1 << rank) != 0;
            let counted = proposes_next && !had;
            (counted, proposes_next && had, counted && (self.joined | 1 << rank).count_ones() == n)
        }

        fn commit(&mut self, n: u32, rank: u32, join: bool, proposal: u8) {
            let (counted, _, opens) = self.verdict(n, rank, join, proposal);
            if opens {
                *self = Model { epoch: proposal, open: true, joined: 0 };
            } else if counted {
                self.joined |= 1 << rank;
            }
        }
    }

    fn tick(b: &mut Session) {
        tick!(b);
    }

    /// Presents a message, waits the one cycle of the registered verdict, reads it and commits
    /// it (`commit` with the verdict read); returns (counted, silent, opens, clear_slots).
    fn message(b: &mut Session, rank: u32, join: bool, proposal: u8, gap: usize) -> (bool, bool, bool, bool) {
        b.rank.next = u64::from(rank).into();
        b.is_join.next = join;
        b.proposal.next = u64::from(proposal).into();
        b.commit.next = false;
        for _ in 0..gap + 1 {
            tick(b);
        }
        settle(b);
        let v = (b.counted.val(), b.silent.val(), b.opens.val());
        b.commit.next = true;
        settle(b);
        let clear = b.clear_slots.val();
        tick(b);
        b.commit.next = false;
        settle(b);
        (v.0, v.1, v.2, clear)
    }

    /// Random messages (probes, joins of E + 1, joins of other epochs, repeated joins) from
    /// n ranks, n from 1 to 32, with reconfigurations among them: every verdict, the clear
    /// pulse, the epoch and the open flag are the model's, message after message.
    #[test]
    fn follows_the_model_of_its_contract() {
        let mut rng = Rng(0x5e55_1011);
        let mut rand = move |m: u64| rng.below(m);
        let (mut opened, mut counted, mut silent, mut answered) = (0, 0, 0, 0);
        for n in [1u32, 2, 3, 5, 8, 31, 32] {
            let mut b = Session::default();
            b.connect_all();
            b.workers.next = u64::from(n).into();
            let job = rand(256) as u8;
            b.job_number.next = u64::from(job).into();
            b.configure.next = true;
            tick(&mut b);
            b.configure.next = false;
            let mut m = Model { epoch: job, ..Default::default() };
            for step in 0..40 * n as usize + 200 {
                if rand(200) == 0 {
                    let job = rand(256) as u8;
                    b.job_number.next = u64::from(job).into();
                    b.configure.next = true;
                    tick(&mut b);
                    b.configure.next = false;
                    m = Model { epoch: job, ..Default::default() };
                }
                let rank = rand(u64::from(n)) as u32;
                let join = rand(8) != 0;
                let proposal = match rand(10) {
                    0 => rand(256) as u8,
                    1 => m.epoch,
                    _ => m.epoch.wrapping_add(1),
                };
                let want = m.verdict(n, rank, join, proposal);
                let got = message(&mut b, rank, join, proposal, rand(3) as usize);
                assert_eq!(
                    (got.0, got.1, got.2),
                    want,
                    "n {n} step {step}: rank {rank} join {join} p {proposal} {m:?}"
                );
                assert_eq!(got.3, want.2, "n {n} step {step}: clear_slots");
                m.commit(n, rank, join, proposal);
                assert_eq!(b.epoch.val().index() as u8, m.epoch, "n {n} step {step}: epoch");
                assert_eq!(b.open.val(), m.open, "n {n} step {step}: open");
                opened += usize::from(want.2);
                counted += usize::from(want.0);
                silent += usize::from(want.1);
                answered += usize::from(!want.0 && !want.1);
            }
        }
        // The sequences reached every branch.
        assert!(
            opened > 20 && counted > opened && silent > 20 && answered > 20,
            "{opened} {counted} {silent} {answered}"
        );
    }

    /// Nothing changes without `commit`: a verdict read and not committed leaves the state, and
    /// `configure` wins over a `commit` in its cycle.
    #[test]
    fn changes_only_on_commit_or_configure() {
        let mut b = Session::default();
        b.connect_all();
        b.workers.next = 1u64.into();
        b.job_number.next = 7u64.into();
        b.configure.next = true;
        tick(&mut b);
        b.configure.next = false;
        b.rank.next = 0u64.into();
        b.is_join.next = true;
        b.proposal.next = 8u64.into();
        for _ in 0..5 {
            tick(&mut b);
        }
        assert!(b.opens.val() && b.counted.val());
        assert_eq!((b.epoch.val().index(), b.open.val()), (7, false), "not committed");
        b.commit.next = true;
        b.configure.next = true;
        b.job_number.next = 3u64.into();
        settle(&mut b);
        assert!(!b.clear_slots.val(), "configure wins");
        tick(&mut b);
        b.commit.next = false;
        b.configure.next = false;
        settle(&mut b);
        assert_eq!((b.epoch.val().index(), b.open.val()), (3, false));
    }
}
