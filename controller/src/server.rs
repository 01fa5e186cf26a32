//! The gRPC services over a [`Registry`] and a [`Sync`](crate::sync::Sync): SwitchML's
//! `switchml_proto.Session` and `switchml_proto.Sync`, and spotagg's `spotagg_proto.Control`
//! (docs/controller.md). Every refusal is logged on stderr with the peer, the session, the rank
//! and the reason.

use crate::generated::{control_server, session_server, sync_server};
use crate::proto::*;
use crate::registry::{Caller, Code, Refusal, Registry, SwitchJobs};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex};
use tonic::{Request, Response, Status};

/// The controller's services, sharing one registry.
pub struct Controller<S: SwitchJobs + 'static> {
    registry: Arc<Mutex<Registry<S>>>,
    sync: crate::sync::Sync,
}

impl<S: SwitchJobs + 'static> Clone for Controller<S> {
    fn clone(&self) -> Self {
        Controller { registry: self.registry.clone(), sync: self.sync.clone() }
    }
}

fn caller<T>(r: &Request<T>) -> Caller {
    Caller {
        peer: r.remote_addr().map(|a| a.ip()).unwrap_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED)),
        token: r.metadata().get("spotagg-token").and_then(|v| v.to_str().ok()).map(str::to_string),
    }
}

fn status(r: Refusal) -> Status {
    match r.code {
        Code::InvalidArgument => Status::invalid_argument(r.message),
        Code::PermissionDenied => Status::permission_denied(r.message),
        Code::AlreadyExists => Status::already_exists(r.message),
        Code::ResourceExhausted => Status::resource_exhausted(r.message),
        Code::NotFound => Status::not_found(r.message),
    }
}

fn log_refusal(what: &str, c: &Caller, session: u64, rank: u32, r: &Refusal) {
    eprintln!("spotagg controller: {what} refused: peer {}, session {session}, rank {rank}: {r}", c.peer);
}

impl<S: SwitchJobs + 'static> Controller<S> {
    /// The services over `registry`.
    pub fn new(registry: Registry<S>) -> Controller<S> {
        Controller { registry: Arc::new(Mutex::new(registry)), sync: crate::sync::Sync::default() }
    }

    /// The registry (for the switch's logs and tests).
    pub fn registry(&self) -> Arc<Mutex<Registry<S>>> {
        self.registry.clone()
    }

    fn reg(&self) -> std::sync::MutexGuard<'_, Registry<S>> {
        self.registry.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Serves the three services on `listener` until `shutdown` resolves.
    pub async fn serve(
        self,
        listener: tokio::net::TcpListener,
        shutdown: impl std::future::Future<Output = ()> + Send,
    ) -> Result<(), tonic::transport::Error> {
        // Sessions idle for their timeout end (docs/controller.md §4), checked every second.
        let registry = self.registry.clone();
        let expiry = tokio::spawn(async move {
            let mut tick = tokio::time::interval(std::time::Duration::from_secs(1));
            loop {
                tick.tick().await;
                let ended = registry.lock().unwrap_or_else(|e| e.into_inner()).expire();
                for id in ended {
                    eprintln!("spotagg controller: session {id} ended: no frame from its workers for its timeout");
                }
            }
        });
        let served = tonic::transport::Server::builder()
            .add_service(session_server::SessionServer::new(self.clone()))
            .add_service(sync_server::SyncServer::new(self.clone()))
            .add_service(control_server::ControlServer::new(self))
            .serve_with_incoming_shutdown(tokio_stream::wrappers::TcpListenerStream::new(listener), shutdown)
            .await;
        expiry.abort();
        served
    }

    /// Serves on `addr` in a thread of its own (a single-threaded runtime) until `stop` is set;
    /// returns the address it listens on (the port the system chose for `:0`).
    pub fn spawn(
        self,
        addr: SocketAddr,
        stop: Arc<std::sync::atomic::AtomicBool>,
    ) -> std::io::Result<(SocketAddr, std::thread::JoinHandle<()>)> {
        let std_listener = std::net::TcpListener::bind(addr)?;
        std_listener.set_nonblocking(true)?;
        let local = std_listener.local_addr()?;
        let handle = std::thread::Builder::new().name("spotagg-controller".into()).spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a tokio runtime");
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(std_listener).expect("a listener in the runtime");
                let shutdown = async move {
                    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                    }
                };
                if let Err(e) = self.serve(listener, shutdown).await {
                    eprintln!("spotagg controller: {e}");
                }
            });
        })?;
        Ok((local, handle))
    }
}

#[tonic::async_trait]
impl<S: SwitchJobs + 'static> session_server::Session for Controller<S> {
    async fn rdma_session(&self, _r: Request<RdmaSessionRequest>) -> Result<Response<RdmaSessionResponse>, Status> {
        Err(Status::unimplemented("spotagg serves SwitchML's UDP protocol only"))
    }

    async fn udp_session(&self, r: Request<UdpSessionRequest>) -> Result<Response<UdpSessionResponse>, Status> {
        let c = caller(&r);
        let req = r.into_inner();
        let mut reg = self.reg();
        let before = reg.sessions().iter().filter(|s| s.job.is_some()).count();
        match reg.udp_session(&c, &req) {
            Ok(a) => {
                if let Some(s) = reg.sessions().iter().find(|s| s.session_id == req.session_id && s.job.is_some()) {
                    if reg.sessions().iter().filter(|s| s.job.is_some()).count() > before {
                        let (number, slots) = s.job.clone().expect("complete");
                        eprintln!(
                            "spotagg controller: session {} complete: {} workers, job_number {number}, slots {}..{}",
                            s.session_id, s.n, slots.start, slots.end
                        );
                    }
                }
                Ok(Response::new(a))
            }
            Err(e) => {
                log_refusal("UdpSession", &c, req.session_id, req.rank, &e);
                Err(status(e))
            }
        }
    }
}

#[tonic::async_trait]
impl<S: SwitchJobs + 'static> sync_server::Sync for Controller<S> {
    async fn barrier(&self, r: Request<BarrierRequest>) -> Result<Response<BarrierResponse>, Status> {
        let c = caller(&r);
        let req = r.into_inner();
        let check = self.reg().authorize(&c).and_then(|_| {
            if (1..=spotagg_driver::config::MAX_WORKERS as u32).contains(&req.num_workers) {
                Ok(())
            } else {
                Err(Refusal {
                    code: Code::InvalidArgument,
                    message: format!(
                        "num_workers = {}: must be 1..={}",
                        req.num_workers,
                        spotagg_driver::config::MAX_WORKERS
                    ),
                })
            }
        });
        if let Err(e) = check {
            log_refusal("Barrier", &c, req.session_id, 0, &e);
            return Err(status(e));
        }
        self.sync.barrier(req.session_id, req.num_workers).await;
        Ok(Response::new(BarrierResponse {}))
    }

    async fn broadcast(&self, r: Request<BroadcastRequest>) -> Result<Response<BroadcastResponse>, Status> {
        let c = caller(&r);
        let req = r.into_inner();
        let check = self.reg().authorize(&c).and_then(|_| {
            let n = req.num_workers;
            let max = spotagg_driver::config::MAX_WORKERS as u32;
            let bad = |message| Err(Refusal { code: Code::InvalidArgument, message });
            if !(1..=max).contains(&n) {
                bad(format!("num_workers = {n}: must be 1..={max}"))
            } else if req.rank >= n || req.root >= n {
                bad(format!("rank = {}, root = {}: must be below num_workers = {n}", req.rank, req.root))
            } else {
                Ok(())
            }
        });
        if let Err(e) = check {
            log_refusal("Broadcast", &c, req.session_id, req.rank, &e);
            return Err(status(e));
        }
        let value = self.sync.broadcast(req.session_id, req.num_workers, req.rank, req.root, req.value).await;
        Ok(Response::new(BroadcastResponse { value }))
    }
}

#[tonic::async_trait]
impl<S: SwitchJobs + 'static> control_server::Control for Controller<S> {
    async fn end_session(&self, r: Request<EndSessionRequest>) -> Result<Response<EndSessionResponse>, Status> {
        let c = caller(&r);
        let req = r.into_inner();
        match self.reg().end_session(&c, req.session_id, req.rank) {
            Ok(()) => {
                eprintln!("spotagg controller: session {} ended by rank {} ({})", req.session_id, req.rank, c.peer);
                Ok(Response::new(EndSessionResponse {}))
            }
            Err(e) => {
                log_refusal("EndSession", &c, req.session_id, req.rank, &e);
                Err(status(e))
            }
        }
    }
}
