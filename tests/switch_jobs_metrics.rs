//! `spotagg switch --jobs FILE --metrics ADDR` as a process: two jobs of two `spotagg worker
//! --verify` processes each over loopback, at once; every worker exact; the metrics endpoint
//! then serves each job's counters labelled `job` (the exposition is parsed with a real
//! Prometheus parser in sim/tests/metrics.rs). Everything is killed on failure or after 60 s.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Ipv4Addr, TcpStream};
use std::process::{Command, Stdio};
use std::time::Duration;

use spotagg_driver::transport::free_worker_port;
use spotagg_testkit::procs::{finish, Procs};

const BIN: &str = env!("CARGO_BIN_EXE_spotagg");

#[test]
fn two_jobs_on_one_switch_process_with_metrics() {
    let ips: Vec<Ipv4Addr> = (0..4).map(|d| Ipv4Addr::new(127, 0, 0, 91 + d)).collect();
    let port = free_worker_port(&ips).expect("a SwitchML port free on 127.0.0.91..94");
    let dir = tempfile::tempdir().unwrap();
    for j in 0..2usize {
        let mut toml = format!(
            "switch_mac = \"02:00:5a:00:00:01\"\nswitch_ip = \"192.0.2.1\"\npayload_bytes = {}\nslots = 8\njob_number = {j}\nworker_port = {port}\ntimeout_ms = 10\n",
            [256, 1024][j]
        );
        for r in 0..2 {
            toml += &format!("\n[[worker]]\nip = \"{}\"\nmac = \"02:00:5a:00:0{j}:{r:02x}\"\n", ips[2 * j + r]);
        }
        std::fs::write(dir.path().join(format!("job{j}.toml")), toml).unwrap();
    }
    let sw_file = dir.path().join("switch.toml");
    std::fs::write(
        &sw_file,
        "[[job]]\nconfig = \"job0.toml\"\nslot_base = 0\n[[job]]\nconfig = \"job1.toml\"\nslot_base = 8\n",
    )
    .unwrap();
    let mut procs = Procs(Vec::new());
    let mut switch = Command::new(BIN)
        .args(["switch", "--jobs", sw_file.to_str().unwrap(), "--bind", "127.0.0.1:0", "--metrics", "127.0.0.1:0"])
        .args(["--exit-after-idle", "30"])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(switch.stdout.take().unwrap()).lines();
    procs.0.push(switch);
    let mut head = Vec::new();
    while head.len() < 4 {
        head.push(lines.next().expect("the switch stopped printing").unwrap());
    }
    assert!(head[0].contains("job_number 0: 2 workers, 256 B payload, slots 0..8"), "{head:?}");
    assert!(head[1].contains("job_number 1: 2 workers, 1024 B payload, slots 8..16"), "{head:?}");
    let addr = head[2].split_whitespace().find(|w| w.starts_with("127.0.0.1:")).expect("listening address").to_string();
    let metrics = head[3]
        .split_whitespace()
        .find_map(|w| w.strip_prefix("http://")?.strip_suffix("/metrics").map(String::from))
        .unwrap_or_else(|| panic!("no metrics address in {:?}", head[3]));
    for j in 0..2 {
        for r in 0..2 {
            let cfg = dir.path().join(format!("job{j}.toml"));
            let w = Command::new(BIN)
                .args(["worker", "--config", cfg.to_str().unwrap(), "--rank", &r.to_string(), "--switch", &addr])
                .args(["--elements", "20000", "--seed", "5", "--verify"])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            procs.0.push(w);
        }
    }
    let workers: Vec<usize> = (1..procs.0.len()).collect();
    for (i, f) in finish(&mut procs.0, &workers, Duration::from_secs(60)).into_iter().enumerate() {
        let (status, out) = (f.status, f.stdout);
        assert!(status.success() && out.contains("\"ok\":true"), "worker {i}: {status} {out}");
    }
    // f32: each worker sends its chunks plus one priming packet for each of the 8 slots, and its
    // session join (docs/switch.md §2.1).
    let want = [
        format!("spotagg_switch_contributions_total{{job=\"0\"}} {}", 2 * (20000usize.div_ceil(64) + 8 + 1)),
        format!("spotagg_switch_contributions_total{{job=\"1\"}} {}", 2 * (20000usize.div_ceil(256) + 8 + 1)),
        "# TYPE spotagg_switch_straggler_rounds_last_total counter".to_string(),
        "spotagg_switch_unknown_source_job_total 0".to_string(),
    ];
    // The serve thread publishes every 200 ms: read until the counts are the final ones (60 s
    // at most), then check every line.
    let scrape = || {
        let mut c = TcpStream::connect(&metrics).unwrap();
        c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        c.write_all(b"GET /metrics HTTP/1.1\r\nHost: t\r\n\r\n").unwrap();
        let mut text = String::new();
        c.read_to_string(&mut text).unwrap();
        assert!(text.starts_with("HTTP/1.1 200 OK"), "{text}");
        text
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let mut text = scrape();
    while !text.lines().any(|l| l.starts_with(want[1].as_str())) && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
        text = scrape();
    }
    for w in &want {
        assert!(text.lines().any(|l| l.starts_with(w.as_str())), "no line {w:?} in\n{text}");
    }
}
