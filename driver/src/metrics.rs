//! Prometheus text exposition (format 0.0.4) of the switch's counters and the workers' stats.
//!
//! A [`Family`] is one metric name with its `# HELP` and `# TYPE` lines and its samples (label
//! sets and values); [`render`] writes families as the text a Prometheus server scrapes;
//! [`merge`] adds up families of several sources (the threads of a multi-port software switch):
//! counters are summed per label set, gauges take the largest value.
//!
//! Names: `spotagg_switch_*` for a switch (the counters of docs/switch.md §4, drops labelled
//! by `reason`; the tree counters of §6; the straggler counters of §7 labelled by `rank`),
//! `spotagg_worker_*` for a worker (labelled by `rank`), `spotagg_board_*` for what a board's
//! control link adds to the core's counters (MAC ports, link state, status).

use crate::control::{BoardStatus, CounterSnapshot};
use crate::counters::{Counters, DropReason};
use crate::worker::Stats;
use std::fmt::Write;

/// The type of a metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Only grows (`_total` names).
    Counter,
    /// A value that can go up and down.
    Gauge,
}

/// One metric family: a name, its help text, its type and its samples.
#[derive(Debug, Clone, PartialEq)]
pub struct Family {
    /// Metric name (`[a-zA-Z_:][a-zA-Z0-9_:]*`).
    pub name: String,
    /// One line of help.
    pub help: String,
    /// Counter or gauge.
    pub kind: Kind,
    /// Label sets (name, value) and values.
    pub samples: Vec<(Vec<(String, String)>, f64)>,
}

impl Family {
    /// A family without samples.
    pub fn new(name: &str, help: &str, kind: Kind) -> Family {
        Family { name: name.to_string(), help: help.to_string(), kind, samples: Vec::new() }
    }
    /// Adds a sample with these labels.
    pub fn sample(mut self, labels: &[(&str, String)], value: f64) -> Family {
        self.samples.push((labels.iter().map(|(k, v)| (k.to_string(), v.clone())).collect(), value));
        self
    }
    /// A family of one unlabelled sample.
    pub fn single(name: &str, help: &str, kind: Kind, value: f64) -> Family {
        Family::new(name, help, kind).sample(&[], value)
    }
}

fn escape_label(v: &str) -> String {
    v.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

fn escape_help(v: &str) -> String {
    v.replace('\\', "\\\\").replace('\n', "\\n")
}

fn number(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v.is_infinite() {
        if v > 0.0 { "+Inf" } else { "-Inf" }.into()
    } else if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format!("{v}")
    }
}

/// The text exposition of `families`, in order.
pub fn render(families: &[Family]) -> String {
    let mut s = String::new();
    for f in families {
        let kind = match f.kind {
            Kind::Counter => "counter",
            Kind::Gauge => "gauge",
        };
        let _ = writeln!(s, "# HELP {} {}", f.name, escape_help(&f.help));
        let _ = writeln!(s, "# TYPE {} {kind}", f.name);
        for (labels, v) in &f.samples {
            s += &f.name;
            if !labels.is_empty() {
                let l: Vec<String> = labels.iter().map(|(k, v)| format!("{k}=\"{}\"", escape_label(v))).collect();
                let _ = write!(s, "{{{}}}", l.join(","));
            }
            let _ = writeln!(s, " {}", number(*v));
        }
    }
    s
}

/// Families of several sources as one: samples with the same name and labels are summed
/// (counters) or maxed (gauges); the order is that of first appearance.
pub fn merge(sources: &[Vec<Family>]) -> Vec<Family> {
    let mut out: Vec<Family> = Vec::new();
    for src in sources {
        for f in src {
            let Some(g) = out.iter_mut().find(|g| g.name == f.name) else {
                out.push(f.clone());
                continue;
            };
            for (labels, v) in &f.samples {
                match g.samples.iter_mut().find(|(l, _)| l == labels) {
                    Some((_, w)) if f.kind == Kind::Counter => *w += v,
                    Some((_, w)) => *w = w.max(*v),
                    None => g.samples.push((labels.clone(), *v)),
                }
            }
        }
    }
    out
}

/// The switch counters of docs/switch.md §4 as families, each sample with `labels`.
pub fn counter_families(c: &Counters, labels: &[(&str, String)]) -> Vec<Family> {
    let one = |name: &str, help: &str, v: u64| Family::new(name, help, Kind::Counter).sample(labels, v as f64);
    let mut drops =
        Family::new("spotagg_switch_dropped_total", "Frames dropped, by reason (docs/switch.md §1).", Kind::Counter);
    for r in DropReason::ALL {
        let mut l = labels.to_vec();
        l.push(("reason", r.name().to_string()));
        drops = drops.sample(&l, c.dropped(r) as f64);
    }
    vec![
        one("spotagg_switch_frames_in_total", "Frames received.", c.frames_in),
        one("spotagg_switch_frames_out_total", "Frames sent.", c.frames_out),
        one("spotagg_switch_contributions_total", "New contributions accepted.", c.contributions),
        one("spotagg_switch_duplicates_total", "Contributions already seen (retransmissions).", c.duplicates),
        one("spotagg_switch_results_multicast_total", "Result frames sent on completing a round.", c.results_multicast),
        one(
            "spotagg_switch_results_retransmitted_total",
            "Result frames sent again to one worker.",
            c.results_retransmitted,
        ),
        one("spotagg_switch_arp_replies_total", "ARP replies sent.", c.arp_replies),
        one("spotagg_switch_icmp_replies_total", "ICMP echo replies sent.", c.icmp_replies),
        drops,
        one(
            "spotagg_switch_ip_checksum_zero_total",
            "Frames handled whose IPv4 checksum was 0, not computed (docs/switch.md §1 6.4).",
            c.ip_checksum_zero,
        ),
    ]
}

/// One rank's straggler counters (docs/switch.md §7): rounds it completed by arriving last, and
/// the sum and the largest of its lags behind the round's first contribution, in µs.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct RankLag {
    /// Rounds in which this rank's contribution was the last.
    pub rounds_last: u64,
    /// Sum of its lags over those rounds, µs.
    pub behind_us_total: f64,
    /// Its largest lag, µs.
    pub behind_us_max: f64,
}

/// The clock of a hardware core, at which its straggler counters' cycles are converted to µs:
/// the rust-hdl and Verilator engines' 10 ns cycle, and a board top's core clock with one job
/// (`pll.clk100`; with two jobs it runs at 83.33 MHz: [`RankLag::from_core_words_at`]).
pub const CORE_CLOCK_MHZ: f64 = 100.0;

impl RankLag {
    /// A hardware core's straggler words of one rank (`4·rank + j`: rounds last, lag total and
    /// lag max, in cycles of [`CORE_CLOCK_MHZ`]), lags in µs.
    pub fn from_core_words(words: &[u32]) -> RankLag {
        RankLag::from_core_words_at(words, CORE_CLOCK_MHZ)
    }

    /// The same words of a core clocked at `core_mhz`.
    pub fn from_core_words_at(words: &[u32], core_mhz: f64) -> RankLag {
        RankLag {
            rounds_last: u64::from(words[0]),
            behind_us_total: f64::from(words[1]) / core_mhz,
            behind_us_max: f64::from(words[2]) / core_mhz,
        }
    }
}

/// The straggler counters of ranks 0.. as the software switch names them
/// (`spotagg_switch_straggler_*`, labelled `rank`, each sample also with `labels`), whatever
/// engine counted them (the reference switch in µs of its clock, the HDL core in cycles
/// converted at its clock).
pub fn straggler_families(ranks: &[RankLag], labels: &[(&str, String)]) -> Vec<Family> {
    let mut last = Family::new(
        "spotagg_switch_straggler_rounds_last_total",
        "Rounds completed by this rank's contribution (it was the last).",
        Kind::Counter,
    );
    let mut total = Family::new(
        "spotagg_switch_straggler_behind_microseconds_total",
        "Sum over those rounds of how far behind the round's first contribution it arrived, µs.",
        Kind::Counter,
    );
    let mut max =
        Family::new("spotagg_switch_straggler_behind_microseconds_max", "The largest such lag, µs.", Kind::Gauge);
    for (r, sc) in ranks.iter().enumerate() {
        let mut l = labels.to_vec();
        l.push(("rank", r.to_string()));
        last = last.sample(&l, sc.rounds_last as f64);
        total = total.sample(&l, sc.behind_us_total);
        max = max.sample(&l, sc.behind_us_max);
    }
    vec![last, total, max]
}

/// What a board's control link reads, as families: the core's counters under the switch's names
/// ([`counter_families`], so one dashboard serves a board and a software switch), each MAC
/// port's receive outcomes and frames sent (labelled `port`), the frames sent to both ports, each
/// port's link state and speed, and the board's status. The board's counters are 32 bits wide
/// and wrap (a Prometheus counter reset, which `rate()` handles); so does `uptime_cycles`.
pub fn board_families(snap: &CounterSnapshot, status: &BoardStatus) -> Vec<Family> {
    let mut out = counter_families(&snap.core, &[]);
    let mut received = Family::new(
        "spotagg_board_port_received_total",
        "Frames a MAC port received, by outcome (good, bad_fcs, runts, giants, overflow).",
        Kind::Counter,
    );
    let mut sent = Family::new("spotagg_board_port_sent_total", "Frames a MAC port sent.", Kind::Counter);
    for (p, pc) in snap.ports.iter().enumerate() {
        for (name, v) in pc.named() {
            if name == "sent" {
                sent = sent.sample(&[("port", p.to_string())], v as f64);
            } else {
                received = received.sample(&[("port", p.to_string()), ("outcome", name.to_string())], v as f64);
            }
        }
    }
    if !snap.ports.is_empty() {
        out.push(received);
        out.push(sent);
    }
    if let Some(f) = snap.flooded {
        out.push(Family::single("spotagg_board_flooded_total", "Frames sent to both ports.", Kind::Counter, f as f64));
    }
    let mut up = Family::new("spotagg_board_link_up", "1 if the port's PHY reports its link up.", Kind::Gauge);
    let mut speed =
        Family::new("spotagg_board_link_speed_bits_per_second", "The link's speed (0 when down).", Kind::Gauge);
    for (p, &l) in status.link_state.iter().enumerate() {
        let bps = match l {
            2 => 1e7,
            3 => 1e8,
            4 => 1e9,
            _ => 0.0,
        };
        up = up.sample(&[("port", p.to_string())], f64::from(u8::from(bps > 0.0)));
        speed = speed.sample(&[("port", p.to_string())], bps);
    }
    let flag = |b: bool| f64::from(u8::from(b));
    out.extend([
        up,
        speed,
        Family::single(
            "spotagg_board_job_enabled",
            "1 if a job is enabled (no job register written since).",
            Kind::Gauge,
            flag(status.job_enabled),
        ),
        Family::single("spotagg_board_slots_in_use", "Slots in use.", Kind::Gauge, f64::from(status.slots_in_use)),
        Family::single("spotagg_board_idle", "1 if nothing was in flight in the core.", Kind::Gauge, flag(status.idle)),
        Family::single(
            "spotagg_board_uptime_cycles",
            "Core clock cycles since power-up (wraps at 2^32).",
            Kind::Gauge,
            f64::from(status.uptime_cycles),
        ),
        Family::single(
            "spotagg_board_snapshot_quiescent",
            "1 if the core was idle while the counters were copied (one consistent snapshot).",
            Kind::Gauge,
            flag(snap.quiescent),
        ),
    ]);
    out
}

/// A worker's stats as families labelled `rank`: retransmissions (and those found spurious),
/// messages sent, received and ignored, the smoothed round trip and the retransmission timeout.
pub fn worker_families(rank: usize, s: &Stats) -> Vec<Family> {
    let l = [("rank", rank.to_string())];
    let c = |name: &str, help: &str, v: u64| Family::new(name, help, Kind::Counter).sample(&l, v as f64);
    let g = |name: &str, help: &str, v: f64| Family::new(name, help, Kind::Gauge).sample(&l, v);
    vec![
        c("spotagg_worker_packets_sent_total", "Messages sent, retransmissions included.", s.packets_sent),
        c("spotagg_worker_packets_received_total", "Messages received, ignored ones included.", s.packets_received),
        c("spotagg_worker_retransmissions_total", "Retransmissions.", s.retransmissions),
        c(
            "spotagg_worker_spurious_retransmissions_total",
            "Retransmissions found spurious (a lower bound).",
            s.spurious_retransmissions,
        ),
        c("spotagg_worker_ignored_total", "Messages ignored: stale, duplicate, malformed, other jobs'.", s.ignored),
        g("spotagg_worker_rtt_seconds", "Smoothed round-trip time (0 before a sample).", s.srtt_seconds),
        g("spotagg_worker_rto_seconds", "Retransmission timeout of a new packet.", s.rto_seconds),
        g("spotagg_worker_last_allreduce_seconds", "Duration of the last all-reduce.", s.seconds),
    ]
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn renders_help_type_labels_and_escapes() {
        let f = Family::new("a_total", "Line one\nline \\ two", Kind::Counter)
            .sample(&[("k", "x\"y\\z\nw".to_string())], 3.0)
            .sample(&[], 0.5);
        assert_eq!(
            render(&[f]),
            "# HELP a_total Line one\\nline \\\\ two\n# TYPE a_total counter\na_total{k=\"x\\\"y\\\\z\\nw\"} 3\na_total 0.5\n"
        );
    }

    #[test]
    fn board_families_name_ports_links_and_status() {
        let mut core = Counters { frames_in: 7, ..Counters::default() };
        core.drops[DropReason::BadSlot.index()] = 1;
        let pc = |good, sent| crate::control::PortCounters { good, bad_fcs: 1, runts: 0, giants: 0, overflow: 2, sent };
        let snap = CounterSnapshot {
            core,
            ports: vec![pc(5, 3), pc(9, 4)],
            flooded: Some(6),
            quiescent: true,
            unknown_source_job: Some(0),
            tree: None,
        };
        let status = BoardStatus {
            idle: true,
            job_enabled: true,
            slots_in_use: 30,
            uptime_cycles: 123,
            link_state: vec![4, 1],
            job_registers: vec![0; 6],
            vlan: 0,
            worker_port: 0xbee0,
            worker_ports: 1,
            job_number: 0,
        };
        let text = render(&board_families(&snap, &status));
        for line in [
            "spotagg_switch_frames_in_total 7",
            "spotagg_switch_dropped_total{reason=\"bad_slot\"} 1",
            "spotagg_board_port_received_total{port=\"0\",outcome=\"good\"} 5",
            "spotagg_board_port_received_total{port=\"1\",outcome=\"overflow\"} 2",
            "spotagg_board_port_sent_total{port=\"1\"} 4",
            "spotagg_board_flooded_total 6",
            "spotagg_board_link_up{port=\"0\"} 1",
            "spotagg_board_link_up{port=\"1\"} 0",
            "spotagg_board_link_speed_bits_per_second{port=\"0\"} 1000000000",
            "spotagg_board_job_enabled 1",
            "spotagg_board_slots_in_use 30",
            "spotagg_board_uptime_cycles 123",
            "spotagg_board_snapshot_quiescent 1",
            "# TYPE spotagg_board_port_sent_total counter",
            "# TYPE spotagg_board_link_up gauge",
        ] {
            assert!(text.lines().any(|l| l == line), "{line} missing from\n{text}");
        }
        // A design without MACs has no port families.
        let bare = CounterSnapshot { ports: vec![], flooded: None, ..snap };
        assert!(!render(&board_families(&bare, &status)).contains("spotagg_board_port_"));
    }

    #[test]
    fn merge_sums_counters_and_maxes_gauges() {
        let a = vec![
            Family::new("c_total", "", Kind::Counter).sample(&[("r", "0".into())], 2.0),
            Family::single("g", "", Kind::Gauge, 5.0),
        ];
        let b = vec![
            Family::new("c_total", "", Kind::Counter)
                .sample(&[("r", "0".into())], 3.0)
                .sample(&[("r", "1".into())], 1.0),
            Family::single("g", "", Kind::Gauge, 4.0),
        ];
        let m = merge(&[a, b]);
        assert_eq!(m[0].samples, vec![(vec![("r".into(), "0".into())], 5.0), (vec![("r".into(), "1".into())], 1.0)]);
        assert_eq!(m[1].samples[0].1, 5.0);
    }
}
