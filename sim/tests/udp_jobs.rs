//! Two jobs on one software switch (docs/switch.md §8), read from a switch TOML file of two job
//! files, served over loopback UDP: each job's sums exact while both run at once, each job's
//! counters its own, a datagram of an unknown (source, job) dropped and counted.

use spotagg_driver::transport::{free_worker_port, UdpTransport};
use spotagg_driver::wire::{Ipv4Addr, PoolIndex, SwitchmlPacket, SwitchmlRepr};
use spotagg_driver::{Engine, JobConfig, Worker};
use spotagg_spec::multi_job::MultiSwitch;
use spotagg_spec::udp_switch::{serve, ServeOptions};
use std::net::UdpSocket;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

fn job_toml(number: u8, payload: usize, slots: u16, ips: &[Ipv4Addr], port: u16) -> String {
    let mut s = format!(
        "switch_mac = \"02:00:5a:00:00:01\"\nswitch_ip = \"127.0.0.1\"\npayload_bytes = {payload}\nslots = {slots}\njob_number = {number}\nworker_port = {port}\ntimeout_ms = 10\n"
    );
    for (r, ip) in ips.iter().enumerate() {
        s += &format!("\n[[worker]]\nip = \"{ip}\"\nmac = \"02:00:00:00:{number:02x}:{r:02x}\"\n");
    }
    s
}

/// A switch file of two jobs in `dir`: job a (`a`) at slots 0..8, job b (`b`) at 8..16.
fn two_jobs(dir: &std::path::Path, a: String, b: String) -> MultiSwitch {
    std::fs::write(dir.join("a.toml"), a).unwrap();
    std::fs::write(dir.join("b.toml"), b).unwrap();
    let switch_file = dir.join("switch.toml");
    std::fs::write(
        &switch_file,
        "capacity = 16\n[[job]]\nconfig = \"a.toml\"\nslot_base = 0\n[[job]]\nconfig = \"b.toml\"\nslot_base = 8\n",
    )
    .unwrap();
    MultiSwitch::load(&switch_file).unwrap()
}

#[test]
fn two_jobs_from_toml_run_at_once_isolated() {
    let dir = tempfile::tempdir().unwrap();
    let a_ips: Vec<Ipv4Addr> = (0..2).map(|r| Ipv4Addr::new(127, 0, 0, 71 + r)).collect();
    let b_ips: Vec<Ipv4Addr> = (0..3).map(|r| Ipv4Addr::new(127, 0, 0, 81 + r)).collect();
    let port = free_worker_port(&[a_ips.clone(), b_ips.clone()].concat())
        .expect("a SwitchML port free on 127.0.0.71..72, 81..83");
    let multi = two_jobs(dir.path(), job_toml(0, 256, 8, &a_ips, port), job_toml(1, 1024, 4, &b_ips, port));
    let jobs: Vec<JobConfig> = multi.jobs().map(|(p, _)| p.job.clone()).collect();
    let addressing = multi.addressing_job();
    assert_eq!(addressing.n(), 5);
    let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
    let switch = sock.local_addr().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let s2 = stop.clone();
    let sw = std::thread::spawn(move || {
        let mut multi = multi;
        let opts =
            // It ends after 3 s without a datagram: after the two strangers below, whatever the load.
            ServeOptions { loss: 0.01, exit_after_idle: Some(Duration::from_secs(3)), ..ServeOptions::default() };
        serve(&sock, &addressing, &mut multi, &opts, &s2).unwrap();
        multi
    });
    let len: usize = 256 * 40 + 3;
    let mut handles = Vec::new();
    for (j, job) in jobs.iter().enumerate() {
        for r in 0..job.n() {
            let job = job.clone();
            let mut t = UdpTransport::for_rank(&job, r, switch).unwrap();
            handles.push(std::thread::spawn(move || {
                let mut w = Worker::new(job, r).unwrap();
                let mut a: Vec<i32> = (0..len).map(|i| i as i32 * (r as i32 + 1) + 1000 * j as i32).collect();
                w.allreduce_i32(&mut t, &mut a).unwrap();
                (j, a)
            }));
        }
    }
    for h in handles {
        let (j, a) = h.join().unwrap();
        let n = jobs[j].n() as i32;
        let ranks: i32 = (1..=n).sum();
        assert!(a.iter().enumerate().all(|(i, x)| *x == i as i32 * ranks + 1000 * j as i32 * n), "job {j}: wrong sum");
    }
    // While the switch runs: a stranger with job 0's number, and job 0's rank 0 with job 1's
    // number; the switch takes them in before it goes idle.
    let mut m = vec![0u8; 10 + 256];
    SwitchmlRepr { msg_type: 1, size_code: 1, job: 0, tsi: 1, pool: PoolIndex { slot: 0, set: 0 }, e0: 0, e1: 0 }
        .emit(&mut SwitchmlPacket::new_unchecked(&mut m[..]));
    UdpSocket::bind("127.0.0.99:0").unwrap().send_to(&m, switch).unwrap();
    m[1] = 1;
    UdpSocket::bind((a_ips[0], 0)).unwrap().send_to(&m, switch).unwrap();
    let multi = sw.join().unwrap();
    assert_eq!(multi.unknown_source_job(), 2);
    let (c0, c1) = (multi.job(0).counters(), multi.job(1).counters());
    // Each worker's session join counts as a contribution (docs/switch.md §2.1).
    assert_eq!(c0.contributions, 2 * len.div_ceil(64) as u64 + 2);
    assert_eq!(c1.contributions, 3 * len.div_ceil(256) as u64 + 3);
    assert_eq!((c0.dropped_total(), c1.dropped_total()), (0, 0));
    assert_eq!(multi.counters().frames_in, c0.frames_in + c1.frames_in + 2);
}

/// A job with 16-bit lanes beside a 32-bit one on one software switch (docs/switch.md §8, §9):
/// the switch file's addressing job binds the twin port, job b's f32 sum in 16-bit lanes is
/// within its bound while job a sums i32 exactly, and neither counts a drop.
#[test]
fn a_16_bit_job_beside_a_32_bit_one() {
    use spotagg_driver::fixedpoint::{exponent, Scale};
    use spotagg_driver::wire::Lanes;
    use spotagg_spec::udp_switch::serve_threads_lanes;
    let dir = tempfile::tempdir().unwrap();
    let a_ips: Vec<Ipv4Addr> = (0..2).map(|r| Ipv4Addr::new(127, 0, 0, 171 + r)).collect();
    let b_ips: Vec<Ipv4Addr> = (0..3).map(|r| Ipv4Addr::new(127, 0, 0, 181 + r)).collect();
    let port = free_worker_port(&[a_ips.clone(), b_ips.clone()].concat()).expect("a free SwitchML port");
    let b = "lanes16 = true\n".to_string() + &job_toml(1, 1024, 4, &b_ips, port);
    let multi = two_jobs(dir.path(), job_toml(0, 256, 8, &a_ips, port), b);
    let jobs: Vec<JobConfig> = multi.jobs().map(|(p, _)| p.job.clone()).collect();
    let addressing = multi.addressing_job();
    assert!(addressing.lanes16, "a job of the file has 16-bit lanes");
    let ip = Ipv4Addr::new(127, 0, 0, 161);
    let (Ok(main), Ok(twin)) = (UdpSocket::bind((ip, 0xBEE0)), UdpSocket::bind((ip, 0xBEF0))) else {
        panic!("127.0.0.161:0xBEE0 and :0xBEF0 must be free (the loopback-udp test group runs one at a time)");
    };
    let switch = main.local_addr().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let s2 = stop.clone();
    let sw = std::thread::spawn(move || {
        let mut engines: Vec<Box<dyn Engine>> = vec![Box::new(multi.clone())];
        let opts = ServeOptions { exit_after_idle: Some(Duration::from_secs(2)), ..ServeOptions::default() };
        serve_threads_lanes(&[main], &[twin], &addressing, &mut engines, &opts, &s2).unwrap();
        engines[0].counters()
    });
    let len: usize = 512 * 20 + 7;
    let input =
        move |r: usize| -> Vec<f32> { (0..len).map(|i| ((i * 7 + r * 13) % 101) as f32 / 50.0 - 1.0).collect() };
    let mut handles = Vec::new();
    for (j, job) in jobs.iter().enumerate() {
        for r in 0..job.n() {
            let job = job.clone();
            let mut t = UdpTransport::for_rank(&job, r, switch).unwrap();
            handles.push(std::thread::spawn(move || {
                let mut w = Worker::new(job, r).unwrap();
                if j == 0 {
                    let mut a: Vec<i32> = (0..len).map(|i| i as i32 * (r as i32 + 1)).collect();
                    w.allreduce_i32(&mut t, &mut a).unwrap();
                    assert!(a.iter().enumerate().all(|(i, x)| *x == i as i32 * 3), "job a: wrong sum");
                } else {
                    let mut x = input(r);
                    let s = w.allreduce_f32_lanes(&mut t, &mut x, Lanes::I16).unwrap();
                    assert_eq!(s.chunks, len.div_ceil(512));
                    let ins: Vec<Vec<f32>> = (0..3).map(input).collect();
                    for (c, out) in x.chunks(512).enumerate() {
                        let e = ins.iter().map(|v| exponent(&v[c * 512..c * 512 + out.len()]).unwrap()).max().unwrap();
                        for (i, y) in out.iter().enumerate() {
                            let exact: f64 = ins.iter().map(|v| f64::from(v[c * 512 + i])).sum();
                            assert!(
                                (f64::from(*y) - exact).abs() <= Scale::new16(3, e).bound(*y),
                                "job b, element {i}"
                            );
                        }
                    }
                }
            }));
        }
    }
    for h in handles {
        h.join().unwrap();
    }
    let c = sw.join().unwrap();
    assert_eq!(c.dropped_total(), 0, "{c:?}");
}

#[test]
fn a_bad_switch_file_names_the_file_and_key() {
    let dir = tempfile::tempdir().unwrap();
    let ips = [Ipv4Addr::new(127, 0, 0, 71)];
    std::fs::write(dir.path().join("a.toml"), job_toml(0, 256, 8, &ips, 48864)).unwrap();
    let f = dir.path().join("switch.toml");
    std::fs::write(&f, "[[job]]\nconfig = \"a.toml\"\nslot_base = 0\n[[job]]\nconfig = \"a.toml\"\nslot_base = 4\n")
        .unwrap();
    let e = MultiSwitch::load(&f).unwrap_err().0;
    assert!(e.contains("switch.toml") && e.contains("overlap"), "{e}");
    std::fs::write(&f, "[[job]]\nconfig = \"missing.toml\"\nslot_base = 0\n").unwrap();
    let e = MultiSwitch::load(&f).unwrap_err().0;
    assert!(e.contains("job[0].config") && e.contains("missing.toml"), "{e}");
    std::fs::write(&f, "[[job]]\nconfig = \"a.toml\"\nslot_base = -1\n").unwrap();
    let e = MultiSwitch::load(&f).unwrap_err().0;
    assert!(e.contains("job[0].slot_base") && e.contains("-1"), "{e}");
}
