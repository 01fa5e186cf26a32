//! The multi-threaded software switch over loopback UDP: workers of a job with `switch_ports = 2`
//! against a 2-thread switch (`serve_threads`), exact results; replies leave from the port the
//! contribution went to; a contribution sent to the wrong thread's port is dropped and counted.
//! Runs without rust-hdl: `cargo test -p spotagg-sim --no-default-features --test udp_switch_ports`.

use spotagg_driver::transport::{loopback_job, UdpTransport};
use spotagg_driver::wire::switchml::{PoolIndex, SwitchmlPacket};
use spotagg_driver::wire::{Ipv4Addr, PayloadSize};
use spotagg_driver::{Engine, JobConfig, Worker};
use spotagg_spec::reference::RefSwitch;
use spotagg_spec::udp_switch::{serve_threads, ServeOptions, ServeStats};
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// `count` sockets on consecutive free ports of 127.0.0.1.
fn consecutive(count: u16) -> Vec<UdpSocket> {
    for _ in 0..100 {
        let first = UdpSocket::bind("127.0.0.1:0").unwrap();
        let base = first.local_addr().unwrap().port();
        let mut v = vec![first];
        for t in 1..count {
            match base.checked_add(t).and_then(|p| UdpSocket::bind(("127.0.0.1", p)).ok()) {
                Some(s) => v.push(s),
                None => break,
            }
        }
        if v.len() == usize::from(count) {
            return v;
        }
    }
    panic!("no {count} consecutive free ports on 127.0.0.1");
}

struct Running {
    base: SocketAddr,
    stop: Arc<AtomicBool>,
    handle: std::thread::JoinHandle<(ServeStats, Vec<spotagg_driver::Counters>)>,
}

fn start(job: &JobConfig, threads: u16) -> Running {
    let sockets = consecutive(threads);
    let base = sockets[0].local_addr().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let handle = {
        let (job, stop) = (job.clone(), Arc::clone(&stop));
        std::thread::spawn(move || {
            let mut engines: Vec<Box<dyn Engine>> =
                (0..threads).map(|_| Box::new(RefSwitch::new(job.clone())) as Box<dyn Engine>).collect();
            let st = serve_threads(&sockets, &job, &mut engines, &ServeOptions::default(), &stop).unwrap();
            (st, engines.iter().map(|e| e.counters()).collect())
        })
    };
    Running { base, stop, handle }
}

impl Running {
    fn stop(self) -> (ServeStats, Vec<spotagg_driver::Counters>) {
        self.stop.store(true, Ordering::Relaxed);
        self.handle.join().unwrap()
    }
}

#[test]
fn workers_with_two_ports_against_a_two_thread_switch_are_exact() {
    let n = 3;
    let mut job = loopback_job(n, PayloadSize::B256, 8, 40).unwrap();
    job.switch_ports = 2;
    job.timeout = Duration::from_millis(20);
    let sw = start(&job, 2);
    let len = 64 * 100 + 7;
    let handles: Vec<_> = (0..n)
        .map(|r| {
            let job = job.clone();
            let mut t = UdpTransport::for_rank(&job, r, sw.base).unwrap();
            std::thread::spawn(move || {
                let mut w = Worker::new(job, r).unwrap();
                let mut a: Vec<i32> = (0..len).map(|i| (i as i32).wrapping_mul(r as i32 + 7)).collect();
                w.allreduce_i32(&mut t, &mut a).unwrap();
                let mut b: Vec<f32> = (0..len).map(|i| (i % 100) as f32 * 0.25 * (r as f32 + 1.0)).collect();
                w.allreduce_f32(&mut t, &mut b).unwrap();
                (a, b, t.io_stats())
            })
        })
        .collect();
    for h in handles {
        let (a, b, io) = h.join().unwrap();
        for i in 0..len {
            assert_eq!(a[i], (i as i32).wrapping_mul(7 + 8 + 9), "element {i}");
            let want = (i % 100) as f64 * 0.25 * 6.0;
            assert!((f64::from(b[i]) - want).abs() < 1e-4, "element {i}: {} vs {want}", b[i]);
        }
        assert!(io.datagrams_out > 0 && io.datagrams_in > 0);
    }
    let (st, counters) = sw.stop();
    assert_eq!(st.misrouted, 0);
    // Both threads served their slots: 8 slots, slot mod 2 = t.
    for c in &counters {
        assert!(c.contributions > 0, "{counters:?}");
        assert_eq!(c.dropped_total(), 0);
    }
}

fn contribution(job: &JobConfig, slot: u16, tsi: u32) -> Vec<u8> {
    job.contribution(PoolIndex { slot, set: 0 }, tsi, [tsi as i32])
}

#[test]
fn replies_come_from_the_port_the_contribution_went_to() {
    let mut job = JobConfig::example(1, PayloadSize::B256, 4);
    job.workers[0].ip = Ipv4Addr::new(127, 0, 0, 1);
    job.switch_ports = 2;
    // The switch answers the rank only from the job's worker port (docs/switch.md §1 6.5).
    let me =
        (0xBEE0u16..=0xBEEF).rev().find_map(|p| UdpSocket::bind(("127.0.0.1", p)).ok()).expect("a free SwitchML port");
    job.worker_port = me.local_addr().unwrap().port();
    let sw = start(&job, 2);
    me.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    let mut buf = [0u8; 2048];
    for slot in 0..4u16 {
        let mut to = sw.base;
        to.set_port(sw.base.port() + slot % 2);
        me.send_to(&contribution(&job, slot, 100 + u32::from(slot)), to).unwrap();
        let (len, from) = me.recv_from(&mut buf).unwrap();
        assert_eq!(from, to, "slot {slot}: the reply's source is the port the contribution went to");
        let p = SwitchmlPacket::new_checked(&buf[..len]).unwrap();
        assert_eq!((p.tsi(), p.element(0)), (100 + u32::from(slot), 100 + i32::from(slot)));
    }
    // Slot 1 belongs to thread 1: sent to the first port it is dropped, and nothing answers.
    me.send_to(&contribution(&job, 1, 7), sw.base).unwrap();
    me.set_read_timeout(Some(Duration::from_millis(200))).unwrap();
    assert!(me.recv_from(&mut buf).is_err(), "a misrouted contribution must not be answered");
    let (st, counters) = sw.stop();
    assert_eq!(st.misrouted, 1);
    assert_eq!(counters.iter().map(|c| c.contributions).sum::<u64>(), 4);
    assert_eq!((counters[0].contributions, counters[1].contributions), (2, 2));
}

/// docs/switch.md §9 over UDP sockets: a job with `lanes16` served on a SwitchML port and its
/// 16-bit twin (0xBEE0 and 0xBEF0 of one address) by one engine. A round sent to the twin comes
/// back from the twin with each 16-bit lane's wrapping sum (the low lanes carry out of bit 15
/// and must not reach the high ones); a round to 0xBEE0 comes back from 0xBEE0 summed as 32-bit
/// values; a retransmission at the other width is dropped as `lane_mismatch`, unanswered.
#[test]
fn sixteen_bit_lanes_are_served_on_the_twin_port() {
    use spotagg_driver::wire::Lanes;
    use spotagg_driver::DropReason;
    use spotagg_spec::udp_switch::serve_threads_lanes;
    let ip = Ipv4Addr::new(127, 78, 16, 1);
    let (Ok(main), Ok(twin)) = (UdpSocket::bind((ip, 0xBEE0)), UdpSocket::bind((ip, 0xBEF0))) else {
        panic!("127.78.16.1:0xBEE0 and :0xBEF0 must be free (the loopback-udp test group runs one at a time)");
    };
    let mut job = JobConfig::example(2, PayloadSize::B256, 4);
    job.lanes16 = true;
    let workers: Vec<UdpSocket> = (0..2)
        .map(|r| {
            let wip = Ipv4Addr::new(127, 78, 16, 10 + r as u8);
            job.workers[r].ip = wip;
            let s = UdpSocket::bind((wip, job.worker_port)).unwrap();
            s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
            s
        })
        .collect();
    let stop = Arc::new(AtomicBool::new(false));
    let handle = {
        let (job, stop) = (job.clone(), Arc::clone(&stop));
        std::thread::spawn(move || {
            let mut engines: Vec<Box<dyn Engine>> = vec![Box::new(RefSwitch::new(job.clone()))];
            serve_threads_lanes(&[main], &[twin], &job, &mut engines, &ServeOptions::default(), &stop).unwrap();
            engines[0].counters()
        })
    };
    let lanes = |hi: i16, lo: i16| (u32::from(hi as u16) << 16 | u32::from(lo as u16)) as i32;
    let k = PayloadSize::B256.elements();
    let a: Vec<i32> = (0..k).map(|i| lanes(i16::MAX, -1 - i as i16)).collect();
    let b: Vec<i32> = (0..k).map(|i| lanes(1, 1 + 2 * i as i16)).collect();
    let sum16: Vec<i32> = (0..k).map(|i| lanes(i16::MIN, i as i16)).collect();
    let sum32: Vec<i32> = a.iter().zip(&b).map(|(x, y)| x.wrapping_add(*y)).collect();
    assert_ne!(sum16, sum32);
    let mut buf = [0u8; 2048];
    let mut round = |slot: u16, lanes_of: Lanes, mismatch: bool| -> Result<(), String> {
        let to = SocketAddr::from((ip, lanes_of.port(0xBEE0)));
        let pool = PoolIndex { slot, set: 0 };
        workers[0].send_to(&job.contribution(pool, 1, a.iter().copied()), to).unwrap();
        workers[1].send_to(&job.contribution(pool, 2, b.iter().copied()), to).unwrap();
        for w in &workers {
            let (len, from) = w.recv_from(&mut buf).map_err(|e| format!("slot {slot}: no result ({e})"))?;
            assert_eq!(from, to, "slot {slot}: the result comes from the port of its width");
            let p = SwitchmlPacket::new_checked(&buf[..len]).unwrap();
            let got: Vec<i32> = p.elements().collect();
            assert_eq!(got, if lanes_of == Lanes::I16 { sum16.clone() } else { sum32.clone() }, "slot {slot}");
        }
        if mismatch {
            // A retransmission at the other width after completion: dropped, not answered. (Sent
            // mid-round it would race the round's own frames: datagrams to two sockets keep no
            // order between them, and the first to be read opens the round; the reference's
            // tests cover that case.)
            let other = SocketAddr::from((ip, lanes_of.port(0xBEE0) ^ 0x10));
            workers[1].send_to(&job.contribution(pool, 2, b.iter().copied()), other).unwrap();
            workers[1].set_read_timeout(Some(Duration::from_millis(200))).unwrap();
            let answered = workers[1].recv_from(&mut buf).is_ok();
            workers[1].set_read_timeout(Some(Duration::from_secs(5))).unwrap();
            if answered {
                return Err(format!("slot {slot}: a retransmission at the other width was answered"));
            }
        }
        Ok(())
    };
    let done = [(0, Lanes::I16, false), (1, Lanes::I32, false), (2, Lanes::I16, true), (3, Lanes::I32, true)]
        .into_iter()
        .try_for_each(|(slot, l, m)| round(slot, l, m));
    stop.store(true, Ordering::Relaxed);
    let c = handle.join().unwrap();
    if let Err(e) = done {
        panic!("{e}; the switch's counters: {c:?}");
    }
    assert_eq!((c.contributions, c.results_multicast, c.dropped(DropReason::LaneMismatch)), (8, 8, 2));
}
