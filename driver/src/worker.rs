//! The all-reduce worker: a sans-I/O protocol core, in the manner of quinn-proto.
//!
//! [`AllReduce`] owns no socket and reads no clock: the caller gives it the time and every
//! SwitchML message that arrives ([`AllReduce::handle_message`], [`AllReduce::handle_timeout`])
//! and takes from it the messages to send ([`AllReduce::poll_transmit`]) and the next time it
//! must be woken up ([`AllReduce::poll_timeout`]). The blocking loop over a
//! [`Transport`](crate::transport::Transport) is [`crate::transport::drive`].
//!
//! # Protocol
//!
//! The tensor is cut into chunks of k = payload/4 elements (the last chunk is zero-padded). The
//! operation uses `w = min(window, packets)` slots. Every slot has one packet in flight; the
//! result of a slot's packet in set v releases the slot's next packet, in set 1 − v
//! (self-clocking, as SwitchML). Chunk c uses slot `c mod w`.
//!
//! Header of every packet: `msg_type` 1, the job's size code, the session's epoch (the job's
//! `job_number` without sessions),
//! `pool_index = slot | set << 15`, and `tsi` = the packet's index p in the operation (plus a
//! running base that [`Worker`] advances by the packets of each operation, so that a worker's
//! packets are numbered uniquely over many operations; for the first operation the base is 0):
//!
//! - i32 tensors: p = c, the chunk index; `e0 = e1 = 0`.
//! - f32 tensors: p = s for the priming packet of slot s (s < w), p = w + c for chunk c.
//!
//! **Exponents (f32).** Each packet carries in `e0` the exponent
//! ([`fixedpoint::exponent`]) of the NEXT chunk that will use the same slot (chunk c + w; or
//! [`fixedpoint::E_ZERO`] when there is none); the switch returns the max over the workers, and
//! that max scales that next chunk on every worker ([`fixedpoint::Scale`]). The first chunk of a
//! slot has no predecessor, so each slot starts with one **priming packet**: the slot's first
//! set, zero payload, `e0` = exponent of the slot's first chunk (chunk s), `e1 = 0`; its result
//! adds nothing and carries the chunk's `e_max`. A tensor of C chunks thus costs C + w packets.
//! `e1` of a chunk packet is the chunk's own exponent: the switch returns their max, which must
//! equal the `e_max` the chunk was scaled with; a mismatch (workers that disagree on the
//! exponents) is a [`Error::Protocol`].
//!
//! **Sets over many operations.** A slot's next set continues across operations of the same
//! [`Worker`] (a slot whose last packet went in set v starts the next operation in set 1 − v),
//! so that the switch's worker bitmaps stay valid. A fresh [`Worker`] starts every slot in set
//! 0: with `job.sessions` (the default) it first opens a session on the switch
//! (docs/switch.md §2.1: probe, join, every slot cleared when all ranks joined) and stamps the
//! session's epoch in `job_number`, so it works against a switch that served earlier runs;
//! without sessions it needs a freshly configured switch job. All ranks must run the same
//! sequence of operations with the same tensor lengths and types. After an error, the worker's
//! slot state no longer matches the switch's: make a new [`Worker`] (a new session). The
//! exceptions are [`Error::Conversion`] and [`Error::TooLarge`], returned before anything is
//! sent or any state changes: the worker goes on.
//!
//! **Failover** (docs/worker.md). With several `job.switches`, a worker that gets no result for
//! min(`job.failover_after`, [`DETECT_RTOS`] × RTO), or whose packet used up its retries, moves
//! to the next switch (never back), opens a fresh session there, runs a recovery all-reduce of
//! every rank's per-slot generation and resumes every slot in lock step from the smallest one,
//! replaying its last answered packet of a slot where it is one round ahead. The result is the
//! one the failed switch would have given, bit for bit. [`Stats`] names the serving switch and
//! each failover with its stall; [`Error::NoSwitch`] names each switch tried.
//!
//! **Retransmission.** A packet unanswered after `rto` is sent again, the same bytes. A packet
//! starts with the timeout of the worker's [`RttEstimator`] (RFC 6298: smoothed RTT plus four
//! times its variation, from the results of packets sent once, Karn's rule; `job.timeout` before
//! the first sample and as the floor); `rto` doubles on each retransmission and is capped at
//! `max(job.timeout, MAX_BACKOFF)`, and the backed-off value carries over to later packets until
//! a packet sent once is answered, or a retransmitted one about a round trip after its last
//! copy (a loss recovered: [`RttEstimator::recovered`]); samples of rounds that waited for other
//! ranks are clipped ([`crate::rtt`]). The estimator lives in the [`Worker`] and carries over to its
//! later operations. After `job.max_retries`
//! retransmissions the next expiry is an [`Error::Timeout`] naming the slot, the chunk and the
//! attempts. Results whose `pool_index` or `tsi` is not the one a slot waits for (stale, or a
//! duplicate of an answered packet), malformed messages and other jobs' messages are counted in
//! [`Stats::ignored`] and change nothing.
//!
//! **16-bit lanes** (docs/switch.md §9). [`Worker::start_f32_lanes`] with [`Lanes::I16`] sends
//! an f32 tensor as 16-bit lanes: chunks of 2k elements, each scaled with
//! [`Scale::new16`] and carried two to a 32-bit payload word; everything else (priming packets,
//! exponents, sets, retransmission, failover) is as above. The width of a message is not in its
//! bytes but in the switch port it goes to: [`AllReduce::poll_transmit`] hands out each message
//! with its [`Lanes`], and a transport sends a 16-bit one to the 16-bit twin of the switch's port
//! ([`Lanes::port`]). Session and recovery messages are 32-bit; a replay keeps its width.

use crate::config::JobConfig;
use crate::fixedpoint::{self, ConversionError, Scale, E_NOT_FINITE, E_ZERO};
use crate::rtt::RttEstimator;
use crate::wire::switchml::{
    Lanes, PoolIndex, SwitchmlPacket, SwitchmlRepr, MSG_TYPE_CONTRIBUTION, MSG_TYPE_SESSION, PREAMBLE_LEN,
};
use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// Largest retransmission timeout (unless `job.timeout` is larger).
pub const MAX_BACKOFF: Duration = Duration::from_secs(1);

/// Why an all-reduce failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The rank is not one of the job's.
    #[error("rank {rank} is not in the job (n = {n} workers)")]
    Rank {
        /// The rank asked for.
        rank: usize,
        /// Workers in the job.
        n: usize,
    },
    /// A packet got no result after every retransmission: the switch stopped answering.
    #[error("the switch stopped answering: slot {slot}, {}: no result after {attempts} attempts", describe(*.chunk))]
    Timeout {
        /// The slot.
        slot: u16,
        /// The chunk in flight, `None` for a priming packet.
        chunk: Option<usize>,
        /// Transmissions of the packet (1 + retransmissions).
        attempts: u32,
    },
    /// A value of the tensor cannot be converted to fixed point.
    #[error("cannot convert the tensor: {0}")]
    Conversion(#[from] ConversionError),
    /// The switch's answer contradicts the protocol (e.g. workers disagree on exponents).
    #[error("protocol error on slot {slot}, chunk {chunk}: {detail}")]
    Protocol {
        /// The slot.
        slot: u16,
        /// The chunk.
        chunk: usize,
        /// What went wrong.
        detail: String,
    },
    /// More packets than 32-bit packet ids can number.
    #[error("tensor of {elements} elements needs more than 2^32 packets")]
    TooLarge {
        /// Elements of the tensor.
        elements: usize,
    },
    /// A 16-bit all-reduce that the job cannot carry (docs/switch.md §9); returned before
    /// anything is sent, so the worker goes on.
    #[error("16-bit lanes: {0}")]
    Lanes16(String),
    /// The transport failed.
    #[error("transport: {0}")]
    Transport(#[from] std::io::Error),
    /// Every switch of the job's list stopped answering (with more than one switch).
    #[error("no switch answered: tried {}", .tried.join("; "))]
    NoSwitch {
        /// Each switch tried, in order, with why the worker left it.
        tried: Vec<String>,
    },
}

fn describe(chunk: Option<usize>) -> String {
    match chunk {
        Some(c) => format!("chunk {c}"),
        None => "priming packet".to_string(),
    }
}

/// What an all-reduce did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Stats {
    /// Elements of the tensor.
    pub elements: usize,
    /// Chunks of k elements.
    pub chunks: usize,
    /// Messages sent, retransmissions and priming packets included.
    pub packets_sent: u64,
    /// Messages received, ignored ones included.
    pub packets_received: u64,
    /// Retransmissions.
    pub retransmissions: u64,
    /// Packets whose result came for an earlier copy than the last retransmission, sooner than
    /// the smallest round trip after it: retransmissions found spurious (a lower bound).
    pub spurious_retransmissions: u64,
    /// Received messages ignored: stale, duplicate, malformed or of another job.
    pub ignored: u64,
    /// Time from the start to the last result.
    pub seconds: f64,
    /// The smoothed round-trip time at the end, in seconds (0 before any sample).
    pub srtt_seconds: f64,
    /// The retransmission timeout a new packet would get at the end, in seconds.
    pub rto_seconds: f64,
    /// Index (in the job's `switches`) of the switch that served the end of the operation.
    pub switch: usize,
    /// Its name (its address, or "the switch").
    pub switch_name: String,
    /// The session epoch in use at the end (`None` without sessions).
    pub epoch: Option<u8>,
    /// The failovers during the operation, in order.
    pub failovers: Vec<Failover>,
}

/// One move to the next switch of the list.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Failover {
    /// The switch left.
    pub from: usize,
    /// The switch moved to.
    pub to: usize,
    /// Why: what the worker saw of the switch it left.
    pub reason: String,
    /// From the last result of the switch left to the move.
    pub detect_seconds: f64,
    /// From the last result of the switch left to the first result of a resumed round on the
    /// new one (0 until then): the stall the training saw.
    pub stall_seconds: f64,
}

impl Stats {
    /// Payload throughput of the tensor (4 bytes per element, one way) in Gb/s.
    pub fn payload_gbps(&self) -> f64 {
        if self.seconds > 0.0 {
            self.elements as f64 * 32.0 / self.seconds / 1e9
        } else {
            0.0
        }
    }
}

/// A worker of a job: its rank and the per-slot state that persists between operations.
#[derive(Debug, Clone)]
pub struct Worker {
    job: JobConfig,
    rank: usize,
    /// Next set of each slot of the window.
    sets: Vec<u8>,
    /// `tsi` of the next operation's first packet.
    next_tsi: u32,
    /// Round-trip time and retransmission timeout, over every operation of the worker.
    rtt: RttEstimator,
    /// Results received per slot since the worker was made (wrapping): the slot's generation.
    gens: Vec<u32>,
    /// The last answered packet of each slot (another worker may still need its sum after a
    /// failover), and its lane width.
    answered: Vec<(Vec<u8>, Lanes)>,
    /// Index of the active switch in the job's list (never decreases).
    active: usize,
    /// The epoch of the open session per switch port; `None` until a session is open.
    epochs: Option<Vec<u8>>,
    /// The switches left, with the reason.
    tried: Vec<String>,
    /// Refuse f32 input with a NaN or an infinity (else it is marked, docs/switch.md §2.0).
    finite_only: bool,
}

impl Worker {
    /// A worker of rank `rank` (0..n) for a freshly configured switch job.
    pub fn new(job: JobConfig, rank: usize) -> Result<Worker, Error> {
        if rank >= job.n() {
            return Err(Error::Rank { rank, n: job.n() });
        }
        let window = usize::from(job.window.clamp(1, job.slots));
        let rtt = RttEstimator::new(job.timeout, MAX_BACKOFF);
        let epochs = (!job.sessions).then(|| vec![job.job_number]);
        Ok(Worker {
            job,
            rank,
            sets: vec![0; window],
            next_tsi: 0,
            rtt,
            gens: vec![0; window],
            answered: vec![(Vec::new(), Lanes::I32); window],
            active: 0,
            epochs,
            finite_only: false,
            tried: Vec::new(),
        })
    }
    /// Index of the active switch in the job's `switches` (0 with a single switch).
    pub fn active_switch(&self) -> usize {
        self.active
    }
    /// The epoch of the open session (of its first port), `None` before one is open or without
    /// sessions.
    pub fn epoch(&self) -> Option<u8> {
        if self.job.sessions {
            self.epochs.as_ref().map(|e| e[0])
        } else {
            None
        }
    }
    fn epoch_for(&self, slot: usize) -> u8 {
        match &self.epochs {
            Some(e) => e[slot % e.len()],
            None => self.job.job_number,
        }
    }
    /// The job.
    pub fn job(&self) -> &JobConfig {
        &self.job
    }
    /// The rank.
    pub fn rank(&self) -> usize {
        self.rank
    }
    /// The round-trip time estimator (carried over between operations).
    pub fn rtt(&self) -> &RttEstimator {
        &self.rtt
    }
    /// Whether f32 input with a NaN or an infinity is refused ([`Worker::set_finite_only`]).
    pub fn finite_only(&self) -> bool {
        self.finite_only
    }
    /// With `true`, [`Worker::start_f32`] fails on a NaN or an infinity; with `false` (the
    /// default) such a chunk is sent with the exponent [`fixedpoint::E_NOT_FINITE`] and comes
    /// back as NaN in every element on every worker (docs/switch.md §2.0), as NCCL's sum gives
    /// a GradScaler to find.
    pub fn set_finite_only(&mut self, on: bool) {
        self.finite_only = on;
    }
    /// Starts a SUM all-reduce of an f32 tensor, in place; `now` is the start time. Fails at
    /// once on a value too large (|x| ≥ 2^126), and on a NaN or an infinity when
    /// [`Worker::set_finite_only`] says so; otherwise a chunk with one comes back NaN.
    pub fn start_f32<'a>(&'a mut self, data: &'a mut [f32], now: Instant) -> Result<AllReduce<'a>, Error> {
        self.start_f32_lanes(data, Lanes::I32, now)
    }
    /// [`Worker::start_f32`] in lanes of `lanes` bits: [`Lanes::I16`] sends 2k elements a
    /// packet, each within [`Scale::new16`]'s bound (docs/worker.md), half the bytes of 32-bit
    /// lanes. Every rank must use the same width for the same tensor. Fails at once (nothing
    /// sent) when the job does not have `lanes16` or has more than
    /// [`crate::config::MAX_LANES16_WORKERS`] workers in its tree.
    pub fn start_f32_lanes<'a>(
        &'a mut self,
        data: &'a mut [f32],
        lanes: Lanes,
        now: Instant,
    ) -> Result<AllReduce<'a>, Error> {
        if lanes == Lanes::I16 {
            self.check_lanes16()?;
        }
        let k = lanes.coordinates(self.job.payload);
        let exps =
            if self.finite_only { fixedpoint::exponents(data, k)? } else { fixedpoint::exponents_or_markers(data, k)? };
        AllReduce::new(self, Data::F32 { data, exps }, lanes, now)
    }
    /// Whether the job can carry 16-bit lanes: an [`Error::Lanes16`] that says why not.
    pub fn check_lanes16(&self) -> Result<(), Error> {
        if !self.job.lanes16 {
            return Err(Error::Lanes16(
                "the job does not have lanes16 = true, so its switch drops 16-bit frames (docs/switch.md §9)".into(),
            ));
        }
        let n = self.job.scale_workers();
        if n > crate::config::MAX_LANES16_WORKERS {
            return Err(Error::Lanes16(format!(
                "the job's tree has {n} workers; 16-bit lanes serve at most {}",
                crate::config::MAX_LANES16_WORKERS
            )));
        }
        Ok(())
    }
    /// Starts a SUM all-reduce of an i32 tensor (two's-complement wrap-around), in place.
    pub fn start_i32<'a>(&'a mut self, data: &'a mut [i32], now: Instant) -> Result<AllReduce<'a>, Error> {
        AllReduce::new(self, Data::I32(data), Lanes::I32, now)
    }
}

/// A message to send ([`AllReduce::poll_transmit`]): its bytes (a UDP payload) and the lane
/// width, which says the switch port it goes to ([`Lanes::port`] of the switch's port). Derefs to
/// the bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Transmit<'a> {
    /// The SwitchML message.
    pub contents: &'a [u8],
    /// Its lane width: [`Lanes::I16`] goes to the switch's 16-bit port.
    pub lanes: Lanes,
}

impl std::ops::Deref for Transmit<'_> {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        self.contents
    }
}

enum Data<'a> {
    F32 { data: &'a mut [f32], exps: Vec<i8> },
    I32(&'a mut [i32]),
}

#[derive(Debug)]
struct Slot {
    /// Chunk in flight; `None` for the priming packet.
    chunk: Option<usize>,
    /// Set of the packet in flight.
    set: u8,
    /// `tsi` of the packet in flight.
    tsi: u32,
    /// The exponent the chunk in flight was scaled with (f32).
    e_scale: i8,
    /// The packet in flight (sent again unchanged on a timeout).
    msg: Vec<u8>,
    /// Transmissions of the packet in flight.
    attempts: u32,
    /// When the packet in flight was first handed out (the start of its round-trip sample).
    sent_at: Instant,
    /// When its last copy was handed out.
    last_sent: Instant,
    /// Current retransmission timeout.
    rto: Duration,
    /// When the packet in flight times out; `None` once the slot is finished.
    deadline: Option<Instant>,
    /// In the transmit queue.
    queued: bool,
    /// Not finished, but held back during a failover until the resume releases it.
    held: bool,
}

/// A message of the failover and session machinery in flight: a session probe or join (entry
/// t for port t), a contribution of the recovery all-reduce (entry c for chunk c, on slot c) or
/// the replay of a slot's last answered packet.
#[derive(Debug)]
struct Exchange {
    /// The slot the message names.
    slot: usize,
    /// Its set and `tsi` (what its result must carry).
    set: u8,
    tsi: u32,
    msg: Vec<u8>,
    /// Its lane width (32-bit but for the replay of a 16-bit packet).
    lanes: Lanes,
    attempts: u32,
    rto: Duration,
    deadline: Option<Instant>,
    queued: bool,
}

/// Where an operation is.
#[derive(Debug, Clone, PartialEq)]
enum Phase {
    /// Opening a session on the active switch: per port, `None` while probing, else the
    /// proposed epoch; `Some` in `open` once the port's session is open.
    Session { proposals: Vec<Option<u8>>, open: Vec<Option<u8>> },
    /// The recovery all-reduce of every rank's generations (after a failover).
    Recovery { got: Vec<Option<Vec<i32>>> },
    /// Contributions (and replays after a failover).
    Run,
}

/// `tsi` of the recovery all-reduce's packets (the same on every rank: the ranks may be in
/// different operations when a switch fails).
const RECOVERY_TSI: u32 = 0x5e55_0000;

/// Detection time in retransmission timeouts (bounded by the job's `failover_after`): about
/// three unanswered retransmissions of a packet (1 + 2 + 4 timeouts with the doubling).
pub const DETECT_RTOS: u32 = 8;

/// One all-reduce in progress (sans-I/O). Made by [`Worker::start_f32`] / [`Worker::start_i32`].
pub struct AllReduce<'a> {
    worker: &'a mut Worker,
    data: Data<'a>,
    /// The lane width of the chunks' packets.
    lanes: Lanes,
    /// Elements per chunk.
    k: usize,
    /// Slots in use.
    w: usize,
    /// Chunks.
    chunks: usize,
    /// f32 mode: slots start with a priming packet.
    priming: bool,
    tsi_base: u32,
    slots: Vec<Slot>,
    queue: VecDeque<usize>,
    /// Slots not finished.
    active: usize,
    chunks_done: usize,
    stats: Stats,
    start: Instant,
    phase: Phase,
    /// Session, recovery and replay messages in flight.
    ctl: Vec<Exchange>,
    ctl_queue: VecDeque<usize>,
    /// The first packets of the slots were loaded.
    started: bool,
    /// A failover is in progress: the session is followed by the recovery.
    recovering: bool,
    /// The last result (or the start), and the detection time then.
    last_progress: Instant,
    detect: Duration,
    /// The last result on the switch left, until the first resumed result on the new one.
    stall_from: Option<Instant>,
}

impl<'a> AllReduce<'a> {
    fn new(worker: &'a mut Worker, data: Data<'a>, lanes: Lanes, now: Instant) -> Result<AllReduce<'a>, Error> {
        let k = lanes.coordinates(worker.job.payload);
        let (elements, priming) = match &data {
            Data::F32 { data, .. } => (data.len(), true),
            Data::I32(d) => (d.len(), false),
        };
        let chunks = elements.div_ceil(k);
        let w = worker.sets.len().min(chunks);
        let packets = chunks as u64 + if priming { w as u64 } else { 0 };
        if packets > u64::from(u32::MAX) {
            return Err(Error::TooLarge { elements });
        }
        let tsi_base = worker.next_tsi;
        worker.next_tsi = worker.next_tsi.wrapping_add(packets as u32);
        let timeout = worker.rtt.rto();
        let mut op = AllReduce {
            worker,
            data,
            lanes,
            k,
            w,
            chunks,
            priming,
            tsi_base,
            slots: Vec::with_capacity(w),
            queue: VecDeque::with_capacity(w),
            active: w,
            chunks_done: 0,
            stats: Stats { elements, chunks, ..Stats::default() },
            start: now,
            phase: Phase::Run,
            ctl: Vec::new(),
            ctl_queue: VecDeque::new(),
            started: false,
            recovering: false,
            last_progress: now,
            detect: Duration::ZERO,
            stall_from: None,
        };
        op.detect = op.detection_time();
        for s in 0..w {
            op.slots.push(Slot {
                chunk: None,
                set: op.worker.sets[s],
                tsi: 0,
                e_scale: E_ZERO,
                msg: Vec::with_capacity(PREAMBLE_LEN + op.worker.job.payload.bytes()),
                attempts: 0,
                sent_at: now,
                last_sent: now,
                rto: timeout,
                deadline: None,
                queued: false,
                held: false,
            });
        }
        if w > 0 && op.worker.epochs.is_none() {
            op.begin_session(now);
        } else {
            op.start_slots(now);
        }
        op.update_stats(now);
        Ok(op)
    }

    /// Loads every slot's first packet.
    fn start_slots(&mut self, now: Instant) {
        self.started = true;
        for s in 0..self.w {
            let first = if self.priming { None } else { Some(s) };
            self.load(s, first, E_ZERO, self.worker.sets[s], now);
        }
    }

    fn detection_time(&self) -> Duration {
        (self.worker.rtt.rto() * DETECT_RTOS).min(self.worker.job.failover_after)
    }

    fn can_fail_over(&self) -> bool {
        self.worker.active + 1 < self.worker.job.switches.len()
    }

    /// The messages of the session handshake: a probe to every port in use.
    fn begin_session(&mut self, now: Instant) {
        let ports = usize::from(self.worker.job.switch_ports.max(1)).min(self.worker.sets.len()).max(1);
        self.phase = Phase::Session { proposals: vec![None; ports], open: vec![None; ports] };
        self.ctl.clear();
        self.ctl_queue.clear();
        for t in 0..ports {
            self.push_ctl(t, 0, 0, 0, None, now);
        }
    }

    /// Queues a control message on slot `slot`, set `set`, with `job_number` `job` and `tsi`:
    /// a session message (`payload` `None`: zero payload, `msg_type` 8) or a contribution.
    fn push_ctl(&mut self, slot: usize, set: u8, job: u8, tsi: u32, payload: Option<&[i32]>, now: Instant) {
        let cfg = &self.worker.job;
        let mut msg = vec![0u8; PREAMBLE_LEN + cfg.payload.bytes()];
        let mut pkt = SwitchmlPacket::new_unchecked(&mut msg[..]);
        SwitchmlRepr {
            msg_type: if payload.is_some() { MSG_TYPE_CONTRIBUTION } else { MSG_TYPE_SESSION },
            size_code: cfg.payload.code(),
            job,
            tsi,
            pool: PoolIndex { slot: slot as u16, set },
            e0: 0,
            e1: 0,
        }
        .emit(&mut pkt);
        if let Some(v) = payload {
            for (d, x) in pkt.payload_mut().chunks_exact_mut(4).zip(v) {
                d.copy_from_slice(&x.to_be_bytes());
            }
        }
        self.push_ctl_msg(slot, set, tsi, msg, Lanes::I32, now);
    }

    fn push_ctl_msg(&mut self, slot: usize, set: u8, tsi: u32, msg: Vec<u8>, lanes: Lanes, now: Instant) {
        let rto = self.worker.rtt.rto();
        let i = self.ctl.len();
        self.ctl.push(Exchange {
            slot,
            set,
            tsi,
            msg,
            lanes,
            attempts: 1,
            rto,
            deadline: Some(now + rto),
            queued: true,
        });
        self.ctl_queue.push_back(i);
    }

    /// Replaces control message `i` (same slot) by a session join of epoch `p`.
    fn rejoin(&mut self, i: usize, p: u8, now: Instant) {
        let rto = self.worker.rtt.rto();
        let e = &mut self.ctl[i];
        e.set = 1;
        retag(&mut e.msg, p, PoolIndex { slot: e.slot as u16, set: 1 });
        e.attempts = 1;
        e.rto = rto;
        e.deadline = Some(now + rto);
        enqueue(&mut e.queued, &mut self.ctl_queue, i);
    }

    /// A session reply on port `t` carrying the switch's epoch `q`.
    fn session_reply(&mut self, t: usize, q: u8, now: Instant) -> Result<(), Error> {
        let Phase::Session { proposals, open } = &mut self.phase else {
            self.stats.ignored += 1;
            return Ok(());
        };
        if t >= proposals.len() || open[t].is_some() {
            self.stats.ignored += 1;
            return Ok(());
        }
        match proposals[t] {
            // The switch's epoch is the one proposed: the session opened with this rank's join
            // (the reply may answer a repeated join or a probe that came late).
            Some(p) if q == p => {
                open[t] = Some(p);
                self.ctl[t].deadline = None;
            }
            Some(p) if q.wrapping_add(1) == p => {
                // A late answer to the probe or to an earlier join: we already propose q + 1.
                self.stats.ignored += 1;
                return Ok(());
            }
            _ => {
                let p = q.wrapping_add(1);
                proposals[t] = Some(p);
                self.rejoin(t, p, now);
                return Ok(());
            }
        }
        if open.iter().all(|o| o.is_some()) {
            let epochs: Vec<u8> = open.iter().map(|o| o.unwrap_or(0)).collect();
            self.worker.epochs = Some(epochs);
            // The opening cleared every slot of the switch: every slot starts in set 0.
            self.worker.sets.iter_mut().for_each(|v| *v = 0);
            self.ctl.clear();
            self.ctl_queue.clear();
            self.last_progress = now;
            if self.recovering {
                self.begin_recovery(now);
            } else {
                self.phase = Phase::Run;
                self.start_slots(now);
            }
        }
        Ok(())
    }

    /// The recovery all-reduce: every rank's generation of every slot of the window, rank r's
    /// at `r·W + s` (the others zero), so that the sum is every rank's generations.
    fn begin_recovery(&mut self, now: Instant) {
        let (wn, n, k) = (self.worker.sets.len(), self.worker.job.n(), self.k);
        let mut v = vec![0i32; wn * n];
        for s in 0..wn {
            v[self.worker.rank * wn + s] = self.worker.gens[s] as i32;
        }
        let chunks = (wn * n).div_ceil(k);
        self.phase = Phase::Recovery { got: vec![None; chunks] };
        for c in 0..chunks {
            let part = &v[c * k..((c + 1) * k).min(v.len())];
            let (set, epoch) = (self.worker.sets[c], self.worker.epoch_for(c));
            self.push_ctl(c, set, epoch, RECOVERY_TSI.wrapping_add(c as u32), Some(part), now);
        }
    }

    /// After the recovery all-reduce: per slot, the smallest generation m over the ranks; a
    /// rank at m + 1 first replays its last answered packet (round m + 1), then every rank goes
    /// on with its packet in flight, one set at a time.
    fn resume(&mut self, all: Vec<i32>, now: Instant) -> Result<(), Error> {
        let (wn, n) = (self.worker.sets.len(), self.worker.job.n());
        self.ctl.clear();
        self.ctl_queue.clear();
        self.phase = Phase::Run;
        if !self.started {
            self.start_slots(now);
            for slot in &mut self.slots {
                if slot.deadline.take().is_some() {
                    slot.held = true;
                }
            }
        }
        for s in 0..wn {
            let me = self.worker.gens[s];
            let (mut lo, mut hi) = (0i32, 0i32);
            for r in 0..n {
                let d = (all[r * wn + s] as u32).wrapping_sub(me) as i32;
                lo = lo.min(d);
                hi = hi.max(d);
            }
            if hi - lo > 1 {
                return Err(Error::Protocol {
                    slot: s as u16,
                    chunk: 0,
                    detail: format!(
                        "after a failover the ranks' generations of the slot differ by {} (at most 1 is possible): the ranks ran different operations",
                        hi - lo
                    ),
                });
            }
            if lo == -1 && !self.worker.answered[s].0.is_empty() {
                let (mut msg, lanes) = self.worker.answered[s].clone();
                let (set, epoch) = (self.worker.sets[s], self.worker.epoch_for(s));
                retag(&mut msg, epoch, PoolIndex { slot: s as u16, set });
                let tsi = SwitchmlRepr::parse(&SwitchmlPacket::new_unchecked(&msg[..])).tsi;
                self.push_ctl_msg(s, set, tsi, msg, lanes, now);
            } else if s < self.w && self.slots[s].held {
                self.release(s, now);
            }
        }
        self.last_progress = now;
        Ok(())
    }

    /// Sends slot `s`'s held packet again in the slot's next set, stamped with the epoch.
    fn release(&mut self, s: usize, now: Instant) {
        let (set, epoch, rto) = (self.worker.sets[s], self.worker.epoch_for(s), self.worker.rtt.rto());
        let slot = &mut self.slots[s];
        slot.held = false;
        slot.set = set;
        retag(&mut slot.msg, epoch, PoolIndex { slot: s as u16, set });
        slot.attempts = 1;
        slot.sent_at = now;
        slot.last_sent = now;
        slot.rto = rto;
        slot.deadline = Some(now + rto);
        enqueue(&mut slot.queued, &mut self.queue, s);
    }

    /// Leaves the active switch for the next one of the list (or fails naming each one tried).
    fn fail_over(&mut self, now: Instant, why: String, last: Error) -> Result<(), Error> {
        let names = self.worker.job.switch_names();
        let from = self.worker.active;
        self.worker.tried.push(format!("{} ({why})", names[from]));
        if !self.can_fail_over() {
            if names.len() == 1 {
                return Err(last);
            }
            return Err(Error::NoSwitch { tried: self.worker.tried.clone() });
        }
        self.worker.active += 1;
        self.stats.failovers.push(Failover {
            from,
            to: from + 1,
            reason: why,
            detect_seconds: now.saturating_duration_since(self.last_progress).as_secs_f64(),
            stall_seconds: 0.0,
        });
        if self.stall_from.is_none() {
            self.stall_from = Some(self.last_progress);
        }
        for slot in &mut self.slots {
            if slot.deadline.take().is_some() {
                slot.held = true;
            }
        }
        self.worker.epochs = None;
        self.recovering = true;
        self.last_progress = now;
        self.begin_session(now);
        Ok(())
    }

    /// A result on the new switch after a failover: the stall ends.
    fn resumed(&mut self, now: Instant) {
        if let Some(from) = self.stall_from.take() {
            if let Some(f) = self.stats.failovers.last_mut() {
                f.stall_seconds = now.saturating_duration_since(from).as_secs_f64();
            }
            self.recovering = false;
        }
    }

    fn update_stats(&mut self, now: Instant) {
        self.stats.seconds = now.saturating_duration_since(self.start).as_secs_f64();
        self.stats.srtt_seconds = self.worker.rtt.srtt().map_or(0.0, |d| d.as_secs_f64());
        self.stats.rto_seconds = self.worker.rtt.rto().as_secs_f64();
        self.stats.switch = self.worker.active;
        self.stats.switch_name = self.worker.job.switch_names()[self.worker.active].clone();
        self.stats.epoch = self.worker.epoch();
    }

    /// Index of the switch the operation's messages go to (the transport follows it).
    pub fn switch_index(&self) -> usize {
        self.worker.active
    }

    /// Builds the packet of `chunk` (`None`: priming) on slot `s`, set `set`, scaled with
    /// `e_scale`, and queues it.
    fn load(&mut self, s: usize, chunk: Option<usize>, e_scale: i8, set: u8, now: Instant) {
        let job = &self.worker.job;
        let rto = self.worker.rtt.rto();
        let epoch = self.worker.epoch_for(s);
        let (k, w) = (self.k, self.w);
        let p = match chunk {
            None => s,
            Some(c) if self.priming => w + c,
            Some(c) => c,
        };
        let slot = &mut self.slots[s];
        slot.chunk = chunk;
        slot.set = set;
        slot.tsi = self.tsi_base.wrapping_add(p as u32);
        slot.e_scale = e_scale;
        slot.attempts = 1;
        slot.sent_at = now;
        slot.last_sent = now;
        slot.rto = rto;
        slot.deadline = Some(now + rto);
        slot.msg.clear();
        slot.msg.resize(PREAMBLE_LEN + job.payload.bytes(), 0);
        let (e0, e1) = match (&self.data, chunk) {
            (Data::F32 { exps, .. }, None) => (exps[s], 0),
            (Data::F32 { exps, .. }, Some(c)) => (exps.get(c + w).copied().unwrap_or(E_ZERO), exps[c]),
            (Data::I32(_), _) => (0, 0),
        };
        let mut pkt = SwitchmlPacket::new_unchecked(&mut slot.msg[..]);
        SwitchmlRepr {
            msg_type: MSG_TYPE_CONTRIBUTION,
            size_code: job.payload.code(),
            job: epoch,
            tsi: slot.tsi,
            pool: PoolIndex { slot: s as u16, set },
            e0,
            e1,
        }
        .emit(&mut pkt);
        if let Some(c) = chunk {
            let range = c * k..((c + 1) * k).min(self.stats.elements);
            match &self.data {
                // A chunk that is not finite on some worker: zeros (the result is NaN anyway).
                Data::F32 { .. } if e_scale == E_NOT_FINITE => pkt.payload_mut().fill(0),
                Data::F32 { data, .. } => {
                    let scale = Scale::of_lanes(self.lanes, job.scale_workers(), e_scale);
                    let quantize = match self.lanes {
                        Lanes::I32 => fixedpoint::quantize_be,
                        Lanes::I16 => fixedpoint::quantize16_be,
                    };
                    quantize(&data[range], &scale, pkt.payload_mut());
                }
                Data::I32(data) => {
                    for (d, v) in pkt.payload_mut().chunks_exact_mut(4).zip(&data[range]) {
                        d.copy_from_slice(&v.to_be_bytes());
                    }
                }
            }
        }
        enqueue(&mut slot.queued, &mut self.queue, s);
    }

    /// The next message to send, if any, with its lane width. Call until `None` after every
    /// input.
    pub fn poll_transmit(&mut self) -> Option<Transmit<'_>> {
        let t = match pop_in_flight(&mut self.ctl_queue, &mut self.ctl, |e| (&mut e.queued, e.deadline.is_some())) {
            Some(i) => Transmit { contents: &self.ctl[i].msg, lanes: self.ctl[i].lanes },
            None => {
                let s = pop_in_flight(&mut self.queue, &mut self.slots, |s| (&mut s.queued, s.deadline.is_some()))?;
                Transmit { contents: &self.slots[s].msg, lanes: self.lanes }
            }
        };
        self.stats.packets_sent += 1;
        Some(t)
    }

    /// The lane width of the operation's chunks.
    pub fn lanes(&self) -> Lanes {
        self.lanes
    }

    /// When [`AllReduce::handle_timeout`] must be called next; `None` once done.
    pub fn poll_timeout(&self) -> Option<Instant> {
        if self.is_done() {
            return None;
        }
        let t = self.slots.iter().filter_map(|s| s.deadline).chain(self.ctl.iter().filter_map(|e| e.deadline)).min();
        if self.phase == Phase::Run && self.can_fail_over() {
            let d = self.last_progress + self.detect;
            return Some(t.map_or(d, |t| t.min(d)));
        }
        t
    }

    /// True once every chunk's result has been received (and every replay a failover needed
    /// has been answered).
    pub fn is_done(&self) -> bool {
        self.active == 0 && self.phase == Phase::Run && self.ctl.iter().all(|e| e.deadline.is_none())
    }

    /// Statistics so far (final once done).
    pub fn stats(&self) -> Stats {
        self.stats.clone()
    }

    /// Elements whose result has been received.
    pub fn elements_done(&self) -> usize {
        (self.chunks_done * self.k).min(self.stats.elements)
    }

    /// Feeds one received SwitchML message (a UDP payload). Results that do not match what a
    /// slot waits for are ignored.
    pub fn handle_message(&mut self, now: Instant, msg: &[u8]) -> Result<(), Error> {
        self.stats.packets_received += 1;
        let job = &self.worker.job;
        let Ok(pkt) = SwitchmlPacket::new_checked(msg) else {
            self.stats.ignored += 1;
            return Ok(());
        };
        let r = SwitchmlRepr::parse(&pkt);
        let s = usize::from(r.pool.slot);
        if r.size_code != job.payload.code() || pkt.payload().len() != job.payload.bytes() {
            self.stats.ignored += 1;
            return Ok(());
        }
        if r.msg_type == MSG_TYPE_SESSION {
            return self.session_reply(s, r.job, now);
        }
        if r.msg_type != MSG_TYPE_CONTRIBUTION || self.worker.epochs.is_none() || r.job != self.worker.epoch_for(s) {
            self.stats.ignored += 1;
            return Ok(());
        }
        if self.phase != Phase::Run || self.ctl.iter().any(|e| e.deadline.is_some()) {
            let found = self
                .ctl
                .iter()
                .position(|e| e.deadline.is_some() && e.slot == s && e.set == r.pool.set && e.tsi == r.tsi);
            if let Some(i) = found {
                self.ctl[i].deadline = None;
                self.worker.sets[s] ^= 1;
                match &mut self.phase {
                    Phase::Recovery { got } => {
                        got[i] = Some(pkt.elements().collect());
                        if got.iter().all(|g| g.is_some()) {
                            let all: Vec<i32> = got.iter_mut().flat_map(|g| g.take().unwrap_or_default()).collect();
                            self.resume(all, now)?;
                        }
                    }
                    _ => {
                        // A replayed packet answered: its sum is one this worker has.
                        self.resumed(now);
                        self.last_progress = now;
                        self.detect = self.detection_time();
                        if s < self.w && self.slots[s].held {
                            self.release(s, now);
                        }
                    }
                }
                self.update_stats(now);
                return Ok(());
            }
            if self.phase != Phase::Run {
                self.stats.ignored += 1;
                return Ok(());
            }
        }
        if s >= self.w
            || self.slots[s].deadline.is_none()
            || self.slots[s].set != r.pool.set
            || self.slots[s].tsi != r.tsi
        {
            self.stats.ignored += 1;
            return Ok(());
        }
        let (k, w, n) = (self.k, self.w, job.scale_workers());
        let slot = &self.slots[s];
        let (chunk, e_scale, set) = (slot.chunk, slot.e_scale, slot.set);
        // Karn's rule: only a packet sent once measures the round trip. A result sooner than
        // the smallest round trip after the last copy answers an earlier one: spurious.
        if slot.attempts == 1 {
            let rtt = now.saturating_duration_since(slot.sent_at);
            self.worker.rtt.sample(rtt);
        } else if self.worker.rtt.min_rtt().is_some_and(|m| now.saturating_duration_since(slot.last_sent) < m) {
            self.worker.rtt.spurious(now.saturating_duration_since(slot.sent_at));
            self.stats.spurious_retransmissions += 1;
        } else {
            // About a round trip after the last copy: a lost frame recovered (ends the backoff).
            self.worker.rtt.recovered(now.saturating_duration_since(slot.last_sent));
        }
        let next = match chunk {
            None => s,
            Some(c) => c + w,
        };
        if let Some(c) = chunk {
            let range = c * k..((c + 1) * k).min(self.stats.elements);
            match &mut self.data {
                Data::F32 { data, .. } => {
                    if r.e1 != e_scale {
                        return Err(Error::Protocol {
                            slot: s as u16,
                            chunk: c,
                            detail: format!(
                                "the result's e1 (max of the chunk's exponents) is {} but the chunk was scaled for {}: the workers disagree on the tensor's exponents",
                                r.e1, e_scale
                            ),
                        });
                    }
                    if e_scale == E_NOT_FINITE {
                        data[range].fill(f32::NAN);
                    } else {
                        let dequantize = match self.lanes {
                            Lanes::I32 => fixedpoint::dequantize_be,
                            Lanes::I16 => fixedpoint::dequantize16_be,
                        };
                        dequantize(pkt.payload(), &Scale::of_lanes(self.lanes, n, e_scale), &mut data[range]);
                    }
                }
                Data::I32(data) => {
                    for (d, b) in data[range].iter_mut().zip(pkt.payload().chunks_exact(4)) {
                        *d = i32::from_be_bytes([b[0], b[1], b[2], b[3]]);
                    }
                }
            }
            self.chunks_done += 1;
        }
        self.worker.gens[s] = self.worker.gens[s].wrapping_add(1);
        std::mem::swap(&mut self.slots[s].msg, &mut self.worker.answered[s].0);
        self.worker.answered[s].1 = self.lanes;
        self.resumed(now);
        self.last_progress = now;
        self.detect = self.detection_time();
        if next < self.chunks {
            self.load(s, Some(next), r.e0, set ^ 1, now);
        } else {
            self.slots[s].deadline = None;
            self.worker.sets[s] = set ^ 1;
            self.active -= 1;
        }
        self.update_stats(now);
        Ok(())
    }

    /// Retransmits every packet whose timeout has expired at `now`; fails with
    /// [`Error::Timeout`] when one has used up its retransmissions.
    pub fn handle_timeout(&mut self, now: Instant) -> Result<(), Error> {
        let cap = self.worker.rtt.ceiling();
        let max_retries = self.worker.job.max_retries;
        if self.phase == Phase::Run
            && self.can_fail_over()
            && !self.is_done()
            && now >= self.last_progress + self.detect
        {
            let why = format!("no result for {} ms", now.saturating_duration_since(self.last_progress).as_millis());
            let last = Error::Timeout { slot: 0, chunk: None, attempts: 0 };
            return self.fail_over(now, why, last);
        }
        for i in 0..self.ctl.len() {
            let e = &mut self.ctl[i];
            match e.deadline {
                Some(d) if d <= now => {}
                _ => continue,
            }
            if e.attempts > max_retries {
                let what = match self.phase {
                    Phase::Session { .. } => "session message",
                    Phase::Recovery { .. } => "recovery packet",
                    Phase::Run => "replayed packet",
                };
                let why = format!("slot {}: no answer to a {what} after {} attempts", e.slot, e.attempts);
                let last = Error::Timeout { slot: e.slot as u16, chunk: None, attempts: e.attempts };
                return self.fail_over(now, why, last);
            }
            e.attempts += 1;
            e.rto = (e.rto * 2).min(cap);
            e.deadline = Some(now + e.rto);
            self.stats.retransmissions += 1;
            enqueue(&mut e.queued, &mut self.ctl_queue, i);
        }
        for s in 0..self.w {
            let slot = &mut self.slots[s];
            match slot.deadline {
                Some(d) if d <= now => {}
                _ => continue,
            }
            if slot.attempts > max_retries {
                let last = Error::Timeout { slot: s as u16, chunk: slot.chunk, attempts: slot.attempts };
                let why = last.to_string();
                return self.fail_over(now, why, last);
            }
            slot.attempts += 1;
            slot.rto = (slot.rto * 2).min(cap);
            slot.deadline = Some(now + slot.rto);
            slot.last_sent = now;
            self.worker.rtt.backed_off(slot.rto);
            self.stats.retransmissions += 1;
            enqueue(&mut slot.queued, &mut self.queue, s);
        }
        Ok(())
    }
}

/// Pops `queue` until an entry of `entries` still in flight: its index. `flight(e)` gives the
/// entry's `queued` flag (cleared as it leaves the queue) and whether it is in flight.
fn pop_in_flight<E>(
    queue: &mut VecDeque<usize>,
    entries: &mut [E],
    flight: impl Fn(&mut E) -> (&mut bool, bool),
) -> Option<usize> {
    while let Some(i) = queue.pop_front() {
        let (queued, in_flight) = flight(&mut entries[i]);
        *queued = false;
        if in_flight {
            return Some(i);
        }
    }
    None
}

/// Puts message `i` into `queue` unless it is `queued` there already.
fn enqueue(queued: &mut bool, queue: &mut VecDeque<usize>, i: usize) {
    if !*queued {
        *queued = true;
        queue.push_back(i);
    }
}

/// Sets the job number (the epoch) and the pool index of SwitchML message `msg`.
fn retag(msg: &mut [u8], job: u8, pool: PoolIndex) {
    let mut pkt = SwitchmlPacket::new_unchecked(msg);
    pkt.set_job(job);
    pkt.set_pool_index(pool);
}

#[cfg(test)]
pub(crate) mod test {
    use super::*;
    use crate::wire::PayloadSize;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;
    use std::collections::HashMap;

    /// The aggregation semantics of docs/switch.md §2 on SwitchML messages (no frames): a
    /// model to test the worker against without the sim crate.
    pub(crate) struct MiniSwitch {
        n: usize,
        slots: HashMap<(u16, u8), MiniSlot>,
    }

    #[derive(Default)]
    struct MiniSlot {
        seen: u32,
        count: usize,
        e0: i8,
        e1: i8,
        values: Vec<i32>,
        lanes: Lanes,
    }

    impl MiniSwitch {
        pub(crate) fn new(n: usize) -> MiniSwitch {
            MiniSwitch { n, slots: HashMap::new() }
        }

        /// A contribution from `rank` in 32-bit lanes; returns (destination rank, result message).
        pub(crate) fn contribute(&mut self, rank: usize, msg: &[u8]) -> Vec<(usize, Vec<u8>)> {
            self.contribute_lanes(rank, msg, Lanes::I32)
        }

        /// A contribution from `rank` in lanes of width `lanes` (docs/switch.md §9: the width is
        /// the round's from its first contribution; another width is dropped).
        pub(crate) fn contribute_lanes(&mut self, rank: usize, msg: &[u8], lanes: Lanes) -> Vec<(usize, Vec<u8>)> {
            let p = SwitchmlPacket::new_checked(msg).unwrap();
            let r = SwitchmlRepr::parse(&p);
            let vals: Vec<i32> = p.elements().collect();
            let (s, v) = (r.pool.slot, r.pool.set);
            let bit = 1u32 << rank;
            let new = self.slots.entry((s, v)).or_default().seen & bit == 0;
            let sl = &self.slots[&(s, v)];
            if !(new && sl.count == 0) && sl.lanes != lanes {
                return Vec::new();
            }
            let n = self.n;
            let result = |sl: &MiniSlot| {
                let mut out = msg.to_vec();
                let mut q = SwitchmlPacket::new_unchecked(&mut out[..]);
                q.set_exponents(sl.e0, sl.e1);
                for (i, x) in sl.values.iter().enumerate() {
                    q.set_element(i, *x);
                }
                out
            };
            if new {
                self.slots.entry((s, v ^ 1)).or_default().seen &= !bit;
                let sl = self.slots.get_mut(&(s, v)).unwrap();
                sl.seen |= bit;
                let first = sl.count == 0;
                sl.count = (sl.count + 1) % n;
                if first {
                    sl.values = vals;
                    sl.e0 = r.e0;
                    sl.e1 = r.e1;
                    sl.lanes = lanes;
                } else {
                    for (a, b) in sl.values.iter_mut().zip(vals) {
                        *a = lanes.add(*a as u32, b as u32) as i32;
                    }
                    sl.e0 = sl.e0.max(r.e0);
                    sl.e1 = sl.e1.max(r.e1);
                }
                if sl.count == 0 {
                    let out = result(sl);
                    return (0..n).map(|w| (w, out.clone())).collect();
                }
                Vec::new()
            } else {
                let sl = &self.slots[&(s, v)];
                if sl.count == 0 {
                    vec![(rank, result(sl))]
                } else {
                    Vec::new()
                }
            }
        }
    }

    /// The job of the tests against the mini switch, which has no sessions.
    pub(crate) fn job(n: usize, payload: PayloadSize, slots: u16) -> JobConfig {
        JobConfig { sessions: false, ..JobConfig::example(n, payload, slots) }
    }

    /// Faults of the simulated network, per message.
    #[derive(Clone, Copy, Default)]
    struct Faults {
        loss: f64,
        dup: f64,
        reorder: f64,
    }

    enum Tensors {
        F32(Vec<Vec<f32>>),
        /// f32 in 16-bit lanes.
        F16(Vec<Vec<f32>>),
        I32(Vec<Vec<i32>>),
    }

    /// Runs every worker against the mini switch on a virtual clock; returns the stats.
    fn simulate(
        workers: &mut [Worker],
        tensors: &mut Tensors,
        switch: &mut MiniSwitch,
        faults: Faults,
        seed: u64,
    ) -> Result<(Vec<Stats>, Duration), Error> {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let t0 = Instant::now();
        let mut now = t0;
        let mut ops: Vec<AllReduce<'_>> = match tensors {
            Tensors::F32(ts) => {
                workers.iter_mut().zip(ts.iter_mut()).map(|(w, t)| w.start_f32(t, now)).collect::<Result<_, _>>()?
            }
            Tensors::F16(ts) => workers
                .iter_mut()
                .zip(ts.iter_mut())
                .map(|(w, t)| w.start_f32_lanes(t, Lanes::I16, now))
                .collect::<Result<_, _>>()?,
            Tensors::I32(ts) => {
                workers.iter_mut().zip(ts.iter_mut()).map(|(w, t)| w.start_i32(t, now)).collect::<Result<_, _>>()?
            }
        };
        let n = ops.len();
        let mut inbox: Vec<Vec<Vec<u8>>> = vec![Vec::new(); n];
        loop {
            let mut moved = false;
            for (r, op) in ops.iter_mut().enumerate() {
                while let Some(m) = op.poll_transmit() {
                    moved = true;
                    if rng.gen_bool(faults.loss) {
                        continue;
                    }
                    let copies = if rng.gen_bool(faults.dup) { 2 } else { 1 };
                    for _ in 0..copies {
                        for (dst, res) in switch.contribute_lanes(r, &m, m.lanes) {
                            if !rng.gen_bool(faults.loss) {
                                inbox[dst].push(res);
                            }
                        }
                    }
                }
            }
            for r in 0..n {
                let mut msgs = std::mem::take(&mut inbox[r]);
                if rng.gen_bool(faults.reorder) {
                    msgs.reverse();
                }
                for m in msgs {
                    moved = true;
                    ops[r].handle_message(now, &m)?;
                    if rng.gen_bool(faults.dup) {
                        ops[r].handle_message(now, &m)?;
                    }
                }
            }
            if ops.iter().all(|o| o.is_done()) {
                return Ok((ops.iter().map(|o| o.stats()).collect(), now - t0));
            }
            if !moved {
                now = ops.iter().filter_map(|o| o.poll_timeout()).min().unwrap();
                for o in &mut ops {
                    o.handle_timeout(now)?;
                }
            } else {
                now += Duration::from_micros(10);
            }
        }
    }

    #[test]
    fn i32_sums_are_exact_under_faults() {
        for (n, len, slots, seed) in
            [(1usize, 1000usize, 4u16, 1u64), (3, 777, 8, 2), (4, 64 * 40, 16, 3), (5, 10, 4, 4)]
        {
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            let ts: Vec<Vec<i32>> = (0..n).map(|_| (0..len).map(|_| rng.gen()).collect()).collect();
            let want: Vec<i32> = (0..len).map(|i| ts.iter().fold(0i32, |a, t| a.wrapping_add(t[i]))).collect();
            let mut workers: Vec<Worker> =
                (0..n).map(|r| Worker::new(job(n, PayloadSize::B256, slots), r).unwrap()).collect();
            let mut t = Tensors::I32(ts);
            let faults = Faults { loss: 0.1, dup: 0.1, reorder: 0.3 };
            let (stats, _) = simulate(&mut workers, &mut t, &mut MiniSwitch::new(n), faults, seed).unwrap();
            let Tensors::I32(got) = t else { unreachable!() };
            for g in &got {
                assert_eq!(g, &want, "n {n}");
            }
            assert!(stats.iter().any(|s| s.retransmissions > 0));
            assert_eq!(stats[0].chunks, len.div_ceil(64));
        }
    }

    #[test]
    fn f32_sums_are_within_the_bound_under_faults() {
        for (n, len, payload, seed) in [
            (1usize, 3000usize, PayloadSize::B256, 5u64),
            (4, 5000, PayloadSize::B1024, 6),
            (3, 100, PayloadSize::B256, 7),
        ] {
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            let ts: Vec<Vec<f32>> = (0..n)
                .map(|_| (0..len).map(|i| (rng.gen::<f32>() - 0.5) * 2f32.powi((i / 500) as i32 - 3)).collect())
                .collect();
            let k = payload.elements();
            let e_max: Vec<i8> = (0..len.div_ceil(k))
                .map(|c| {
                    ts.iter().map(|t| fixedpoint::exponent(&t[c * k..((c + 1) * k).min(len)]).unwrap()).max().unwrap()
                })
                .collect();
            let exact: Vec<f64> = (0..len).map(|i| ts.iter().map(|t| f64::from(t[i])).sum()).collect();
            let mut workers: Vec<Worker> = (0..n).map(|r| Worker::new(job(n, payload, 8), r).unwrap()).collect();
            let mut t = Tensors::F32(ts);
            let faults = Faults { loss: 0.05, dup: 0.05, reorder: 0.2 };
            let (stats, _) = simulate(&mut workers, &mut t, &mut MiniSwitch::new(n), faults, seed).unwrap();
            let Tensors::F32(got) = t else { unreachable!() };
            for g in &got {
                assert_eq!(g, &got[0], "every worker gets the same sum");
                for i in 0..len {
                    let b = fixedpoint::error_bound(n, e_max[i / k], g[i]);
                    assert!((f64::from(g[i]) - exact[i]).abs() <= b, "element {i}: {} vs {}", g[i], exact[i]);
                }
            }
            // Priming: chunks + w packets without loss.
            let w = 8.min(len.div_ceil(k)) as u64;
            assert!(stats[0].packets_sent >= stats[0].chunks as u64 + w);
        }
    }

    /// 16-bit lanes (docs/switch.md §9): 2k elements a packet, each within the bound of the
    /// 16-bit scale, the same on every worker, under loss, duplication and reordering; up to
    /// n = 9, where the scale's `− n` matters (without it nine contributions of 3641 overflow).
    /// The mini switch adds in the lanes the message says: a worker that handed a 16-bit
    /// message out as 32-bit would have its low lanes carry into the high ones.
    #[test]
    fn f32_sums_in_16_bit_lanes_are_within_the_bound_under_faults() {
        for (n, len, payload, seed) in [
            (1usize, 3000usize, PayloadSize::B256, 15u64),
            (4, 5000, PayloadSize::B1024, 16),
            (9, 700, PayloadSize::B128, 17),
        ] {
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            let ts: Vec<Vec<f32>> = (0..n)
                .map(|_| (0..len).map(|i| (rng.gen::<f32>() - 0.5) * 2f32.powi((i / 500) as i32 - 3)).collect())
                .collect();
            let k = Lanes::I16.coordinates(payload);
            assert_eq!(k, 2 * payload.elements());
            let e_max: Vec<i8> = (0..len.div_ceil(k))
                .map(|c| {
                    ts.iter().map(|t| fixedpoint::exponent(&t[c * k..((c + 1) * k).min(len)]).unwrap()).max().unwrap()
                })
                .collect();
            let exact: Vec<f64> = (0..len).map(|i| ts.iter().map(|t| f64::from(t[i])).sum()).collect();
            let lanes16 = |n| JobConfig { lanes16: true, ..job(n, payload, 8) };
            let mut workers: Vec<Worker> = (0..n).map(|r| Worker::new(lanes16(n), r).unwrap()).collect();
            let mut t = Tensors::F16(ts);
            let faults = Faults { loss: 0.05, dup: 0.05, reorder: 0.2 };
            let (stats, _) = simulate(&mut workers, &mut t, &mut MiniSwitch::new(n), faults, seed).unwrap();
            let Tensors::F16(got) = t else { unreachable!() };
            let mut worst = 0f64;
            for g in &got {
                assert_eq!(g, &got[0], "every worker gets the same sum");
                for i in 0..len {
                    let b = Scale::new16(n, e_max[i / k]).bound(g[i]);
                    let err = (f64::from(g[i]) - exact[i]).abs();
                    assert!(err <= b, "n {n}, element {i}: {} vs {} (bound {b})", g[i], exact[i]);
                    worst = worst.max(err / b);
                }
            }
            assert!(worst > 0.05, "n {n}: the errors are 16-bit sized ({worst} of the bound at most)");
            assert_eq!(stats[0].chunks, len.div_ceil(k), "2k elements a packet");
        }
    }

    /// A 16-bit all-reduce is refused before anything is sent when the job cannot carry it; the
    /// session messages of one are 32-bit, its chunks 16-bit.
    #[test]
    fn lanes16_needs_the_job_and_marks_each_message() {
        let mut x = vec![1.0f32; 300];
        let mut w = Worker::new(job(2, PayloadSize::B256, 4), 0).unwrap();
        let e = w.start_f32_lanes(&mut x, Lanes::I16, Instant::now()).err().expect("refused");
        assert!(matches!(e, Error::Lanes16(_)) && e.to_string().contains("lanes16 = true"), "{e}");
        let mut w = Worker::new(JobConfig { lanes16: true, ..JobConfig::example(2, PayloadSize::B256, 4) }, 0).unwrap();
        let now = Instant::now();
        let mut op = w.start_f32_lanes(&mut x, Lanes::I16, now).unwrap();
        assert_eq!(op.lanes(), Lanes::I16);
        let probe = op.poll_transmit().unwrap();
        assert_eq!(probe.lanes, Lanes::I32, "a session probe goes to the 32-bit port");
        assert_eq!(SwitchmlPacket::new_checked(probe.contents).unwrap().msg_type(), MSG_TYPE_SESSION);
        drop(op);
        let mut w = Worker::new(JobConfig { lanes16: true, ..job(2, PayloadSize::B256, 4) }, 0).unwrap();
        let mut op = w.start_f32_lanes(&mut x, Lanes::I16, now).unwrap();
        let mut sent = 0;
        while let Some(m) = op.poll_transmit() {
            assert_eq!(m.lanes, Lanes::I16);
            sent += 1;
        }
        assert_eq!(sent, 3, "300 elements in chunks of 128: three slots' priming packets");
    }

    #[test]
    fn a_chunk_that_is_not_finite_anywhere_comes_back_nan_everywhere() {
        // 3 workers, chunks of 64: rank 1 has a NaN in chunk 2, rank 2 an infinity in chunk 9
        // (the last, short one), rank 0 -inf in chunk 7 (a slot's second chunk: the window of 8
        // has wrapped, so its exponent rode on chunk 0's packet).
        let (n, len, payload) = (3usize, 64 * 9 + 10, PayloadSize::B256);
        let mut ts: Vec<Vec<f32>> =
            (0..n).map(|r| (0..len).map(|i| (r + 1) as f32 * 0.001 * i as f32).collect()).collect();
        ts[1][2 * 64 + 5] = f32::NAN;
        ts[2][9 * 64 + 3] = f32::INFINITY;
        ts[0][7 * 64] = f32::NEG_INFINITY;
        let exact: Vec<f64> = (0..len).map(|i| ts.iter().map(|t| f64::from(t[i])).sum()).collect();
        let mut workers: Vec<Worker> = (0..n).map(|r| Worker::new(job(n, payload, 8), r).unwrap()).collect();
        let mut t = Tensors::F32(ts);
        let faults = Faults { loss: 0.05, dup: 0.05, reorder: 0.2 };
        simulate(&mut workers, &mut t, &mut MiniSwitch::new(n), faults, 11).unwrap();
        let Tensors::F32(got) = t else { unreachable!() };
        for g in &got {
            for i in 0..len {
                let c = i / 64;
                if [2, 7, 9].contains(&c) {
                    assert!(g[i].is_nan(), "element {i} of chunk {c}: {} is not NaN", g[i]);
                } else {
                    assert!((f64::from(g[i]) - exact[i]).abs() <= fixedpoint::error_bound(n, 6, g[i]), "element {i}");
                }
            }
        }
        // Asked to refuse them, the worker fails before sending, naming the element.
        let mut w = Worker::new(job(1, payload, 8), 0).unwrap();
        w.set_finite_only(true);
        let mut data = vec![0.5f32; 100];
        data[70] = f32::INFINITY;
        let e = w.start_f32(&mut data, Instant::now()).err().unwrap();
        assert!(e.to_string().contains("element 70 is inf"), "{e}");
    }

    #[test]
    fn priming_packets_carry_the_first_exponents() {
        let j = job(2, PayloadSize::B256, 4);
        let mut w = Worker::new(j, 1).unwrap();
        let mut data: Vec<f32> = (0..64 * 6).map(|i| if i < 64 { 0.0 } else { (i / 64) as f32 }).collect();
        let now = Instant::now();
        let mut op = w.start_f32(&mut data, now).unwrap();
        let mut sent = Vec::new();
        while let Some(m) = op.poll_transmit() {
            sent.push(m.to_vec());
        }
        assert_eq!(sent.len(), 4);
        for (s, m) in sent.iter().enumerate() {
            let p = SwitchmlPacket::new_checked(&m[..]).unwrap();
            let r = SwitchmlRepr::parse(&p);
            assert_eq!((r.msg_type, r.size_code, r.tsi), (1, 1, s as u32));
            assert_eq!(r.pool, PoolIndex { slot: s as u16, set: 0 });
            // Chunk s holds the value s (chunk 0 is all zero).
            let want = [E_ZERO, 1, 2, 2][s];
            assert_eq!((r.e0, r.e1), (want, 0));
            assert!(p.payload().iter().all(|b| *b == 0));
            assert_eq!(m.len(), PREAMBLE_LEN + 256);
        }
        // The result of slot 1's priming (e0 max = 3, say) releases chunk 1 in set 1, scaled
        // for 3, with e0 = exponent of chunk 5 (value 5 -> 3) and e1 = its own (1).
        let mut res = sent[1].clone();
        SwitchmlPacket::new_unchecked(&mut res[..]).set_exponents(3, 0);
        op.handle_message(now, &res).unwrap();
        let m = op.poll_transmit().unwrap().to_vec();
        let p = SwitchmlPacket::new_checked(&m[..]).unwrap();
        let r = SwitchmlRepr::parse(&p);
        assert_eq!((r.tsi, r.pool, r.e0, r.e1), (4 + 1, PoolIndex { slot: 1, set: 1 }, 3, 1));
        assert_eq!(p.element(0), Scale::new(2, 3).quantize_one(1.0).to_bits());
        // The same result again is stale now.
        op.handle_message(now, &res).unwrap();
        assert!(op.poll_transmit().is_none());
        assert_eq!(op.stats().ignored, 1);
    }

    #[test]
    fn a_silent_switch_is_an_error_after_backoff() {
        let mut j = job(1, PayloadSize::B256, 2);
        j.max_retries = 4;
        j.timeout = Duration::from_millis(300);
        let mut w = Worker::new(j, 0).unwrap();
        let mut data = vec![1i32; 200];
        let t0 = Instant::now();
        let mut op = w.start_i32(&mut data, t0).unwrap();
        let mut gaps = Vec::new();
        let mut now = t0;
        let err = loop {
            while op.poll_transmit().is_some() {}
            let next = op.poll_timeout().unwrap();
            gaps.push(next - now);
            now = next;
            if let Err(e) = op.handle_timeout(now) {
                break e;
            }
        };
        // 300 ms, then ×2 capped at 1 s.
        let ms: Vec<u128> = gaps.iter().map(|d| d.as_millis()).collect();
        assert_eq!(ms, vec![300, 600, 1000, 1000, 1000]);
        assert_eq!(op.stats().retransmissions, 2 * 4);
        assert_eq!(op.stats().packets_sent, 2 * 4 + 2);
        let text = err.to_string();
        assert!(matches!(err, Error::Timeout { slot: 0, chunk: Some(0), attempts: 5 }), "{text}");
        assert!(text.contains("slot 0") && text.contains("chunk 0") && text.contains("5 attempts"), "{text}");
    }

    /// Every worker against the mini switch over links of a fixed one-way `delay` each way (no
    /// loss), on a virtual clock: messages arrive `delay` after they were sent, results `delay`
    /// after the switch sent them. Returns each worker's stats.
    fn simulate_delay(
        workers: &mut [Worker],
        tensors: &mut [Vec<i32>],
        switch: &mut MiniSwitch,
        delay: Duration,
        t0: Instant,
    ) -> Vec<Stats> {
        let mut now = t0;
        let mut ops: Vec<AllReduce<'_>> =
            workers.iter_mut().zip(tensors.iter_mut()).map(|(w, t)| w.start_i32(t, now).unwrap()).collect();
        // (arrival, to_switch, rank, message), kept in arrival order (all delays equal).
        let mut wire: VecDeque<(Instant, bool, usize, Vec<u8>)> = VecDeque::new();
        for _ in 0..1_000_000 {
            for (r, op) in ops.iter_mut().enumerate() {
                while let Some(m) = op.poll_transmit() {
                    wire.push_back((now + delay, true, r, m.to_vec()));
                }
            }
            if ops.iter().all(|o| o.is_done()) {
                return ops.iter().map(|o| o.stats()).collect();
            }
            let timer = ops.iter().filter_map(|o| o.poll_timeout()).min();
            let arrival = wire.front().map(|m| m.0);
            match (arrival, timer) {
                (Some(a), t) if t.is_none_or(|t| a <= t) => {
                    let (at, to_switch, r, m) = wire.pop_front().unwrap();
                    now = at;
                    if to_switch {
                        for (dst, res) in switch.contribute(r, &m) {
                            wire.push_back((now + delay, false, dst, res));
                        }
                    } else {
                        ops[r].handle_message(now, &m).unwrap();
                    }
                }
                (_, Some(t)) => {
                    now = t;
                    for o in &mut ops {
                        o.handle_timeout(now).unwrap();
                    }
                }
                (_, None) => unreachable!("nothing in flight and not done"),
            }
        }
        panic!("the simulation did not end");
    }

    #[test]
    fn the_timeout_adapts_to_a_round_trip_longer_than_timeout_ms() {
        // 50 ms round trip, timeout_ms 20: the fixed timeout would retransmit every packet.
        let n = 2;
        let mut j = job(n, PayloadSize::B256, 8);
        j.timeout = Duration::from_millis(20);
        let mut workers: Vec<Worker> = (0..n).map(|r| Worker::new(j.clone(), r).unwrap()).collect();
        let mut switch = MiniSwitch::new(n);
        let t0 = Instant::now();
        let len = 64 * 200;
        let mut ts: Vec<Vec<i32>> = (0..n).map(|r| (0..len).map(|i| i as i32 + r as i32).collect()).collect();
        let first = simulate_delay(&mut workers, &mut ts, &mut switch, Duration::from_millis(25), t0);
        for t in &ts {
            assert!(t.iter().enumerate().all(|(i, x)| *x == 2 * i as i32 + 1));
        }
        // The first window is sent at 20 ms and again at 40 ms, then the backed-off 80 ms
        // timeout lets packets be answered and sampled: only the first window retransmits.
        for s in &first {
            assert_eq!(s.retransmissions, 2 * 8, "{s:?}");
            assert!((s.srtt_seconds - 0.050).abs() < 1e-3, "{s:?}");
            assert!(s.rto_seconds >= 0.0509 && s.rto_seconds < 0.2, "{s:?}");
        }
        assert!(workers.iter().all(|w| w.rtt().samples() > 0));
        // The next operation starts with the learned timeout: no retransmission at all.
        let mut ts: Vec<Vec<i32>> = (0..n).map(|_| vec![3; len]).collect();
        let t1 = t0 + Duration::from_secs(100);
        let second = simulate_delay(&mut workers, &mut ts, &mut switch, Duration::from_millis(25), t1);
        assert!(second.iter().all(|s| s.retransmissions == 0), "{second:?}");
        assert!(ts.iter().all(|t| t.iter().all(|x| *x == 6)));
    }

    #[test]
    fn no_spurious_retransmissions_when_the_round_trip_is_below_the_floor() {
        let n = 3;
        let mut workers: Vec<Worker> = (0..n).map(|r| Worker::new(job(n, PayloadSize::B256, 16), r).unwrap()).collect();
        let mut ts: Vec<Vec<i32>> = (0..n).map(|_| vec![1; 64 * 500]).collect();
        let st =
            simulate_delay(&mut workers, &mut ts, &mut MiniSwitch::new(n), Duration::from_millis(4), Instant::now());
        // RTO = SRTT (8 ms) + the floor as the margin (20 ms).
        assert!(st.iter().all(|s| s.retransmissions == 0 && (s.rto_seconds - 0.028).abs() < 1e-3), "{st:?}");
    }

    /// Runs `f` on the operation of one worker on one slot (retransmission timeout 20 ms, three
    /// chunks of 5) started at `t0`, with the first message it sent.
    fn one_slot_20ms(f: impl FnOnce(&mut AllReduce<'_>, Instant, Vec<u8>)) {
        let mut j = job(1, PayloadSize::B256, 1);
        j.timeout = Duration::from_millis(20);
        let mut w = Worker::new(j, 0).unwrap();
        let mut data = vec![5i32; 64 * 3];
        let t0 = Instant::now();
        let mut op = w.start_i32(&mut data, t0).unwrap();
        let m0 = op.poll_transmit().unwrap().to_vec();
        f(&mut op, t0, m0);
    }

    #[test]
    fn karns_rule_no_sample_from_a_retransmitted_packet() {
        one_slot_20ms(|op, t0, m0| {
            let ms = Duration::from_millis;
            assert_eq!(op.poll_timeout(), Some(t0 + ms(20)));
            op.handle_timeout(t0 + ms(20)).unwrap();
            assert_eq!(*op.poll_transmit().unwrap(), m0[..]);
            assert_eq!(op.poll_timeout(), Some(t0 + ms(60)));
            // The result comes 25 ms after the first copy: it may answer either copy, no sample.
            op.handle_message(t0 + ms(25), &m0).unwrap();
            let m1 = op.poll_transmit().unwrap().to_vec();
            assert!(op.worker.rtt.srtt().is_none() && op.worker.rtt.samples() == 0);
            // The backoff (40 ms) carries over to the next packet until a sample.
            assert_eq!(op.poll_timeout(), Some(t0 + ms(25) + ms(40)));
            // Sent once, answered 10 ms later: the first sample, SRTT 10, RTTVAR 5, RTO max(20, 30).
            op.handle_message(t0 + ms(35), &m1).unwrap();
            assert_eq!(op.worker.rtt.srtt(), Some(ms(10)));
            op.poll_transmit().unwrap();
            assert_eq!(op.poll_timeout(), Some(t0 + ms(35) + ms(30)));
            assert_eq!(op.stats().retransmissions, 1);
        });
    }

    #[test]
    fn a_result_sooner_than_the_min_rtt_after_a_retransmission_is_found_spurious() {
        one_slot_20ms(|op, t0, m0| {
            let ms = Duration::from_millis;
            op.handle_message(t0 + ms(10), &m0).unwrap();
            // Sample 10 ms: RTO = 10 + max(4 × 5, 20) = 30 ms.
            let m1 = op.poll_transmit().unwrap().to_vec();
            assert_eq!(op.poll_timeout(), Some(t0 + ms(40)));
            op.handle_timeout(t0 + ms(40)).unwrap();
            assert_eq!(*op.poll_transmit().unwrap(), m1[..]);
            // The result 2 ms after the copy (the smallest round trip is 10 ms): it answers the
            // first copy, sent 32 ms before, 22 ms beyond SRTT. The margin becomes 22 ms.
            op.handle_message(t0 + ms(42), &m1).unwrap();
            assert_eq!((op.stats().retransmissions, op.stats().spurious_retransmissions), (1, 1));
            assert_eq!(op.worker.rtt.samples(), 1);
            op.poll_transmit().unwrap();
            assert_eq!(op.poll_timeout(), Some(t0 + ms(42) + ms(10) + ms(22)));
        });
    }

    #[test]
    fn later_operations_continue_the_sets() {
        let n = 2;
        let mut switch = MiniSwitch::new(n);
        let mut workers: Vec<Worker> = (0..n).map(|r| Worker::new(job(n, PayloadSize::B256, 4), r).unwrap()).collect();
        for (round, len) in [(0i32, 64 * 5), (1, 64 * 2), (2, 64 * 9 + 3)] {
            let ts: Vec<Vec<i32>> =
                (0..n).map(|r| (0..len).map(|i| i as i32 * (r as i32 + 1) + round).collect()).collect();
            let want: Vec<i32> = (0..len).map(|i| ts[0][i] + ts[1][i]).collect();
            let mut t = Tensors::I32(ts);
            simulate(&mut workers, &mut t, &mut switch, Faults::default(), 9).unwrap();
            let Tensors::I32(got) = t else { unreachable!() };
            assert_eq!(got[0], want);
            assert_eq!(got[1], want);
        }
        let mut ts = Tensors::F32(vec![vec![1.5f32; 300], vec![-0.25f32; 300]]);
        simulate(&mut workers, &mut ts, &mut switch, Faults { loss: 0.1, ..Faults::default() }, 10).unwrap();
        let Tensors::F32(got) = ts else { unreachable!() };
        assert!(got[0].iter().all(|x| (x - 1.25).abs() < 1e-6));
    }

    #[test]
    fn silent_switches_are_left_in_order_and_the_error_names_each() {
        let mut j = JobConfig::example(2, PayloadSize::B256, 2);
        j.timeout = Duration::from_millis(2);
        j.max_retries = 3;
        j.switches = vec!["192.0.2.1:48864".parse().unwrap(), "192.0.2.2:48865".parse().unwrap()];
        let mut w = Worker::new(j, 1).unwrap();
        let mut data = vec![1i32; 200];
        let t0 = Instant::now();
        let mut op = w.start_i32(&mut data, t0).unwrap();
        // The first message is the session probe: msg_type 8, size 1, job 0, tsi 0, slot 0 set 0.
        let probe = op.poll_transmit().unwrap().to_vec();
        assert_eq!(&probe[..10], &[0x81, 0x00, 0, 0, 0, 0, 0x00, 0x00, 0, 0]);
        let mut switches = vec![op.switch_index()];
        let err = loop {
            while op.poll_transmit().is_some() {}
            let now = op.poll_timeout().unwrap();
            if let Err(e) = op.handle_timeout(now) {
                break e;
            }
            switches.push(op.switch_index());
        };
        switches.dedup();
        assert_eq!(switches, vec![0, 1], "never back to a switch left");
        let text = err.to_string();
        assert!(matches!(err, Error::NoSwitch { ref tried } if tried.len() == 2), "{text}");
        assert!(text.contains("192.0.2.1:48864 (") && text.contains("192.0.2.2:48865 ("), "{text}");
        assert_eq!(op.stats().failovers.len(), 1);
        assert_eq!((op.stats().failovers[0].from, op.stats().failovers[0].to), (0, 1));
    }

    #[test]
    fn a_session_join_follows_the_switch_epoch() {
        let mut j = JobConfig::example(1, PayloadSize::B256, 1);
        j.job_number = 9;
        let mut w = Worker::new(j, 0).unwrap();
        let mut data = vec![7i32; 64];
        let now = Instant::now();
        let mut op = w.start_i32(&mut data, now).unwrap();
        let probe = op.poll_transmit().unwrap().to_vec();
        assert!(op.poll_transmit().is_none());
        // The switch answers: epoch 0x41. The worker joins 0x42 (set 1).
        let mut reply = probe.clone();
        reply[1] = 0x41;
        op.handle_message(now, &reply).unwrap();
        let join = op.poll_transmit().unwrap().to_vec();
        assert_eq!(&join[..10], &[0x81, 0x42, 0, 0, 0, 0, 0x80, 0x00, 0, 0]);
        // A reply with 0x42: the session is open; the contribution carries job 0x42, set 0.
        let mut open = join.clone();
        open[1] = 0x42;
        op.handle_message(now, &open).unwrap();
        let c = op.poll_transmit().unwrap().to_vec();
        assert_eq!(&c[..8], &[0x11, 0x42, 0, 0, 0, 0, 0x00, 0x00]);
        assert_eq!(op.worker.epoch(), Some(0x42));
        // A result of another epoch is ignored; of 0x42, taken.
        let mut old = c.clone();
        old[1] = 9;
        op.handle_message(now, &old).unwrap();
        assert!(!op.is_done());
        op.handle_message(now, &c).unwrap();
        assert!(op.is_done());
        assert_eq!(op.stats().epoch, Some(0x42));
    }

    #[test]
    fn bad_inputs_fail_early() {
        assert!(matches!(Worker::new(job(2, PayloadSize::B256, 4), 2), Err(Error::Rank { rank: 2, n: 2 })));
        let mut w = Worker::new(job(1, PayloadSize::B256, 4), 0).unwrap();
        let mut data = vec![0.0f32; 100];
        data[70] = 1e38;
        let e = w.start_f32(&mut data, Instant::now()).err().unwrap();
        assert!(e.to_string().contains("element 70"), "{e}");
        let mut empty: Vec<f32> = Vec::new();
        let op = w.start_f32(&mut empty, Instant::now()).unwrap();
        assert!(op.is_done() && op.poll_timeout().is_none());
    }

    #[test]
    fn exponent_disagreement_is_a_protocol_error() {
        let mut w = Worker::new(job(1, PayloadSize::B256, 1), 0).unwrap();
        let mut data = vec![1.0f32; 64];
        let now = Instant::now();
        let mut op = w.start_f32(&mut data, now).unwrap();
        let prime = op.poll_transmit().unwrap().to_vec();
        op.handle_message(now, &prime).unwrap();
        let mut chunk = op.poll_transmit().unwrap().to_vec();
        SwitchmlPacket::new_unchecked(&mut chunk[..]).set_exponents(E_ZERO, 5);
        assert!(matches!(op.handle_message(now, &chunk), Err(Error::Protocol { slot: 0, chunk: 0, .. })));
    }
}
