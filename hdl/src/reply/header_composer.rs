//! The reply header composer: the header words of the aggregator's three reply kinds (docs/switch.md
//! §2 and §3), for a word index given by the sequencer, with the reply checksums they carry.
//!
//! Contract: `word` is the header word `index` (0..=12) of a reply of kind `kind` to the
//! descriptor's frame (`h1..h12`, its header words) as it was one cycle earlier: the index is
//! registered with each kind's candidate words (two 8-way muxes per kind on the index's low 3
//! bits), and `word` picks among those registers. The IPv4 and ICMP checksums of an echo reply
//! are computed from the descriptor in four registered steps, so they are right from the 5th
//! cycle after the descriptor words settle (the sequencer asks for word 6, the first that
//! carries one, 7 cycles after the descriptor is loaded at the earliest). A result's lengths
//! follow `payload_words` one cycle late.
//!
//! - Result: words 0..=12 of docs/switch.md §3 (destination MAC zero: the result builder
//!   patches it per rank, as it does the destination IPv4 address and the IPv4 checksum),
//!   the request's UDP ports swapped, the request's SwitchML header with `exponents`.
//! - ARP reply (words 0..=10): to the requester, from the switch's MAC and IPv4 addresses.
//! - ICMP echo reply (words 0..=9): the request's addresses swapped, TTL 64, the checksums
//!   recomputed; the body (words 10 on) is copied by the sequencer, not here.

use crate::config_registers::JobSettings;
use crate::parse::received_header::HeaderWords;
use crate::result_builder::ReplyKind;
use rust_hdl::prelude::*;

/// The reply header words.
#[derive(LogicBlock, Default)]
pub struct ReplyHeader {
    /// Clock.
    pub clock: Signal<In, Clock>,
    /// The reply kind being written.
    pub kind: Signal<In, ReplyKind>,
    /// The header word wanted (0..=12).
    pub index: Signal<In, Bits<4>>,
    /// Header word `index` of one cycle earlier.
    pub word: Signal<Out, Bits<32>>,
    /// Header words 1..=12 of the request.
    pub request: HeaderWords,
    /// The job's settings (switch addresses, k for a result's lengths).
    pub job: JobSettings,
    /// A result's exponents (the low half of its word 12).
    pub exponents: Signal<In, Bits<16>>,
    /// A session reply (docs/switch.md §2.1): byte 43 (`job_number`) is `epoch`, not the request's.
    pub session: Signal<In, Bit>,
    /// The epoch a session reply carries.
    pub epoch: Signal<In, Bits<8>>,
    /// A result's UDP destination port is `dst_port`, not the request's source port (docs/switch.md
    /// §6: a partial frame to the parent, or a result triggered by the parent's).
    pub dst_port_on: Signal<In, Bit>,
    /// That port.
    pub dst_port: Signal<In, Bits<16>>,
    len_ip: DFF<Bits<32>>,
    len_udp: DFF<Bits<32>>,
    ipck_part1: DFF<Bits<20>>,
    ipck_part2: DFF<Bits<20>>,
    ipck_part3: DFF<Bits<20>>,
    ipck_sum: DFF<Bits<20>>,
    ipck_folded: DFF<Bits<17>>,
    ip_checksum: DFF<Bits<16>>,
    icmpck_folded: DFF<Bits<17>>,
    icmp_checksum: DFF<Bits<16>>,
    result_lo_next: Signal<Local, Bits<32>>,
    result_hi_next: Signal<Local, Bits<32>>,
    arp_lo_next: Signal<Local, Bits<32>>,
    arp_hi_next: Signal<Local, Bits<32>>,
    echo_lo_next: Signal<Local, Bits<32>>,
    echo_hi_next: Signal<Local, Bits<32>>,
    result_lo: DFF<Bits<32>>,
    result_hi: DFF<Bits<32>>,
    arp_lo: DFF<Bits<32>>,
    arp_hi: DFF<Bits<32>>,
    echo_lo: DFF<Bits<32>>,
    echo_hi: DFF<Bits<32>>,
    high_half: DFF<Bit>,
}

impl Logic for ReplyHeader {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self,
            clock,
            len_ip,
            len_udp,
            ipck_part1,
            ipck_part2,
            ipck_part3,
            ipck_sum,
            ipck_folded,
            ip_checksum,
            icmpck_folded,
            icmp_checksum,
            result_lo,
            result_hi,
            arp_lo,
            arp_hi,
            echo_lo,
            echo_hi,
            high_half
        );
        // A result's IPv4 and UDP lengths, registered from the configuration.
        self.len_ip.d.next = (bit_cast::<32, 9>(self.job.payload_words.val()) << 2) + 38;
        self.len_udp.d.next = (bit_cast::<32, 9>(self.job.payload_words.val()) << 2) + 18;
        // Reply checksums, registered in stages from the descriptor (stable for many cycles
        // before a header word needs them: at least 7 cycles after the descriptor is loaded).
        self.ipck_part1.d.next = bit_cast::<20, 32>(self.request.h3.val() & 0xffff)
            + bit_cast::<20, 32>(self.request.h4.val() >> 16)
            + bit_cast::<20, 32>(self.request.h4.val() & 0xffff);
        self.ipck_part2.d.next = bit_cast::<20, 32>(self.request.h5.val() >> 16)
            + bit_cast::<20, 32>((self.request.h5.val() & 0xff) | 0x4000)
            + bit_cast::<20, 32>(self.job.switch_ip.val() >> 16);
        self.ipck_part3.d.next = bit_cast::<20, 32>(self.job.switch_ip.val() & 0xffff)
            + bit_cast::<20, 32>(self.request.h6.val() & 0xffff)
            + bit_cast::<20, 32>(self.request.h7.val() >> 16);
        self.ipck_sum.d.next = self.ipck_part1.q.val() + self.ipck_part2.q.val() + self.ipck_part3.q.val();
        self.ipck_folded.d.next =
            bit_cast::<17, 20>(self.ipck_sum.q.val() & 0xffff) + bit_cast::<17, 20>(self.ipck_sum.q.val() >> 16);
        self.ip_checksum.d.next =
            !(bit_cast::<16, 17>(self.ipck_folded.q.val()) + bit_cast::<16, 17>(self.ipck_folded.q.val() >> 16));
        // The 16-bit complement as an XOR: a `!` inside a widening bit_cast becomes a
        // 32-bit `~` in the generated Verilog, which sets bit 16 (found by Verilator).
        self.icmpck_folded.d.next = bit_cast::<17, 32>((self.request.h9.val() >> 16) ^ 0xffff) + 0xF7FF;
        self.icmp_checksum.d.next =
            !(bit_cast::<16, 17>(self.icmpck_folded.q.val()) + bit_cast::<16, 17>(self.icmpck_folded.q.val() >> 16));
        self.result_lo_next.next = 0.into();
        self.result_hi_next.next = 0.into();
        self.arp_lo_next.next = 0.into();
        self.arp_hi_next.next = 0.into();
        self.echo_lo_next.next = 0.into();
        self.echo_hi_next.next = 0.into();
        // Each reply kind's candidates for word `index`, registered separately (a mux on the
        // index's low 3 bits each); the kind and the half (words 0..7 or 8..12) are chosen after.
        // Result.
        match self.index.val().get_bits::<3>(0).index() {
            0 => {
                self.result_lo_next.next = 0.into();
            }
            1 => {
                self.result_lo_next.next = bit_cast::<32, 16>(self.job.switch_mac_hi.val());
            }
            2 => {
                self.result_lo_next.next = self.job.switch_mac_lo.val();
            }
            3 => {
                self.result_lo_next.next = 0x0800_4500.into();
            }
            4 => {
                self.result_lo_next.next = self.len_ip.q.val() << 16;
            }
            5 => {
                self.result_lo_next.next = 0x0000_4011.into();
            }
            6 => {
                self.result_lo_next.next = self.job.switch_ip.val() >> 16;
            }
            _ => {
                self.result_lo_next.next = self.job.switch_ip.val() << 16;
            }
        }
        match self.index.val().get_bits::<3>(0).index() {
            0 => {
                self.result_hi_next.next = self.request.h9.val() >> 16;
            }
            1 => {
                self.result_hi_next.next = (self.request.h8.val() << 16) | self.len_udp.q.val();
                if self.dst_port_on.val() {
                    self.result_hi_next.next = (bit_cast::<32, 16>(self.dst_port.val()) << 16) | self.len_udp.q.val();
                }
            }
            2 => {
                self.result_hi_next.next = self.request.h10.val() & 0xffff;
                if self.session.val() {
                    self.result_hi_next.next =
                        (self.request.h10.val() & 0xff00_u64) | bit_cast::<32, 8>(self.epoch.val());
                }
            }
            3 => {
                self.result_hi_next.next = self.request.h11.val();
            }
            _ => {
                self.result_hi_next.next =
                    (self.request.h12.val() & 0xffff_0000_u64) | bit_cast::<32, 16>(self.exponents.val());
            }
        }
        // ARP reply.
        match self.index.val().get_bits::<3>(0).index() {
            0 => {
                self.arp_lo_next.next = (self.request.h5.val() << 16) | (self.request.h6.val() >> 16);
            }
            1 => {
                self.arp_lo_next.next =
                    (self.request.h6.val() << 16) | bit_cast::<32, 16>(self.job.switch_mac_hi.val());
            }
            2 => {
                self.arp_lo_next.next = self.job.switch_mac_lo.val();
            }
            3 => {
                self.arp_lo_next.next = 0x0806_0001.into();
            }
            4 => {
                self.arp_lo_next.next = 0x0800_0604.into();
            }
            5 => {
                self.arp_lo_next.next = 0x0002_0000 | bit_cast::<32, 16>(self.job.switch_mac_hi.val());
            }
            6 => {
                self.arp_lo_next.next = self.job.switch_mac_lo.val();
            }
            _ => {
                self.arp_lo_next.next = self.job.switch_ip.val();
            }
        }
        match self.index.val().get_bits::<3>(0).index() {
            0 => {
                self.arp_hi_next.next = (self.request.h5.val() << 16) | (self.request.h6.val() >> 16);
            }
            1 => {
                self.arp_hi_next.next = (self.request.h6.val() << 16) | (self.request.h7.val() >> 16);
            }
            _ => {
                self.arp_hi_next.next = self.request.h7.val() << 16;
            }
        }
        // ICMP echo reply.
        match self.index.val().get_bits::<3>(0).index() {
            0 => {
                self.echo_lo_next.next = (self.request.h1.val() << 16) | (self.request.h2.val() >> 16);
            }
            1 => {
                self.echo_lo_next.next =
                    (self.request.h2.val() << 16) | bit_cast::<32, 16>(self.job.switch_mac_hi.val());
            }
            2 => {
                self.echo_lo_next.next = self.job.switch_mac_lo.val();
            }
            3 => {
                self.echo_lo_next.next = 0x0800_0000 | (self.request.h3.val() & 0xffff);
            }
            4 => {
                self.echo_lo_next.next = self.request.h4.val();
            }
            5 => {
                self.echo_lo_next.next = (self.request.h5.val() & 0xffff_00ff_u64) | 0x4000;
            }
            6 => {
                self.echo_lo_next.next =
                    (bit_cast::<32, 16>(self.ip_checksum.q.val()) << 16) | (self.job.switch_ip.val() >> 16);
            }
            _ => {
                self.echo_lo_next.next = (self.job.switch_ip.val() << 16) | (self.request.h6.val() & 0xffff);
            }
        }
        match self.index.val().get_bits::<3>(0).index() {
            0 => {
                self.echo_hi_next.next = self.request.h7.val() & 0xffff_0000_u64;
            }
            _ => {
                self.echo_hi_next.next =
                    (bit_cast::<32, 16>(self.icmp_checksum.q.val()) << 16) | (self.request.h9.val() & 0xffff);
            }
        }
        self.result_lo.d.next = self.result_lo_next.val();
        self.result_hi.d.next = self.result_hi_next.val();
        self.arp_lo.d.next = self.arp_lo_next.val();
        self.arp_hi.d.next = self.arp_hi_next.val();
        self.echo_lo.d.next = self.echo_lo_next.val();
        self.echo_hi.d.next = self.echo_hi_next.val();
        self.high_half.d.next = self.index.val().get_bit(3);
        if self.kind.val() == ReplyKind::Result {
            self.word.next = self.result_lo.q.val();
            if self.high_half.q.val() {
                self.word.next = self.result_hi.q.val();
            }
        } else if self.kind.val() == ReplyKind::ArpReply {
            self.word.next = self.arp_lo.q.val();
            if self.high_half.q.val() {
                self.word.next = self.arp_hi.q.val();
            }
        } else {
            self.word.next = self.echo_lo.q.val();
            if self.high_half.q.val() {
                self.word.next = self.echo_hi.q.val();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::Rng;
    use crate::step::settle;
    use spotagg_driver::wire::{checksum, icmp};

    const MAC: [u8; 6] = [0x02, 0x00, 0x5a, 0x00, 0x00, 0x01];
    const IP: [u8; 4] = [192, 0, 2, 1];

    /// The reply header of docs/switch.md §3 to request `q` (52 bytes), written from the
    /// request's bytes: the model of the block's contract.
    fn model(kind: ReplyKind, q: &[u8], k: usize, exponents: u16) -> Vec<u8> {
        let mut r = Vec::new();
        match kind {
            ReplyKind::ArpReply => {
                let sha = &q[22..28];
                r.extend_from_slice(sha);
                r.extend_from_slice(&MAC);
                r.extend_from_slice(&[0x08, 0x06, 0, 1, 0x08, 0x00, 6, 4, 0, 2]);
                r.extend_from_slice(&MAC);
                r.extend_from_slice(&IP);
                r.extend_from_slice(sha);
                r.extend_from_slice(&q[28..32]);
                r.resize(44, 0);
            }
            ReplyKind::EchoReply => {
                r = q[..40].to_vec();
                r[0..6].copy_from_slice(&q[6..12]);
                r[6..12].copy_from_slice(&MAC);
                // (The parser passes only IPv4 requests here.)
                r[12..14].copy_from_slice(&[0x08, 0x00]);
                r[22] = 64;
                r[24..26].fill(0);
                r[26..30].copy_from_slice(&IP);
                r[30..34].copy_from_slice(&q[26..30]);
                let ip = checksum::compute(&r[14..34]);
                r[24..26].copy_from_slice(&ip.to_be_bytes());
                r[34..36].fill(0);
                let request = u16::from_be_bytes([q[36], q[37]]);
                r[36..38].copy_from_slice(&icmp::reply_checksum(request).to_be_bytes());
            }
            ReplyKind::Result => {
                // Destination MAC, destination address and header checksum zero: the result
                // builder writes them per rank.
                r.resize(6, 0);
                r.extend_from_slice(&MAC);
                r.extend_from_slice(&[0x08, 0x00, 0x45, 0]);
                r.extend_from_slice(&((4 * k + 38) as u16).to_be_bytes());
                r.extend_from_slice(&[0, 0, 0, 0, 64, 17, 0, 0]);
                r.extend_from_slice(&IP);
                r.extend_from_slice(&[0; 4]);
                r.extend_from_slice(&q[36..38]);
                r.extend_from_slice(&q[34..36]);
                r.extend_from_slice(&((4 * k + 18) as u16).to_be_bytes());
                r.extend_from_slice(&[0, 0]);
                r.extend_from_slice(&q[42..50]);
                r.extend_from_slice(&exponents.to_be_bytes());
            }
        }
        r
    }

    /// Words 0..=12 (ARP 0..=10, echo 0..=9) of each kind, for requests of pseudo-random
    /// bytes, asked for in a shuffled order: each is the model's, one cycle after its index.
    #[test]
    fn header_words_follow_the_model() {
        let mut b = ReplyHeader::default();
        b.connect_all();
        b.job.set_switch(MAC, IP);
        let mut rng = Rng(0x2545_f491_4f6c_dd1d);
        for (round, k) in [(0, 64), (1, 1), (2, 256), (3, 7)] {
            let q: Vec<u8> = (0..52).map(|_| rng.next() as u8).collect();
            let exponents = rng.next() as u16;
            let word = |j: usize| u64::from(u32::from_be_bytes(q[4 * j..4 * j + 4].try_into().unwrap()));
            for (j, h) in b.request.words_mut().into_iter().enumerate() {
                h.next = word(j + 1).into();
            }
            b.job.payload_words.next = (k as u64).into();
            b.exponents.next = u64::from(exponents).into();
            for kind in [ReplyKind::Result, ReplyKind::ArpReply, ReplyKind::EchoReply] {
                b.kind.next = kind;
                // The checksums settle in four registered steps.
                for _ in 0..5 {
                    tick!(&mut b);
                }
                let want = model(kind, &q, k, exponents);
                let words = want.len() / 4;
                let mut order: Vec<usize> = (0..words).collect();
                order.rotate_left(round * 3 % words);
                order.swap(1, words - 2);
                for &w in &order {
                    b.index.next = (w as u64).into();
                    tick!(&mut b);
                    settle(&mut b);
                    let got = b.word.val().index() as u32;
                    let expect = u32::from_be_bytes(want[4 * w..4 * w + 4].try_into().unwrap());
                    assert_eq!(got, expect, "{kind:?} word {w} (k = {k}): {got:#010x}, want {expect:#010x}");
                }
            }
        }
    }
}
