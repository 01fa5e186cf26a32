//! A two-level tree of software switches over loopback UDP (docs/switch.md §6): a root and two
//! leaves, each leaf with two workers, every switch dropping 1 % of datagrams each way. The
//! sums are exact; the leaves sent partials up and resent some on retransmissions.

use spotagg_driver::config::ParentConfig;
use spotagg_driver::transport::UdpTransport;
use spotagg_driver::wire::{Ipv4Addr, MacAddr, PayloadSize};
use spotagg_driver::{Engine, JobConfig, Worker};
use spotagg_spec::reference::{RefSwitch, TreeCounters};
use spotagg_spec::udp_switch::{serve, ServeOptions};
use spotagg_testkit::procs::free_udp_port;
use std::net::UdpSocket;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

const ROOT_IP: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 231);

/// The root must listen on a SwitchML port (a leaf's `parent.port`): the first free one.
fn bind_switchml_port(ip: Ipv4Addr) -> UdpSocket {
    (0xbee0..=0xbeefu16)
        .find_map(|p| UdpSocket::bind((ip, p)).ok())
        .unwrap_or_else(|| panic!("no free port in 0xBEE0..=0xBEEF on {ip}"))
}

#[test]
fn two_leaves_and_a_root_are_exact_under_loss() {
    let leaf_ip = [Ipv4Addr::new(127, 0, 0, 221), Ipv4Addr::new(127, 0, 0, 222)];
    let root_sock = bind_switchml_port(ROOT_IP);
    let root_port = root_sock.local_addr().unwrap().port();
    let mut root = JobConfig::example(2, PayloadSize::B256, 8);
    root.switch_ip = ROOT_IP;
    root.switch_mac = MacAddr([2, 0, 0x7f, 0, 0, 231]);
    for (r, w) in root.workers.iter_mut().enumerate() {
        w.ip = leaf_ip[r];
        w.mac = MacAddr([2, 0, 0x7f, 0, 0, 221 + r as u8]);
    }
    root.tree_workers = 4;
    let worker_ips: Vec<Ipv4Addr> = (0..4).map(|i| Ipv4Addr::new(127, 0, 0, 211 + i)).collect();
    let worker_port = free_udp_port(&worker_ips);
    let leaves: Vec<JobConfig> = (0..2)
        .map(|l| {
            let mut j = JobConfig::example(2, PayloadSize::B256, 8);
            j.switch_ip = leaf_ip[l];
            j.switch_mac = root.workers[l].mac;
            for (r, w) in j.workers.iter_mut().enumerate() {
                w.ip = worker_ips[2 * l + r];
            }
            j.worker_port = worker_port;
            // Trees do not combine with sessions yet (a leaf would have to open one at its
            // parent): one run on freshly started switches.
            j.sessions = false;
            j.timeout = Duration::from_millis(10);
            j.tree_workers = 4;
            j.parent = Some(ParentConfig { ip: ROOT_IP, mac: root.switch_mac, port: root_port, rank: l });
            j
        })
        .collect();
    // The leaves are the root's workers: they send from one port, the root job's worker_port
    // (docs/switch.md §1 7.5).
    let leaf_port = free_udp_port(&leaf_ip);
    root.worker_port = leaf_port;
    let stop = Arc::new(AtomicBool::new(false));
    let opts =
        ServeOptions { loss: 0.01, seed: 7, exit_after_idle: Some(Duration::from_secs(30)), ..ServeOptions::default() };
    let mut switches = Vec::new();
    let mut leaf_addrs = Vec::new();
    for (i, (job, sock)) in std::iter::once((root.clone(), root_sock))
        .chain(leaves.iter().map(|j| (j.clone(), UdpSocket::bind((j.switch_ip, leaf_port)).unwrap())))
        .enumerate()
    {
        if i > 0 {
            leaf_addrs.push(sock.local_addr().unwrap());
        }
        let (stop, opts) = (stop.clone(), ServeOptions { seed: opts.seed + i as u64, ..opts.clone() });
        switches.push(std::thread::spawn(move || {
            let mut e = RefSwitch::new(job.clone());
            serve(&sock, &job, &mut e, &opts, &stop).unwrap();
            (e.counters(), e.tree_counters())
        }));
    }
    let len = 64 * 60 + 5;
    let workers: Vec<_> = (0..4)
        .map(|w| {
            let (l, r) = (w / 2, w % 2);
            let job = leaves[l].clone();
            let mut t = UdpTransport::for_rank(&job, r, leaf_addrs[l]).unwrap();
            std::thread::spawn(move || {
                let mut wk = Worker::new(job, r).unwrap();
                let mut a: Vec<i32> = (0..len).map(|i| (i as i32).wrapping_mul(w as i32 + 1) ^ 0x5a5a).collect();
                wk.allreduce_i32(&mut t, &mut a).unwrap();
                let mut b: Vec<f32> = (0..len).map(|i| (i % 37) as f32 * 0.5 - w as f32).collect();
                let st = wk.allreduce_f32(&mut t, &mut b).unwrap();
                (a, b, st.retransmissions)
            })
        })
        .collect();
    let results: Vec<_> = workers.into_iter().map(|h| h.join().unwrap()).collect();
    stop.store(true, Ordering::Relaxed);
    let counters: Vec<(_, TreeCounters)> = switches.into_iter().map(|h| h.join().unwrap()).collect();
    for (a, b, _) in &results {
        for i in 0..len {
            let want = (0..4).fold(0i32, |s, w| s.wrapping_add((i as i32).wrapping_mul(w + 1) ^ 0x5a5a));
            assert_eq!(a[i], want, "element {i}");
            let fw = (0..4).map(|w| (i % 37) as f64 * 0.5 - w as f64).sum::<f64>();
            assert!((f64::from(b[i]) - fw).abs() < 1e-5, "element {i}: {} vs {fw}", b[i]);
        }
    }
    let retrans: u64 = results.iter().map(|r| r.2).sum();
    let (leaf_t0, leaf_t1) = (counters[1].1, counters[2].1);
    eprintln!("retransmissions {retrans}, root {:?}, leaves {leaf_t0:?} {leaf_t1:?}", counters[0].0);
    assert!(retrans > 0, "1 % loss must cost retransmissions");
    for t in [leaf_t0, leaf_t1] {
        assert!(t.partials_up > 0 && t.parent_results > 0 && t.partials_resent > 0, "{t:?}");
    }
    assert!(counters[0].0.results_retransmitted > 0, "the root answered resent partials: {:?}", counters[0].0);
}
