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
//!   `classification_follows_the_order_of_the_checks` and, check by check, in this module's test.

use crate::config_registers::JobSettings;
use crate::frame_parser::{kind, KIND_ARP, KIND_CONTRIBUTION, KIND_ICMP, KIND_PARENT, KIND_SESSION};
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
        self.fl_sport_bad.d.next = bit_cast::<16, 32>(self.h[8].val()) != self.job.worker_port.val();
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
    use DropReason::*;

    const SWITCH_MAC: [u8; 6] = [0x02, 0x00, 0x5a, 0x00, 0x00, 0x01];
    const SWITCH_IP: [u8; 4] = [192, 0, 2, 1];
    const PARENT_IP: [u8; 4] = [198, 51, 100, 7];
    const WORKER_PORT: u16 = 0xbee3;
    const SIZE_CODE: u8 = 1;
    const PAYLOAD_WORDS: u16 = 64;
    const SLOTS: u16 = 4;

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

    /// One frame's inputs: its first 52 bytes, its length, the untagger's flags.
    struct Case {
        b: [u8; 52],
        len: u16,
        stripped: bool,
        short: bool,
        mismatch: bool,
        parent_on: bool,
    }

    impl Case {
        fn be16(&self, i: usize) -> u16 {
            spotagg_driver::wire::be16(&self.b[i..])
        }

        /// The IPv4 header's 16-bit words (bytes 14..34) sum to 0xffff in ones' complement.
        fn checksum_ok(&self) -> bool {
            let mut sum: u32 = (14..34).step_by(2).map(|i| u32::from(self.be16(i))).sum();
            while sum > 0xffff {
                sum = (sum & 0xffff) + (sum >> 16);
            }
            sum == 0xffff
        }

        /// docs/switch.md §1 in its order, on the frame's bytes.
        fn model(&self) -> Verdict {
            let b = &self.b;
            let (ethertype, total, udp_len) = (self.be16(12), self.be16(16), self.be16(38));
            let dst_ok = b[0..6] == SWITCH_MAC || b[0..6] == [0xff; 6];
            let (msg, size, slot) = (b[42] >> 4, b[42] & 7, self.be16(48) & 0x7fff);
            let (len, k) = (self.len, |r: DropReason| r as u64);
            let mut to_sender = false;
            let kind = if len < 14 && !self.stripped {
                k(Truncated)
            } else if !dst_ok {
                k(WrongDstMac)
            } else if self.short {
                k(Truncated)
            } else if self.mismatch {
                k(WrongVlan)
            } else if len < 14 {
                k(Truncated)
            } else if ethertype == 0x0806 {
                let arp_ok = self.be16(14) == 1 && self.be16(16) == 0x0800 && b[18..20] == [6, 4] && self.be16(20) == 1;
                if len < 42 {
                    k(Truncated)
                } else if !arp_ok {
                    k(NotIpv4Udp)
                } else if b[38..42] != SWITCH_IP {
                    k(WrongDstIp)
                } else {
                    KIND_ARP
                }
            } else if ethertype != 0x0800 || len < 34 {
                k(if ethertype != 0x0800 { NotIpv4Udp } else { Truncated })
            } else if b[14] >> 4 != 4 {
                k(NotIpv4Udp)
            } else if b[14] & 15 != 5 {
                k(IpOptions)
            } else if total < 20 || u32::from(total) + 14 > u32::from(len) {
                k(BadLength)
            } else if self.be16(20) & 0x3fff != 0 {
                k(IpFragment)
            } else if b[30..34] != SWITCH_IP {
                k(WrongDstIp)
            } else if b[23] == 1 {
                if total < 28 {
                    k(Truncated)
                } else if self.be16(34) != 0x0800 {
                    k(NotIpv4Udp)
                } else {
                    KIND_ICMP
                }
            } else if b[23] != 17 {
                k(NotIpv4Udp)
            } else if total < 28 {
                k(Truncated)
            } else if udp_len != total.wrapping_sub(20) {
                k(BadLength)
            } else if self.be16(36) >> 4 != 0xbee {
                k(BadPort)
            } else {
                to_sender = true;
                KIND_CONTRIBUTION
            };
            // §1 step 8 (7.5 first for a worker's frame).
            let switchml = |rest: u64| {
                if udp_len < 18 {
                    k(Truncated)
                } else if msg != 1 && msg != 8 {
                    k(BadMsgType)
                } else if size != SIZE_CODE {
                    k(BadSize)
                } else if udp_len != PAYLOAD_WORDS * 4 + 18 {
                    k(BadLength)
                } else if slot >= SLOTS {
                    k(BadSlot)
                } else {
                    rest
                }
            };
            let sender_kind = if self.be16(34) != WORKER_PORT {
                k(WrongSrcPort)
            } else {
                switchml(if msg == 8 { KIND_SESSION } else { KIND_CONTRIBUTION })
            };
            Verdict {
                kind,
                reaches_checksum: len >= 14
                    && dst_ok
                    && !self.short
                    && !self.mismatch
                    && ethertype == 0x0800
                    && len >= 34
                    && b[14] == 0x45,
                checksum_bad: !self.checksum_ok(),
                to_sender,
                sender_kind,
                from_parent: self.parent_on && b[26..30] == PARENT_IP,
                parent_kind: switchml(KIND_PARENT),
            }
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
            let mut sum: u32 = (14..34).step_by(2).map(|i| u32::from(u16::from_be_bytes([b[i], b[i + 1]]))).sum();
            while sum > 0xffff {
                sum = (sum & 0xffff) + (sum >> 16);
            }
            b[24..26].copy_from_slice(&(!(sum as u16)).to_be_bytes());
            if spoil(rng) {
                b[25] ^= 1 << rng.below(8);
            }
            Case {
                b,
                len,
                stripped: rng.one_in(5),
                short: rng.one_in(12),
                mismatch: rng.one_in(12),
                parent_on: rng.one_in(2),
            }
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
        c.tag_stripped.next = case.stripped;
        c.tag_short.next = case.short;
        c.tag_mismatch.next = case.mismatch;
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
    /// are presented, every output is the model's, whatever the frame before.
    #[test]
    fn every_output_follows_the_order_of_section_1() {
        let mut c = FrameChecks::default();
        c.connect_all();
        c.job.set_switch(SWITCH_MAC, SWITCH_IP);
        c.job.worker_port.next = u64::from(WORKER_PORT).into();
        c.job.size_code.next = u64::from(SIZE_CODE).into();
        c.job.payload_words.next = u64::from(PAYLOAD_WORDS).into();
        c.job.slots_in_use.next = u64::from(SLOTS).into();
        c.job.parent_ip.next = u64::from(u32::from_be_bytes(PARENT_IP)).into();
        let mut rng = Rng(0x0f1e_2d3c_4b5a_6978);
        let mut kinds = std::collections::BTreeSet::new();
        for n in 0..3000 {
            let case = Case::random(&mut rng);
            apply(&mut c, &case);
            for _ in 0..3 {
                tick!(&mut c);
            }
            let want = case.model();
            kinds.insert(want.kind);
            kinds.insert(want.sender_kind);
            assert_eq!(verdict(&c), want, "frame {n}: {:02x?}, len {}", case.b, case.len);
        }
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
