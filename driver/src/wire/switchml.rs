//! The SwitchML message carried in UDP (SwitchML's DPDK transport layout).
//!
//! | bytes   | field |
//! |---------|-------|
//! | 0       | `msg_type` (high 4 bits; 1 = worker contribution), unused bit 3, `size` (low 3 bits) |
//! | 1       | `job_number` (echoed) |
//! | 2..6    | `tsi`, packet id (echoed) |
//! | 6..8    | `pool_index`: bit 15 the set, bits 14..0 the slot |
//! | 8       | `e0`, int8 exponent |
//! | 9       | `e1`, int8 exponent |
//! | 10..    | payload: k int32 big-endian elements, k = payload bytes / 4 |
//!
//! `size`: 0 = 128 B, 1 = 256 B, 2 = 512 B, 3 = 1024 B of payload; 4..=7 are kept as unknown.
//!
//! **Lanes** (docs/switch.md §9): a frame to UDP port 0xBEE0..=0xBEEF (SwitchML's) carries k
//! 32-bit values; one to 0xBEF0..=0xBEFF (bit 4 of the port set, spotagg's) carries 2k 16-bit
//! lanes in the same bytes, lane 2i in the high half of value i ([`Lanes`]).

use super::{Error, Result};

/// Byte ranges of the SwitchML message.
pub mod field {
    use core::ops::{Range, RangeFrom};
    /// `msg_type` and `size`.
    pub const TYPE_SIZE: usize = 0;
    /// `job_number`.
    pub const JOB: usize = 1;
    /// `tsi`.
    pub const TSI: Range<usize> = 2..6;
    /// `pool_index`.
    pub const POOL_INDEX: Range<usize> = 6..8;
    /// Exponent `e0`.
    pub const E0: usize = 8;
    /// Exponent `e1`.
    pub const E1: usize = 9;
    /// Payload.
    pub const PAYLOAD: RangeFrom<usize> = 10..;
}

/// Length of the SwitchML header (8 bytes).
pub const HEADER_LEN: usize = 8;
/// Length of the SwitchML header and the exponents header (10 bytes).
pub const PREAMBLE_LEN: usize = field::PAYLOAD.start;
/// First UDP port of the SwitchML range.
pub const UDP_PORT_BASE: u16 = 0xBEE0;
/// Mask selecting the UDP port range: `port & UDP_PORT_MASK == UDP_PORT_BASE`.
pub const UDP_PORT_MASK: u16 = 0xFFF0;
/// `msg_type` of a worker's contribution (and of the switch's result).
pub const MSG_TYPE_CONTRIBUTION: u8 = 1;
/// `msg_type` of a session message (spotagg's own, docs/switch.md §2.1): a probe (set bit 0)
/// or a join (set bit 1) carrying the proposed epoch in `job_number`, and the switch's reply.
pub const MSG_TYPE_SESSION: u8 = 8;
/// The set bit of `pool_index`.
pub const POOL_SET_BIT: u16 = 0x8000;
/// Largest slot number `pool_index` can carry.
pub const MAX_SLOT: u16 = 0x7fff;

/// True when `port` is in the SwitchML range 0xBEE0..=0xBEEF.
pub const fn is_switchml_port(port: u16) -> bool {
    port & UDP_PORT_MASK == UDP_PORT_BASE
}

/// The port bit that marks 16-bit lanes: 0xBEF0..=0xBEFF (docs/switch.md §9).
pub const LANES16_PORT_BIT: u16 = 0x0010;
/// Mask selecting the ports of either lane width: `port & SWITCH_PORT_MASK == UDP_PORT_BASE`.
pub const SWITCH_PORT_MASK: u16 = 0xFFE0;

/// The width of the lanes a contribution's payload holds (docs/switch.md §9): told by bit 4 of
/// the UDP destination port, so that a SwitchML switch, which sums every frame to 0xBEE0/0xFFF0
/// as 32-bit values whatever its `size` or `msg_type`, never sees a 16-bit frame as its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub enum Lanes {
    /// k two's-complement 32-bit values (SwitchML's format).
    #[default]
    I32,
    /// 2k two's-complement 16-bit lanes: value i holds lane 2i in bits 31..16 and lane 2i + 1
    /// in bits 15..0 (so lane j is bytes 2j, 2j + 1 of the payload, big-endian).
    I16,
}

impl Lanes {
    /// The width of a frame to `port`: `None` outside 0xBEE0..=0xBEFF.
    pub const fn of_port(port: u16) -> Option<Lanes> {
        if port & SWITCH_PORT_MASK != UDP_PORT_BASE {
            None
        } else if port & LANES16_PORT_BIT != 0 {
            Some(Lanes::I16)
        } else {
            Some(Lanes::I32)
        }
    }
    /// `port` (a switch port of either width) moved to this width's range, its low four bits
    /// kept: 0xBEE3 becomes 0xBEF3 for [`Lanes::I16`] and stays for [`Lanes::I32`].
    pub const fn port(self, port: u16) -> u16 {
        match self {
            Lanes::I32 => port & !LANES16_PORT_BIT,
            Lanes::I16 => port | LANES16_PORT_BIT,
        }
    }
    /// Bits a lane.
    pub const fn bits(self) -> u32 {
        match self {
            Lanes::I32 => 32,
            Lanes::I16 => 16,
        }
    }
    /// Coordinates a payload of `size` carries: k or 2k.
    pub const fn coordinates(self, size: PayloadSize) -> usize {
        size.bytes() * 8 / self.bits() as usize
    }
    /// The sum of two 32-bit payload words in lanes of this width, each lane wrapping on its
    /// own (two's complement): for [`Lanes::I16`] the carry out of bit 15 does not reach bit 16.
    pub const fn add(self, a: u32, b: u32) -> u32 {
        match self {
            Lanes::I32 => a.wrapping_add(b),
            Lanes::I16 => (a & 0xFFFF_0000).wrapping_add(b & 0xFFFF_0000) | (a.wrapping_add(b) & 0xFFFF),
        }
    }
}

/// Payload size, as coded in the `size` field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum PayloadSize {
    /// 128 bytes, k = 32.
    B128 = 0,
    /// 256 bytes, k = 64.
    B256 = 1,
    /// 512 bytes, k = 128.
    B512 = 2,
    /// 1024 bytes, k = 256.
    B1024 = 3,
}

impl PayloadSize {
    /// The size of a `size` code; 4..=7 are `None`.
    pub fn from_code(code: u8) -> Option<PayloadSize> {
        Some(match code {
            0 => PayloadSize::B128,
            1 => PayloadSize::B256,
            2 => PayloadSize::B512,
            3 => PayloadSize::B1024,
            _ => return None,
        })
    }
    /// The size of a payload length in bytes.
    pub fn from_bytes(bytes: usize) -> Option<PayloadSize> {
        (0..4).map(|c| PayloadSize::from_code(c).unwrap()).find(|s| s.bytes() == bytes)
    }
    /// The `size` code.
    pub const fn code(self) -> u8 {
        self as u8
    }
    /// Payload bytes.
    pub const fn bytes(self) -> usize {
        128 << (self as usize)
    }
    /// Elements per packet, k.
    pub const fn elements(self) -> usize {
        self.bytes() / 4
    }
}

/// A slot and one of its two sets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PoolIndex {
    /// Slot, 0..=0x7fff.
    pub slot: u16,
    /// Set, 0 or 1.
    pub set: u8,
}

impl PoolIndex {
    /// Reads the 16-bit field.
    pub const fn from_u16(v: u16) -> PoolIndex {
        PoolIndex { slot: v & MAX_SLOT, set: (v >> 15) as u8 }
    }
    /// The 16-bit field.
    pub const fn to_u16(self) -> u16 {
        ((self.set as u16 & 1) << 15) | (self.slot & MAX_SLOT)
    }
    /// The same slot, other set.
    pub const fn other_set(self) -> PoolIndex {
        PoolIndex { slot: self.slot, set: self.set ^ 1 }
    }
}

packet_view!(
    /// A read/write view of a SwitchML message (the UDP payload).
    SwitchmlPacket,
    min_len = PREAMBLE_LEN,
    "Wraps a buffer that holds the header and the exponents."
);

impl<T: AsRef<[u8]>> SwitchmlPacket<T> {
    /// `msg_type`.
    pub fn msg_type(&self) -> u8 {
        self.buffer.as_ref()[field::TYPE_SIZE] >> 4
    }
    /// The `size` code (low 3 bits).
    pub fn size_code(&self) -> u8 {
        self.buffer.as_ref()[field::TYPE_SIZE] & 0x07
    }
    /// `job_number`.
    pub fn job(&self) -> u8 {
        self.buffer.as_ref()[field::JOB]
    }
    /// `tsi`.
    pub fn tsi(&self) -> u32 {
        let b = &self.buffer.as_ref()[field::TSI];
        u32::from_be_bytes([b[0], b[1], b[2], b[3]])
    }
    /// `pool_index`.
    pub fn pool_index(&self) -> PoolIndex {
        let b = &self.buffer.as_ref()[field::POOL_INDEX];
        PoolIndex::from_u16(u16::from_be_bytes([b[0], b[1]]))
    }
    /// Exponent `e0`.
    pub fn e0(&self) -> i8 {
        self.buffer.as_ref()[field::E0] as i8
    }
    /// Exponent `e1`.
    pub fn e1(&self) -> i8 {
        self.buffer.as_ref()[field::E1] as i8
    }
    /// Payload bytes.
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[field::PAYLOAD]
    }
    /// Number of whole int32 elements in the payload.
    pub fn element_count(&self) -> usize {
        self.payload().len() / 4
    }
    /// Element `i` of the payload.
    pub fn element(&self, i: usize) -> i32 {
        let b = &self.payload()[4 * i..4 * i + 4];
        i32::from_be_bytes([b[0], b[1], b[2], b[3]])
    }
    /// The payload's elements.
    pub fn elements(&self) -> impl Iterator<Item = i32> + '_ {
        self.payload().chunks_exact(4).map(|b| i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> SwitchmlPacket<T> {
    /// Sets `msg_type` and the `size` code (unused bit 0).
    pub fn set_type_size(&mut self, msg_type: u8, size_code: u8) {
        self.buffer.as_mut()[field::TYPE_SIZE] = (msg_type << 4) | (size_code & 0x07);
    }
    /// Sets `job_number`.
    pub fn set_job(&mut self, v: u8) {
        self.buffer.as_mut()[field::JOB] = v;
    }
    /// Sets `tsi`.
    pub fn set_tsi(&mut self, v: u32) {
        self.buffer.as_mut()[field::TSI].copy_from_slice(&v.to_be_bytes());
    }
    /// Sets `pool_index`.
    pub fn set_pool_index(&mut self, p: PoolIndex) {
        self.buffer.as_mut()[field::POOL_INDEX].copy_from_slice(&p.to_u16().to_be_bytes());
    }
    /// Sets the exponents.
    pub fn set_exponents(&mut self, e0: i8, e1: i8) {
        self.buffer.as_mut()[field::E0] = e0 as u8;
        self.buffer.as_mut()[field::E1] = e1 as u8;
    }
    /// Sets element `i` of the payload.
    pub fn set_element(&mut self, i: usize, v: i32) {
        self.payload_mut()[4 * i..4 * i + 4].copy_from_slice(&v.to_be_bytes());
    }
    /// Mutable payload bytes.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[field::PAYLOAD]
    }
}

/// The meaning of a SwitchML header and exponents (the payload travels separately).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SwitchmlRepr {
    /// `msg_type` (4 bits), kept when unknown.
    pub msg_type: u8,
    /// The `size` code (3 bits), kept when unknown; see [`PayloadSize::from_code`].
    pub size_code: u8,
    /// `job_number`.
    pub job: u8,
    /// `tsi`.
    pub tsi: u32,
    /// `pool_index`.
    pub pool: PoolIndex,
    /// Exponent `e0`.
    pub e0: i8,
    /// Exponent `e1`.
    pub e1: i8,
}

impl SwitchmlRepr {
    /// Reads a checked message. Never fails: unknown types and sizes are kept.
    pub fn parse<T: AsRef<[u8]>>(p: &SwitchmlPacket<T>) -> SwitchmlRepr {
        SwitchmlRepr {
            msg_type: p.msg_type(),
            size_code: p.size_code(),
            job: p.job(),
            tsi: p.tsi(),
            pool: p.pool_index(),
            e0: p.e0(),
            e1: p.e1(),
        }
    }
    /// The payload size, if the code is a known one.
    pub fn size(&self) -> Option<PayloadSize> {
        PayloadSize::from_code(self.size_code)
    }
    /// Bytes of header and exponents.
    pub const fn header_len(&self) -> usize {
        PREAMBLE_LEN
    }
    /// Writes the header and exponents.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, p: &mut SwitchmlPacket<T>) {
        p.set_type_size(self.msg_type, self.size_code);
        p.set_job(self.job);
        p.set_tsi(self.tsi);
        p.set_pool_index(self.pool);
        p.set_exponents(self.e0, self.e1);
    }
    /// Checks that a payload of `len` bytes agrees with the `size` field.
    pub fn check_payload_len(&self, len: usize) -> Result<PayloadSize> {
        let size = self.size().ok_or(Error::Unsupported)?;
        if size.bytes() != len {
            return Err(Error::BadLength);
        }
        Ok(size)
    }
}

#[cfg(test)]
mod test {
    use super::*;

    static MSG: [u8; 18] = [
        0x11, 0x07, 0xde, 0xad, 0xbe, 0xef, 0x80, 0x05, 0xfd, 0x04, //
        0x00, 0x00, 0x00, 0x01, 0xff, 0xff, 0xff, 0xfe,
    ];

    #[test]
    fn parse_emit() {
        let p = SwitchmlPacket::new_checked(&MSG[..]).unwrap();
        let r = SwitchmlRepr::parse(&p);
        assert_eq!(
            r,
            SwitchmlRepr {
                msg_type: 1,
                size_code: 1,
                job: 7,
                tsi: 0xdeadbeef,
                pool: PoolIndex { slot: 5, set: 1 },
                e0: -3,
                e1: 4
            }
        );
        assert_eq!(r.size(), Some(PayloadSize::B256));
        assert_eq!(p.elements().collect::<Vec<_>>(), vec![1, -2]);
        let mut buf = [0xa5u8; 18];
        let mut q = SwitchmlPacket::new_unchecked(&mut buf[..]);
        r.emit(&mut q);
        q.set_element(0, 1);
        q.set_element(1, -2);
        assert_eq!(buf, MSG);
    }

    #[test]
    fn unknown_values_kept() {
        let mut b = MSG;
        b[0] = 0xf7; // msg_type 15, unused bit set, size 7
        let r = SwitchmlRepr::parse(&SwitchmlPacket::new_checked(&b[..]).unwrap());
        assert_eq!((r.msg_type, r.size_code, r.size()), (15, 7, None));
        assert_eq!(r.check_payload_len(8), Err(Error::Unsupported));
        assert_eq!(SwitchmlPacket::new_checked(&MSG[..9]).unwrap_err(), Error::Truncated);
    }

    #[test]
    fn lanes_by_port() {
        assert_eq!(Lanes::of_port(0xbee0), Some(Lanes::I32));
        assert_eq!(Lanes::of_port(0xbeef), Some(Lanes::I32));
        assert_eq!(Lanes::of_port(0xbef0), Some(Lanes::I16));
        assert_eq!(Lanes::of_port(0xbeff), Some(Lanes::I16));
        assert_eq!(Lanes::of_port(0xbedf), None);
        assert_eq!(Lanes::of_port(0xbf00), None);
        assert_eq!(Lanes::of_port(0x3ef0), None);
        assert_eq!(
            (Lanes::I16.port(0xbee3), Lanes::I32.port(0xbef3), Lanes::I32.port(0xbee3)),
            (0xbef3, 0xbee3, 0xbee3)
        );
        assert_eq!(Lanes::I16.coordinates(PayloadSize::B1024), 512);
        assert_eq!(Lanes::I32.coordinates(PayloadSize::B1024), 256);
    }

    /// Byte literals: payload words as they travel, and their lane sums.
    #[test]
    fn sixteen_bit_lanes_wrap_each_on_its_own() {
        let word = |b: [u8; 4]| u32::from_be_bytes(b);
        // Lanes 0x7fff and 0x0001 (value 0x7fff_0001) plus lanes 0x0001 and 0xffff (-1): the
        // high lane wraps to 0x8000 (-32768), the low lane to 0x0000, and no carry crosses.
        let a = word([0x7f, 0xff, 0x00, 0x01]);
        let b = word([0x00, 0x01, 0xff, 0xff]);
        assert_eq!(Lanes::I16.add(a, b).to_be_bytes(), [0x80, 0x00, 0x00, 0x00]);
        assert_eq!(Lanes::I32.add(a, b).to_be_bytes(), [0x80, 0x01, 0x00, 0x00]);
        // -1 + -1 in both lanes: 0xfffe each, not 0xffff_fffe.
        assert_eq!(Lanes::I16.add(0xffff_ffff, 0xffff_ffff).to_be_bytes(), [0xff, 0xfe, 0xff, 0xfe]);
        // Signed lanes: 300 + -500 = -200 (0xff38), and 1000 + 24 = 1024.
        let a = word([0x01, 0x2c, 0x03, 0xe8]);
        let b = word([0xfe, 0x0c, 0x00, 0x18]);
        assert_eq!(Lanes::I16.add(a, b).to_be_bytes(), [0xff, 0x38, 0x04, 0x00]);
    }

    #[test]
    fn sizes_and_ports() {
        assert_eq!(PayloadSize::B256.elements(), 64);
        assert_eq!(PayloadSize::B1024.elements(), 256);
        assert_eq!(PayloadSize::from_bytes(1024), Some(PayloadSize::B1024));
        assert_eq!(PayloadSize::from_bytes(300), None);
        assert!(is_switchml_port(0xbee0) && is_switchml_port(0xbeef));
        assert!(!is_switchml_port(0xbedf) && !is_switchml_port(0xbef0));
        assert_eq!(PoolIndex::from_u16(0x8005).other_set().to_u16(), 0x0005);
    }
}
