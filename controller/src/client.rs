//! A worker's side of docs/controller.md §7: SwitchML's sequence of calls, after which the
//! worker has its job without a job file.
//!
//! 1. rank 0 draws a random session id and broadcasts it (`Sync/Broadcast`, root 0);
//! 2. rank 0 registers (`Session/UdpSession`), then every rank waits in a `Barrier`;
//! 3. the other ranks register, and every rank waits in a second `Barrier` (scoped to the
//!    session), which returns once the session is complete and its job configured;
//! 4. a rank that was answered before the job existed asks again (a retry changes nothing) and
//!    takes the job from the answer's `job_toml`.

use crate::generated::{session_client::SessionClient, sync_client::SyncClient};
use crate::proto::{self, BarrierRequest, BroadcastRequest, PacketSize, UdpSessionRequest};
use spotagg_driver::wire::{Ipv4Addr, MacAddr, PayloadSize};
use spotagg_driver::JobConfig;
use std::time::Duration;
use tonic::metadata::MetadataValue;
use tonic::transport::Channel;

/// What a worker registers.
#[derive(Debug, Clone)]
pub struct Registration {
    /// The controller, `HOST:PORT`.
    pub controller: String,
    /// `SPOTAGG_TOKEN`, sent as `spotagg-token` metadata.
    pub token: Option<String>,
    /// This worker's rank, 0..num_workers.
    pub rank: u32,
    /// Workers of the job (hosts: one worker each).
    pub num_workers: u32,
    /// The worker's IPv4 address (the switch knows its frames by it).
    pub ip: Ipv4Addr,
    /// The worker's MAC (results go to it on a board).
    pub mac: MacAddr,
    /// Payload bytes of a packet.
    pub payload: PayloadSize,
    /// The UDP port the worker sends from, the same for every worker of the job (`None`: the
    /// controller's default).
    pub worker_port: Option<u16>,
    /// 16-bit lanes (every rank must ask the same).
    pub lanes16: bool,
    /// How long to wait for the controller and the other workers.
    pub timeout: Duration,
    /// The scope of the first Broadcast, which hands rank 0's session id to the others (0:
    /// global, as SwitchML's; two jobs of the same size registering at the same moment would
    /// then be refused, `ALREADY_EXISTS`). A value the job's workers share and no other job has
    /// (Python: a hash of torch.distributed's rendezvous address) keeps them apart.
    pub scope: u64,
}

/// Why registration failed.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The controller cannot be reached or its address is wrong.
    #[error("controller {0}: {1}")]
    Connect(String, String),
    /// The controller refused a call: its status code and message.
    #[error("controller {controller}: {call} refused ({code:?}): {message}")]
    Refused {
        /// The controller.
        controller: String,
        /// The call.
        call: &'static str,
        /// The gRPC status code.
        code: tonic::Code,
        /// The controller's message (the field and value).
        message: String,
    },
    /// The other workers did not come in time.
    #[error("controller {0}: no complete session within {1:?} (are all {2} workers started?)")]
    Timeout(String, Duration, u32),
    /// The job the controller sent does not parse.
    #[error("controller {0}: its job_toml is not a job: {1}")]
    Job(String, String),
}

/// Registers with the controller and returns the job once every worker has (blocking; a
/// runtime of its own).
pub fn register(r: &Registration) -> Result<JobConfig, ClientError> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| ClientError::Connect(r.controller.clone(), e.to_string()))?;
    rt.block_on(async {
        match tokio::time::timeout(r.timeout, register_async(r)).await {
            Ok(x) => x,
            Err(_) => Err(ClientError::Timeout(r.controller.clone(), r.timeout, r.num_workers)),
        }
    })
}

fn request<T>(r: &Registration, msg: T) -> tonic::Request<T> {
    let mut q = tonic::Request::new(msg);
    if let Some(t) = &r.token {
        if let Ok(v) = MetadataValue::try_from(t.as_str()) {
            q.metadata_mut().insert("spotagg-token", v);
        }
    }
    q
}

async fn register_async(r: &Registration) -> Result<JobConfig, ClientError> {
    let uri = format!("http://{}", r.controller);
    // From the worker's own address: without the token, the controller admits a worker that
    // registers the address it connects from (docs/controller.md §5).
    let channel = Channel::from_shared(uri.clone())
        .map_err(|e| ClientError::Connect(r.controller.clone(), e.to_string()))?
        .local_address(Some(std::net::IpAddr::V4(r.ip)))
        .connect()
        .await
        .map_err(|e| ClientError::Connect(r.controller.clone(), format!("{e}: {:?}", std::error::Error::source(&e))))?;
    let refused = |call: &'static str| {
        let c = r.controller.clone();
        move |s: tonic::Status| ClientError::Refused {
            controller: c,
            call,
            code: s.code(),
            message: s.message().to_string(),
        }
    };
    let mut sync = SyncClient::new(channel.clone());
    let mut session = SessionClient::new(channel);
    let n = r.num_workers;
    let mine = if r.rank == 0 { rand::random::<u64>() | 1 } else { 0 };
    let id = sync
        .broadcast(request(
            r,
            BroadcastRequest { value: mine, rank: r.rank, num_workers: n, root: 0, session_id: r.scope },
        ))
        .await
        .map_err(refused("Broadcast"))?
        .into_inner()
        .value;
    let ask = UdpSessionRequest {
        session_id: id,
        rank: r.rank,
        num_workers: n,
        mac: proto::mac_to_u64(r.mac),
        ipv4: proto::ipv4_to_u32(r.ip),
        packet_size: PacketSize::of(r.payload) as i32,
        worker_port: r.worker_port.map_or(0, u32::from),
        worker_ports: if r.worker_port.is_some() { 1 } else { 0 },
        lanes16: r.lanes16,
    };
    let barrier = BarrierRequest { num_workers: n, session_id: id };
    let mut answer = None;
    if r.rank == 0 {
        answer = Some(session.udp_session(request(r, ask.clone())).await.map_err(refused("UdpSession"))?.into_inner());
    }
    sync.barrier(request(r, barrier.clone())).await.map_err(refused("Barrier"))?;
    if r.rank != 0 {
        answer = Some(session.udp_session(request(r, ask.clone())).await.map_err(refused("UdpSession"))?.into_inner());
    }
    sync.barrier(request(r, barrier)).await.map_err(refused("Barrier"))?;
    let mut answer = answer.expect("registered above");
    if answer.job_toml.is_empty() {
        answer = session.udp_session(request(r, ask)).await.map_err(refused("UdpSession"))?.into_inner();
    }
    JobConfig::from_toml(&answer.job_toml).map_err(|e| ClientError::Job(r.controller.clone(), e.0))
}

/// The MAC of the interface that has `ip` (its sysfs address), or the locally administered
/// 02:00 and `ip` where there is none (loopback).
pub fn mac_of(ip: Ipv4Addr) -> MacAddr {
    let o = ip.octets();
    let fallback = MacAddr([0x02, 0x00, o[0], o[1], o[2], o[3]]);
    let mut addrs: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs fills a list that freeifaddrs releases; every entry is read before that.
    unsafe {
        if libc::getifaddrs(&mut addrs) != 0 {
            return fallback;
        }
        let mut name = None;
        let mut p = addrs;
        while !p.is_null() {
            let a = (*p).ifa_addr;
            if !a.is_null() && i32::from((*a).sa_family) == libc::AF_INET {
                let sin = &*(a as *const libc::sockaddr_in);
                if u32::from_be(sin.sin_addr.s_addr) == u32::from(ip) {
                    name = Some(std::ffi::CStr::from_ptr((*p).ifa_name).to_string_lossy().into_owned());
                    break;
                }
            }
            p = (*p).ifa_next;
        }
        libc::freeifaddrs(addrs);
        name.and_then(|n| std::fs::read_to_string(format!("/sys/class/net/{n}/address")).ok())
            .and_then(|t| t.trim().parse().ok())
            .filter(|m: &MacAddr| m.0 != [0; 6])
            .unwrap_or(fallback)
    }
}
