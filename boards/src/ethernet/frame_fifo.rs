//! A store-and-forward frame FIFO with independent write and read clocks.
//!
//! Words are [`WORD_BITS`] wide ([`word`] gives the layout: 32 data bits, first byte on top,
//! the valid byte count of the last word, `last`, and two routing bits). The writer appends
//! words (`write`, a [`FrameWriteSink`]; a FIFO of `W` < [`WORD_BITS`] keeps each word's low `W`
//! bits) and ends each frame with `write.commit` (keep it) or `write.drop` (discard it); only
//! committed frames are ever visible to the reader, so a reader that sees `read.valid` can
//! take a whole frame at one word a clock without a gap.
//!
//! - Write side (`write_clock`): the inputs are registered (a word reaches the RAM one clock
//!   after it is offered); `write.ready` is high while a word offered now will fit (a
//!   registered, conservative flag: it may be low with one or two words of room left).
//!   A word written without room is lost and marks the frame *overflowed*: its commit then
//!   drops it instead and counts it in `overflow_drops` (a frame dropped for capacity). A
//!   writer that cannot wait (a receive MAC) uses this; one that can (in the core's clock
//!   domain) waits on `write.ready`. `write.commit`/`write.drop` may come with the frame's
//!   last `write.enable` or alone.
//! - Read side (`read_clock`): first-word-fall-through: `read.valid`/`read.data` show the
//!   oldest committed word, taken on a rising edge with `read.ready` high. Words are fetched
//!   ahead into a four-word output buffer through the RAM's output register, so `read.valid`
//!   is a flip-flop, `read.data` a 4:1 multiplexer of flip-flops, and `read.ready` reaches no
//!   RAM input; a word a clock with `read.ready` held high.
//! - Crossing: the committed write pointer and the read pointer each cross into the other
//!   clock domain by a request/acknowledge handshake ([`PointerSync`]); the pointer is held
//!   stable while a request is in flight, so no multi-bit value is sampled while it changes.
//!   A commit becomes readable about 8 read clocks later; freed room is seen by the writer
//!   about 6 write clocks later. With one clock for both sides the structure is unchanged.
//! - Capacity: `2^A` words in dual-clock `DP16KD`s ([`FifoRam`]: 512 words of 36 bits take
//!   one, 1024 words of 38 bits three, 2048 words of 36 bits four); a frame longer than the
//!   FIFO always overflows.

use crate::ecp5::FifoRam;
use crate::ethernet::stream::ValidReadySource;
use rust_hdl::prelude::*;

/// Width of a FIFO word.
pub const WORD_BITS: usize = 38;

/// Layout of a FIFO word.
pub mod word {
    /// Bits 31..0: data, first byte in bits 31..24.
    pub const DATA: usize = 0;
    /// Bits 34..32: valid bytes of the last word (1..=4).
    pub const BYTES: usize = 32;
    /// Bit 35: last word of the frame.
    pub const LAST: usize = 35;
    /// Bit 36: the frame goes to the core.
    pub const TO_CORE: usize = 36;
    /// Bit 37: the frame goes to the other port (bridged).
    pub const TO_BRIDGE: usize = 37;

    /// A full word of `data` (four valid bytes), the frame's last if `last` (the FIFOs' tests).
    #[cfg(test)]
    pub(crate) fn full(data: u32, last: bool) -> u64 {
        u64::from(data) | (4 << BYTES) | (u64::from(last) << LAST)
    }
}

/// Carries an `N`-bit value from one clock domain to another by request/acknowledge.
///
/// `dst_value` follows `src_value` with a delay of a few clocks of both domains; every value it
/// takes is one `src_value` held (the newest at the time of a request, intermediate values
/// may be skipped). Suited to pointers that only grow.
#[derive(LogicBlock, Default)]
pub struct PointerSync<const N: usize> {
    /// Source clock.
    pub src_clock: Signal<In, Clock>,
    /// Value in the source domain.
    pub src_value: Signal<In, Bits<N>>,
    /// Destination clock.
    pub dst_clock: Signal<In, Clock>,
    /// The value in the destination domain.
    pub dst_value: Signal<Out, Bits<N>>,
    hold: DFF<Bits<N>>,
    req: DFF<Bit>,
    ack_s1: DFF<Bit>,
    ack_s2: DFF<Bit>,
    req_d1: DFF<Bit>,
    req_d2: DFF<Bit>,
    ack: DFF<Bit>,
    out: DFF<Bits<N>>,
}

impl<const N: usize> Logic for PointerSync<N> {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, src_clock, hold, req, ack_s1, ack_s2);
        dff_setup!(self, dst_clock, req_d1, req_d2, ack, out);
        // Two-flop synchronizers: the acknowledge into the source domain, the request into
        // the destination domain.
        self.ack_s1.d.next = self.ack.q.val();
        self.ack_s2.d.next = self.ack_s1.q.val();
        self.req_d1.d.next = self.req.q.val();
        self.req_d2.d.next = self.req_d1.q.val();
        if (self.req.q.val() == self.ack_s2.q.val()) & (self.hold.q.val() != self.src_value.val()) {
            self.hold.d.next = self.src_value.val();
            self.req.d.next = !self.req.q.val();
        }
        if self.req_d2.q.val() != self.ack.q.val() {
            self.out.d.next = self.hold.q.val();
            self.ack.d.next = self.req_d2.q.val();
        }
        self.dst_value.next = self.out.q.val();
    }
}

/// The filling end of a frame FIFO's write port, in the writer's clock: words are written
/// while `enable`, the frame is kept with `commit` on its last word, `ready` says there is room
/// for another word. A block that fills a FIFO has a `FrameWriter`, the port that owns the
/// FIFO a [`FrameWriteSink`]; the owner joins them.
#[derive(LogicInterface, Default)]
#[join = "FrameWriteSink"]
pub struct FrameWriter {
    /// Word.
    pub data: Signal<Out, Bits<WORD_BITS>>,
    /// Write the word.
    pub enable: Signal<Out, Bit>,
    /// The word is the frame's last: keep the frame.
    pub commit: Signal<Out, Bit>,
    /// Discard the frame written since the last commit (with its last word or alone).
    pub drop: Signal<Out, Bit>,
    /// Room for a word.
    pub ready: Signal<In, Bit>,
}

/// The FIFO's end of a [`FrameWriter`].
#[derive(LogicInterface, Default)]
#[join = "FrameWriter"]
pub struct FrameWriteSink {
    /// Word.
    pub data: Signal<In, Bits<WORD_BITS>>,
    /// Write the word.
    pub enable: Signal<In, Bit>,
    /// The word is the frame's last: keep the frame.
    pub commit: Signal<In, Bit>,
    /// Discard the frame written since the last commit (with its last word or alone).
    pub drop: Signal<In, Bit>,
    /// Room for a word.
    pub ready: Signal<Out, Bit>,
}

/// Words of the read side's output buffer (RAM read, RAM output register, buffer: a word a
/// clock needs three in flight).
const OUT_WORDS: u64 = 4;

/// The frame FIFO with `2^A` words of `W` bits; `P = A + 1` (pointer width) must be given as
/// well. `W` is [`WORD_BITS`] where the routing bits are needed, 36 (one DP16KD per 512 words)
/// where they are not.
#[derive(LogicBlock)]
pub struct FrameFifo<const W: usize, const A: usize, const P: usize> {
    /// Write clock.
    pub write_clock: Signal<In, Clock>,
    /// The frames in (`ready`: room for a word); each word keeps its low `W` bits.
    pub write: FrameWriteSink,
    /// Frames dropped because they did not fit (write clock domain).
    pub overflow_drops: Signal<Out, Bits<32>>,
    /// Read clock.
    pub read_clock: Signal<In, Clock>,
    /// The committed words, oldest first (`valid` a flip-flop, `data` a 4:1 multiplexer of
    /// flip-flops).
    pub read: ValidReadySource<W>,
    /// Committed words not yet taken as the read side knows them (read clock domain, a
    /// flip-flop: one clock old), for arbitration by fill level.
    pub read_fill: Signal<Out, Bits<P>>,
    ram: FifoRam<W, A>,
    commit_sync: PointerSync<P>,
    read_sync: PointerSync<P>,
    // Write side.
    in_data: DFF<Bits<W>>,
    in_enable: DFF<Bit>,
    in_commit: DFF<Bit>,
    in_drop: DFF<Bit>,
    wr_ptr: DFF<Bits<P>>,
    commit_ptr: DFF<Bits<P>>,
    overflow: DFF<Bit>,
    drops: DFF<Bits<32>>,
    room: DFF<Bit>,
    ready: DFF<Bit>,
    used: Signal<Local, Bits<P>>,
    wrote: Signal<Local, Bit>,
    // Read side.
    rd_ptr: DFF<Bits<P>>,
    fetched: DFF<Bit>,
    staged: DFF<Bit>,
    buf0: DFF<Bits<W>>,
    buf1: DFF<Bits<W>>,
    buf2: DFF<Bits<W>>,
    buf3: DFF<Bits<W>>,
    head: DFF<Bits<2>>,
    tail: DFF<Bits<2>>,
    held: DFF<Bits<3>>,
    held_nz: DFF<Bit>,
    credit: DFF<Bits<3>>,
    fill: DFF<Bits<P>>,
    fetch: Signal<Local, Bit>,
    pop: Signal<Local, Bit>,
    room_margin: Constant<Bits<P>>,
    ready_margin: Constant<Bits<P>>,
    out_words: Constant<Bits<3>>,
}

impl<const W: usize, const A: usize, const P: usize> Default for FrameFifo<W, A, P> {
    fn default() -> Self {
        assert_eq!(P, A + 1, "FrameFifo<{W}, {A}, {P}>: P must be A + 1");
        assert!(W > word::LAST, "FrameFifo<{W}, ..>: a word needs at least {} bits", word::LAST + 1);
        assert!(W <= WORD_BITS, "FrameFifo<{W}, ..>: a word has at most {WORD_BITS} bits");
        Self {
            write_clock: Default::default(),
            write: Default::default(),
            overflow_drops: Default::default(),
            read_clock: Default::default(),
            read: Default::default(),
            read_fill: Default::default(),
            ram: Default::default(),
            commit_sync: Default::default(),
            read_sync: Default::default(),
            in_data: Default::default(),
            in_enable: Default::default(),
            in_commit: Default::default(),
            in_drop: Default::default(),
            wr_ptr: Default::default(),
            commit_ptr: Default::default(),
            overflow: Default::default(),
            drops: Default::default(),
            room: Default::default(),
            ready: Default::default(),
            used: Default::default(),
            wrote: Default::default(),
            rd_ptr: Default::default(),
            fetched: Default::default(),
            staged: Default::default(),
            buf0: Default::default(),
            buf1: Default::default(),
            buf2: Default::default(),
            buf3: Default::default(),
            head: Default::default(),
            tail: Default::default(),
            held: Default::default(),
            held_nz: Default::default(),
            credit: Default::default(),
            fill: Default::default(),
            fetch: Default::default(),
            pop: Default::default(),
            room_margin: Constant::new(((1u64 << A) - 1).into()),
            ready_margin: Constant::new(((1u64 << A) - 2).into()),
            out_words: Constant::new(OUT_WORDS.into()),
        }
    }
}

impl<const W: usize, const A: usize, const P: usize> Logic for FrameFifo<W, A, P> {
    #[hdl_gen]
    fn update(&mut self) {
        // Write side: the inputs are registered, the RAM is written from registers, and the
        // room flags are registered comparisons of the previous clock's fill (`room`: the
        // registered word fits; `ready`: a word offered now will fit when it is written).
        dff_setup!(
            self,
            write_clock,
            in_data,
            in_enable,
            in_commit,
            in_drop,
            wr_ptr,
            commit_ptr,
            overflow,
            drops,
            room,
            ready
        );
        self.ram.write_clock.next = self.write_clock.val();
        self.commit_sync.src_clock.next = self.write_clock.val();
        self.read_sync.dst_clock.next = self.write_clock.val();
        self.in_data.d.next = bit_cast::<W, WORD_BITS>(self.write.data.val());
        self.in_enable.d.next = self.write.enable.val();
        self.in_commit.d.next = self.write.commit.val();
        self.in_drop.d.next = self.write.drop.val();
        self.used.next = self.wr_ptr.q.val() - self.read_sync.dst_value.val();
        self.room.d.next = self.used.val() < self.room_margin.val();
        self.ready.d.next = self.used.val() < self.ready_margin.val();
        self.write.ready.next = self.ready.q.val();
        self.overflow_drops.next = self.drops.q.val();
        self.wrote.next = self.in_enable.q.val() & self.room.q.val() & !self.overflow.q.val();
        self.ram.write_address.next = bit_cast::<A, P>(self.wr_ptr.q.val());
        self.ram.write_data.next = self.in_data.q.val();
        self.ram.write_enable.next = self.wrote.val();
        if self.wrote.val() {
            self.wr_ptr.d.next = self.wr_ptr.q.val() + 1;
        }
        if self.in_enable.q.val() & !self.room.q.val() {
            self.overflow.d.next = true;
        }
        if self.in_drop.q.val() {
            self.wr_ptr.d.next = self.commit_ptr.q.val();
            self.overflow.d.next = false;
        } else if self.in_commit.q.val() {
            if self.overflow.q.val() | (self.in_enable.q.val() & !self.room.q.val()) {
                self.wr_ptr.d.next = self.commit_ptr.q.val();
                self.overflow.d.next = false;
                self.drops.d.next = self.drops.q.val() + 1;
            } else if self.wrote.val() {
                self.commit_ptr.d.next = self.wr_ptr.q.val() + 1;
            } else {
                self.commit_ptr.d.next = self.wr_ptr.q.val();
            }
        }
        self.commit_sync.src_value.next = self.commit_ptr.q.val();
        // Read side: the RAM address is a register; a word is fetched while the words held
        // and in flight leave room in the output buffer (`credit`, counted before this clock's
        // pop, so `read.ready` reaches no RAM input); the RAM's output register (two clocks
        // after the fetch) goes into the buffer, which shows its oldest word.
        dff_setup!(
            self, read_clock, rd_ptr, fetched, staged, buf0, buf1, buf2, buf3, head, tail, held, held_nz, credit, fill
        );
        self.ram.read_clock.next = self.read_clock.val();
        self.commit_sync.dst_clock.next = self.read_clock.val();
        self.read_sync.src_clock.next = self.read_clock.val();
        self.fetch.next =
            (self.rd_ptr.q.val() != self.commit_sync.dst_value.val()) & (self.credit.q.val() < self.out_words.val());
        self.ram.read_address.next = bit_cast::<A, P>(self.rd_ptr.q.val());
        if self.fetch.val() {
            self.rd_ptr.d.next = self.rd_ptr.q.val() + 1;
        }
        self.fetched.d.next = self.fetch.val();
        self.staged.d.next = self.fetched.q.val();
        if self.staged.q.val() {
            match self.tail.q.val().index() {
                0 => self.buf0.d.next = self.ram.read_data.val(),
                1 => self.buf1.d.next = self.ram.read_data.val(),
                2 => self.buf2.d.next = self.ram.read_data.val(),
                _ => self.buf3.d.next = self.ram.read_data.val(),
            }
            self.tail.d.next = self.tail.q.val() + 1;
        }
        match self.head.q.val().index() {
            0 => self.read.data.next = self.buf0.q.val(),
            1 => self.read.data.next = self.buf1.q.val(),
            2 => self.read.data.next = self.buf2.q.val(),
            _ => self.read.data.next = self.buf3.q.val(),
        }
        // held != 0 kept in its own flip-flop (held_nz), so read.valid is a register.
        self.read.valid.next = self.held_nz.q.val();
        self.pop.next = self.held_nz.q.val() & self.read.ready.val();
        self.held_nz.d.next =
            self.staged.q.val() | (self.held.q.val() >= 2) | ((self.held.q.val() == 1) & !self.pop.val());
        if self.pop.val() {
            self.head.d.next = self.head.q.val() + 1;
        }
        if self.staged.q.val() & !self.pop.val() {
            self.held.d.next = self.held.q.val() + 1;
        } else if !self.staged.q.val() & self.pop.val() {
            self.held.d.next = self.held.q.val() - 1;
        }
        if self.fetch.val() & !self.pop.val() {
            self.credit.d.next = self.credit.q.val() + 1;
        } else if !self.fetch.val() & self.pop.val() {
            self.credit.d.next = self.credit.q.val() - 1;
        }
        self.fill.d.next = self.commit_sync.dst_value.val() - self.rd_ptr.q.val();
        self.read_fill.next = self.fill.q.val();
        // The read pointer the writer sees counts words fetched (they are out of the RAM).
        self.read_sync.src_value.next = self.rd_ptr.q.val();
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use word::full as w;

    /// Writes frames (one clock for both sides), some dropped, one too long; reads them back.
    #[test]
    fn whole_frames_only_and_overflow_counted() {
        let mut f = FrameFifo::<WORD_BITS, 4, 5>::default();
        f.connect_all();
        // (words, commit?)
        let frames: Vec<(Vec<u32>, bool)> = vec![
            ((0..5).collect(), true),
            ((10..13).collect(), false),
            ((20..40).collect(), true), // 20 words > 16: overflow
            ((50..52).collect(), true),
        ];
        let mut seq = vec![];
        for (words, keep) in &frames {
            for (i, &x) in words.iter().enumerate() {
                let last = i + 1 == words.len();
                seq.push((Some(w(x, last)), last && *keep, last && !*keep));
            }
            for _ in 0..3 {
                seq.push((None, false, false));
            }
        }
        let mut got = vec![];
        for cycle in 0..400 {
            let (word, commit, drop) = seq.get(cycle).cloned().unwrap_or((None, false, false));
            f.write.enable.next = word.is_some();
            f.write.data.next = word.unwrap_or(0).into();
            f.write.commit.next = commit;
            f.write.drop.next = drop;
            // The reader stalls now and then.
            f.read.ready.next = cycle % 5 != 0;
            f.write_clock.next = false.into();
            f.read_clock.next = false.into();
            assert!(simulate(&mut f, 1000));
            if f.read.valid.val() && f.read.ready.val() {
                got.push(f.read.data.val().to_u64());
            }
            f.write_clock.next = true.into();
            f.read_clock.next = true.into();
            assert!(simulate(&mut f, 1000));
        }
        let expect: Vec<u64> = (0..5).map(|x| w(x, x == 4)).chain((50..52).map(|x| w(x, x == 51))).collect();
        assert_eq!(got, expect);
        assert_eq!(f.overflow_drops.val().to_u32(), 1);
    }

    /// Write and read clocks of unrelated periods (8.0 ns and 7.3 ns, then 6.1 ns and 9.7 ns):
    /// frames of random lengths, a few dropped, with a reader that stalls; every committed
    /// frame comes out whole and in order, and the pointers' crossings lose nothing.
    #[test]
    fn two_unrelated_clocks() {
        for (tw, tr) in [(8000u64, 7300u64), (6100, 9700)] {
            let mut f = FrameFifo::<WORD_BITS, 5, 6>::default();
            f.connect_all();
            let mut rng = 0x1234_5678u32;
            let mut next = move || {
                rng ^= rng << 13;
                rng ^= rng >> 17;
                rng ^= rng << 5;
                rng
            };
            // (word, commit, drop) per write clock; frames of 2..=12 words, every fifth dropped.
            let (mut seq, mut expect) = (vec![], vec![]);
            let mut x = 0u32;
            for k in 0..60 {
                let len = 2 + next() as usize % 11;
                let keep = k % 5 != 4;
                for i in 0..len {
                    let last = i + 1 == len;
                    seq.push((Some(w(x, last)), last && keep, last && !keep));
                    if keep {
                        expect.push(w(x, last));
                    }
                    x += 1;
                    if next() % 4 == 0 {
                        seq.push((None, false, false));
                    }
                }
            }
            let (mut t, mut got) = (0usize, vec![]);
            let (mut next_w, mut next_r) = (tw / 2, tr / 2);
            let (mut write_high, mut read_high) = (false, false);
            while next_w.min(next_r) < 500 * (tw + tr) {
                if next_w <= next_r {
                    next_w += tw / 2;
                    write_high = !write_high;
                    f.write_clock.next = write_high.into();
                    assert!(simulate(&mut f, 1000));
                    if write_high {
                        // After the edge: offer the next word while it fits (a waiting writer);
                        // idle clocks of the sequence pass regardless.
                        let (word, commit, drop) = seq.get(t).cloned().unwrap_or((None, false, false));
                        let go = word.is_none() || f.write.ready.val();
                        f.write.enable.next = go && word.is_some();
                        f.write.data.next = word.unwrap_or(0).into();
                        f.write.commit.next = go && commit;
                        f.write.drop.next = go && drop;
                        if go && t < seq.len() {
                            t += 1;
                        }
                        assert!(simulate(&mut f, 1000));
                    }
                } else {
                    next_r += tr / 2;
                    read_high = !read_high;
                    if read_high && f.read.valid.val() && f.read.ready.val() {
                        got.push(f.read.data.val().to_u64());
                    }
                    f.read_clock.next = read_high.into();
                    assert!(simulate(&mut f, 1000));
                    if read_high {
                        f.read.ready.next = next() % 3 != 0;
                        assert!(simulate(&mut f, 1000));
                    }
                }
            }
            assert_eq!(got.len(), expect.len(), "periods {tw}/{tr} ps");
            assert_eq!(got, expect, "periods {tw}/{tr} ps");
            assert_eq!(f.overflow_drops.val().to_u32(), 0);
        }
    }
}
