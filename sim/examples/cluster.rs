//! The cluster simulator at full size (docs/cluster.md): prints the tables and, with
//! `--features plot` and `--plot PATH`, draws all-reduce time against n.
//!
//! ```text
//! cargo run --release -p spotagg-sim --no-default-features --features plot --example cluster -- --plot docs/cluster-sim.png
//! ```
//!
//! Options: `--elements E` (i32 elements per worker, default 262144 = 1 MiB), `--max-n N`
//! (largest n of the sweep, default 1024), `--plot PATH`.

use spotagg_driver::wire::PayloadSize;
use spotagg_sim::cluster::{ring_allreduce, tree_allreduce, two_jobs, LinkParams, Topology, TreeConfig};
use std::time::{Duration, Instant};

struct Args {
    elements: usize,
    max_n: usize,
    plot: Option<String>,
}

fn args() -> Args {
    let mut a = Args { elements: 1 << 18, max_n: 1024, plot: None };
    let mut it = std::env::args().skip(1);
    while let Some(k) = it.next() {
        let mut val = || it.next().unwrap_or_else(|| panic!("{k} needs a value"));
        match k.as_str() {
            "--elements" => a.elements = val().parse().expect("--elements: a number"),
            "--max-n" => a.max_n = val().parse().expect("--max-n: a number"),
            "--plot" => a.plot = Some(val()),
            other => panic!("unknown option {other} (--elements E, --max-n N, --plot PATH)"),
        }
    }
    a
}

fn link(gbps: f64, loss: f64) -> LinkParams {
    LinkParams { gbps, latency: Duration::from_micros(1), loss }
}

fn shape(t: &Topology) -> String {
    t.fanout().iter().map(|f| f.to_string()).collect::<Vec<_>>().join("×")
}

/// One point of the sweep: (n, rate, tree seconds, ring seconds).
type Point = (usize, f64, f64, f64);

fn main() {
    let a = args();
    let m = a.elements;
    let wall = Instant::now();
    println!("# spotagg cluster simulator");
    println!();
    println!(
        "{m} i32 elements per worker ({:.2} MiB), 1024-byte payloads, 128 slots, links of 1 µs latency each way, racks of 16 workers, 16 racks a switch above.",
        m as f64 * 4.0 / 1048576.0
    );
    println!();
    println!("## Exact under loss (0.1 % on every link, 10 Gb/s)");
    println!();
    println!("| workers | tree | time (ms) | link frames | lost | retransmissions | largest final RTO (ms) | wrong workers | wall (s) |");
    println!("|---:|---|---:|---:|---:|---:|---:|---:|---:|");
    for n in [16usize, 256, 1024] {
        if n > a.max_n {
            continue;
        }
        let t = Topology::racks(n, 16, 16);
        let w = Instant::now();
        let r = tree_allreduce(&t, &TreeConfig::new(link(10.0, 0.001), m, n as u64)).expect("tree run");
        println!(
            "| {n} | {} ({} level{}) | {:.3} | {} | {} | {} | {:.1} | {} | {:.1} |",
            shape(&t),
            t.levels(),
            if t.levels() == 1 { "" } else { "s" },
            r.seconds * 1e3,
            r.link_frames,
            r.link_lost,
            r.retransmissions,
            r.max_rto_seconds * 1e3,
            r.wrong_workers,
            w.elapsed().as_secs_f64()
        );
        assert_eq!(r.wrong_workers, 0, "n = {n}: results not exact");
    }
    println!();
    println!("## All-reduce time, tree against ring on the same links (lossless)");
    println!();
    println!("| n | tree | rate (Gb/s) | tree (µs) | ring (µs) | ring / tree | tree / tree at n = 16 | tree retransmissions |");
    println!("|---:|---|---:|---:|---:|---:|---:|---:|");
    let mut points: Vec<Point> = Vec::new();
    for rate in [1.0, 10.0, 100.0] {
        let mut at16 = None;
        let mut n = 4;
        while n <= a.max_n {
            let t = Topology::racks(n, 16, 16);
            let tree = tree_allreduce(&t, &TreeConfig::new(link(rate, 0.0), m, 7)).expect("tree run");
            let ring = ring_allreduce(&t, link(rate, 0.0), m, PayloadSize::B1024, 7);
            assert_eq!((tree.wrong_workers, ring.wrong_workers), (0, 0), "n = {n}: results not exact");
            if n == 16 {
                at16 = Some(tree.seconds);
            }
            let rel = at16.map_or("".to_string(), |s| format!("{:.3}", tree.seconds / s));
            println!(
                "| {n} | {} | {rate} | {:.1} | {:.1} | {:.2} | {rel} | {} |",
                shape(&t),
                tree.seconds * 1e6,
                ring.seconds * 1e6,
                ring.seconds / tree.seconds,
                tree.retransmissions
            );
            points.push((n, rate, tree.seconds, ring.seconds));
            n *= 2;
        }
    }
    println!();
    println!("## Two jobs on one switch (8 workers each, 10 Gb/s, the switch's engine 100 ns a frame)");
    println!();
    println!("| run | job 0 (ms) | job 0 Gb/s a worker | job 1 (ms) | job 1 Gb/s a worker |");
    println!("|---|---:|---:|---:|---:|");
    let mut cfg = TreeConfig::new(link(10.0, 0.0), m, 11);
    cfg.switch_frame_time = Duration::from_nanos(100);
    for (name, active) in [("job 0 alone", [true, false]), ("job 1 alone", [false, true]), ("together", [true, true])] {
        let (times, r) = two_jobs(8, 8, active, &cfg).expect("two-job run");
        assert_eq!(r.wrong_workers, 0);
        let cell = |j: usize| {
            if active[j] {
                format!("{:.3} | {:.2}", times[j] * 1e3, m as f64 * 32.0 / times[j] / 1e9)
            } else {
                "idle | ".to_string()
            }
        };
        println!("| {name} | {} | {} |", cell(0), cell(1));
    }
    println!();
    println!("## A straggler: 256 workers (16×16), 10 Gb/s, worker 37 (rack 2, rank 5) on a 5 Gb/s link");
    println!();
    let topo = Topology::racks(256.min(a.max_n.max(32)), 16, 16);
    let mut cfg = TreeConfig::new(link(10.0, 0.0), m, 13);
    let slow = 37.min(topo.n() - 1);
    cfg.slow_worker = Some((slow, 0.5));
    let r = tree_allreduce(&topo, &cfg).expect("straggler run");
    assert_eq!(r.wrong_workers, 0);
    println!(
        "time {:.3} ms (lossless, all at 10 Gb/s: see the sweep). Ranks that were last in any round, behind the first:",
        r.seconds * 1e3
    );
    println!();
    println!("| switch | rank | rounds last | mean lag (µs) | max lag (µs) |");
    println!("|---|---:|---:|---:|---:|");
    let mut ties = 0;
    for (sw, ranks) in &r.stragglers {
        for (rank, (last, total, max)) in ranks.iter().enumerate() {
            if *last > 0 && *total == 0 {
                ties += 1;
            } else if *last > 0 {
                let name = if *sw == 0 { "root".to_string() } else { format!("rack {}", sw - 1) };
                println!("| {name} | {rank} | {last} | {:.1} | {max} |", *total as f64 / *last as f64);
            }
        }
    }
    println!();
    println!("({ties} other (switch, rank) pairs were last only in rounds where every contribution came in the same µs: lag 0.)");
    println!();
    println!("wall time {:.1} s", wall.elapsed().as_secs_f64());
    if let Some(path) = &a.plot {
        plot(path, &points, m);
        println!("plot: {path}");
    }
}

#[cfg(feature = "plot")]
fn plot(path: &str, points: &[Point], m: usize) {
    use plotters::prelude::*;
    let root = BitMapBackend::new(path, (1000, 640)).into_drawing_area();
    root.fill(&WHITE).unwrap();
    let max_n = points.iter().map(|p| p.0).max().unwrap_or(4) as f64;
    let (lo, hi) = points.iter().fold((f64::MAX, 0f64), |(lo, hi), p| (lo.min(p.2.min(p.3)), hi.max(p.2.max(p.3))));
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!(
                "all-reduce of {:.0} MiB a worker: aggregation tree vs ring, same links",
                m as f64 * 4.0 / 1048576.0
            ),
            ("sans-serif", 22),
        )
        .margin(16)
        .x_label_area_size(44)
        .y_label_area_size(70)
        .build_cartesian_2d((3.5f64..max_n * 1.15).log_scale(), (lo * 0.8 * 1e6..hi * 1.25 * 1e6).log_scale())
        .unwrap();
    chart
        .configure_mesh()
        .x_desc("workers n")
        .y_desc("time (µs)")
        .x_label_formatter(&|x| format!("{x:.0}"))
        .y_label_formatter(&|y| format!("{y:.0}"))
        .draw()
        .unwrap();
    let colors = [RGBColor(31, 119, 180), RGBColor(214, 39, 40), RGBColor(44, 160, 44)];
    for (i, rate) in [1.0, 10.0, 100.0].into_iter().enumerate() {
        let c = colors[i];
        let pts: Vec<&Point> = points.iter().filter(|p| p.1 == rate).collect();
        let tree: Vec<(f64, f64)> = pts.iter().map(|p| (p.0 as f64, p.2 * 1e6)).collect();
        let ring: Vec<(f64, f64)> = pts.iter().map(|p| (p.0 as f64, p.3 * 1e6)).collect();
        chart
            .draw_series(LineSeries::new(tree.clone(), c.stroke_width(3)))
            .unwrap()
            .label(format!("tree, {rate} Gb/s"))
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(3)));
        chart.draw_series(tree.iter().map(|&p| Circle::new(p, 4, c.filled()))).unwrap();
        chart
            .draw_series(LineSeries::new(ring.clone(), c.stroke_width(1)))
            .unwrap()
            .label(format!("ring, {rate} Gb/s"))
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(1)));
        chart.draw_series(ring.iter().map(|&p| TriangleMarker::new(p, 5, c))).unwrap();
    }
    chart.configure_series_labels().background_style(WHITE.mix(0.85)).border_style(BLACK).draw().unwrap();
    root.present().unwrap();
}

#[cfg(not(feature = "plot"))]
fn plot(_path: &str, _points: &[Point], _m: usize) {
    panic!("--plot needs the plot feature: cargo run --release -p spotagg-sim --no-default-features --features plot --example cluster -- --plot PATH");
}
