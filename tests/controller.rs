//! `spotagg switch --controller` with `spotagg worker --controller` processes and no job file
//! (docs/controller.md): two sessions at once over loopback, three workers in 32-bit lanes and
//! two in 16-bit lanes, each worker exact within the fixed-point bound; the switch logs both
//! sessions with disjoint slot ranges.
//! Everything is killed on failure or after 60 s.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use spotagg_testkit::procs::{finish, Procs};

const BIN: &str = env!("CARGO_BIN_EXE_spotagg");

#[test]
fn two_sessions_set_themselves_up_through_the_controller() {
    let mut procs = Procs(Vec::new());
    // 127.0.0.170 is this test's own: the switch on SwitchML's first port and its 16-bit twin.
    let mut switch = Command::new(BIN)
        .args(["switch", "--controller", "127.0.0.170:0", "--bind", "127.0.0.170:48864", "--exit-after-idle", "20"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(switch.stdout.take().unwrap()).lines();
    let err = switch.stderr.take().unwrap();
    procs.0.push(switch);
    let mut head = Vec::new();
    while head.len() < 3 {
        head.push(lines.next().expect("the switch stopped printing").unwrap());
    }
    assert!(head[1].contains("16-bit lanes on 127.0.0.170:48880"), "{head:?}");
    let ctl = head[2]
        .strip_prefix("spotagg switch: controller on ")
        .and_then(|r| r.split_whitespace().next())
        .unwrap_or_else(|| panic!("no controller address in {head:?}"))
        .to_string();
    let worker = |rank: usize, world: usize, host: u8, lanes: &str| {
        Command::new(BIN)
            .args(["worker", "--controller", &ctl, "--world", &world.to_string(), "--rank", &rank.to_string()])
            .args(["--bind", &format!("127.0.0.{host}"), "--lanes", lanes, "--payload", "512"])
            .args(["--elements", "30000", "--seed", "9", "--verify"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    for r in 0..3 {
        procs.0.push(worker(r, 3, 171 + r as u8, "32"));
    }
    for r in 0..2 {
        procs.0.push(worker(r, 2, 174 + r as u8, "16"));
    }
    let workers: Vec<usize> = (1..procs.0.len()).collect();
    for (i, f) in finish(&mut procs.0, &workers, Duration::from_secs(60)).into_iter().enumerate() {
        assert!(
            f.status.success() && f.stdout.contains("\"ok\":true"),
            "worker {i}: {} {} {}",
            f.status,
            f.stdout,
            f.stderr
        );
        let lanes = if i < 3 { "\"lanes\":32" } else { "\"lanes\":16" };
        assert!(f.stdout.contains(lanes), "worker {i}: {}", f.stdout);
    }
    // The switch's log: kill it (it would wait out its idle time) and read what it wrote.
    let _ = procs.0[0].kill();
    let _ = procs.0[0].wait();
    let mut log = String::new();
    std::io::Read::read_to_string(&mut { err }, &mut log).unwrap();
    let complete: Vec<&str> = log.lines().filter(|l| l.contains("complete:")).collect();
    assert_eq!(complete.len(), 2, "{log}");
    assert!(complete.iter().any(|l| l.contains("3 workers, job_number") && l.contains("slots")), "{log}");
    let mut ranges: Vec<&str> = complete.iter().filter_map(|l| l.split("slots ").nth(1)).collect();
    ranges.sort();
    assert_eq!(ranges, vec!["0..512", "512..1024"], "{log}");
}
