//! EAPS shared-link (ESL) segment health PDUs: the EAPSv2 controller/partner exchange across
//! the common link of two rings (ExtremeXOS; RFC 3619 has no shared ports), as Wireshark's EDP
//! dissector decodes them: the same LLC/SNAP and EDP header as [`super::eaps`], then one TLV of
//! type 0x0E (ESL). The frame goes to [`super::eaps::DESTINATION`], tagged with a control VLAN
//! (docs/eaps.md §11). Offsets count from the DSAP byte:
//!
//! | bytes  | field |
//! |--------|-------|
//! | 0..8   | LLC AA-AA-03, SNAP 00-E0-2B 00BB |
//! | 8..24  | EDP header: version 1, reserved, length 54, checksum, sequence, machine ID type 0 and MAC |
//! | 24     | TLV marker 0x99 |
//! | 25     | TLV type 0x0E (ESL) |
//! | 26..28 | TLV length, header included: 38 |
//! | 28     | ESL version (1) |
//! | 29     | ESL type: 1 segment health |
//! | 30..32 | control VLAN ID |
//! | 32..36 | reserved (0) |
//! | 36..42 | system MAC of the sender |
//! | 42..46 | reserved (0) |
//! | 46     | state: 1 Ready, 2 Blocking, 3 Pre-forwarding (ours; Wireshark names 1 and 2) |
//! | 47     | link role: 1 controller, 2 partner |
//! | 48..50 | link ID of the common link |
//! | 50..52 | failed link ID 1: this common link's ID while the sender sees it down, else 0 |
//! | 52..54 | failed link ID 2 (0) |
//! | 54..56 | segment RB ID: the lowest failed common link ID the sender hears of beyond this segment (docs/eaps.md §11), else 0; Wireshark's `edp.esl.reserved4` |
//! | 56..58 | link ID 2 (0) |
//! | 58..60 | reserved (0) |
//! | 60..62 | number of shared links in the list that follows (0) |

use super::eaps::{edp_frame, parse_edp_frame, EDP_PDU_OFFSET, EDP_VERSION, OUI, PID_EDP, TLV_MARKER};
use super::vlan;
use super::{be16, checksum, ethernet, Error, MacAddr, Result};

/// The EDP TLV type of ESL.
pub const TLV_TYPE_ESL: u8 = 0x0e;
/// ESL version sent.
pub const ESL_VERSION: u8 = 1;
/// ESL type: segment health.
pub const TYPE_SEGMENT_HEALTH: u8 = 1;
/// Length of the PDU from the DSAP byte.
pub const PDU_LEN: usize = 62;
/// EDP length (EDP header and TLV).
pub const EDP_LEN: u16 = (PDU_LEN - 8) as u16;
/// TLV length (header included).
pub const TLV_LEN: u16 = (PDU_LEN - 24) as u16;
/// Length of a whole tagged ESL frame (no FCS).
pub const FRAME_LEN: usize = ethernet::HEADER_LEN + vlan::HEADER_LEN + PDU_LEN;

/// The sender's segment state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EslState {
    /// 1: the common link is up (segment ports forwarding).
    Ready,
    /// 2: the common link is down; the controller blocks all segment ports but one.
    Blocking,
    /// 3: the common link is back; the controller still blocks, waiting for the masters.
    PreForwarding,
    /// Any other value.
    Unknown(u8),
}

impl From<u8> for EslState {
    fn from(v: u8) -> Self {
        match v {
            1 => EslState::Ready,
            2 => EslState::Blocking,
            3 => EslState::PreForwarding,
            o => EslState::Unknown(o),
        }
    }
}

impl From<EslState> for u8 {
    fn from(s: EslState) -> u8 {
        match s {
            EslState::Ready => 1,
            EslState::Blocking => 2,
            EslState::PreForwarding => 3,
            EslState::Unknown(o) => o,
        }
    }
}

/// The sender's end of the common link.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EslRole {
    /// 1: controller (blocks segment ports).
    Controller,
    /// 2: partner (never blocks).
    Partner,
    /// Any other value.
    Unknown(u8),
}

impl From<u8> for EslRole {
    fn from(v: u8) -> Self {
        match v {
            1 => EslRole::Controller,
            2 => EslRole::Partner,
            o => EslRole::Unknown(o),
        }
    }
}

impl From<EslRole> for u8 {
    fn from(r: EslRole) -> u8 {
        match r {
            EslRole::Controller => 1,
            EslRole::Partner => 2,
            EslRole::Unknown(o) => o,
        }
    }
}

/// The meaning of a segment health PDU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct EslRepr {
    /// EDP sequence number.
    pub edp_sequence: u16,
    /// Control VLAN the PDU is tagged with.
    pub control_vlan: u16,
    /// Sender's system MAC.
    pub system_mac: MacAddr,
    /// Sender's state.
    pub state: EslState,
    /// Sender's role.
    pub role: EslRole,
    /// The common link's ID.
    pub link_id: u16,
    /// This link's ID while the sender sees it down, else 0.
    pub failed_link: u16,
    /// Segment RB ID (ExtremeXOS's "Segment RB Id", our encoding): the lowest failed common
    /// link ID the sender hears of through its other segments, relayed; 0 for none.
    pub rb_id: u16,
}

fn put16(b: &mut [u8], at: usize, v: u16) {
    b[at..at + 2].copy_from_slice(&v.to_be_bytes());
}

impl EslRepr {
    /// Writes the PDU (LLC first) into `b` (at least [`PDU_LEN`] bytes), checksum included.
    pub fn emit(&self, b: &mut [u8]) {
        let b = &mut b[..PDU_LEN];
        b.fill(0);
        b[..3].copy_from_slice(&[0xaa, 0xaa, 0x03]);
        b[3..6].copy_from_slice(&OUI);
        put16(b, 6, PID_EDP);
        b[8] = EDP_VERSION;
        put16(b, 10, EDP_LEN);
        put16(b, 14, self.edp_sequence);
        b[18..24].copy_from_slice(&self.system_mac.0);
        b[24] = TLV_MARKER;
        b[25] = TLV_TYPE_ESL;
        put16(b, 26, TLV_LEN);
        b[28] = ESL_VERSION;
        b[29] = TYPE_SEGMENT_HEALTH;
        put16(b, 30, self.control_vlan);
        b[36..42].copy_from_slice(&self.system_mac.0);
        b[46] = self.state.into();
        b[47] = self.role.into();
        put16(b, 48, self.link_id);
        put16(b, 50, self.failed_link);
        put16(b, 54, self.rb_id);
        let c = checksum::compute(&b[8..PDU_LEN]);
        put16(b, 12, c);
    }

    /// Reads a PDU (LLC first): LLC/SNAP, lengths, TLV marker and type, version 1 and type
    /// segment health must be ours ([`Error::Unsupported`], [`Error::BadLength`]), the checksum
    /// must verify ([`Error::Checksum`]).
    pub fn parse(b: &[u8]) -> Result<EslRepr> {
        if b.len() < PDU_LEN {
            return Err(Error::Truncated);
        }
        if b[..3] != [0xaa, 0xaa, 0x03] || b[3..6] != OUI || be16(&b[6..8]) != PID_EDP {
            return Err(Error::Unsupported);
        }
        if b[24] != TLV_MARKER || b[25] != TLV_TYPE_ESL || b[28] != ESL_VERSION || b[29] != TYPE_SEGMENT_HEALTH {
            return Err(Error::Unsupported);
        }
        if be16(&b[10..12]) != EDP_LEN || be16(&b[26..28]) != TLV_LEN {
            return Err(Error::BadLength);
        }
        if !checksum::verify(&b[8..PDU_LEN]) {
            return Err(Error::Checksum);
        }
        Ok(EslRepr {
            edp_sequence: be16(&b[14..16]),
            control_vlan: be16(&b[30..32]),
            system_mac: MacAddr::from_bytes(&b[36..42]),
            state: EslState::from(b[46]),
            role: EslRole::from(b[47]),
            link_id: be16(&b[48..50]),
            failed_link: be16(&b[50..52]),
            rb_id: be16(&b[54..56]),
        })
    }
}

/// Builds the whole frame: to the EAPS destination from `src`, tagged with the control VLAN at
/// priority `pcp`, the 802.3 length, then the PDU. [`FRAME_LEN`] bytes (80), no FCS.
pub fn emit_frame(repr: &EslRepr, src: MacAddr, pcp: u8) -> Vec<u8> {
    let mut f = edp_frame(repr.control_vlan, src, pcp, PDU_LEN);
    repr.emit(&mut f[EDP_PDU_OFFSET..]);
    f
}

/// Reads a whole frame as an ESL PDU; returns the tag's VID and the PDU. A frame that is not
/// to the EAPS destination, untagged, or carries another TLV is [`Error::Unsupported`].
pub fn parse_frame(frame: &[u8]) -> Result<(u16, EslRepr)> {
    let (vid, _, pdu) = parse_edp_frame(frame, PDU_LEN)?;
    Ok((vid, EslRepr::parse(pdu)?))
}

#[cfg(test)]
mod test {
    use super::*;

    fn sample() -> EslRepr {
        EslRepr {
            edp_sequence: 0x0304,
            control_vlan: 10,
            system_mac: MacAddr([0x02, 0, 0, 0, 0, 0x03]),
            state: EslState::Blocking,
            role: EslRole::Controller,
            link_id: 34,
            failed_link: 34,
            rb_id: 12,
        }
    }

    /// `sample()` byte by byte. EDP words: 0100 0036 [cksum] 0304 0000 0200 0000 0003 990e
    /// 0026 0101 000a 0000 0000 0200 0000 0003 0000 0000 0201 0022 0022 0000 000c (then
    /// zeros). Their one's-complement sum is 0xa4d0, so the checksum field is !0xa4d0 = 0x5b2f.
    fn sample_bytes() -> [u8; PDU_LEN] {
        let mut b = [0u8; PDU_LEN];
        b[..8].copy_from_slice(&[0xaa, 0xaa, 0x03, 0x00, 0xe0, 0x2b, 0x00, 0xbb]);
        b[8..24].copy_from_slice(&[1, 0, 0, 54, 0x5b, 0x2f, 0x03, 0x04, 0, 0, 0x02, 0, 0, 0, 0, 0x03]);
        b[24..32].copy_from_slice(&[0x99, 0x0e, 0, 38, 1, 1, 0, 10]);
        b[36..42].copy_from_slice(&[0x02, 0, 0, 0, 0, 0x03]);
        b[46..52].copy_from_slice(&[2, 1, 0, 34, 0, 34]);
        b[54..56].copy_from_slice(&[0, 12]);
        b
    }

    #[test]
    fn emit_matches_bytes() {
        let mut buf = [0x5au8; PDU_LEN];
        sample().emit(&mut buf);
        assert_eq!(buf, sample_bytes());
        assert_eq!(EslRepr::parse(&buf).unwrap(), sample());
    }

    #[test]
    fn frame_round_trip_and_bad_input() {
        let f = emit_frame(&sample(), MacAddr([0x02, 0, 0, 0, 0, 0x03]), 7);
        assert_eq!(f.len(), 80);
        assert_eq!(&f[12..18], &[0x81, 0x00, 0xe0, 0x0a, 0x00, 62]);
        assert_eq!(parse_frame(&f).unwrap(), (10, sample()));
        let mut b = sample_bytes();
        b[49] ^= 1;
        assert_eq!(EslRepr::parse(&b).unwrap_err(), Error::Checksum);
        let mut b = sample_bytes();
        b[25] = 0x0b;
        assert_eq!(EslRepr::parse(&b).unwrap_err(), Error::Unsupported);
        assert_eq!(EslRepr::parse(&sample_bytes()[..61]).unwrap_err(), Error::Truncated);
        // An EAPS PDU is not an ESL PDU.
        let eaps = super::super::eaps::EapsRepr {
            edp_sequence: 0,
            eaps_type: super::super::eaps::EapsType::Health,
            control_vlan: 10,
            system_mac: MacAddr([2, 0, 0, 0, 0, 1]),
            hello_timer: 1,
            fail_timer: 3,
            state: super::super::eaps::EapsState::Complete,
            hello_seq: 1,
        };
        let f = super::super::eaps::emit_frame(&eaps, MacAddr([2, 0, 0, 0, 0, 1]), 7);
        assert_eq!(parse_frame(&f).unwrap_err(), Error::Unsupported);
    }
}
