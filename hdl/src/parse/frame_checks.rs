//! The frame checks: the checks of docs/switch.md §1 on a received frame's header, each a
//! registered flag, and the priority chains over them that name what the frame is, for the
//! [`crate::frame_parser::FrameParser`]'s decision.
//!
//! Contract:
//! - In: the frame's words 0..=12 (`h`, 32-bit words, first byte on top), its length in bytes
//!   (`len`), the IPv4 header checksum's two sums (`csum_hi`: the high halves of words 4..=8,
//!   `csum_lo`: the low halves of words 3..=7), the untagger's flags (`tag_stripped`,
//!   `tag_short`, `tag_mismatch`) and the job's settings. The parser holds them from the frame's
//!   last word until its decision.
//! - Out, three clocks after the inputs settle and as long as they hold (each output is a
//!   register: every flag is registered, some from registered parts, and the chains are
//!   registered over the flags):
//!   - `kind`: what the frame is, a drop reason or a `KIND_*`, as if its header checksum were
//!     good and its sender were not yet looked up; `reaches_checksum`: the chain gets as far
//!     as the checksum check (an IPv4 frame to the switch, no options); `checksum_bad`: the
//!     header checksum does not verify (a fourth clock: sum, fold, verify);
//!   - `to_sender`: `kind` is a UDP frame to the switch's port, which the worker search decides
//!     (§1 step 7);
//!   - `sender_kind`: such a frame's kind once its sender is found (7.5, then §1 step 8, the
//!     SwitchML checks: a contribution, a session message or a drop reason);
//!   - `from_parent`, `parent_kind`: it comes from the job's parent (docs/switch.md §6), and its
//!     kind then (8.1–8.5, no source port check).
//! - The order of the chains is §1's, tested in the parser's
//!   `classification_follows_the_order_of_the_checks` and, output by output against the
//!   reference switch's classification (`spotagg_spec::reference::classify`), in this module's
//!   test.

use crate::config_registers::JobSettings;
use crate::parse::kind::{kind, KIND_ARP, KIND_CONTRIBUTION, KIND_ICMP, KIND_PARENT, KIND_SESSION};
use rust_hdl::prelude::*;
use spotagg_driver::DropReason;

/// The checks of a received frame's header and their priority chains.
#[derive(LogicBlock)]
pub struct FrameChecks {
    /// Clock.
    pub clock: Signal<In, Clock>,
    /// The frame's words 0..=12.
    pub h: [Signal<In, Bits<32>>; 13],
    /// The frame's length in bytes.
    pub len: Signal<In, Bits<16>>,
    /// The sum of the high halves of words 4..=8 (the IPv4 header checksum's).
    pub csum_hi: Signal<In, Bits<20>>,
    /// The sum of the low halves of words 3..=7.
    pub csum_lo: Signal<In, Bits<20>>,
    /// The frame's job tag was taken out (it came 4 bytes longer).
    pub tag_stripped: Signal<In, Bit>,
    /// Too short for the tag check.
    pub tag_short: Signal<In, Bit>,
    /// Not the job's tag.
    pub tag_mismatch: Signal<In, Bit>,
    /// The job's settings.
    pub job: JobSettings,
    /// What the frame is, before the checksum and the sender.
    pub kind: Signal<Out, Bits<5>>,
    /// The chain reaches the header checksum check.
    pub reaches_checksum: Signal<Out, Bit>,
    /// The header checksum does not verify.
    pub checksum_bad: Signal<Out, Bit>,
    /// The worker search decides the frame.
    pub to_sender: Signal<Out, Bit>,
    /// The frame's kind once its sender is found.
    pub sender_kind: Signal<Out, Bits<5>>,
    /// The frame comes from the job's parent.
    pub from_parent: Signal<Out, Bit>,
    /// Its kind then.
    pub parent_kind: Signal<Out, Bits<5>>,
    total_len: Signal<Local, Bits<16>>,
    udp_len: Signal<Local, Bits<16>>,
    drop_truncated: Constant<Bits<5>>,
    drop_wrong_dst_mac: Constant<Bits<5>>,
    drop_wrong_vlan: Constant<Bits<5>>,
    drop_not_ipv4_udp: Constant<Bits<5>>,
    drop_ip_options: Constant<Bits<5>>,
    drop_bad_length: Constant<Bits<5>>,
    drop_ip_fragment: Constant<Bits<5>>,
    drop_wrong_dst_ip: Constant<Bits<5>>,
    drop_bad_port: Constant<Bits<5>>,
    drop_bad_msg_type: Constant<Bits<5>>,
    drop_bad_size: Constant<Bits<5>>,
    drop_bad_slot: Constant<Bits<5>>,
    drop_wrong_src_port: Constant<Bits<5>>,
    kind_contribution: Constant<Bits<5>>,
    kind_arp: Constant<Bits<5>>,
    kind_icmp: Constant<Bits<5>>,
    kind_session: Constant<Bits<5>>,
    kind_parent: Constant<Bits<5>>,
    pip_hi_eq: DFF<Bit>,
    pip_lo_eq: DFF<Bit>,
    fl_from_parent: DFF<Bit>,
    cls_parent: DFF<Bits<5>>,
    tl_m20: DFF<Bits<16>>,
    dst_eq_a: DFF<Bit>,
    dst_eq_b: DFF<Bit>,
    dst_bc_a: DFF<Bit>,
    dst_bc_b: DFF<Bit>,
    arp_ip_hi_ne: DFF<Bit>,
    arp_ip_lo_ne: DFF<Bit>,
    dip_hi_ne: DFF<Bit>,
    dip_lo_ne: DFF<Bit>,
    tl_p14: DFF<Bits<17>>,
    reach_ck: DFF<Bit>,
    cls_pre: DFF<Bits<5>>,
    nr_pre: DFF<Bit>,
    cls_rank: DFF<Bits<5>>,
    fl_len14: DFF<Bit>,
    fl_dst_ok: DFF<Bit>,
    fl_arp: DFF<Bit>,
    fl_len42: DFF<Bit>,
    fl_arp_bad: DFF<Bit>,
    fl_arp_ip_bad: DFF<Bit>,
    fl_ipv4: DFF<Bit>,
    fl_len34: DFF<Bit>,
    fl_ver_bad: DFF<Bit>,
    fl_ihl_bad: DFF<Bit>,
    fl_tl_bad: DFF<Bit>,
    fl_frag: DFF<Bit>,
    fl_dip_bad: DFF<Bit>,
    fl_icmp: DFF<Bit>,
    fl_tl28: DFF<Bit>,
    fl_icmp_bad: DFF<Bit>,
    fl_udp: DFF<Bit>,
    fl_udplen_bad: DFF<Bit>,
    fl_port_bad: DFF<Bit>,
    fl_ul18: DFF<Bit>,
    fl_msg_bad: DFF<Bit>,
    fl_msg_session: DFF<Bit>,
    fl_size_bad: DFF<Bit>,
    fl_pay_bad: DFF<Bit>,
    fl_slot_bad: DFF<Bit>,
    sport_off: DFF<Bits<16>>,
    fl_sport_bad: DFF<Bit>,
    ck_bad: DFF<Bit>,
    fold1_r: DFF<Bits<17>>,
    csum: DFF<Bits<20>>,
}

impl Default for FrameChecks {
    fn default() -> Self {
        Self {
            clock: Default::default(),
            h: Default::default(),
            len: Default::default(),
            csum_hi: Default::default(),
            csum_lo: Default::default(),
            tag_stripped: Default::default(),
            tag_short: Default::default(),
            tag_mismatch: Default::default(),
            job: Default::default(),
            kind: Default::default(),
            reaches_checksum: Default::default(),
            checksum_bad: Default::default(),
            to_sender: Default::default(),
            sender_kind: Default::default(),
            from_parent: Default::default(),
            parent_kind: Default::default(),
            total_len: Default::default(),
            udp_len: Default::default(),
            drop_truncated: kind(DropReason::Truncated as u64),
            drop_wrong_dst_mac: kind(DropReason::WrongDstMac as u64),
            drop_wrong_vlan: kind(DropReason::WrongVlan as u64),
            drop_not_ipv4_udp: kind(DropReason::NotIpv4Udp as u64),
            drop_ip_options: kind(DropReason::IpOptions as u64),
            drop_bad_length: kind(DropReason::BadLength as u64),
            drop_ip_fragment: kind(DropReason::IpFragment as u64),
            drop_wrong_dst_ip: kind(DropReason::WrongDstIp as u64),
            drop_bad_port: kind(DropReason::BadPort as u64),
            drop_bad_msg_type: kind(DropReason::BadMsgType as u64),
            drop_bad_size: kind(DropReason::BadSize as u64),
            drop_bad_slot: kind(DropReason::BadSlot as u64),
            drop_wrong_src_port: kind(DropReason::WrongSrcPort as u64),
            kind_contribution: kind(KIND_CONTRIBUTION),
            kind_arp: kind(KIND_ARP),
            kind_icmp: kind(KIND_ICMP),
            kind_session: kind(KIND_SESSION),
            kind_parent: kind(KIND_PARENT),
            pip_hi_eq: Default::default(),
            pip_lo_eq: Default::default(),
            fl_from_parent: Default::default(),
            cls_parent: Default::default(),
            tl_m20: Default::default(),
            dst_eq_a: Default::default(),
            dst_eq_b: Default::default(),
            dst_bc_a: Default::default(),
            dst_bc_b: Default::default(),
            arp_ip_hi_ne: Default::default(),
            arp_ip_lo_ne: Default::default(),
            dip_hi_ne: Default::default(),
            dip_lo_ne: Default::default(),
            tl_p14: Default::default(),
            reach_ck: Default::default(),
            cls_pre: Default::default(),
            nr_pre: Default::default(),
            cls_rank: Default::default(),
            fl_len14: Default::default(),
            fl_dst_ok: Default::default(),
            fl_arp: Default::default(),
            fl_len42: Default::default(),
            fl_arp_bad: Default::default(),
            fl_arp_ip_bad: Default::default(),
            fl_ipv4: Default::default(),
            fl_len34: Default::default(),
            fl_ver_bad: Default::default(),
            fl_ihl_bad: Default::default(),
            fl_tl_bad: Default::default(),
            fl_frag: Default::default(),
            fl_dip_bad: Default::default(),
            fl_icmp: Default::default(),
            fl_tl28: Default::default(),
            fl_icmp_bad: Default::default(),
            fl_udp: Default::default(),
            fl_udplen_bad: Default::default(),
            fl_port_bad: Default::default(),
            fl_ul18: Default::default(),
            fl_msg_bad: Default::default(),
            fl_msg_session: Default::default(),
            fl_size_bad: Default::default(),
            fl_pay_bad: Default::default(),
            fl_slot_bad: Default::default(),
            sport_off: Default::default(),
            fl_sport_bad: Default::default(),
            ck_bad: Default::default(),
            fold1_r: Default::default(),
            csum: Default::default(),
        }
    }
}

impl Logic for FrameChecks {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self,
            clock,
            pip_hi_eq,
            pip_lo_eq,
            fl_from_parent,
            cls_parent,
            tl_m20,
            dst_eq_a,
            dst_eq_b,
            dst_bc_a,
            dst_bc_b,
            arp_ip_hi_ne,
            arp_ip_lo_ne,
            dip_hi_ne,
            dip_lo_ne,
            tl_p14,
            reach_ck,
            cls_pre,
            nr_pre,
            cls_rank,
            fl_len14,
            fl_dst_ok,
            fl_arp,
            fl_len42,
            fl_arp_bad,
            fl_arp_ip_bad,
            fl_ipv4,
            fl_len34,
            fl_ver_bad,
            fl_ihl_bad,
            fl_tl_bad,
            fl_frag,
            fl_dip_bad,
            fl_icmp,
            fl_tl28,
            fl_icmp_bad,
            fl_udp,
            fl_udplen_bad,
            fl_port_bad,
            fl_ul18,
            fl_msg_bad,
            fl_msg_session,
            fl_size_bad,
            fl_pay_bad,
            fl_slot_bad,
            sport_off,
            fl_sport_bad,
            ck_bad,
            fold1_r,
            csum
        );
        self.kind.next = self.cls_pre.q.val();
        self.reaches_checksum.next = self.reach_ck.q.val();
        self.checksum_bad.next = self.ck_bad.q.val();
        self.to_sender.next = self.nr_pre.q.val();
        self.sender_kind.next = self.cls_rank.q.val();
        self.from_parent.next = self.fl_from_parent.q.val();
        self.parent_kind.next = self.cls_parent.q.val();
        // Every check is a registered flag, computed each cycle from the header words (stable
        // while deciding), so the priority chains below read flip-flops only; the header
        // checksum's sums take three registered steps (sum, fold, verify).
        self.total_len.next = self.h[4].val().get_bits::<16>(16);
        self.udp_len.next = bit_cast::<16, 32>(self.h[9].val());
        self.csum.d.next = self.csum_hi.val() + self.csum_lo.val();
        self.fold1_r.d.next =
            bit_cast::<17, 20>(self.csum.q.val() & 0xffff) + bit_cast::<17, 20>(self.csum.q.val() >> 16);
        self.ck_bad.d.next =
            (bit_cast::<16, 17>(self.fold1_r.q.val()) + bit_cast::<16, 17>(self.fold1_r.q.val() >> 16)) != 0xffff;
        self.fl_len14.d.next = self.len.val() < 14;
        // The destination compares registered in parts first (flag final in the third cycle).
        self.dst_eq_a.d.next = self.h[0].val()
            == ((bit_cast::<32, 16>(self.job.switch_mac_hi.val()) << 16) | (self.job.switch_mac_lo.val() >> 16));
        self.dst_eq_b.d.next = self.h[1].val().get_bits::<16>(16) == bit_cast::<16, 32>(self.job.switch_mac_lo.val());
        self.dst_bc_a.d.next = self.h[0].val() == 0xffff_ffff_u64;
        self.dst_bc_b.d.next = self.h[1].val().get_bits::<16>(16) == 0xffff;
        self.fl_dst_ok.d.next =
            (self.dst_eq_a.q.val() & self.dst_eq_b.q.val()) | (self.dst_bc_a.q.val() & self.dst_bc_b.q.val());
        self.fl_arp.d.next = self.h[3].val().get_bits::<16>(16) == 0x0806;
        self.fl_len42.d.next = self.len.val() < 42;
        self.fl_arp_bad.d.next = (bit_cast::<16, 32>(self.h[3].val()) != 1)
            | (self.h[4].val() != 0x0800_0604)
            | (self.h[5].val().get_bits::<16>(16) != 1);
        // Address compares in two registered halves (flags final in the third deciding cycle).
        self.arp_ip_hi_ne.d.next = bit_cast::<16, 32>(self.h[9].val()) != self.job.switch_ip.val().get_bits::<16>(16);
        self.arp_ip_lo_ne.d.next = self.h[10].val().get_bits::<16>(16) != bit_cast::<16, 32>(self.job.switch_ip.val());
        self.fl_arp_ip_bad.d.next = self.arp_ip_hi_ne.q.val() | self.arp_ip_lo_ne.q.val();
        self.fl_ipv4.d.next = self.h[3].val().get_bits::<16>(16) == 0x0800;
        self.fl_len34.d.next = self.len.val() < 34;
        self.fl_ver_bad.d.next = self.h[3].val().get_bits::<4>(12) != 4;
        self.fl_ihl_bad.d.next = self.h[3].val().get_bits::<4>(8) != 5;
        // Lengths precomputed one register stage earlier (T - 20, T + 14), so each flag below is a
        // compare of two registers (ready in the third deciding cycle, read in the fourth).
        self.tl_m20.d.next = self.total_len.val() - 20;
        self.tl_p14.d.next = bit_cast::<17, 16>(self.total_len.val()) + 14;
        self.fl_tl_bad.d.next =
            (self.total_len.val() < 20) | (self.tl_p14.q.val() > bit_cast::<17, 16>(self.len.val()));
        self.fl_frag.d.next = self.h[5].val().get_bits::<14>(16) != 0;
        self.dip_hi_ne.d.next = bit_cast::<16, 32>(self.h[7].val()) != self.job.switch_ip.val().get_bits::<16>(16);
        self.dip_lo_ne.d.next = self.h[8].val().get_bits::<16>(16) != bit_cast::<16, 32>(self.job.switch_ip.val());
        self.fl_dip_bad.d.next = self.dip_hi_ne.q.val() | self.dip_lo_ne.q.val();
        self.fl_icmp.d.next = bit_cast::<8, 32>(self.h[5].val()) == 1;
        self.fl_tl28.d.next = self.total_len.val() < 28;
        self.fl_icmp_bad.d.next = bit_cast::<16, 32>(self.h[8].val()) != 0x0800;
        self.fl_udp.d.next = bit_cast::<8, 32>(self.h[5].val()) == 17;
        self.fl_udplen_bad.d.next = self.udp_len.val() != self.tl_m20.q.val();
        self.fl_port_bad.d.next = self.h[9].val().get_bits::<12>(20) != 0xBEE;
        // §1 7.5: the source port's offset from `worker_port` (mod 2^16) registered, then
        // compared with `worker_ports` − 1 (flag final in the second deciding cycle).
        self.sport_off.d.next = bit_cast::<16, 32>(self.h[8].val()) - self.job.worker_port.val();
        self.fl_sport_bad.d.next = self.sport_off.q.val() > bit_cast::<16, 8>(self.job.worker_ports_m1.val());
        self.fl_ul18.d.next = self.udp_len.val() < 18;
        self.fl_msg_session.d.next = self.h[10].val().get_bits::<4>(12) == 8;
        self.fl_msg_bad.d.next = (self.h[10].val().get_bits::<4>(12) != 1) & (self.h[10].val().get_bits::<4>(12) != 8);
        self.fl_size_bad.d.next = self.h[10].val().get_bits::<3>(8) != self.job.size_code.val();
        self.fl_pay_bad.d.next = self.udp_len.val() != (bit_cast::<16, 9>(self.job.payload_words.val()) << 2) + 18;
        self.fl_slot_bad.d.next =
            bit_cast::<16, 15>(self.h[12].val().get_bits::<15>(16)) >= self.job.slots_in_use.val();
        // The priority chain over the flags, registered a cycle before the decision (every flag
        // is final from the third deciding cycle on): `cls_pre` and `nr_pre` as if the header
        // checksum were good, `reach_ck` when the chain gets as far as the checksum check, and
        // `cls_rank` the kind after the worker search has found the sender. The decision then
        // picks among registers only (`ck_bad` and the search result are the late inputs).
        self.reach_ck.d.next = !self.fl_len14.q.val()
            & self.fl_dst_ok.q.val()
            & !self.tag_short.val()
            & !self.tag_mismatch.val()
            & !self.fl_arp.q.val()
            & self.fl_ipv4.q.val()
            & !self.fl_len34.q.val()
            & !self.fl_ver_bad.q.val()
            & !self.fl_ihl_bad.q.val();
        self.nr_pre.d.next = false;
        // A frame whose tag was taken out is 4 bytes shorter than it came: its length is checked
        // (§1 step 1) as it came, and again without the tag after the tag check (step 3.3).
        if self.fl_len14.q.val() & !self.tag_stripped.val() {
            self.cls_pre.d.next = self.drop_truncated.val();
        } else if !self.fl_dst_ok.q.val() {
            self.cls_pre.d.next = self.drop_wrong_dst_mac.val();
        } else if self.tag_short.val() {
            self.cls_pre.d.next = self.drop_truncated.val();
        } else if self.tag_mismatch.val() {
            self.cls_pre.d.next = self.drop_wrong_vlan.val();
        } else if self.fl_len14.q.val() {
            self.cls_pre.d.next = self.drop_truncated.val();
        } else if self.fl_arp.q.val() {
            if self.fl_len42.q.val() {
                self.cls_pre.d.next = self.drop_truncated.val();
            } else if self.fl_arp_bad.q.val() {
                self.cls_pre.d.next = self.drop_not_ipv4_udp.val();
            } else if self.fl_arp_ip_bad.q.val() {
                self.cls_pre.d.next = self.drop_wrong_dst_ip.val();
            } else {
                self.cls_pre.d.next = self.kind_arp.val();
            }
        } else if !self.fl_ipv4.q.val() {
            self.cls_pre.d.next = self.drop_not_ipv4_udp.val();
        } else if self.fl_len34.q.val() {
            self.cls_pre.d.next = self.drop_truncated.val();
        } else if self.fl_ver_bad.q.val() {
            self.cls_pre.d.next = self.drop_not_ipv4_udp.val();
        } else if self.fl_ihl_bad.q.val() {
            self.cls_pre.d.next = self.drop_ip_options.val();
        } else if self.fl_tl_bad.q.val() {
            self.cls_pre.d.next = self.drop_bad_length.val();
        } else if self.fl_frag.q.val() {
            self.cls_pre.d.next = self.drop_ip_fragment.val();
        } else if self.fl_dip_bad.q.val() {
            self.cls_pre.d.next = self.drop_wrong_dst_ip.val();
        } else if self.fl_icmp.q.val() {
            if self.fl_tl28.q.val() {
                self.cls_pre.d.next = self.drop_truncated.val();
            } else if self.fl_icmp_bad.q.val() {
                self.cls_pre.d.next = self.drop_not_ipv4_udp.val();
            } else {
                self.cls_pre.d.next = self.kind_icmp.val();
            }
        } else if !self.fl_udp.q.val() {
            self.cls_pre.d.next = self.drop_not_ipv4_udp.val();
        } else if self.fl_tl28.q.val() {
            self.cls_pre.d.next = self.drop_truncated.val();
        } else if self.fl_udplen_bad.q.val() {
            self.cls_pre.d.next = self.drop_bad_length.val();
        } else if self.fl_port_bad.q.val() {
            self.cls_pre.d.next = self.drop_bad_port.val();
        } else {
            self.nr_pre.d.next = true;
            self.cls_pre.d.next = self.kind_contribution.val();
        }
        // A parent result (docs/switch.md §6): the source is the parent's address (compared in
        // registered halves); the chain of 7.5 (no source port check) and 8.1–8.5.
        self.pip_hi_eq.d.next = bit_cast::<16, 32>(self.h[6].val()) == self.job.parent_ip.val().get_bits::<16>(16);
        self.pip_lo_eq.d.next = self.h[7].val().get_bits::<16>(16) == bit_cast::<16, 32>(self.job.parent_ip.val());
        self.fl_from_parent.d.next = self.job.parent_on.val() & self.pip_hi_eq.q.val() & self.pip_lo_eq.q.val();
        if self.fl_ul18.q.val() {
            self.cls_parent.d.next = self.drop_truncated.val();
        } else if self.fl_msg_bad.q.val() {
            self.cls_parent.d.next = self.drop_bad_msg_type.val();
        } else if self.fl_size_bad.q.val() {
            self.cls_parent.d.next = self.drop_bad_size.val();
        } else if self.fl_pay_bad.q.val() {
            self.cls_parent.d.next = self.drop_bad_length.val();
        } else if self.fl_slot_bad.q.val() {
            self.cls_parent.d.next = self.drop_bad_slot.val();
        } else {
            self.cls_parent.d.next = self.kind_parent.val();
        }
        if self.fl_sport_bad.q.val() {
            self.cls_rank.d.next = self.drop_wrong_src_port.val();
        } else if self.fl_ul18.q.val() {
            self.cls_rank.d.next = self.drop_truncated.val();
        } else if self.fl_msg_bad.q.val() {
            self.cls_rank.d.next = self.drop_bad_msg_type.val();
        } else if self.fl_size_bad.q.val() {
            self.cls_rank.d.next = self.drop_bad_size.val();
        } else if self.fl_pay_bad.q.val() {
            self.cls_rank.d.next = self.drop_bad_length.val();
        } else if self.fl_slot_bad.q.val() {
            self.cls_rank.d.next = self.drop_bad_slot.val();
        } else if self.fl_msg_session.q.val() {
            self.cls_rank.d.next = self.kind_session.val();
        } else {
            self.cls_rank.d.next = self.kind_contribution.val();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::Rng;
    use spotagg_driver::config::ParentConfig;
    use spotagg_driver::wire::{
        checksum, ipv4, layout, switchml, EtherType, EthernetFrame, IpProtocol, Ipv4Addr, Ipv4Packet, MacAddr,
        PayloadSize, UdpPacket,
    };
    use spotagg_driver::{JobConfig, JobVlan, WorkerEntry};
    use spotagg_spec::reference::{classify, tag, untag, Classification};
    use DropReason::*;

    const SWITCH_MAC: [u8; 6] = [0x02, 0x00, 0x5a, 0x00, 0x00, 0x01];
    const SWITCH_IP: [u8; 4] = [192, 0, 2, 1];
    const PARENT_IP: [u8; 4] = [198, 51, 100, 7];
    /// A source no case has: the sender unknown.
    const NOBODY_IP: [u8; 4] = [192, 0, 2, 99];
    const WORKER_PORT: u16 = 0xbee3;
    /// A range of worker ports (SwitchML's worker threads): 0xbee3..=0xbee5.
    const WORKER_PORTS: u16 = 3;
    const PAYLOAD: PayloadSize = PayloadSize::B256;
    const SIZE_CODE: u8 = PAYLOAD.code();
    const PAYLOAD_WORDS: u16 = PAYLOAD.elements() as u16;
    const SLOTS: u16 = 4;
    /// The VLAN of the cases' tagged job.
    const VID: u16 = 100;

    /// What the block says of a frame.
    #[derive(Debug, PartialEq)]
    struct Verdict {
        kind: u64,
        reaches_checksum: bool,
        checksum_bad: bool,
        to_sender: bool,
        sender_kind: u64,
        from_parent: bool,
        parent_kind: u64,
    }

    /// The kind the block names a classification by (the drop reason, or a `KIND_*`).
    fn code(c: Classification) -> u64 {
        match c {
            Classification::Drop(r) => r as u64,
            Classification::Contribution { .. } => KIND_CONTRIBUTION,
            Classification::Session { .. } => KIND_SESSION,
            Classification::ArpRequest => KIND_ARP,
            Classification::EchoRequest { .. } => KIND_ICMP,
            Classification::ParentResult { .. } => KIND_PARENT,
        }
    }

    /// How a case's frame came.
    #[derive(Debug, Clone, Copy, PartialEq)]
    enum Tagging {
        /// Untagged, to an untagged job.
        Untagged,
        /// With the job's 802.1Q tag, which the parser took out: the block sees the frame
        /// without it.
        JobTag,
        /// Without a tag, to a tagged job: another EtherType than the TPID, or too short for a tag.
        NoTag,
    }

    /// One frame: the first 52 bytes the block sees and its length (without the job's tag, if it
    /// came with it), how it came, whether the job has a parent.
    struct Case {
        b: [u8; 52],
        len: u16,
        tagging: Tagging,
        parent_on: bool,
    }

    impl Case {
        /// The block's job settings as a job of the specification: its `workers` and `parent`
        /// (by IPv4 address), tagged with [`VID`] unless the case came untagged.
        fn job(&self, workers: &[[u8; 4]], parent: Option<[u8; 4]>) -> JobConfig {
            let mut job = JobConfig::example(1, PAYLOAD, SLOTS);
            job.switch_mac = MacAddr(SWITCH_MAC);
            job.switch_ip = Ipv4Addr::from(SWITCH_IP);
            job.worker_port = WORKER_PORT;
            job.worker_ports = WORKER_PORTS;
            job.workers = workers
                .iter()
                .map(|&ip| WorkerEntry { ip: Ipv4Addr::from(ip), mac: MacAddr([0x02, 0x00, 0x5a, 0x00, 0x01, 0x01]) })
                .collect();
            job.parent = parent.map(|ip| ParentConfig {
                ip: Ipv4Addr::from(ip),
                mac: MacAddr([0x02, 0x00, 0x5a, 0x00, 0x02, 0x01]),
                port: 0xbee0,
                rank: 0,
            });
            job.vlan = (self.tagging != Tagging::Untagged).then_some(JobVlan { id: VID, priority: 0 });
            job
        }

        /// The frame as it came, with `b` for the case's first 52 bytes: `len` bytes (zeros after
        /// the 52), and the job's tag after the source MAC if it came with one.
        fn frame(&self, b: &[u8; 52]) -> Vec<u8> {
            let mut f = b.to_vec();
            f.resize(usize::from(self.len), 0);
            if self.tagging == Tagging::JobTag {
                tag(&self.job(&[], None), &mut f);
            }
            f
        }

        /// The untagger's flags (stripped, short, mismatch): the specification's `untag` of the
        /// frame as it came, sent to the switch's MAC (the untagger looks at the tag alone; the
        /// block checks the destination itself, before the flags).
        fn tag_flags(&self) -> (bool, bool, bool) {
            if self.tagging == Tagging::Untagged {
                return (false, false, false);
            }
            let mut came = self.frame(&self.b);
            let n = came.len().min(6);
            came[..n].copy_from_slice(&SWITCH_MAC[..n]);
            match untag(&self.job(&[], None), &came, &mut Vec::new()) {
                Ok(_) => {
                    assert_eq!(self.tagging, Tagging::JobTag, "a frame without the tag passed the tag check");
                    (true, false, false)
                }
                Err(Truncated) => (false, true, false),
                Err(WrongVlan) => (false, false, true),
                Err(r) => unreachable!("untag of a frame to the switch: {r:?}"),
            }
        }

        /// The case's frame made to reach the source check (docs/switch.md §1 step 7) with the
        /// fields the checks after it read left as they are (UDP source port and length, the
        /// SwitchML header): untagged IPv4 (IHL 5, not a fragment, the checksum good) and UDP to
        /// the switch's MAC, address and a SwitchML port, its IPv4 total length the UDP length
        /// plus 20 and the frame as long as that says. `None` when no IPv4 total length fits.
        fn reaching_the_source(&self) -> Option<Vec<u8>> {
            let mut b = self.b;
            let total = u16::from_be_bytes([b[38], b[39]]).checked_add(ipv4::HEADER_LEN as u16)?;
            let mut eth = EthernetFrame::new_unchecked(&mut b[..]);
            eth.set_dst(MacAddr(SWITCH_MAC));
            eth.set_ethertype(EtherType::IPV4);
            let mut ip = Ipv4Packet::new_unchecked(&mut b[layout::IP_OFFSET..layout::L4_OFFSET]);
            ip.set_version_header_len(ipv4::HEADER_LEN);
            ip.set_total_len(total);
            ip.set_flags_frag(0);
            ip.set_protocol(IpProtocol::UDP);
            ip.set_dst_addr(Ipv4Addr::from(SWITCH_IP));
            ip.fill_checksum();
            UdpPacket::new_unchecked(&mut b[layout::L4_OFFSET..layout::SWITCHML_OFFSET])
                .set_dst_port(switchml::UDP_PORT_BASE);
            let mut f = b.to_vec();
            f.resize(layout::IP_OFFSET + usize::from(total), 0);
            Some(f)
        }

        /// Each output as the specification's `classify` gives it, asked of the frame with its
        /// header checksum made good and made bad, and of jobs where the frame's source is
        /// unknown, a worker, or the parent:
        /// - `kind`, `to_sender`: checksum good, source unknown; the chain reaches the source
        ///   when that gives `unknown_source` (`kind` is then a contribution's, §1 step 7);
        /// - `reaches_checksum`: checksum bad gives `ip_checksum`;
        /// - `checksum_bad`: the header checksum does not verify (the driver's);
        /// - `sender_kind`, `parent_kind`: the source a worker, or the parent, for the frame
        ///   made to reach the source check ([`Case::reaching_the_source`]; the block's chains
        ///   after the source read only the fields it keeps), so that they are checked on every
        ///   frame, not only on those that get there;
        /// - `from_parent`: the job has a parent and the source is its address.
        ///
        /// The second value is false when no frame with the case's UDP length reaches the source
        /// check (a UDP length under 8): the block's `sender_kind` and `parent_kind` are then
        /// nobody's to say.
        fn expected(&self) -> (Verdict, bool) {
            let src: [u8; 4] = self.b[26..30].try_into().unwrap();
            let mut good = self.b;
            good[24..26].fill(0);
            let c = checksum::compute(&good[14..34]);
            good[24..26].copy_from_slice(&c.to_be_bytes());
            let mut bad = good;
            bad[25] ^= 1;
            let unknown = self.job(&[NOBODY_IP], None);
            let before = classify(&unknown, &self.frame(&good));
            let to_sender = before == Classification::Drop(UnknownSource);
            // After the source check: an untagged job (the frame made to reach it is untagged).
            let untagged = |workers: &[[u8; 4]], parent| JobConfig { vlan: None, ..self.job(workers, parent) };
            let reach = self.reaching_the_source();
            let after_source = reach
                .as_ref()
                .is_some_and(|f| classify(&untagged(&[NOBODY_IP], None), f) == Classification::Drop(UnknownSource));
            let after = |job: JobConfig| reach.as_ref().map_or(0, |f| code(classify(&job, f)));
            let want = Verdict {
                kind: if to_sender { KIND_CONTRIBUTION } else { code(before) },
                reaches_checksum: classify(&unknown, &self.frame(&bad)) == Classification::Drop(IpChecksum),
                checksum_bad: !checksum::verify(&self.b[14..34]),
                to_sender,
                sender_kind: after(untagged(&[src], None)),
                from_parent: self.parent_on && src == PARENT_IP,
                parent_kind: after(untagged(&[NOBODY_IP], Some(src))),
            };
            (want, after_source)
        }

        /// A contribution from 192.0.2.11 to slot 2, set 1, with some of its fields spoiled.
        fn random(rng: &mut Rng) -> Case {
            let mut b = [0u8; 52];
            b[0..6].copy_from_slice(&SWITCH_MAC);
            b[6..12].copy_from_slice(&[0x02, 0x00, 0x5a, 0x00, 0x01, 0x01]);
            b[12..14].copy_from_slice(&[0x08, 0x00]);
            let udp_len = PAYLOAD_WORDS * 4 + 18;
            let total = 20 + udp_len;
            b[14] = 0x45;
            b[16..18].copy_from_slice(&total.to_be_bytes());
            b[22] = 64;
            b[23] = 17;
            b[26..30].copy_from_slice(&[192, 0, 2, 11]);
            b[30..34].copy_from_slice(&SWITCH_IP);
            b[34..36].copy_from_slice(&WORKER_PORT.to_be_bytes());
            b[36..38].copy_from_slice(&0xbee0u16.to_be_bytes());
            b[38..40].copy_from_slice(&udp_len.to_be_bytes());
            b[42] = 0x10 | SIZE_CODE;
            b[48..50].copy_from_slice(&0x8002u16.to_be_bytes());
            let mut len = 14 + total;
            let spoil = |rng: &mut Rng| rng.one_in(7);
            if spoil(rng) {
                b[rng.below(6) as usize] ^= 1 << rng.below(8);
            }
            if spoil(rng) {
                b[0..6].copy_from_slice(&[0xff; 6]);
            }
            if spoil(rng) {
                // An ARP request for the switch, or for another address, or a malformed one.
                b[12..14].copy_from_slice(&[0x08, 0x06]);
                b[14..22].copy_from_slice(&[0, 1, 8, 0, 6, 4, 0, 1]);
                b[38..42].copy_from_slice(&SWITCH_IP);
                if rng.one_in(3) {
                    b[41] ^= 1;
                }
                if rng.one_in(3) {
                    b[14 + rng.below(8) as usize] ^= 1 << rng.below(8);
                }
            }
            if spoil(rng) {
                b[12..14].copy_from_slice(&(rng.next() as u16).to_be_bytes());
            }
            if spoil(rng) {
                b[14] = [0x46, 0x55, 0x65, 0x4f][rng.below(4) as usize];
            }
            if spoil(rng) {
                let t = [0u16, 19, 20, 27, 28, total - 1, total + 1, rng.next() as u16][rng.below(8) as usize];
                b[16..18].copy_from_slice(&t.to_be_bytes());
            }
            if spoil(rng) {
                b[20 + rng.below(2) as usize] |= 1 << rng.below(6);
            }
            if spoil(rng) {
                b[30 + rng.below(4) as usize] ^= 0x10;
            }
            if spoil(rng) {
                // An echo request (type 8 code 0), or another ICMP message, or TCP.
                b[23] = [1, 1, 6][rng.below(3) as usize];
                b[34..36].copy_from_slice(&[[8, 0], [0, 0]][rng.below(2) as usize]);
            }
            if spoil(rng) {
                let u = [0u16, 17, 18, udp_len - 4, rng.next() as u16][rng.below(5) as usize];
                b[38..40].copy_from_slice(&u.to_be_bytes());
            }
            if spoil(rng) {
                b[36] ^= 1 << rng.below(8);
            }
            if spoil(rng) {
                b[35] ^= 1;
            }
            if spoil(rng) {
                // Below, inside and above the range of worker ports.
                let port = WORKER_PORT - 1 + rng.below(u64::from(WORKER_PORTS) + 2) as u16;
                b[34..36].copy_from_slice(&port.to_be_bytes());
            }
            if spoil(rng) {
                b[42] = ([0, 2, 8, 15][rng.below(4) as usize] << 4) | (b[42] & 15);
            }
            if spoil(rng) {
                b[42] = (b[42] & 0xf8) | rng.below(8) as u8;
            }
            if spoil(rng) {
                b[49] = rng.below(8) as u8;
            }
            if spoil(rng) {
                b[26..30].copy_from_slice(&PARENT_IP);
            }
            if spoil(rng) {
                len = [0, 10, 13, 14, 30, 33, 34, 41, 42, 60][rng.below(10) as usize];
            }
            // The header checksum: right unless spoiled.
            let c = checksum::compute(&b[14..34]);
            b[24..26].copy_from_slice(&c.to_be_bytes());
            if spoil(rng) {
                b[25] ^= 1 << rng.below(8);
            }
            // A tagged job's frame: without a tag when `short` or `mismatch` (then too short
            // for one when `short`), with the job's tag when `stripped` (12 bytes or more
            // without it: the tag follows the source MAC).
            let (stripped, short, mismatch) = (rng.one_in(5), rng.one_in(12), rng.one_in(12));
            let tagging = if short || mismatch {
                Tagging::NoTag
            } else if stripped && len >= 12 {
                Tagging::JobTag
            } else {
                Tagging::Untagged
            };
            if short {
                len = len.min(15);
            }
            Case { b, len, tagging, parent_on: rng.one_in(2) }
        }
    }

    fn apply(c: &mut FrameChecks, case: &Case) {
        for i in 0..13 {
            let w = u32::from_be_bytes([case.b[4 * i], case.b[4 * i + 1], case.b[4 * i + 2], case.b[4 * i + 3]]);
            c.h[i].next = u64::from(w).into();
        }
        c.len.next = u64::from(case.len).into();
        // The parser's two sums, as it accumulates them word by word.
        let half = |i: usize, hi: bool| {
            u64::from(u16::from_be_bytes([
                case.b[4 * i + 2 * usize::from(!hi)],
                case.b[4 * i + 2 * usize::from(!hi) + 1],
            ]))
        };
        c.csum_hi.next = (4..=8).map(|i| half(i, true)).sum::<u64>().into();
        c.csum_lo.next = (3..=7).map(|i| half(i, false)).sum::<u64>().into();
        let (stripped, short, mismatch) = case.tag_flags();
        c.tag_stripped.next = stripped;
        c.tag_short.next = short;
        c.tag_mismatch.next = mismatch;
        c.job.parent_on.next = case.parent_on;
    }

    fn verdict(c: &FrameChecks) -> Verdict {
        Verdict {
            kind: c.kind.val().index() as u64,
            reaches_checksum: c.reaches_checksum.val(),
            checksum_bad: c.checksum_bad.val(),
            to_sender: c.to_sender.val(),
            sender_kind: c.sender_kind.val().index() as u64,
            from_parent: c.from_parent.val(),
            parent_kind: c.parent_kind.val().index() as u64,
        }
    }

    /// Seeded frames, most with one or more fields spoiled: three clocks after a frame's inputs
    /// are presented, every output is what the reference switch's classification
    /// (`spotagg_spec::reference::classify`, docs/switch.md §1) says of the frame
    /// ([`Case::expected`]), whatever the frame before.
    #[test]
    fn every_output_follows_the_order_of_section_1() {
        let mut c = FrameChecks::default();
        c.connect_all();
        c.job.set_switch(SWITCH_MAC, SWITCH_IP);
        c.job.worker_port.next = u64::from(WORKER_PORT).into();
        c.job.worker_ports_m1.next = u64::from(WORKER_PORTS - 1).into();
        c.job.size_code.next = u64::from(SIZE_CODE).into();
        c.job.payload_words.next = u64::from(PAYLOAD_WORDS).into();
        c.job.slots_in_use.next = u64::from(SLOTS).into();
        c.job.parent_ip.next = u64::from(u32::from_be_bytes(PARENT_IP)).into();
        let mut rng = Rng(0x0f1e_2d3c_4b5a_6978);
        let mut kinds = std::collections::BTreeSet::new();
        let mut no_source = 0;
        for n in 0..3000 {
            let case = Case::random(&mut rng);
            apply(&mut c, &case);
            for _ in 0..3 {
                tick!(&mut c);
            }
            let got = verdict(&c);
            let (mut want, after_source) = case.expected();
            kinds.insert(want.kind);
            if after_source {
                kinds.insert(want.sender_kind);
            } else {
                (want.sender_kind, want.parent_kind) = (got.sender_kind, got.parent_kind);
                no_source += 1;
            }
            assert_eq!(got, want, "frame {n}: {:02x?}, len {}, {:?}", case.b, case.len, case.tagging);
        }
        assert!(no_source < 150, "{no_source} frames whose kinds after the source check were not compared");
        // The seeds reach every kind the chains can name but the late ones (checksum, source).
        for r in [Truncated, WrongDstMac, WrongVlan, NotIpv4Udp, IpOptions, BadLength, IpFragment, WrongDstIp, BadPort]
            .into_iter()
            .chain([WrongSrcPort, BadMsgType, BadSize, BadSlot])
        {
            assert!(kinds.contains(&(r as u64)), "{r:?} never drawn");
        }
        for kind in [KIND_ARP, KIND_ICMP, KIND_CONTRIBUTION, KIND_SESSION] {
            assert!(kinds.contains(&kind), "kind {kind} never drawn");
        }
    }
}
