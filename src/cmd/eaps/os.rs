//! The daemon's I/O: rtnetlink for bridge-port state, FDB flushes, the EAPS MAC's local FDB
//! entry and link events; AF_PACKET sockets for PDUs.
//!
//! A ring port forwards as a port of the bridge and is blocked by taking it out of the bridge
//! (IFLA_MASTER 0, as `ip link set PORT nomaster`): an interface that is no bridge port
//! forwards nothing, and nothing the kernel does on a carrier change turns it back on. The
//! bridge-port state (`bridge link set dev PORT state N`, [`Rtnl::set_port_state`]) is not
//! enough here: with STP off the kernel sets a port forwarding again the moment its carrier
//! returns, before the daemon hears of it, and in that window the namespace ring looped 6,788
//! frames; and state 4 (blocking) is turned back to forwarding by the bridge's port-state
//! selection at once. The saved state is put back at exit. An AF_PACKET socket bound to the
//! interface sees and sends PDUs either way. A flush is
//! `IFLA_BRPORT_FLUSH` (the port's dynamic entries). See docs/eaps.md §9 for why whole ports
//! and not per-VLAN filtering.

use anyhow::{anyhow, bail, Context, Result};
use netlink_packet_core::{
    DefaultNla, NetlinkHeader, NetlinkMessage, NetlinkPayload, NLM_F_ACK, NLM_F_CREATE, NLM_F_DUMP, NLM_F_REPLACE,
    NLM_F_REQUEST,
};
use netlink_packet_route::link::{
    InfoBridgePort, InfoPortData, InfoPortKind, LinkAttribute, LinkFlags, LinkInfo, LinkMessage,
};
use netlink_packet_route::neighbour::{NeighbourAttribute, NeighbourFlags, NeighbourMessage, NeighbourState};
use netlink_packet_route::{AddressFamily, RouteNetlinkMessage};
use netlink_sys::{protocols::NETLINK_ROUTE, Socket, SocketAddr};
use std::os::fd::{AsRawFd, RawFd};

const IFLA_PROTINFO: u16 = 12;

/// The EAPS PDU's destination (docs/eaps.md §1).
pub const EAPS_MAC: [u8; 6] = [0x00, 0xe0, 0x2b, 0x00, 0x00, 0x04];

/// One link as rtnetlink reports it.
#[derive(Debug, Clone)]
pub struct LinkStatus {
    /// Interface index.
    pub index: u32,
    /// Name.
    pub name: String,
    /// Administratively up and carrier (IFF_UP and IFF_LOWER_UP).
    pub up: bool,
    /// Its bridge port state, if it is a bridge port and the message says.
    pub port_state: Option<u8>,
    /// Its bridge (master) index.
    pub master: Option<u32>,
    /// Its MAC address.
    pub mac: Option<[u8; 6]>,
}

fn link_status(m: &LinkMessage) -> LinkStatus {
    let mut s = LinkStatus {
        index: m.header.index,
        name: String::new(),
        up: m.header.flags.contains(LinkFlags::Up) && m.header.flags.contains(LinkFlags::LowerUp),
        port_state: None,
        master: None,
        mac: None,
    };
    for a in &m.attributes {
        match a {
            LinkAttribute::IfName(n) => s.name = n.clone(),
            LinkAttribute::Controller(c) => s.master = Some(*c),
            LinkAttribute::Address(a) if a.len() == 6 => s.mac = Some(a[..].try_into().unwrap()),
            LinkAttribute::LinkInfo(infos) => {
                for i in infos {
                    if let LinkInfo::PortData(InfoPortData::BridgePort(p)) = i {
                        for x in p {
                            if let InfoBridgePort::State(st) = x {
                                s.port_state = Some(u8::from(*st));
                            }
                        }
                    }
                }
            }
            _ => {}
        }
    }
    s
}

/// A request socket to rtnetlink.
pub struct Rtnl {
    sock: Socket,
    seq: u32,
}

impl Rtnl {
    /// Opens it.
    pub fn open() -> Result<Rtnl> {
        let mut sock = Socket::new(NETLINK_ROUTE).context("netlink socket")?;
        sock.bind_auto().context("netlink bind")?;
        sock.connect(&SocketAddr::new(0, 0)).context("netlink connect")?;
        Ok(Rtnl { sock, seq: 1 })
    }

    /// Sends one request and collects its replies until the ACK or DONE.
    fn request(&mut self, msg: RouteNetlinkMessage, flags: u16) -> Result<Vec<RouteNetlinkMessage>> {
        let mut header = NetlinkHeader::default();
        header.flags = NLM_F_REQUEST | flags;
        self.seq += 1;
        header.sequence_number = self.seq;
        let mut nl = NetlinkMessage::new(header, NetlinkPayload::from(msg));
        nl.finalize();
        let mut buf = vec![0u8; nl.buffer_len()];
        nl.serialize(&mut buf);
        self.sock.send(&buf, 0).context("netlink send")?;
        let mut out = Vec::new();
        loop {
            let (data, _) = self.sock.recv_from_full().context("netlink receive")?;
            let mut off = 0;
            while off < data.len() {
                let m = NetlinkMessage::<RouteNetlinkMessage>::deserialize(&data[off..])
                    .map_err(|e| anyhow!("netlink reply: {e}"))?;
                let len = m.header.length as usize;
                if m.header.sequence_number == self.seq {
                    match m.payload {
                        NetlinkPayload::Done(_) => return Ok(out),
                        NetlinkPayload::Error(e) => {
                            if e.code.is_some() {
                                return Err(e.to_io().into());
                            }
                            return Ok(out);
                        }
                        NetlinkPayload::InnerMessage(i) => out.push(i),
                        _ => {}
                    }
                }
                if len == 0 {
                    break;
                }
                off += (len + 3) & !3;
            }
        }
    }

    /// Every link, with bridge-port details.
    pub fn links(&mut self) -> Result<Vec<LinkStatus>> {
        let msg = RouteNetlinkMessage::GetLink(LinkMessage::default());
        let replies = self.request(msg, NLM_F_DUMP)?;
        Ok(replies
            .iter()
            .filter_map(|r| match r {
                RouteNetlinkMessage::NewLink(m) => Some(link_status(m)),
                _ => None,
            })
            .collect())
    }

    fn set_port(&mut self, index: u32, data: Vec<InfoBridgePort>) -> Result<()> {
        let mut m = LinkMessage::default();
        m.header.index = index;
        m.attributes.push(LinkAttribute::LinkInfo(vec![
            LinkInfo::PortKind(InfoPortKind::Bridge),
            LinkInfo::PortData(InfoPortData::BridgePort(data)),
        ]));
        self.request(RouteNetlinkMessage::NewLink(m), NLM_F_ACK)?;
        Ok(())
    }

    /// Sets a bridge port's state (0 disabled, 3 forwarding, or any saved value): RTM_SETLINK,
    /// AF_BRIDGE, IFLA_PROTINFO holding the state byte, as `bridge link set dev PORT state N`.
    pub fn set_port_state(&mut self, index: u32, state: u8) -> Result<()> {
        let mut m = LinkMessage::default();
        m.header.interface_family = AddressFamily::Bridge;
        m.header.index = index;
        m.attributes.push(LinkAttribute::ProtoInfoUnknown(DefaultNla::new(IFLA_PROTINFO, vec![state])));
        self.request(RouteNetlinkMessage::SetLink(m), NLM_F_ACK)?;
        Ok(())
    }

    /// Makes the interface a port of bridge `master`, or of none with 0 (IFLA_MASTER, as `ip
    /// link set PORT master BR` / `nomaster`).
    pub fn set_master(&mut self, index: u32, master: u32) -> Result<()> {
        let mut m = LinkMessage::default();
        m.header.index = index;
        m.attributes.push(LinkAttribute::Controller(master));
        self.request(RouteNetlinkMessage::SetLink(m), NLM_F_ACK)?;
        Ok(())
    }

    /// Flushes a bridge port's dynamic FDB entries.
    pub fn flush_port(&mut self, index: u32) -> Result<()> {
        self.set_port(index, vec![InfoBridgePort::Flush])
    }

    fn fdb_local(&mut self, bridge: u32, mac: [u8; 6], add: bool) -> Result<()> {
        let mut m = NeighbourMessage::default();
        m.header.family = AddressFamily::Bridge;
        m.header.ifindex = bridge;
        m.header.state = NeighbourState::Permanent;
        m.header.flags = NeighbourFlags::Own;
        m.attributes.push(NeighbourAttribute::LinkLayerAddress(mac.to_vec()));
        if add {
            self.request(RouteNetlinkMessage::NewNeighbour(m), NLM_F_ACK | NLM_F_CREATE | NLM_F_REPLACE)?;
        } else {
            self.request(RouteNetlinkMessage::DelNeighbour(m), NLM_F_ACK)?;
        }
        Ok(())
    }

    /// A local (permanent) FDB entry for the EAPS MAC on the bridge: the bridge then delivers
    /// PDUs to itself, where nothing takes them, instead of flooding them; the daemon alone
    /// forwards control PDUs (docs/eaps.md §2).
    pub fn add_eaps_local(&mut self, bridge: u32) -> Result<()> {
        self.fdb_local(bridge, EAPS_MAC, true)
    }

    /// Removes that entry.
    pub fn del_eaps_local(&mut self, bridge: u32) -> Result<()> {
        self.fdb_local(bridge, EAPS_MAC, false)
    }
}

/// A socket subscribed to link events (RTNLGRP_LINK).
pub struct LinkEvents {
    sock: Socket,
}

impl LinkEvents {
    /// Subscribes.
    pub fn open() -> Result<LinkEvents> {
        let mut sock = Socket::new(NETLINK_ROUTE).context("netlink socket")?;
        sock.bind_auto().context("netlink bind")?;
        sock.add_membership(1 /* RTNLGRP_LINK */).context("netlink RTNLGRP_LINK")?;
        sock.set_non_blocking(true).context("netlink non-blocking")?;
        let _ = sock.set_rx_buf_sz(1 << 20);
        Ok(LinkEvents { sock })
    }

    /// The link messages waiting (none when the socket would block).
    pub fn drain(&mut self) -> Result<Vec<LinkStatus>> {
        let mut out = Vec::new();
        loop {
            let data = match self.sock.recv_from_full() {
                Ok((d, _)) => d,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return Ok(out),
                Err(e) => return Err(e).context("netlink link events"),
            };
            let mut off = 0;
            while off < data.len() {
                let Ok(m) = NetlinkMessage::<RouteNetlinkMessage>::deserialize(&data[off..]) else { break };
                let len = m.header.length as usize;
                if let NetlinkPayload::InnerMessage(RouteNetlinkMessage::NewLink(l)) = &m.payload {
                    if l.header.interface_family == AddressFamily::Unspec {
                        out.push(link_status(l));
                    }
                }
                if len == 0 {
                    break;
                }
                off += (len + 3) & !3;
            }
        }
    }
}

impl AsRawFd for LinkEvents {
    fn as_raw_fd(&self) -> RawFd {
        self.sock.as_raw_fd()
    }
}

/// An AF_PACKET socket on one ring port that takes only frames to the EAPS MAC.
pub struct PduSocket {
    fd: RawFd,
    index: u32,
}

/// Sets socket option `name` (called `what` in the error) of `level` on `fd` to `value`.
///
/// # Safety
/// `T` must be the type the kernel expects for the option (a pointer inside it must be live).
unsafe fn setsockopt<T>(fd: RawFd, level: libc::c_int, name: libc::c_int, value: &T, what: &str) -> Result<()> {
    // SAFETY: `value` points at a live T of the size given; the caller vouches for the type.
    let r = unsafe {
        libc::setsockopt(fd, level, name, value as *const T as *const libc::c_void, std::mem::size_of::<T>() as u32)
    };
    if r < 0 {
        bail!("{what}: {}", std::io::Error::last_os_error());
    }
    Ok(())
}

const ETH_P_ALL: u16 = 0x0003;
const TP_STATUS_VLAN_VALID: u32 = 1 << 4;
const TP_STATUS_VLAN_TPID_VALID: u32 = 1 << 6;

impl PduSocket {
    /// Opens and binds it; a classic BPF filter passes only frames whose destination is
    /// [`EAPS_MAC`], so that data traffic (or a storm) costs the daemon nothing.
    pub fn open(index: u32) -> Result<PduSocket> {
        // SAFETY: plain socket calls on a descriptor this function owns; every pointer passed
        // points at a live local of the size given.
        unsafe {
            let fd = libc::socket(libc::AF_PACKET, libc::SOCK_RAW | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC, 0);
            if fd < 0 {
                bail!("AF_PACKET socket: {}", std::io::Error::last_os_error());
            }
            let sock = PduSocket { fd, index };
            // ld [0]; jeq 0x00e02b00; ldh [4]; jeq 0x0004; ret all; ret 0
            let dst_hi = u32::from_be_bytes([EAPS_MAC[0], EAPS_MAC[1], EAPS_MAC[2], EAPS_MAC[3]]);
            let dst_lo = u32::from(u16::from_be_bytes([EAPS_MAC[4], EAPS_MAC[5]]));
            let prog = [
                libc::sock_filter { code: 0x20, jt: 0, jf: 0, k: 0 },
                libc::sock_filter { code: 0x15, jt: 0, jf: 3, k: dst_hi },
                libc::sock_filter { code: 0x28, jt: 0, jf: 0, k: 4 },
                libc::sock_filter { code: 0x15, jt: 0, jf: 1, k: dst_lo },
                libc::sock_filter { code: 0x06, jt: 0, jf: 0, k: 0xffff },
                libc::sock_filter { code: 0x06, jt: 0, jf: 0, k: 0 },
            ];
            let fprog = libc::sock_fprog { len: prog.len() as u16, filter: prog.as_ptr() as *mut _ };
            setsockopt(fd, libc::SOL_SOCKET, libc::SO_ATTACH_FILTER, &fprog, "SO_ATTACH_FILTER")?;
            let one: libc::c_int = 1;
            setsockopt(fd, libc::SOL_PACKET, libc::PACKET_AUXDATA, &one, "PACKET_AUXDATA")?;
            let mut sll: libc::sockaddr_ll = std::mem::zeroed();
            sll.sll_family = libc::AF_PACKET as u16;
            sll.sll_protocol = ETH_P_ALL.to_be();
            sll.sll_ifindex = index as i32;
            if libc::bind(
                fd,
                &sll as *const _ as *const libc::sockaddr,
                std::mem::size_of::<libc::sockaddr_ll>() as u32,
            ) < 0
            {
                bail!("AF_PACKET bind to interface {index}: {}", std::io::Error::last_os_error());
            }
            Ok(sock)
        }
    }

    /// The next received frame (not one this host sent), its 802.1Q tag put back where the
    /// kernel moved it into the auxiliary data; `None` when nothing waits.
    pub fn recv(&self) -> Result<Option<Vec<u8>>> {
        loop {
            let mut buf = vec![0u8; 2048];
            let mut cmsg = [0u64; 16];
            // SAFETY: msghdr points at live locals (buf, sll, cmsg) of the lengths given.
            let (n, sll, aux) = unsafe {
                let mut sll: libc::sockaddr_ll = std::mem::zeroed();
                let mut iov = libc::iovec { iov_base: buf.as_mut_ptr() as *mut libc::c_void, iov_len: buf.len() };
                let mut msg: libc::msghdr = std::mem::zeroed();
                msg.msg_name = &mut sll as *mut _ as *mut libc::c_void;
                msg.msg_namelen = std::mem::size_of::<libc::sockaddr_ll>() as u32;
                msg.msg_iov = &mut iov;
                msg.msg_iovlen = 1;
                msg.msg_control = cmsg.as_mut_ptr() as *mut libc::c_void;
                msg.msg_controllen = std::mem::size_of_val(&cmsg);
                let n = libc::recvmsg(self.fd, &mut msg, 0);
                if n < 0 {
                    let e = std::io::Error::last_os_error();
                    // ENETDOWN: the port's link just went down (rtnetlink tells the node).
                    if e.kind() == std::io::ErrorKind::WouldBlock || e.raw_os_error() == Some(libc::ENETDOWN) {
                        return Ok(None);
                    }
                    return Err(e).context("AF_PACKET receive");
                }
                let mut aux: Option<libc::tpacket_auxdata> = None;
                let mut c = libc::CMSG_FIRSTHDR(&msg);
                while !c.is_null() {
                    if (*c).cmsg_level == libc::SOL_PACKET && (*c).cmsg_type == libc::PACKET_AUXDATA {
                        aux = Some(std::ptr::read_unaligned(libc::CMSG_DATA(c) as *const libc::tpacket_auxdata));
                    }
                    c = libc::CMSG_NXTHDR(&msg, c);
                }
                (n as usize, sll, aux)
            };
            if sll.sll_pkttype == libc::PACKET_OUTGOING || n < 14 {
                continue;
            }
            buf.truncate(n);
            if let Some(a) = aux {
                if a.tp_status & TP_STATUS_VLAN_VALID != 0 {
                    let tpid = if a.tp_status & TP_STATUS_VLAN_TPID_VALID != 0 { a.tp_vlan_tpid } else { 0x8100 };
                    let mut tag = Vec::with_capacity(4);
                    tag.extend_from_slice(&tpid.to_be_bytes());
                    tag.extend_from_slice(&a.tp_vlan_tci.to_be_bytes());
                    buf.splice(12..12, tag);
                }
            }
            return Ok(Some(buf));
        }
    }

    /// Sends a frame (no FCS) out of the port.
    pub fn send(&self, frame: &[u8]) -> Result<()> {
        // SAFETY: sll and frame are live for the call, lengths as given.
        let n = unsafe {
            let mut sll: libc::sockaddr_ll = std::mem::zeroed();
            sll.sll_family = libc::AF_PACKET as u16;
            sll.sll_ifindex = self.index as i32;
            sll.sll_halen = 6;
            sll.sll_addr[..6].copy_from_slice(&frame[..6]);
            libc::sendto(
                self.fd,
                frame.as_ptr() as *const libc::c_void,
                frame.len(),
                0,
                &sll as *const _ as *const libc::sockaddr,
                std::mem::size_of::<libc::sockaddr_ll>() as u32,
            )
        };
        if n < 0 {
            let e = std::io::Error::last_os_error();
            // A port whose link just went down refuses frames; the node learns of it from rtnetlink.
            if matches!(e.raw_os_error(), Some(libc::ENETDOWN) | Some(libc::ENXIO) | Some(libc::ENOBUFS)) {
                return Ok(());
            }
            return Err(e).context("AF_PACKET send");
        }
        Ok(())
    }
}

impl AsRawFd for PduSocket {
    fn as_raw_fd(&self) -> RawFd {
        self.fd
    }
}

impl Drop for PduSocket {
    fn drop(&mut self) {
        // SAFETY: the descriptor is owned by this value.
        unsafe { libc::close(self.fd) };
    }
}

/// A signalfd for SIGINT and SIGTERM (both blocked for the process).
pub struct Signals {
    fd: RawFd,
}

impl Signals {
    /// Blocks the signals and opens the descriptor.
    pub fn open() -> Result<Signals> {
        // SAFETY: sigset operations on a local set; signalfd on it.
        unsafe {
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            libc::sigaddset(&mut set, libc::SIGINT);
            libc::sigaddset(&mut set, libc::SIGTERM);
            if libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) != 0 {
                bail!("pthread_sigmask failed");
            }
            let fd = libc::signalfd(-1, &set, libc::SFD_NONBLOCK | libc::SFD_CLOEXEC);
            if fd < 0 {
                bail!("signalfd: {}", std::io::Error::last_os_error());
            }
            Ok(Signals { fd })
        }
    }

    /// The signal waiting, if any.
    pub fn take(&self) -> Option<u32> {
        // SAFETY: reading one signalfd_siginfo into a local of its size.
        unsafe {
            let mut info: libc::signalfd_siginfo = std::mem::zeroed();
            let n = libc::read(self.fd, &mut info as *mut _ as *mut libc::c_void, std::mem::size_of_val(&info));
            (n == std::mem::size_of_val(&info) as isize).then_some(info.ssi_signo)
        }
    }
}

impl AsRawFd for Signals {
    fn as_raw_fd(&self) -> RawFd {
        self.fd
    }
}

/// Waits for any of `fds` to be readable, at most `timeout_ms` (-1: forever); returns which.
pub fn poll(fds: &[RawFd], timeout_ms: i32) -> Result<Vec<bool>> {
    let mut p: Vec<libc::pollfd> =
        fds.iter().map(|&fd| libc::pollfd { fd, events: libc::POLLIN, revents: 0 }).collect();
    // SAFETY: p is a live array of p.len() pollfds.
    let n = unsafe { libc::poll(p.as_mut_ptr(), p.len() as libc::nfds_t, timeout_ms) };
    if n < 0 {
        let e = std::io::Error::last_os_error();
        if e.kind() == std::io::ErrorKind::Interrupted {
            return Ok(vec![false; fds.len()]);
        }
        return Err(e).context("poll");
    }
    Ok(p.iter().map(|x| x.revents != 0).collect())
}
