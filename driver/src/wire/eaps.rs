//! EAPS PDUs (RFC 3619), as Extreme devices send them and Wireshark's EDP dissector decodes
//! them: an 802.3 frame to [`DESTINATION`] tagged with the domain's control VLAN, carrying
//! LLC/SNAP (OUI 00-E0-2B, PID 0x00BB), the Extreme Discovery Protocol header and a list of
//! TLVs holding one EAPS TLV (docs/eaps.md §1).
//!
//! What we emit is what Allied Telesis EPSR and Extreme equipment emit: the EAPS TLV, then the
//! null TLV `99 00 00 04` that ends the list, EDP length 84 (the layout below; [`EapsPacket`]
//! is a view of it). What we accept is any TLV list that holds one EAPS TLV, with the receiver
//! rules of docs/eaps.md §1.1 ([`parse_edp`], which every engine follows: the reference node,
//! the daemon and the hardware's `EapsRx`).
//!
//! The view [`EapsPacket`] covers the 802.3 payload (LLC first); [`emit_frame`] and
//! [`parse_frame`] add and check the Ethernet header and the 802.1Q tag. Offsets below count
//! from the DSAP byte; the tagged frame adds 18 bytes in front (addresses, 0x8100 + TCI, length).
//!
//! | bytes  | field |
//! |--------|-------|
//! | 0      | DSAP 0xAA |
//! | 1      | SSAP 0xAA |
//! | 2      | control 0x03 (UI) |
//! | 3..6   | OUI 00-E0-2B (Extreme) |
//! | 6..8   | PID 0x00BB (EDP) |
//! | 8      | EDP version (1) |
//! | 9      | EDP reserved (0) |
//! | 10..12 | EDP length: EDP header and TLVs, 84 |
//! | 12..14 | EDP checksum: Internet checksum (RFC 1071) of the 84 EDP bytes |
//! | 14..16 | EDP sequence number |
//! | 16..18 | machine ID type (0: a MAC follows) |
//! | 18..24 | machine MAC (the system MAC) |
//! | 24     | TLV marker 0x99 |
//! | 25     | TLV type 0x0B (EAPS) |
//! | 26..28 | TLV length, header included: 64 |
//! | 28     | EAPS version (1) |
//! | 29     | EAPS type: 5 HEALTH, 6 RING-UP-FLUSH-FDB, 7 RING-DOWN-FLUSH-FDB, 8 LINK-DOWN |
//! | 30..32 | control VLAN ID |
//! | 32..36 | reserved (0) |
//! | 36..42 | system MAC of the sender |
//! | 42..44 | hello timer |
//! | 44..46 | fail timer |
//! | 46     | state: 0 Idle, 1 Complete, 2 Failed, 3 Links-Up, 4 Links-Down, 5 Pre-Forwarding |
//! | 47     | reserved (0) |
//! | 48..50 | hello sequence number |
//! | 50..88 | reserved (0), 38 bytes |
//! | 88..92 | null TLV: marker 0x99, type 0, length 4 |

use super::vlan::{self, VlanPacket, VlanRepr};
use super::{be16, checksum, ethernet, Error, EtherType, MacAddr, Result};

/// The multicast address EAPS PDUs are sent to.
pub const DESTINATION: MacAddr = MacAddr([0x00, 0xe0, 0x2b, 0x00, 0x00, 0x04]);
/// Extreme Networks' OUI, in the SNAP header.
pub const OUI: [u8; 3] = [0x00, 0xe0, 0x2b];
/// The SNAP protocol identifier of EDP.
pub const PID_EDP: u16 = 0x00bb;
/// The EDP TLV marker byte.
pub const TLV_MARKER: u8 = 0x99;
/// The EDP TLV type of EAPS.
pub const TLV_TYPE_EAPS: u8 = 0x0b;
/// The EDP TLV type that ends the list.
pub const TLV_TYPE_NULL: u8 = 0;
/// The null TLV as sent.
pub const NULL_TLV: [u8; 4] = [TLV_MARKER, TLV_TYPE_NULL, 0, 4];
/// Length of the EDP header (version to machine MAC): the TLV list starts here.
pub const EDP_HEADER_LEN: usize = 16;
/// Length of the EAPS TLV, header included (a longer one is read to this length).
pub const EAPS_TLV_LEN: usize = 64;
/// The shortest EDP length taken (the header and one TLV header).
pub const EDP_LEN_MIN: u16 = EDP_HEADER_LEN as u16 + 4;
/// EDP version sent.
pub const EDP_VERSION: u8 = 1;
/// EAPS version sent (RFC 3619 is version 1).
pub const EAPS_VERSION: u8 = 1;

/// Byte ranges of the PDU, from the DSAP byte.
pub mod field {
    use core::ops::Range;
    /// DSAP.
    pub const DSAP: usize = 0;
    /// SSAP.
    pub const SSAP: usize = 1;
    /// LLC control.
    pub const CONTROL: usize = 2;
    /// SNAP OUI.
    pub const OUI: Range<usize> = 3..6;
    /// SNAP PID.
    pub const PID: Range<usize> = 6..8;
    /// EDP version.
    pub const EDP_VERSION: usize = 8;
    /// EDP reserved byte.
    pub const EDP_RESERVED: usize = 9;
    /// EDP length.
    pub const EDP_LENGTH: Range<usize> = 10..12;
    /// EDP checksum.
    pub const EDP_CHECKSUM: Range<usize> = 12..14;
    /// EDP sequence number.
    pub const EDP_SEQUENCE: Range<usize> = 14..16;
    /// Machine ID type.
    pub const MACHINE_ID_TYPE: Range<usize> = 16..18;
    /// Machine MAC.
    pub const MACHINE_MAC: Range<usize> = 18..24;
    /// TLV marker.
    pub const TLV_MARKER: usize = 24;
    /// TLV type.
    pub const TLV_TYPE: usize = 25;
    /// TLV length.
    pub const TLV_LENGTH: Range<usize> = 26..28;
    /// EAPS version.
    pub const VERSION: usize = 28;
    /// EAPS message type.
    pub const TYPE: usize = 29;
    /// Control VLAN ID.
    pub const CONTROL_VLAN: Range<usize> = 30..32;
    /// Reserved.
    pub const RESERVED0: Range<usize> = 32..36;
    /// System MAC.
    pub const SYSTEM_MAC: Range<usize> = 36..42;
    /// Hello timer.
    pub const HELLO_TIMER: Range<usize> = 42..44;
    /// Fail timer.
    pub const FAIL_TIMER: Range<usize> = 44..46;
    /// State.
    pub const STATE: usize = 46;
    /// Reserved.
    pub const RESERVED1: usize = 47;
    /// Hello sequence number.
    pub const HELLO_SEQ: Range<usize> = 48..50;
    /// Reserved, to the end of the TLV.
    pub const RESERVED2: Range<usize> = 50..88;
    /// The null TLV.
    pub const NULL_TLV: Range<usize> = 88..92;
    /// The bytes the EDP length and checksum cover.
    pub const EDP: Range<usize> = 8..92;
}

/// Length of the PDU from DSAP to the end of the null TLV (92).
pub const PDU_LEN: usize = field::NULL_TLV.end;
/// The EDP length field's value.
pub const EDP_LEN: u16 = (field::EDP.end - field::EDP.start) as u16;
/// The TLV length field's value.
pub const TLV_LEN: u16 = (field::RESERVED2.end - field::TLV_MARKER) as u16;
/// Length of a whole tagged EAPS frame (no FCS): 110.
pub const FRAME_LEN: usize = ethernet::HEADER_LEN + vlan::HEADER_LEN + PDU_LEN;

/// The EAPS message type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EapsType {
    /// HEALTH (5): the master's hello, sent out of its primary port.
    Health,
    /// RING-UP-FLUSH-FDB (6): the master closed its secondary port.
    RingUpFlushFdb,
    /// RING-DOWN-FLUSH-FDB (7): the master opened its secondary port.
    RingDownFlushFdb,
    /// LINK-DOWN (8): a transit node lost a ring port.
    LinkDown,
    /// Any other value, kept for the caller to report.
    Unknown(u8),
}

impl From<u8> for EapsType {
    fn from(v: u8) -> Self {
        match v {
            5 => EapsType::Health,
            6 => EapsType::RingUpFlushFdb,
            7 => EapsType::RingDownFlushFdb,
            8 => EapsType::LinkDown,
            o => EapsType::Unknown(o),
        }
    }
}

impl From<EapsType> for u8 {
    fn from(t: EapsType) -> u8 {
        match t {
            EapsType::Health => 5,
            EapsType::RingUpFlushFdb => 6,
            EapsType::RingDownFlushFdb => 7,
            EapsType::LinkDown => 8,
            EapsType::Unknown(o) => o,
        }
    }
}

/// The sender's state, as carried in the PDU (Wireshark's numbering).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EapsState {
    /// 0: Idle (EAPS disabled, or the master before its first hello: ExtremeXOS' Init).
    Idle,
    /// 1: Complete (master, ring closed).
    Complete,
    /// 2: Failed (master, ring broken).
    Failed,
    /// 3: Links-Up (transit, both ring ports up).
    LinksUp,
    /// 4: Links-Down (transit, a ring port down).
    LinksDown,
    /// 5: Pre-Forwarding (transit, a ring port came back and is still blocked).
    PreForwarding,
    /// Any other value.
    Unknown(u8),
}

impl From<u8> for EapsState {
    fn from(v: u8) -> Self {
        match v {
            0 => EapsState::Idle,
            1 => EapsState::Complete,
            2 => EapsState::Failed,
            3 => EapsState::LinksUp,
            4 => EapsState::LinksDown,
            5 => EapsState::PreForwarding,
            o => EapsState::Unknown(o),
        }
    }
}

impl From<EapsState> for u8 {
    fn from(s: EapsState) -> u8 {
        match s {
            EapsState::Idle => 0,
            EapsState::Complete => 1,
            EapsState::Failed => 2,
            EapsState::LinksUp => 3,
            EapsState::LinksDown => 4,
            EapsState::PreForwarding => 5,
            EapsState::Unknown(o) => o,
        }
    }
}

packet_view!(
    /// A read/write view of an EAPS PDU (the 802.3 payload, LLC first).
    EapsPacket
);

impl<T: AsRef<[u8]>> EapsPacket<T> {
    /// Wraps a buffer that holds at least the PDU as we emit it and whose EDP and TLV lengths
    /// are ours (more bytes, e.g. padding, may follow and are ignored). Frames from other
    /// senders go through [`parse_edp`], which takes any TLV list.
    pub fn new_checked(buffer: T) -> Result<Self> {
        let p = Self::with_len(buffer, PDU_LEN)?;
        if p.edp_length() != EDP_LEN || p.tlv_length() != TLV_LEN {
            return Err(Error::BadLength);
        }
        Ok(p)
    }
    fn b(&self) -> &[u8] {
        self.buffer.as_ref()
    }
    /// DSAP, SSAP and control.
    pub fn llc(&self) -> [u8; 3] {
        [self.b()[field::DSAP], self.b()[field::SSAP], self.b()[field::CONTROL]]
    }
    /// SNAP OUI.
    pub fn oui(&self) -> [u8; 3] {
        [self.b()[3], self.b()[4], self.b()[5]]
    }
    /// SNAP PID.
    pub fn pid(&self) -> u16 {
        be16(&self.b()[field::PID])
    }
    /// EDP version.
    pub fn edp_version(&self) -> u8 {
        self.b()[field::EDP_VERSION]
    }
    /// EDP length.
    pub fn edp_length(&self) -> u16 {
        be16(&self.b()[field::EDP_LENGTH])
    }
    /// EDP checksum field.
    pub fn edp_checksum(&self) -> u16 {
        be16(&self.b()[field::EDP_CHECKSUM])
    }
    /// True when the EDP checksum verifies.
    pub fn verify_checksum(&self) -> bool {
        checksum::verify(&self.b()[field::EDP])
    }
    /// EDP sequence number.
    pub fn edp_sequence(&self) -> u16 {
        be16(&self.b()[field::EDP_SEQUENCE])
    }
    /// Machine ID type.
    pub fn machine_id_type(&self) -> u16 {
        be16(&self.b()[field::MACHINE_ID_TYPE])
    }
    /// Machine MAC.
    pub fn machine_mac(&self) -> MacAddr {
        MacAddr::from_bytes(&self.b()[field::MACHINE_MAC])
    }
    /// TLV marker.
    pub fn tlv_marker(&self) -> u8 {
        self.b()[field::TLV_MARKER]
    }
    /// TLV type.
    pub fn tlv_type(&self) -> u8 {
        self.b()[field::TLV_TYPE]
    }
    /// TLV length.
    pub fn tlv_length(&self) -> u16 {
        be16(&self.b()[field::TLV_LENGTH])
    }
    /// EAPS version.
    pub fn version(&self) -> u8 {
        self.b()[field::VERSION]
    }
    /// EAPS message type.
    pub fn eaps_type(&self) -> EapsType {
        EapsType::from(self.b()[field::TYPE])
    }
    /// Control VLAN ID.
    pub fn control_vlan(&self) -> u16 {
        be16(&self.b()[field::CONTROL_VLAN])
    }
    /// System MAC.
    pub fn system_mac(&self) -> MacAddr {
        MacAddr::from_bytes(&self.b()[field::SYSTEM_MAC])
    }
    /// Hello timer.
    pub fn hello_timer(&self) -> u16 {
        be16(&self.b()[field::HELLO_TIMER])
    }
    /// Fail timer.
    pub fn fail_timer(&self) -> u16 {
        be16(&self.b()[field::FAIL_TIMER])
    }
    /// State.
    pub fn state(&self) -> EapsState {
        EapsState::from(self.b()[field::STATE])
    }
    /// Hello sequence number.
    pub fn hello_seq(&self) -> u16 {
        be16(&self.b()[field::HELLO_SEQ])
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> EapsPacket<T> {
    fn m(&mut self) -> &mut [u8] {
        self.buffer.as_mut()
    }
    fn put16(&mut self, r: core::ops::Range<usize>, v: u16) {
        self.m()[r].copy_from_slice(&v.to_be_bytes());
    }
    /// Writes every constant byte: LLC/SNAP, EDP version, lengths, machine ID type, TLV
    /// header, EAPS version and the reserved fields (zero).
    pub fn fill_constant(&mut self) {
        let b = self.m();
        b[field::DSAP] = 0xaa;
        b[field::SSAP] = 0xaa;
        b[field::CONTROL] = 0x03;
        b[field::OUI].copy_from_slice(&OUI);
        b[field::EDP_VERSION] = EDP_VERSION;
        b[field::EDP_RESERVED] = 0;
        b[field::TLV_MARKER] = TLV_MARKER;
        b[field::TLV_TYPE] = TLV_TYPE_EAPS;
        b[field::VERSION] = EAPS_VERSION;
        b[field::RESERVED0].fill(0);
        b[field::RESERVED1] = 0;
        b[field::RESERVED2].fill(0);
        b[field::NULL_TLV].copy_from_slice(&NULL_TLV);
        self.put16(field::PID, PID_EDP);
        self.put16(field::EDP_LENGTH, EDP_LEN);
        self.put16(field::MACHINE_ID_TYPE, 0);
        self.put16(field::TLV_LENGTH, TLV_LEN);
    }
    /// Sets the EDP sequence number.
    pub fn set_edp_sequence(&mut self, v: u16) {
        self.put16(field::EDP_SEQUENCE, v);
    }
    /// Sets the machine MAC.
    pub fn set_machine_mac(&mut self, a: MacAddr) {
        self.m()[field::MACHINE_MAC].copy_from_slice(&a.0);
    }
    /// Sets the EAPS type.
    pub fn set_eaps_type(&mut self, t: EapsType) {
        self.m()[field::TYPE] = t.into();
    }
    /// Sets the control VLAN ID.
    pub fn set_control_vlan(&mut self, v: u16) {
        self.put16(field::CONTROL_VLAN, v);
    }
    /// Sets the system MAC.
    pub fn set_system_mac(&mut self, a: MacAddr) {
        self.m()[field::SYSTEM_MAC].copy_from_slice(&a.0);
    }
    /// Sets the hello timer.
    pub fn set_hello_timer(&mut self, v: u16) {
        self.put16(field::HELLO_TIMER, v);
    }
    /// Sets the fail timer.
    pub fn set_fail_timer(&mut self, v: u16) {
        self.put16(field::FAIL_TIMER, v);
    }
    /// Sets the state.
    pub fn set_state(&mut self, s: EapsState) {
        self.m()[field::STATE] = s.into();
    }
    /// Sets the hello sequence number.
    pub fn set_hello_seq(&mut self, v: u16) {
        self.put16(field::HELLO_SEQ, v);
    }
    /// Computes and stores the EDP checksum (call last).
    pub fn fill_checksum(&mut self) {
        self.put16(field::EDP_CHECKSUM, 0);
        let c = checksum::compute(&self.b()[field::EDP]);
        self.put16(field::EDP_CHECKSUM, c);
    }
}

/// The meaning of an EAPS PDU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct EapsRepr {
    /// EDP sequence number (per sender, every EDP frame).
    pub edp_sequence: u16,
    /// The message type.
    pub eaps_type: EapsType,
    /// The domain's control VLAN.
    pub control_vlan: u16,
    /// The sender's system MAC (also sent as the EDP machine MAC).
    pub system_mac: MacAddr,
    /// The sender's hello timer, in the unit docs/eaps.md gives (milliseconds).
    pub hello_timer: u16,
    /// The sender's fail timer, same unit.
    pub fail_timer: u16,
    /// The sender's state.
    pub state: EapsState,
    /// Hello sequence number (the master's HEALTH counter).
    pub hello_seq: u16,
}

impl EapsRepr {
    /// Reads a checked PDU: LLC/SNAP must be AA-AA-03 00-E0-2B 00BB, the TLV an EAPS TLV of
    /// version 1 (else [`Error::Unsupported`]), the checksum must verify (else [`Error::Checksum`]).
    pub fn parse<T: AsRef<[u8]>>(p: &EapsPacket<T>) -> Result<EapsRepr> {
        if p.llc() != [0xaa, 0xaa, 0x03] || p.oui() != OUI || p.pid() != PID_EDP {
            return Err(Error::Unsupported);
        }
        if p.tlv_marker() != TLV_MARKER || p.tlv_type() != TLV_TYPE_EAPS || p.version() != EAPS_VERSION {
            return Err(Error::Unsupported);
        }
        if !p.verify_checksum() {
            return Err(Error::Checksum);
        }
        Ok(EapsRepr {
            edp_sequence: p.edp_sequence(),
            eaps_type: p.eaps_type(),
            control_vlan: p.control_vlan(),
            system_mac: p.system_mac(),
            hello_timer: p.hello_timer(),
            fail_timer: p.fail_timer(),
            state: p.state(),
            hello_seq: p.hello_seq(),
        })
    }
    /// Length of the PDU.
    pub const fn buffer_len(&self) -> usize {
        PDU_LEN
    }
    /// Writes the whole PDU, checksum included.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, p: &mut EapsPacket<T>) {
        p.fill_constant();
        p.set_edp_sequence(self.edp_sequence);
        p.set_machine_mac(self.system_mac);
        p.set_eaps_type(self.eaps_type);
        p.set_control_vlan(self.control_vlan);
        p.set_system_mac(self.system_mac);
        p.set_hello_timer(self.hello_timer);
        p.set_fail_timer(self.fail_timer);
        p.set_state(self.state);
        p.set_hello_seq(self.hello_seq);
        p.fill_checksum();
    }
}

/// Builds the whole frame: to [`DESTINATION`] from `src`, tagged with the control VLAN at
/// priority `pcp`, the 802.3 length, then the PDU. [`FRAME_LEN`] bytes (106), no FCS.
pub fn emit_frame(repr: &EapsRepr, src: MacAddr, pcp: u8) -> Vec<u8> {
    let mut f = edp_frame(repr.control_vlan, src, pcp, PDU_LEN);
    repr.emit(&mut EapsPacket::new_unchecked(&mut f[EDP_PDU_OFFSET..]));
    f
}

/// Reads a whole frame as an EAPS PDU by the rules of [`parse_edp`]. Returns the tag's VID,
/// the source MAC and the PDU. A frame that is not an EDP frame, or an EDP frame without an
/// EAPS TLV, is [`Error::Unsupported`]; a malformed one is the error its [`Malformed`] reason
/// maps to ([`Malformed::error`]).
pub fn parse_frame(frame: &[u8]) -> Result<(u16, MacAddr, EapsRepr)> {
    match parse_edp(frame) {
        Some(Edp::Eaps { vid, src, pdu }) => Ok((vid, src, pdu)),
        Some(Edp::Malformed { reason, .. }) => Err(reason.error()),
        Some(Edp::Other { .. }) | None => Err(Error::Unsupported),
    }
}

/// Why an EDP frame is malformed (docs/eaps.md §1.1): each is a counter of its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Malformed {
    /// The 802.3 length is under 24 or more than the frame holds (a truncated frame), or the
    /// EDP length is outside 20..=802.3 length − 8.
    Length,
    /// The EDP version, or the EAPS TLV's version, is not 1.
    Version,
    /// The EDP checksum over the EDP length does not verify.
    Checksum,
    /// The TLV list: a TLV header cut short, a marker other than 0x99, a TLV length under 4 or
    /// past the EDP length, a second EAPS TLV, or an EAPS TLV under 64 bytes.
    TlvList,
}

impl Malformed {
    /// Every reason, in counter order.
    pub const ALL: [Malformed; 4] = [Malformed::Length, Malformed::Version, Malformed::Checksum, Malformed::TlvList];
    /// The counter's name (status JSON, metrics label).
    pub const fn name(self) -> &'static str {
        match self {
            Malformed::Length => "length",
            Malformed::Version => "version",
            Malformed::Checksum => "checksum",
            Malformed::TlvList => "tlv",
        }
    }
    /// The counter's index (in [`Malformed::ALL`], and the hardware's reason code − 1).
    pub const fn index(self) -> usize {
        self as usize
    }
    /// The wire-layer error it reads as.
    pub const fn error(self) -> Error {
        match self {
            Malformed::Length | Malformed::TlvList => Error::BadLength,
            Malformed::Version => Error::Unsupported,
            Malformed::Checksum => Error::Checksum,
        }
    }
}

/// What a frame to the EAPS address is, by the receiver rules of docs/eaps.md §1.1.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Edp {
    /// A well-formed EDP frame holding one EAPS TLV.
    Eaps {
        /// The tag's VID.
        vid: u16,
        /// The source MAC.
        src: MacAddr,
        /// The EAPS TLV's fields (and the EDP sequence).
        pdu: EapsRepr,
    },
    /// Another frame a transit passes on unchanged: a well-formed EDP frame without an EAPS TLV
    /// (an ESL PDU, an unknown TLV), or an LLC/SNAP frame of another PID or an EtherType.
    Other {
        /// The tag's VID.
        vid: u16,
    },
    /// A malformed EDP frame: dropped at the first node and counted.
    Malformed {
        /// The tag's VID.
        vid: u16,
        /// Why.
        reason: Malformed,
    },
}

/// Offset of the 802.3 length in a tagged frame.
const LEN_AT: usize = ethernet::HEADER_LEN + 2;

/// Reads a frame by the receiver rules of docs/eaps.md §1.1. `None`: not an EDP frame at all
/// (under 26 bytes, another destination, no 802.1Q tag, or LLC/SNAP other than AA-AA-03
/// 00-E0-2B). Offsets in the comments count from the EDP version byte.
pub fn parse_edp(frame: &[u8]) -> Option<Edp> {
    let o = EDP_PDU_OFFSET;
    if frame.len() < o + 8
        || frame[ethernet::field::DESTINATION] != DESTINATION.0
        || frame[ethernet::field::ETHERTYPE] != vlan::TPID.0.to_be_bytes()
        || frame[o..o + 3] != [0xaa, 0xaa, 0x03]
        || frame[o + 3..o + 6] != OUI
    {
        return None;
    }
    let vid = be16(&frame[14..16]) & 0x0fff;
    let len = usize::from(be16(&frame[LEN_AT..]));
    if len > 1500 || be16(&frame[o + 6..]) != PID_EDP {
        return Some(Edp::Other { vid });
    }
    let bad = |reason| Some(Edp::Malformed { vid, reason });
    if len < 8 + EDP_HEADER_LEN || frame.len() < o + len {
        return bad(Malformed::Length);
    }
    let edp = &frame[o + 8..o + len];
    let edp_len = usize::from(be16(&edp[2..4]));
    if edp_len < usize::from(EDP_LEN_MIN) || edp_len > edp.len() {
        return bad(Malformed::Length);
    }
    let edp = &edp[..edp_len];
    if edp[0] != EDP_VERSION {
        return bad(Malformed::Version);
    }
    if !checksum::verify(edp) {
        return bad(Malformed::Checksum);
    }
    let mut eaps = None;
    let mut at = EDP_HEADER_LEN;
    while at < edp_len {
        if edp_len - at < 4 || edp[at] != TLV_MARKER {
            return bad(Malformed::TlvList);
        }
        let tlv_len = usize::from(be16(&edp[at + 2..]));
        if tlv_len < 4 || tlv_len > edp_len - at {
            return bad(Malformed::TlvList);
        }
        match edp[at + 1] {
            TLV_TYPE_NULL => break,
            TLV_TYPE_EAPS if eaps.is_some() || tlv_len < EAPS_TLV_LEN => return bad(Malformed::TlvList),
            TLV_TYPE_EAPS => eaps = Some(&edp[at..at + EAPS_TLV_LEN]),
            _ => {}
        }
        at += tlv_len;
    }
    let Some(tlv) = eaps else { return Some(Edp::Other { vid }) };
    // The EAPS TLV's fields, at their offsets in our layout less the TLV's (field::TLV_MARKER).
    let f = |r: core::ops::Range<usize>| &tlv[r.start - field::TLV_MARKER..r.end - field::TLV_MARKER];
    if f(field::VERSION..field::VERSION + 1)[0] != EAPS_VERSION {
        return bad(Malformed::Version);
    }
    let pdu = EapsRepr {
        edp_sequence: be16(&edp[6..8]),
        eaps_type: EapsType::from(f(field::TYPE..field::TYPE + 1)[0]),
        control_vlan: be16(f(field::CONTROL_VLAN)),
        system_mac: MacAddr::from_bytes(f(field::SYSTEM_MAC)),
        hello_timer: be16(f(field::HELLO_TIMER)),
        fail_timer: be16(f(field::FAIL_TIMER)),
        state: EapsState::from(f(field::STATE..field::STATE + 1)[0]),
        hello_seq: be16(f(field::HELLO_SEQ)),
    };
    Some(Edp::Eaps { vid, src: MacAddr::from_bytes(&frame[ethernet::field::SOURCE]), pdu })
}

/// Where an EDP PDU starts in its frame (after the Ethernet header and the 802.1Q tag).
pub(super) const EDP_PDU_OFFSET: usize = ethernet::HEADER_LEN + vlan::HEADER_LEN;

/// The frame of an EDP PDU of `pdu_len` bytes (EAPS or ESL): to [`DESTINATION`] from `src`,
/// tagged with VID `vid` at priority `pcp`, the 802.3 length; the PDU (zeros) from
/// [`EDP_PDU_OFFSET`] on. No FCS.
pub(super) fn edp_frame(vid: u16, src: MacAddr, pcp: u8, pdu_len: usize) -> Vec<u8> {
    let mut f = vec![0u8; EDP_PDU_OFFSET + pdu_len];
    f[ethernet::field::DESTINATION].copy_from_slice(&DESTINATION.0);
    f[ethernet::field::SOURCE].copy_from_slice(&src.0);
    f[ethernet::field::ETHERTYPE].copy_from_slice(&vlan::TPID.0.to_be_bytes());
    let tag = VlanRepr { pcp, dei: false, vid, ethertype: EtherType(pdu_len as u16) };
    tag.emit(&mut VlanPacket::new_unchecked(&mut f[ethernet::HEADER_LEN..]));
    f
}

/// Reads a whole frame as an EDP PDU: destination [`DESTINATION`], one 802.1Q tag, an 802.3
/// length of at least `min_len` within the frame. Returns the tag's VID, the source MAC and
/// the PDU's bytes (the 802.3 length of them). Another destination, no tag or an EtherType is
/// [`Error::Unsupported`], a shorter or longer length [`Error::BadLength`].
pub(super) fn parse_edp_frame(frame: &[u8], min_len: usize) -> Result<(u16, MacAddr, &[u8])> {
    let eth = ethernet::EthernetFrame::new_checked(frame)?;
    if eth.dst() != DESTINATION || eth.ethertype() != vlan::TPID {
        return Err(Error::Unsupported);
    }
    let v = VlanPacket::new_checked(eth.payload())?;
    let len = usize::from(v.ethertype().0);
    if len > 1500 {
        return Err(Error::Unsupported);
    }
    if len < min_len || len > v.payload().len() {
        return Err(Error::BadLength);
    }
    Ok((v.vid(), eth.src(), &frame[EDP_PDU_OFFSET..][..len]))
}

#[cfg(test)]
mod test {
    use super::*;
    use proptest::prelude::*;

    fn sample() -> EapsRepr {
        EapsRepr {
            edp_sequence: 0x0102,
            eaps_type: EapsType::Health,
            control_vlan: 1000,
            system_mac: MacAddr([0x02, 0, 0, 0, 0, 0x01]),
            hello_timer: 1,
            fail_timer: 3,
            state: EapsState::Complete,
            hello_seq: 7,
        }
    }

    /// The PDU of `sample()`, byte by byte. The EDP words 0100 0054 [cksum] 0102 0000 0200 0000
    /// 0001 990b 0040 0105 03e8 0000 0000 0200 0000 0001 0001 0003 0100 0007 (zeros) 9900 0004
    /// sum to 0x3ea0, so the checksum field is !0x3ea0 = 0xc15f.
    fn sample_bytes() -> [u8; PDU_LEN] {
        let mut b = [0u8; PDU_LEN];
        b[..8].copy_from_slice(&[0xaa, 0xaa, 0x03, 0x00, 0xe0, 0x2b, 0x00, 0xbb]);
        b[8..24].copy_from_slice(&[1, 0, 0, 84, 0, 0, 0x01, 0x02, 0, 0, 0x02, 0, 0, 0, 0, 0x01]);
        b[24..28].copy_from_slice(&[0x99, 0x0b, 0, 64]);
        b[28..32].copy_from_slice(&[1, 5, 0x03, 0xe8]);
        b[36..42].copy_from_slice(&[0x02, 0, 0, 0, 0, 0x01]);
        b[42..50].copy_from_slice(&[0, 1, 0, 3, 1, 0, 0, 7]);
        b[88..92].copy_from_slice(&[0x99, 0, 0, 4]);
        b[12..14].copy_from_slice(&[0xc1, 0x5f]);
        b
    }

    /// An Allied Telesis EPSR HEALTH (hello sequence 190) as the AlliedWare How To Note
    /// C613-16092-00 REV D prints it in its debug output (first 68 bytes, `EPSR Port1 Tx`),
    /// completed with the 38 reserved zero bytes and the null TLV: the only tail with which
    /// the printed EDP checksum 0x1f2a verifies (docs/eaps.md §1).
    fn allied_telesis_health() -> Vec<u8> {
        let printed = "00e02b0000040000cd2806198100e3e8005caaaa0300e02b\
                       00bb010000541f2a000000000000cd2806199 90b00400105\
                       03e8000000000000cd28061900010002010000be";
        let hex: String = printed.chars().filter(|c| !c.is_whitespace()).collect();
        let mut f: Vec<u8> =
            (0..hex.len()).step_by(2).map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap()).collect();
        assert_eq!(f.len(), 68);
        f.resize(106, 0);
        f.extend_from_slice(&NULL_TLV);
        f
    }

    fn at_repr() -> EapsRepr {
        EapsRepr {
            edp_sequence: 0,
            eaps_type: EapsType::Health,
            control_vlan: 1000,
            system_mac: MacAddr([0x00, 0x00, 0xcd, 0x28, 0x06, 0x19]),
            hello_timer: 1,
            fail_timer: 2,
            state: EapsState::Complete,
            hello_seq: 190,
        }
    }

    /// A well-formed PDU whose EDP part is `edp` (version to the end of the list; length and
    /// checksum filled in), tagged VID 1000, from the AT system MAC.
    fn frame_with_edp(mut edp: Vec<u8>) -> Vec<u8> {
        let n = edp.len() as u16;
        edp[2..4].copy_from_slice(&n.to_be_bytes());
        edp[4..6].fill(0);
        let c = checksum::compute(&edp);
        edp[4..6].copy_from_slice(&c.to_be_bytes());
        let mut f = allied_telesis_health()[..26].to_vec();
        f[16..18].copy_from_slice(&(8 + n).to_be_bytes());
        f.extend_from_slice(&edp);
        f
    }

    fn at_edp() -> Vec<u8> {
        allied_telesis_health()[26..].to_vec()
    }

    #[test]
    fn emit_matches_bytes() {
        let mut buf = [0xa5u8; PDU_LEN];
        sample().emit(&mut EapsPacket::new_unchecked(&mut buf[..]));
        assert_eq!(buf, sample_bytes());
        let p = EapsPacket::new_checked(&buf[..]).unwrap();
        assert!(p.verify_checksum());
        assert_eq!(EapsRepr::parse(&p).unwrap(), sample());
    }

    /// The captured Allied Telesis HEALTH parses, and we emit the same 110 bytes for it.
    #[test]
    fn allied_telesis_capture_round_trip() {
        let f = allied_telesis_health();
        assert_eq!(f.len(), FRAME_LEN);
        assert_eq!(parse_edp(&f), Some(Edp::Eaps { vid: 1000, src: at_repr().system_mac, pdu: at_repr() }));
        assert_eq!(emit_frame(&at_repr(), at_repr().system_mac, 7), f);
    }

    /// TLV lists other than ours: no null TLV (our format before issue 41: EDP length 80),
    /// another TLV before the EAPS TLV, bytes after the null TLV inside the EDP length, and
    /// padding after the 802.3 length.
    #[test]
    fn other_tlv_lists_are_taken() {
        let want = Some(Edp::Eaps { vid: 1000, src: at_repr().system_mac, pdu: at_repr() });
        let no_null = frame_with_edp(at_edp()[..80].to_vec());
        assert_eq!(parse_edp(&no_null), want);
        let mut before = at_edp();
        before.splice(16..16, [0x99, 0x15, 0, 8, 1, 2, 3, 4]);
        assert_eq!(parse_edp(&frame_with_edp(before)), want);
        let mut after = at_edp();
        after.extend_from_slice(&[0xde, 0xad, 0xbe, 0xef]);
        assert_eq!(parse_edp(&frame_with_edp(after)), want);
        let mut longer_tlv = at_edp();
        longer_tlv[16 + 3] = 68;
        longer_tlv.splice(80..80, [9, 9, 9, 9]);
        assert_eq!(parse_edp(&frame_with_edp(longer_tlv)), want);
        let mut padded = allied_telesis_health();
        padded.extend_from_slice(&[0x55; 8]);
        assert_eq!(parse_edp(&padded), want);
        // No EAPS TLV: another EDP frame.
        assert_eq!(
            parse_edp(&frame_with_edp(at_edp()[..16].iter().chain(&NULL_TLV).copied().collect())),
            Some(Edp::Other { vid: 1000 })
        );
    }

    /// Each malformed reason, from the AT capture (docs/eaps.md §1.1).
    #[test]
    fn malformed_frames_by_reason() {
        let bad = |f: &[u8], reason| assert_eq!(parse_edp(f), Some(Edp::Malformed { vid: 1000, reason }), "{reason:?}");
        let mut f = allied_telesis_health();
        f[26 + 48] ^= 1; // hello sequence changed, checksum not
        bad(&f, Malformed::Checksum);
        bad(&allied_telesis_health()[..60], Malformed::Length); // truncated
        let mut f = allied_telesis_health();
        f[29] = 19; // EDP length 19
        bad(&f, Malformed::Length);
        let mut f = allied_telesis_health();
        f[29] = 85; // EDP length past the 802.3 length − 8
        bad(&f, Malformed::Length);
        let mut v2 = at_edp();
        v2[20] = 2; // EAPS version 2
        bad(&frame_with_edp(v2), Malformed::Version);
        let mut v2 = at_edp();
        v2[0] = 2; // EDP version 2
        bad(&frame_with_edp(v2), Malformed::Version);
        let mut zeros = at_edp();
        zeros[80..84].fill(0); // zeros in place of the null TLV: marker 0
        bad(&frame_with_edp(zeros), Malformed::TlvList);
        let mut short = at_edp();
        short[80..84].copy_from_slice(&[0x99, 0, 0, 0]); // null TLV of length 0
        bad(&frame_with_edp(short), Malformed::TlvList);
        let mut two = at_edp();
        let tlv = two[16..80].to_vec();
        two.splice(80..80, tlv);
        bad(&frame_with_edp(two), Malformed::TlvList);
        let mut cut = at_edp();
        cut[19] = 60; // EAPS TLV of 60 bytes
        bad(&frame_with_edp(cut), Malformed::TlvList);
        let mut over = at_edp();
        over[19] = 0x70; // past the EDP length
        bad(&frame_with_edp(over), Malformed::TlvList);
        let mut partial = at_edp();
        partial.extend_from_slice(&[0x99, 0x01]);
        partial[80..84].copy_from_slice(&[0x99, 0x02, 0, 4]); // unknown TLV, then 2 bytes
        bad(&frame_with_edp(partial), Malformed::TlvList);
        // Not EDP at all, and another PID.
        let mut f = allied_telesis_health();
        f[5] = 5;
        assert_eq!(parse_edp(&f), None);
        assert_eq!(parse_edp(&allied_telesis_health()[..25]), None);
        let mut f = allied_telesis_health();
        f[25] = 0xbc;
        assert_eq!(parse_edp(&f), Some(Edp::Other { vid: 1000 }));
    }

    #[test]
    fn frame_round_trip() {
        let f = emit_frame(&sample(), MacAddr([0x02, 0, 0, 0, 0, 0x01]), 7);
        assert_eq!(f.len(), 110);
        assert_eq!(&f[..6], &[0x00, 0xe0, 0x2b, 0x00, 0x00, 0x04]);
        assert_eq!(&f[12..18], &[0x81, 0x00, 0xe3, 0xe8, 0x00, 92]);
        let (vid, src, r) = parse_frame(&f).unwrap();
        assert_eq!((vid, src, r), (1000, MacAddr([0x02, 0, 0, 0, 0, 0x01]), sample()));
    }

    #[test]
    fn bad_input() {
        let mut b = sample_bytes();
        assert_eq!(EapsPacket::new_checked(&b[..91]).unwrap_err(), Error::Truncated);
        b[48] ^= 1; // hello sequence changed, checksum not
        assert_eq!(EapsRepr::parse(&EapsPacket::new_checked(&b[..]).unwrap()).unwrap_err(), Error::Checksum);
        let mut b = sample_bytes();
        b[11] = 81;
        assert_eq!(EapsPacket::new_checked(&b[..]).unwrap_err(), Error::BadLength);
        let mut b = sample_bytes();
        b[7] = 0xbc;
        assert_eq!(EapsRepr::parse(&EapsPacket::new_checked(&b[..]).unwrap()).unwrap_err(), Error::Unsupported);
        let mut f = emit_frame(&sample(), MacAddr([2, 0, 0, 0, 0, 1]), 0);
        f[5] = 5;
        assert_eq!(parse_frame(&f).unwrap_err(), Error::Unsupported);
        assert_eq!(EapsType::from(9), EapsType::Unknown(9));
        assert_eq!(u8::from(EapsState::from(6)), 6);
    }

    fn any_repr() -> impl Strategy<Value = EapsRepr> {
        (any::<u16>(), 5u8..=8, 1u16..4095, any::<[u8; 6]>(), any::<u16>(), any::<u16>(), 0u8..=5, any::<u16>())
            .prop_map(|(seq, t, vlan, mac, hello, fail, state, hseq)| EapsRepr {
                edp_sequence: seq,
                eaps_type: t.into(),
                control_vlan: vlan,
                system_mac: MacAddr(mac),
                hello_timer: hello,
                fail_timer: fail,
                state: state.into(),
                hello_seq: hseq,
            })
    }

    /// An unknown TLV (type 1..=0x15 other than EAPS), `n` bytes of payload.
    fn any_tlv() -> impl Strategy<Value = Vec<u8>> {
        (1u8..=0x15, proptest::collection::vec(any::<u8>(), 0..12)).prop_filter_map("not EAPS", |(t, body)| {
            (t != TLV_TYPE_EAPS).then(|| {
                let mut v = vec![TLV_MARKER, t];
                v.extend_from_slice(&(4 + body.len() as u16).to_be_bytes());
                v.extend_from_slice(&body);
                v
            })
        })
    }

    proptest! {
        /// What we emit parses back to the same fields, and so does the same EAPS TLV in any
        /// list of unknown TLVs around it, with or without the null TLV.
        #[test]
        fn any_tlv_list_round_trip(
            r in any_repr(),
            before in proptest::collection::vec(any_tlv(), 0..3),
            after in proptest::collection::vec(any_tlv(), 0..3),
            null in any::<bool>(),
        ) {
            let f = emit_frame(&r, r.system_mac, 7);
            prop_assert_eq!(parse_frame(&f), Ok((r.control_vlan, r.system_mac, r)));
            let edp = &f[26..];
            let mut list = edp[..16].to_vec();
            before.iter().for_each(|t| list.extend_from_slice(t));
            list.extend_from_slice(&edp[16..80]);
            after.iter().for_each(|t| list.extend_from_slice(t));
            if null {
                list.extend_from_slice(&NULL_TLV);
            }
            let mut g = frame_with_edp(list);
            g[..16].copy_from_slice(&f[..16]);
            prop_assert_eq!(parse_edp(&g), Some(Edp::Eaps { vid: r.control_vlan, src: r.system_mac, pdu: r }));
        }

        /// Any damage to an emitted frame's EDP part is either caught (malformed, or another
        /// EDP frame) or leaves a PDU whose checksum still verifies; parsing never panics.
        #[test]
        fn damage_never_panics(r in any_repr(), at in 18usize..110, x in 1u8..=255, cut in 0usize..110) {
            let mut f = emit_frame(&r, r.system_mac, 7);
            f[at] ^= x;
            let _ = parse_edp(&f);
            let _ = parse_edp(&f[..cut]);
            if (26..110).contains(&at) {
                let same = matches!(parse_edp(&f), Some(Edp::Eaps { pdu, .. }) if pdu == r);
                prop_assert!(!same, "damage at byte {} went unnoticed", at);
            }
        }
    }
}
