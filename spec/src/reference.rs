//! The reference switch: the executable specification of `docs/switch.md`.
//!
//! Frame in, frames out, no I/O and no clock. [`classify`] decides what a received frame is
//! (the checks of docs/switch.md §1, in order; the first that fails names the drop reason);
//! [`RefSwitch`] applies the slot algorithm of §2 to valid contributions and builds the
//! frames of §3 (result, ARP reply, ICMP echo reply) byte for byte.
//!
//! Guarantees:
//! - a frame that is not a valid contribution, an ARP request for the switch or an echo
//!   request to it changes nothing but `frames_in` and its drop counter;
//! - every received frame lands in exactly one counter bucket
//!   ([`Counters::is_consistent`] holds after every frame);
//! - no allocation per frame beyond the frames emitted.
//!
//! Offsets of every field come from `spotagg_driver::wire`, where each header begins from
//! `spotagg_driver::wire::layout` (its table: Ethernet 0..14, IPv4 or ARP from 14, UDP or ICMP
//! from 34, SwitchML from 42, the payload from 52).

use spotagg_driver::counters::{Counters, DropReason};
use spotagg_driver::engine::Engine;
use spotagg_driver::metrics::{counter_families, Family, Kind};
use spotagg_driver::wire::layout::{
    ARP_FRAME_LEN, IP_OFFSET, L4_OFFSET, PAYLOAD_OFFSET, SWITCHML_MIN_UDP_LEN, SWITCHML_OFFSET, TAG_LEN, TAG_OFFSET,
};
use spotagg_driver::wire::{
    be16, icmp, ipv4, switchml, udp, vlan, vlan::VlanPacket, ArpOperation, ArpPacket, ArpRepr, EtherType,
    EthernetFrame, EthernetRepr, IpProtocol, Ipv4Addr, Ipv4Packet, Ipv4Repr, Lanes, MacAddr, PoolIndex, SwitchmlPacket,
    UdpPacket, UdpRepr,
};
use spotagg_driver::JobConfig;

/// What the switch makes of a received frame (docs/switch.md §1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Classification {
    /// A valid contribution from worker `rank` to `pool` (slot and set).
    Contribution {
        /// The sender's rank, found by its source IPv4 address.
        rank: usize,
        /// The slot and set.
        pool: PoolIndex,
    },
    /// A valid session message (docs/switch.md §2.1) from worker `rank`: a probe (set 0) or a
    /// join (set 1) proposing the epoch in `job_number`.
    Session {
        /// The sender's rank.
        rank: usize,
        /// The slot (only routes the message to a thread) and set (0 probe, 1 join).
        pool: PoolIndex,
    },
    /// An ARP request for the switch's address: answered with an ARP reply.
    ArpRequest,
    /// An ICMP echo request to the switch: answered with an echo reply of `14 + total_len` bytes.
    EchoRequest {
        /// The request's IPv4 total length `T`.
        total_len: usize,
    },
    /// The result of a round from the parent switch of a tree (docs/switch.md §6): a frame
    /// from the parent's IPv4 address that passes every check a contribution passes.
    ParentResult {
        /// The slot and set.
        pool: PoolIndex,
    },
    /// Dropped, counted under this reason.
    Drop(DropReason),
}

impl Classification {
    /// The drop reason, if the frame is dropped.
    pub fn drop_reason(self) -> Option<DropReason> {
        match self {
            Classification::Drop(r) => Some(r),
            _ => None,
        }
    }
}

/// Classifies a received frame (no preamble, no FCS) for `job`, running the checks of
/// docs/switch.md §1 in their order; the first that fails is the drop reason. For a tagged job
/// the frame goes through [`untag`] first.
pub fn classify(job: &JobConfig, frame: &[u8]) -> Classification {
    let mut buf = Vec::new();
    match untag(job, frame, &mut buf) {
        Ok(f) => classify_untagged(job, f),
        Err(r) => Classification::Drop(r),
    }
}

/// docs/switch.md §1 steps 1–3 for a tagged job: the frame with its 802.1Q tag removed (in
/// `buf`), or the drop reason. For an untagged job, the frame itself.
pub fn untag<'a>(job: &JobConfig, frame: &'a [u8], buf: &'a mut Vec<u8>) -> Result<&'a [u8], DropReason> {
    let Some(v) = job.vlan else {
        return Ok(frame);
    };
    let Ok(eth) = EthernetFrame::new_checked(frame) else {
        return Err(DropReason::Truncated);
    };
    if eth.dst() != job.switch_mac && eth.dst() != MacAddr::BROADCAST {
        return Err(DropReason::WrongDstMac);
    }
    if frame.len() < TAG_OFFSET + TAG_LEN {
        return Err(DropReason::Truncated);
    }
    let tci = VlanPacket::new_unchecked(&frame[TAG_OFFSET + 2..]);
    if eth.ethertype() != vlan::TPID || tci.vid() != v.id {
        return Err(DropReason::WrongVlan);
    }
    buf.clear();
    buf.extend_from_slice(&frame[..TAG_OFFSET]);
    buf.extend_from_slice(&frame[TAG_OFFSET + TAG_LEN..]);
    Ok(buf)
}

/// Inserts a tagged job's tag into a frame the switch sends (docs/switch.md §3): 0x8100 and the
/// TCI after the source MAC. An untagged job's frames are left as they are.
pub fn tag(job: &JobConfig, frame: &mut Vec<u8>) {
    if let Some(v) = job.vlan {
        let [t0, t1] = vlan::TPID.0.to_be_bytes();
        let [c0, c1] = v.tci().to_be_bytes();
        frame.splice(TAG_OFFSET..TAG_OFFSET, [t0, t1, c0, c1]);
    }
}

/// The checks of docs/switch.md §1 but step 3 (the frame is untagged, or its tag was removed).
fn classify_untagged(job: &JobConfig, frame: &[u8]) -> Classification {
    use Classification::Drop;
    use DropReason::*;
    let l = frame.len();
    let Ok(eth) = EthernetFrame::new_checked(frame) else {
        return Drop(Truncated);
    };
    let dst = eth.dst();
    if dst != job.switch_mac && dst != MacAddr::BROADCAST {
        return Drop(WrongDstMac);
    }
    let ethertype = eth.ethertype();
    if ethertype == EtherType::ARP {
        let Ok(p) = ArpPacket::new_checked(&frame[IP_OFFSET..]) else {
            return Drop(Truncated);
        };
        if p.htype() != 1
            || p.ptype() != 0x0800
            || p.hlen() != 6
            || p.plen() != 4
            || p.operation() != ArpOperation::REQUEST
        {
            return Drop(NotIpv4Udp);
        }
        if p.tpa() != job.switch_ip {
            return Drop(WrongDstIp);
        }
        return Classification::ArpRequest;
    }
    if ethertype != EtherType::IPV4 {
        return Drop(NotIpv4Udp);
    }
    if l < L4_OFFSET {
        return Drop(Truncated);
    }
    let ip = Ipv4Packet::new_unchecked(&frame[IP_OFFSET..L4_OFFSET]);
    if ip.version() != 4 {
        return Drop(NotIpv4Udp);
    }
    if ip.header_len() != ipv4::HEADER_LEN {
        return Drop(IpOptions);
    }
    if !(ip.verify_checksum() || job.zero_ip_checksum && ip.checksum() == 0) {
        return Drop(IpChecksum);
    }
    let t = usize::from(ip.total_len());
    if t < ipv4::HEADER_LEN || IP_OFFSET + t > l {
        return Drop(BadLength);
    }
    if ip.is_fragment() {
        return Drop(IpFragment);
    }
    if ip.dst_addr() != job.switch_ip {
        return Drop(WrongDstIp);
    }
    let proto = ip.protocol();
    if proto == IpProtocol::ICMP {
        if t < ipv4::HEADER_LEN + icmp::HEADER_LEN {
            return Drop(Truncated);
        }
        if frame[L4_OFFSET + icmp::field::TYPE] != icmp::ECHO_REQUEST || frame[L4_OFFSET + icmp::field::CODE] != 0 {
            return Drop(NotIpv4Udp);
        }
        return Classification::EchoRequest { total_len: t };
    }
    if proto != IpProtocol::UDP {
        return Drop(NotIpv4Udp);
    }
    if t < ipv4::HEADER_LEN + udp::HEADER_LEN {
        return Drop(Truncated);
    }
    let udp_len = usize::from(be16(&frame[L4_OFFSET + udp::field::LENGTH.start..]));
    if udp_len != t - ipv4::HEADER_LEN {
        return Drop(BadLength);
    }
    if lanes_of(job, frame).is_none() {
        return Drop(BadPort);
    }
    let src = ip.src_addr();
    let from_parent = job.parent.is_some_and(|p| p.ip == src);
    let rank = match job.workers.iter().position(|w| w.ip == src) {
        Some(r) => r,
        None if from_parent => usize::MAX,
        None => return Drop(UnknownSource),
    };
    if !from_parent && !job.is_worker_port(be16(&frame[L4_OFFSET + udp::field::SRC_PORT.start..])) {
        return Drop(WrongSrcPort);
    }
    if udp_len < SWITCHML_MIN_UDP_LEN {
        return Drop(Truncated);
    }
    let sml = SwitchmlPacket::new_unchecked(&frame[SWITCHML_OFFSET..]);
    let session = sml.msg_type() == switchml::MSG_TYPE_SESSION;
    if sml.msg_type() != switchml::MSG_TYPE_CONTRIBUTION && !session {
        return Drop(BadMsgType);
    }
    if sml.size_code() != job.payload.code() {
        return Drop(BadSize);
    }
    if udp_len != SWITCHML_MIN_UDP_LEN + job.payload.bytes() {
        return Drop(BadLength);
    }
    let pool = sml.pool_index();
    if pool.slot >= job.slots {
        return Drop(BadSlot);
    }
    if from_parent {
        return Classification::ParentResult { pool };
    }
    if session {
        return Classification::Session { rank, pool };
    }
    Classification::Contribution { rank, pool }
}

/// The lane width of a UDP frame for `job` by its destination port (docs/switch.md §1 7.3, §9):
/// 32-bit lanes for a SwitchML port, 16-bit for 0xBEF0..=0xBEFF when the job takes them, else
/// `None` (a bad port). The frame must hold a UDP header.
pub fn lanes_of(job: &JobConfig, frame: &[u8]) -> Option<Lanes> {
    match Lanes::of_port(be16(&frame[L4_OFFSET + udp::field::DST_PORT.start..])) {
        Some(Lanes::I16) if !job.lanes16 => None,
        l => l,
    }
}

/// Whether an IPv4 frame that §1 let through was taken by the zero-checksum exception of
/// docs/switch.md §1 6.4: the job takes zero checksums, the field is 0 and does not verify.
fn zero_checksum_taken(job: &JobConfig, frame: &[u8]) -> bool {
    if !job.zero_ip_checksum || frame.len() < L4_OFFSET {
        return false;
    }
    let ip = Ipv4Packet::new_unchecked(&frame[IP_OFFSET..L4_OFFSET]);
    ip.checksum() == 0 && !ip.verify_checksum()
}

/// The slot memory and scoreboard: per slot and set, the worker bitmap, the counter, the
/// exponent maxima and the k values. Index of (slot s, set v) is `2 s + v`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct SlotState {
    seen: Vec<u32>,
    count: Vec<u8>,
    e0: Vec<i8>,
    e1: Vec<i8>,
    values: Vec<i32>,
    /// Tree leaf (docs/switch.md §6): the round is complete here and its partial sum went up;
    /// the result is the parent's, not yet received.
    waiting: Vec<bool>,
    /// The round's lane width, set by its first contribution (docs/switch.md §9).
    lanes: Vec<Lanes>,
}

impl SlotState {
    fn new(slots: usize, k: usize) -> SlotState {
        SlotState {
            seen: vec![0; 2 * slots],
            count: vec![0; 2 * slots],
            e0: vec![0; 2 * slots],
            e1: vec![0; 2 * slots],
            values: vec![0; 2 * slots * k],
            waiting: vec![false; 2 * slots],
            lanes: vec![Lanes::I32; 2 * slots],
        }
    }
}

/// What a switch of an aggregation tree did on its parent link (docs/switch.md §6). These
/// frames are outside [`Counters`] (whose identities stay those of §4): software-only.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct TreeCounters {
    /// Partial sums sent to the parent when a round completed here.
    pub partials_up: u64,
    /// Partial sums sent again, on a worker's retransmission to a round waiting for the parent.
    pub partials_resent: u64,
    /// Results received from the parent that completed a waiting round (each multicast).
    pub parent_results: u64,
    /// Results received from the parent for a round not waiting (a duplicate): dropped.
    pub parent_results_stale: u64,
}

/// The tree counters as Prometheus families, every sample with `labels` (the reference switch's
/// and `RtlEngine::metrics`' names).
pub fn tree_families(t: &TreeCounters, labels: &[(&str, String)]) -> Vec<Family> {
    let one = |name: &str, help: &str, v: u64| Family::new(name, help, Kind::Counter).sample(labels, v as f64);
    vec![
        one("spotagg_switch_tree_partials_up_total", "Partial sums sent to the parent.", t.partials_up),
        one(
            "spotagg_switch_tree_partials_resent_total",
            "Partial sums sent again on a retransmission to a waiting round.",
            t.partials_resent,
        ),
        one(
            "spotagg_switch_tree_parent_results_total",
            "Parent results that completed a waiting round.",
            t.parent_results,
        ),
        one(
            "spotagg_switch_tree_parent_results_stale_total",
            "Parent results for a round not waiting (dropped).",
            t.parent_results_stale,
        ),
    ]
}

/// Straggler counters of one rank (docs/switch.md §7): the rounds it completed by arriving
/// last, and how far behind the round's first contribution it arrived.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct StragglerCounters {
    /// Rounds in which this rank's contribution was the last (the n-th distinct one).
    pub rounds_last: u64,
    /// Sum over those rounds of (its arrival − the round's first arrival), µs.
    pub behind_us_total: u64,
    /// The largest such lag, µs.
    pub behind_us_max: u64,
}

/// The session state of docs/switch.md §2.1: the current epoch, whether a session has been
/// opened since the job was configured, and the ranks that joined the next epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionState {
    /// The current epoch E (the job's `job_number` until the first session opens).
    pub epoch: u8,
    /// A session is open: contributions whose `job_number` is not E are dropped.
    pub open: bool,
    /// Ranks that joined epoch E + 1.
    pub joined: u32,
}

/// The reference switch for one job. All slot state is zero at construction.
#[derive(Debug, Clone)]
pub struct RefSwitch {
    job: JobConfig,
    k: usize,
    state: SlotState,
    session: SessionState,
    counters: Counters,
    /// Scratch for a tagged frame without its tag (no allocation per frame).
    untagged: Vec<u8>,
    tree: TreeCounters,
    /// The time the caller last gave ([`RefSwitch::set_clock`]), µs.
    clock_us: u64,
    /// Arrival of each (slot, set)'s first contribution of its round, µs.
    first_us: Vec<u64>,
    stragglers: Vec<StragglerCounters>,
}

impl RefSwitch {
    /// A switch for a job, all state zero.
    pub fn new(job: JobConfig) -> RefSwitch {
        let k = job.payload.elements();
        let state = SlotState::new(usize::from(job.slots), k);
        let (first_us, stragglers) = (vec![0; 2 * usize::from(job.slots)], vec![StragglerCounters::default(); job.n()]);
        let job_number = job.job_number;
        RefSwitch {
            job,
            k,
            state,
            counters: Counters::default(),
            untagged: Vec::new(),
            session: SessionState { epoch: job_number, open: false, joined: 0 },
            tree: TreeCounters::default(),
            clock_us: 0,
            first_us,
            stragglers,
        }
    }

    /// Sets the time of the frames processed next, in µs from any origin (the switch has no
    /// clock of its own; the straggler counters of docs/switch.md §7 use this one).
    pub fn set_clock(&mut self, now_us: u64) {
        self.clock_us = now_us;
    }

    /// The tree counters (docs/switch.md §6).
    pub fn tree_counters(&self) -> TreeCounters {
        self.tree
    }

    /// The straggler counters, by rank (docs/switch.md §7).
    pub fn stragglers(&self) -> &[StragglerCounters] {
        &self.stragglers
    }

    /// The tree counters (§6) and the straggler counters (§7) as Prometheus families, every
    /// sample with `labels` (stragglers also with `rank`).
    pub fn tree_and_straggler_families(&self, labels: &[(&str, String)]) -> Vec<Family> {
        let mut fams = tree_families(&self.tree, labels);
        let ranks: Vec<spotagg_driver::metrics::RankLag> = self
            .stragglers
            .iter()
            .map(|sc| spotagg_driver::metrics::RankLag {
                rounds_last: sc.rounds_last,
                behind_us_total: sc.behind_us_total as f64,
                behind_us_max: sc.behind_us_max as f64,
            })
            .collect();
        fams.extend(spotagg_driver::metrics::straggler_families(&ranks, labels));
        fams
    }

    /// The job.
    pub fn job(&self) -> &JobConfig {
        &self.job
    }

    /// Replaces the job and clears every slot (docs/switch.md §2: state is zero whenever a job
    /// is (re)configured). Counters are kept.
    pub fn configure(&mut self, job: JobConfig) {
        let counters = std::mem::take(&mut self.counters);
        let (tree, clock) = (self.tree, self.clock_us);
        *self = RefSwitch::new(job);
        self.counters = counters;
        self.tree = tree;
        self.clock_us = clock;
    }

    /// The session state (docs/switch.md §2.1).
    pub fn session(&self) -> SessionState {
        self.session
    }

    /// A session message from `rank` (docs/switch.md §2.1): a probe is answered with the
    /// current epoch; a join of E + 1 is counted, and the n-th distinct one opens the session
    /// (E + 1, every slot cleared) and is answered to every rank; any other join is answered
    /// with the current epoch.
    fn session_message(&mut self, frame: &[u8], rank: usize, pool: PoolIndex, out: &mut Vec<Vec<u8>>) {
        let n = self.job.n();
        let proposal = frame[SWITCHML_OFFSET + switchml::field::JOB];
        let next = self.session.epoch.wrapping_add(1);
        let bit = 1u32 << rank;
        if pool.set == 1 && proposal == next {
            if self.session.joined & bit != 0 {
                self.counters.duplicates += 1;
                return;
            }
            self.counters.contributions += 1;
            self.session.joined |= bit;
            if self.session.joined.count_ones() as usize == n {
                self.session = SessionState { epoch: next, open: true, joined: 0 };
                self.state = SlotState::new(usize::from(self.job.slots), self.k);
                self.multicast(self.session_reply(frame, 0), out);
            }
        } else {
            self.counters.duplicates += 1;
            out.push(self.session_reply(frame, rank));
            self.counters.results_retransmitted += 1;
            self.counters.frames_out += 1;
        }
    }

    /// The reply to session message `trigger` for `rank`: a result frame (§3) with the
    /// trigger's SwitchML header, `job_number` replaced by the current epoch, exponents and
    /// payload zero.
    fn session_reply(&self, trigger: &[u8], rank: usize) -> Vec<u8> {
        let mut f = self.result_frame(trigger, rank, 0);
        f[SWITCHML_OFFSET + switchml::field::JOB] = self.session.epoch;
        f[SWITCHML_OFFSET + switchml::field::E0..].fill(0);
        f
    }

    /// True when both switches hold the same slot state (bitmaps, counters, exponents, values).
    pub fn same_slots(&self, other: &RefSwitch) -> bool {
        self.state == other.state
    }

    /// The state of (slot, set): worker bitmap, round counter, `e0`, `e1` and the k values.
    /// Panics if `slot ≥ S` or `set > 1`.
    pub fn slot(&self, slot: u16, set: u8) -> (u32, u8, i8, i8, &[i32]) {
        assert!(slot < self.job.slots && set < 2, "slot {slot} set {set} outside the job's {} slots", self.job.slots);
        let i = 2 * usize::from(slot) + usize::from(set);
        let st = &self.state;
        (st.seen[i], st.count[i], st.e0[i], st.e1[i], &st.values[i * self.k..(i + 1) * self.k])
    }

    /// Applies a valid contribution `frame` from `rank` to `pool` (docs/switch.md §2).
    fn contribution(&mut self, frame: &[u8], rank: usize, pool: PoolIndex, out: &mut Vec<Vec<u8>>) {
        let n = self.job.n();
        let i = 2 * usize::from(pool.slot) + usize::from(pool.set);
        let other = i ^ 1;
        let bit = 1u32 << rank;
        let st = &mut self.state;
        let lanes = lanes_of(&self.job, frame).expect("a contribution has a switch port");
        let opening = st.seen[i] & bit == 0 && st.count[i] == 0;
        if !opening && lanes != st.lanes[i] {
            // docs/switch.md §9: not the round's width; nothing else changes.
            self.counters.drops[DropReason::LaneMismatch.index()] += 1;
            return;
        }
        if st.seen[i] & bit == 0 {
            st.seen[i] |= bit;
            st.seen[other] &= !bit;
            let first = st.count[i] == 0;
            st.count[i] = ((usize::from(st.count[i]) + 1) % n) as u8;
            let last = st.count[i] == 0;
            st.waiting[i] = false;
            if first {
                self.first_us[i] = self.clock_us;
            }
            if last && n > 1 {
                let behind = self.clock_us.saturating_sub(self.first_us[i]);
                let sc = &mut self.stragglers[rank];
                sc.rounds_last += 1;
                sc.behind_us_total += behind;
                sc.behind_us_max = sc.behind_us_max.max(behind);
            }
            let e0 = frame[SWITCHML_OFFSET + switchml::field::E0] as i8;
            let e1 = frame[SWITCHML_OFFSET + switchml::field::E1] as i8;
            let values = &mut st.values[i * self.k..(i + 1) * self.k];
            let payload = &frame[PAYLOAD_OFFSET..PAYLOAD_OFFSET + 4 * self.k];
            if first {
                st.e0[i] = e0;
                st.e1[i] = e1;
                st.lanes[i] = lanes;
                for (v, b) in values.iter_mut().zip(payload.chunks_exact(4)) {
                    *v = i32::from_be_bytes([b[0], b[1], b[2], b[3]]);
                }
            } else {
                st.e0[i] = st.e0[i].max(e0);
                st.e1[i] = st.e1[i].max(e1);
                for (v, b) in values.iter_mut().zip(payload.chunks_exact(4)) {
                    *v = lanes.add(*v as u32, u32::from_be_bytes([b[0], b[1], b[2], b[3]])) as i32;
                }
            }
            self.counters.contributions += 1;
            if last && self.job.parent.is_some() {
                st.waiting[i] = true;
                out.push(self.partial_frame(frame, i));
                self.tree.partials_up += 1;
            } else if last {
                self.multicast(self.result_frame(frame, 0, i), out);
            }
        } else {
            self.counters.duplicates += 1;
            if st.count[i] == 0 && st.waiting[i] {
                // Only rank 0's retransmission resends the partial (§6): every rank of a waiting
                // round retransmits, and n resends a level would multiply up the tree.
                if rank == 0 {
                    out.push(self.partial_frame(frame, i));
                    self.tree.partials_resent += 1;
                }
            } else if st.count[i] == 0 {
                out.push(self.result_frame(frame, rank, i));
                self.counters.results_retransmitted += 1;
                self.counters.frames_out += 1;
            }
        }
    }

    /// The result of a waiting round from the parent (docs/switch.md §6): stored as the round's
    /// result and sent to every rank, in rank order, under the parent result's SwitchML header.
    fn parent_result(&mut self, frame: &[u8], pool: PoolIndex, out: &mut Vec<Vec<u8>>) {
        let i = 2 * usize::from(pool.slot) + usize::from(pool.set);
        let st = &mut self.state;
        // A parent result of the other width (docs/switch.md §9) is stale too.
        let same_width = lanes_of(&self.job, frame) == Some(st.lanes[i]);
        if !(st.waiting[i] && st.count[i] == 0 && same_width) {
            self.tree.parent_results_stale += 1;
            return;
        }
        st.waiting[i] = false;
        st.e0[i] = frame[SWITCHML_OFFSET + switchml::field::E0] as i8;
        st.e1[i] = frame[SWITCHML_OFFSET + switchml::field::E1] as i8;
        let values = &mut st.values[i * self.k..(i + 1) * self.k];
        for (v, b) in values.iter_mut().zip(frame[PAYLOAD_OFFSET..].chunks_exact(4)) {
            *v = i32::from_be_bytes([b[0], b[1], b[2], b[3]]);
        }
        self.tree.parent_results += 1;
        let src_port = UdpPacket::new_unchecked(&frame[L4_OFFSET..SWITCHML_OFFSET]).dst_port();
        self.multicast(self.result_frame_ports(frame, 0, i, (src_port, self.job.worker_port)), out);
    }

    /// Sends `result`, addressed to rank 0, to every rank in rank order (readdressed copies) and
    /// counts the n frames as a multicast.
    fn multicast(&mut self, result: Vec<u8>, out: &mut Vec<Vec<u8>>) {
        let n = self.job.n();
        let start = out.len();
        out.push(result);
        for r in 1..n {
            let mut f = out[start].clone();
            self.readdress_result(&mut f, r);
            out.push(f);
        }
        self.counters.results_multicast += n as u64;
        self.counters.frames_out += n as u64;
    }

    /// The partial sum of (slot, set) index `i` as one contribution to the parent, under the
    /// SwitchML header of `trigger` (docs/switch.md §6).
    fn partial_frame(&self, trigger: &[u8], i: usize) -> Vec<u8> {
        let parent = self.job.parent.expect("a partial frame needs a parent");
        let src_port = UdpPacket::new_unchecked(&trigger[L4_OFFSET..SWITCHML_OFFSET]).dst_port();
        // A 16-bit round goes to the parent's 16-bit port (docs/switch.md §9).
        let dst_port = self.state.lanes[i].port(parent.port);
        self.frame_of(trigger, parent.mac, parent.ip, (src_port, dst_port), i)
    }

    /// The result frame of (slot, set) index `i` to `rank`, triggered by contribution `trigger`
    /// (docs/switch.md §3).
    fn result_frame(&self, trigger: &[u8], rank: usize, i: usize) -> Vec<u8> {
        let tu = UdpPacket::new_unchecked(&trigger[L4_OFFSET..SWITCHML_OFFSET]);
        self.result_frame_ports(trigger, rank, i, (tu.dst_port(), tu.src_port()))
    }

    /// The result frame of index `i` to `rank` with these UDP (source, destination) ports.
    fn result_frame_ports(&self, trigger: &[u8], rank: usize, i: usize, ports: (u16, u16)) -> Vec<u8> {
        let w = self.job.workers[rank];
        self.frame_of(trigger, w.mac, w.ip, ports, i)
    }

    /// A frame from the switch to (`mac`, `ip`) with UDP `ports` (source, destination), the
    /// SwitchML header of `trigger`, the exponents and values of index `i`.
    fn frame_of(&self, trigger: &[u8], mac: MacAddr, ip: Ipv4Addr, ports: (u16, u16), i: usize) -> Vec<u8> {
        let p = 4 * self.k;
        let mut f = vec![0u8; PAYLOAD_OFFSET + p];
        EthernetRepr { dst: mac, src: self.job.switch_mac, ethertype: EtherType::IPV4 }
            .emit(&mut EthernetFrame::new_unchecked(&mut f[..]));
        Ipv4Repr {
            src: self.job.switch_ip,
            dst: ip,
            protocol: IpProtocol::UDP,
            payload_len: SWITCHML_MIN_UDP_LEN + p,
            ttl: ipv4::DEFAULT_TTL,
        }
        .emit(&mut Ipv4Packet::new_unchecked(&mut f[IP_OFFSET..L4_OFFSET]));
        UdpRepr { src_port: ports.0, dst_port: ports.1, payload_len: switchml::PREAMBLE_LEN + p }
            .emit(&mut UdpPacket::new_unchecked(&mut f[L4_OFFSET..SWITCHML_OFFSET]));
        let hdr = SWITCHML_OFFSET..SWITCHML_OFFSET + switchml::HEADER_LEN;
        f[hdr.clone()].copy_from_slice(&trigger[hdr]);
        let mut sml = SwitchmlPacket::new_unchecked(&mut f[SWITCHML_OFFSET..]);
        sml.set_exponents(self.state.e0[i], self.state.e1[i]);
        let values = &self.state.values[i * self.k..(i + 1) * self.k];
        for (b, v) in sml.payload_mut().chunks_exact_mut(4).zip(values) {
            b.copy_from_slice(&v.to_be_bytes());
        }
        f
    }

    /// A frame after step 3 of docs/switch.md §1 (untagged, or with its tag removed).
    fn process_untagged(&mut self, frame: &[u8], out: &mut Vec<Vec<u8>>) {
        let class = classify_untagged(&self.job, frame);
        if let Classification::ParentResult { pool } = class {
            // Counted in the tree counters only (docs/switch.md §6).
            return self.parent_result(frame, pool, out);
        }
        self.counters.frames_in += 1;
        let dropped_before = self.counters.dropped_total();
        match class {
            Classification::ParentResult { .. } => unreachable!("handled above"),
            Classification::Contribution { .. }
                if self.session.open && frame[SWITCHML_OFFSET + switchml::field::JOB] != self.session.epoch =>
            {
                self.counters.drops[DropReason::StaleSession.index()] += 1
            }
            Classification::Contribution { rank, pool } => self.contribution(frame, rank, pool, out),
            Classification::Session { rank, pool } => self.session_message(frame, rank, pool, out),
            Classification::ArpRequest => {
                out.push(self.arp_reply(frame));
                self.counters.arp_replies += 1;
                self.counters.frames_out += 1;
            }
            Classification::EchoRequest { total_len } => {
                out.push(self.echo_reply(frame, total_len));
                self.counters.icmp_replies += 1;
                self.counters.frames_out += 1;
            }
            Classification::Drop(r) => self.counters.drops[r.index()] += 1,
        }
        // Handled, not dropped (a stale contribution is dropped after classification).
        if !matches!(class, Classification::ArpRequest)
            && self.counters.dropped_total() == dropped_before
            && zero_checksum_taken(&self.job, frame)
        {
            self.counters.ip_checksum_zero += 1;
        }
    }

    /// Turns a result frame addressed to one rank into the same result for `rank`.
    fn readdress_result(&self, f: &mut [u8], rank: usize) {
        let w = self.job.workers[rank];
        EthernetFrame::new_unchecked(&mut f[..]).set_dst(w.mac);
        let mut ip = Ipv4Packet::new_unchecked(&mut f[IP_OFFSET..L4_OFFSET]);
        ip.set_dst_addr(w.ip);
        ip.fill_checksum();
    }

    /// The ARP reply to request `req` (docs/switch.md §3), 42 bytes.
    fn arp_reply(&self, req: &[u8]) -> Vec<u8> {
        let a = ArpPacket::new_unchecked(&req[IP_OFFSET..]);
        let mut f = vec![0u8; ARP_FRAME_LEN];
        EthernetRepr { dst: a.sha(), src: self.job.switch_mac, ethertype: EtherType::ARP }
            .emit(&mut EthernetFrame::new_unchecked(&mut f[..]));
        ArpRepr {
            operation: ArpOperation::REPLY,
            sha: self.job.switch_mac,
            spa: self.job.switch_ip,
            tha: a.sha(),
            tpa: a.spa(),
        }
        .emit(&mut ArpPacket::new_unchecked(&mut f[IP_OFFSET..]));
        f
    }

    /// The ICMP echo reply to request `req` of IPv4 total length `t` (docs/switch.md §3).
    fn echo_reply(&self, req: &[u8], t: usize) -> Vec<u8> {
        let mut f = req[..IP_OFFSET + t].to_vec();
        let q_src = EthernetFrame::new_unchecked(req).src();
        let mut eth = EthernetFrame::new_unchecked(&mut f[..]);
        eth.set_dst(q_src);
        eth.set_src(self.job.switch_mac);
        let q_ip = Ipv4Packet::new_unchecked(&req[IP_OFFSET..L4_OFFSET]);
        let mut ip = Ipv4Packet::new_unchecked(&mut f[IP_OFFSET..L4_OFFSET]);
        ip.set_src_addr(self.job.switch_ip);
        ip.set_dst_addr(q_ip.src_addr());
        ip.set_ttl(ipv4::DEFAULT_TTL);
        ip.fill_checksum();
        let icmp_end = L4_OFFSET + icmp::HEADER_LEN;
        let q_icmp = icmp::IcmpPacket::new_unchecked(&req[L4_OFFSET..icmp_end]);
        let mut reply = icmp::IcmpPacket::new_unchecked(&mut f[L4_OFFSET..icmp_end]);
        reply.set_type_code(icmp::ECHO_REPLY, 0);
        reply.set_checksum(icmp::reply_checksum(q_icmp.checksum()));
        f
    }
}

impl Engine for RefSwitch {
    fn process(&mut self, frame: &[u8], out: &mut Vec<Vec<u8>>) {
        let start = out.len();
        let mut buf = std::mem::take(&mut self.untagged);
        match untag(&self.job, frame, &mut buf) {
            Ok(f) => self.process_untagged(f, out),
            Err(r) => {
                self.counters.frames_in += 1;
                self.counters.drops[r.index()] += 1;
            }
        }
        self.untagged = buf;
        for f in &mut out[start..] {
            tag(&self.job, f);
        }
    }
    fn counters(&self) -> Counters {
        self.counters.clone()
    }
    fn name(&self) -> &'static str {
        "model"
    }
    fn set_clock(&mut self, now_us: u64) {
        RefSwitch::set_clock(self, now_us)
    }
    fn metrics(&self) -> Vec<Family> {
        let mut f = counter_families(&self.counters, &[]);
        f.extend(self.tree_and_straggler_families(&[]));
        f
    }
    fn session_epoch(&self) -> Option<u8> {
        self.session.open.then_some(self.session.epoch)
    }
}

#[cfg(test)]
#[allow(clippy::type_complexity, clippy::needless_range_loop)]
mod test {
    use super::*;
    use spotagg_driver::wire::PayloadSize;
    use DropReason::*;

    /// Job of these tests: 2 workers (192.0.2.10/02:00:5a:00:01:00, 192.0.2.11/…:01:01),
    /// switch 192.0.2.1/02:00:5a:00:00:01, 128-byte payload (size code 0), S = 4.
    fn job() -> JobConfig {
        JobConfig::example(2, PayloadSize::B128, 4)
    }

    /// Rank 0 → switch, UDP 0xbee0 → 0xbee1, type 1 size 0, job 7, tsi 0xdeadbeef, slot 2 set 0,
    /// e0 = 5, e1 = -3 (payload follows: 128 bytes).
    static C0_HEADER: [u8; 52] = [
        0x02, 0x00, 0x5a, 0x00, 0x00, 0x01, 0x02, 0x00, 0x5a, 0x00, 0x01, 0x00, 0x08, 0x00, //
        0x45, 0x00, 0x00, 0xa6, 0x00, 0x00, 0x00, 0x00, 0x40, 0x11, 0xf6, 0x3b, 0xc0, 0x00, //
        0x02, 0x0a, 0xc0, 0x00, 0x02, 0x01, 0xbe, 0xe0, 0xbe, 0xe1, 0x00, 0x92, 0x00, 0x00, //
        0x10, 0x07, 0xde, 0xad, 0xbe, 0xef, 0x00, 0x02, 0x05, 0xfd,
    ];
    /// Rank 1 → switch, same slot and set, tsi 0x01020304, e0 = -7, e1 = 2.
    static C1_HEADER: [u8; 52] = [
        0x02, 0x00, 0x5a, 0x00, 0x00, 0x01, 0x02, 0x00, 0x5a, 0x00, 0x01, 0x01, 0x08, 0x00, //
        0x45, 0x00, 0x00, 0xa6, 0x00, 0x00, 0x00, 0x00, 0x40, 0x11, 0xf6, 0x3a, 0xc0, 0x00, //
        0x02, 0x0b, 0xc0, 0x00, 0x02, 0x01, 0xbe, 0xe0, 0xbe, 0xe1, 0x00, 0x92, 0x00, 0x00, //
        0x10, 0x07, 0x01, 0x02, 0x03, 0x04, 0x00, 0x02, 0xf9, 0x02,
    ];
    /// Result to rank 0 triggered by C1: C1's SwitchML header, e0 = max(5, -7), e1 = max(-3, 2).
    static R0_HEADER: [u8; 52] = [
        0x02, 0x00, 0x5a, 0x00, 0x01, 0x00, 0x02, 0x00, 0x5a, 0x00, 0x00, 0x01, 0x08, 0x00, //
        0x45, 0x00, 0x00, 0xa6, 0x00, 0x00, 0x00, 0x00, 0x40, 0x11, 0xf6, 0x3b, 0xc0, 0x00, //
        0x02, 0x01, 0xc0, 0x00, 0x02, 0x0a, 0xbe, 0xe1, 0xbe, 0xe0, 0x00, 0x92, 0x00, 0x00, //
        0x10, 0x07, 0x01, 0x02, 0x03, 0x04, 0x00, 0x02, 0x05, 0x02,
    ];
    /// Result to rank 1 triggered by C1.
    static R1_HEADER: [u8; 52] = [
        0x02, 0x00, 0x5a, 0x00, 0x01, 0x01, 0x02, 0x00, 0x5a, 0x00, 0x00, 0x01, 0x08, 0x00, //
        0x45, 0x00, 0x00, 0xa6, 0x00, 0x00, 0x00, 0x00, 0x40, 0x11, 0xf6, 0x3a, 0xc0, 0x00, //
        0x02, 0x01, 0xc0, 0x00, 0x02, 0x0b, 0xbe, 0xe1, 0xbe, 0xe0, 0x00, 0x92, 0x00, 0x00, //
        0x10, 0x07, 0x01, 0x02, 0x03, 0x04, 0x00, 0x02, 0x05, 0x02,
    ];
    /// Result to rank 0 triggered by a retransmission of C0: C0's SwitchML header.
    static RR0_HEADER: [u8; 52] = [
        0x02, 0x00, 0x5a, 0x00, 0x01, 0x00, 0x02, 0x00, 0x5a, 0x00, 0x00, 0x01, 0x08, 0x00, //
        0x45, 0x00, 0x00, 0xa6, 0x00, 0x00, 0x00, 0x00, 0x40, 0x11, 0xf6, 0x3b, 0xc0, 0x00, //
        0x02, 0x01, 0xc0, 0x00, 0x02, 0x0a, 0xbe, 0xe1, 0xbe, 0xe0, 0x00, 0x92, 0x00, 0x00, //
        0x10, 0x07, 0xde, 0xad, 0xbe, 0xef, 0x00, 0x02, 0x05, 0x02,
    ];
    /// ARP request, broadcast, from 02:00:5a:00:01:02 / 192.0.2.12 for 192.0.2.1, padded to 60.
    static ARP_REQUEST: [u8; 60] = [
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02, 0x00, 0x5a, 0x00, 0x01, 0x02, 0x08, 0x06, //
        0x00, 0x01, 0x08, 0x00, 0x06, 0x04, 0x00, 0x01, 0x02, 0x00, 0x5a, 0x00, 0x01, 0x02, //
        0xc0, 0x00, 0x02, 0x0c, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xc0, 0x00, 0x02, 0x01, //
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, //
        0x00, 0x00, 0x00, 0x00,
    ];
    static ARP_REPLY: [u8; 42] = [
        0x02, 0x00, 0x5a, 0x00, 0x01, 0x02, 0x02, 0x00, 0x5a, 0x00, 0x00, 0x01, 0x08, 0x06, //
        0x00, 0x01, 0x08, 0x00, 0x06, 0x04, 0x00, 0x02, 0x02, 0x00, 0x5a, 0x00, 0x00, 0x01, //
        0xc0, 0x00, 0x02, 0x01, 0x02, 0x00, 0x5a, 0x00, 0x01, 0x02, 0xc0, 0x00, 0x02, 0x0c,
    ];
    /// Echo request from 02:00:00:00:00:99 / 198.51.100.7 (not a worker): DSCP 0x10, id 0x4242,
    /// DF, TTL 17, ICMP id 0x1234 seq 1 data "abcd", padded to 60.
    static ECHO_REQUEST: [u8; 60] = [
        0x02, 0x00, 0x5a, 0x00, 0x00, 0x01, 0x02, 0x00, 0x00, 0x00, 0x00, 0x99, 0x08, 0x00, //
        0x45, 0x10, 0x00, 0x20, 0x42, 0x42, 0x40, 0x00, 0x11, 0x01, 0x3b, 0x4f, 0xc6, 0x33, //
        0x64, 0x07, 0xc0, 0x00, 0x02, 0x01, 0x08, 0x00, 0x21, 0x04, 0x12, 0x34, 0x00, 0x01, //
        0x61, 0x62, 0x63, 0x64, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, //
        0x00, 0x00, 0x00, 0x00,
    ];
    /// Its reply: 46 bytes, padding not copied, TTL 64, checksums updated.
    static ECHO_REPLY: [u8; 46] = [
        0x02, 0x00, 0x00, 0x00, 0x00, 0x99, 0x02, 0x00, 0x5a, 0x00, 0x00, 0x01, 0x08, 0x00, //
        0x45, 0x10, 0x00, 0x20, 0x42, 0x42, 0x40, 0x00, 0x40, 0x01, 0x0c, 0x4f, 0xc0, 0x00, //
        0x02, 0x01, 0xc6, 0x33, 0x64, 0x07, 0x00, 0x00, 0x29, 0x04, 0x12, 0x34, 0x00, 0x01, //
        0x61, 0x62, 0x63, 0x64,
    ];

    fn frame(header: &[u8; 52], values: &[i32]) -> Vec<u8> {
        let mut f = header.to_vec();
        for v in values {
            f.extend_from_slice(&v.to_be_bytes());
        }
        f
    }

    /// Worker payloads chosen so that the sum wraps around in both directions.
    fn payloads() -> ([i32; 32], [i32; 32], [i32; 32]) {
        let mut a = [0i32; 32];
        let mut b = [0i32; 32];
        for i in 0..32 {
            a[i] = i as i32 * 1000 - 7;
            b[i] = -(i as i32) * 3;
        }
        a[0] = i32::MAX;
        b[0] = 1;
        a[1] = i32::MIN;
        b[1] = -1;
        a[2] = -5;
        b[2] = 5;
        let mut sum = [0i32; 32];
        for i in 3..32 {
            sum[i] = i as i32 * 997 - 7;
        }
        sum[0] = i32::MIN; // 0x7fffffff + 1 wraps
        sum[1] = i32::MAX; // 0x80000000 - 1 wraps
        sum[2] = 0;
        (a, b, sum)
    }

    fn run(sw: &mut RefSwitch, f: &[u8]) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        sw.process(f, &mut out);
        assert!(sw.counters().is_consistent());
        out
    }

    #[test]
    fn round_multicasts_in_rank_order_then_answers_retransmissions() {
        let (a, b, sum) = payloads();
        let mut sw = RefSwitch::new(job());
        let c0 = frame(&C0_HEADER, &a);
        let c1 = frame(&C1_HEADER, &b);
        assert_eq!(
            classify(sw.job(), &c0),
            Classification::Contribution { rank: 0, pool: PoolIndex { slot: 2, set: 0 } }
        );
        assert!(run(&mut sw, &c0).is_empty());
        assert_eq!(sw.slot(2, 0).0, 0b01);
        // A retransmission to an incomplete round is dropped silently.
        assert!(run(&mut sw, &c0).is_empty());
        let out = run(&mut sw, &c1);
        assert_eq!(out, vec![frame(&R0_HEADER, &sum), frame(&R1_HEADER, &sum)]);
        // Retransmission of the complete round: the stored result, to the sender only, under
        // the retransmission's own SwitchML header.
        assert_eq!(run(&mut sw, &c0), vec![frame(&RR0_HEADER, &sum)]);
        let c = sw.counters();
        assert_eq!((c.frames_in, c.frames_out, c.contributions, c.duplicates), (4, 3, 2, 2));
        assert_eq!((c.results_multicast, c.results_retransmitted, c.dropped_total()), (2, 1, 0));
    }

    /// Rank 0's session join (msg_type 8, size 0, proposed epoch 1, tsi 0, slot 0 set 1), the
    /// same Ethernet/IPv4/UDP header as C0 (ports 0xbee0 → 0xbee1); 128 zero bytes follow.
    static J0_HEADER: [u8; 52] = [
        0x02, 0x00, 0x5a, 0x00, 0x00, 0x01, 0x02, 0x00, 0x5a, 0x00, 0x01, 0x00, 0x08, 0x00, //
        0x45, 0x00, 0x00, 0xa6, 0x00, 0x00, 0x00, 0x00, 0x40, 0x11, 0xf6, 0x3b, 0xc0, 0x00, //
        0x02, 0x0a, 0xc0, 0x00, 0x02, 0x01, 0xbe, 0xe0, 0xbe, 0xe1, 0x00, 0x92, 0x00, 0x00, //
        0x80, 0x01, 0x00, 0x00, 0x00, 0x00, 0x80, 0x00, 0x00, 0x00,
    ];
    /// Rank 1's join of epoch 1, as C1's header.
    static J1_HEADER: [u8; 52] = [
        0x02, 0x00, 0x5a, 0x00, 0x00, 0x01, 0x02, 0x00, 0x5a, 0x00, 0x01, 0x01, 0x08, 0x00, //
        0x45, 0x00, 0x00, 0xa6, 0x00, 0x00, 0x00, 0x00, 0x40, 0x11, 0xf6, 0x3a, 0xc0, 0x00, //
        0x02, 0x0b, 0xc0, 0x00, 0x02, 0x01, 0xbe, 0xe0, 0xbe, 0xe1, 0x00, 0x92, 0x00, 0x00, //
        0x80, 0x01, 0x00, 0x00, 0x00, 0x00, 0x80, 0x00, 0x00, 0x00,
    ];
    /// Rank 1's probe (set 0), proposing 0x55 (a probe's proposal is ignored).
    static P1_HEADER: [u8; 52] = [
        0x02, 0x00, 0x5a, 0x00, 0x00, 0x01, 0x02, 0x00, 0x5a, 0x00, 0x01, 0x01, 0x08, 0x00, //
        0x45, 0x00, 0x00, 0xa6, 0x00, 0x00, 0x00, 0x00, 0x40, 0x11, 0xf6, 0x3a, 0xc0, 0x00, //
        0x02, 0x0b, 0xc0, 0x00, 0x02, 0x01, 0xbe, 0xe0, 0xbe, 0xe1, 0x00, 0x92, 0x00, 0x00, //
        0x80, 0x55, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    ];
    /// The reply to rank 1's probe before any session: epoch 0 (the job's `job_number`).
    static P1_REPLY: [u8; 52] = [
        0x02, 0x00, 0x5a, 0x00, 0x01, 0x01, 0x02, 0x00, 0x5a, 0x00, 0x00, 0x01, 0x08, 0x00, //
        0x45, 0x00, 0x00, 0xa6, 0x00, 0x00, 0x00, 0x00, 0x40, 0x11, 0xf6, 0x3a, 0xc0, 0x00, //
        0x02, 0x01, 0xc0, 0x00, 0x02, 0x0b, 0xbe, 0xe1, 0xbe, 0xe0, 0x00, 0x92, 0x00, 0x00, //
        0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    ];
    /// The session-open reply to rank 0, triggered by rank 1's join: epoch 1.
    static OPEN0_REPLY: [u8; 52] = [
        0x02, 0x00, 0x5a, 0x00, 0x01, 0x00, 0x02, 0x00, 0x5a, 0x00, 0x00, 0x01, 0x08, 0x00, //
        0x45, 0x00, 0x00, 0xa6, 0x00, 0x00, 0x00, 0x00, 0x40, 0x11, 0xf6, 0x3b, 0xc0, 0x00, //
        0x02, 0x01, 0xc0, 0x00, 0x02, 0x0a, 0xbe, 0xe1, 0xbe, 0xe0, 0x00, 0x92, 0x00, 0x00, //
        0x80, 0x01, 0x00, 0x00, 0x00, 0x00, 0x80, 0x00, 0x00, 0x00,
    ];
    /// The same to rank 1.
    static OPEN1_REPLY: [u8; 52] = [
        0x02, 0x00, 0x5a, 0x00, 0x01, 0x01, 0x02, 0x00, 0x5a, 0x00, 0x00, 0x01, 0x08, 0x00, //
        0x45, 0x00, 0x00, 0xa6, 0x00, 0x00, 0x00, 0x00, 0x40, 0x11, 0xf6, 0x3a, 0xc0, 0x00, //
        0x02, 0x01, 0xc0, 0x00, 0x02, 0x0b, 0xbe, 0xe1, 0xbe, 0xe0, 0x00, 0x92, 0x00, 0x00, //
        0x80, 0x01, 0x00, 0x00, 0x00, 0x00, 0x80, 0x00, 0x00, 0x00,
    ];

    fn zeros(header: &[u8; 52]) -> Vec<u8> {
        frame(header, &[0; 32])
    }

    #[test]
    fn a_session_opens_when_every_rank_joined_and_clears_what_was_left_behind() {
        let (a, b, sum) = payloads();
        let mut sw = RefSwitch::new(job());
        // Left behind by an earlier run: rank 0's contribution of job 7 to slot 2, set 0.
        assert!(run(&mut sw, &frame(&C0_HEADER, &a)).is_empty());
        assert_eq!(sw.session(), SessionState { epoch: 0, open: false, joined: 0 });
        // A probe is answered at once, to its sender, with the current epoch.
        assert_eq!(
            classify(sw.job(), &zeros(&P1_HEADER)),
            Classification::Session { rank: 1, pool: PoolIndex { slot: 0, set: 0 } }
        );
        assert_eq!(run(&mut sw, &zeros(&P1_HEADER)), vec![zeros(&P1_REPLY)]);
        // Rank 0 joins epoch 1 (silent, also when repeated); rank 1's join opens it.
        assert!(run(&mut sw, &zeros(&J0_HEADER)).is_empty());
        assert!(run(&mut sw, &zeros(&J0_HEADER)).is_empty());
        assert_eq!(sw.session().joined, 0b01);
        assert_eq!(run(&mut sw, &zeros(&J1_HEADER)), vec![zeros(&OPEN0_REPLY), zeros(&OPEN1_REPLY)]);
        assert_eq!(sw.session(), SessionState { epoch: 1, open: true, joined: 0 });
        assert_eq!(sw.slot(2, 0).0, 0, "the slots are cleared");
        // A join repeated after the opening (its reply was lost) is answered with epoch 1.
        assert_eq!(run(&mut sw, &zeros(&J0_HEADER)), vec![zeros(&OPEN0_REPLY)]);
        // Frames of the earlier session (job 7) change nothing.
        assert!(run(&mut sw, &frame(&C1_HEADER, &b)).is_empty());
        assert_eq!(sw.counters().dropped(StaleSession), 1);
        assert_eq!(sw.slot(2, 0).0, 0);
        // The new session's round on slot 2 starts from zero: job 1 in both contributions.
        let (mut c0, mut c1) = (frame(&C0_HEADER, &a), frame(&C1_HEADER, &b));
        c0[43] = 1;
        c1[43] = 1;
        assert!(run(&mut sw, &c0).is_empty());
        let out = run(&mut sw, &c1);
        let (mut r0, mut r1) = (frame(&R0_HEADER, &sum), frame(&R1_HEADER, &sum));
        r0[43] = 1;
        r1[43] = 1;
        assert_eq!(out, vec![r0, r1]);
        let c = sw.counters();
        // Contributions: C0 (old), J0, J1, c0, c1; duplicates: P1, J0 twice (once answered); C1 stale.
        assert_eq!(
            (c.frames_in, c.contributions, c.duplicates, c.results_multicast, c.results_retransmitted),
            (9, 5, 3, 4, 2)
        );
    }

    #[test]
    fn a_worker_address_on_another_port_is_dropped_under_its_own_reason() {
        let (a, _, _) = payloads();
        let mut sw = RefSwitch::new(job());
        let mut f = frame(&C0_HEADER, &a);
        // Source port 0xc000 (an ephemeral port) instead of the job's worker port 0xbee0.
        f[34] = 0xc0;
        f[35] = 0x00;
        assert_eq!(classify(sw.job(), &f), Classification::Drop(WrongSrcPort));
        assert!(run(&mut sw, &f).is_empty());
        assert_eq!(sw.slot(2, 0).0, 0);
        // An outsider's address is still `unknown_source`, whatever its port.
        f[29] = 0x63;
        assert_eq!(classify(sw.job(), &f), Classification::Drop(IpChecksum));
        assert_eq!(sw.counters().dropped(WrongSrcPort), 1);
    }

    /// C0 as a SwitchML DPDK worker sends it after its first window: from worker thread 2's port
    /// 4002 (0x0fa2, `worker_port` 4000 + 2) and the IPv4 header checksum left at 0.
    static C0Z_HEADER: [u8; 52] = [
        0x02, 0x00, 0x5a, 0x00, 0x00, 0x01, 0x02, 0x00, 0x5a, 0x00, 0x01, 0x00, 0x08, 0x00, //
        0x45, 0x00, 0x00, 0xa6, 0x00, 0x00, 0x00, 0x00, 0x40, 0x11, 0x00, 0x00, 0xc0, 0x00, //
        0x02, 0x0a, 0xc0, 0x00, 0x02, 0x01, 0x0f, 0xa2, 0xbe, 0xe1, 0x00, 0x92, 0x00, 0x00, //
        0x10, 0x07, 0xde, 0xad, 0xbe, 0xef, 0x00, 0x02, 0x05, 0xfd,
    ];
    /// C1 the same way: port 4002, checksum 0.
    static C1Z_HEADER: [u8; 52] = [
        0x02, 0x00, 0x5a, 0x00, 0x00, 0x01, 0x02, 0x00, 0x5a, 0x00, 0x01, 0x01, 0x08, 0x00, //
        0x45, 0x00, 0x00, 0xa6, 0x00, 0x00, 0x00, 0x00, 0x40, 0x11, 0x00, 0x00, 0xc0, 0x00, //
        0x02, 0x0b, 0xc0, 0x00, 0x02, 0x01, 0x0f, 0xa2, 0xbe, 0xe1, 0x00, 0x92, 0x00, 0x00, //
        0x10, 0x07, 0x01, 0x02, 0x03, 0x04, 0x00, 0x02, 0xf9, 0x02,
    ];
    /// The results of that round: R0 and R1 to port 4002, their checksums computed.
    static R0Z_HEADER: [u8; 52] = [
        0x02, 0x00, 0x5a, 0x00, 0x01, 0x00, 0x02, 0x00, 0x5a, 0x00, 0x00, 0x01, 0x08, 0x00, //
        0x45, 0x00, 0x00, 0xa6, 0x00, 0x00, 0x00, 0x00, 0x40, 0x11, 0xf6, 0x3b, 0xc0, 0x00, //
        0x02, 0x01, 0xc0, 0x00, 0x02, 0x0a, 0xbe, 0xe1, 0x0f, 0xa2, 0x00, 0x92, 0x00, 0x00, //
        0x10, 0x07, 0x01, 0x02, 0x03, 0x04, 0x00, 0x02, 0x05, 0x02,
    ];
    static R1Z_HEADER: [u8; 52] = [
        0x02, 0x00, 0x5a, 0x00, 0x01, 0x01, 0x02, 0x00, 0x5a, 0x00, 0x00, 0x01, 0x08, 0x00, //
        0x45, 0x00, 0x00, 0xa6, 0x00, 0x00, 0x00, 0x00, 0x40, 0x11, 0xf6, 0x3a, 0xc0, 0x00, //
        0x02, 0x01, 0xc0, 0x00, 0x02, 0x0b, 0xbe, 0xe1, 0x0f, 0xa2, 0x00, 0x92, 0x00, 0x00, //
        0x10, 0x07, 0x01, 0x02, 0x03, 0x04, 0x00, 0x02, 0x05, 0x02,
    ];

    /// SwitchML's DPDK workers with their defaults (docs/switch.md §1 6.4 and 7.5): worker port
    /// 4000 and 4 threads, checksums left at 0 after the first window.
    fn switchml_job() -> JobConfig {
        JobConfig { worker_port: 4000, worker_ports: 4, zero_ip_checksum: true, ..job() }
    }

    #[test]
    fn switchml_worker_ports_and_zero_checksums_are_served_and_counted() {
        let (a, b, sum) = payloads();
        // A job without them: the zero checksum is `ip_checksum`, the port `wrong_src_port`.
        assert_eq!(classify(&job(), &frame(&C0Z_HEADER, &a)), Classification::Drop(IpChecksum));
        let mut ok_sum = frame(&C0Z_HEADER, &a);
        ok_sum[24..26].copy_from_slice(&[0xf6, 0x3b]);
        assert_eq!(classify(&job(), &ok_sum), Classification::Drop(WrongSrcPort));
        assert!(matches!(classify(&switchml_job(), &ok_sum), Classification::Contribution { rank: 0, .. }));

        let mut sw = RefSwitch::new(switchml_job());
        assert!(run(&mut sw, &frame(&C0Z_HEADER, &a)).is_empty());
        let out = run(&mut sw, &frame(&C1Z_HEADER, &b));
        assert_eq!(out, vec![frame(&R0Z_HEADER, &sum), frame(&R1Z_HEADER, &sum)], "both to port 4002");
        // A retransmission of C0 (checksum 0) is answered to its own port, 4002.
        let rr = run(&mut sw, &frame(&C0Z_HEADER, &a));
        assert_eq!(rr.len(), 1);
        assert_eq!(&rr[0][36..38], &[0x0f, 0xa2]);
        let c = sw.counters();
        assert_eq!((c.contributions, c.duplicates, c.results_multicast, c.results_retransmitted), (2, 1, 2, 1));
        assert_eq!(c.ip_checksum_zero, 3, "the three frames with checksum 0, each also where it landed");
        assert_eq!(c.dropped_total(), 0);

        // Outside 4000..4004, or a wrong non-zero checksum: dropped as before, never counted zero.
        for (port, reason) in [([0x0f, 0x9f], WrongSrcPort), ([0x0f, 0xa4], WrongSrcPort)] {
            let mut f = frame(&C0Z_HEADER, &a);
            f[34..36].copy_from_slice(&port);
            assert_eq!(classify(sw.job(), &f), Classification::Drop(reason), "port {port:02x?}");
            assert!(run(&mut sw, &f).is_empty());
        }
        let mut f = frame(&C0Z_HEADER, &a);
        f[24..26].copy_from_slice(&[0x00, 0x01]);
        assert_eq!(classify(sw.job(), &f), Classification::Drop(IpChecksum));
        assert!(run(&mut sw, &f).is_empty());
        let c = sw.counters();
        assert_eq!((c.dropped(WrongSrcPort), c.dropped(IpChecksum), c.ip_checksum_zero), (2, 1, 3));
        assert!(c.is_consistent());
    }

    /// `header` moved to 16-bit lanes (docs/switch.md §9): a contribution's UDP destination
    /// port (byte 37) or a result's source port (byte 35) from 0xBEEx to 0xBEFx. The IPv4
    /// checksum does not cover the ports, and the UDP checksum is not checked.
    fn lanes16(header: &[u8; 52], at: usize) -> [u8; 52] {
        let mut h = *header;
        assert_eq!(h[at] & 0xf0, 0xe0);
        h[at] |= 0x10;
        h
    }

    /// 16-bit lanes: payloads as big-endian int16 pairs whose lane sums wrap in both directions
    /// and whose low lanes carry out of bit 15, and the lane-wise sums.
    fn lane_payloads() -> ([i32; 32], [i32; 32], [i32; 32]) {
        let word = |hi: i16, lo: i16| (u32::from(hi as u16) << 16 | u32::from(lo as u16)) as i32;
        let (mut a, mut b, mut sum) = ([0i32; 32], [0i32; 32], [0i32; 32]);
        for i in 0..32 {
            let (ah, al) = (i as i16 * 1000 - 7, -(i as i16) * 900);
            let (bh, bl) = (-(i as i16) * 3, i as i16 * 31);
            a[i] = word(ah, al);
            b[i] = word(bh, bl);
            sum[i] = word(ah.wrapping_add(bh), al.wrapping_add(bl));
        }
        // 0x7fff + 1 wraps to -32768 in the high lane; 0xffff + 1 carries out of the low lane
        // (and must not reach the high one); -32768 - 1 wraps to 0x7fff.
        (a[0], b[0], sum[0]) = (word(i16::MAX, -1), word(1, 1), word(i16::MIN, 0));
        (a[1], b[1], sum[1]) = (word(-1, i16::MIN), word(-1, -1), word(-2, i16::MAX));
        (a[2], b[2], sum[2]) = (word(0, -1), word(0, -1), word(0, -2));
        // The same words as bytes on the wire.
        assert_eq!(a[0].to_be_bytes(), [0x7f, 0xff, 0xff, 0xff]);
        assert_eq!(sum[0].to_be_bytes(), [0x80, 0x00, 0x00, 0x00]);
        assert_eq!(sum[2].to_be_bytes(), [0x00, 0x00, 0xff, 0xfe]);
        (a, b, sum)
    }

    #[test]
    fn sixteen_bit_lanes_sum_each_lane_and_answer_from_their_port() {
        let (a, b, sum) = lane_payloads();
        let job16 = JobConfig { lanes16: true, ..job() };
        let (c0, c1) = (frame(&lanes16(&C0_HEADER, 37), &a), frame(&lanes16(&C1_HEADER, 37), &b));
        // A job without 16-bit lanes drops the frame as a bad port.
        assert_eq!(classify(&job(), &c0), Classification::Drop(BadPort));
        let mut sw = RefSwitch::new(job16);
        assert!(run(&mut sw, &c0).is_empty());
        let out = run(&mut sw, &c1);
        assert_eq!(out, vec![frame(&lanes16(&R0_HEADER, 35), &sum), frame(&lanes16(&R1_HEADER, 35), &sum)]);
        // A 16-bit retransmission is answered from the stored sums, from the 16-bit port.
        assert_eq!(run(&mut sw, &c0), vec![frame(&lanes16(&RR0_HEADER, 35), &sum)]);
        // A 32-bit retransmission of the same round is a mismatch: dropped, nothing changes.
        let before = sw.clone();
        assert!(run(&mut sw, &frame(&C0_HEADER, &a)).is_empty());
        assert!(sw.same_slots(&before));
        assert_eq!(sw.counters().dropped(LaneMismatch), 1);
        let c = sw.counters();
        assert_eq!((c.contributions, c.duplicates, c.results_multicast, c.results_retransmitted), (2, 1, 2, 1));
        // The same payloads as 32-bit lanes sum with carries across the halves.
        let mut sw = RefSwitch::new(JobConfig { lanes16: true, ..job() });
        run(&mut sw, &frame(&C0_HEADER, &a));
        let out = run(&mut sw, &frame(&C1_HEADER, &b));
        assert_eq!(&out[0][PAYLOAD_OFFSET..PAYLOAD_OFFSET + 4], &[0x80, 0x01, 0x00, 0x00]);
    }

    #[test]
    fn a_contribution_of_the_other_width_changes_nothing() {
        let (a, b, sum) = lane_payloads();
        let mut sw = RefSwitch::new(JobConfig { lanes16: true, ..job() });
        run(&mut sw, &frame(&lanes16(&C0_HEADER, 37), &a));
        let before = sw.clone();
        // Rank 1 sends the round's slot as 32 bits: dropped, the round still waits for it.
        assert!(run(&mut sw, &frame(&C1_HEADER, &b)).is_empty());
        assert!(sw.same_slots(&before));
        assert_eq!(sw.slot(2, 0).1, 1);
        // Rank 0 retransmits at the other width: dropped too, not a duplicate.
        assert!(run(&mut sw, &frame(&C0_HEADER, &a)).is_empty());
        let c = sw.counters();
        assert_eq!((c.dropped(LaneMismatch), c.duplicates, c.frames_in), (2, 0, 3));
        // At its round's width it completes the round.
        let out = run(&mut sw, &frame(&lanes16(&C1_HEADER, 37), &b));
        assert_eq!(out[0], frame(&lanes16(&R0_HEADER, 35), &sum));
        // The next round of the slot (the other set) may change width: its first contribution
        // sets it.
        let mut next = C0_HEADER;
        next[48] |= 0x80;
        assert!(run(&mut sw, &frame(&next, &a)).is_empty());
        assert_eq!(sw.slot(2, 1).1, 1);
        assert_eq!(sw.counters().dropped(LaneMismatch), 2);
    }

    #[test]
    fn a_sixteen_bit_round_goes_up_to_the_parents_sixteen_bit_port() {
        let (a, b, sum) = lane_payloads();
        let parent = spotagg_driver::config::ParentConfig {
            ip: Ipv4Addr::new(192, 0, 2, 100),
            mac: MacAddr([0x02, 0x00, 0x5a, 0x00, 0x00, 0x64]),
            port: 0xbee2,
            rank: 3,
        };
        let mut sw = RefSwitch::new(JobConfig { lanes16: true, parent: Some(parent), tree_workers: 8, ..job() });
        run(&mut sw, &frame(&lanes16(&C0_HEADER, 37), &a));
        let out = run(&mut sw, &frame(&lanes16(&C1_HEADER, 37), &b));
        assert_eq!(out.len(), 1);
        let up = &out[0];
        assert_eq!((be16(&up[34..]), be16(&up[36..])), (0xbef1, 0xbef2), "from the leaf's port to the parent's");
        assert_eq!(&up[PAYLOAD_OFFSET..], &frame(&C0_HEADER, &sum)[PAYLOAD_OFFSET..]);
        // The parent's result comes back from its 16-bit port to the leaf's: a 32-bit copy of
        // it is stale, the 16-bit one is multicast.
        let mut down = up.clone();
        down[0..6].copy_from_slice(&sw.job().switch_mac.0);
        down[6..12].copy_from_slice(&parent.mac.0);
        down[26..30].copy_from_slice(&parent.ip.octets());
        down[30..34].copy_from_slice(&sw.job().switch_ip.octets());
        (down[35], down[37]) = (0xf2, 0xf1);
        let ip = &mut Ipv4Packet::new_unchecked(&mut down[IP_OFFSET..L4_OFFSET]);
        ip.fill_checksum();
        let mut stale = down.clone();
        stale[37] = 0xe1;
        assert!(run(&mut sw, &stale).is_empty());
        assert_eq!(sw.tree_counters().parent_results_stale, 1);
        let out = run(&mut sw, &down);
        assert_eq!(out.len(), 2);
        assert_eq!((be16(&out[0][34..]), be16(&out[0][36..])), (0xbef1, 0xbee0));
        assert_eq!(sw.tree_counters().parent_results, 1);
    }

    #[test]
    fn other_set_clears_the_bit_and_first_writes() {
        let (a, b, _) = payloads();
        let mut sw = RefSwitch::new(job());
        run(&mut sw, &frame(&C0_HEADER, &a));
        run(&mut sw, &frame(&C1_HEADER, &b));
        // Rank 0 moves on to set 1 of slot 2: its bit in set 0 is cleared, set 1 is written.
        let mut next = frame(&C0_HEADER, &b);
        next[48] = 0x80;
        assert!(run(&mut sw, &next).is_empty());
        assert_eq!(sw.slot(2, 0).0, 0b10);
        let (seen, count, e0, e1, values) = sw.slot(2, 1);
        assert_eq!((seen, count, e0, e1), (0b01, 1, 5, -3));
        assert_eq!(values, &b[..]);
        // Rank 1 retransmits its set-0 contribution: still seen, round complete → result.
        let out = run(&mut sw, &frame(&C1_HEADER, &b));
        assert_eq!(out.len(), 1);
        assert_eq!(&out[0][..6], &[0x02, 0x00, 0x5a, 0x00, 0x01, 0x01]);
        // Rank 0 sends set 0 again: new (its bit was cleared), first of a new round: written.
        run(&mut sw, &frame(&C0_HEADER, &a));
        let (seen, count, _, _, values) = sw.slot(2, 0);
        assert_eq!((seen, count), (0b11, 1));
        assert_eq!(values, &a[..]);
    }

    #[test]
    fn single_worker_every_new_contribution_completes() {
        let (a, _, _) = payloads();
        let mut sw = RefSwitch::new(JobConfig::example(1, PayloadSize::B128, 4));
        let c0 = frame(&C0_HEADER, &a);
        let out = run(&mut sw, &c0);
        let mut expect = frame(&RR0_HEADER, &a);
        expect[51] = 0xfd; // e1 = -3: C0's own exponents, no maximum taken
        assert_eq!(out, vec![expect]);
        assert_eq!(run(&mut sw, &c0).len(), 1);
        let mut other = c0.clone();
        other[48] = 0x80;
        assert_eq!(run(&mut sw, &other).len(), 1);
        assert_eq!(run(&mut sw, &c0).len(), 1);
        let c = sw.counters();
        assert_eq!((c.contributions, c.duplicates, c.results_multicast, c.results_retransmitted), (3, 1, 3, 1));
    }

    /// A tagged job: VLAN 100, replies with PCP 5 (TCI 0xa064).
    fn tagged_job() -> JobConfig {
        JobConfig { vlan: Some(spotagg_driver::JobVlan { id: 100, priority: 5 }), ..job() }
    }

    /// `f` with the 4 bytes `tag` inserted after byte 12, written out as literals.
    fn with_tag(f: &[u8], tag: [u8; 4]) -> Vec<u8> {
        [&f[..12], &tag[..], &f[12..]].concat()
    }

    #[test]
    fn tagged_job_takes_its_vlan_and_tags_every_reply() {
        let (a, b, sum) = payloads();
        let mut sw = RefSwitch::new(tagged_job());
        // Contributions on VLAN 100 with PCP 3 and DEI 1 (both ignored): 0x8100 0x3064.
        let c0 = with_tag(&frame(&C0_HEADER, &a), [0x81, 0x00, 0x30, 0x64]);
        let c1 = with_tag(&frame(&C1_HEADER, &b), [0x81, 0x00, 0x10, 0x64]);
        assert_eq!(c0[12..18], [0x81, 0x00, 0x30, 0x64, 0x08, 0x00]);
        assert!(run(&mut sw, &c0).is_empty());
        let out = run(&mut sw, &c1);
        // Both results carry the job's TCI, 0xa064, not the trigger's.
        let r0 = with_tag(&frame(&R0_HEADER, &sum), [0x81, 0x00, 0xa0, 0x64]);
        let r1 = with_tag(&frame(&R1_HEADER, &sum), [0x81, 0x00, 0xa0, 0x64]);
        assert_eq!(out, vec![r0, r1]);
        assert_eq!(out[0].len(), 56 + 128);
        assert_eq!(run(&mut sw, &c0), vec![with_tag(&frame(&RR0_HEADER, &sum), [0x81, 0x00, 0xa0, 0x64])]);
        // ARP and ping on the VLAN are answered on it.
        let arp = with_tag(&ARP_REQUEST, [0x81, 0x00, 0x00, 0x64]);
        assert_eq!(run(&mut sw, &arp), vec![with_tag(&ARP_REPLY, [0x81, 0x00, 0xa0, 0x64])]);
        let echo = with_tag(&ECHO_REQUEST, [0x81, 0x00, 0xe0, 0x64]);
        let reply = run(&mut sw, &echo);
        assert_eq!(reply, vec![with_tag(&ECHO_REPLY, [0x81, 0x00, 0xa0, 0x64])]);
        assert_eq!(reply[0].len(), 18 + 0x20);
        let c = sw.counters();
        assert_eq!((c.contributions, c.results_multicast, c.arp_replies, c.icmp_replies), (2, 2, 1, 1));
        assert_eq!(c.dropped_total(), 0);
    }

    #[test]
    fn tagged_job_drops_what_is_not_on_its_vlan() {
        let (a, _, _) = payloads();
        let job = tagged_job();
        let c0 = frame(&C0_HEADER, &a);
        let cases: Vec<(&str, Vec<u8>, Option<DropReason>)> = vec![
            ("untagged", c0.clone(), Some(WrongVlan)),
            ("VLAN 101", with_tag(&c0, [0x81, 0x00, 0xa0, 0x65]), Some(WrongVlan)),
            ("priority-tagged, VID 0", with_tag(&c0, [0x81, 0x00, 0xa0, 0x00]), Some(WrongVlan)),
            ("802.1ad outer tag", with_tag(&c0, [0x88, 0xa8, 0x00, 0x64]), Some(WrongVlan)),
            ("DEI set: still VLAN 100, taken", with_tag(&c0, [0x81, 0x00, 0x10, 0x64]), None),
            ("untagged ARP", ARP_REQUEST.to_vec(), Some(WrongVlan)),
            ("15 bytes: no whole tag", with_tag(&c0, [0x81, 0x00, 0x00, 0x64])[..15].to_vec(), Some(Truncated)),
            ("16 bytes, VLAN 101", with_tag(&c0, [0x81, 0x00, 0x00, 0x65])[..16].to_vec(), Some(WrongVlan)),
            (
                "17 bytes, VLAN 100: 13 without the tag",
                with_tag(&c0, [0x81, 0x00, 0x00, 0x64])[..17].to_vec(),
                Some(Truncated),
            ),
            ("13 bytes", c0[..13].to_vec(), Some(Truncated)),
            (
                "wrong destination before the tag",
                [&[0x02, 0, 0, 0, 0, 9][..], &with_tag(&c0, [0x81, 0x00, 0x00, 0x65])[6..]].concat(),
                Some(WrongDstMac),
            ),
        ];
        for (what, f, reason) in &cases {
            let got = classify(&job, f);
            match reason {
                None => assert!(matches!(got, Classification::Contribution { .. }), "{what}: {got:?}"),
                Some(r) => assert_eq!(got, Classification::Drop(*r), "{what}"),
            }
        }
        // An untagged job drops a tagged frame as not IPv4 (EtherType 0x8100), as before.
        assert_eq!(
            classify(&job_untagged(), &with_tag(&c0, [0x81, 0x00, 0x00, 0x64])),
            Classification::Drop(NotIpv4Udp)
        );
        let mut sw = RefSwitch::new(job);
        for (_, f, _) in &cases[..4] {
            assert!(run(&mut sw, f).is_empty());
        }
        assert_eq!(sw.counters().dropped(WrongVlan), 4);
        assert_eq!(sw.slot(2, 0).0, 0);
    }

    fn job_untagged() -> JobConfig {
        job()
    }

    #[test]
    fn arp_reply() {
        let mut sw = RefSwitch::new(job());
        assert_eq!(run(&mut sw, &ARP_REQUEST), vec![ARP_REPLY.to_vec()]);
        // Unpadded request to the switch's own MAC.
        let mut req = ARP_REQUEST[..42].to_vec();
        req[..6].copy_from_slice(&[0x02, 0x00, 0x5a, 0x00, 0x00, 0x01]);
        assert_eq!(run(&mut sw, &req), vec![ARP_REPLY.to_vec()]);
        assert_eq!(sw.counters().arp_replies, 2);
    }

    #[test]
    fn echo_reply() {
        let mut sw = RefSwitch::new(job());
        assert_eq!(run(&mut sw, &ECHO_REQUEST), vec![ECHO_REPLY.to_vec()]);
        assert_eq!(sw.counters().icmp_replies, 1);
    }

    #[test]
    fn link_padding_broadcast_and_unused_bit_are_accepted() {
        let (a, _, _) = payloads();
        let mut f = frame(&C0_HEADER, &a);
        f.extend_from_slice(&[0xee; 7]);
        f[..6].copy_from_slice(&[0xff; 6]);
        f[42] |= 0x08;
        assert!(matches!(classify(&job(), &f), Classification::Contribution { rank: 0, .. }));
    }

    #[test]
    fn checksum_field_ffff_verifies_where_0000_is_computed() {
        let (a, _, _) = payloads();
        // C0 with identification 0xf63b: the computed checksum is 0x0000.
        let f = apply(&frame(&C0_HEADER, &a), &[(18, &[0xf6, 0x3b]), (24, &[0x00, 0x00])], None);
        assert!(matches!(classify(&job(), &f), Classification::Contribution { .. }));
        let f = apply(&f, &[(24, &[0xff, 0xff])], None);
        assert!(matches!(classify(&job(), &f), Classification::Contribution { .. }));
    }

    #[test]
    fn reconfiguring_clears_the_slots_and_keeps_the_counters() {
        let (a, _, _) = payloads();
        let mut sw = RefSwitch::new(job());
        run(&mut sw, &frame(&C0_HEADER, &a));
        sw.configure(job());
        assert!(sw.same_slots(&RefSwitch::new(job())));
        assert_eq!(sw.counters().contributions, 1);
    }

    type Patch = (usize, &'static [u8]);

    /// Mutations of C0 (computed independently of this crate): reason, what, byte patches,
    /// new frame length.
    #[rustfmt::skip]
    fn contribution_mutations() -> Vec<(DropReason, &'static str, &'static [Patch], Option<usize>)> {
        vec![
            (Truncated, "13 bytes", &[], Some(13)),
            (Truncated, "IPv4 header cut (33 bytes)", &[], Some(33)),
            (Truncated, "T = 24 < 28 for UDP", &[(17, &[0x18]), (25, &[0xc9])], None),
            (Truncated, "UDP length 17 < 18", &[(17, &[0x25]), (25, &[0xbc]), (39, &[0x11])], None),
            (WrongDstMac, "another unicast MAC", &[(5, &[0x02])], None),
            (WrongDstMac, "multicast MAC", &[(0, &[0x01]), (2, &[0x5e])], None),
            (NotIpv4Udp, "EtherType IPv6", &[(12, &[0x86, 0xdd])], None),
            (NotIpv4Udp, "IP version 6 (checked before the checksum)", &[(14, &[0x65])], None),
            (NotIpv4Udp, "protocol TCP", &[(23, &[0x06]), (25, &[0x46])], None),
            (IpOptions, "IHL 6", &[(14, &[0x46])], None),
            (IpChecksum, "checksum off by one", &[(25, &[0x3a])], None),
            (BadLength, "T past the frame", &[(17, &[0xa7]), (25, &[0x3a])], None),
            (BadLength, "T < 20", &[(17, &[0x13]), (25, &[0xce])], None),
            (BadLength, "UDP length != T - 20", &[(39, &[0x91])], None),
            (BadLength, "payload 124 bytes for size 128", &[(17, &[0xa2]), (25, &[0x3f]), (39, &[0x8e])], Some(176)),
            (IpFragment, "MF set", &[(20, &[0x20]), (24, &[0xd6])], None),
            (IpFragment, "fragment offset 1", &[(21, &[0x01]), (25, &[0x3a])], None),
            (WrongDstIp, "IPv4 destination 192.0.2.2", &[(25, &[0x3a]), (33, &[0x02])], None),
            (BadPort, "port 0xBEF0", &[(37, &[0xf0])], None),
            (BadPort, "port 0x1234", &[(36, &[0x12, 0x34])], None),
            (UnknownSource, "source 192.0.2.99", &[(24, &[0xf5, 0xe2]), (29, &[0x63])], None),
            (WrongSrcPort, "source port 0xbee1 (a rank's address)", &[(35, &[0xe1])], None),
            (WrongSrcPort, "source port 0xc000 and msg_type 0 (port first)", &[(34, &[0xc0, 0x00]), (42, &[0x00])], None),
            (BadMsgType, "msg_type 2", &[(42, &[0x20])], None),
            (BadMsgType, "msg_type 9 (session is 8)", &[(42, &[0x90])], None),
            (BadMsgType, "msg_type 0", &[(42, &[0x00])], None),
            (BadSize, "size 256 for a 128-byte job", &[(42, &[0x11])], None),
            (BadSize, "size code 7", &[(42, &[0x17])], None),
            (BadSlot, "slot 4 = S", &[(49, &[0x04])], None),
            (BadSlot, "slot 0x7fff, set 1", &[(48, &[0xff, 0xff])], None),
        ]
    }

    /// Mutations of the ARP request and the echo request.
    #[rustfmt::skip]
    fn arp_icmp_mutations() -> Vec<(DropReason, &'static str, bool, &'static [Patch], Option<usize>)> {
        vec![
            (Truncated, "ARP of 41 bytes", true, &[], Some(41)),
            (NotIpv4Udp, "ARP reply", true, &[(21, &[0x02])], None),
            (NotIpv4Udp, "ARP htype 6", true, &[(15, &[0x06])], None),
            (NotIpv4Udp, "ARP plen 16", true, &[(19, &[0x10])], None),
            (WrongDstIp, "ARP for 192.0.2.2", true, &[(41, &[0x02])], None),
            (WrongDstMac, "ARP to another MAC", true, &[(0, &[0x02, 0x00, 0x5a, 0x00, 0x00, 0x02])], None),
            (Truncated, "ICMP T = 27", false, &[(17, &[0x1b]), (24, &[0x3b, 0x54])], None),
            (NotIpv4Udp, "ICMP type 0 (a reply)", false, &[(34, &[0x00])], None),
            (NotIpv4Udp, "ICMP code 1", false, &[(35, &[0x01])], None),
        ]
    }

    fn assert_dropped_untouched(base: &[u8], what: &str, reason: DropReason, f: &[u8]) {
        // State before: one contribution of C0 so that a mutant that got through would show.
        let (a, _, _) = payloads();
        let mut sw = RefSwitch::new(job());
        run(&mut sw, &frame(&C0_HEADER, &a));
        let before = sw.clone();
        assert_eq!(classify(sw.job(), f), Classification::Drop(reason), "{what}");
        assert!(run(&mut sw, f).is_empty(), "{what}");
        assert!(sw.same_slots(&before), "{what}");
        let mut expect = before.counters();
        expect.frames_in += 1;
        expect.drops[reason.index()] += 1;
        assert_eq!(sw.counters(), expect, "{what}");
        assert_ne!(f, base);
    }

    fn apply(base: &[u8], patches: &[Patch], len: Option<usize>) -> Vec<u8> {
        let mut f = base.to_vec();
        for (at, bytes) in patches {
            f[*at..*at + bytes.len()].copy_from_slice(bytes);
        }
        if let Some(l) = len {
            f.truncate(l);
        }
        f
    }

    #[test]
    fn every_drop_reason_by_the_first_failing_check() {
        let (a, _, _) = payloads();
        let c0 = frame(&C0_HEADER, &a);
        let mut covered = std::collections::BTreeSet::new();
        for (reason, what, patches, len) in contribution_mutations() {
            assert_dropped_untouched(&c0, what, reason, &apply(&c0, patches, len));
            covered.insert(reason);
        }
        for (reason, what, is_arp, patches, len) in arp_icmp_mutations() {
            let base: &[u8] = if is_arp { &ARP_REQUEST } else { &ECHO_REQUEST };
            assert_dropped_untouched(base, what, reason, &apply(base, patches, len));
        }
        // WrongVlan needs a tagged job (tagged_job_drops_what_is_not_on_its_vlan); stale_session
        // depends on the session state (a_session_opens_when_every_rank_joined_...).
        // lane_mismatch on the slot's width (a_contribution_of_the_other_width_changes_nothing).
        assert_eq!(covered.len(), DropReason::COUNT - 3);
        assert!(!covered.contains(&WrongVlan) && !covered.contains(&StaleSession) && !covered.contains(&LaneMismatch));
    }

    #[test]
    fn several_faults_count_under_the_first() {
        let (a, _, _) = payloads();
        let c0 = frame(&C0_HEADER, &a);
        // Bad checksum and bad port: the checksum comes first.
        let f = apply(&c0, &[(25, &[0x3a]), (37, &[0xf0])], None);
        assert_eq!(classify(&job(), &f), Classification::Drop(IpChecksum));
        // Wrong MAC and IPv6: the MAC comes first.
        let f = apply(&c0, &[(5, &[0x02]), (12, &[0x86, 0xdd])], None);
        assert_eq!(classify(&job(), &f), Classification::Drop(WrongDstMac));
        // Bad size and bad slot: the size comes first.
        let f = apply(&c0, &[(42, &[0x11]), (49, &[0x04])], None);
        assert_eq!(classify(&job(), &f), Classification::Drop(BadSize));
        // Bad msg_type and bad size: the type comes first.
        let f = apply(&c0, &[(42, &[0x21])], None);
        assert_eq!(classify(&job(), &f), Classification::Drop(BadMsgType));
    }
}
