//! A `spotagg switch` process and 4 `spotagg worker --verify` processes over loopback
//! (workers bound to 127.0.0.10..13), with 1 % injected loss in the switch (each direction):
//! every worker must exit 0 with `"ok":true`. Everything is killed on failure or after 60 s.

use std::io::{BufRead, BufReader, Write};
use std::net::{Ipv4Addr, SocketAddrV4, UdpSocket};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_spotagg");

/// Kills every process it holds when dropped (on a failed assertion too).
struct Procs(Vec<Child>);

impl Drop for Procs {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// A SwitchML port free on every worker address (tests may run side by side).
fn free_worker_port(ips: &[Ipv4Addr]) -> u16 {
    (0xBEE0u16..=0xBEEF)
        .rev()
        .find(|&p| ips.iter().all(|ip| UdpSocket::bind(SocketAddrV4::new(*ip, p)).is_ok()))
        .expect("no SwitchML port free on 127.0.0.10..13")
}

#[test]
fn switch_and_four_worker_processes_with_loss() {
    let ips: Vec<Ipv4Addr> = (10..14).map(|d| Ipv4Addr::new(127, 0, 0, d)).collect();
    let port = free_worker_port(&ips);
    let mut toml = format!(
        "switch_mac = \"02:00:5a:00:00:01\"\nswitch_ip = \"192.0.2.1\"\npayload_bytes = 256\nslots = 16\nworker_port = {port}\ntimeout_ms = 10\nmax_retries = 16\n"
    );
    for (r, ip) in ips.iter().enumerate() {
        toml += &format!("\n[[worker]]\nip = \"{ip}\"\nmac = \"02:00:5a:00:01:{r:02x}\"\n");
    }
    let mut cfg = tempfile::NamedTempFile::new().unwrap();
    cfg.write_all(toml.as_bytes()).unwrap();
    let cfg_path = cfg.path().to_str().unwrap().to_string();

    let mut procs = Procs(Vec::new());
    let mut switch = Command::new(BIN)
        .args([
            "switch",
            "--config",
            &cfg_path,
            "--bind",
            "127.0.0.1:0",
            "--loss",
            "0.01",
            "--seed",
            "7",
            "--exit-after-idle",
            "30",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(switch.stdout.take().unwrap()).lines();
    procs.0.push(switch);
    let first = lines.next().expect("the switch printed nothing").unwrap();
    let addr = first
        .split_whitespace()
        .find(|w| w.starts_with("127.0.0.1:"))
        .unwrap_or_else(|| panic!("no address in {first:?}"))
        .to_string();

    for r in 0..4 {
        let w = Command::new(BIN)
            .args([
                "worker",
                "--config",
                &cfg_path,
                "--rank",
                &r.to_string(),
                "--switch",
                &addr,
                "--elements",
                "50000",
                "--seed",
                "3",
                "--verify",
            ])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        procs.0.push(w);
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut pending: Vec<usize> = (1..=4).collect();
    while !pending.is_empty() {
        assert!(Instant::now() < deadline, "workers {pending:?} did not finish in 60 s");
        pending.retain(|&i| procs.0[i].try_wait().unwrap().is_none());
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut retransmissions = 0;
    for i in 1..=4 {
        let c = &mut procs.0[i];
        let status = c.wait().unwrap();
        let mut out = String::new();
        std::io::Read::read_to_string(c.stdout.as_mut().unwrap(), &mut out).unwrap();
        let mut err = String::new();
        std::io::Read::read_to_string(c.stderr.as_mut().unwrap(), &mut err).unwrap();
        assert!(status.success(), "worker {}: {status}\nstdout: {out}\nstderr: {err}", i - 1);
        let v: serde_json::Value =
            serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("worker {}: {e}: {out:?}", i - 1));
        assert_eq!(v["ok"], true, "{out}");
        assert_eq!(v["rank"], i - 1);
        assert_eq!(v["elements"], 50000);
        assert!(v["max_error"].as_f64().unwrap() <= v["bound"].as_f64().unwrap(), "{out}");
        retransmissions += v["retransmissions"].as_u64().unwrap();
    }
    // 1 % loss each way over ~800 packets per worker: some packets must have been resent.
    assert!(retransmissions > 0, "no retransmission despite injected loss");
}
