//! The EAPS PDU in hardware (docs/eaps.md §1): [`EapsRx`] checks and takes apart a received
//! frame on the fly, [`EapsTx`] emits one from its fields. The fields travel between blocks as
//! an [`EapsPduSource`]/[`EapsPduSink`] interface.
//!
//! [`EapsRx`] accepts exactly what `spotagg_driver::wire::eaps::parse_frame` accepts: the
//! destination 00-E0-2B-00-00-04, TPID 0x8100, an 802.3 length of 88..=1500 that the frame
//! holds, LLC/SNAP AA-AA-03 00-E0-2B 00BB, EDP length 80, TLV marker 0x99 type 0x0B length 64,
//! EAPS version 1 and a good EDP checksum (the one's-complement sum of bytes 26..106 is
//! 0xffff). It takes a byte every clock (no back-pressure: `ready` is always high) and holds
//! the last good PDU for its owner until `take`; a good PDU arriving while one is held is
//! dropped and counted (`overruns`), as is every bad frame (`rejected`). A rejected frame that
//! is still another EDP frame (docs/eaps.md §11: 26 bytes or more, destination, tag and
//! LLC/SNAP header up to the OUI as a PDU's) is held too, with `other` high and only its tag's
//! VID, so that the node can pass it on (the reference's `other_edp_vlan`).
//!
//! [`EapsTx`] emits the 106 bytes of §1 from its fields (the machine MAC is the system MAC,
//! the tag's VID the control VLAN, DEI 0, reserved bytes 0). It first runs through the bytes
//! once without sending to sum the EDP checksum (107 clocks: the sum adds each byte a clock
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
    /// A PDU is held (or another EDP frame, with `other`).
    pub full: Signal<Out, Bit>,
    /// What is held is another EDP frame, not an EAPS PDU: only `vid` is meaningful.
    pub other: Signal<Out, Bit>,
    /// Release the held PDU (one clock).
    pub take: Signal<In, Bit>,
    /// Frames rejected (not an EAPS PDU, or damaged).
    pub rejected: Signal<Out, Bits<16>>,
    /// Good PDUs dropped because one was still held.
    pub overruns: Signal<Out, Bits<16>>,
    /// A frame has ended and its verdict is being made (this clock): `full` may rise next.
    pub pending: Signal<Out, Bit>,
    count: DFF<Bits<11>>,
    /// The verdict on the frame that ended last clock, from what was registered at its end (the
    /// checksum, the count, the byte checks and whether there was room), so that the sums and
    /// compares of the last byte and the ~180 capture enables meet at registers.
    fin: DFF<Bit>,
    fin_room: DFF<Bit>,
    fin_sum: DFF<Bits<16>>,
    fin_count: DFF<Bits<11>>,
    fin_bad: DFF<Bit>,
    fin_hdr_bad: DFF<Bit>,
    bad: DFF<Bit>,
    hdr_bad: DFF<Bit>,
    m_other: DFF<Bit>,
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
    count_next: Signal<Local, Bits<11>>,
    len_ok: Signal<Local, Bit>,
}

impl Logic for EapsRx {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self,
            clock,
            count,
            bad,
            hdr_bad,
            m_other,
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
            fin_bad,
            fin_hdr_bad
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
        self.rejected.next = self.rejected_q.q.val();
        self.overruns.next = self.overruns_q.q.val();
        if self.take.val() {
            self.full_q.d.next = false;
        }

        // The expected constant bytes.
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
            24 => {
                self.byte_ok.next = self.rx.data.val() == 0x00;
            }
            25 => {
                self.byte_ok.next = self.rx.data.val() == 0xbb;
            }
            28 => {
                self.byte_ok.next = self.rx.data.val() == 0x00;
            }
            29 => {
                self.byte_ok.next = self.rx.data.val() == 0x50;
            }
            42 => {
                self.byte_ok.next = self.rx.data.val() == 0x99;
            }
            43 => {
                self.byte_ok.next = self.rx.data.val() == 0x0b;
            }
            44 => {
                self.byte_ok.next = self.rx.data.val() == 0x00;
            }
            45 => {
                self.byte_ok.next = self.rx.data.val() == 0x40;
            }
            46 => {
                self.byte_ok.next = self.rx.data.val() == 0x01;
            }
            _ => {
                self.byte_ok.next = true;
            }
        }
        // The EDP checksum over bytes 26..106, one 16-bit word at every odd byte.
        self.sum17.next = bit_cast::<17, 16>(self.sum.q.val())
            + bit_cast::<17, 16>((bit_cast::<16, 8>(self.hi.q.val()) << 8) | bit_cast::<16, 8>(self.rx.data.val()));
        self.sum_next.next = self.sum.q.val();
        if (self.count.q.val() >= 26) & (self.count.q.val() < 106) & self.count.q.val().get_bit(0) {
            self.sum_next.next =
                self.sum17.val().get_bits::<16>(0) + bit_cast::<16, 1>(self.sum17.val().get_bit(16).into());
        }
        self.count_next.next = self.count.q.val();
        if self.count.q.val() != 2047 {
            self.count_next.next = self.count.q.val() + 1;
        }
        self.len_ok.next = (self.w_len.q.val() >= 88)
            & (self.w_len.q.val() <= 1500)
            & (bit_cast::<16, 11>(self.fin_count.q.val()) >= self.w_len.q.val() + 18);

        if self.rx.valid.val() {
            self.hi.d.next = self.rx.data.val();
            self.sum.d.next = self.sum_next.val();
            self.count.d.next = self.count_next.val();
            self.bad.d.next = self.bad.q.val() | !self.byte_ok.val();
            if self.count.q.val() < 24 {
                self.hdr_bad.d.next = self.hdr_bad.q.val() | !self.byte_ok.val();
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
            if (self.count.q.val() >= 47) & (self.count.q.val() < 48) {
                self.w.d.next.eaps_type = (self.w.q.val().eaps_type << 8) | bit_cast::<8, 8>(self.rx.data.val());
            }
            if (self.count.q.val() >= 48) & (self.count.q.val() < 50) {
                self.w.d.next.control_vlan = (self.w.q.val().control_vlan << 8) | bit_cast::<16, 8>(self.rx.data.val());
            }
            if (self.count.q.val() >= 54) & (self.count.q.val() < 60) {
                self.w.d.next.system_mac = (self.w.q.val().system_mac << 8) | bit_cast::<48, 8>(self.rx.data.val());
            }
            if (self.count.q.val() >= 60) & (self.count.q.val() < 62) {
                self.w.d.next.hello_timer = (self.w.q.val().hello_timer << 8) | bit_cast::<16, 8>(self.rx.data.val());
            }
            if (self.count.q.val() >= 62) & (self.count.q.val() < 64) {
                self.w.d.next.fail_timer = (self.w.q.val().fail_timer << 8) | bit_cast::<16, 8>(self.rx.data.val());
            }
            if (self.count.q.val() >= 64) & (self.count.q.val() < 65) {
                self.w.d.next.state = (self.w.q.val().state << 8) | bit_cast::<8, 8>(self.rx.data.val());
            }
            if (self.count.q.val() >= 66) & (self.count.q.val() < 68) {
                self.w.d.next.hello_seq = (self.w.q.val().hello_seq << 8) | bit_cast::<16, 8>(self.rx.data.val());
            }
            if self.rx.last.val() {
                self.count.d.next = 0.into();
                self.bad.d.next = false;
                self.hdr_bad.d.next = false;
                self.sum.d.next = 0.into();
                self.fin.d.next = true;
                self.fin_room.d.next = !self.full_q.q.val() | self.take.val();
                self.fin_sum.d.next = self.sum_next.val();
                self.fin_count.d.next = self.count_next.val();
                self.fin_bad.d.next = self.bad.q.val() | !self.byte_ok.val();
                self.fin_hdr_bad.d.next = self.hdr_bad.q.val();
            }
        }
        // The verdict, a clock after the last byte (the next frame's fields start at byte 6, so
        // `w` still holds this one's; nothing else fills or empties the hold meanwhile).
        if self.fin.q.val() {
            if !self.fin_bad.q.val()
                & (self.fin_count.q.val() >= 106)
                & self.len_ok.val()
                & (self.fin_sum.q.val() == 0xffff)
            {
                if !self.fin_room.q.val() {
                    self.overruns_q.d.next = self.overruns_q.q.val() + 1;
                } else {
                    self.full_q.d.next = true;
                    self.m_other.d.next = false;
                    self.m.d.next = self.w.q.val();
                }
            } else {
                self.rejected_q.d.next = self.rejected_q.q.val() + 1;
                // Another EDP frame (the header to the OUI intact, 26 bytes or more): held
                // for the node to pass on, or counted as an overrun like a PDU.
                if !self.fin_hdr_bad.q.val() & (self.fin_count.q.val() >= 26) {
                    if !self.fin_room.q.val() {
                        self.overruns_q.d.next = self.overruns_q.q.val() + 1;
                    } else {
                        self.full_q.d.next = true;
                        self.m_other.d.next = true;
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
    /// `b_q` ends a 16-bit word of the checksum's range (bytes 26..106).
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
                self.out_byte.next = 0x58.into();
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
                self.out_byte.next = 0x50.into();
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
        self.tx0.last.next = self.idx.q.val() == 105;
        self.tx1.last.next = self.idx.q.val() == 105;
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
                // later, so the pass takes 107 clocks (idx 106 adds the last word).
                self.b_q.d.next = self.out_byte.val();
                self.hi.d.next = self.b_q.q.val();
                self.add_q.d.next = (self.idx.q.val() >= 26) & self.idx.q.val().get_bit(0);
                if self.add_q.q.val() {
                    self.sum.d.next = self.sum_fold.val();
                }
                self.idx.d.next = self.idx.q.val() + 1;
                if self.idx.q.val() == 106 {
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
                    if self.idx.q.val() == 105 {
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
    use spotagg_driver::wire::eaps::{emit_frame, parse_frame, EapsRepr, EapsState, EapsType};
    use spotagg_driver::wire::MacAddr;
    use spotagg_spec::eaps::other_edp_vlan;

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
        if rx.other.val() {
            let vid = rx.vid.val().to_u32() as u16;
            rx.take.next = true;
            tick!(&mut *rx);
            rx.take.next = false;
            return Some(Held::OtherEdp(vid));
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

    /// `EapsRx` accepts what `parse_frame` accepts and holds its fields, on 300 random frames (good,
    /// damaged as [`damage_edp_frame`] does, a damaged constant byte), and holds as another EDP
    /// frame exactly those the reference node's `other_edp_vlan` takes.
    #[test]
    fn receiver_accepts_what_parse_frame_accepts() {
        let mut rng = ChaCha8Rng::seed_from_u64(18);
        let mut rx = EapsRx::default();
        rx.connect_all();
        let (mut good, mut bad, mut other) = (0, 0, 0);
        for case in 0..300 {
            let r = random_eaps_repr(&mut rng);
            let src = MacAddr::from_bytes(&rng.gen::<[u8; 6]>());
            let pcp: u8 = rng.gen_range(0..8);
            let mut f = emit_frame(&r, src, pcp);
            match rng.gen_range(0..6) {
                0 | 1 => {}
                k @ 2..=4 => damage_edp_frame(&mut rng, &mut f, k, 88),
                _ => {
                    // A damaged constant byte: the ones before byte 26 lie outside the EDP checksum, so only
                    // the field check can catch those.
                    let i = [12usize, 16, 18, 20, 24, 28, 42, 44, 46][rng.gen_range(0..9)];
                    f[i] = rng.gen();
                }
            }
            let want = match parse_frame(&f) {
                Ok((vid, src, repr)) => Some(Held::Pdu(vid, src, f[14] >> 5, repr)),
                Err(_) => other_edp_vlan(&f).map(Held::OtherEdp),
            };
            let got = receive(&mut rx, &f);
            assert_eq!(got, want, "case {case}: {:02x?}", f);
            match want {
                Some(Held::Pdu(..)) => good += 1,
                Some(Held::OtherEdp(_)) => {
                    bad += 1;
                    other += 1;
                }
                None => bad += 1,
            }
        }
        assert!(
            good > 100 && bad > 100 && other > 30 && bad - other > 30,
            "{good} good, {bad} bad frames ({other} other EDP frames): the cases do not cover all kinds"
        );
        assert_eq!(rx.rejected.val().to_u32(), bad);
    }
}
