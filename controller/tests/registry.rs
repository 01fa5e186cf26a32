//! The controller's sessions (docs/controller.md §4, §5) without a socket: a `Registry` over the
//! reference switch of several jobs, every refusal checked to leave the running session and the
//! switch as they were. And the messages' bytes (§2, §6): literals as protobuf writes them
//! (fields in number order, zero values left out), decoded field for field.

use prost::Message;
use spotagg_controller::proto::*;
use spotagg_controller::registry::{Caller, Code, Ipv4Net, Registry, SessionInfo, Settings};
use spotagg_driver::wire::{Ipv4Addr, MacAddr};
use spotagg_driver::Engine;
use spotagg_spec::multi_job::{MultiSwitch, SharedSwitch};
use std::net::IpAddr;
use std::sync::{Arc, Mutex};

const SWITCH_IP: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);

/// Settings of the tests: the defaults but 64 slots a session (512 by default).
fn settings() -> Settings {
    let mut s = Settings::new(MacAddr([0x02, 0, 0x5a, 0, 0, 1]), SWITCH_IP);
    assert_eq!(s.slots_per_session, 512, "the default, SwitchML's 448 and a margin");
    s.slots_per_session = 64;
    s
}

fn registry(capacity: u32) -> Registry<SharedSwitch> {
    let s = settings();
    let sw = SharedSwitch(Arc::new(Mutex::new(MultiSwitch::empty(s.switch_mac, SWITCH_IP, capacity))));
    Registry::new(s, sw)
}

fn ip(host: u8) -> Ipv4Addr {
    Ipv4Addr::new(10, 0, 0, host)
}

/// A worker at 10.0.0.host calling from its own address.
fn from(host: u8) -> Caller {
    Caller { peer: IpAddr::V4(ip(host)), token: None }
}

fn ask(session: u64, rank: u32, n: u32, host: u8) -> UdpSessionRequest {
    UdpSessionRequest {
        session_id: session,
        rank,
        num_workers: n,
        mac: 0x0200_5a00_0100 | u64::from(host),
        ipv4: ipv4_to_u32(ip(host)),
        packet_size: PacketSize::Mtu256 as i32,
        ..Default::default()
    }
}

/// A controller that admits the workers of 10.0.0.0/24 without a token.
fn open() -> Registry<SharedSwitch> {
    let mut s = settings();
    s.allow = vec!["10.0.0.0/24".parse().unwrap()];
    let sw = SharedSwitch(Arc::new(Mutex::new(MultiSwitch::empty(s.switch_mac, SWITCH_IP, 256))));
    Registry::new(s, sw)
}

fn jobs(r: &Registry<SharedSwitch>) -> Vec<(u8, u32, usize)> {
    let sw = r.switch().0.lock().unwrap();
    sw.jobs().map(|(p, _)| (p.job.job_number, p.slot_base, p.job.n())).collect()
}

#[test]
fn ranks_in_any_order_with_retries_complete_one_job() {
    let mut r = open();
    let order = [2u32, 0, 3, 0, 2, 1];
    let mut answers = Vec::new();
    for &k in &order {
        let a = r.udp_session(&from(10 + k as u8), &ask(77, k, 4, 10 + k as u8)).unwrap();
        assert_eq!((a.session_id, a.mac, a.ipv4, a.switch_port), (77, 0x0200_5a00_0001, 0x0a00_0001, 0xBEE0));
        answers.push(a);
    }
    // Only the answer that completed the session (the last) carries the job.
    assert!(answers[..5].iter().all(|a| a.job_toml.is_empty()), "{answers:?}");
    let job = spotagg_driver::JobConfig::from_toml(&answers[5].job_toml).unwrap();
    assert_eq!(job.n(), 4);
    assert_eq!(job.workers.iter().map(|w| w.ip).collect::<Vec<_>>(), vec![ip(10), ip(11), ip(12), ip(13)]);
    assert_eq!(job.workers[3].mac, MacAddr([0x02, 0, 0x5a, 0, 0x01, 13]));
    assert_eq!((job.worker_port, job.worker_ports, job.slots, job.zero_ip_checksum), (4000, 16, 64, true));
    assert_eq!((job.switch_ip, job.sessions, job.lanes16), (SWITCH_IP, false, false));
    assert_eq!(jobs(&r), vec![(1, 0, 4)]);
    // A retry after completion is answered again, with the job, and changes nothing.
    let again = r.udp_session(&from(11), &ask(77, 1, 4, 11)).unwrap();
    assert_eq!(again.job_toml, answers[5].job_toml);
    assert_eq!(jobs(&r), vec![(1, 0, 4)]);
}

#[test]
fn every_refusal_leaves_the_running_session_unharmed() {
    let mut r = open();
    r.udp_session(&from(10), &ask(5, 0, 2, 10)).unwrap();
    r.udp_session(&from(11), &ask(5, 1, 2, 11)).unwrap();
    let before = (r.sessions(), jobs(&r));
    let mut bad = Vec::new();
    let mut q = ask(6, 0, 0, 20);
    bad.push((q.clone(), Code::InvalidArgument, "num_workers = 0"));
    q.num_workers = 33;
    bad.push((q.clone(), Code::InvalidArgument, "num_workers = 33"));
    let q = ask(6, 2, 2, 20);
    bad.push((q, Code::InvalidArgument, "rank = 2"));
    let mut q = ask(5, 1, 3, 20);
    bad.push((q.clone(), Code::InvalidArgument, "session 5: num_workers = 3"));
    q.num_workers = 2;
    q.packet_size = PacketSize::Mtu1024 as i32;
    bad.push((q, Code::InvalidArgument, "packet_size = Mtu1024"));
    let mut q = ask(6, 0, 2, 20);
    q.packet_size = 9;
    bad.push((q, Code::InvalidArgument, "packet_size = 9"));
    let mut q = ask(6, 0, 2, 20);
    q.mac = 0x0100_5e00_0001;
    bad.push((q.clone(), Code::InvalidArgument, "mac = 0x1005e000001"));
    q.mac = 0;
    bad.push((q, Code::InvalidArgument, "mac = 0x0"));
    // A rank taken by another address.
    bad.push((ask(5, 1, 2, 20), Code::AlreadyExists, "session 5 rank 1: registered by 10.0.0.11"));
    // The switch's own address.
    let mut q = ask(6, 0, 2, 1);
    q.ipv4 = ipv4_to_u32(SWITCH_IP);
    bad.push((q, Code::InvalidArgument, "ipv4 = 10.0.0.1"));
    for (q, code, words) in bad {
        let host = ipv4_from_u32(q.ipv4).octets()[3];
        let e = r.udp_session(&from(host), &q).unwrap_err();
        assert_eq!(e.code, code, "{q:?}: {e}");
        assert!(e.message.contains(words), "{q:?}: {e}");
        assert_eq!((r.sessions(), jobs(&r)), before, "{q:?} changed something");
    }
    // A worker registering an address outside the allowed networks, a peer from outside them,
    // a wrong token.
    let mut q = ask(6, 0, 2, 21);
    q.ipv4 = ipv4_to_u32(Ipv4Addr::new(192, 168, 1, 21));
    let e = r.udp_session(&from(20), &q).unwrap_err();
    assert_eq!(e.code, Code::PermissionDenied, "{e}");
    assert!(e.message.contains("a worker registers its own address (peer 10.0.0.20), one inside --allow"), "{e}");
    let outside = Caller { peer: IpAddr::V4(Ipv4Addr::new(192, 168, 1, 9)), token: None };
    let mut q = ask(6, 0, 2, 9);
    q.ipv4 = ipv4_to_u32(Ipv4Addr::new(192, 168, 1, 9));
    assert_eq!(r.udp_session(&outside, &q).unwrap_err().code, Code::PermissionDenied);
    let wrong = Caller { peer: IpAddr::V4(ip(20)), token: Some("guess".into()) };
    assert_eq!(r.udp_session(&wrong, &ask(6, 0, 2, 20)).unwrap_err().code, Code::PermissionDenied);
    // Ending another rank's session, or one that does not exist.
    assert_eq!(r.end_session(&from(20), 5, 0).unwrap_err().code, Code::PermissionDenied);
    assert_eq!(r.end_session(&from(10), 99, 0).unwrap_err().code, Code::NotFound);
    assert_eq!((r.sessions(), jobs(&r)), before);
}

#[test]
fn two_sessions_of_different_sizes_take_disjoint_slots_and_ended_slots_are_reused() {
    let mut r = open();
    for k in 0..2 {
        r.udp_session(&from(10 + k), &ask(1, u32::from(k), 2, 10 + k)).unwrap();
    }
    for k in 0..3 {
        r.udp_session(&from(20 + k), &ask(2, u32::from(k), 3, 20 + k)).unwrap();
    }
    assert_eq!(jobs(&r), vec![(1, 0, 2), (2, 64, 3)]);
    r.end_session(&from(11), 1, 1).unwrap();
    assert_eq!(jobs(&r), vec![(2, 64, 3)]);
    for k in 0..4 {
        r.udp_session(&from(30 + k), &ask(3, u32::from(k), 4, 30 + k)).unwrap();
    }
    // The freed range 0..64 is taken again, by a new job number.
    assert_eq!(jobs(&r), vec![(2, 64, 3), (3, 0, 4)]);
    let info: Vec<SessionInfo> = r.sessions();
    assert_eq!(info.iter().map(|s| s.job.clone().unwrap().1).collect::<Vec<_>>(), vec![64..128, 0..64]);
}

#[test]
fn a_full_switch_refuses_the_last_rank_and_keeps_the_session_waiting() {
    let mut r = registry(100);
    let local = |h: u8| Caller { peer: IpAddr::V4(Ipv4Addr::new(127, 0, 0, h)), token: None };
    let ask_l = |s: u64, k: u32, n: u32, h: u8| {
        let mut q = ask(s, k, n, h);
        q.ipv4 = ipv4_to_u32(Ipv4Addr::new(127, 0, 0, h));
        q
    };
    r.udp_session(&local(10), &ask_l(1, 0, 1, 10)).unwrap();
    assert_eq!(jobs(&r), vec![(1, 0, 1)]);
    // 36 slots are left: the second session takes them all (fewer than 64).
    r.udp_session(&local(11), &ask_l(2, 0, 1, 11)).unwrap();
    assert_eq!(jobs(&r), vec![(1, 0, 1), (2, 64, 1)]);
    let e = r.udp_session(&local(12), &ask_l(3, 0, 1, 12)).unwrap_err();
    assert_eq!(e.code, Code::ResourceExhausted, "{e}");
    assert!(e.message.contains("no free slots of the switch's 100"), "{e}");
    assert_eq!(r.sessions().len(), 2);
    // Loopback peers are allowed when nothing else is set; others are not.
    let far = Caller { peer: IpAddr::V4(ip(10)), token: None };
    assert_eq!(r.udp_session(&far, &ask(4, 0, 1, 10)).unwrap_err().code, Code::PermissionDenied);
}

#[test]
fn the_token_admits_any_peer_for_any_address() {
    let mut s = settings();
    s.token = Some("s3cret".into());
    let sw = SharedSwitch(Arc::new(Mutex::new(MultiSwitch::empty(s.switch_mac, SWITCH_IP, 256))));
    let mut r = Registry::new(s, sw);
    let with = Caller { peer: IpAddr::V4(Ipv4Addr::new(192, 168, 7, 7)), token: Some("s3cret".into()) };
    r.udp_session(&with, &ask(9, 0, 1, 10)).unwrap();
    assert_eq!(jobs(&r), vec![(1, 0, 1)]);
    // With a token configured, loopback without it is not enough.
    let local = Caller { peer: IpAddr::V4(Ipv4Addr::LOCALHOST), token: None };
    assert_eq!(r.end_session(&local, 9, 0).unwrap_err().code, Code::PermissionDenied);
    r.end_session(&with, 9, 0).unwrap();
    assert!(jobs(&r).is_empty());
}

#[test]
fn rank_0_of_a_new_session_replaces_its_address_s_old_one() {
    let mut r = open();
    r.udp_session(&from(10), &ask(1, 0, 2, 10)).unwrap();
    r.udp_session(&from(11), &ask(1, 1, 2, 11)).unwrap();
    assert_eq!(jobs(&r), vec![(1, 0, 2)]);
    r.udp_session(&from(10), &ask(2, 0, 2, 10)).unwrap();
    assert!(jobs(&r).is_empty(), "the old session's job is gone");
    assert_eq!(r.sessions().iter().map(|s| s.session_id).collect::<Vec<_>>(), vec![2]);
}

#[test]
fn networks_parse_and_contain() {
    let n: Ipv4Net = "10.1.0.0/16".parse().unwrap();
    assert!(n.contains(Ipv4Addr::new(10, 1, 200, 3)) && !n.contains(Ipv4Addr::new(10, 2, 0, 1)));
    assert!("0.0.0.0/0".parse::<Ipv4Net>().unwrap().contains(Ipv4Addr::new(8, 8, 8, 8)));
    assert!("10.0.0.0/33".parse::<Ipv4Net>().unwrap_err().contains("prefix length"));
    assert!("ten/8".parse::<Ipv4Net>().is_err());
}

/// SwitchML's client's `UdpSessionRequest` (session 0x5eed0001, rank 1 of 2, MAC
/// 02:00:5a:00:01:03, 10.0.0.2, MTU_256), its answer, a barrier and a broadcast.
#[test]
fn messages_are_switchml_s_bytes() {
    let req = [
        0x08, 0x81, 0x80, 0xb4, 0xf7, 0x05, 0x10, 0x01, 0x18, 0x02, 0x20, 0x83, 0x82, 0x80, 0xd0, 0x85, 0x40, 0x28,
        0x82, 0x80, 0x80, 0x50, 0x38, 0x01,
    ];
    let q = UdpSessionRequest::decode(&req[..]).unwrap();
    assert_eq!((q.session_id, q.rank, q.num_workers), (0x5eed0001, 1, 2));
    assert_eq!(mac_from_u64(q.mac), MacAddr([0x02, 0x00, 0x5a, 0x00, 0x01, 0x03]));
    assert_eq!(ipv4_from_u32(q.ipv4), Ipv4Addr::new(10, 0, 0, 2));
    assert_eq!(q.packet_size(), PacketSize::Mtu256);
    assert_eq!((q.worker_port, q.worker_ports, q.lanes16), (0, 0, false));
    assert_eq!(q.encode_to_vec(), req);
    let resp =
        [0x08, 0x81, 0x80, 0xb4, 0xf7, 0x05, 0x10, 0x81, 0x80, 0x80, 0xd0, 0x85, 0x40, 0x18, 0x81, 0x80, 0x80, 0x50];
    let a = UdpSessionResponse {
        session_id: 0x5eed0001,
        mac: mac_to_u64(MacAddr([0x02, 0x00, 0x5a, 0x00, 0x00, 0x01])),
        ipv4: ipv4_to_u32(Ipv4Addr::new(10, 0, 0, 1)),
        ..Default::default()
    };
    assert_eq!(a.encode_to_vec(), resp);
    assert_eq!(BarrierRequest::decode(&[0x08, 0x04][..]).unwrap().num_workers, 4);
    let b = BroadcastRequest::decode(&[0x08, 0x81, 0x80, 0xb4, 0xf7, 0x05, 0x10, 0x01, 0x18, 0x04][..]).unwrap();
    assert_eq!((b.value, b.rank, b.num_workers, b.root, b.session_id), (0x5eed0001, 1, 4, 0, 0));
}

/// Our extensions (numbers 100..) are skipped by a reader that knows SwitchML's fields only.
#[test]
fn extensions_are_skipped_by_a_switchml_reader() {
    #[derive(Clone, PartialEq, prost::Message)]
    struct SwitchmlUdpSessionRequest {
        #[prost(uint64, tag = "1")]
        session_id: u64,
        #[prost(uint32, tag = "2")]
        rank: u32,
        #[prost(uint32, tag = "3")]
        num_workers: u32,
        #[prost(uint64, tag = "4")]
        mac: u64,
        #[prost(uint32, tag = "5")]
        ipv4: u32,
        #[prost(enumeration = "PacketSize", tag = "7")]
        packet_size: i32,
    }
    let mut q = UdpSessionRequest { session_id: 3, rank: 0, num_workers: 1, ipv4: 7, ..Default::default() };
    q.worker_port = 4000;
    q.lanes16 = true;
    let bytes = q.encode_to_vec();
    assert!(bytes.ends_with(&[0xa0, 0x06, 0xa0, 0x1f, 0xb0, 0x06, 0x01]), "{bytes:x?}");
    let s = SwitchmlUdpSessionRequest::decode(&bytes[..]).unwrap();
    assert_eq!((s.session_id, s.num_workers, s.ipv4), (3, 1, 7));
}

/// The job a session makes is served: a contribution of each rank is summed by the switch.
#[test]
fn a_completed_session_s_job_aggregates() {
    let mut r = open();
    let mut job = None;
    for k in 0..2u8 {
        let a = r.udp_session(&from(10 + k), &ask(4, u32::from(k), 2, 10 + k)).unwrap();
        if !a.job_toml.is_empty() {
            job = Some(spotagg_driver::JobConfig::from_toml(&a.job_toml).unwrap());
        }
    }
    let job = job.unwrap();
    let mut sw = r.switch().clone();
    let mut out = Vec::new();
    let pool = spotagg_driver::wire::PoolIndex { slot: 0, set: 0 };
    for k in 0..job.n() {
        let m = job.contribution(pool, 0, (0..64).map(|i| i * (k as i32 + 1)));
        sw.process(&frame_from(&job, k, &m), &mut out);
    }
    assert_eq!(out.len(), 2, "one result to each rank");
    assert_eq!(sw.counters().contributions, 2);
}

fn frame_from(job: &spotagg_driver::JobConfig, rank: usize, payload: &[u8]) -> Vec<u8> {
    use spotagg_driver::wire::frame::{encapsulate, Endpoint};
    let w = job.workers[rank];
    let mut f = Vec::new();
    encapsulate(
        Endpoint { mac: w.mac, ip: w.ip, port: job.worker_port },
        Endpoint { mac: job.switch_mac, ip: job.switch_ip, port: job.switch_port },
        payload,
        &mut f,
    );
    f
}

/// A complete session whose job receives nothing for the timeout ends and frees its slots; one
/// that keeps receiving frames stays (the switch's clock, `Engine::set_clock`).
#[test]
fn an_idle_session_times_out_and_its_slots_are_reused() {
    let mut r = open();
    for (id, base) in [(1u64, 10u8), (2, 20)] {
        for k in 0..2u8 {
            r.udp_session(&from(base + k), &ask(id, u32::from(k), 2, base + k)).unwrap();
        }
    }
    assert_eq!(jobs(&r), vec![(1, 0, 2), (2, 64, 2)]);
    let timeout = r.settings().session_timeout.as_micros() as u64;
    let job2 = {
        let sw = r.switch().0.lock().unwrap();
        let j = sw.jobs().nth(1).unwrap().0.job.clone();
        j
    };
    let mut sw = r.switch().clone();
    sw.set_clock(timeout - 1);
    // Session 2's rank 0 sends a frame just before the timeout; session 1's workers nothing.
    let m = job2.contribution(spotagg_driver::wire::PoolIndex { slot: 0, set: 0 }, 0, [1]);
    sw.process(&frame_from(&job2, 0, &m), &mut Vec::new());
    assert!(r.expire().is_empty(), "nothing idle for the whole timeout yet");
    sw.set_clock(timeout);
    assert_eq!(r.expire(), vec![1]);
    assert_eq!(jobs(&r), vec![(2, 64, 2)]);
    // Session 2's last frame was at timeout − 1.
    sw.set_clock(2 * timeout - 2);
    assert!(r.expire().is_empty());
    sw.set_clock(2 * timeout - 1);
    assert_eq!(r.expire(), vec![2]);
    assert!(jobs(&r).is_empty() && r.sessions().is_empty());
}

/// A job the switch had before (a job file's, `spotagg switch --config FILE --controller`)
/// keeps its slots: the first session's range starts after it.
#[test]
fn a_job_file_s_slots_are_not_given_to_a_session() {
    let r0 = open();
    let mut file = spotagg_driver::JobConfig::example(2, spotagg_driver::wire::PayloadSize::B256, 16);
    file.switch_mac = r0.settings().switch_mac;
    file.switch_ip = SWITCH_IP;
    file.workers[0].ip = Ipv4Addr::new(10, 0, 1, 1);
    file.workers[1].ip = Ipv4Addr::new(10, 0, 1, 2);
    r0.switch().0.lock().unwrap().add(spotagg_spec::multi_job::JobPlacement { job: file, slot_base: 0 }).unwrap();
    let mut r = r0;
    for k in 0..2u8 {
        r.udp_session(&from(10 + k), &ask(5, u32::from(k), 2, 10 + k)).unwrap();
    }
    let sw = r.switch().0.lock().unwrap();
    let bases: Vec<u32> = sw.jobs().map(|(p, _)| p.slot_base).collect();
    assert_eq!(bases, vec![0, 16]);
}

/// SwitchML's DPDK workers register their DPDK port's address, not the one their gRPC connection
/// comes from: inside --allow that is accepted (scripts/switchml_client.sh found it).
#[test]
fn an_allowed_peer_may_register_another_allowed_address() {
    let mut r = open();
    r.udp_session(&from(11), &ask(8, 0, 1, 21)).unwrap();
    assert_eq!(jobs(&r), vec![(1, 0, 1)]);
    let job = r.switch().0.lock().unwrap().jobs().next().unwrap().0.job.clone();
    assert_eq!(job.workers[0].ip, ip(21));
}
