//! Sessions and who may open them (docs/controller.md §4, §5), without I/O: the gRPC service
//! ([`crate::server`]) asks a [`Registry`] and answers what it says, so every rule here is tested
//! without a socket.

use crate::proto::{self, PacketSize, UdpSessionRequest, UdpSessionResponse};
use spotagg_driver::config::{JobConfig, WorkerEntry, MAX_WORKERS};
use spotagg_driver::wire::{Ipv4Addr, MacAddr, PayloadSize};
use spotagg_spec::multi_job::{JobPlacement, SharedSwitch};
use std::collections::BTreeMap;
use std::net::IpAddr;

/// What the controller serves and how (the command line of `spotagg switch --controller`).
#[derive(Debug, Clone)]
pub struct Settings {
    /// The switch's MAC, in every answer and every job.
    pub switch_mac: MacAddr,
    /// The switch's IPv4 address.
    pub switch_ip: Ipv4Addr,
    /// The switch's first UDP port (0xBEE0: SwitchML's clients send there whatever the answer).
    pub switch_port: u16,
    /// The switch's ports (threads), the jobs' `switch_ports`.
    pub switch_ports: u16,
    /// The payload sizes the switch serves (a board's core: its one built size).
    pub payloads: Vec<PayloadSize>,
    /// Whether the switch serves 16-bit lanes (docs/switch.md §9).
    pub lanes16: bool,
    /// A job's `worker_port` when the request does not give one (SwitchML's 4000).
    pub worker_port: u16,
    /// A job's `worker_ports` when the request does not give them (SwitchML's threads: 16).
    pub worker_ports: u16,
    /// Slots a session takes (or what is left, if fewer).
    pub slots_per_session: u16,
    /// The token that admits any peer (`spotagg-token` metadata).
    pub token: Option<String>,
    /// A complete session whose job has received no frame for this long ends (0: never).
    pub session_timeout: std::time::Duration,
    /// Networks whose peers are admitted without a token (none: loopback only).
    pub allow: Vec<Ipv4Net>,
}

impl Settings {
    /// The defaults of docs/controller.md for a switch at `switch_mac` / `switch_ip`: every
    /// payload size, SwitchML's worker ports 4000..4016, 512 slots a session (SwitchML's
    /// client at its defaults needs 448), loopback peers only.
    pub fn new(switch_mac: MacAddr, switch_ip: Ipv4Addr) -> Settings {
        Settings {
            switch_mac,
            switch_ip,
            switch_port: spotagg_driver::wire::switchml::UDP_PORT_BASE,
            switch_ports: 1,
            payloads: vec![PayloadSize::B128, PayloadSize::B256, PayloadSize::B512, PayloadSize::B1024],
            lanes16: true,
            worker_port: 4000,
            worker_ports: 16,
            slots_per_session: 512,
            token: None,
            allow: Vec::new(),
            session_timeout: std::time::Duration::from_secs(300),
        }
    }
}

/// An IPv4 network, `a.b.c.d/len`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ipv4Net {
    /// Its address (host bits ignored).
    pub addr: Ipv4Addr,
    /// Prefix length, 0..=32.
    pub len: u8,
}

impl Ipv4Net {
    /// Whether `a` is inside.
    pub fn contains(&self, a: Ipv4Addr) -> bool {
        let mask = if self.len == 0 { 0 } else { u32::MAX << (32 - u32::from(self.len)) };
        u32::from(a) & mask == u32::from(self.addr) & mask
    }
}

impl std::str::FromStr for Ipv4Net {
    type Err = String;
    fn from_str(s: &str) -> Result<Ipv4Net, String> {
        let (a, l) = s.split_once('/').unwrap_or((s, "32"));
        let addr = a.parse().map_err(|_| format!("{s:?} is not an IPv4 network (a.b.c.d/len)"))?;
        let len =
            l.parse().ok().filter(|l| *l <= 32).ok_or_else(|| format!("{s:?}: prefix length {l:?} is not 0..=32"))?;
        Ok(Ipv4Net { addr, len })
    }
}

/// The jobs of the switch the controller configures.
pub trait SwitchJobs: Send {
    /// Adds a completed session's job; the error says why the switch cannot take it.
    fn add(&mut self, placement: JobPlacement) -> Result<(), String>;
    /// Takes out the job whose slots start at `slot_base`.
    fn remove(&mut self, slot_base: u32);
    /// Slots of the switch's memory.
    fn capacity(&self) -> u32;
    /// µs since the job at `slot_base` last received a frame (or joined); `None` if the switch
    /// does not know (the session then never times out).
    fn idle_us(&self, _slot_base: u32) -> Option<u64> {
        None
    }
    /// The slot ranges of every job the switch has (sessions' and others', such as a job file's):
    /// a new session's range is taken outside them.
    fn taken(&self) -> Vec<std::ops::Range<u32>> {
        Vec::new()
    }
}

/// The software switch: a [`MultiSwitch`] its serving thread shares.
impl SwitchJobs for SharedSwitch {
    fn add(&mut self, placement: JobPlacement) -> Result<(), String> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).add(placement).map_err(|e| e.0)
    }
    fn remove(&mut self, slot_base: u32) {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).remove(slot_base);
    }
    fn capacity(&self) -> u32 {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).capacity()
    }
    fn idle_us(&self, slot_base: u32) -> Option<u64> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).idle_us(slot_base)
    }
    fn taken(&self) -> Vec<std::ops::Range<u32>> {
        let sw = self.0.lock().unwrap_or_else(|e| e.into_inner());
        sw.jobs().map(|(p, _)| p.slot_base..p.slot_base + u32::from(p.job.slots)).collect()
    }
}

/// Why a request is refused: a gRPC status code and a message that names the field and value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{code:?}: {message}")]
pub struct Refusal {
    /// The status code.
    pub code: Code,
    /// What was wrong, naming the field and the value.
    pub message: String,
}

/// The gRPC status codes the controller answers with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Code {
    /// A field's value is wrong (docs/controller.md §4).
    InvalidArgument,
    /// The peer may not do this (§5).
    PermissionDenied,
    /// The rank is registered with another address.
    AlreadyExists,
    /// The switch cannot take the job (slots, jobs, ports shared with another job).
    ResourceExhausted,
    /// No such session, or the caller is not one of its ranks.
    NotFound,
}

fn refuse(code: Code, message: impl Into<String>) -> Refusal {
    Refusal { code, message: message.into() }
}

/// Who asks: the peer's address and the token its metadata carries.
#[derive(Debug, Clone)]
pub struct Caller {
    /// The TCP peer.
    pub peer: IpAddr,
    /// The `spotagg-token` metadata, if sent.
    pub token: Option<String>,
}

/// One rank of a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Member {
    ip: Ipv4Addr,
    mac: MacAddr,
}

/// A session: the `UdpSession` requests of one `session_id`.
#[derive(Debug, Clone)]
struct Session {
    n: u32,
    payload: PayloadSize,
    worker_port: u16,
    worker_ports: u16,
    lanes16: bool,
    /// The address of its rank 0 (a new session of rank 0 from there replaces this one).
    requester: Ipv4Addr,
    ranks: Vec<Option<Member>>,
    /// The job, once every rank has registered.
    job: Option<JobPlacement>,
}

/// A session as the controller sees it (for logs and tests).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionInfo {
    /// Its id.
    pub session_id: u64,
    /// Ranks registered.
    pub registered: usize,
    /// Its size, n.
    pub n: u32,
    /// Its job once complete (`job_number`, slots).
    pub job: Option<(u8, std::ops::Range<u32>)>,
}

/// The controller's sessions and the switch they configure.
pub struct Registry<S: SwitchJobs> {
    settings: Settings,
    switch: S,
    sessions: BTreeMap<u64, Session>,
    next_job_number: u8,
}

impl<S: SwitchJobs> Registry<S> {
    /// A controller of `switch` with no session.
    pub fn new(settings: Settings, switch: S) -> Registry<S> {
        Registry { settings, switch, sessions: BTreeMap::new(), next_job_number: 1 }
    }

    /// The settings.
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// Admits a caller (docs/controller.md §5): `Ok(true)` when it presented the token, `Ok(false)`
    /// when its address is allowed without one.
    pub fn authorize(&self, caller: &Caller) -> Result<bool, Refusal> {
        if let Some(t) = &caller.token {
            return match &self.settings.token {
                Some(mine) if constant_time_eq(mine.as_bytes(), t.as_bytes()) => Ok(true),
                _ => Err(refuse(Code::PermissionDenied, "metadata spotagg-token: not the controller's token")),
            };
        }
        let allowed = match caller.peer {
            IpAddr::V4(a) if self.settings.allow.is_empty() && self.settings.token.is_none() => a.is_loopback(),
            IpAddr::V4(a) => self.settings.allow.iter().any(|n| n.contains(a)),
            IpAddr::V6(a) => a.is_loopback() && self.settings.allow.is_empty() && self.settings.token.is_none(),
        };
        if allowed {
            Ok(false)
        } else {
            Err(refuse(
                Code::PermissionDenied,
                format!("peer {}: no spotagg-token and not inside --allow", caller.peer),
            ))
        }
    }

    /// `UdpSession` (docs/controller.md §4): registers a rank, completing the session (and
    /// configuring the switch with its job) when it is the n-th. Nothing changes when it is
    /// refused.
    pub fn udp_session(&mut self, caller: &Caller, r: &UdpSessionRequest) -> Result<UdpSessionResponse, Refusal> {
        let trusted = self.authorize(caller)?;
        let bad = |m: String| Err(refuse(Code::InvalidArgument, m));
        if r.num_workers == 0 || r.num_workers as usize > MAX_WORKERS {
            return bad(format!("num_workers = {}: must be 1..={MAX_WORKERS}", r.num_workers));
        }
        if r.rank >= r.num_workers {
            return bad(format!("rank = {}: must be below num_workers = {}", r.rank, r.num_workers));
        }
        let Ok(size) = PacketSize::try_from(r.packet_size) else {
            return bad(format!("packet_size = {}: not a PacketSize (0..=3)", r.packet_size));
        };
        let payload = size.payload();
        if !self.settings.payloads.contains(&payload) {
            return bad(format!(
                "packet_size = {size:?}: this switch serves {} B payloads",
                self.settings.payloads.iter().map(|p| p.bytes().to_string()).collect::<Vec<_>>().join(" or ")
            ));
        }
        let ip = proto::ipv4_from_u32(r.ipv4);
        if ip.is_unspecified() || ip.is_multicast() || ip.is_broadcast() || ip == self.settings.switch_ip {
            return bad(format!("ipv4 = {ip}: not a worker's address"));
        }
        let mac = proto::mac_from_u64(r.mac);
        if r.mac >> 48 != 0 || mac.0 == [0; 6] || mac.0[0] & 1 == 1 {
            return bad(format!("mac = {:#x}: not a unicast MAC", r.mac));
        }
        // A worker registers its own address; a peer admitted by --allow may register another
        // address inside the allowed networks (SwitchML's DPDK workers send from the NIC's
        // address, not from the one their gRPC connection leaves from).
        let allowed_addr = self.settings.allow.iter().any(|n| n.contains(ip));
        if !trusted && caller.peer != IpAddr::V4(ip) && !allowed_addr {
            return Err(refuse(
                Code::PermissionDenied,
                format!(
                    "ipv4 = {ip}: a worker registers its own address (peer {}), one inside --allow, or presents the token",
                    caller.peer
                ),
            ));
        }
        let worker_port = match r.worker_port {
            0 => self.settings.worker_port,
            p => u16::try_from(p)
                .ok()
                .filter(|p| *p != 0)
                .ok_or_else(|| refuse(Code::InvalidArgument, format!("worker_port = {p}: not a UDP port")))?,
        };
        let worker_ports = match r.worker_ports {
            0 => self.settings.worker_ports,
            p => u16::try_from(p)
                .ok()
                .filter(|p| {
                    (1..=spotagg_driver::config::MAX_WORKER_PORTS).contains(p)
                        && u32::from(worker_port) + u32::from(*p) <= 65536
                })
                .ok_or_else(|| {
                    refuse(
                        Code::InvalidArgument,
                        format!(
                            "worker_ports = {p}: must be 1..={} from worker_port {worker_port}",
                            spotagg_driver::config::MAX_WORKER_PORTS
                        ),
                    )
                })?,
        };
        if r.lanes16 && !self.settings.lanes16 {
            return bad("lanes16 = true: this switch has no 16-bit lanes".into());
        }
        let me = Member { ip, mac };
        if let Some(s) = self.sessions.get(&r.session_id) {
            if s.n != r.num_workers || s.payload != payload {
                return bad(format!(
                    "session {}: num_workers = {} / packet_size = {size:?}, but the session has {} / {:?}",
                    r.session_id,
                    r.num_workers,
                    s.n,
                    PacketSize::of(s.payload)
                ));
            }
            if s.worker_port != worker_port || s.worker_ports != worker_ports || s.lanes16 != r.lanes16 {
                return bad(format!(
                    "session {}: worker_port = {worker_port}, worker_ports = {worker_ports}, lanes16 = {}, but the session has {}, {}, {}",
                    r.session_id, r.lanes16, s.worker_port, s.worker_ports, s.lanes16
                ));
            }
            match s.ranks[r.rank as usize] {
                Some(m) if m == me => return Ok(self.answer(r.session_id)),
                Some(m) => {
                    return Err(refuse(
                        Code::AlreadyExists,
                        format!(
                            "session {} rank {}: registered by {} / {}, not {ip} / {mac}",
                            r.session_id, r.rank, m.ip, m.mac
                        ),
                    ))
                }
                None => {}
            }
            if let Some(q) = s.ranks.iter().position(|m| m.is_some_and(|m| m.ip == ip)) {
                return bad(format!("ipv4 = {ip}: rank {q} of session {} has it (one rank per address)", r.session_id));
            }
        } else {
            if r.rank == 0 {
                // Rank 0 clears its earlier sessions (SwitchML's controller does so).
                let old: Vec<u64> = self.sessions.iter().filter(|(_, s)| s.requester == ip).map(|(k, _)| *k).collect();
                for k in old {
                    self.end(k);
                }
            }
            self.sessions.insert(
                r.session_id,
                Session {
                    n: r.num_workers,
                    payload,
                    worker_port,
                    worker_ports,
                    lanes16: r.lanes16,
                    requester: ip,
                    ranks: vec![None; r.num_workers as usize],
                    job: None,
                },
            );
        }
        let s = self.sessions.get_mut(&r.session_id).expect("inserted above");
        if r.rank == 0 {
            s.requester = ip;
        }
        s.ranks[r.rank as usize] = Some(me);
        if s.ranks.iter().all(Option::is_some) {
            if let Err(e) = self.complete(r.session_id) {
                let s = self.sessions.get_mut(&r.session_id).expect("present");
                s.ranks[r.rank as usize] = None;
                if s.ranks.iter().all(Option::is_none) {
                    self.sessions.remove(&r.session_id);
                }
                return Err(e);
            }
        }
        Ok(self.answer(r.session_id))
    }

    /// Makes a complete session's job and gives it to the switch.
    fn complete(&mut self, id: u64) -> Result<(), Refusal> {
        let s = &self.sessions[&id];
        let capacity = self.switch.capacity();
        let mut used: Vec<std::ops::Range<u32>> = self
            .sessions
            .values()
            .filter_map(|s| s.job.as_ref())
            .map(|p| p.slot_base..p.slot_base + u32::from(p.job.slots))
            .collect();
        used.extend(self.switch.taken());
        let (base, len) = free_range(&used, capacity, u32::from(self.settings.slots_per_session)).ok_or_else(|| {
            refuse(Code::ResourceExhausted, format!("session {id}: no free slots of the switch's {capacity}"))
        })?;
        let in_use: Vec<u8> = self.sessions.values().filter_map(|s| s.job.as_ref()).map(|p| p.job.job_number).collect();
        let mut number = self.next_job_number;
        while in_use.contains(&number) {
            number = number.wrapping_add(1);
        }
        let mut job = JobConfig::example(s.n as usize, s.payload, len as u16);
        // Our workers keep at most 128 packets in flight (SwitchML's keep their own count).
        job.window = job.slots.min(128);
        job.switch_mac = self.settings.switch_mac;
        job.switch_ip = self.settings.switch_ip;
        job.workers =
            s.ranks.iter().map(|m| m.expect("complete")).map(|m| WorkerEntry { ip: m.ip, mac: m.mac }).collect();
        job.switch_port = self.settings.switch_port;
        job.switch_ports = self.settings.switch_ports;
        job.worker_port = s.worker_port;
        job.worker_ports = s.worker_ports;
        job.zero_ip_checksum = true;
        job.lanes16 = s.lanes16;
        job.job_number = number;
        job.sessions = false;
        // Through the job file's own checks: what the answer's job_toml says is what was built.
        let job = JobConfig::from_toml(&job.to_toml())
            .map_err(|e| refuse(Code::InvalidArgument, format!("session {id}: the job is not valid: {}", e.0)))?;
        let placement = JobPlacement { job, slot_base: base };
        self.switch.add(placement.clone()).map_err(|e| {
            refuse(Code::ResourceExhausted, format!("session {id}: the switch cannot take the job: {e}"))
        })?;
        self.next_job_number = number.wrapping_add(1);
        self.sessions.get_mut(&id).expect("present").job = Some(placement);
        Ok(())
    }

    /// The answer to a rank of session `id`.
    fn answer(&self, id: u64) -> UdpSessionResponse {
        let s = &self.sessions[&id];
        UdpSessionResponse {
            session_id: id,
            mac: proto::mac_to_u64(self.settings.switch_mac),
            ipv4: proto::ipv4_to_u32(self.settings.switch_ip),
            switch_port: u32::from(self.settings.switch_port),
            job_toml: s.job.as_ref().map(|p| p.job.to_toml()).unwrap_or_default(),
        }
    }

    /// `EndSession`: rank `rank` of session `id` ends it (its slots and job are freed).
    pub fn end_session(&mut self, caller: &Caller, id: u64, rank: u32) -> Result<(), Refusal> {
        let trusted = self.authorize(caller)?;
        let s = self
            .sessions
            .get(&id)
            .ok_or_else(|| refuse(Code::NotFound, format!("session_id = {id}: no such session")))?;
        let member = s.ranks.get(rank as usize).copied().flatten();
        match member {
            None => return Err(refuse(Code::NotFound, format!("session {id}: rank = {rank} is not registered"))),
            Some(m) if !trusted && caller.peer != IpAddr::V4(m.ip) => {
                return Err(refuse(
                    Code::PermissionDenied,
                    format!("session {id} rank {rank}: registered from {}, not from peer {}", m.ip, caller.peer),
                ))
            }
            Some(_) => {}
        }
        self.end(id);
        Ok(())
    }

    /// Ends every complete session whose job has been idle for the settings' `session_timeout`
    /// (docs/controller.md §4); returns their ids.
    pub fn expire(&mut self) -> Vec<u64> {
        let limit = self.settings.session_timeout.as_micros() as u64;
        if limit == 0 {
            return Vec::new();
        }
        let idle: Vec<u64> = self
            .sessions
            .iter()
            .filter(|(_, s)| s.job.as_ref().and_then(|p| self.switch.idle_us(p.slot_base)).is_some_and(|t| t >= limit))
            .map(|(id, _)| *id)
            .collect();
        for id in &idle {
            self.end(*id);
        }
        idle
    }

    /// Ends a session, freeing its job.
    fn end(&mut self, id: u64) {
        if let Some(s) = self.sessions.remove(&id) {
            if let Some(p) = s.job {
                self.switch.remove(p.slot_base);
            }
        }
    }

    /// The sessions, by id.
    pub fn sessions(&self) -> Vec<SessionInfo> {
        self.sessions
            .iter()
            .map(|(id, s)| SessionInfo {
                session_id: *id,
                registered: s.ranks.iter().flatten().count(),
                n: s.n,
                job: s.job.as_ref().map(|p| (p.job.job_number, p.slot_base..p.slot_base + u32::from(p.job.slots))),
            })
            .collect()
    }

    /// The switch.
    pub fn switch(&self) -> &S {
        &self.switch
    }
}

/// The first free range of `want` slots (or, if none, the largest free range) in `0..capacity`
/// outside `used`.
fn free_range(used: &[std::ops::Range<u32>], capacity: u32, want: u32) -> Option<(u32, u32)> {
    let mut used = used.to_vec();
    used.sort_by_key(|r| r.start);
    let mut gaps = Vec::new();
    let mut at = 0;
    for r in &used {
        if r.start > at {
            gaps.push((at, r.start - at));
        }
        at = at.max(r.end);
    }
    if capacity > at {
        gaps.push((at, capacity - at));
    }
    gaps.iter()
        .find(|g| g.1 >= want)
        .map(|g| (g.0, want))
        .or_else(|| gaps.iter().max_by_key(|g| g.1).copied())
        .map(|(b, l)| (b, l.min(u32::from(u16::MAX))))
}

/// Compares two secrets in time independent of where they differ.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0, |d, (x, y)| d | (x ^ y)) == 0
}
