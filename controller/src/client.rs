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
        .broadcast(request(r, BroadcastRequest { value: mine, rank: r.rank, num_workers: n, root: 0, session_id: 0 }))
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
