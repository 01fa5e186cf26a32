//! The software switch's Prometheus exposition, scraped over HTTP and parsed with a real
//! Prometheus text parser (the `prometheus-parse` crate), from a run over loopback UDP in which
//! rank 2 is slowed on purpose (each of its sends waits 300 µs): the straggler counters must
//! name it. The workers' stats are exposed and parsed the same way.

use spotagg_driver::metrics::{render, worker_families};
use spotagg_driver::transport::{loopback_job, Transport, UdpTransport};
use spotagg_driver::wire::PayloadSize;
use spotagg_driver::Worker;
use spotagg_spec::metrics_http::{serve_http, MetricsBoard};
use spotagg_spec::reference::RefSwitch;
use spotagg_spec::udp_switch::{serve, ServeOptions};
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A transport that waits before every send: a worker slower than the others.
struct Slow<T>(T, Duration);

impl<T: Transport> Transport for Slow<T> {
    fn send(&mut self, msg: &[u8]) -> io::Result<()> {
        std::thread::sleep(self.1);
        self.0.send(msg)
    }
    fn recv(&mut self, buf: &mut [u8], deadline: Instant) -> io::Result<Option<usize>> {
        self.0.recv(buf, deadline)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.0.flush()
    }
}

fn scrape(addr: SocketAddr, path: &str) -> (String, String) {
    let mut c = TcpStream::connect(addr).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    write!(c, "GET {path} HTTP/1.1\r\nHost: test\r\n\r\n").unwrap();
    let mut s = String::new();
    c.read_to_string(&mut s).unwrap();
    let (head, body) = s.split_once("\r\n\r\n").unwrap();
    (head.to_string(), body.to_string())
}

fn parse(text: &str) -> prometheus_parse::Scrape {
    prometheus_parse::Scrape::parse(text.lines().map(|l| Ok(l.to_string()))).unwrap()
}

fn value(s: &prometheus_parse::Scrape, name: &str, label: Option<(&str, &str)>) -> f64 {
    let hit = s
        .samples
        .iter()
        .find(|x| x.metric == name && label.is_none_or(|(k, v)| x.labels.get(k) == Some(v)))
        .unwrap_or_else(|| panic!("no sample {name} {label:?}"));
    match hit.value {
        prometheus_parse::Value::Counter(v)
        | prometheus_parse::Value::Gauge(v)
        | prometheus_parse::Value::Untyped(v) => v,
        ref other => panic!("{name}: {other:?}"),
    }
}

/// How much rank 2 waits before each frame it sends. It is far above the few milliseconds for
/// which a loaded two-core machine deschedules a thread (a CI run saw rank 1 last in 24 of 120
/// rounds, 5.6 ms behind on average, when rank 2 waited 300 µs).
const SLOW: Duration = Duration::from_millis(2);

#[test]
fn the_exposition_parses_and_names_the_slowed_worker() {
    let n = 3;
    let mut job = loopback_job(n, PayloadSize::B256, 8, 60).unwrap();
    job.timeout = Duration::from_millis(50);
    let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
    let switch = sock.local_addr().unwrap();
    let http = TcpListener::bind("127.0.0.1:0").unwrap();
    let http_addr = http.local_addr().unwrap();
    let board = Arc::new(MetricsBoard::new(1));
    let stop = Arc::new(AtomicBool::new(false));
    let opts = ServeOptions {
        metrics: Some(board.clone()),
        exit_after_idle: Some(Duration::from_secs(20)),
        ..ServeOptions::default()
    };
    let (j2, s2, b2) = (job.clone(), stop.clone(), board.clone());
    let sw = std::thread::spawn(move || {
        let mut engine = RefSwitch::new(j2.clone());
        let st = serve(&sock, &j2, &mut engine, &opts, &s2).unwrap();
        (st, engine.stragglers().to_vec())
    });
    let http_stop = Arc::new(AtomicBool::new(false));
    let hs = http_stop.clone();
    let server = std::thread::spawn(move || serve_http(&http, &b2, &hs).unwrap());
    let len = 64 * 120;
    let workers: Vec<_> = (0..n)
        .map(|r| {
            let job = job.clone();
            let t = UdpTransport::for_rank(&job, r, switch).unwrap();
            std::thread::spawn(move || {
                let mut w = Worker::new(job, r).unwrap();
                let mut a: Vec<i32> = (0..len).map(|i| i as i32 * (r as i32 + 1)).collect();
                let st = if r == 2 {
                    w.allreduce_i32(&mut Slow(t, SLOW), &mut a)
                } else {
                    let mut t = t;
                    w.allreduce_i32(&mut t, &mut a)
                }
                .unwrap();
                assert!(a.iter().enumerate().all(|(i, x)| *x == 6 * i as i32), "rank {r}: wrong sum");
                st
            })
        })
        .collect();
    let stats: Vec<_> = workers.into_iter().map(|h| h.join().unwrap()).collect();
    stop.store(true, Ordering::Relaxed);
    let (_, stragglers) = sw.join().unwrap();
    // The switch published its final counters when it stopped.
    let (head, body) = scrape(http_addr, "/metrics");
    assert!(head.starts_with("HTTP/1.1 200 OK") && head.contains("text/plain; version=0.0.4"), "{head}");
    let s = parse(&body);
    // Each worker's session join counts as a contribution (docs/switch.md §2.1).
    assert_eq!(value(&s, "spotagg_switch_contributions_total", None), (n * len / 64 + n) as f64);
    assert_eq!(value(&s, "spotagg_switch_dropped_total", Some(("reason", "bad_slot"))), 0.0);
    assert_eq!(s.docs.get("spotagg_switch_frames_in_total").map(String::as_str), Some("Frames received."));
    let last: Vec<f64> = (0..n)
        .map(|r| value(&s, "spotagg_switch_straggler_rounds_last_total", Some(("rank", &r.to_string()))))
        .collect();
    let behind: Vec<f64> = (0..n)
        .map(|r| value(&s, "spotagg_switch_straggler_behind_microseconds_total", Some(("rank", &r.to_string()))))
        .collect();
    let max: Vec<f64> = (0..n)
        .map(|r| value(&s, "spotagg_switch_straggler_behind_microseconds_max", Some(("rank", &r.to_string()))))
        .collect();
    eprintln!("straggler report (rank: rounds last, mean lag µs, max lag µs):");
    for r in 0..n {
        eprintln!(
            "  rank {r}: {:4} rounds last, mean {:8.1} µs, max {:8.0} µs",
            last[r],
            behind[r] / last[r].max(1.0),
            max[r]
        );
    }
    assert_eq!(last.iter().sum::<f64>(), (len / 64) as f64, "every round has one last rank");
    // The slowed rank is named: last more often than both others together, and by about the
    // time it waits (a quarter of it leaves room for the scheduler).
    assert!(last[2] > last[0] + last[1], "the slowed rank 2 must be last in most rounds: {last:?}");
    let floor = SLOW.as_micros() as f64 / 4.0;
    assert!(behind[2] / last[2] >= floor, "rank 2 lags by at least {floor} µs a round: {behind:?}");
    assert_eq!(stragglers[2].rounds_last as f64, last[2]);
    assert_eq!(scrape(http_addr, "/other").0.lines().next(), Some("HTTP/1.1 404 Not Found"));
    http_stop.store(true, Ordering::Relaxed);
    server.join().unwrap();
    // The workers' stats in the same form.
    let fams: Vec<_> = stats.iter().enumerate().flat_map(|(r, st)| worker_families(r, st)).collect();
    let w = parse(&render(&fams));
    for (r, st) in stats.iter().enumerate() {
        let l = Some(("rank", r.to_string()));
        let l = l.as_ref().map(|(k, v)| (*k, v.as_str()));
        assert_eq!(value(&w, "spotagg_worker_retransmissions_total", l), st.retransmissions as f64);
        assert_eq!(value(&w, "spotagg_worker_packets_sent_total", l), st.packets_sent as f64);
        assert!((value(&w, "spotagg_worker_rtt_seconds", l) - st.srtt_seconds).abs() < 1e-12);
        assert!(st.srtt_seconds > 0.0);
    }
}
