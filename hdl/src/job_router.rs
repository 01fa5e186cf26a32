//! Several jobs on one switch (docs/switch.md §8): the router in front of one core per job.
//!
//! A received frame is a job's when it is IPv4 (EtherType 0x0800, after one 802.1Q tag if it has
//! one, whose VID the job's core then checks; version 4, IHL 5), UDP, to the switch's IPv4 address
//! (job 0's register 0x02), to a SwitchML port, with an IPv4 total length of at least 30 and at
//! least 44 bytes (48 tagged: the SwitchML header's first two bytes), and
//! its source IPv4 address is one of the job's n workers' with one of the job's worker ports as UDP
//! source port, or its parent's address and port (`spotagg_spec::multi_job::route`, the
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
//! and keeps what it needs of each job: n (0x03), `worker_port` and `worker_ports` (0x08), the parent (0x0A,
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
    /// `worker_ports` − 1 (0 after reset: one port).
    wports: DFF<Bits<8>>,
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
            wports: Default::default(),
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
        dff_setup!(self, clock, n, wport, wports, si, p_ip, p_ctl, port_eq, parent_hit, hit_q);
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
                        self.wports.d.next = self.cfg.data.val().get_bits::<8>(16);
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
        // One of the job's worker ports: the offset from `worker_port` (mod 2^16) at most
        // `worker_ports` − 1 (docs/switch.md §1 7.5).
        self.port_eq.d.next =
            (self.src_port.val() - (self.wport.q.val() ^ 0xBEE0)) <= bit_cast::<16, 8>(self.wports.q.val());
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::{frame_words, Beat, Rng};
    use crate::step::settle;
    use spotagg_driver::config::{ParentConfig, WorkerEntry};
    use spotagg_driver::wire::{Ipv4Addr, MacAddr, PayloadSize};
    use spotagg_driver::JobConfig;
    use spotagg_spec::multi_job::{route, Route};
    use std::collections::VecDeque;

    /// Where the contract sends a frame.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    enum Dest {
        Core(usize),
        Dropped,
    }

    /// One job as the router keeps it: the worker table, n, `worker_port`, the parent registers.
    #[derive(Clone)]
    struct JobModel {
        ips: [u32; 32],
        n: usize,
        port: u16,
        /// `worker_ports` − 1.
        ports_m1: u16,
        parent_ip: u32,
        parent_ctl: u32,
    }

    impl JobModel {
        /// The job the registers describe, as far as routing goes (the workers' addresses,
        /// `worker_port`, the parent where the router is built with the tree leaf and bit 31 of
        /// 0x0D is set); the rest is an example job's.
        fn config(&self, tree: bool) -> JobConfig {
            let mut job = JobConfig::example(1, PayloadSize::B256, 1);
            job.workers = self.ips[..self.n]
                .iter()
                .map(|&ip| WorkerEntry { ip: Ipv4Addr::from(ip), mac: MacAddr([0x02, 0, 0, 0, 0, 1]) })
                .collect();
            job.worker_port = self.port;
            job.worker_ports = self.ports_m1 + 1;
            job.parent = (tree && self.parent_ctl >> 31 == 1).then(|| ParentConfig {
                ip: Ipv4Addr::from(self.parent_ip),
                mac: MacAddr([0x02, 0, 0, 0, 0, 2]),
                port: self.parent_ctl as u16,
                rank: 0,
            });
            job
        }
    }

    /// What the configuration writes leave in the router (the module doc's registers); where a
    /// frame goes is the specification's ([`spotagg_spec::multi_job::route`]) for the jobs they
    /// describe.
    struct Model {
        tree: bool,
        si: u32,
        jobs: [JobModel; 2],
    }

    impl Model {
        fn new(tree: bool) -> Self {
            let job = JobModel { ips: [0; 32], n: 0, port: 0xBEE0, ports_m1: 0, parent_ip: 0, parent_ctl: 0xBEE0 };
            Model { tree, si: 0, jobs: [job.clone(), job] }
        }

        /// A configuration write for job `sel` (none for a job the router is not built for).
        fn write(&mut self, sel: usize, address: u8, data: u32) {
            if sel >= 2 {
                return;
            }
            let job = &mut self.jobs[sel];
            match address {
                0x02 if sel == 0 => self.si = data,
                0x03 => job.n = (data & 0x3F) as usize,
                0x08 => {
                    job.port = data as u16;
                    job.ports_m1 = (data >> 16 & 0xFF) as u16;
                }
                0x0A => job.parent_ip = data,
                0x0D => job.parent_ctl = data,
                a if a >= 0x80 && a % 4 == 0 => job.ips[usize::from((a - 0x80) / 4)] = data,
                _ => {}
            }
        }

        fn route(&self, f: &[u8]) -> Dest {
            let jobs = self.jobs.clone().map(|j| j.config(self.tree));
            match route(Ipv4Addr::from(self.si), &jobs, f) {
                Route::Job(j) => Dest::Core(j),
                Route::NoJob => Dest::Dropped,
                Route::FirstJob => Dest::Core(0),
            }
        }
    }

    /// The addresses and ports the configuration gives the two jobs, for the frames.
    struct Setup {
        si: u32,
        /// Written as job 1's register 0x02: not the router's switch address.
        other_si: u32,
        /// Job 0's 32 workers (n = 32).
        w0: Vec<u32>,
        /// Job 1's 6 workers; its entry 0 is job 0's worker 3 (one host in both jobs).
        w1: Vec<u32>,
        /// Job 1's entries 6..10: written, but beyond n.
        stale1: Vec<u32>,
        /// Job 1's entry 2 before it was rewritten.
        replaced: u32,
        /// Data of MAC writes (0x81 + 4r, 0x82 + 4r), sent as source addresses.
        decoys: Vec<u32>,
        port0: u16,
        port1: u16,
        /// Job 0's parent registers, bit 31 clear (no parent).
        p0: (u32, u16),
        /// Job 1's parent (bit 31 set).
        p1: (u32, u16),
    }

    /// A 32-bit value not yet in `used`.
    fn fresh(rng: &mut Rng, used: &mut Vec<u32>) -> u32 {
        loop {
            let v = rng.next() as u32;
            if v != 0 && !used.contains(&v) {
                used.push(v);
                return v;
            }
        }
    }

    /// The two jobs' configuration writes `(sel, address, data)`, with registers the router
    /// ignores, MAC writes, a rewritten entry and n, and writes for no job in between.
    fn configuration(rng: &mut Rng) -> (Setup, Vec<(usize, u8, u32)>) {
        let mut used = Vec::new();
        let si = fresh(rng, &mut used);
        let other_si = fresh(rng, &mut used);
        let w0: Vec<u32> = (0..32).map(|_| fresh(rng, &mut used)).collect();
        let mut w1: Vec<u32> = (0..6).map(|_| fresh(rng, &mut used)).collect();
        w1[0] = w0[3];
        let stale1: Vec<u32> = (0..4).map(|_| fresh(rng, &mut used)).collect();
        let replaced = fresh(rng, &mut used);
        let decoys: Vec<u32> = (0..8).map(|_| fresh(rng, &mut used)).collect();
        let port0 = 0xC000 | rng.below(0x1000) as u16;
        let port1 = 0xD000 | rng.below(0x1000) as u16;
        let p0 = (fresh(rng, &mut used), 0xBEE0 | rng.below(16) as u16);
        let p1 = (fresh(rng, &mut used), 0xBEE0 | rng.below(16) as u16);
        // Bits 31..24 are not kept; 23..16 are `worker_ports` − 1: job 0 takes 4 ports (SwitchML's
        // worker threads), job 1 two.
        let high = |rng: &mut Rng, ports_m1: u32| rng.next() as u32 & 0xFF00_0000 | ports_m1 << 16;
        let mut w = vec![
            (0, 0x00, rng.next() as u32),
            (0, 0x01, rng.next() as u32),
            (0, 0x02, si),
            (1, 0x02, other_si),
            (2, 0x02, rng.next() as u32),
            (0, 0x03, 32),
            (1, 0x03, 20),
            (0, 0x04, 1),
            (1, 0x05, 30),
            (0, 0x07, 0),
            (1, 0x07, 0x0123),
            (0, 0x08, high(rng, 3) | u32::from(port0)),
            (1, 0x08, high(rng, 1) | u32::from(port1)),
            (3, 0x08, rng.next() as u32),
            (0, 0x09, 7),
            (0, 0x0A, p0.0),
            (0, 0x0D, 3 << 16 | u32::from(p0.1)),
            (1, 0x0A, p1.0),
            (1, 0x0B, rng.next() as u32),
            (1, 0x0D, 1 << 31 | 5 << 16 | u32::from(p1.1)),
        ];
        for (r, &ip) in w0.iter().enumerate() {
            let a = 0x80 + 4 * r as u8;
            w.push((0, a, ip));
            w.push((0, a + 1, decoys[r % 8] & 0xFFFF));
            w.push((0, a + 2, decoys[(r + 1) % 8]));
        }
        for (r, &ip) in w1.iter().chain(&stale1).enumerate() {
            let a = 0x80 + 4 * r as u8;
            w.push((1, a, if r == 2 { replaced } else { ip }));
            w.push((1, a + 2, decoys[r % 8]));
        }
        w.push((2, 0x80 + 4 * 7, decoys[0]));
        w.push((1, 0x80 + 4 * 2, w1[2]));
        w.push((1, 0x03, 6));
        (Setup { si, other_si, w0, w1, stale1, replaced, decoys, port0, port1, p0, p1 }, w)
    }

    /// A source for a SwitchML frame: (address, UDP source port, what it is).
    fn source(rng: &mut Rng, s: &Setup) -> (u32, u16, String) {
        let pick = |rng: &mut Rng, v: &[u32]| v[rng.below(v.len() as u64) as usize];
        let other_port = |rng: &mut Rng| loop {
            // Often just outside a range, else anywhere outside both.
            let p = match rng.below(3) {
                0 => {
                    [s.port0.wrapping_sub(1), s.port0 + 4, s.port1.wrapping_sub(1), s.port1 + 2][rng.below(4) as usize]
                }
                _ => rng.next() as u16,
            };
            if p.wrapping_sub(s.port0) >= 4 && p.wrapping_sub(s.port1) >= 2 {
                return p;
            }
        };
        match rng.below(22) {
            0..=4 => {
                let (r, t) = (rng.below(32) as usize, rng.below(4) as u16);
                (s.w0[r], s.port0 + t, format!("job 0 worker {r}, its port {t}"))
            }
            5..=8 => {
                let r = rng.below(6) as usize;
                (s.w1[r], s.port1, format!("job 1 worker {r}"))
            }
            9 => (s.p1.0, s.p1.1, "job 1 parent".into()),
            10 => (s.p0.0, s.p0.1, "job 0 parent registers, no parent".into()),
            11 => {
                let ip = [rng.next() as u32, pick(rng, &s.decoys), 0, s.other_si, s.si][rng.below(5) as usize];
                let port = [s.port0, s.port1, rng.next() as u16][rng.below(3) as usize];
                (ip, port, "unknown address".into())
            }
            12 | 13 => {
                let ip = if rng.one_in(2) { pick(rng, &s.w0) } else { pick(rng, &s.w1) };
                (ip, other_port(rng), "worker, wrong source port".into())
            }
            14 => (pick(rng, &s.stale1), s.port1, "job 1 entry beyond n".into()),
            15 => (s.replaced, s.port1, "job 1 entry before its rewrite".into()),
            16 => (pick(rng, &s.w0[4..]), s.port1, "job 0 worker, job 1's port".into()),
            17 => (pick(rng, &s.w1[1..]), s.port0, "job 1 worker, job 0's port".into()),
            18 => {
                if rng.one_in(2) {
                    (s.p1.0, other_port(rng), "job 1 parent address, wrong port".into())
                } else {
                    (pick(rng, &s.w1), s.p1.1, "job 1 worker, the parent's port".into())
                }
            }
            _ => {
                let r = rng.below(6) as usize;
                (s.w1[r], s.port1 + 1, format!("job 1 worker {r}, its second port"))
            }
        }
    }

    /// An Ethernet header: destination and source MAC, an optional 802.1Q tag, the EtherType.
    fn ethernet(rng: &mut Rng, tag: Option<u16>, ethertype: u16) -> Vec<u8> {
        let mut f: Vec<u8> = (0..12).map(|_| rng.next() as u8).collect();
        if let Some(tci) = tag {
            f.extend(0x8100u16.to_be_bytes());
            f.extend(tci.to_be_bytes());
        }
        f.extend(ethertype.to_be_bytes());
        f
    }

    /// One random frame and what it is.
    fn frame(rng: &mut Rng, s: &Setup) -> (Vec<u8>, String) {
        let tag = rng.one_in(3).then(|| rng.next() as u16);
        let tagged = if tag.is_some() { ", tagged" } else { "" };
        match rng.below(14) {
            0 => {
                // ARP request for the switch's address.
                let mut f = ethernet(rng, tag, 0x0806);
                f.extend([0, 1, 8, 0, 6, 4, 0, 1]);
                f.extend((0..10).map(|_| rng.next() as u8));
                f.extend([0; 6]);
                f.extend(s.si.to_be_bytes());
                if rng.one_in(2) {
                    f.resize(f.len() + 18, 0);
                }
                let kind = format!("ARP{tagged}, {} bytes", f.len());
                (f, kind)
            }
            1 => {
                // ICMP echo request from a worker to the switch.
                let mut f = ethernet(rng, tag, 0x0800);
                let len = 28 + rng.below(40) as usize;
                f.extend([0x45, 0, 0, len as u8, 0, 1, 0, 0, 64, 1, 0, 0]);
                f.extend(s.w0[0].to_be_bytes());
                f.extend(s.si.to_be_bytes());
                f.extend([8, 0]);
                f.extend((0..len - 22).map(|_| rng.next() as u8));
                let kind = format!("ICMP echo{tagged}, {} bytes", f.len());
                (f, kind)
            }
            2 => {
                // Not IPv4: IPv6, 802.1ad outer tag, random EtherType.
                let et = [0x86DD, 0x88A8, rng.next() as u16][rng.below(3) as usize];
                let mut f = ethernet(rng, tag, et);
                let len = 1 + rng.below(100) as usize;
                f.extend((0..len).map(|_| rng.next() as u8));
                let kind = format!("EtherType {et:#06x}{tagged}, {} bytes", f.len());
                (f, kind)
            }
            _ => switchml(rng, s, tag),
        }
    }

    /// A SwitchML-port UDP frame to the switch, from a random source, its length and one header
    /// field at random (a runt, a frame just short of or at the length the router needs, a
    /// wrong field).
    fn switchml(rng: &mut Rng, s: &Setup, tag: Option<u16>) -> (Vec<u8>, String) {
        let (src, sport, mut kind) = source(rng, s);
        let t = if tag.is_some() { 4 } else { 0 };
        if tag.is_some() {
            kind += ", tagged";
        }
        let len = match rng.below(10) {
            0 => 1 + rng.below(43 + t) as usize,
            1 | 2 => 44 + t as usize - 1 - rng.below(3) as usize,
            3 | 4 => 44 + t as usize,
            _ => 44 + t as usize + rng.below(120) as usize,
        };
        let mut et = 0x0800u16;
        let mut vihl = 0x45u8;
        let mut total = (len.saturating_sub(14 + t as usize)).max(30) as u16;
        let mut proto = 17u8;
        let mut dst = s.si;
        let mut dport = 0xBEE0 | rng.below(16) as u16;
        let mut double = false;
        if rng.one_in(3) {
            match rng.below(9) {
                0 => {
                    et = 0x86DD;
                    kind += ", EtherType 0x86dd";
                }
                1 => {
                    double = true;
                    kind += ", two tags";
                }
                2 => {
                    vihl = [0x46, 0x65, 0x44][rng.below(3) as usize];
                    kind += &format!(", version/IHL {vihl:#04x}");
                }
                3 => {
                    total = 20 + rng.below(11) as u16;
                    kind += &format!(", total length {total}");
                }
                4 => {
                    proto = [6, 1, 0][rng.below(3) as usize];
                    kind += &format!(", protocol {proto}");
                }
                5 => {
                    dst = [s.other_si, rng.next() as u32, s.w0[0]][rng.below(3) as usize];
                    kind += ", to another address";
                }
                6 => {
                    dport = [0xBEF0, 0xBED0 | rng.below(16) as u16, 0x3EE0, rng.next() as u16][rng.below(4) as usize];
                    kind += &format!(", to port {dport:#06x}");
                }
                _ => {
                    dport = 0xBEEF;
                    kind += ", to port 0xbeef";
                }
            }
        }
        let mut f = ethernet(rng, tag, et);
        if double {
            f.truncate(12);
            f.extend([0x81, 0x00, 0x0A, 0xBC, 0x81, 0x00, 0x00, 0x05, 0x08, 0x00]);
        }
        f.extend([vihl, 0]);
        f.extend(total.to_be_bytes());
        f.extend([rng.next() as u8, rng.next() as u8, 0x40, 0, 64, proto, rng.next() as u8, rng.next() as u8]);
        f.extend(src.to_be_bytes());
        f.extend(dst.to_be_bytes());
        f.extend(sport.to_be_bytes());
        f.extend(dport.to_be_bytes());
        f.extend((total.wrapping_sub(20)).to_be_bytes());
        f.extend([rng.next() as u8, rng.next() as u8, 0x10 | rng.below(4) as u8, rng.next() as u8]);
        while f.len() < len {
            f.push(rng.next() as u8);
        }
        f.truncate(len);
        kind += &format!(", {len} bytes");
        (f, kind)
    }

    /// A configuration write at one rising edge.
    fn write(b: &mut JobRouter<2>, sel: usize, address: u8, data: u32) {
        b.sel.next = (sel as u64).into();
        b.cfg.write.next = true;
        b.cfg.address.next = u64::from(address).into();
        b.cfg.data.next = u64::from(data).into();
        tick!(&mut *b);
        b.cfg.write.next = false;
        settle(b);
    }

    /// A case the run must hold: what it is, and whether a frame is one.
    type Cover<'a> = (&'a str, &'a dyn Fn(&Sent) -> bool);

    /// One frame of the run.
    struct Sent {
        len: usize,
        tagged: bool,
        words: Vec<Beat>,
        kind: String,
        dest: Dest,
        /// The words the router holds before it may pass any on (11, 12 tagged, or all).
        held: usize,
    }

    /// Configures a router built with the tree leaf if `tree`, sends it `count` frames with
    /// random gaps on `rx` and random back-pressure on the cores, clears `unknown` halfway, and
    /// checks every beat against the model. Returns the frames sent to core 0, core 1, dropped.
    fn run(tree: bool, seed: u64, count: usize) -> [usize; 3] {
        let mut rng = Rng(seed);
        let mut b = JobRouter::<2>::new(tree);
        b.connect_all();
        b.rx.offer(false, (0, false, 1));
        b.cfg.write.next = false;
        for o in &mut b.out {
            o.ready.next = true;
        }
        settle(&mut b);
        tick!(&mut b);
        let mut model = Model::new(tree);
        let (setup, writes) = configuration(&mut rng);
        for &(sel, address, data) in &writes {
            write(&mut b, sel, address, data);
            model.write(sel, address, data);
        }
        let frames: Vec<Sent> = (0..count)
            .map(|_| {
                let (bytes, kind) = frame(&mut rng, &setup);
                let tagged = bytes.len() >= 14 && bytes[12..14] == [0x81, 0x00];
                let words = frame_words(&bytes);
                let held = words.len().min(if tagged { 12 } else { 11 });
                Sent { len: bytes.len(), tagged, words, kind, dest: model.route(&bytes), held }
            })
            .collect();
        let mut stats = [0; 3];
        for f in &frames {
            stats[match f.dest {
                Dest::Core(j) => j,
                Dest::Dropped => 2,
            }] += 1;
        }
        // Frames due at each core, in order, and the beat of the first that is next.
        let mut due: [VecDeque<usize>; 2] = Default::default();
        let mut at = [0usize; 2];
        // A beat offered to a core that did not take it, which must stay.
        let mut waiting: [Option<Beat>; 2] = [None; 2];
        let mut taken = vec![0usize; count];
        let (mut k, mut i) = (0usize, 0usize);
        // Dropped frames whose decision is made, since `unknown` was last cleared.
        let mut unknown = 0u64;
        let mut cleared = false;
        let mut stall = [0u64; 2];
        let mut cycle = 0u64;
        loop {
            let drained = due.iter().all(|d| d.is_empty()) && k > 0 && taken[k - 1] == frames[k - 1].words.len();
            if k == count / 2 && i == 0 && !cleared && drained {
                // Only bit 1 of job 0's control register clears `unknown`.
                b.rx.offer(false, (0, false, 1));
                for (sel, data, what) in [(1, 2, "job 1's clear"), (0, 1, "job 0's slot clear"), (3, 2, "no job's")] {
                    write(&mut b, sel, 0x06, data);
                    assert_eq!(b.unknown.val().index() as u64, unknown, "{what} changed unknown");
                }
                write(&mut b, 0, 0x06, 2);
                assert_eq!(b.unknown.val().index(), 0, "job 0's counter clear left unknown");
                unknown = 0;
                cleared = true;
            }
            if k == count && drained {
                break;
            }
            assert!(cycle < 100 * count as u64 + 1000, "stuck at frame {k} beat {i}, cores due {due:?}");
            // Inputs: a gap on rx now and then (and, for the clear, until all is out), the cores
            // stalled now and then, sometimes for a while.
            let hold = k == count || (k == count / 2 && i == 0 && !cleared);
            let offer = !hold && !rng.one_in(5);
            let beat = frames.get(k).map_or((0, false, 1), |f| f.words[i]);
            b.rx.offer(offer, beat);
            for (o, stall) in b.out.iter_mut().zip(&mut stall) {
                if *stall > 0 {
                    *stall -= 1;
                } else if rng.one_in(40) {
                    *stall = 1 + rng.below(30);
                }
                o.ready.next = *stall == 0 && !rng.one_in(4);
            }
            settle(&mut b);
            for j in 0..2 {
                let o = &b.out[j];
                let offered = (o.data.val().index() as u64, o.last.val(), o.bytes.val().index() as u64);
                if let Some(w) = waiting[j] {
                    assert!(
                        o.valid.val() && offered == w,
                        "cycle {cycle}: core {j}'s beat {w:?} changed before it was taken"
                    );
                }
                waiting[j] = None;
                if !o.valid.val() {
                    continue;
                }
                let Some(&n) = due[j].front() else {
                    // The beat is of the frame rx is on or of the one before it.
                    let on = if i > 0 { k } else { k.saturating_sub(1) };
                    let near: Vec<String> =
                        (on.saturating_sub(1)..=on).map(|n| format!("frame {n} ({})", frames[n].kind)).collect();
                    panic!(
                        "cycle {cycle}: core {j} offered {offered:?} with no frame due to it; the frames in the router: {}",
                        near.join(", ")
                    );
                };
                let f = &frames[n];
                let what = format!("frame {n} ({}), to {:?}", f.kind, f.dest);
                assert_eq!(offered, f.words[at[j]], "{what}: beat {} at core {j}", at[j]);
                assert!(
                    at[j] > 0 || taken[n] >= f.held,
                    "{what}: first beat at core {j} after {} of the {} header words",
                    taken[n],
                    f.held
                );
                if o.ready.val() {
                    at[j] += 1;
                    if at[j] == f.words.len() {
                        due[j].pop_front();
                        at[j] = 0;
                    }
                } else {
                    waiting[j] = Some(offered);
                }
            }
            if b.rx.moves() {
                let f = &frames[k];
                if i == 0 {
                    // The previous frame is decided: `unknown` counts it if it was dropped.
                    if k > 0 {
                        let p = &frames[k - 1];
                        assert_eq!(
                            b.unknown.val().index() as u64,
                            unknown,
                            "unknown after frame {} ({}), to {:?}",
                            k - 1,
                            p.kind,
                            p.dest
                        );
                    }
                    if let Dest::Core(j) = f.dest {
                        due[j].push_back(k);
                    }
                }
                taken[k] += 1;
                i += 1;
                if i == f.words.len() {
                    unknown += u64::from(f.dest == Dest::Dropped);
                    k += 1;
                    i = 0;
                }
            }
            tick!(&mut b);
            cycle += 1;
        }
        // Nothing more comes out; the router is idle; `unknown` counts the drops.
        b.rx.offer(false, (0, false, 1));
        for _ in 0..20 {
            for o in &mut b.out {
                o.ready.next = !rng.one_in(2);
            }
            settle(&mut b);
            for (j, o) in b.out.iter().enumerate() {
                assert!(!o.valid.val(), "core {j} offered a beat after the last frame");
            }
            tick!(&mut b);
        }
        assert!(!b.busy.val(), "busy after the last frame");
        assert_eq!(b.unknown.val().index() as u64, unknown, "unknown after the last frame");
        assert!(cleared);
        // The run holds the cases at the rule's edges.
        let parent = if tree { Dest::Core(1) } else { Dest::Dropped };
        let covers: [Cover; 6] = [
            ("job 1's, 44 bytes", &|f| f.dest == Dest::Core(1) && !f.tagged && f.len == 44),
            ("job 1's, tagged, 48 bytes", &|f| f.dest == Dest::Core(1) && f.tagged && f.len == 48),
            ("dropped, 44 bytes (48 tagged)", &|f| f.dest == Dest::Dropped && f.len == 44 + 4 * usize::from(f.tagged)),
            ("from job 1's worker, 1 to 3 bytes short", &|f| {
                f.dest == Dest::Core(0)
                    && f.kind.starts_with("job 1 worker ")
                    && (41..44).contains(&(f.len - 4 * usize::from(f.tagged)))
            }),
            ("from the host in both jobs, to job 1", &|f| {
                f.dest == Dest::Core(1) && f.kind.starts_with("job 1 worker 0")
            }),
            ("from job 1's parent", &|f| f.dest == parent && f.kind.starts_with("job 1 parent,")),
        ];
        for (what, cover) in covers {
            assert!(frames.iter().any(cover), "no frame {what} to {parent:?} (tree: {tree})");
        }
        stats
    }

    /// Two jobs configured through the writes the router keeps (and some it ignores), then a
    /// few hundred frames — SwitchML-port frames from each job's workers and parent, unknown
    /// sources, wrong source ports, entries beyond n, tagged or not, short, with a wrong field;
    /// ARP, ICMP, non-IPv4 — under back-pressure: each frame reaches, whole and unchanged, in
    /// order, the core the module doc's rule names (only after its header words are held), or is
    /// dropped and counted in `unknown`; nothing else comes out. The same without the tree leaf,
    /// where a parent's frames are no job's.
    #[test]
    fn routes_frames_as_the_model_of_the_contract() {
        let [to0, to1, dropped] = run(true, 0x9e37_79b9_7f4a_7c15, 400);
        assert!(to0 > 100 && to1 > 40 && dropped > 40, "to core 0 {to0}, to core 1 {to1}, dropped {dropped}");
        let [to0, to1, dropped] = run(false, 0x2545_f491_4f6c_dd1d, 160);
        assert!(to0 > 20 && to1 > 10 && dropped > 10, "to core 0 {to0}, to core 1 {to1}, dropped {dropped}");
    }
}
