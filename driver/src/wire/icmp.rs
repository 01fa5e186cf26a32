//! ICMP echo request and reply (RFC 792), the only ICMP the switch answers.
//!
//! | bytes | field |
//! |-------|-------|
//! | 0     | type (8 echo request, 0 echo reply) |
//! | 1     | code (0) |
//! | 2..4  | checksum over the whole ICMP message |
//! | 4..6  | identifier |
//! | 6..8  | sequence number |
//! | 8..   | data (echoed) |

use super::{be16, checksum, Error, Result};

/// Byte ranges of an ICMP echo message.
pub mod field {
    use core::ops::{Range, RangeFrom};
    /// Type.
    pub const TYPE: usize = 0;
    /// Code.
    pub const CODE: usize = 1;
    /// Checksum.
    pub const CHECKSUM: Range<usize> = 2..4;
    /// Identifier.
    pub const IDENT: Range<usize> = 4..6;
    /// Sequence number.
    pub const SEQ: Range<usize> = 6..8;
    /// Echo data.
    pub const DATA: RangeFrom<usize> = 8..;
}

/// Length of the echo header.
pub const HEADER_LEN: usize = 8;
/// Echo request type.
pub const ECHO_REQUEST: u8 = 8;
/// Echo reply type.
pub const ECHO_REPLY: u8 = 0;

packet_view!(
    /// A read/write view of an ICMP message.
    IcmpPacket,
    min_len = HEADER_LEN,
    "Wraps a buffer that holds the 8-byte header."
);

impl<T: AsRef<[u8]>> IcmpPacket<T> {
    /// Type.
    pub fn msg_type(&self) -> u8 {
        self.buffer.as_ref()[field::TYPE]
    }
    /// Code.
    pub fn code(&self) -> u8 {
        self.buffer.as_ref()[field::CODE]
    }
    /// Checksum field.
    pub fn checksum(&self) -> u16 {
        be16(&self.buffer.as_ref()[field::CHECKSUM])
    }
    /// Identifier.
    pub fn ident(&self) -> u16 {
        be16(&self.buffer.as_ref()[field::IDENT])
    }
    /// Sequence number.
    pub fn seq(&self) -> u16 {
        be16(&self.buffer.as_ref()[field::SEQ])
    }
    /// Echo data.
    pub fn data(&self) -> &[u8] {
        &self.buffer.as_ref()[field::DATA]
    }
    /// True when the checksum over the whole message verifies.
    pub fn verify_checksum(&self) -> bool {
        checksum::verify(self.buffer.as_ref())
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> IcmpPacket<T> {
    /// Sets type and code.
    pub fn set_type_code(&mut self, t: u8, c: u8) {
        self.buffer.as_mut()[field::TYPE] = t;
        self.buffer.as_mut()[field::CODE] = c;
    }
    /// Sets the checksum field.
    pub fn set_checksum(&mut self, v: u16) {
        self.buffer.as_mut()[field::CHECKSUM].copy_from_slice(&v.to_be_bytes());
    }
    /// Computes and stores the checksum over the whole buffer.
    pub fn fill_checksum(&mut self) {
        self.set_checksum(0);
        let c = checksum::compute(self.buffer.as_ref());
        self.set_checksum(c);
    }
}

/// The meaning of an ICMP echo message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IcmpRepr<'a> {
    /// True for a request, false for a reply.
    pub request: bool,
    /// Identifier.
    pub ident: u16,
    /// Sequence number.
    pub seq: u16,
    /// Echo data.
    pub data: &'a [u8],
}

impl<'a> IcmpRepr<'a> {
    /// Reads an echo request or reply; other types and codes are `Unsupported`.
    /// The checksum is not checked here (see [`IcmpPacket::verify_checksum`]).
    pub fn parse(p: &IcmpPacket<&'a [u8]>) -> Result<IcmpRepr<'a>> {
        let request = match (p.msg_type(), p.code()) {
            (ECHO_REQUEST, 0) => true,
            (ECHO_REPLY, 0) => false,
            _ => return Err(Error::Unsupported),
        };
        let buf: &'a [u8] = p.buffer;
        Ok(IcmpRepr { request, ident: p.ident(), seq: p.seq(), data: &buf[field::DATA] })
    }
    /// Length of the message.
    pub fn buffer_len(&self) -> usize {
        HEADER_LEN + self.data.len()
    }
    /// Writes the message with its checksum.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, p: &mut IcmpPacket<T>) {
        p.set_type_code(if self.request { ECHO_REQUEST } else { ECHO_REPLY }, 0);
        let b = p.buffer.as_mut();
        b[field::IDENT].copy_from_slice(&self.ident.to_be_bytes());
        b[field::SEQ].copy_from_slice(&self.seq.to_be_bytes());
        b[HEADER_LEN..HEADER_LEN + self.data.len()].copy_from_slice(self.data);
        p.fill_checksum();
    }
}

/// The checksum of an echo reply made from a request by changing the type 8 to 0 and
/// nothing else (RFC 1624 incremental update): what the switch computes without reading
/// the echo data twice. Correct whenever the request's checksum was.
pub fn reply_checksum(request_checksum: u16) -> u16 {
    // HC' = ~(~HC + ~m + m'), m = 0x0800 (type 8, code 0), m' = 0x0000.
    let sum = u32::from(!request_checksum) + u32::from(!0x0800u16);
    !checksum::fold(sum)
}

#[cfg(test)]
mod test {
    use super::*;

    // Echo request id 0x1234 seq 1, data "abcd"; checksum computed over the message.
    static REQUEST: [u8; 12] = [0x08, 0x00, 0x21, 0x04, 0x12, 0x34, 0x00, 0x01, b'a', b'b', b'c', b'd'];

    #[test]
    fn parse_emit() {
        let p = IcmpPacket::new_checked(&REQUEST[..]).unwrap();
        assert!(p.verify_checksum());
        let r = IcmpRepr::parse(&p).unwrap();
        assert_eq!(r, IcmpRepr { request: true, ident: 0x1234, seq: 1, data: b"abcd" });
        let mut buf = [0xa5u8; 12];
        r.emit(&mut IcmpPacket::new_unchecked(&mut buf[..]));
        assert_eq!(buf, REQUEST);
    }

    #[test]
    fn incremental_reply_checksum() {
        let reply = IcmpRepr { request: false, ident: 0x1234, seq: 1, data: b"abcd" };
        let mut buf = [0u8; 12];
        reply.emit(&mut IcmpPacket::new_unchecked(&mut buf[..]));
        assert_eq!(reply_checksum(0x2104), u16::from_be_bytes([buf[2], buf[3]]));
        // A request whose checksum is near the wrap.
        let mut req = [0x08, 0x00, 0, 0, 0xf7, 0xff, 0x00, 0x00];
        IcmpPacket::new_unchecked(&mut req[..]).fill_checksum();
        let mut rep = req;
        rep[0] = 0;
        IcmpPacket::new_unchecked(&mut rep[..]).fill_checksum();
        assert_eq!(reply_checksum(u16::from_be_bytes([req[2], req[3]])), u16::from_be_bytes([rep[2], rep[3]]));
    }

    #[test]
    fn other_types() {
        let mut b = REQUEST;
        b[0] = 3;
        assert_eq!(IcmpRepr::parse(&IcmpPacket::new_checked(&b[..]).unwrap()).unwrap_err(), Error::Unsupported);
        assert_eq!(IcmpPacket::new_checked(&REQUEST[..7]).unwrap_err(), Error::Truncated);
    }
}
