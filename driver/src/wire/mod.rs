//! The wire format: ONE definition of every frame spotagg sends or receives.
//!
//! Ethernet II / ARP / IPv4 / ICMP echo / UDP / the SwitchML header, exponents and the
//! int32 big-endian payload. Each protocol has, in the manner of smoltcp:
//!
//! - a `field` module of byte ranges (the offsets the HDL and the simulators use too);
//! - a zero-copy view `Packet<T: AsRef<[u8]>>` with `new_checked` (length checked once,
//!   accessors never panic afterwards) and setters when `T: AsMut<[u8]>`;
//! - a `Repr` (the meaning) with `parse` from a view and `emit` into one.
//!
//! [`layout`] composes the headers into the switch's frame: where each one begins.
//!
//! Unknown values (an EtherType, an ARP operation, an IP protocol, a SwitchML message
//! type) are kept as numbers and reported, never panicked on.

/// Declares `$name`, a zero-copy view of a buffer `T` (the struct, `new_unchecked` and
/// `into_inner`, and the length check `with_len`); with `min_len`, also the `new_checked` that
/// only checks that the buffer holds `min_len` bytes, documented with `$checked`.
macro_rules! packet_view {
    ($(#[$m:meta])* $name:ident) => {
        $(#[$m])*
        #[derive(Debug, Clone)]
        pub struct $name<T: AsRef<[u8]>> {
            buffer: T,
        }

        impl<T: AsRef<[u8]>> $name<T> {
            /// Wraps a buffer without checking its length (accessors may panic on a short one).
            pub fn new_unchecked(buffer: T) -> Self {
                $name { buffer }
            }
            /// The underlying buffer.
            pub fn into_inner(self) -> T {
                self.buffer
            }
            /// Wraps a buffer of at least `min` bytes ([`Error::Truncated`] otherwise): the length
            /// check every `new_checked` starts with.
            fn with_len(buffer: T, min: usize) -> Result<Self> {
                if buffer.as_ref().len() < min {
                    return Err(Error::Truncated);
                }
                Ok($name { buffer })
            }
        }
    };
    ($(#[$m:meta])* $name:ident, min_len = $min:expr, $checked:literal) => {
        packet_view!($(#[$m])* $name);

        impl<T: AsRef<[u8]>> $name<T> {
            #[doc = $checked]
            pub fn new_checked(buffer: T) -> Result<Self> {
                Self::with_len(buffer, $min)
            }
        }
    };
}

pub mod arp;
pub mod eaps;
pub mod esl;
pub mod ethernet;
pub mod fcs;
pub mod frame;
pub mod icmp;
pub mod ipv4;
pub mod layout;
pub mod switchml;
pub mod udp;
pub mod vlan;

pub use arp::{ArpOperation, ArpPacket, ArpRepr};
pub use eaps::{EapsPacket, EapsRepr, EapsState, EapsType};
pub use ethernet::{EtherType, EthernetFrame, EthernetRepr, MacAddr};
pub use icmp::{IcmpPacket, IcmpRepr};
pub use ipv4::{IpProtocol, Ipv4Addr, Ipv4Packet, Ipv4Repr};
pub use switchml::{Lanes, PayloadSize, PoolIndex, SwitchmlPacket, SwitchmlRepr};
pub use udp::{UdpPacket, UdpRepr};
pub use vlan::{VlanPacket, VlanRepr};

/// Why a buffer could not be read as a packet of some protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// The buffer ends before the header (or the length a header field announces).
    #[error("truncated packet")]
    Truncated,
    /// A length field disagrees with the buffer or with another length field.
    #[error("length field does not agree with the packet")]
    BadLength,
    /// A checksum does not verify.
    #[error("bad checksum")]
    Checksum,
    /// A field holds a value this format does not handle (kept for the caller to report).
    #[error("unsupported value in a header field")]
    Unsupported,
}

/// Result of wire-level decoding.
pub type Result<T> = core::result::Result<T, Error>;

/// The big-endian 16-bit field at the start of `b` (network byte order): the one reader every
/// header module and the reference switch use.
#[inline]
pub fn be16(b: &[u8]) -> u16 {
    u16::from_be_bytes([b[0], b[1]])
}

/// The Internet checksum (RFC 1071): one's-complement sum of 16-bit big-endian words.
pub mod checksum {
    /// Adds `data` into a running 32-bit one's-complement accumulator (odd length padded with 0).
    pub fn accumulate(mut acc: u32, data: &[u8]) -> u32 {
        let mut chunks = data.chunks_exact(2);
        for c in &mut chunks {
            acc += u32::from(u16::from_be_bytes([c[0], c[1]]));
        }
        if let [last] = chunks.remainder() {
            acc += u32::from(*last) << 8;
        }
        acc
    }

    /// Folds a running accumulator into the 16-bit one's-complement sum.
    pub fn fold(mut acc: u32) -> u16 {
        while acc > 0xffff {
            acc = (acc & 0xffff) + (acc >> 16);
        }
        acc as u16
    }

    /// The checksum to store: the complement of the folded sum of `data`.
    pub fn compute(data: &[u8]) -> u16 {
        !fold(accumulate(0, data))
    }

    /// True when `data` (checksum field included) sums to 0xffff, i.e. verifies.
    pub fn verify(data: &[u8]) -> bool {
        fold(accumulate(0, data)) == 0xffff
    }
}

#[cfg(test)]
mod test {
    use super::checksum;

    #[test]
    fn rfc1071_example() {
        // RFC 1071 section 3 example words: 0001 f203 f4f5 f6f7 -> sum ddf2, checksum 220d.
        let data = [0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7];
        assert_eq!(checksum::fold(checksum::accumulate(0, &data)), 0xddf2);
        assert_eq!(checksum::compute(&data), 0x220d);
    }
}
