//! `spotagg switch` processes and 4 `spotagg worker --verify` processes over loopback (workers
//! bound to 127.0.0.10..13): with 1 % injected loss in the switch (each direction); two
//! sessions back to back on one running switch; a primary killed by its process id in the middle
//! of the operation, the standby taking over (issue 19); junk from the workers' addresses on
//! other ports and from outsiders before a session. Every worker must exit 0 with `"ok":true`.
//! Everything is killed on failure or after 60 s.

use std::io::{BufRead, BufReader, Write};
use std::net::{Ipv4Addr, UdpSocket};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use spotagg_driver::transport::free_worker_port;
use spotagg_testkit::procs::{finish, Procs};

const BIN: &str = env!("CARGO_BIN_EXE_spotagg");

/// One test at a time: each probes for a worker port free on the shared loopback addresses,
/// and two tests probing at once could pick the same port.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// What each test starts from: its turn ([`SERIAL`]), a job file for the four loopback workers
/// on a free worker port, and the processes (killed first when the test ends).
struct Setup {
    procs: Procs,
    cfg: String,
    _file: tempfile::NamedTempFile,
    _one: std::sync::MutexGuard<'static, ()>,
}

impl Setup {
    fn new() -> Setup {
        Setup::with_toml("")
    }
    /// With `extra` lines in the job file.
    fn with_toml(extra: &str) -> Setup {
        let one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        let port = free_worker_port(&worker_ips()).expect("a SwitchML port free on 127.0.0.10..13");
        let file = job_file(port, extra);
        let cfg = file.path().to_str().unwrap().to_string();
        Setup { procs: Procs(Vec::new()), cfg, _file: file, _one: one }
    }
}

#[test]
fn switch_and_four_worker_processes_with_loss() {
    let mut t = Setup::new();
    let loss = ["--loss", "0.01", "--seed", "7"];
    let (addr, _err, _out) = start_switch(&mut t, "127.0.0.1:0", &loss);
    let idx = start_workers(&mut t, &[&addr], 50_000, 3);
    let mut retransmissions = 0;
    for v in finish_workers(&mut t.procs, &idx, 50_000) {
        assert!(v["max_error"].as_f64().unwrap() <= v["bound"].as_f64().unwrap(), "{v}");
        retransmissions += v["retransmissions"].as_u64().unwrap();
    }
    // 1 % loss each way over ~800 packets per worker: some packets must have been resent.
    assert!(retransmissions > 0, "no retransmission despite injected loss");
}

/// 16-bit lanes between processes (docs/switch.md §9): the switch on a SwitchML port serves
/// the job's 16-bit twin beside it, and four `spotagg worker --lanes 16 --verify` get sums
/// within the 16-bit bound, with loss, in half the packets of 32-bit lanes.
#[test]
fn sixteen_bit_lanes_between_worker_processes_with_loss() {
    let mut t = Setup::with_toml("lanes16 = true\n");
    let loss = ["--loss", "0.01", "--seed", "9"];
    let (addr, _err, _out) = start_switch(&mut t, "127.0.0.9:48864", &loss);
    let idx = start_workers_with(&mut t, &[&addr], 50_000, 3, &["--lanes", "16"]);
    for v in finish_workers(&mut t.procs, &idx, 50_000) {
        assert_eq!(v["lanes"], 16, "{v}");
        assert!(v["max_error"].as_f64().unwrap() <= v["bound"].as_f64().unwrap(), "{v}");
        // 50,000 elements in chunks of 128: 391 chunks and 16 priming packets, with some resent.
        let packets = v["packets"].as_u64().unwrap();
        assert!((391 + 16..391 + 16 + 60).contains(&packets), "{v}");
    }
}

/// A job for the four loopback workers on `port`, with `extra` lines.
fn job_file(port: u16, extra: &str) -> tempfile::NamedTempFile {
    let ips = worker_ips();
    let mut toml = format!(
        "switch_mac = \"02:00:5a:00:00:01\"\nswitch_ip = \"192.0.2.1\"\npayload_bytes = 256\nslots = 16\nworker_port = {port}\ntimeout_ms = 10\nmax_retries = 16\n{extra}"
    );
    for (r, ip) in ips.iter().enumerate() {
        toml += &format!("\n[[worker]]\nip = \"{ip}\"\nmac = \"02:00:5a:00:01:{r:02x}\"\n");
    }
    let mut cfg = tempfile::NamedTempFile::new().unwrap();
    cfg.write_all(toml.as_bytes()).unwrap();
    cfg
}

fn worker_ips() -> Vec<Ipv4Addr> {
    (10..14).map(|d| Ipv4Addr::new(127, 0, 0, d)).collect()
}

type Lines = std::io::Lines<BufReader<std::process::ChildStdout>>;

/// Starts `spotagg switch` on `bind` (stderr to a file); returns its address, the stderr file
/// and the rest of its stdout.
fn start_switch(t: &mut Setup, bind: &str, extra: &[&str]) -> (String, tempfile::NamedTempFile, Lines) {
    let err = tempfile::NamedTempFile::new().unwrap();
    let mut switch = Command::new(BIN)
        .args(["switch", "--config", &t.cfg, "--bind", bind])
        .args(if extra.contains(&"--exit-after-idle") { &[][..] } else { &["--exit-after-idle", "30"][..] })
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::from(err.reopen().unwrap()))
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(switch.stdout.take().unwrap()).lines();
    t.procs.0.push(switch);
    let first = lines.next().expect("the switch printed nothing").unwrap();
    let addr = first
        .split_whitespace()
        .find(|w| w.starts_with("127.0.0."))
        .unwrap_or_else(|| panic!("no address in {first:?}"))
        .to_string();
    (addr, err, lines)
}

/// Starts the 4 workers (`--verify`) on `switches`; returns their indices in `t.procs`.
fn start_workers(t: &mut Setup, switches: &[&str], elements: usize, seed: u64) -> Vec<usize> {
    start_workers_with(t, switches, elements, seed, &[])
}

/// [`start_workers`] with `extra` arguments.
fn start_workers_with(t: &mut Setup, switches: &[&str], elements: usize, seed: u64, extra: &[&str]) -> Vec<usize> {
    (0..4)
        .map(|r| {
            let mut cmd = Command::new(BIN);
            cmd.args(["worker", "--config", &t.cfg, "--rank", &r.to_string()]);
            for s in switches {
                cmd.args(["--switch", s]);
            }
            cmd.args(["--elements", &elements.to_string(), "--seed", &seed.to_string(), "--verify"]).args(extra);
            t.procs.0.push(cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap());
            t.procs.0.len() - 1
        })
        .collect()
}

/// Waits for the workers (60 s at most); each must exit 0 with `"ok":true`. Their JSON lines.
fn finish_workers(procs: &mut Procs, idx: &[usize], elements: usize) -> Vec<serde_json::Value> {
    finish(&mut procs.0, idx, Duration::from_secs(60))
        .into_iter()
        .enumerate()
        .map(|(r, f)| {
            let (status, out, err) = (f.status, f.stdout, f.stderr);
            assert!(status.success(), "worker {r}: {status}\nstdout: {out}\nstderr: {err}");
            let v: serde_json::Value =
                serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("worker {r}: {e}: {out:?}"));
            assert_eq!(v["ok"], true, "{out}");
            assert_eq!(v["rank"], r);
            assert_eq!(v["elements"], elements);
            v
        })
        .collect()
}

fn read(f: &tempfile::NamedTempFile) -> String {
    std::fs::read_to_string(f.path()).unwrap()
}

#[test]
fn two_sessions_back_to_back_on_one_running_switch() {
    let mut t = Setup::new();
    let (addr, err, _out) = start_switch(&mut t, "127.0.0.1:0", &[]);
    let mut epochs = Vec::new();
    for (session, seed) in [(1, 5u64), (2, 6)] {
        let idx = start_workers(&mut t, &[&addr], 30_000, seed);
        let out = finish_workers(&mut t.procs, &idx, 30_000);
        let e = out[0]["epoch"].as_u64().expect("an epoch");
        assert!(out.iter().all(|v| v["epoch"].as_u64() == Some(e)), "{out:?}");
        println!("session {session}: 4 workers exact, epoch {e}");
        epochs.push(e);
    }
    assert_eq!(epochs, vec![1, 2], "the second run opened the next session on the running switch");
    let log = read(&err);
    assert_eq!(log.matches("session opened").count(), 2, "{log}");
}

#[test]
fn the_standby_takes_over_when_the_primary_is_killed_mid_operation() {
    let mut t = Setup::new();
    let (primary, primary_err, _out0) = start_switch(&mut t, "127.0.0.1:0", &[]);
    let (standby, standby_err, _out1) = start_switch(&mut t, "127.0.0.2:0", &[]);
    let elements = 3_000_000;
    let idx = start_workers(&mut t, &[&primary, &standby], elements, 9);
    // Kill the primary by its process id once the session is open and results flow.
    let deadline = Instant::now() + Duration::from_secs(30);
    while !read(&primary_err).contains("session opened") {
        assert!(Instant::now() < deadline, "no session on the primary: {}", read(&primary_err));
        std::thread::sleep(Duration::from_millis(2));
    }
    std::thread::sleep(Duration::from_millis(100));
    let pid = t.procs.0[0].id();
    assert!(t.procs.0[1..].iter().all(|c| c.id() != pid));
    t.procs.0[0].kill().unwrap();
    t.procs.0[0].wait().unwrap();
    let out = finish_workers(&mut t.procs, &idx, elements);
    for v in &out {
        assert_eq!(v["switch"], 1, "every worker ends on the standby: {v}");
        let f = v["failovers"].as_array().unwrap();
        assert_eq!(f.len(), 1, "{v}");
        assert_eq!((f[0]["from"].as_u64(), f[0]["to"].as_u64()), (Some(0), Some(1)), "{v}");
        println!(
            "rank {}: failover after {:.1} ms without a result ({}), stall {:.1} ms; {} s in all",
            v["rank"],
            f[0]["detect_ms"].as_f64().unwrap(),
            f[0]["reason"].as_str().unwrap(),
            f[0]["stall_ms"].as_f64().unwrap(),
            v["seconds"]
        );
    }
    assert!(read(&standby_err).contains("session opened"), "{}", read(&standby_err));
}

#[test]
fn junk_from_members_other_ports_and_outsiders_does_not_stop_a_session() {
    let mut t = Setup::new();
    let (addr, _err, lines) = start_switch(&mut t, "127.0.0.1:0", &["--json", "--exit-after-idle", "2"]);
    let to: std::net::SocketAddr = addr.parse().unwrap();
    // 20,000 datagrams: random bytes and near-valid contributions (msg_type 1, the job's size,
    // a slot < S, random payload), from ranks 0 and 1's addresses on ephemeral ports and from
    // two outsiders.
    let senders: Vec<UdpSocket> =
        [10u8, 11, 50, 51].iter().map(|d| UdpSocket::bind((Ipv4Addr::new(127, 0, 0, *d), 0)).unwrap()).collect();
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for i in 0..20_000 {
        let mut m = vec![0u8; if i % 2 == 0 { 10 + 256 } else { (next() % 300) as usize }];
        for b in m.iter_mut() {
            *b = next() as u8;
        }
        if i % 2 == 0 {
            m[0] = 0x11;
            m[1] = 0;
            m[6] = (next() % 2) as u8 * 0x80;
            m[7] = (next() % 16) as u8;
        }
        let _ = senders[i % 4].send_to(&m, to);
        if i % 1000 == 0 {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    let idx = start_workers(&mut t, &[&addr], 50_000, 11);
    finish_workers(&mut t.procs, &idx, 50_000);
    let out: Vec<String> = lines.map(|l| l.unwrap()).collect();
    let status = t.procs.0[0].wait().unwrap();
    assert!(status.success(), "{out:?}");
    let v: serde_json::Value = serde_json::from_str(out.last().unwrap()).unwrap();
    let c = &v["counters"];
    let drops = c["drops"].as_array().unwrap();
    let at = |r: spotagg_driver::DropReason| drops[r.index()].as_u64().unwrap();
    let (wrong_port, unknown) =
        (at(spotagg_driver::DropReason::WrongSrcPort), at(spotagg_driver::DropReason::UnknownSource));
    println!("switch: wrong_src_port {wrong_port}, unknown_source {unknown}, sessions {}", v["udp"]["sessions"]);
    assert!(wrong_port > 4000 && unknown > 4000, "{c}");
    assert_eq!(v["udp"]["sessions"], 1);
}
