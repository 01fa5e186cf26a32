//! The switch's counters and drop reasons: one vocabulary for the reference switch, the
//! hardware's counter registers and the control link.
//!
//! Every frame the switch receives lands in exactly one bucket:
//! `frames_in = contributions + duplicates + arp_replies + icmp_replies + Σ drops`, and
//! `frames_out = results_multicast + results_retransmitted + arp_replies + icmp_replies`.

use serde::{Deserialize, Serialize};

/// Why a received frame was dropped without touching slot state. The variants up to
/// [`DropReason::BadSlot`] are in the order in which the switch checks them; the ones added
/// later come last so that the counter addresses of the others stay: a frame with several
/// faults is counted under the first check that fails, in the order of docs/switch.md §1
/// (`wrong_src_port` right after `unknown_source`, `stale_session` after `bad_slot`,
/// `lane_mismatch` on the slot's state, §9; see `spotagg_spec::reference` for the exact decision
/// procedure). [`DropReason::CORE`] are the board core's counter registers; `lane_mismatch` is
/// not one of them yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DropReason {
    /// The frame ends before a header it needs (Ethernet, ARP, IPv4, ICMP, UDP, SwitchML).
    Truncated = 0,
    /// Destination MAC is neither the switch's nor broadcast.
    WrongDstMac = 1,
    /// A tagged job's frame without the job's 802.1Q tag: untagged, priority-tagged, another
    /// VLAN, or another TPID (docs/switch.md §1, step 3).
    WrongVlan = 2,
    /// Not ARP or IPv4; IPv4 version not 4; protocol not UDP or ICMP; ICMP not an echo
    /// request; ARP not an Ethernet/IPv4 request.
    NotIpv4Udp = 3,
    /// IPv4 header length other than 20 bytes (IHL ≠ 5).
    IpOptions = 4,
    /// Bad IPv4 header checksum.
    IpChecksum = 5,
    /// A length field disagrees with the frame or another length (IPv4 total length, UDP
    /// length, payload length against `size`).
    BadLength = 6,
    /// An IPv4 fragment (MF set or non-zero fragment offset).
    IpFragment = 7,
    /// Destination IPv4 (or ARP target) is not the switch's.
    WrongDstIp = 8,
    /// UDP destination port outside 0xBEE0..=0xBEEF.
    BadPort = 9,
    /// Source IPv4 is not in the worker table.
    UnknownSource = 10,
    /// `msg_type` is not 1 (contribution).
    BadMsgType = 11,
    /// `size` is not the job's payload size.
    BadSize = 12,
    /// Slot ≥ S.
    BadSlot = 13,
    /// Source IPv4 is a worker's but the UDP source port is not the job's `worker_port`.
    WrongSrcPort = 14,
    /// A contribution whose `job_number` is not the switch's current session epoch, once a
    /// session is open (a frame of an earlier session).
    StaleSession = 15,
    /// A contribution whose lane width (32 or 16 bits, docs/switch.md §9) is not its round's.
    LaneMismatch = 16,
}

impl DropReason {
    /// Every reason, in counter order.
    pub const ALL: [DropReason; 17] = [
        DropReason::Truncated,
        DropReason::WrongDstMac,
        DropReason::WrongVlan,
        DropReason::NotIpv4Udp,
        DropReason::IpOptions,
        DropReason::IpChecksum,
        DropReason::BadLength,
        DropReason::IpFragment,
        DropReason::WrongDstIp,
        DropReason::BadPort,
        DropReason::UnknownSource,
        DropReason::BadMsgType,
        DropReason::BadSize,
        DropReason::BadSlot,
        DropReason::WrongSrcPort,
        DropReason::StaleSession,
        DropReason::LaneMismatch,
    ];
    /// Number of reasons.
    pub const COUNT: usize = Self::ALL.len();
    /// The reasons the board's core counts in registers of its own: all but `lane_mismatch`
    /// (the core does not take 16-bit lanes yet), in counter order.
    pub const CORE: [DropReason; 16] = {
        let mut core = [DropReason::Truncated; 16];
        let mut i = 0;
        while i < 16 {
            core[i] = Self::ALL[i];
            i += 1;
        }
        core
    };
    /// Number of the core's reasons.
    pub const CORE_COUNT: usize = Self::CORE.len();

    /// The counter index.
    pub const fn index(self) -> usize {
        self as usize
    }

    /// The snake_case name used in JSON and tables.
    pub const fn name(self) -> &'static str {
        match self {
            DropReason::Truncated => "truncated",
            DropReason::WrongDstMac => "wrong_dst_mac",
            DropReason::WrongVlan => "wrong_vlan",
            DropReason::NotIpv4Udp => "not_ipv4_udp",
            DropReason::IpOptions => "ip_options",
            DropReason::IpChecksum => "ip_checksum",
            DropReason::BadLength => "bad_length",
            DropReason::IpFragment => "ip_fragment",
            DropReason::WrongDstIp => "wrong_dst_ip",
            DropReason::BadPort => "bad_port",
            DropReason::UnknownSource => "unknown_source",
            DropReason::BadMsgType => "bad_msg_type",
            DropReason::BadSize => "bad_size",
            DropReason::BadSlot => "bad_slot",
            DropReason::WrongSrcPort => "wrong_src_port",
            DropReason::StaleSession => "stale_session",
            DropReason::LaneMismatch => "lane_mismatch",
        }
    }
}

/// The switch's counters.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counters {
    /// Frames received.
    pub frames_in: u64,
    /// Frames sent.
    pub frames_out: u64,
    /// New contributions accepted into a slot.
    pub contributions: u64,
    /// Contributions from a worker already seen in that slot and set (retransmissions),
    /// whether or not they were answered.
    pub duplicates: u64,
    /// Result frames sent on completion of a round (n per round).
    pub results_multicast: u64,
    /// Result frames sent to a retransmitting worker of a complete round.
    pub results_retransmitted: u64,
    /// ARP replies sent.
    pub arp_replies: u64,
    /// ICMP echo replies sent.
    pub icmp_replies: u64,
    /// Dropped frames, indexed by [`DropReason::index`].
    pub drops: [u64; DropReason::COUNT],
    /// Frames handled (not dropped) whose IPv4 header checksum was 0, "not computed", taken by a
    /// job with `zero_ip_checksum` (docs/switch.md §1 6.4); each is also counted where it landed.
    /// The core counts it in counter 29, beyond [`Counters::WORDS`] (control register 0x021D).
    #[serde(default)]
    pub ip_checksum_zero: u64,
}

/// The counters' words past the core's registers, in order (the counters the core lacks).
const BEYOND_CORE: usize = 2;

impl Counters {
    /// Counter registers of the core, in address order: the eight totals of [`Counters::named`],
    /// then one drop counter per reason of [`DropReason::CORE`] in its index order.
    pub const WORDS: usize = 8 + DropReason::CORE_COUNT;
    /// Counter registers of a core without the two reasons sessions added.
    pub const WORDS_BEFORE_SESSIONS: usize = Self::WORDS - 2;
    /// Every counter as a word ([`Counters::to_words`]): the core's registers, then the
    /// counters the core does not have (`ip_checksum_zero`, `lane_mismatch`).
    pub const ALL_WORDS: usize = Self::WORDS + BEYOND_CORE;

    /// The counters from the core's counter registers (at least [`Counters::WORDS`] words, in
    /// address order): the one decoding the hardware harnesses and the control link share.
    /// A core built before the session reasons (`wrong_src_port`, `stale_session`) has
    /// [`Counters::WORDS_BEFORE_SESSIONS`] words: the two read as 0.
    pub fn from_words(w: &[u64]) -> Counters {
        assert!(w.len() >= Self::WORDS_BEFORE_SESSIONS, "{} counter words, the core has {}", w.len(), Self::WORDS);
        let mut c = Counters {
            frames_in: w[0],
            frames_out: w[1],
            contributions: w[2],
            duplicates: w[3],
            results_multicast: w[4],
            results_retransmitted: w[5],
            arp_replies: w[6],
            icmp_replies: w[7],
            drops: [0; DropReason::COUNT],
            ip_checksum_zero: w.get(Self::WORDS).copied().unwrap_or(0),
        };
        for d in DropReason::CORE {
            c.drops[d.index()] = w.get(8 + d.index()).copied().unwrap_or(0);
        }
        c.drops[DropReason::LaneMismatch.index()] = w.get(Self::WORDS + 1).copied().unwrap_or(0);
        c
    }

    /// Every counter as a word, the core's registers first ([`Counters::ALL_WORDS`] words; the
    /// inverse of [`Counters::from_words`]).
    pub fn to_words(&self) -> Vec<u64> {
        self.named().into_iter().map(|(_, v)| v).collect()
    }

    /// The drop counter of one reason.
    pub fn dropped(&self, r: DropReason) -> u64 {
        self.drops[r.index()]
    }
    /// All drops.
    pub fn dropped_total(&self) -> u64 {
        self.drops.iter().sum()
    }
    /// Adds `other` counter by counter (the threads of a multi-threaded software switch).
    pub fn add(&mut self, other: &Counters) {
        let sum: Vec<u64> = self.to_words().iter().zip(other.to_words()).map(|(a, b)| a + b).collect();
        *self = Counters::from_words(&sum);
    }
    /// Checks the bucket invariants stated in the module doc.
    pub fn is_consistent(&self) -> bool {
        self.frames_in
            == self.contributions + self.duplicates + self.arp_replies + self.icmp_replies + self.dropped_total()
            && self.frames_out
                == self.results_multicast + self.results_retransmitted + self.arp_replies + self.icmp_replies
    }
    /// Named (counter, value) pairs in a fixed order, that of [`Counters::to_words`]: the totals,
    /// the drops of the core's reasons, then `ip_checksum_zero` and `lane_mismatch`.
    pub fn named(&self) -> Vec<(&'static str, u64)> {
        let mut v = vec![
            ("frames_in", self.frames_in),
            ("frames_out", self.frames_out),
            ("contributions", self.contributions),
            ("duplicates", self.duplicates),
            ("results_multicast", self.results_multicast),
            ("results_retransmitted", self.results_retransmitted),
            ("arp_replies", self.arp_replies),
            ("icmp_replies", self.icmp_replies),
        ];
        v.extend(DropReason::CORE.iter().map(|r| (r.name(), self.drops[r.index()])));
        v.push(("ip_checksum_zero", self.ip_checksum_zero));
        v.push((DropReason::LaneMismatch.name(), self.dropped(DropReason::LaneMismatch)));
        v
    }
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn words_round_trip_in_register_order() {
        let w: Vec<u64> = (1..=Counters::ALL_WORDS as u64).collect();
        let c = Counters::from_words(&w);
        assert_eq!((c.frames_in, c.icmp_replies), (1, 8));
        assert_eq!(c.dropped(DropReason::Truncated), 9);
        assert_eq!(c.dropped(DropReason::WrongVlan), 11);
        assert_eq!(c.dropped(DropReason::BadSlot), 22);
        assert_eq!(c.ip_checksum_zero, 25);
        assert_eq!(c.dropped(DropReason::LaneMismatch), 26);
        // The core's registers alone: the counters it lacks read 0.
        let core = Counters::from_words(&w[..Counters::WORDS]);
        assert_eq!((core.ip_checksum_zero, core.dropped(DropReason::LaneMismatch)), (0, 0));
        assert_eq!(DropReason::CORE[..], DropReason::ALL[..DropReason::CORE_COUNT]);
        assert_eq!(c.to_words(), w);
        let mut twice = c.clone();
        twice.add(&c);
        assert_eq!(twice.to_words(), w.iter().map(|x| 2 * x).collect::<Vec<_>>());
    }
}
