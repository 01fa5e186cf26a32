//! Several jobs on one switch (docs/switch.md §8): the router in front of one core per job.
//!
//! A received frame is a job's when it is IPv4 (EtherType 0x0800, after one 802.1Q tag if it has
//! one, whose VID the job's core then checks; version 4, IHL 5), UDP, to the switch's IPv4 address
//! (job 0's register 0x02), to a SwitchML port, with an IPv4 total length of at least 30 and at
//! least 44 bytes (48 tagged: the SwitchML header's first two bytes), and
//! its source IPv4 address is one of the job's n workers' with the job's `worker_port` as UDP
//! source port, or its parent's address and port (`sim::multi_job::MultiSwitch::route`, the
//! specification). Such a frame goes to that job's core only. A frame that passes those checks
//! but is no job's is dropped whole and counted (`unknown`); every other frame (ARP, ICMP, a
//! runt) goes to job 0's core, which answers or counts it. So a job's frames
//! never reach another job's slots or counters: each job has its own core.
//!
//! ```text
//! rx ─ header (11 words, 12 tagged) ─ JobMatcher per job (its table, from the configuration writes) ─ out[j]
//! ```
//!
//! The router takes a frame's first 11 words (44 bytes; 12 words when bytes 12..14 are the 802.1Q
//! TPID, every field then one word later) into registers, or fewer if the frame ends sooner; the matchers compare the source with their tables (3 clocks, all entries at
//! once); then the router replays the held words to the chosen core and passes the rest of the
//! frame through (`rx.ready` follows that core's `ready`). One frame at a time: the next frame's
//! first word is taken once the last word of this one has gone. Width 4 only (the boards' core).
//!
//! Configuration: the router sees the cores' configuration writes (`cfg`, each for job `sel`)
//! and keeps what it needs of each job: n (0x03), `worker_port` (0x08), the parent (0x0A,
//! 0x0D; only where the cores are built with the tree leaf), the workers' IPv4 addresses
//! (0x80 + 4r), and job 0's switch IPv4 address (0x02). Writing bit 1 of job 0's control
//! register (0x06) clears `unknown`. With one job (`J = 1`) the router is a wire to core 0.

use crate::config_registers::ConfigBus;
use crate::word_stream::{BeatSink, BeatSource};
use rust_hdl::prelude::*;

/// Largest number of jobs a router (and `crate::multi_core::MultiCore`) is built for.
pub const MAX_JOBS: usize = 2;

/// Words of a frame the router holds before it routes it: bytes 0..48 (44 and a tag).
pub const HEADER_WORDS: usize = 12;

/// One job's view of the configuration writes, and whether a frame's source is the job's.
#[derive(LogicBlock)]
pub struct JobMatcher {
    /// Clock.
    pub clock: Signal<In, Clock>,
    /// A configuration write for this job (`write` already qualified by the job select).
    pub cfg: ConfigBus,
    /// The frame's source IPv4 address (held while the router routes).
    pub src_ip: Signal<In, Bits<32>>,
    /// The frame's UDP source port.
    pub src_port: Signal<In, Bits<16>>,
    /// The source is the job's: registered, valid 2 clocks after `src_ip`/`src_port` settle.
    pub hit: Signal<Out, Bit>,
    /// The job's switch IPv4 address (register 0x02).
    pub switch_ip: Signal<Out, Bits<32>>,
    /// Bit 1 of a control write (0x06): clear the counters.
    pub clear_counters: Signal<Out, Bit>,
    ips: [DFF<Bits<32>>; 32],
    eq: [DFF<Bit>; 32],
    active: [DFF<Bit>; 32],
    n: DFF<Bits<6>>,
    /// `worker_port` XOR 0xBEE0 (0xBEE0 after reset, as the core's register).
    wport: DFF<Bits<16>>,
    si: DFF<Bits<32>>,
    p_ip: DFF<Bits<32>>,
    /// Register 0x0D as written, the port XOR 0xBEE0.
    p_ctl: DFF<Bits<32>>,
    port_eq: DFF<Bit>,
    parent_hit: DFF<Bit>,
    hit_q: DFF<Bit>,
    any: Signal<Local, Bit>,
    tree: Constant<Bit>,
}

impl JobMatcher {
    /// A matcher for a core built with the tree leaf if `tree`.
    pub fn new(tree: bool) -> Self {
        Self {
            clock: Default::default(),
            cfg: Default::default(),
            src_ip: Default::default(),
            src_port: Default::default(),
            hit: Default::default(),
            switch_ip: Default::default(),
            clear_counters: Default::default(),
            ips: std::array::from_fn(|_| Default::default()),
            eq: std::array::from_fn(|_| Default::default()),
            active: std::array::from_fn(|_| Default::default()),
            n: Default::default(),
            wport: Default::default(),
            si: Default::default(),
            p_ip: Default::default(),
            p_ctl: Default::default(),
            port_eq: Default::default(),
            parent_hit: Default::default(),
            hit_q: Default::default(),
            any: Default::default(),
            tree: Constant::new(tree),
        }
    }
}

impl Logic for JobMatcher {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, n, wport, si, p_ip, p_ctl, port_eq, parent_hit, hit_q);
        for i in 0..32 {
            self.ips[i].clock.next = self.clock.val();
            self.ips[i].d.next = self.ips[i].q.val();
            self.eq[i].clock.next = self.clock.val();
            self.active[i].clock.next = self.clock.val();
            // Stage 1: each entry against the source, and whether the entry is one of the n.
            self.eq[i].d.next = self.ips[i].q.val() == self.src_ip.val();
            self.active[i].d.next = self.n.q.val().index() > i;
        }
        self.clear_counters.next = false;
        if self.cfg.write.val() {
            if self.cfg.address.val().get_bit(7) {
                if bit_cast::<2, 8>(self.cfg.address.val()) == 0 {
                    for i in 0..32 {
                        if bit_cast::<5, 8>(self.cfg.address.val() >> 2).index() == i {
                            self.ips[i].d.next = self.cfg.data.val();
                        }
                    }
                }
            } else {
                match self.cfg.address.val().index() {
                    2 => {
                        self.si.d.next = self.cfg.data.val();
                    }
                    3 => {
                        self.n.d.next = bit_cast::<6, 32>(self.cfg.data.val());
                    }
                    6 => {
                        self.clear_counters.next = self.cfg.data.val().get_bit(1);
                    }
                    8 => {
                        self.wport.d.next = bit_cast::<16, 32>(self.cfg.data.val()) ^ 0xBEE0;
                    }
                    10 => {
                        self.p_ip.d.next = self.cfg.data.val();
                    }
                    13 => {
                        self.p_ctl.d.next = self.cfg.data.val() ^ 0xBEE0;
                    }
                    _ => {}
                }
            }
        }
        self.switch_ip.next = self.si.q.val();
        self.port_eq.d.next = self.src_port.val() == (self.wport.q.val() ^ 0xBEE0);
        self.parent_hit.d.next = self.tree.val()
            & self.p_ctl.q.val().get_bit(31)
            & (self.src_ip.val() == self.p_ip.q.val())
            & (self.src_port.val() == (bit_cast::<16, 32>(self.p_ctl.q.val()) ^ 0xBEE0));
        // Stage 2: any active entry equal, with the job's port; or the parent.
        self.any.next = false;
        for i in 0..32 {
            if self.eq[i].q.val() & self.active[i].q.val() {
                self.any.next = true;
            }
        }
        self.hit_q.d.next = (self.any.val() & self.port_eq.q.val()) | self.parent_hit.q.val();
        self.hit.next = self.hit_q.q.val();
    }
}

/// The router's states.
#[derive(Copy, Clone, Debug, PartialEq, Eq, LogicState)]
pub enum RouteState {
    /// Taking the frame's first words into the header registers.
    Capture,
    /// Waiting for the matchers (3 clocks).
    Match,
    /// Sending the held words to the chosen core (or dropping them).
    Replay,
    /// Passing the rest of the frame through (or dropping it).
    Pass,
}

/// The router in front of `J` cores (1..=[`MAX_JOBS`]).
#[derive(LogicBlock)]
pub struct JobRouter<const J: usize> {
    /// Clock.
    pub clock: Signal<In, Clock>,
    /// The received frames, 4 bytes a beat.
    pub rx: BeatSink<32>,
    /// To each job's core.
    pub out: [BeatSource<32>; J],
    /// The configuration writes (for job `sel`).
    pub cfg: ConfigBus,
    /// The job the configuration writes are for.
    pub sel: Signal<In, Bits<2>>,
    /// SwitchML frames to the switch of no job's (source address, source port), dropped.
    pub unknown: Signal<Out, Bits<32>>,
    /// A frame is held or being passed on (registered state; `idle` of the switch).
    pub busy: Signal<Out, Bit>,
    m: [JobMatcher; J],
    hdr: [DFF<Bits<32>>; HEADER_WORDS],
    state: DFF<RouteState>,
    count: DFF<Bits<4>>,
    h_last: DFF<Bit>,
    h_bytes: DFF<Bits<4>>,
    settle: DFF<Bits<2>>,
    dest: DFF<Bits<2>>,
    drop: DFF<Bit>,
    ri: DFF<Bits<4>>,
    unknown_c: DFF<Bits<32>>,
    src_ip: Signal<Local, Bits<32>>,
    src_port: Signal<Local, Bits<16>>,
    /// The source, registered for the matchers (the held words are still by then; the
    /// matchers' answer is ready at the decision, 3 clocks into Match).
    src_ip_q: DFF<Bits<32>>,
    src_port_q: DFF<Bits<16>>,
    switchml: Signal<Local, Bit>,
    /// `switchml`, a clock later (the held words are still by then: the decision is 3 clocks
    /// into Match), so that the frame check and the drop counter are not one path.
    switchml_q: DFF<Bit>,
    has_tag: Signal<Local, Bit>,
    /// The held words 3..=10 of an untagged frame: words 4..=11 of a tagged one.
    w: [Signal<Local, Bits<32>>; 8],
    found: Signal<Local, Bit>,
    found_j: Signal<Local, Bits<2>>,
    o_valid: Signal<Local, Bit>,
    o_data: Signal<Local, Bits<32>>,
    o_last: Signal<Local, Bit>,
    o_bytes: Signal<Local, Bits<4>>,
    o_ready: Signal<Local, Bit>,
    /// The output register: the beat offered to core `q_dest` (so the cores' input logic starts
    /// from flip-flops, not from the replay multiplexer). The data has a register for each
    /// core, loaded only with that core's beats, so that each can sit beside its core.
    q_valid: DFF<Bit>,
    q_data: [DFF<Bits<32>>; J],
    q_last: DFF<Bit>,
    q_bytes: DFF<Bits<4>>,
    q_dest: DFF<Bits<2>>,
    q_taken: Signal<Local, Bit>,
    index: [Constant<Bits<2>>; J],
    single: Constant<Bit>,
}

impl<const J: usize> JobRouter<J> {
    /// A router for `J` cores, each built with the tree leaf if `tree`.
    pub fn new(tree: bool) -> Self {
        assert!((1..=MAX_JOBS).contains(&J), "JobRouter: {J} jobs, not 1..={MAX_JOBS}");
        Self {
            clock: Default::default(),
            rx: Default::default(),
            out: std::array::from_fn(|_| Default::default()),
            cfg: Default::default(),
            sel: Default::default(),
            unknown: Default::default(),
            busy: Default::default(),
            m: std::array::from_fn(|_| JobMatcher::new(tree)),
            hdr: std::array::from_fn(|_| Default::default()),
            state: Default::default(),
            count: Default::default(),
            h_last: Default::default(),
            h_bytes: Default::default(),
            settle: Default::default(),
            dest: Default::default(),
            drop: Default::default(),
            ri: Default::default(),
            unknown_c: Default::default(),
            src_ip: Default::default(),
            src_port: Default::default(),
            switchml: Default::default(),
            switchml_q: Default::default(),
            src_ip_q: Default::default(),
            src_port_q: Default::default(),
            has_tag: Default::default(),
            w: Default::default(),
            found: Default::default(),
            found_j: Default::default(),
            o_valid: Default::default(),
            o_data: Default::default(),
            o_last: Default::default(),
            o_bytes: Default::default(),
            o_ready: Default::default(),
            q_valid: Default::default(),
            q_data: std::array::from_fn(|_| Default::default()),
            q_last: Default::default(),
            q_bytes: Default::default(),
            q_dest: Default::default(),
            q_taken: Default::default(),
            index: std::array::from_fn(|i| Constant::new((i as u64).into())),
            single: Constant::new(J == 1),
        }
    }
}

impl<const J: usize> Logic for JobRouter<J> {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self, clock, state, count, h_last, h_bytes, settle, dest, drop, ri, unknown_c, q_valid, q_last, q_bytes,
            q_dest, switchml_q, src_ip_q, src_port_q
        );
        for i in 0..HEADER_WORDS {
            self.hdr[i].clock.next = self.clock.val();
            self.hdr[i].d.next = self.hdr[i].q.val();
        }
        // The frame's fields, from the held words (bytes 26..30, 34..36 untagged; see the module
        // doc): a tag moves every field one word on.
        self.has_tag.next = self.hdr[3].q.val().get_bits::<16>(16) == 0x8100;
        for i in 0..8 {
            self.w[i].next = self.hdr[3 + i].q.val();
            if self.has_tag.val() {
                self.w[i].next = self.hdr[4 + i].q.val();
            }
        }
        self.src_ip.next = (bit_cast::<32, 16>(self.w[3].val().get_bits::<16>(0)) << 16)
            | bit_cast::<32, 16>(self.w[4].val().get_bits::<16>(16));
        self.src_port.next = self.w[5].val().get_bits::<16>(0);
        self.switchml.next = (((self.count.q.val() == 11) & !self.has_tag.val()) | (self.count.q.val() == 12))
            & (!self.h_last.q.val() | (self.h_bytes.q.val() == 4))
            & (self.w[0].val().get_bits::<16>(16) == 0x0800)
            & (self.w[0].val().get_bits::<8>(8) == 0x45)
            & (self.w[1].val().get_bits::<16>(16) >= 30)
            & (self.w[2].val().get_bits::<8>(0) == 17)
            & (((self.w[4].val().get_bits::<16>(0) == self.m[0].switch_ip.val().get_bits::<16>(16))
                & (self.w[5].val().get_bits::<16>(16) == self.m[0].switch_ip.val().get_bits::<16>(0)))
                & ((self.w[6].val().get_bits::<16>(16) & 0xFFF0) == 0xBEE0));
        self.switchml_q.d.next = self.switchml.val();
        self.src_ip_q.d.next = self.src_ip.val();
        self.src_port_q.d.next = self.src_port.val();
        // Matchers: the configuration writes of their job, the held source.
        // (No two jobs share a worker address and port, so at most one matcher hits.)
        self.found.next = false;
        self.found_j.next = 0.into();
        for i in 0..J {
            self.m[i].clock.next = self.clock.val();
            self.m[i].cfg.write.next = self.cfg.write.val() & (self.sel.val().index() == i);
            self.m[i].cfg.address.next = self.cfg.address.val();
            self.m[i].cfg.data.next = self.cfg.data.val();
            self.m[i].src_ip.next = self.src_ip_q.q.val();
            self.m[i].src_port.next = self.src_port_q.q.val();
            if self.m[i].hit.val() {
                self.found.next = true;
                self.found_j.next = self.index[i].val();
            }
        }
        if self.m[0].clear_counters.val() {
            self.unknown_c.d.next = 0.into();
        }
        self.unknown.next = self.unknown_c.q.val();
        // The output: the held words in Replay, the input in Pass, to core `dest` unless dropped.
        self.o_valid.next = false;
        self.o_data.next = self.rx.data.val();
        self.o_last.next = self.rx.last.val();
        self.o_bytes.next = self.rx.bytes.val();
        self.rx.ready.next = false;
        // The output register takes a beat when it is empty or its beat goes this cycle.
        self.q_taken.next = false;
        for i in 0..J {
            if self.q_dest.q.val().index() == i {
                self.q_taken.next = self.out[i].ready.val();
            }
        }
        self.o_ready.next = !self.q_valid.q.val() | self.q_taken.val();
        match self.state.q.val() {
            RouteState::Capture => {
                self.rx.ready.next = true;
                if self.rx.valid.val() {
                    for i in 0..HEADER_WORDS {
                        if self.count.q.val().index() == i {
                            self.hdr[i].d.next = self.rx.data.val();
                        }
                    }
                    self.count.d.next = self.count.q.val() + 1;
                    self.h_last.d.next = self.rx.last.val();
                    self.h_bytes.d.next = self.rx.bytes.val();
                    // 11 words, or 12 after a tag (word 3, held by then, says which).
                    if self.rx.last.val()
                        | ((self.count.q.val() == 10) & !self.has_tag.val())
                        | (self.count.q.val() == 11)
                    {
                        self.state.d.next = RouteState::Match;
                        self.settle.d.next = 0.into();
                    }
                }
            }
            RouteState::Match => {
                self.settle.d.next = self.settle.q.val() + 1;
                if self.settle.q.val() == 3 {
                    // Decide: the matchers have seen the held source for 3 clocks.
                    self.state.d.next = RouteState::Replay;
                    self.ri.d.next = 0.into();
                    self.dest.d.next = 0.into();
                    self.drop.d.next = false;
                    if self.switchml_q.q.val() {
                        if self.found.val() {
                            self.dest.d.next = self.found_j.val();
                        } else {
                            self.drop.d.next = true;
                            self.unknown_c.d.next = self.unknown_c.q.val() + 1;
                        }
                    }
                }
            }
            RouteState::Replay => {
                self.o_valid.next = !self.drop.q.val();
                self.o_last.next = false;
                self.o_bytes.next = 4.into();
                for i in 0..HEADER_WORDS {
                    if self.ri.q.val().index() == i {
                        self.o_data.next = self.hdr[i].q.val();
                    }
                }
                if self.ri.q.val() == self.count.q.val() - 1 {
                    self.o_last.next = self.h_last.q.val();
                    if self.h_last.q.val() {
                        self.o_bytes.next = self.h_bytes.q.val();
                    }
                }
                if self.o_ready.val() | self.drop.q.val() {
                    self.ri.d.next = self.ri.q.val() + 1;
                    if self.ri.q.val() == self.count.q.val() - 1 {
                        if self.h_last.q.val() {
                            self.state.d.next = RouteState::Capture;
                            self.count.d.next = 0.into();
                        } else {
                            self.state.d.next = RouteState::Pass;
                        }
                    }
                }
            }
            RouteState::Pass => {
                self.o_valid.next = self.rx.valid.val() & !self.drop.q.val();
                self.rx.ready.next = self.o_ready.val() | self.drop.q.val();
                if self.rx.valid.val() & (self.o_ready.val() | self.drop.q.val()) & self.rx.last.val() {
                    self.state.d.next = RouteState::Capture;
                    self.count.d.next = 0.into();
                }
            }
            _ => {
                self.state.d.next = RouteState::Capture;
            }
        }
        if self.o_ready.val() {
            self.q_valid.d.next = self.o_valid.val();
            self.q_last.d.next = self.o_last.val();
            self.q_bytes.d.next = self.o_bytes.val();
            self.q_dest.d.next = self.dest.q.val();
        }
        for i in 0..J {
            self.out[i].valid.next = self.q_valid.q.val() & (self.q_dest.q.val().index() == i);
            // Each core's own data register, loaded with its beats only: synthesis cannot share
            // it between cores (one shared register, placed by core 0, drove core 1's receive
            // buffer across the chip at 11.92 ns on the i9's clk100), and no multiplexer
            // follows it.
            self.q_data[i].clock.next = self.clock.val();
            self.q_data[i].d.next = self.q_data[i].q.val();
            if self.o_ready.val() & (self.dest.q.val().index() == i) {
                self.q_data[i].d.next = self.o_data.val();
            }
            self.out[i].data.next = self.q_data[i].q.val();
            self.out[i].last.next = self.q_last.q.val();
            self.out[i].bytes.next = self.q_bytes.q.val();
        }
        self.busy.next = (self.state.q.val() != RouteState::Capture) | (self.count.q.val() != 0) | self.q_valid.q.val();
        // One job: a wire to core 0 (the logic above is then unused and removed by synthesis).
        if self.single.val() {
            self.out[0].valid.next = self.rx.valid.val();
            self.out[0].data.next = self.rx.data.val();
            self.out[0].last.next = self.rx.last.val();
            self.out[0].bytes.next = self.rx.bytes.val();
            self.rx.ready.next = self.out[0].ready.val();
            self.busy.next = false;
        }
    }
}
