//! The controller over gRPC on loopback (docs/controller.md §3, §4, §7): tonic clients call a
//! served `Controller`; Barrier, Broadcast and the registration sequence of our workers.

use spotagg_controller::client::{register, Registration};
use spotagg_controller::generated::{session_client::SessionClient, sync_client::SyncClient};
use spotagg_controller::proto::*;
use spotagg_controller::registry::{Registry, Settings};
use spotagg_controller::server::Controller;
use spotagg_driver::wire::{Ipv4Addr, MacAddr, PayloadSize};
use spotagg_spec::multi_job::{MultiSwitch, SharedSwitch};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

struct Served {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
    switch: SharedSwitch,
}

impl Drop for Served {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn serve() -> Served {
    let mac = MacAddr([0x02, 0, 0x5a, 0, 0, 1]);
    let ip = Ipv4Addr::new(127, 0, 0, 1);
    let switch = SharedSwitch(Arc::new(Mutex::new(MultiSwitch::empty(mac, ip, 1024))));
    let stop = Arc::new(AtomicBool::new(false));
    let c = Controller::new(Registry::new(Settings::new(mac, ip), switch.clone()));
    let (addr, thread) = c.spawn("127.0.0.1:0".parse().unwrap(), stop.clone()).unwrap();
    Served { addr, stop, thread: Some(thread), switch }
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap()
}

async fn channel(addr: SocketAddr) -> tonic::transport::Channel {
    tonic::transport::Channel::from_shared(format!("http://{addr}")).unwrap().connect().await.unwrap()
}

async fn sync_client(addr: SocketAddr) -> SyncClient<tonic::transport::Channel> {
    SyncClient::new(channel(addr).await)
}

#[test]
fn barrier_returns_when_the_last_caller_arrives_and_forgets_one_that_left() {
    let s = serve();
    rt().block_on(async {
        let mut a = sync_client(s.addr).await;
        // A caller that gives up (its call dropped after 200 ms) is taken out of the count.
        let left = tokio::time::timeout(
            Duration::from_millis(200),
            a.barrier(BarrierRequest { num_workers: 2, session_id: 0 }),
        )
        .await;
        assert!(left.is_err(), "a barrier of 2 returned with one caller");
        tokio::time::sleep(Duration::from_millis(100)).await;
        let (mut b, mut c) = (sync_client(s.addr).await, sync_client(s.addr).await);
        let one = b.barrier(BarrierRequest { num_workers: 2, session_id: 0 });
        let two = c.barrier(BarrierRequest { num_workers: 2, session_id: 0 });
        let (x, y) =
            tokio::time::timeout(Duration::from_secs(5), async { tokio::join!(one, two) }).await.expect("both return");
        x.unwrap();
        y.unwrap();
        // Scoped by session: a caller of another session does not complete this one's.
        let mut d = sync_client(s.addr).await;
        let mut e = sync_client(s.addr).await;
        let p = d.barrier(BarrierRequest { num_workers: 2, session_id: 7 });
        let q = e.barrier(BarrierRequest { num_workers: 2, session_id: 8 });
        assert!(tokio::time::timeout(Duration::from_millis(300), async { tokio::join!(p, q) }).await.is_err());
        let bad = d.barrier(BarrierRequest { num_workers: 0, session_id: 0 }).await.unwrap_err();
        assert_eq!(bad.code(), tonic::Code::InvalidArgument, "{bad}");
    });
}

#[test]
fn broadcast_gives_every_rank_the_root_s_value_in_call_order() {
    let s = serve();
    rt().block_on(async {
        let mut cs = Vec::new();
        for _ in 0..3 {
            cs.push(sync_client(s.addr).await);
        }
        let mut calls = Vec::new();
        for (rank, mut c) in cs.into_iter().enumerate() {
            calls.push(tokio::spawn(async move {
                let mut got = Vec::new();
                for op in 0..3u64 {
                    let value = 1000 * op + rank as u64;
                    let r = BroadcastRequest {
                        value,
                        rank: rank as u32,
                        num_workers: 3,
                        root: (op % 3) as u32,
                        session_id: 0,
                    };
                    got.push(c.broadcast(r).await.unwrap().into_inner().value);
                }
                got
            }));
        }
        for c in calls {
            let got = tokio::time::timeout(Duration::from_secs(5), c).await.expect("no broadcast hangs").unwrap();
            // Operation k's root is rank k: its value is 1000 k + k.
            assert_eq!(got, vec![0, 1001, 2002]);
        }
        let mut c = sync_client(s.addr).await;
        let bad = c.broadcast(BroadcastRequest { value: 1, rank: 3, num_workers: 3, root: 0, session_id: 0 }).await;
        assert_eq!(bad.unwrap_err().code(), tonic::Code::InvalidArgument);
    });
}

#[test]
fn rdma_sessions_are_unimplemented_and_refusals_carry_their_reason() {
    let s = serve();
    rt().block_on(async {
        let mut c = SessionClient::new(channel(s.addr).await);
        let e = c.rdma_session(RdmaSessionRequest::default()).await.unwrap_err();
        assert_eq!(e.code(), tonic::Code::Unimplemented);
        assert!(e.message().contains("UDP protocol only"), "{e}");
        let q = UdpSessionRequest { session_id: 1, rank: 0, num_workers: 0, ..Default::default() };
        let e = c.udp_session(q).await.unwrap_err();
        assert_eq!(e.code(), tonic::Code::InvalidArgument);
        assert!(e.message().contains("num_workers = 0"), "{e}");
    });
}

/// Three workers run the registration sequence at once, each from its own loopback address:
/// one job, the same for all, now a job of the switch.
#[test]
fn workers_register_and_all_get_the_same_job() {
    let s = serve();
    let handles: Vec<_> = (0..3u8)
        .map(|rank| {
            let reg = Registration {
                controller: s.addr.to_string(),
                token: None,
                rank: u32::from(rank),
                num_workers: 3,
                ip: Ipv4Addr::new(127, 0, 0, 150 + rank),
                mac: MacAddr([0x02, 0, 0x7f, 0, 0, 150 + rank]),
                payload: PayloadSize::B512,
                worker_port: Some(4100),
                lanes16: true,
                timeout: Duration::from_secs(20),
                scope: 0,
            };
            std::thread::spawn(move || register(&reg))
        })
        .collect();
    let jobs: Vec<_> = handles.into_iter().map(|h| h.join().unwrap().expect("registered")).collect();
    assert!(jobs.iter().all(|j| *j == jobs[0]), "{jobs:?}");
    let j = &jobs[0];
    assert_eq!((j.n(), j.payload, j.worker_port, j.worker_ports, j.lanes16), (3, PayloadSize::B512, 4100, 1, true));
    assert_eq!(j.workers[2].ip, Ipv4Addr::new(127, 0, 0, 152));
    let sw = s.switch.0.lock().unwrap();
    assert_eq!(sw.jobs().map(|(p, _)| (p.slot_base, p.job.clone())).collect::<Vec<_>>(), vec![(0, j.clone())]);
}

/// A worker whose peers never come gives up with the error that says so.
#[test]
fn registration_times_out_naming_the_missing_workers() {
    let s = serve();
    let reg = Registration {
        controller: s.addr.to_string(),
        token: None,
        rank: 0,
        num_workers: 2,
        ip: Ipv4Addr::new(127, 0, 0, 160),
        mac: MacAddr([0x02, 0, 0x7f, 0, 0, 160]),
        payload: PayloadSize::B256,
        worker_port: None,
        lanes16: false,
        timeout: Duration::from_millis(500),
        scope: 0,
    };
    let e = register(&reg).unwrap_err().to_string();
    assert!(e.contains("no complete session within 500ms (are all 2 workers started?)"), "{e}");
}
