//! Seeded traces: the frames, in order, that reach a switch from simulated workers over a
//! lossy, duplicating, reordering network, with malformed frames, ARP and pings mixed in.
//!
//! Every differential test (reference switch ↔ rust-hdl simulation ↔ Verilator) feeds the same
//! traces to each engine and compares the outputs frame for frame. A trace is made closed-loop
//! so that rounds really complete and both kinds of retransmission occur:
//!
//! - n simulated workers, each with `chunks` chunks of k random int32 values (extremes
//!   included, so that sums wrap around) and random int8 exponents; chunk c goes to slot
//!   c mod W, set (c / W) mod 2, `tsi` = c; a window of W slots is in flight and the result
//!   of chunk c releases chunk c + W (SwitchML's self-clocking);
//! - a channel worker → switch that loses, duplicates and delays frames, keeping each worker's
//!   frames in order ([`Reorder::PerWorker`]) or not ([`Reorder::Any`]);
//! - a [`RefSwitch`] whose results come back over a lossy, duplicating, reordering channel;
//! - retransmission of a slot's pending chunk when no result came within a number of steps:
//!   to an incomplete round (dropped by the switch) or to a complete one (the stored result is
//!   sent back);
//! - before each frame delivered to the switch, with the given probabilities, a malformed frame
//!   (a mutation of the frame about to be delivered, of an ARP request or of a ping, one
//!   generator per [`DropReason`]), an ARP frame (request for the switch, request for another
//!   address, reply) or an echo request with a random data length.
//!
//! The same [`TraceSpec`] always gives the same trace (ChaCha8 seeded from `seed`).

use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use spotagg_driver::counters::DropReason;
use spotagg_driver::engine::Engine;
use spotagg_driver::wire::layout::{IP_OFFSET, L4_OFFSET, PAYLOAD_OFFSET, SWITCHML_OFFSET, TAG_LEN, TAG_OFFSET};
use spotagg_driver::wire::{
    arp, checksum, ethernet, icmp, ipv4, switchml, udp, vlan, ArpOperation, ArpPacket, ArpRepr, EtherType,
    EthernetFrame, EthernetRepr, IpProtocol, Ipv4Addr, Ipv4Packet, Ipv4Repr, MacAddr, PayloadSize, PoolIndex,
    SwitchmlPacket, SwitchmlRepr, UdpPacket, UdpRepr,
};
use spotagg_driver::{JobConfig, JobVlan};
use spotagg_spec::reference::{classify, untag, Classification, RefSwitch};
use std::collections::BinaryHeap;

/// How the channel from the workers to the switch may reorder frames.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reorder {
    /// Frames of different workers interleave at random; each worker's frames (duplicates
    /// included) arrive in the order they were sent. Under this channel every worker ends
    /// with the exact sum.
    PerWorker,
    /// Any frame may overtake any other. A stale duplicate can then open a round of its own
    /// (SwitchML assumes it does not happen), so sums may be wrong and rounds may never
    /// complete; the trace is still a valid input for differential tests.
    Any,
}

/// What a trace is made of.
#[derive(Debug, Clone, PartialEq)]
pub struct TraceSpec {
    /// Workers, 1..=32.
    pub n: usize,
    /// Payload size.
    pub payload: PayloadSize,
    /// Slots in use, S (the window W is S).
    pub slots: u16,
    /// Chunks each worker contributes.
    pub chunks: usize,
    /// Probability that a frame (either direction) is lost.
    pub loss: f64,
    /// Probability that a frame (either direction) is delivered twice.
    pub duplication: f64,
    /// Reordering of the worker → switch channel.
    pub reorder: Reorder,
    /// Probability of a malformed frame before each frame delivered to the switch.
    pub malformed: f64,
    /// Probability of an ARP frame before each frame delivered to the switch.
    pub arp: f64,
    /// Probability of an ICMP echo request before each frame delivered to the switch.
    pub ping: f64,
    /// Probability that a worker's contribution carries harmless variations: link padding
    /// after the IPv4 total length, broadcast destination MAC, the unused bit of byte 42 set,
    /// another job number, IPv4 identification/DSCP/TTL/DF.
    pub quirks: f64,
    /// The job's VLAN: `None` for an untagged job. For a tagged job every frame reaches the
    /// switch tagged with its VID (and a random PCP and DEI, which the switch ignores), and the
    /// malformed frames include frames without the job's tag.
    pub vlan: Option<JobVlan>,
    /// The workers' UDP source port, `worker_port` (0xBEE0 by default).
    pub worker_port: u16,
    /// The last byte of rank 0's IPv4 address, 192.0.2.x (10 by default; rank r has x + r):
    /// another job on the same switch gets workers of its own (docs/switch.md §8).
    pub worker_ip_base: u8,
    /// The seed.
    pub seed: u64,
}

impl TraceSpec {
    /// A clean trace: no loss, duplication, reordering across workers, malformed frames,
    /// ARP, pings or quirks.
    pub fn new(n: usize, payload: PayloadSize, slots: u16, chunks: usize, seed: u64) -> TraceSpec {
        TraceSpec {
            n,
            payload,
            slots,
            chunks,
            loss: 0.0,
            duplication: 0.0,
            reorder: Reorder::PerWorker,
            malformed: 0.0,
            arp: 0.0,
            ping: 0.0,
            quirks: 0.0,
            vlan: None,
            worker_port: switchml::UDP_PORT_BASE,
            worker_ip_base: 10,
            seed,
        }
    }

    /// The same spec for a job tagged with `vlan`.
    pub fn tagged(self, vlan: JobVlan) -> TraceSpec {
        TraceSpec { vlan: Some(vlan), ..self }
    }

    /// The same spec with every kind of trouble at the given rates: loss and duplication
    /// `rate`, malformed frames `rate`, ARP and pings `rate / 4`, quirks `rate`.
    pub fn troubled(self, rate: f64) -> TraceSpec {
        TraceSpec {
            loss: rate,
            duplication: rate,
            malformed: rate,
            arp: rate / 4.0,
            ping: rate / 4.0,
            quirks: rate,
            ..self
        }
    }

    /// The same spec for a job whose workers send from `worker_port`, rank 0 from 192.0.2.`ip_base`
    /// (a second job on the switch of the first: docs/switch.md §8).
    pub fn other_job(self, worker_port: u16, ip_base: u8) -> TraceSpec {
        assert!(usize::from(ip_base) + self.n <= 255, "ranks from 192.0.2.{ip_base} pass .254");
        TraceSpec { worker_port, worker_ip_base: ip_base, ..self }
    }

    /// The job of the trace: [`JobConfig::example`] for n, the payload and the slots, with the
    /// spec's VLAN, worker port and worker addresses.
    pub fn job(&self) -> JobConfig {
        let mut j = JobConfig { vlan: self.vlan, ..JobConfig::example(self.n, self.payload, self.slots) };
        j.worker_port = self.worker_port;
        for (r, w) in j.workers.iter_mut().enumerate() {
            w.ip = Ipv4Addr::new(192, 0, 2, self.worker_ip_base + r as u8);
        }
        j
    }
}

/// One result as a worker received it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChunkResult {
    /// Exponent maximum `e0`.
    pub e0: i8,
    /// Exponent maximum `e1`.
    pub e1: i8,
    /// The k summed values.
    pub values: Vec<i32>,
}

/// A generated trace and what the simulated workers saw.
#[derive(Debug, Clone)]
pub struct Trace {
    /// The job.
    pub job: JobConfig,
    /// Every frame delivered to the switch, in order.
    pub frames: Vec<Vec<u8>>,
    /// The workers' inputs: `inputs[rank][chunk]` holds k values.
    pub inputs: Vec<Vec<Vec<i32>>>,
    /// The workers' exponents: `exponents[rank][chunk]` = (e0, e1).
    pub exponents: Vec<Vec<(i8, i8)>>,
    /// What each worker received: `results[rank][chunk]`.
    pub results: Vec<Vec<Option<ChunkResult>>>,
    /// True when every worker received every result before the step limit.
    pub complete: bool,
    /// Simulation steps run.
    pub steps: u64,
}

/// The frames of the trace of `spec`.
pub fn frames(spec: &TraceSpec) -> Vec<Vec<u8>> {
    generate(spec).frames
}

/// A worker's contribution: the frame it sends for one chunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Contribution<'a> {
    /// Sender's rank.
    pub rank: usize,
    /// `tsi`.
    pub tsi: u32,
    /// Slot and set.
    pub pool: PoolIndex,
    /// Exponents.
    pub e0: i8,
    /// Exponents.
    pub e1: i8,
    /// UDP source port.
    pub src_port: u16,
    /// UDP destination port (0xBEE0..=0xBEEF).
    pub dst_port: u16,
    /// The k values.
    pub values: &'a [i32],
}

/// Builds a valid contribution frame for `job` (no link padding, TTL 64, identification 0).
pub fn contribution_frame(job: &JobConfig, c: &Contribution<'_>) -> Vec<u8> {
    let p = job.payload.bytes();
    assert_eq!(c.values.len() * 4, p, "{} values for a {p}-byte payload", c.values.len());
    let w = job.workers[c.rank];
    let mut f = vec![0u8; PAYLOAD_OFFSET + p];
    EthernetRepr { dst: job.switch_mac, src: w.mac, ethertype: EtherType::IPV4 }
        .emit(&mut EthernetFrame::new_unchecked(&mut f[..]));
    Ipv4Repr {
        src: w.ip,
        dst: job.switch_ip,
        protocol: IpProtocol::UDP,
        payload_len: udp::HEADER_LEN + switchml::PREAMBLE_LEN + p,
        ttl: ipv4::DEFAULT_TTL,
    }
    .emit(&mut Ipv4Packet::new_unchecked(&mut f[IP_OFFSET..L4_OFFSET]));
    UdpRepr { src_port: c.src_port, dst_port: c.dst_port, payload_len: switchml::PREAMBLE_LEN + p }
        .emit(&mut UdpPacket::new_unchecked(&mut f[L4_OFFSET..SWITCHML_OFFSET]));
    let mut sml = SwitchmlPacket::new_unchecked(&mut f[SWITCHML_OFFSET..]);
    SwitchmlRepr {
        msg_type: switchml::MSG_TYPE_CONTRIBUTION,
        size_code: job.payload.code(),
        job: job.job_number,
        tsi: c.tsi,
        pool: c.pool,
        e0: c.e0,
        e1: c.e1,
    }
    .emit(&mut sml);
    for (b, v) in sml.payload_mut().chunks_exact_mut(4).zip(c.values) {
        b.copy_from_slice(&v.to_be_bytes());
    }
    f
}

/// A frame as a host on the job's network sends it: for a tagged job with the job's tag (VID
/// and a random PCP and DEI) inserted after the source MAC; an untagged job's frame, or a frame
/// too short to hold a source MAC, unchanged (and no randomness drawn).
pub fn on_vlan(job: &JobConfig, mut f: Vec<u8>, rng: &mut ChaCha8Rng) -> Vec<u8> {
    if let Some(v) = job.vlan {
        if f.len() >= TAG_OFFSET {
            let tci = rng.gen_range(0..8u16) << 13 | u16::from(rng.gen_bool(0.1)) << 12 | v.id;
            let [t0, t1] = vlan::TPID.0.to_be_bytes();
            let [c0, c1] = tci.to_be_bytes();
            f.splice(TAG_OFFSET..TAG_OFFSET, [t0, t1, c0, c1]);
        }
    }
    f
}

/// A frame the switch sent, without the job's tag: `None` when a tagged job's frame does not
/// carry exactly the tag of docs/switch.md §3 (0x8100, the job's TCI).
pub fn off_vlan(job: &JobConfig, f: &[u8]) -> Option<Vec<u8>> {
    let Some(v) = job.vlan else {
        return Some(f.to_vec());
    };
    if f.len() < TAG_OFFSET + TAG_LEN || f[TAG_OFFSET..TAG_OFFSET + 2] != vlan::TPID.0.to_be_bytes() {
        return None;
    }
    if f[TAG_OFFSET + 2..TAG_OFFSET + 4] != v.tci().to_be_bytes() {
        return None;
    }
    Some([&f[..TAG_OFFSET], &f[TAG_OFFSET + TAG_LEN..]].concat())
}

/// Pads a frame with zeros to the 60-byte Ethernet minimum, as a MAC delivers it.
fn pad_to_minimum(f: &mut Vec<u8>) {
    if f.len() < ethernet::MIN_FRAME_LEN {
        f.resize(ethernet::MIN_FRAME_LEN, 0);
    }
}

/// An ARP frame (Ethernet/IPv4, padded to 60 bytes) from `sha`/`spa` about `tpa`.
pub fn arp_frame(
    dst: MacAddr,
    operation: ArpOperation,
    sha: MacAddr,
    spa: Ipv4Addr,
    tha: MacAddr,
    tpa: Ipv4Addr,
) -> Vec<u8> {
    let mut f = vec![0u8; IP_OFFSET + arp::PACKET_LEN];
    EthernetRepr { dst, src: sha, ethertype: EtherType::ARP }.emit(&mut EthernetFrame::new_unchecked(&mut f[..]));
    ArpRepr { operation, sha, spa, tha, tpa }.emit(&mut ArpPacket::new_unchecked(&mut f[IP_OFFSET..]));
    pad_to_minimum(&mut f);
    f
}

/// An ICMP echo request to the switch (padded to 60 bytes when shorter).
pub fn echo_request(job: &JobConfig, src_mac: MacAddr, src_ip: Ipv4Addr, ident: u16, seq: u16, data: &[u8]) -> Vec<u8> {
    let icmp_len = icmp::HEADER_LEN + data.len();
    let mut f = vec![0u8; L4_OFFSET + icmp_len];
    EthernetRepr { dst: job.switch_mac, src: src_mac, ethertype: EtherType::IPV4 }
        .emit(&mut EthernetFrame::new_unchecked(&mut f[..]));
    Ipv4Repr {
        src: src_ip,
        dst: job.switch_ip,
        protocol: IpProtocol::ICMP,
        payload_len: icmp_len,
        ttl: ipv4::DEFAULT_TTL,
    }
    .emit(&mut Ipv4Packet::new_unchecked(&mut f[IP_OFFSET..L4_OFFSET]));
    icmp::IcmpRepr { request: true, ident, seq, data }.emit(&mut icmp::IcmpPacket::new_unchecked(&mut f[L4_OFFSET..]));
    pad_to_minimum(&mut f);
    f
}

/// Recomputes the IPv4 header checksum of a frame (IHL 5 assumed).
fn fix_ip_checksum(f: &mut [u8]) {
    let at = IP_OFFSET + ipv4::field::CHECKSUM.start;
    f[at] = 0;
    f[at + 1] = 0;
    let c = checksum::compute(&f[IP_OFFSET..L4_OFFSET]);
    f[at..at + 2].copy_from_slice(&c.to_be_bytes());
}

fn put16(f: &mut [u8], at: usize, v: u16) {
    f[at..at + 2].copy_from_slice(&v.to_be_bytes());
}

const T_AT: usize = IP_OFFSET + ipv4::field::LENGTH.start;
const UDP_LEN_AT: usize = L4_OFFSET + udp::field::LENGTH.start;

/// A MAC that is neither the switch's nor broadcast.
fn other_mac(rng: &mut ChaCha8Rng, job: &JobConfig) -> MacAddr {
    loop {
        let mut m = MacAddr(rng.gen());
        if rng.gen_bool(0.5) {
            m.0[0] &= 0xfe; // unicast
        }
        if m != job.switch_mac && m != MacAddr::BROADCAST {
            return m;
        }
    }
}

/// An address that is neither the switch's nor a worker's.
fn outsider_ip(rng: &mut ChaCha8Rng, job: &JobConfig) -> Ipv4Addr {
    loop {
        let a =
            if rng.gen_bool(0.5) { Ipv4Addr::new(192, 0, 2, rng.gen()) } else { Ipv4Addr::from(rng.gen::<[u8; 4]>()) };
        if a != job.switch_ip && job.rank_of(a).is_none() {
            return a;
        }
    }
}

fn valid_arp_request(rng: &mut ChaCha8Rng, job: &JobConfig) -> Vec<u8> {
    let (mac, ip) = some_host(rng, job);
    let dst = if rng.gen_bool(0.5) { MacAddr::BROADCAST } else { job.switch_mac };
    arp_frame(dst, ArpOperation::REQUEST, mac, ip, MacAddr::default(), job.switch_ip)
}

fn valid_echo_request(rng: &mut ChaCha8Rng, job: &JobConfig) -> Vec<u8> {
    let (mac, ip) = some_host(rng, job);
    let len = if rng.gen_bool(0.5) { rng.gen_range(0..=24) } else { rng.gen_range(0..=1400) };
    let data: Vec<u8> = (0..len).map(|_| rng.gen()).collect();
    let mut f = echo_request(job, mac, ip, rng.gen(), rng.gen(), &data);
    if rng.gen_bool(0.2) {
        f.extend((0..rng.gen_range(1..8)).map(|_| rng.gen::<u8>())); // link padding, not echoed
    }
    f
}

/// A worker or an outsider host (MAC, IPv4).
fn some_host(rng: &mut ChaCha8Rng, job: &JobConfig) -> (MacAddr, Ipv4Addr) {
    if rng.gen_bool(0.5) {
        let w = job.workers[rng.gen_range(0..job.n())];
        (w.mac, w.ip)
    } else {
        let mut m = MacAddr(rng.gen());
        m.0[0] &= 0xfe;
        (m, outsider_ip(rng, job))
    }
}

/// A mutation of a valid contribution `base` (or of a fresh ARP request or ping) that the
/// switch drops for `reason`. Several variants per reason, picked at random. For a tagged job
/// `base` is tagged and so is the mutation, but for [`DropReason::WrongVlan`], whose variants
/// are an untagged frame, another VID, VID 0, another TPID, and a 16- or 17-byte frame.
/// Returns `None` for [`DropReason::BadSlot`] when S = 32768 (no slot is out of range), and
/// for [`DropReason::WrongVlan`] when the job is untagged (it takes every tag), and for
/// [`DropReason::StaleSession`] and [`DropReason::LaneMismatch`] (they depend on the switch's
/// session and slot state, not the frame).
pub fn mutate(job: &JobConfig, base: &[u8], reason: DropReason, rng: &mut ChaCha8Rng) -> Option<Vec<u8>> {
    let Some(v) = job.vlan else {
        return if reason == DropReason::WrongVlan { None } else { mutate_untagged(job, base, reason, rng) };
    };
    let mut buf = Vec::new();
    let inner = untag(job, base, &mut buf).expect("the base frame is on the job's VLAN").to_vec();
    let f = if reason == DropReason::WrongVlan {
        let mut f = base.to_vec();
        let other_vid = |rng: &mut ChaCha8Rng| loop {
            let vid = rng.gen_range(0..=0xfff);
            if vid != v.id {
                return vid;
            }
        };
        let tci_at = TAG_OFFSET + 2;
        let pcp_dei = be(&f, tci_at) & 0xf000;
        match rng.gen_range(0..5) {
            0 => f = inner,
            1 => put16(&mut f, tci_at, pcp_dei | other_vid(rng)),
            2 => put16(&mut f, tci_at, pcp_dei),
            3 => put16(&mut f, TAG_OFFSET, *[0x88a8, 0x9100, 0x0800].choose(rng).unwrap()),
            _ => {
                put16(&mut f, tci_at, pcp_dei | other_vid(rng));
                f.truncate(TAG_OFFSET + TAG_LEN + rng.gen_range(0..2));
            }
        }
        f
    } else {
        let untagged = JobConfig { vlan: None, ..job.clone() };
        on_vlan(job, mutate_untagged(&untagged, &inner, reason, rng)?, rng)
    };
    debug_assert_eq!(classify(job, &f), Classification::Drop(reason), "mutation for {reason:?}: {f:02x?}");
    Some(f)
}

fn be(f: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([f[at], f[at + 1]])
}

/// [`mutate`] for an untagged job.
fn mutate_untagged(job: &JobConfig, base: &[u8], reason: DropReason, rng: &mut ChaCha8Rng) -> Option<Vec<u8>> {
    use DropReason::*;
    debug_assert!(matches!(classify(job, base), Classification::Contribution { .. }));
    let mut f = base.to_vec();
    let t = usize::from(u16::from_be_bytes([f[T_AT], f[T_AT + 1]]));
    match reason {
        Truncated => match rng.gen_range(0..6) {
            0 => f.truncate(rng.gen_range(0..ethernet::HEADER_LEN)),
            1 => f.truncate(rng.gen_range(IP_OFFSET..L4_OFFSET)),
            2 => {
                f = valid_arp_request(rng, job);
                f.truncate(rng.gen_range(IP_OFFSET..IP_OFFSET + arp::PACKET_LEN));
            }
            3 => {
                // UDP without a whole UDP header.
                let t = rng.gen_range(ipv4::HEADER_LEN..ipv4::HEADER_LEN + udp::HEADER_LEN);
                put16(&mut f, T_AT, t as u16);
                fix_ip_checksum(&mut f);
                if rng.gen_bool(0.5) {
                    f.truncate((IP_OFFSET + t).max(L4_OFFSET));
                }
            }
            4 => {
                // ICMP without a whole echo header.
                f = valid_echo_request(rng, job);
                let t = rng.gen_range(ipv4::HEADER_LEN..ipv4::HEADER_LEN + icmp::HEADER_LEN);
                put16(&mut f, T_AT, t as u16);
                fix_ip_checksum(&mut f);
            }
            _ => {
                // UDP without a whole SwitchML header and exponents.
                let u = rng.gen_range(udp::HEADER_LEN..udp::HEADER_LEN + switchml::PREAMBLE_LEN);
                put16(&mut f, T_AT, (ipv4::HEADER_LEN + u) as u16);
                put16(&mut f, UDP_LEN_AT, u as u16);
                fix_ip_checksum(&mut f);
                if rng.gen_bool(0.5) {
                    f.truncate(L4_OFFSET + u);
                }
            }
        },
        WrongDstMac => {
            if rng.gen_bool(0.2) {
                f = valid_arp_request(rng, job);
            } else if rng.gen_bool(0.2) {
                f = valid_echo_request(rng, job);
            }
            let m = other_mac(rng, job);
            EthernetFrame::new_unchecked(&mut f[..]).set_dst(m);
        }
        NotIpv4Udp => match rng.gen_range(0..5) {
            0 => loop {
                let e: u16 = rng.gen();
                if e != EtherType::IPV4.0 && e != EtherType::ARP.0 {
                    EthernetFrame::new_unchecked(&mut f[..]).set_ethertype(EtherType(e));
                    break;
                }
            },
            1 => {
                let v = [0u8, 1, 2, 3, 5, 6, 7, 15].choose(rng).copied().unwrap_or(6);
                f[IP_OFFSET] = (v << 4) | (f[IP_OFFSET] & 0x0f);
            }
            2 => {
                let p = loop {
                    let p: u8 = rng.gen();
                    if p != IpProtocol::UDP.0 && p != IpProtocol::ICMP.0 {
                        break p;
                    }
                };
                f[IP_OFFSET + ipv4::field::PROTOCOL] = p;
                fix_ip_checksum(&mut f);
            }
            3 => {
                // An ICMP message other than an echo request.
                f = valid_echo_request(rng, job);
                let (ty, code) = [(0u8, 0u8), (3, 1), (8, 1), (13, 0), (11, 0)].choose(rng).copied().unwrap_or((0, 0));
                f[L4_OFFSET + icmp::field::TYPE] = ty;
                f[L4_OFFSET + icmp::field::CODE] = code;
            }
            _ => {
                // An ARP frame that is not an Ethernet/IPv4 request.
                f = valid_arp_request(rng, job);
                let a = IP_OFFSET;
                match rng.gen_range(0..5) {
                    0 => put16(&mut f, a + arp::field::OPER.start, 2),
                    1 => put16(&mut f, a + arp::field::HTYPE.start, 6),
                    2 => put16(&mut f, a + arp::field::PTYPE.start, 0x86dd),
                    3 => f[a + arp::field::HLEN] = 8,
                    _ => f[a + arp::field::PLEN] = 16,
                }
            }
        },
        IpOptions => {
            let ihl = [0u8, 1, 4, 6, 7, 15].choose(rng).copied().unwrap_or(6);
            f[IP_OFFSET] = 0x40 | ihl;
        }
        IpChecksum => {
            if rng.gen_bool(0.3) {
                f = valid_echo_request(rng, job);
            }
            let at = IP_OFFSET + ipv4::field::CHECKSUM.start;
            loop {
                let x: u16 = rng.gen_range(1..=u16::MAX);
                let c = u16::from_be_bytes([f[at], f[at + 1]]) ^ x;
                put16(&mut f, at, c);
                if !checksum::verify(&f[IP_OFFSET..L4_OFFSET]) {
                    break;
                }
            }
        }
        BadLength => match rng.gen_range(0..4) {
            0 => {
                let l = f.len() - IP_OFFSET;
                put16(&mut f, T_AT, rng.gen_range(l + 1..=usize::from(u16::MAX)) as u16);
                fix_ip_checksum(&mut f);
            }
            1 => {
                put16(&mut f, T_AT, rng.gen_range(0..ipv4::HEADER_LEN) as u16);
                fix_ip_checksum(&mut f);
            }
            2 => loop {
                let u: u16 = rng.gen();
                if usize::from(u) != t - ipv4::HEADER_LEN {
                    put16(&mut f, UDP_LEN_AT, u);
                    break;
                }
            },
            _ => {
                // Lengths that agree with each other, but not with the size.
                let p = loop {
                    let p = rng.gen_range(0..=1400usize);
                    if p != job.payload.bytes() {
                        break p;
                    }
                };
                let u = udp::HEADER_LEN + switchml::PREAMBLE_LEN + p;
                f.resize(L4_OFFSET + u, 0x5a);
                put16(&mut f, T_AT, (ipv4::HEADER_LEN + u) as u16);
                put16(&mut f, UDP_LEN_AT, u as u16);
                fix_ip_checksum(&mut f);
            }
        },
        IpFragment => {
            let w = match rng.gen_range(0..3) {
                0 => ipv4::FLAG_MF,
                1 => rng.gen_range(1..=ipv4::FRAG_OFFSET_MASK),
                _ => ipv4::FLAG_MF | rng.gen_range(1..=ipv4::FRAG_OFFSET_MASK),
            };
            let w = if rng.gen_bool(0.3) { w | ipv4::FLAG_DF } else { w };
            put16(&mut f, IP_OFFSET + ipv4::field::FLAGS_FRAG.start, w);
            fix_ip_checksum(&mut f);
        }
        WrongDstIp => match rng.gen_range(0..3) {
            0 => {
                f = valid_arp_request(rng, job);
                let ip = outsider_ip(rng, job);
                f[IP_OFFSET + arp::field::TPA.start..IP_OFFSET + arp::field::TPA.end].copy_from_slice(&ip.octets());
            }
            1 => {
                f = valid_echo_request(rng, job);
                let ip = outsider_ip(rng, job);
                Ipv4Packet::new_unchecked(&mut f[IP_OFFSET..L4_OFFSET]).set_dst_addr(ip);
                fix_ip_checksum(&mut f);
            }
            _ => {
                let ip = if rng.gen_bool(0.3) { job.workers[0].ip } else { outsider_ip(rng, job) };
                Ipv4Packet::new_unchecked(&mut f[IP_OFFSET..L4_OFFSET]).set_dst_addr(ip);
                fix_ip_checksum(&mut f);
            }
        },
        BadPort => loop {
            let p: u16 = if rng.gen_bool(0.5) { 0xbee0 ^ (1 << rng.gen_range(4..16)) } else { rng.gen() };
            // A job with 16-bit lanes takes 0xBEF0..=0xBEFF too (docs/switch.md §9).
            if !(switchml::is_switchml_port(p) || job.lanes16 && switchml::Lanes::of_port(p).is_some()) {
                put16(&mut f, L4_OFFSET + udp::field::DST_PORT.start, p);
                break;
            }
        },
        UnknownSource => {
            let ip = if rng.gen_bool(0.2) { job.switch_ip } else { outsider_ip(rng, job) };
            Ipv4Packet::new_unchecked(&mut f[IP_OFFSET..L4_OFFSET]).set_src_addr(ip);
            fix_ip_checksum(&mut f);
        }
        WrongSrcPort => {
            let p = loop {
                let p: u16 = if rng.gen_bool(0.5) { job.worker_port ^ (1 << rng.gen_range(0..16)) } else { rng.gen() };
                if !job.is_worker_port(p) {
                    break p;
                }
            };
            put16(&mut f, L4_OFFSET + udp::field::SRC_PORT.start, p);
        }
        StaleSession | LaneMismatch => return None,
        BadMsgType => {
            let ty = loop {
                let ty = rng.gen_range(0..16u8);
                if ty != switchml::MSG_TYPE_CONTRIBUTION && ty != switchml::MSG_TYPE_SESSION {
                    break ty;
                }
            };
            f[SWITCHML_OFFSET] = (ty << 4) | (f[SWITCHML_OFFSET] & 0x0f);
        }
        BadSize => {
            let code = loop {
                let c = rng.gen_range(0..8u8);
                if c != job.payload.code() {
                    break c;
                }
            };
            f[SWITCHML_OFFSET] = (f[SWITCHML_OFFSET] & 0xf8) | code;
        }
        WrongVlan => return None,
        BadSlot => {
            if usize::from(job.slots) > usize::from(switchml::MAX_SLOT) {
                return None;
            }
            let slot = rng.gen_range(job.slots..=switchml::MAX_SLOT);
            let pool = PoolIndex { slot, set: rng.gen_range(0..2) };
            SwitchmlPacket::new_unchecked(&mut f[SWITCHML_OFFSET..]).set_pool_index(pool);
        }
    }
    debug_assert_eq!(classify(job, &f), Classification::Drop(reason), "mutation for {reason:?}: {f:02x?}");
    Some(f)
}

/// A sample contribution for `job` with random content (rank, slot, set, exponents, values).
fn sample_contribution(job: &JobConfig, rng: &mut ChaCha8Rng) -> Vec<u8> {
    let values: Vec<i32> = (0..job.payload.elements()).map(|_| random_value(rng)).collect();
    let c = Contribution {
        rank: rng.gen_range(0..job.n()),
        tsi: rng.gen(),
        pool: PoolIndex { slot: rng.gen_range(0..job.slots), set: rng.gen_range(0..2) },
        e0: rng.gen(),
        e1: rng.gen(),
        src_port: job.worker_port,
        dst_port: switchml::UDP_PORT_BASE | rng.gen_range(0..16),
        values: &values,
    };
    on_vlan(job, contribution_frame(job, &c), rng)
}

/// Malformed frames covering every drop reason (several variants each), with the reason the
/// switch must count each under. [`DropReason::BadSlot`] is missing when S = 32768, and
/// [`DropReason::WrongVlan`] when the job is untagged.
pub fn malformed_frames(job: &JobConfig, seed: u64) -> Vec<(DropReason, Vec<u8>)> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut out = Vec::new();
    for reason in DropReason::CORE {
        for _ in 0..8 {
            let base = sample_contribution(job, &mut rng);
            if let Some(f) = mutate(job, &base, reason, &mut rng) {
                out.push((reason, f));
            }
        }
    }
    out
}

/// A random int32, often an extreme one so that sums wrap around.
fn random_value(rng: &mut ChaCha8Rng) -> i32 {
    match rng.gen_range(0..8) {
        0 => i32::MAX - rng.gen_range(0..4),
        1 => i32::MIN + rng.gen_range(0..4),
        2 => rng.gen_range(-3..=3),
        _ => rng.gen(),
    }
}

/// A frame in a channel, delivered at step `at`; `seq` keeps sends at the same step in order.
struct InFlight {
    at: u64,
    seq: u64,
    to: usize,
    frame: Vec<u8>,
}

// Reversed: the max-heap pops the earliest frame.
ord_by_key!(InFlight, |f: &InFlight| std::cmp::Reverse((f.at, f.seq)));

/// A channel with loss, duplication and random delays.
struct Channel {
    heap: BinaryHeap<InFlight>,
    seq: u64,
    /// Per sender, the latest delivery step given out (for per-sender order).
    last_at: Vec<u64>,
    keep_order: bool,
    loss: f64,
    duplication: f64,
    max_delay: u64,
}

impl Channel {
    fn new(senders: usize, keep_order: bool, loss: f64, duplication: f64) -> Channel {
        Channel {
            heap: BinaryHeap::new(),
            seq: 0,
            last_at: vec![0; senders],
            keep_order,
            loss,
            duplication,
            max_delay: MAX_DELAY,
        }
    }
    fn send(&mut self, rng: &mut ChaCha8Rng, now: u64, from: usize, to: usize, frame: Vec<u8>) {
        if rng.gen_bool(self.loss) {
            return;
        }
        if rng.gen_bool(self.duplication) {
            self.push(rng, now, from, to, frame.clone());
        }
        self.push(rng, now, from, to, frame);
    }
    fn push(&mut self, rng: &mut ChaCha8Rng, now: u64, from: usize, to: usize, frame: Vec<u8>) {
        let mut at = now + rng.gen_range(1..=self.max_delay);
        if self.keep_order {
            at = at.max(self.last_at[from]);
            self.last_at[from] = at;
        }
        self.seq += 1;
        self.heap.push(InFlight { at, seq: self.seq, to, frame });
    }
    fn pop_due(&mut self, now: u64) -> Option<InFlight> {
        if self.heap.peek().is_some_and(|f| f.at <= now) {
            self.heap.pop()
        } else {
            None
        }
    }
}

/// A chunk waiting for its result.
struct Pending {
    chunk: usize,
    frame: Vec<u8>,
    deadline: u64,
    tries: u32,
}

/// Steps without a result before a worker retransmits (doubling per try, capped).
const TIMEOUT_STEPS: u64 = 12;
/// Largest channel delay in steps.
const MAX_DELAY: u64 = 4;

/// Runs the closed loop of `spec` and returns the trace.
#[allow(clippy::needless_range_loop)] // ranks index several per-worker tables
pub fn generate(spec: &TraceSpec) -> Trace {
    let job = spec.job();
    let n = spec.n;
    let k = spec.payload.elements();
    let w = usize::from(job.window.min(job.slots));
    let mut rng = ChaCha8Rng::seed_from_u64(spec.seed);
    let inputs: Vec<Vec<Vec<i32>>> =
        (0..n).map(|_| (0..spec.chunks).map(|_| (0..k).map(|_| random_value(&mut rng)).collect()).collect()).collect();
    let exponents: Vec<Vec<(i8, i8)>> =
        (0..n).map(|_| (0..spec.chunks).map(|_| (rng.gen(), rng.gen())).collect()).collect();
    let mut results: Vec<Vec<Option<ChunkResult>>> = vec![vec![None; spec.chunks]; n];
    let mut switch = RefSwitch::new(job.clone());
    let mut up = Channel::new(n, spec.reorder == Reorder::PerWorker, spec.loss, spec.duplication);
    let mut down = Channel::new(1, false, spec.loss, spec.duplication);
    let mut pending: Vec<Vec<Option<Pending>>> = (0..n).map(|_| (0..w).map(|_| None).collect()).collect();
    let mut received = vec![0usize; n];
    let mut frames = Vec::new();
    let mut out = Vec::new();
    let max_steps = 400 + 60 * (spec.chunks as u64) * (1 + (20.0 * (spec.loss + spec.duplication)) as u64);

    let make = |rng: &mut ChaCha8Rng, rank: usize, chunk: usize| -> Vec<u8> {
        let pool = PoolIndex { slot: (chunk % w) as u16, set: ((chunk / w) % 2) as u8 };
        let (e0, e1) = exponents[rank][chunk];
        let c = Contribution {
            rank,
            tsi: chunk as u32,
            pool,
            e0,
            e1,
            src_port: job.worker_port,
            dst_port: switchml::UDP_PORT_BASE | (pool.slot % 16),
            values: &inputs[rank][chunk],
        };
        let mut f = contribution_frame(&job, &c);
        if rng.gen_bool(spec.quirks) {
            add_quirks(rng, &mut f);
        }
        on_vlan(&job, f, rng)
    };

    // Each worker fills its window.
    let mut now = 0u64;
    for rank in 0..n {
        for chunk in 0..spec.chunks.min(w) {
            let f = make(&mut rng, rank, chunk);
            up.send(&mut rng, now, rank, 0, f.clone());
            pending[rank][chunk] = Some(Pending { chunk, frame: f, deadline: now + TIMEOUT_STEPS, tries: 0 });
        }
    }
    let all_done = |received: &[usize]| received.iter().all(|&r| r == spec.chunks);
    while now < max_steps && !(all_done(&received) && up.heap.is_empty() && down.heap.is_empty()) {
        now += 1;
        // Timeouts.
        for rank in 0..n {
            for p in pending[rank].iter_mut().flatten() {
                if now >= p.deadline {
                    p.tries += 1;
                    p.deadline = now + (TIMEOUT_STEPS << p.tries.min(3)) + rng.gen_range(0..4);
                    up.send(&mut rng, now, rank, 0, p.frame.clone());
                }
            }
        }
        // Deliveries to the switch, with extra frames mixed in.
        while let Some(inf) = up.pop_due(now) {
            for extra in extras(spec, &job, &inf.frame, &mut rng) {
                switch.process(&extra, &mut out);
                frames.push(extra);
                out.clear(); // replies to ARP and pings go to hosts the trace does not model
            }
            switch.process(&inf.frame, &mut out);
            frames.push(inf.frame);
            for f in out.drain(..) {
                if let Some(rank) = job.workers.iter().position(|wk| f[..6] == wk.mac.0) {
                    down.send(&mut rng, now, 0, rank, f);
                }
            }
        }
        // Deliveries to the workers.
        while let Some(inf) = down.pop_due(now) {
            let rank = inf.to;
            let Some(f) = off_vlan(&job, &inf.frame) else { continue };
            let f = &f;
            if f.len() != PAYLOAD_OFFSET + spec.payload.bytes()
                || f[IP_OFFSET + ipv4::field::PROTOCOL] != IpProtocol::UDP.0
            {
                continue;
            }
            let sml = SwitchmlPacket::new_unchecked(&f[SWITCHML_OFFSET..]);
            let pool = sml.pool_index();
            let slot = usize::from(pool.slot);
            let Some(p) = pending[rank].get(slot).and_then(|p| p.as_ref()) else { continue };
            let chunk = p.chunk;
            if sml.tsi() != chunk as u32 || usize::from(pool.set) != (chunk / w) % 2 {
                continue; // stale or duplicate result
            }
            results[rank][chunk] = Some(ChunkResult { e0: sml.e0(), e1: sml.e1(), values: sml.elements().collect() });
            received[rank] += 1;
            pending[rank][slot] = None;
            // The result of chunk c releases chunk c + W on the same slot, other set.
            let chunk = chunk + w;
            if chunk < spec.chunks {
                let f = make(&mut rng, rank, chunk);
                up.send(&mut rng, now, rank, 0, f.clone());
                pending[rank][slot] = Some(Pending { chunk, frame: f, deadline: now + TIMEOUT_STEPS, tries: 0 });
            }
        }
    }
    Trace { complete: all_done(&received), job, frames, inputs, exponents, results, steps: now }
}

/// Harmless variations of a valid contribution (the switch treats it the same).
fn add_quirks(rng: &mut ChaCha8Rng, f: &mut Vec<u8>) {
    if rng.gen_bool(0.4) {
        f.extend((0..rng.gen_range(1..=8)).map(|_| rng.gen::<u8>()));
    }
    if rng.gen_bool(0.3) {
        EthernetFrame::new_unchecked(&mut f[..]).set_dst(MacAddr::BROADCAST);
    }
    if rng.gen_bool(0.4) {
        f[SWITCHML_OFFSET] |= 0x08;
    }
    if rng.gen_bool(0.4) {
        f[SWITCHML_OFFSET + switchml::field::JOB] = rng.gen();
    }
    if rng.gen_bool(0.5) {
        let mut ip = Ipv4Packet::new_unchecked(&mut f[IP_OFFSET..L4_OFFSET]);
        ip.set_ident(rng.gen());
        ip.set_dscp_ecn(rng.gen());
        ip.set_ttl(rng.gen_range(1..=255));
        if rng.gen_bool(0.5) {
            ip.set_flags_frag(ipv4::FLAG_DF);
        }
        ip.fill_checksum();
    }
}

/// Frames to insert before `next` (a frame about to reach the switch).
fn extras(spec: &TraceSpec, job: &JobConfig, next: &[u8], rng: &mut ChaCha8Rng) -> Vec<Vec<u8>> {
    let mut v = Vec::new();
    if spec.malformed > 0.0 && rng.gen_bool(spec.malformed) {
        let reason = DropReason::CORE[rng.gen_range(0..DropReason::CORE_COUNT)];
        let base = if matches!(classify(job, next), Classification::Contribution { .. }) {
            next.to_vec()
        } else {
            sample_contribution(job, rng)
        };
        if let Some(f) = mutate(job, &base, reason, rng) {
            v.push(f);
        }
    }
    if spec.arp > 0.0 && rng.gen_bool(spec.arp) {
        let (mac, ip) = some_host(rng, job);
        let f = match rng.gen_range(0..4) {
            0 | 1 => valid_arp_request(rng, job),
            2 => {
                arp_frame(MacAddr::BROADCAST, ArpOperation::REQUEST, mac, ip, MacAddr::default(), outsider_ip(rng, job))
            }
            _ => arp_frame(job.switch_mac, ArpOperation::REPLY, mac, ip, job.switch_mac, job.switch_ip),
        };
        v.push(on_vlan(job, f, rng));
    }
    if spec.ping > 0.0 && rng.gen_bool(spec.ping) {
        let f = valid_echo_request(rng, job);
        v.push(on_vlan(job, f, rng));
    }
    v
}

/// A session message (docs/switch.md §2.1) from `rank`: a join (`join`) or a probe, with
/// `job_number` `proposal`, on `slot`; zero tsi, exponents and payload.
pub fn session_frame(job: &JobConfig, rank: usize, join: bool, proposal: u8, slot: u16) -> Vec<u8> {
    let zeros = vec![0i32; job.payload.elements()];
    let pool = PoolIndex { slot, set: u8::from(join) };
    let c = Contribution {
        rank,
        tsi: 0,
        pool,
        e0: 0,
        e1: 0,
        src_port: job.worker_port,
        dst_port: switchml::UDP_PORT_BASE | (slot % 16),
        values: &zeros,
    };
    let mut f = contribution_frame(job, &c);
    f[SWITCHML_OFFSET] = (switchml::MSG_TYPE_SESSION << 4) | job.payload.code();
    f[SWITCHML_OFFSET + switchml::field::JOB] = proposal;
    f
}

/// Sets `job_number` of every contribution (`msg_type` 1, of an untagged IPv4/UDP frame) in
/// `frames` to `epoch`; other frames are left alone.
fn stamp_epoch(frames: &mut [Vec<u8>], epoch: u8) {
    for f in frames {
        let udp = f.len() > PAYLOAD_OFFSET && f[12..14] == [0x08, 0x00] && f[IP_OFFSET + 9] == 17;
        if udp && f[SWITCHML_OFFSET] >> 4 == switchml::MSG_TYPE_CONTRIBUTION {
            f[SWITCHML_OFFSET + switchml::field::JOB] = epoch;
        }
    }
}

/// A trace of `sessions` sessions back to back on one running switch (docs/switch.md §2.1),
/// for an untagged job. It begins with a run without sessions (the trace of `spec`, its
/// contributions carrying the job's `job_number`), cut at a random point so that it leaves
/// half-filled rounds behind. Each session then opens with a handshake (every rank joins
/// E + 1 in a random order; among the joins, with the probabilities of `spec`'s trouble:
/// probes, repeated joins, joins of other epochs, session messages of the wrong size or slot,
/// and late frames of the earlier run) and runs its own closed-loop trace (`spec` with another
/// seed, its contributions carrying the new epoch) with late frames of the earlier session
/// (stale), probes and repeated joins mixed in; all but the last session may be cut short
/// (a run that crashed). The frames only: every engine decides the same.
pub fn session_trace(spec: &TraceSpec, sessions: usize) -> (JobConfig, Vec<Vec<u8>>) {
    assert!(spec.vlan.is_none(), "session traces are made for untagged jobs");
    let job = spec.job();
    let n = spec.n;
    let mut rng = ChaCha8Rng::seed_from_u64(spec.seed ^ 0x5e55_1011);
    let trouble = (spec.loss + spec.duplication + spec.malformed).max(0.1);
    let mut run = generate(spec).frames;
    run.truncate(rng.gen_range(run.len() / 3..=run.len()));
    let mut frames = run.clone();
    let mut old = run;
    let mut epoch = job.job_number;
    let late = |rng: &mut ChaCha8Rng, old: &[Vec<u8>], epoch: u8| -> Option<Vec<u8>> {
        let f = old.choose(rng)?;
        let stale = f.len() > SWITCHML_OFFSET + 1 && f[SWITCHML_OFFSET + switchml::field::JOB] != epoch;
        stale.then(|| f.clone())
    };
    for s in 1..=sessions {
        let p = epoch.wrapping_add(1);
        let mut ranks: Vec<usize> = (0..n).collect();
        ranks.shuffle(&mut rng);
        for (i, &r) in ranks.iter().enumerate() {
            let slot = rng.gen_range(0..job.slots);
            if rng.gen_bool(0.5) {
                frames.push(session_frame(&job, r, false, rng.gen(), slot));
            }
            if rng.gen_bool(trouble) {
                let wrong = [epoch, p.wrapping_add(1), rng.gen()][rng.gen_range(0..3)];
                frames.push(session_frame(&job, r, true, wrong, slot));
            }
            if rng.gen_bool(trouble) {
                // A join of the wrong size, and one to slot S: dropped before the session state.
                let mut f = session_frame(&job, r, true, p, slot);
                if rng.gen_bool(0.5) {
                    f[SWITCHML_OFFSET] ^= 0x01;
                } else {
                    f[SWITCHML_OFFSET + 6..SWITCHML_OFFSET + 8].copy_from_slice(&(0x8000 | job.slots).to_be_bytes());
                }
                frames.push(f);
            }
            if i + 1 < n && rng.gen_bool(trouble) {
                frames.extend(late(&mut rng, &old, p));
            }
            frames.push(session_frame(&job, r, true, p, slot));
            if i + 1 < n && rng.gen_bool(trouble) {
                // A join repeated before the opening: silent.
                frames.push(session_frame(&job, r, true, p, slot));
            }
        }
        epoch = p;
        let sub = TraceSpec { seed: spec.seed.wrapping_add(1000 * s as u64), ..spec.clone() };
        let mut body = generate(&sub).frames;
        stamp_epoch(&mut body, epoch);
        if s < sessions && rng.gen_bool(0.5) {
            body.truncate(rng.gen_range(body.len() / 2..=body.len()));
        }
        for f in &body {
            if rng.gen_bool(trouble / 2.0) {
                frames.extend(late(&mut rng, &old, epoch));
            }
            if rng.gen_bool(trouble / 4.0) {
                let r = rng.gen_range(0..n);
                let slot = rng.gen_range(0..job.slots);
                let (join, q) = [(false, rng.gen()), (true, epoch), (true, epoch.wrapping_add(3))][rng.gen_range(0..3)];
                frames.push(session_frame(&job, r, join, q, slot));
            }
            frames.push(f.clone());
        }
        old = body;
    }
    (job, frames)
}

#[cfg(test)]
mod test {
    use super::*;

    fn replay(job: &JobConfig, frames: &[Vec<u8>]) -> (RefSwitch, Vec<Vec<u8>>) {
        let mut sw = RefSwitch::new(job.clone());
        let mut out = Vec::new();
        for f in frames {
            sw.process(f, &mut out);
        }
        (sw, out)
    }

    #[test]
    fn same_spec_same_trace() {
        let spec = TraceSpec::new(3, PayloadSize::B256, 4, 10, 7).troubled(0.1);
        assert_eq!(frames(&spec), frames(&spec));
        assert_ne!(frames(&spec), frames(&TraceSpec { seed: 8, ..spec }));
    }

    #[test]
    fn malformed_frames_cover_every_reason() {
        for (n, payload, slots) in
            [(1, PayloadSize::B256, 1), (4, PayloadSize::B1024, 16), (32, PayloadSize::B128, 0x7fff)]
        {
            for vlan in [None, Some(JobVlan { id: 1 + n as u16, priority: 3 })] {
                let job = JobConfig { vlan, ..JobConfig::example(n, payload, slots) };
                for seed in 0..20 {
                    let v = malformed_frames(&job, seed);
                    for reason in DropReason::ALL {
                        let expected = (vlan.is_some() || reason != DropReason::WrongVlan)
                            && reason != DropReason::StaleSession
                            && reason != DropReason::LaneMismatch;
                        assert_eq!(v.iter().any(|(r, _)| *r == reason), expected, "{reason:?} {vlan:?}");
                    }
                    for (reason, f) in &v {
                        assert_eq!(classify(&job, f), Classification::Drop(*reason), "{f:02x?}");
                    }
                }
            }
        }
        let job = JobConfig::example(2, PayloadSize::B256, 0x8000);
        let v = malformed_frames(&job, 1);
        // Neither BadSlot (no slot is out of range), WrongVlan (untagged), StaleSession nor
        // LaneMismatch (slot and session state).
        assert!(v.iter().all(|(r, _)| *r != DropReason::BadSlot) && v.len() == 8 * (DropReason::COUNT - 4));
    }

    #[test]
    fn clean_trace_completes_with_exact_sums() {
        let spec = TraceSpec::new(3, PayloadSize::B256, 4, 9, 1);
        let t = generate(&spec);
        assert!(t.complete);
        assert_eq!(t.frames.len(), 3 * 9);
        for c in 0..9 {
            let sum: Vec<i32> =
                (0..64).map(|i| (0..3).fold(0i32, |acc, r| acc.wrapping_add(t.inputs[r][c][i]))).collect();
            for r in 0..3 {
                assert_eq!(t.results[r][c].as_ref().unwrap().values, sum);
            }
        }
    }

    #[test]
    fn troubled_trace_has_both_kinds_of_retransmission_and_everything_mixed_in() {
        let spec = TraceSpec { arp: 0.05, ping: 0.05, ..TraceSpec::new(4, PayloadSize::B256, 4, 24, 3).troubled(0.15) };
        let t = generate(&spec);
        assert!(t.complete, "after {} steps", t.steps);
        let (sw, _) = replay(&t.job, &t.frames);
        let c = sw.counters();
        assert!(c.is_consistent());
        assert!(c.results_retransmitted > 0, "{c:?}");
        assert!(c.duplicates > c.results_retransmitted, "no retransmission to an incomplete round: {c:?}");
        assert!(c.arp_replies > 0 && c.icmp_replies > 0, "{c:?}");
        assert!(c.dropped_total() > 0, "{c:?}");
    }

    #[test]
    fn single_worker_and_any_order() {
        let t = generate(&TraceSpec::new(1, PayloadSize::B1024, 2, 5, 9).troubled(0.2));
        assert!(t.complete);
        for c in 0..5 {
            assert_eq!(t.results[0][c].as_ref().unwrap().values, t.inputs[0][c]);
        }
        let spec = TraceSpec { reorder: Reorder::Any, ..TraceSpec::new(5, PayloadSize::B256, 3, 12, 2).troubled(0.2) };
        let t = generate(&spec);
        assert!(!t.frames.is_empty());
        assert!(replay(&t.job, &t.frames).0.counters().is_consistent());
    }
}

/// A contribution from `job`'s rank `rank` address sent from UDP port `port` to slot `slot`
/// (set 0, `tsi` 1, every value 7): with a port not the job's, a frame of an unknown (source,
/// job) pair on a switch of several jobs (docs/switch.md §8).
pub fn contribution_from_port(job: &JobConfig, rank: usize, port: u16, slot: u16) -> Vec<u8> {
    let values = vec![7; job.payload.elements()];
    let c = Contribution {
        rank,
        tsi: 1,
        pool: PoolIndex { slot, set: 0 },
        e0: 0,
        e1: 0,
        src_port: port,
        dst_port: job.switch_port,
        values: &values,
    };
    contribution_frame(job, &c)
}

/// Two jobs' traces on one switch (docs/switch.md §8): [`two_jobs`].
#[derive(Debug, Clone)]
pub struct TwoJobTrace {
    /// Job 0's trace.
    pub a: Trace,
    /// Job 1's trace.
    pub b: Trace,
    /// Every frame delivered to the switch, in order.
    pub frames: Vec<Vec<u8>>,
    /// Frames of unknown (source, job) pairs among them.
    pub unknown: usize,
}

/// The traces of `a` and `b` (specs of jobs with their own workers or ports:
/// [`TraceSpec::other_job`]) in a seeded interleaving that keeps each job's order, with frames
/// of unknown pairs mixed in (about one in ten): job a's rank 0 from job b's port, and an
/// address in neither job (192.0.2.200) from job a's port.
pub fn two_jobs(a: &TraceSpec, b: &TraceSpec, seed: u64) -> TwoJobTrace {
    let (ta, tb) = (generate(a), generate(b));
    let stranger = TraceSpec { n: 1, worker_ip_base: 200, ..a.clone() }.job();
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let (mut i, mut j, mut frames, mut unknown) = (0, 0, vec![], 0);
    while i < ta.frames.len() || j < tb.frames.len() {
        if rng.gen_bool(0.1) {
            frames.push(if rng.gen_bool(0.5) {
                contribution_from_port(&ta.job, 0, b.worker_port, rng.gen_range(0..a.slots))
            } else {
                contribution_from_port(&stranger, 0, a.worker_port, 0)
            });
            unknown += 1;
        }
        if j == tb.frames.len() || (i < ta.frames.len() && rng.gen_bool(0.5)) {
            frames.push(ta.frames[i].clone());
            i += 1;
        } else {
            frames.push(tb.frames[j].clone());
            j += 1;
        }
    }
    TwoJobTrace { a: ta, b: tb, frames, unknown }
}
