//! The EAPS PDU in hardware (docs/eaps.md §1): [`EapsRx`] checks and takes apart a received
//! frame on the fly, [`EapsTx`] emits one from its fields. The fields travel between blocks as
//! an [`EapsPduSource`]/[`EapsPduSink`] interface.
//!
//! [`EapsRx`] reads a frame by the receiver rules of docs/eaps.md §1.1, as
//! `spotagg_driver::wire::eaps::parse_edp` does: the destination 00-E0-2B-00-00-04, TPID
//! 0x8100 and LLC/SNAP up to the OUI make an EDP frame; a PID other than 0x00BB or an 802.3
//! length over 1500 another frame; then the 802.3 and EDP lengths, the EDP version, the
//! checksum over the EDP length, the TLV walk (marker 0x99, lengths, the null TLV, one EAPS TLV
//! of 64 bytes or more) and the EAPS TLV's version. Its fields are gathered at their offsets
//! from the EAPS TLV's marker, wherever it is in the list. It takes a byte every clock (no
//! back-pressure: `ready` is always high) and holds the last PDU for its owner until `take`,
//! or, with `other` high, another EDP frame (only its tag's VID, so that the node can pass it
//! on), or, with `malformed` set to the reason, a malformed EDP frame (its VID, so that the
//! node counts it in its domain); one arriving while one is held is dropped and counted
//! (`overruns`). Every frame that is not a PDU is counted in `rejected`.
//!
//! [`EapsTx`] emits the 110 bytes of §1 from its fields (the machine MAC is the system MAC,
//! the tag's VID the control VLAN, DEI 0, reserved bytes 0, the null TLV last). It first runs
//! through the bytes once without sending to sum the EDP checksum (111 clocks: the sum adds each byte a clock
//! after it is chosen, so the byte select and the adder meet at a register), then sends them
//! on the port `port` selects, one a clock while `ready`. The fields must hold still from `start` to `done`.

use crate::byte_stream::{ByteSink, ByteSource};
use rust_hdl::prelude::*;

interface_pair! {
    /// The fields of a PDU, sending end.
    pub struct EapsPduSource join "EapsPduSink";
    /// The fields of a PDU, taking end.
    pub struct EapsPduSink join "EapsPduSource";
    {
        /// The source MAC (the sender's; the node's own for a PDU it originates).
        src: Out Bits<48>,
        /// The priority of the 802.1Q tag.
        pcp: Out Bits<3>,
        /// The EDP sequence.
        edp_seq: Out Bits<16>,
        /// The EAPS type (5 HEALTH, 6 RING-UP, 7 RING-DOWN, 8 LINK-DOWN).
        eaps_type: Out Bits<8>,
        /// The the control VLAN field (also the tag's VID when emitted).
        control_vlan: Out Bits<16>,
        /// The system MAC (also the EDP machine MAC when emitted).
        system_mac: Out Bits<48>,
        /// The hello timer field.
        hello_timer: Out Bits<16>,
        /// The fail timer field.
        fail_timer: Out Bits<16>,
        /// The state field.
        state: Out Bits<8>,
        /// The hello sequence.
        hello_seq: Out Bits<16>,
    }
}

/// The fields [`EapsRx`] takes from a frame, as it gathers and holds them.
#[derive(Copy, Clone, Debug, PartialEq, Default, LogicStruct)]
struct RxFields {
    src: Bits<48>,
    tci: Bits<16>,
    edp_seq: Bits<16>,
    eaps_type: Bits<8>,
    control_vlan: Bits<16>,
    system_mac: Bits<48>,
    hello_timer: Bits<16>,
    fail_timer: Bits<16>,
    state: Bits<8>,
    hello_seq: Bits<16>,
}

/// The receive side: checks a frame and holds its fields until taken.
#[derive(LogicBlock, Default)]
pub struct EapsRx {
    /// Clock.
    pub clock: Signal<In, Clock>,
    /// Received frames (no FCS), the control-VLAN candidates of one port.
    pub rx: ByteSink,
    /// The held PDU's fields.
    pub pdu: EapsPduSource,
    /// The held PDU's tag VID.
    pub vid: Signal<Out, Bits<12>>,
    /// A PDU is held (or another EDP frame, with `other`, or a malformed one, with `malformed`).
    pub full: Signal<Out, Bit>,
    /// What is held is another EDP frame, not an EAPS PDU: only `vid` is meaningful.
    pub other: Signal<Out, Bit>,
    /// What is held is a malformed EDP frame (docs/eaps.md §1.1): its reason, the index in
    /// `spotagg_driver::wire::eaps::Malformed::ALL` + 1 (1 length, 2 version, 3 checksum, 4 TLV
    /// list); 0 for a PDU or another EDP frame. Only `vid` is meaningful with it.
    pub malformed: Signal<Out, Bits<3>>,
    /// Release the held PDU (one clock).
    pub take: Signal<In, Bit>,
    /// Frames rejected (not an EAPS PDU: another EDP frame, a malformed one, or not EDP).
    pub rejected: Signal<Out, Bits<16>>,
    /// Good PDUs (and frames to hold) dropped because one was still held.
    pub overruns: Signal<Out, Bits<16>>,
    /// A frame has ended and its verdict is being made (this clock): `full` may rise next.
    pub pending: Signal<Out, Bit>,
    count: DFF<Bits<11>>,
    /// The verdict on the frame that ended last clock, from what was registered at its end (the
    /// checksum, the count, the byte checks, the TLV walk and whether there was room), so that
    /// the sums and compares of the last byte and the ~180 capture enables meet at registers.
    fin: DFF<Bit>,
    fin_room: DFF<Bit>,
    fin_sum: DFF<Bits<16>>,
    fin_count: DFF<Bits<11>>,
    fin_hdr_bad: DFF<Bit>,
    fin_pid_bad: DFF<Bit>,
    fin_ver_bad: DFF<Bit>,
    fin_edp_len: DFF<Bits<16>>,
    fin_tlv_bad: DFF<Bit>,
    fin_eaps_seen: DFF<Bit>,
    fin_eaps_ver_bad: DFF<Bit>,
    /// A byte of the header up to the OUI (destination, TPID, LLC/SNAP) was wrong: not EDP.
    hdr_bad: DFF<Bit>,
    /// The SNAP PID is not EDP's.
    pid_bad: DFF<Bit>,
    /// The EDP version is not 1.
    ver_bad: DFF<Bit>,
    /// The EDP length, as it comes in (frame bytes 28..30).
    edp_len: DFF<Bits<16>>,
    /// The TLV walk: the next TLV header's offset from the list's start (frame byte 42).
    tlv_rel: DFF<Bits<17>>,
    /// The byte of that header being read (0: the marker is due at `tlv_rel`).
    tlv_phase: DFF<Bits<2>>,
    /// The TLV's type and the high byte of its length.
    tlv_type: DFF<Bits<8>>,
    tlv_len_hi: DFF<Bits<8>>,
    /// The walk has ended (a null TLV, or the EDP length reached).
    walk_done: DFF<Bit>,
    /// The walk found the TLV list malformed.
    tlv_bad: DFF<Bit>,
    /// An EAPS TLV was found; its bytes are being read (`in_eaps`, at offset `eaps_rel`).
    eaps_seen: DFF<Bit>,
    in_eaps: DFF<Bit>,
    eaps_rel: DFF<Bits<6>>,
    /// The EAPS TLV's version is not 1.
    eaps_ver_bad: DFF<Bit>,
    m_other: DFF<Bit>,
    m_malformed: DFF<Bits<3>>,
    hi: DFF<Bits<8>>,
    sum: DFF<Bits<16>>,
    full_q: DFF<Bit>,
    rejected_q: DFF<Bits<16>>,
    overruns_q: DFF<Bits<16>>,
    /// The fields as the bytes come in.
    w: DFF<RxFields>,
    /// The 802.3 length as it comes in.
    w_len: DFF<Bits<16>>,
    /// The fields of the PDU held.
    m: DFF<RxFields>,
    m_tci: Signal<Local, Bits<16>>,
    byte_ok: Signal<Local, Bit>,
    sum17: Signal<Local, Bits<17>>,
    sum_next: Signal<Local, Bits<16>>,
    sum_lo: Signal<Local, Bits<8>>,
    /// The sum with this byte as the high byte of a last word padded with 0 (an odd EDP length
    /// whose last byte ends the frame).
    sum_pad17: Signal<Local, Bits<17>>,
    sum_pad: Signal<Local, Bits<16>>,
    count_next: Signal<Local, Bits<11>>,
    c17: Signal<Local, Bits<17>>,
    edp_end: Signal<Local, Bits<17>>,
    /// Bytes left in the list from the TLV header at `tlv_rel`.
    tlv_left: Signal<Local, Bits<17>>,
    tlv_len: Signal<Local, Bits<17>>,
    tlv_next: Signal<Local, Bits<17>>,
    // The walk's registers after this byte (also what `fin_*` takes at a frame's last byte).
    walk_done_n: Signal<Local, Bit>,
    tlv_bad_n: Signal<Local, Bit>,
    eaps_seen_n: Signal<Local, Bit>,
    eaps_ver_bad_n: Signal<Local, Bit>,
    len_bad: Signal<Local, Bit>,
    verdict: Signal<Local, Bits<3>>,
}

impl Logic for EapsRx {
    // (A match arm's guard is not HDL: `#[hdl_gen]` takes the `if` inside the arm.)
    #[allow(clippy::collapsible_match)]
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self,
            clock,
            count,
            hdr_bad,
            pid_bad,
            ver_bad,
            edp_len,
            tlv_rel,
            tlv_phase,
            tlv_type,
            tlv_len_hi,
            walk_done,
            tlv_bad,
            eaps_seen,
            in_eaps,
            eaps_rel,
            eaps_ver_bad,
            m_other,
            m_malformed,
            hi,
            sum,
            full_q,
            rejected_q,
            overruns_q,
            w,
            w_len,
            m,
            fin,
            fin_room,
            fin_sum,
            fin_count,
            fin_hdr_bad,
            fin_pid_bad,
            fin_ver_bad,
            fin_edp_len,
            fin_tlv_bad,
            fin_eaps_seen,
            fin_eaps_ver_bad
        );
        self.pending.next = self.fin.q.val();
        self.fin.d.next = false;
        self.rx.ready.next = true;
        self.m_tci.next = self.m.q.val().tci;
        self.pdu.src.next = self.m.q.val().src;
        self.pdu.pcp.next = self.m_tci.val().get_bits::<3>(13);
        self.pdu.edp_seq.next = self.m.q.val().edp_seq;
        self.pdu.eaps_type.next = self.m.q.val().eaps_type;
        self.pdu.control_vlan.next = self.m.q.val().control_vlan;
        self.pdu.system_mac.next = self.m.q.val().system_mac;
        self.pdu.hello_timer.next = self.m.q.val().hello_timer;
        self.pdu.fail_timer.next = self.m.q.val().fail_timer;
        self.pdu.state.next = self.m.q.val().state;
        self.pdu.hello_seq.next = self.m.q.val().hello_seq;
        self.vid.next = self.m_tci.val().get_bits::<12>(0);
        self.full.next = self.full_q.q.val();
        self.other.next = self.m_other.q.val();
        self.malformed.next = self.m_malformed.q.val();
        self.rejected.next = self.rejected_q.q.val();
        self.overruns.next = self.overruns_q.q.val();
        if self.take.val() {
            self.full_q.d.next = false;
        }

        // The header's constant bytes up to the OUI (an EDP frame at all).
        match self.count.q.val().index() {
            0 => {
                self.byte_ok.next = self.rx.data.val() == 0x00;
            }
            1 => {
                self.byte_ok.next = self.rx.data.val() == 0xe0;
            }
            2 => {
                self.byte_ok.next = self.rx.data.val() == 0x2b;
            }
            3 => {
                self.byte_ok.next = self.rx.data.val() == 0x00;
            }
            4 => {
                self.byte_ok.next = self.rx.data.val() == 0x00;
            }
            5 => {
                self.byte_ok.next = self.rx.data.val() == 0x04;
            }
            12 => {
                self.byte_ok.next = self.rx.data.val() == 0x81;
            }
            13 => {
                self.byte_ok.next = self.rx.data.val() == 0x00;
            }
            18 => {
                self.byte_ok.next = self.rx.data.val() == 0xaa;
            }
            19 => {
                self.byte_ok.next = self.rx.data.val() == 0xaa;
            }
            20 => {
                self.byte_ok.next = self.rx.data.val() == 0x03;
            }
            21 => {
                self.byte_ok.next = self.rx.data.val() == 0x00;
            }
            22 => {
                self.byte_ok.next = self.rx.data.val() == 0xe0;
            }
            23 => {
                self.byte_ok.next = self.rx.data.val() == 0x2b;
            }
            _ => {
                self.byte_ok.next = true;
            }
        }
        self.c17.next = bit_cast::<17, 11>(self.count.q.val());
        self.edp_end.next = bit_cast::<17, 16>(self.edp_len.q.val()) + 26;
        // The EDP checksum over bytes 26..26 + EDP length, one 16-bit word at every odd byte; an
        // odd length's last byte is the high byte of a word whose low byte is 0. Before byte 30
        // the EDP length is not in yet, and every EDP length taken covers those words.
        self.sum_lo.next = self.rx.data.val();
        if (self.count.q.val() >= 30) & (self.c17.val() >= self.edp_end.val()) {
            self.sum_lo.next = 0.into();
        }
        self.sum17.next = bit_cast::<17, 16>(self.sum.q.val())
            + bit_cast::<17, 16>((bit_cast::<16, 8>(self.hi.q.val()) << 8) | bit_cast::<16, 8>(self.sum_lo.val()));
        self.sum_next.next = self.sum.q.val();
        if (self.count.q.val() >= 26)
            & self.count.q.val().get_bit(0)
            & ((self.count.q.val() < 30) | (self.c17.val() <= self.edp_end.val()))
        {
            self.sum_next.next =
                self.sum17.val().get_bits::<16>(0) + bit_cast::<16, 1>(self.sum17.val().get_bit(16).into());
        }
        self.sum_pad17.next = bit_cast::<17, 16>(self.sum.q.val()) + (bit_cast::<17, 8>(self.rx.data.val()) << 8);
        self.sum_pad.next = self.sum.q.val();
        if (self.count.q.val() >= 30) & !self.count.q.val().get_bit(0) & (self.c17.val() < self.edp_end.val()) {
            self.sum_pad.next =
                self.sum_pad17.val().get_bits::<16>(0) + bit_cast::<16, 1>(self.sum_pad17.val().get_bit(16).into());
        }
        self.count_next.next = self.count.q.val();
        if self.count.q.val() != 2047 {
            self.count_next.next = self.count.q.val() + 1;
        }

        // The TLV walk (docs/eaps.md §1.1 step 5), from frame byte 42 while below the EDP length.
        self.tlv_left.next = bit_cast::<17, 16>(self.edp_len.q.val()) - 16 - self.tlv_rel.q.val();
        self.tlv_len.next = (bit_cast::<17, 8>(self.tlv_len_hi.q.val()) << 8) | bit_cast::<17, 8>(self.rx.data.val());
        self.tlv_next.next = self.tlv_rel.q.val() + self.tlv_len.val();
        self.walk_done_n.next = self.walk_done.q.val();
        self.tlv_bad_n.next = self.tlv_bad.q.val();
        self.eaps_seen_n.next = self.eaps_seen.q.val();
        self.eaps_ver_bad_n.next = self.eaps_ver_bad.q.val();
        if self.in_eaps.q.val() & (self.eaps_rel.q.val() == 4) & (self.rx.data.val() != 1) {
            self.eaps_ver_bad_n.next = true;
        }
        if !self.walk_done.q.val() & !self.tlv_bad.q.val() & (self.count.q.val() >= 42) {
            match self.tlv_phase.q.val().index() {
                0 => {
                    if (self.c17.val() == self.tlv_rel.q.val() + 42)
                        & ((self.tlv_left.val() < 4) | (self.rx.data.val() != 0x99))
                    {
                        self.tlv_bad_n.next = true;
                    }
                }
                3 => {
                    if (self.tlv_len.val() < 4) | (self.tlv_len.val() > self.tlv_left.val()) {
                        self.tlv_bad_n.next = true;
                    } else if self.tlv_type.q.val() == 0 {
                        self.walk_done_n.next = true;
                    } else if self.tlv_type.q.val() == 0x0b {
                        if self.eaps_seen.q.val() | (self.tlv_len.val() < 64) {
                            self.tlv_bad_n.next = true;
                        } else {
                            self.eaps_seen_n.next = true;
                        }
                    }
                    if self.tlv_next.val() >= bit_cast::<17, 16>(self.edp_len.q.val()) - 16 {
                        self.walk_done_n.next = true;
                    }
                }
                _ => {}
            }
        }
        // The header check before the verdict: the 802.3 length and EDP length (step 2).
        self.len_bad.next = (self.w_len.q.val() < 24)
            | (bit_cast::<16, 11>(self.fin_count.q.val()) < self.w_len.q.val() + 18)
            | (self.fin_edp_len.q.val() < 20)
            | (bit_cast::<17, 16>(self.fin_edp_len.q.val()) + 8 > bit_cast::<17, 16>(self.w_len.q.val()));

        if self.rx.valid.val() {
            self.hi.d.next = self.rx.data.val();
            self.sum.d.next = self.sum_next.val();
            self.count.d.next = self.count_next.val();
            self.walk_done.d.next = self.walk_done_n.val();
            self.tlv_bad.d.next = self.tlv_bad_n.val();
            self.eaps_seen.d.next = self.eaps_seen_n.val();
            self.eaps_ver_bad.d.next = self.eaps_ver_bad_n.val();
            if self.count.q.val() < 24 {
                self.hdr_bad.d.next = self.hdr_bad.q.val() | !self.byte_ok.val();
            }
            if ((self.count.q.val() == 24) & (self.rx.data.val() != 0x00))
                | ((self.count.q.val() == 25) & (self.rx.data.val() != 0xbb))
            {
                self.pid_bad.d.next = true;
            }
            if (self.count.q.val() == 26) & (self.rx.data.val() != 0x01) {
                self.ver_bad.d.next = true;
            }
            if (self.count.q.val() >= 28) & (self.count.q.val() < 30) {
                self.edp_len.d.next = (self.edp_len.q.val() << 8) | bit_cast::<16, 8>(self.rx.data.val());
            }
            // The TLV header's bytes, one a clock from its marker.
            if !self.walk_done.q.val() & !self.tlv_bad.q.val() & (self.count.q.val() >= 42) {
                match self.tlv_phase.q.val().index() {
                    0 => {
                        if self.c17.val() == self.tlv_rel.q.val() + 42 {
                            self.tlv_phase.d.next = 1.into();
                        }
                    }
                    1 => {
                        self.tlv_type.d.next = self.rx.data.val();
                        self.tlv_phase.d.next = 2.into();
                    }
                    2 => {
                        self.tlv_len_hi.d.next = self.rx.data.val();
                        self.tlv_phase.d.next = 3.into();
                    }
                    _ => {
                        self.tlv_phase.d.next = 0.into();
                        self.tlv_rel.d.next = self.tlv_next.val();
                        if !self.eaps_seen.q.val() & self.eaps_seen_n.val() {
                            self.in_eaps.d.next = true;
                            self.eaps_rel.d.next = 4.into();
                        }
                    }
                }
            }
            if self.in_eaps.q.val() {
                self.eaps_rel.d.next = self.eaps_rel.q.val() + 1;
                if self.eaps_rel.q.val() == 63 {
                    self.in_eaps.d.next = false;
                }
            }
            if (self.count.q.val() >= 6) & (self.count.q.val() < 12) {
                self.w.d.next.src = (self.w.q.val().src << 8) | bit_cast::<48, 8>(self.rx.data.val());
            }
            if (self.count.q.val() >= 14) & (self.count.q.val() < 16) {
                self.w.d.next.tci = (self.w.q.val().tci << 8) | bit_cast::<16, 8>(self.rx.data.val());
            }
            if (self.count.q.val() >= 16) & (self.count.q.val() < 18) {
                self.w_len.d.next = (self.w_len.q.val() << 8) | bit_cast::<16, 8>(self.rx.data.val());
            }
            if (self.count.q.val() >= 32) & (self.count.q.val() < 34) {
                self.w.d.next.edp_seq = (self.w.q.val().edp_seq << 8) | bit_cast::<16, 8>(self.rx.data.val());
            }
            // The EAPS TLV's fields, at their offsets from its marker.
            if self.in_eaps.q.val() {
                if self.eaps_rel.q.val() == 5 {
                    self.w.d.next.eaps_type = self.rx.data.val();
                }
                if (self.eaps_rel.q.val() >= 6) & (self.eaps_rel.q.val() < 8) {
                    self.w.d.next.control_vlan =
                        (self.w.q.val().control_vlan << 8) | bit_cast::<16, 8>(self.rx.data.val());
                }
                if (self.eaps_rel.q.val() >= 12) & (self.eaps_rel.q.val() < 18) {
                    self.w.d.next.system_mac = (self.w.q.val().system_mac << 8) | bit_cast::<48, 8>(self.rx.data.val());
                }
                if (self.eaps_rel.q.val() >= 18) & (self.eaps_rel.q.val() < 20) {
                    self.w.d.next.hello_timer =
                        (self.w.q.val().hello_timer << 8) | bit_cast::<16, 8>(self.rx.data.val());
                }
                if (self.eaps_rel.q.val() >= 20) & (self.eaps_rel.q.val() < 22) {
                    self.w.d.next.fail_timer = (self.w.q.val().fail_timer << 8) | bit_cast::<16, 8>(self.rx.data.val());
                }
                if self.eaps_rel.q.val() == 22 {
                    self.w.d.next.state = self.rx.data.val();
                }
                if (self.eaps_rel.q.val() >= 24) & (self.eaps_rel.q.val() < 26) {
                    self.w.d.next.hello_seq = (self.w.q.val().hello_seq << 8) | bit_cast::<16, 8>(self.rx.data.val());
                }
            }
            if self.rx.last.val() {
                self.count.d.next = 0.into();
                self.hdr_bad.d.next = false;
                self.pid_bad.d.next = false;
                self.ver_bad.d.next = false;
                self.edp_len.d.next = 0.into();
                self.tlv_rel.d.next = 0.into();
                self.tlv_phase.d.next = 0.into();
                self.walk_done.d.next = false;
                self.tlv_bad.d.next = false;
                self.eaps_seen.d.next = false;
                self.in_eaps.d.next = false;
                self.eaps_rel.d.next = 0.into();
                self.eaps_ver_bad.d.next = false;
                self.sum.d.next = 0.into();
                self.fin.d.next = true;
                self.fin_room.d.next = !self.full_q.q.val() | self.take.val();
                self.fin_sum.d.next = self.sum_next.val();
                if !self.count.q.val().get_bit(0) {
                    self.fin_sum.d.next = self.sum_pad.val();
                }
                self.fin_count.d.next = self.count_next.val();
                self.fin_hdr_bad.d.next = self.hdr_bad.q.val() | ((self.count.q.val() < 24) & !self.byte_ok.val());
                self.fin_pid_bad.d.next = self.pid_bad.q.val()
                    | ((self.count.q.val() == 24) & (self.rx.data.val() != 0x00))
                    | ((self.count.q.val() == 25) & (self.rx.data.val() != 0xbb));
                self.fin_ver_bad.d.next = self.ver_bad.q.val();
                self.fin_edp_len.d.next = self.edp_len.q.val();
                if (self.count.q.val() >= 28) & (self.count.q.val() < 30) {
                    self.fin_edp_len.d.next = (self.edp_len.q.val() << 8) | bit_cast::<16, 8>(self.rx.data.val());
                }
                self.fin_tlv_bad.d.next = self.tlv_bad_n.val();
                self.fin_eaps_seen.d.next = self.eaps_seen_n.val();
                self.fin_eaps_ver_bad.d.next = self.eaps_ver_bad_n.val();
            }
        }
        // The verdict, a clock after the last byte (the next frame's fields start at byte 6, so
        // `w` still holds this one's; nothing else fills or empties the hold meanwhile):
        // 0 not EDP, 1..=4 malformed by reason, 5 another EDP frame, 6 a PDU (docs/eaps.md §1.1).
        self.verdict.next = 0.into();
        if self.fin_hdr_bad.q.val() | (self.fin_count.q.val() < 26) {
            self.verdict.next = 0.into();
        } else if (self.w_len.q.val() > 1500) | self.fin_pid_bad.q.val() {
            self.verdict.next = 5.into();
        } else if self.len_bad.val() {
            self.verdict.next = 1.into();
        } else if self.fin_ver_bad.q.val() {
            self.verdict.next = 2.into();
        } else if self.fin_sum.q.val() != 0xffff {
            self.verdict.next = 3.into();
        } else if self.fin_tlv_bad.q.val() {
            self.verdict.next = 4.into();
        } else if !self.fin_eaps_seen.q.val() {
            self.verdict.next = 5.into();
        } else if self.fin_eaps_ver_bad.q.val() {
            self.verdict.next = 2.into();
        } else {
            self.verdict.next = 6.into();
        }
        if self.fin.q.val() {
            if self.verdict.val() != 6 {
                self.rejected_q.d.next = self.rejected_q.q.val() + 1;
            }
            if self.verdict.val() != 0 {
                if !self.fin_room.q.val() {
                    self.overruns_q.d.next = self.overruns_q.q.val() + 1;
                } else {
                    self.full_q.d.next = true;
                    self.m_other.d.next = self.verdict.val() == 5;
                    self.m_malformed.d.next = 0.into();
                    if self.verdict.val() < 5 {
                        self.m_malformed.d.next = self.verdict.val();
                    }
                    if self.verdict.val() == 6 {
                        self.m.d.next = self.w.q.val();
                    } else {
                        self.m.d.next.tci = self.w.q.val().tci;
                    }
                }
            }
        }
    }
}

/// Where [`EapsTx`] is.
#[derive(Copy, Clone, Debug, PartialEq, Eq, LogicState)]
pub enum TxPhase {
    /// Waiting for `start`.
    Idle,
    /// Summing the EDP checksum over the bytes, sending nothing.
    Sum,
    /// Sending the bytes.
    Send,
}

/// The transmit side: emits a PDU from its fields on one of two ports.
#[derive(LogicBlock, Default)]
pub struct EapsTx {
    /// Clock.
    pub clock: Signal<In, Clock>,
    /// The fields to emit (held from `start` to `done`).
    pub pdu: EapsPduSink,
    /// Start emitting (one clock, while not `busy`).
    pub start: Signal<In, Bit>,
    /// The port to send on.
    pub port: Signal<In, Bit>,
    /// Emitting.
    pub busy: Signal<Out, Bit>,
    /// The last byte left this clock.
    pub done: Signal<Out, Bit>,
    /// Port 0's frames.
    pub tx0: ByteSource,
    /// Port 1's frames.
    pub tx1: ByteSource,
    phase: DFF<TxPhase>,
    idx: DFF<Bits<7>>,
    to1: DFF<Bit>,
    hi: DFF<Bits<8>>,
    /// The byte of the previous clock (the sum adds from registers: the byte select and the
    /// adder are a clock apart).
    b_q: DFF<Bits<8>>,
    /// `b_q` ends a 16-bit word of the checksum's range (bytes 26..110).
    add_q: DFF<Bit>,
    sum: DFF<Bits<16>>,
    csum: DFF<Bits<16>>,
    out_byte: Signal<Local, Bits<8>>,
    sum17: Signal<Local, Bits<17>>,
    sum_fold: Signal<Local, Bits<16>>,
    ready: Signal<Local, Bit>,
}

impl Logic for EapsTx {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, phase, idx, to1, hi, b_q, add_q, sum, csum);
        match self.idx.q.val().index() {
            1 => {
                self.out_byte.next = 0xe0.into();
            }
            2 => {
                self.out_byte.next = 0x2b.into();
            }
            5 => {
                self.out_byte.next = 0x04.into();
            }
            6 => {
                self.out_byte.next = self.pdu.src.val().get_bits::<8>(40);
            }
            7 => {
                self.out_byte.next = self.pdu.src.val().get_bits::<8>(32);
            }
            8 => {
                self.out_byte.next = self.pdu.src.val().get_bits::<8>(24);
            }
            9 => {
                self.out_byte.next = self.pdu.src.val().get_bits::<8>(16);
            }
            10 => {
                self.out_byte.next = self.pdu.src.val().get_bits::<8>(8);
            }
            11 => {
                self.out_byte.next = self.pdu.src.val().get_bits::<8>(0);
            }
            12 => {
                self.out_byte.next = 0x81.into();
            }
            14 => {
                self.out_byte.next = (bit_cast::<8, 3>(self.pdu.pcp.val()) << 5)
                    | bit_cast::<8, 4>(self.pdu.control_vlan.val().get_bits::<4>(8));
            }
            15 => {
                self.out_byte.next = self.pdu.control_vlan.val().get_bits::<8>(0);
            }
            17 => {
                self.out_byte.next = 0x5c.into();
            }
            18 => {
                self.out_byte.next = 0xaa.into();
            }
            19 => {
                self.out_byte.next = 0xaa.into();
            }
            20 => {
                self.out_byte.next = 0x03.into();
            }
            22 => {
                self.out_byte.next = 0xe0.into();
            }
            23 => {
                self.out_byte.next = 0x2b.into();
            }
            25 => {
                self.out_byte.next = 0xbb.into();
            }
            26 => {
                self.out_byte.next = 0x01.into();
            }
            29 => {
                self.out_byte.next = 0x54.into();
            }
            30 => {
                self.out_byte.next = self.csum.q.val().get_bits::<8>(8);
            }
            31 => {
                self.out_byte.next = self.csum.q.val().get_bits::<8>(0);
            }
            32 => {
                self.out_byte.next = self.pdu.edp_seq.val().get_bits::<8>(8);
            }
            33 => {
                self.out_byte.next = self.pdu.edp_seq.val().get_bits::<8>(0);
            }
            36 => {
                self.out_byte.next = self.pdu.system_mac.val().get_bits::<8>(40);
            }
            37 => {
                self.out_byte.next = self.pdu.system_mac.val().get_bits::<8>(32);
            }
            38 => {
                self.out_byte.next = self.pdu.system_mac.val().get_bits::<8>(24);
            }
            39 => {
                self.out_byte.next = self.pdu.system_mac.val().get_bits::<8>(16);
            }
            40 => {
                self.out_byte.next = self.pdu.system_mac.val().get_bits::<8>(8);
            }
            41 => {
                self.out_byte.next = self.pdu.system_mac.val().get_bits::<8>(0);
            }
            42 => {
                self.out_byte.next = 0x99.into();
            }
            43 => {
                self.out_byte.next = 0x0b.into();
            }
            45 => {
                self.out_byte.next = 0x40.into();
            }
            46 => {
                self.out_byte.next = 0x01.into();
            }
            47 => {
                self.out_byte.next = self.pdu.eaps_type.val();
            }
            48 => {
                self.out_byte.next = self.pdu.control_vlan.val().get_bits::<8>(8);
            }
            49 => {
                self.out_byte.next = self.pdu.control_vlan.val().get_bits::<8>(0);
            }
            54 => {
                self.out_byte.next = self.pdu.system_mac.val().get_bits::<8>(40);
            }
            55 => {
                self.out_byte.next = self.pdu.system_mac.val().get_bits::<8>(32);
            }
            56 => {
                self.out_byte.next = self.pdu.system_mac.val().get_bits::<8>(24);
            }
            57 => {
                self.out_byte.next = self.pdu.system_mac.val().get_bits::<8>(16);
            }
            58 => {
                self.out_byte.next = self.pdu.system_mac.val().get_bits::<8>(8);
            }
            59 => {
                self.out_byte.next = self.pdu.system_mac.val().get_bits::<8>(0);
            }
            60 => {
                self.out_byte.next = self.pdu.hello_timer.val().get_bits::<8>(8);
            }
            61 => {
                self.out_byte.next = self.pdu.hello_timer.val().get_bits::<8>(0);
            }
            62 => {
                self.out_byte.next = self.pdu.fail_timer.val().get_bits::<8>(8);
            }
            63 => {
                self.out_byte.next = self.pdu.fail_timer.val().get_bits::<8>(0);
            }
            64 => {
                self.out_byte.next = self.pdu.state.val();
            }
            66 => {
                self.out_byte.next = self.pdu.hello_seq.val().get_bits::<8>(8);
            }
            67 => {
                self.out_byte.next = self.pdu.hello_seq.val().get_bits::<8>(0);
            }
            106 => {
                self.out_byte.next = 0x99.into();
            }
            109 => {
                self.out_byte.next = 0x04.into();
            }
            _ => {
                self.out_byte.next = 0.into();
            }
        }
        self.busy.next = self.phase.q.val() != TxPhase::Idle;
        self.done.next = false;
        self.tx0.valid.next = false;
        self.tx1.valid.next = false;
        self.tx0.data.next = self.out_byte.val();
        self.tx1.data.next = self.out_byte.val();
        self.tx0.last.next = self.idx.q.val() == 109;
        self.tx1.last.next = self.idx.q.val() == 109;
        self.ready.next = self.tx0.ready.val();
        if self.to1.q.val() {
            self.ready.next = self.tx1.ready.val();
        }
        self.sum17.next = bit_cast::<17, 16>(self.sum.q.val())
            + bit_cast::<17, 16>((bit_cast::<16, 8>(self.hi.q.val()) << 8) | bit_cast::<16, 8>(self.b_q.q.val()));
        self.sum_fold.next =
            self.sum17.val().get_bits::<16>(0) + bit_cast::<16, 1>(self.sum17.val().get_bit(16).into());
        match self.phase.q.val() {
            TxPhase::Idle => {
                if self.start.val() {
                    self.phase.d.next = TxPhase::Sum;
                    self.to1.d.next = self.port.val();
                    self.idx.d.next = 0.into();
                    self.sum.d.next = 0.into();
                    self.csum.d.next = 0.into();
                    self.add_q.d.next = false;
                }
            }
            TxPhase::Sum => {
                // Byte idx into b_q, the one before into hi; the word (hi, b_q) is added a clock
                // later, so the pass takes 111 clocks (idx 110 adds the last word).
                self.b_q.d.next = self.out_byte.val();
                self.hi.d.next = self.b_q.q.val();
                self.add_q.d.next = (self.idx.q.val() >= 26) & self.idx.q.val().get_bit(0);
                if self.add_q.q.val() {
                    self.sum.d.next = self.sum_fold.val();
                }
                self.idx.d.next = self.idx.q.val() + 1;
                if self.idx.q.val() == 110 {
                    self.csum.d.next = !self.sum_fold.val();
                    self.idx.d.next = 0.into();
                    self.phase.d.next = TxPhase::Send;
                }
            }
            TxPhase::Send => {
                self.tx0.valid.next = !self.to1.q.val();
                self.tx1.valid.next = self.to1.q.val();
                if self.ready.val() {
                    self.idx.d.next = self.idx.q.val() + 1;
                    if self.idx.q.val() == 109 {
                        self.idx.d.next = 0.into();
                        self.phase.d.next = TxPhase::Idle;
                        self.done.next = true;
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::{damage_edp_frame, random_eaps_repr};
    use crate::step::settle;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;
    use spotagg_driver::wire::eaps::{emit_frame, parse_edp, EapsRepr, EapsState, EapsType, Edp, Malformed, NULL_TLV};
    use spotagg_driver::wire::{checksum, MacAddr};

    /// `EapsTx` emits what `emit_frame` emits, byte for byte, for 40 random PDUs under random
    /// back-pressure, on the port asked for only.
    #[test]
    fn emitter_matches_emit_frame() {
        let mut rng = ChaCha8Rng::seed_from_u64(17);
        let mut tx = EapsTx::default();
        tx.connect_all();
        for case in 0..40 {
            let r = random_eaps_repr(&mut rng);
            let src = MacAddr::from_bytes(&rng.gen::<[u8; 6]>());
            let pcp: u8 = rng.gen_range(0..8);
            let port = rng.gen_bool(0.5);
            tx.pdu.src.next = src.to_u64().into();
            tx.pdu.pcp.next = u64::from(pcp).into();
            tx.pdu.edp_seq.next = u64::from(r.edp_sequence).into();
            tx.pdu.eaps_type.next = u64::from(u8::from(r.eaps_type)).into();
            tx.pdu.control_vlan.next = u64::from(r.control_vlan).into();
            tx.pdu.system_mac.next = r.system_mac.to_u64().into();
            tx.pdu.hello_timer.next = u64::from(r.hello_timer).into();
            tx.pdu.fail_timer.next = u64::from(r.fail_timer).into();
            tx.pdu.state.next = u64::from(u8::from(r.state)).into();
            tx.pdu.hello_seq.next = u64::from(r.hello_seq).into();
            tx.port.next = port;
            tx.start.next = true;
            let mut out = Vec::new();
            let mut stalls = 0;
            for _ in 0..2000 {
                // Back-pressure now and then.
                let ready = rng.gen_bool(0.8);
                tx.tx0.ready.next = ready;
                tx.tx1.ready.next = ready;
                settle(&mut tx);
                let (v, d, l) = if port {
                    (tx.tx1.valid.val(), tx.tx1.data.val().to_u8(), tx.tx1.last.val())
                } else {
                    (tx.tx0.valid.val(), tx.tx0.data.val().to_u8(), tx.tx0.last.val())
                };
                let other = if port { tx.tx0.valid.val() } else { tx.tx1.valid.val() };
                assert!(!other, "case {case}: a byte on the other port");
                let done = tx.done.val();
                tick!(&mut tx);
                tx.start.next = false;
                if v && ready {
                    out.push(d);
                    if l {
                        assert!(done);
                        break;
                    }
                } else if v {
                    stalls += 1;
                }
            }
            assert_eq!(out, emit_frame(&r, src, pcp), "case {case}: {r:?} ({stalls} stalls)");
        }
    }

    /// What a receiver holds after a frame.
    #[derive(Debug, PartialEq, Eq)]
    enum Held {
        /// A PDU: tag VID, source, priority, fields.
        Pdu(u16, MacAddr, u8, EapsRepr),
        /// Another EDP frame: its tag's VID.
        OtherEdp(u16),
        /// A malformed EDP frame: its tag's VID and the reason.
        Malformed(u16, Malformed),
    }

    /// Feeds `frame` to a receiver; returns what it holds after (and takes it).
    fn receive(rx: &mut EapsRx, frame: &[u8]) -> Option<Held> {
        for (i, &b) in frame.iter().enumerate() {
            rx.rx.valid.next = true;
            rx.rx.data.next = u64::from(b).into();
            rx.rx.last.next = i + 1 == frame.len();
            tick!(&mut *rx);
        }
        rx.rx.valid.next = false;
        tick!(&mut *rx);
        if !rx.full.val() {
            return None;
        }
        let vid = rx.vid.val().to_u32() as u16;
        let code = rx.malformed.val().index();
        if rx.other.val() || code != 0 {
            rx.take.next = true;
            tick!(&mut *rx);
            rx.take.next = false;
            return Some(if code != 0 { Held::Malformed(vid, Malformed::ALL[code - 1]) } else { Held::OtherEdp(vid) });
        }
        let p = &rx.pdu;
        let got = Held::Pdu(
            rx.vid.val().to_u32() as u16,
            MacAddr::from_bytes(&p.src.val().to_u64().to_be_bytes()[2..]),
            p.pcp.val().to_u8(),
            EapsRepr {
                edp_sequence: p.edp_seq.val().to_u32() as u16,
                eaps_type: EapsType::from(p.eaps_type.val().to_u8()),
                control_vlan: p.control_vlan.val().to_u32() as u16,
                system_mac: MacAddr::from_bytes(&p.system_mac.val().to_u64().to_be_bytes()[2..]),
                hello_timer: p.hello_timer.val().to_u32() as u16,
                fail_timer: p.fail_timer.val().to_u32() as u16,
                state: EapsState::from(p.state.val().to_u8()),
                hello_seq: p.hello_seq.val().to_u32() as u16,
            },
        );
        rx.take.next = true;
        tick!(&mut *rx);
        rx.take.next = false;
        Some(got)
    }

    /// The EDP part of `f` (from byte 26) replaced by `edp`, the EDP length, checksum and
    /// 802.3 length made to agree (a well-formed frame with another TLV list).
    fn with_edp(f: &[u8], mut edp: Vec<u8>) -> Vec<u8> {
        let n = edp.len() as u16;
        edp[2..4].copy_from_slice(&n.to_be_bytes());
        edp[4..6].fill(0);
        let c = checksum::compute(&edp);
        edp[4..6].copy_from_slice(&c.to_be_bytes());
        let mut g = f[..26].to_vec();
        g[16..18].copy_from_slice(&(8 + n).to_be_bytes());
        g.extend_from_slice(&edp);
        g
    }

    /// A random TLV list around the EAPS TLV of `f` (docs/eaps.md §1.1): unknown TLVs before
    /// and after, with or without the null TLV, bytes after the null TLV, sometimes a broken
    /// list (a short TLV, a wrong marker, a second EAPS TLV, a short EAPS TLV, an EAPS TLV of
    /// version 2, an EAPS TLV after the null TLV, odd EDP lengths).
    fn random_tlv_list(rng: &mut ChaCha8Rng, f: &[u8]) -> Vec<u8> {
        let edp = &f[26..];
        let tlv = |rng: &mut ChaCha8Rng| {
            let t = [1u8, 2, 5, 0x0e, 0x15][rng.gen_range(0..5)];
            let n = rng.gen_range(0..9);
            let mut v = vec![0x99, t, 0, 4 + n as u8];
            v.extend((0..n).map(|_| rng.gen::<u8>()));
            v
        };
        let mut list = edp[..16].to_vec();
        for _ in 0..rng.gen_range(0..3) {
            list.extend(tlv(rng));
        }
        let mut eaps = edp[16..80].to_vec();
        match rng.gen_range(0..12) {
            0 => eaps[3] = rng.gen_range(0..64),
            1 => eaps[0] = rng.gen(),
            2 => eaps[4] = 2,
            3 => {
                eaps[3] = 70;
                eaps.extend((0..6).map(|_| rng.gen::<u8>()));
            }
            _ => {}
        }
        list.extend(&eaps);
        if rng.gen_range(0..8) == 0 {
            list.extend(&edp[16..80]);
        }
        for _ in 0..rng.gen_range(0..3) {
            list.extend(tlv(rng));
        }
        match rng.gen_range(0..6) {
            0 => {}
            1 => {
                list.extend(NULL_TLV);
                list.extend((0..rng.gen_range(1..6)).map(|_| rng.gen::<u8>()));
            }
            2 => list.extend((0..rng.gen_range(1..4)).map(|_| rng.gen::<u8>())),
            _ => list.extend(NULL_TLV),
        }
        if rng.gen_range(0..10) == 0 {
            // The EAPS TLV after the null TLV: no EAPS TLV in the list.
            let mut l = edp[..16].to_vec();
            l.extend(NULL_TLV);
            l.extend(&edp[16..80]);
            list = l;
        }
        with_edp(f, list)
    }

    /// `EapsRx` holds what `parse_edp` says, on 600 random frames (good; damaged as
    /// [`damage_edp_frame`] does; a damaged constant byte; other TLV lists, well-formed or not,
    /// some of them then damaged): a PDU with its fields, another EDP frame or a malformed one
    /// with its reason.
    #[test]
    fn receiver_holds_what_parse_edp_says() {
        let mut rng = ChaCha8Rng::seed_from_u64(18);
        let mut rx = EapsRx::default();
        rx.connect_all();
        let (mut good, mut bad, mut other, mut malformed) = (0, 0, 0, [0; 4]);
        for case in 0..600 {
            let r = random_eaps_repr(&mut rng);
            let src = MacAddr::from_bytes(&rng.gen::<[u8; 6]>());
            let pcp: u8 = rng.gen_range(0..8);
            let mut f = emit_frame(&r, src, pcp);
            match rng.gen_range(0..8) {
                0 => {}
                k @ 2..=4 => damage_edp_frame(&mut rng, &mut f, k, 92),
                5 => {
                    // A damaged constant byte: the ones before byte 26 lie outside the EDP checksum, so only
                    // the field check can catch those.
                    let i = [12usize, 16, 18, 20, 24, 26, 28, 42, 44, 46, 106, 109][rng.gen_range(0..12)];
                    f[i] = rng.gen();
                }
                6 => {
                    f = random_tlv_list(&mut rng, &f);
                    let k = rng.gen_range(2..=4);
                    let len = u16::from_be_bytes([f[16], f[17]]);
                    damage_edp_frame(&mut rng, &mut f, k, len);
                }
                _ => f = random_tlv_list(&mut rng, &f),
            }
            let want = match parse_edp(&f) {
                Some(Edp::Eaps { vid, src, pdu }) => Some(Held::Pdu(vid, src, f[14] >> 5, pdu)),
                Some(Edp::Other { vid }) => Some(Held::OtherEdp(vid)),
                Some(Edp::Malformed { vid, reason }) => Some(Held::Malformed(vid, reason)),
                None => None,
            };
            let got = receive(&mut rx, &f);
            assert_eq!(got, want, "case {case}: {:02x?}", f);
            match want {
                Some(Held::Pdu(..)) => good += 1,
                Some(Held::OtherEdp(_)) => {
                    bad += 1;
                    other += 1;
                }
                Some(Held::Malformed(_, reason)) => {
                    bad += 1;
                    malformed[reason.index()] += 1;
                }
                None => bad += 1,
            }
        }
        assert!(
            good > 150 && bad > 150 && other > 20 && malformed.iter().all(|&n| n > 10),
            "{good} good, {bad} bad frames ({other} other EDP frames, malformed {malformed:?}): the cases do not cover all kinds"
        );
        assert_eq!(rx.rejected.val().to_u32(), bad);
    }
}
