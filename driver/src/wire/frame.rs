//! Ethernet/IPv4/UDP framing of SwitchML messages, as a NIC sees them: the frame a datagram
//! travels in (the software switch and the in-process transport wrap UDP payloads with it).

use super::{ethernet, ipv4, udp};
use super::{
    EtherType, EthernetFrame, EthernetRepr, IpProtocol, Ipv4Addr, Ipv4Packet, Ipv4Repr, MacAddr, UdpPacket, UdpRepr,
};

/// One end of a UDP flow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Endpoint {
    /// MAC address.
    pub mac: MacAddr,
    /// IPv4 address.
    pub ip: Ipv4Addr,
    /// UDP port.
    pub port: u16,
}

/// Bytes of Ethernet, IPv4 and UDP headers: where the UDP payload begins.
pub const HEADERS_LEN: usize = super::layout::SWITCHML_OFFSET;

/// Writes into `out` (cleared first) the frame carrying `payload` from `src` to `dst`:
/// IPv4 TTL 64 with its header checksum, UDP checksum 0.
pub fn encapsulate(src: Endpoint, dst: Endpoint, payload: &[u8], out: &mut Vec<u8>) {
    out.clear();
    out.resize(HEADERS_LEN + payload.len(), 0);
    let mut eth = EthernetFrame::new_unchecked(&mut out[..]);
    EthernetRepr { dst: dst.mac, src: src.mac, ethertype: EtherType::IPV4 }.emit(&mut eth);
    let udp_len = udp::HEADER_LEN + payload.len();
    let mut ip = Ipv4Packet::new_unchecked(eth.payload_mut());
    Ipv4Repr { src: src.ip, dst: dst.ip, protocol: IpProtocol::UDP, payload_len: udp_len, ttl: ipv4::DEFAULT_TTL }
        .emit(&mut ip);
    let mut u = UdpPacket::new_unchecked(ip.payload_mut());
    UdpRepr { src_port: src.port, dst_port: dst.port, payload_len: payload.len() }.emit(&mut u);
    u.payload_mut().copy_from_slice(payload);
}

/// A UDP datagram read out of a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Datagram<'a> {
    /// Sender.
    pub src: Endpoint,
    /// Receiver.
    pub dst: Endpoint,
    /// The UDP payload.
    pub payload: &'a [u8],
}

/// The UDP datagram of an Ethernet/IPv4/UDP frame (IHL 5, checksum verified, not a
/// fragment); `None` for anything else (ARP, ICMP, malformed).
pub fn decapsulate(frame: &[u8]) -> Option<Datagram<'_>> {
    let eth = EthernetFrame::new_checked(frame).ok()?;
    if eth.ethertype() != EtherType::IPV4 {
        return None;
    }
    let eth_repr = EthernetRepr::parse(&eth);
    let ip = Ipv4Packet::new_checked(&frame[ethernet::HEADER_LEN..]).ok()?;
    let ip_repr = Ipv4Repr::parse(&ip).ok()?;
    if ip_repr.protocol != IpProtocol::UDP {
        return None;
    }
    let ip_payload = &frame[ethernet::HEADER_LEN + ip.header_len()..ethernet::HEADER_LEN + usize::from(ip.total_len())];
    let u = UdpPacket::new_checked(ip_payload).ok()?;
    let r = UdpRepr::parse(&u);
    let payload = &ip_payload[udp::HEADER_LEN..udp::HEADER_LEN + r.payload_len];
    Some(Datagram {
        src: Endpoint { mac: eth_repr.src, ip: ip_repr.src, port: r.src_port },
        dst: Endpoint { mac: eth_repr.dst, ip: ip_repr.dst, port: r.dst_port },
        payload,
    })
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn frames_round_trip_through_the_wire_module() {
        let src = Endpoint { mac: MacAddr([2, 0, 0x5a, 0, 1, 3]), ip: Ipv4Addr::new(192, 0, 2, 13), port: 0xbee0 };
        let dst = Endpoint { mac: MacAddr([2, 0, 0x5a, 0, 0, 1]), ip: Ipv4Addr::new(192, 0, 2, 1), port: 0xbee5 };
        let mut f = Vec::new();
        encapsulate(src, dst, &[1, 2, 3, 4, 5], &mut f);
        assert_eq!(f.len(), 42 + 5);
        assert_eq!(&f[12..14], &[0x08, 0x00]);
        assert_eq!(&f[34..42], &[0xbe, 0xe0, 0xbe, 0xe5, 0x00, 0x0d, 0x00, 0x00]);
        assert!(super::super::checksum::verify(&f[14..34]));
        let d = decapsulate(&f).unwrap();
        assert_eq!((d.src, d.dst, d.payload), (src, dst, &[1u8, 2, 3, 4, 5][..]));
        f[20] = 0x20; // MF: a fragment
        assert!(decapsulate(&f).is_none());
        assert!(decapsulate(&f[..20]).is_none());
    }
}
