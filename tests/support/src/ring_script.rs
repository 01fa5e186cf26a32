//! The namespace ring scripts (`scripts/eaps_ring.sh`, `scripts/eaps_board_ring.sh`) as the
//! tests run them: under `timeout`, with this build's `spotagg`, their output kept, and the
//! `event` lines that `scripts/eaps_events.py` prints on stderr parsed.

use std::process::Command;
use std::time::Instant;

/// One event window of a ring script (`event NAME lost N flow_again_ms N looped N offered N
/// flowing F`, F a digit 0 or 1 per ping). The times are figures to print: a loaded machine stretches them. What a test
/// asserts is the outcome: [`RingEvent::flowing`] and [`RingEvent::looped`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RingEvent {
    /// The event's name.
    pub name: String,
    /// Pings lost in the window.
    pub lost: u64,
    /// Time until the pings flowed again, ms.
    pub flow_again_ms: u64,
    /// Data frames seen on the ring links beyond what the hosts offered.
    pub looped: u64,
    /// Data frames the hosts offered.
    pub offered: u64,
    /// Per ping of the script, in its order: it flowed again after the event (a reply 0.2 s or
    /// more after the event's start, in its window).
    pub flowing: Vec<bool>,
}

/// A finished, successful run of a ring script.
pub struct RingRun {
    /// Its stdout.
    pub stdout: String,
    /// Its stderr.
    pub stderr: String,
    /// The events it reported, in order.
    pub events: Vec<RingEvent>,
}

impl RingRun {
    /// The whitespace-separated words of each stdout line that starts with `prefix` (the
    /// scripts' `tshark …:` summaries), the prefix taken off.
    pub fn lines_after(&self, prefix: &str) -> Vec<Vec<&str>> {
        self.stdout.lines().filter_map(|l| l.strip_prefix(prefix)).map(|l| l.split_whitespace().collect()).collect()
    }
}

fn word<'a>(words: &[&'a str], key: &str) -> &'a str {
    let i = words.iter().position(|w| *w == key).unwrap_or_else(|| panic!("no {key} in {words:?}"));
    words.get(i + 1).unwrap_or_else(|| panic!("no value of {key} in {words:?}"))
}

fn field(words: &[&str], key: &str) -> u64 {
    word(words, key).parse().unwrap_or_else(|e| panic!("{key} in {words:?}: {e}"))
}

/// Parses the `event` lines of a script's stderr.
pub fn events(stderr: &str) -> Vec<RingEvent> {
    stderr
        .lines()
        .filter(|l| l.starts_with("event "))
        .map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            RingEvent {
                name: w[1].to_string(),
                lost: field(&w, "lost"),
                flow_again_ms: field(&w, "flow_again_ms"),
                looped: field(&w, "looped"),
                offered: field(&w, "offered"),
                flowing: word(&w, "flowing").chars().map(|c| c == '1').collect(),
            }
        })
        .collect()
}

/// Runs `bash script` with `SPOTAGG_BIN=bin`, killed after `limit_secs`; echoes its output,
/// and panics unless it exits 0 and prints `done` (its last line, e.g. `eaps_ring: done`).
pub fn run(bin: &str, script: &str, limit_secs: u32, done: &str) -> RingRun {
    let t0 = Instant::now();
    let out = Command::new("timeout")
        .args(["-k", "5", &limit_secs.to_string(), "bash", script])
        .env("SPOTAGG_BIN", bin)
        .output()
        .unwrap_or_else(|e| panic!("cannot run bash {script}: {e}"));
    let secs = t0.elapsed().as_secs_f64();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    println!("{stdout}");
    eprintln!("{stderr}");
    assert!(out.status.success(), "{script} failed ({}) after {secs:.1} s", out.status);
    assert!(stdout.contains(done), "{script} did not finish (no {done:?})");
    println!("{script}: took {secs:.1} s");
    let events = events(&stderr);
    RingRun { stdout, stderr, events }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_event_lines() {
        let stderr = "eaps_ring: up\nevent p12-down lost 7 flow_again_ms 120 looped 0 offered 40 flowing 1\n\
                      event x lost 0 flow_again_ms 0 looped 3 offered 9 flowing 10 extra 1\n";
        assert_eq!(
            events(stderr),
            vec![
                RingEvent {
                    name: "p12-down".into(),
                    lost: 7,
                    flow_again_ms: 120,
                    looped: 0,
                    offered: 40,
                    flowing: vec![true]
                },
                RingEvent {
                    name: "x".into(),
                    lost: 0,
                    flow_again_ms: 0,
                    looped: 3,
                    offered: 9,
                    flowing: vec![true, false]
                },
            ]
        );
    }

    #[test]
    #[should_panic(expected = "no looped")]
    fn a_missing_field_is_an_error() {
        events("event y lost 1 flow_again_ms 2 offered 3 flowing 1\n");
    }
}
