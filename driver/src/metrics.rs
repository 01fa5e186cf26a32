//! Prometheus text exposition (format 0.0.4) of the switch's counters and the workers' stats.
//!
//! A [`Family`] is one metric name with its `# HELP` and `# TYPE` lines and its samples (label
//! sets and values); [`render`] writes families as the text a Prometheus server scrapes;
//! [`merge`] adds up families of several sources (the threads of a multi-port software switch):
//! counters are summed per label set, gauges take the largest value.
//!
//! Names: `spotagg_switch_*` for a switch (the counters of docs/switch.md §4, drops labelled
//! by `reason`; the tree counters of §6; the straggler counters of §7 labelled by `rank`),
//! `spotagg_worker_*` for a worker (labelled by `rank`).

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
    ]
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
