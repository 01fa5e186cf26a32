//! Board-level simulation: the board logic ([`SwitchFabric`]: MACs, FIFOs, merge, core,
//! dispatch, bridge) in Verilator, fed Ethernet frames with preamble and FCS at the GMII byte
//! interface of both ports at once, at full line rate (back-to-back frames, 12-byte gaps).
//!
//! Checks: the frames the switch sends equal the reference switch's outputs for the frames
//! the core took, in the order it took them (observed on `merge_start`/`merge_port`), each on
//! the port its destination was seen on; nothing dropped for capacity; a bad-FCS frame is
//! dropped and counted; bridged frames come out of the other port unchanged. The line-rate
//! tests run the board's clocks at their own periods ([`BOARD_PERIODS`]: the core at 100 MHz,
//! transmit and both receive clocks at 125 MHz, the EAPS node at 50 MHz; the two-job board's
//! core at 83.33 MHz, [`CoreClock::for_jobs`]), so they show that the core keeps up with two
//! ports at line rate at the board's clock; the troubled trace runs every clock from one clock
//! (the crossing structure is kept).

// Both ports are driven in step: loops index the per-port arrays by port number.
#![allow(clippy::needless_range_loop)]

use spotagg_boards::tops::config_loader::jobs_writes;
use spotagg_boards::tops::core_clock::CoreClock;
use spotagg_boards::tops::switch_fabric::{fabric_verilog, placeholder_job, SwitchFabric};
use spotagg_driver::engine::Engine;
use spotagg_driver::wire::PayloadSize;
use spotagg_driver::JobConfig;
use spotagg_hdl::rust_hdl::prelude::*;
use spotagg_hdl::CoreConfig;
use spotagg_sim::board_model::FabricPins;
use spotagg_sim::gmii::{self, padded, wrap as wire};
use spotagg_sim::trace::{generate, TraceSpec};
use spotagg_sim::verilator::{ports_of, BuildOptions, VerilatedModel};
use spotagg_spec::multi_job::{JobPlacement, MultiSwitch};
use spotagg_spec::reference::RefSwitch;
use spotagg_testkit::{require_tool, Tool};

const WAIVERS_EXTRA: &str = "lint_off -rule UNOPTFLAT -file \"*top.v\"\n";

/// The fabric's counter ports.
struct CounterIds {
    counter_address: u32,
    counter_data: u32,
    port_counter_address: u32,
    port_counter_data: u32,
}

struct Bench {
    m: VerilatedModel,
    id: FabricPins,
    ctr: CounterIds,
    cycles: u64,
    /// The job's configuration writes, made once the power-up job is loaded (none: the job is
    /// the power-up ROM's).
    job_writes: Vec<(u8, u32)>,
}

impl Bench {
    fn new(core: CoreConfig, job: &JobConfig) -> Option<Bench> {
        Bench::built(core, job, true)
    }

    /// The fabric with the EAPS node built in or (`eaps` false, as `spotagg build --no-eaps`
    /// makes the board) left out. It is built with the core's placeholder job and takes `job`
    /// over its configuration inputs once the placeholder is loaded (as a control link writes
    /// it), so that the tests of one core share one Verilator model whatever their traces' jobs
    /// (the power-up ROM's own path: the two-job and EAPS benches, `board_jobs`).
    fn built(core: CoreConfig, job: &JobConfig, eaps: bool) -> Option<Bench> {
        if !require_tool(Tool::Verilator) {
            return None;
        }
        let f = SwitchFabric::new(core, &placeholder_job(core));
        let mut b = Bench::of(if eaps { f } else { f.without_eaps() });
        b.job_writes = jobs_writes(std::slice::from_ref(job));
        Some(b)
    }

    /// The bench of fabric `f` (built with its settings, e.g. an EAPS power-up default; `J`
    /// cores, one a job).
    fn of<const J: usize>(mut f: SwitchFabric<J>) -> Bench {
        f.connect_all();
        let ports = ports_of(&f);
        let verilog = generate_verilog(&f);
        let opts = BuildOptions {
            config: Some(format!("{}{}", spotagg_sim::verilator_engine::WAIVERS, WAIVERS_EXTRA)),
            extra_args: vec!["-Wno-fatal".into()],
            ..Default::default()
        };
        let m = VerilatedModel::build(&verilog, &ports, &opts).expect("verilator build");
        let id = FabricPins::of(&m);
        let p = |n: &str| m.port(n);
        let ctr = CounterIds {
            counter_address: p("counter_address"),
            counter_data: p("counter_data"),
            port_counter_address: p("port_counter_address"),
            port_counter_data: p("port_counter_data"),
        };
        Bench { m, id, ctr, cycles: 0, job_writes: vec![] }
    }

    fn edge(&mut self) {
        self.id.edge(&mut self.m);
        self.cycles += 1;
    }

    /// Puts `(dv, d)` on port `p`'s receive side.
    fn receive(&mut self, p: usize, (dv, d): (bool, u8)) {
        self.m.set(self.id.rx_dv[p], dv as u64);
        self.m.set(self.id.rxd[p], u64::from(d));
        self.m.set(self.id.rx_er[p], 0);
    }

    /// Samples both ports' transmit side into `dec`; whether a port is sending.
    fn transmit(&mut self, dec: &mut [TxDecoder; 2]) -> bool {
        let mut active = false;
        for p in 0..2 {
            let en = self.m.get(self.id.tx_en[p]) != 0;
            active |= en;
            dec[p].clock(en, self.m.get(self.id.tx_er[p]) != 0, self.m.get(self.id.txd[p]) as u8);
        }
        active
    }

    /// Notes the frame the core takes now, if it takes one: its port and its number there.
    fn merge(&mut self, merged: &mut Vec<(usize, usize)>, counts: &mut [usize; 2]) {
        if self.m.get(self.id.merge_start) != 0 {
            let p = self.m.get(self.id.merge_port) as usize;
            merged.push((p, counts[p]));
            counts[p] += 1;
        }
    }

    /// Counts the clocks in a row that the board is `done` (everything sent) with the core
    /// idle; true once there have been more than 3000.
    fn settled(&mut self, quiet: &mut usize, done: bool) -> bool {
        if done && self.m.get(self.id.core_idle) != 0 {
            *quiet += 1;
        } else {
            *quiet = 0;
        }
        *quiet > 3000
    }

    fn port_counter(&mut self, i: u64) -> u32 {
        self.m.set(self.ctr.port_counter_address, i);
        self.m.eval();
        self.m.get(self.ctr.port_counter_data) as u32
    }

    fn core_counter(&mut self, i: u64) -> u32 {
        self.m.set(self.ctr.counter_address, i);
        self.m.eval();
        self.m.get(self.ctr.counter_data) as u32
    }

    /// An EAPS status word: it crosses from the node's clock on request, so the bench clocks
    /// (every clock at once) until the fabric says the word of the address is there.
    fn eaps_status(&mut self, address: u64) -> u32 {
        let (sa, sd, sv) =
            (self.m.port("eaps$status_address"), self.m.port("eaps$status_data"), self.m.port("eaps_out$status_valid"));
        self.m.set(sa, address);
        self.m.eval();
        for _ in 0..1000 {
            if self.m.get(sv) != 0 {
                return self.m.get(sd) as u32;
            }
            self.edge();
        }
        panic!("EAPS status word {address:#x}: no answer in 1000 clocks");
    }

    /// Writes `data` to configuration register `address` on the fabric's control inputs (as a
    /// control link does), every clock from one clock, and gives it two clocks to land.
    fn write_reg(&mut self, address: u8, data: u32) {
        let (w, a, d) = (self.m.port("cfg_write"), self.m.port("cfg_address"), self.m.port("cfg_data"));
        self.m.set(w, 1);
        self.m.set(a, u64::from(address));
        self.m.set(d, u64::from(data));
        self.edge();
        self.m.set(w, 0);
        self.edge();
        self.edge();
    }
}

/// Decodes GMII transmit bytes: strips preamble and SFD, checks and strips the FCS.
struct TxDecoder {
    cur: Vec<u8>,
    frames: Vec<Vec<u8>>,
    gap: usize,
    min_gap: usize,
    errors: usize,
    gaps: std::collections::BTreeMap<usize, usize>,
}

impl TxDecoder {
    fn new() -> TxDecoder {
        TxDecoder { cur: vec![], frames: vec![], gap: 1000, min_gap: usize::MAX, errors: 0, gaps: Default::default() }
    }
    fn clock(&mut self, en: bool, er: bool, d: u8) {
        if er {
            self.errors += 1;
        }
        if en {
            if self.cur.is_empty() {
                self.min_gap = self.min_gap.min(self.gap);
                if self.gap < 20 {
                    *self.gaps.entry(self.gap).or_default() += 1;
                }
            }
            self.cur.push(d);
            self.gap = 0;
        } else {
            self.gap += 1;
            if !self.cur.is_empty() {
                let w = std::mem::take(&mut self.cur);
                let f = gmii::unwrap(&w).unwrap_or_else(|e| panic!("a sent frame: {e}"));
                self.frames.push(f.to_vec());
            }
        }
    }
}

struct Outcome {
    cycles: u64,
    sent: [Vec<Vec<u8>>; 2],
    merged: Vec<(usize, usize)>,
    min_gap: usize,
    tx_errors: usize,
}

/// Streams `inputs[p]` (wire bytes of each frame) into port p, both ports from the same
/// clock, back to back with 12 idle clocks; runs until everything has been sent.
///
/// With `periods` (core, transmit, port 0 receive, port 1 receive, EAPS node clock periods in
/// ps), each clock runs at its own period from the first frame on: each port takes one GMII
/// byte a clock of its receive clock, the transmit side is sampled on transmit clock edges, the
/// merge on core clock edges; `cycles` counts transmit clocks.
fn run(b: &mut Bench, inputs: &[Vec<Vec<u8>>; 2], periods: Option<[u64; 5]>) -> Outcome {
    b.m.set(b.id.start, 1);
    let mut guard = 0;
    while b.m.get(b.id.configured) == 0 || b.m.get(b.id.core_idle) == 0 {
        b.edge();
        guard += 1;
        assert!(guard < 100_000, "configuration did not finish");
    }
    if !b.job_writes.is_empty() {
        for (a, d) in std::mem::take(&mut b.job_writes) {
            b.write_reg(a, d);
        }
        // The last write reaches the core (the slot state's clear), which is idle again after.
        for _ in 0..8 {
            b.edge();
        }
        while b.m.get(b.id.core_idle) == 0 {
            b.edge();
            guard += 1;
            assert!(guard < 200_000, "the job's configuration did not finish");
        }
    }
    let streams: Vec<Vec<(bool, u8)>> = inputs
        .iter()
        .map(|frames| {
            let mut s = vec![];
            for w in frames {
                s.extend(w.iter().map(|&x| (true, x)));
                s.extend(std::iter::repeat_n((false, 0), 12));
            }
            s
        })
        .collect();
    let mut dec = [TxDecoder::new(), TxDecoder::new()];
    let mut merged = vec![];
    let mut counts = [0usize; 2];
    let start = b.cycles;
    let len = streams[0].len().max(streams[1].len());
    let mut quiet = 0;
    let mut t = 0usize;
    if let Some(periods) = periods {
        // Event-driven: the next edge of whichever clock comes first.
        let (mut next, mut high, mut pos) = (periods.map(|p| p / 2), [false; 5], [0usize; 2]);
        loop {
            let k = (0..5).min_by_key(|&k| next[k]).unwrap();
            next[k] += periods[k] / 2;
            high[k] = !high[k];
            if high[k] && (k == 2 || k == 3) {
                let p = k - 2;
                b.receive(p, streams[p].get(pos[p]).cloned().unwrap_or((false, 0)));
                pos[p] += 1;
                b.m.eval();
            }
            let mut active = false;
            if high[k] && k == 0 {
                b.merge(&mut merged, &mut counts);
            }
            if high[k] && k == 1 {
                active = b.transmit(&mut dec);
                b.cycles += 1;
                t += 1;
            }
            b.m.set(b.id.clocks[k], high[k] as u64);
            b.m.eval();
            if high[k] && k == 1 {
                let sent = pos[0] > streams[0].len() && pos[1] > streams[1].len();
                if b.settled(&mut quiet, sent && !active) {
                    break;
                }
                assert!(t < len * 4 + 1_000_000, "the board did not finish");
            }
        }
    }
    while periods.is_none() {
        for p in 0..2 {
            b.receive(p, streams[p].get(t).cloned().unwrap_or((false, 0)));
        }
        b.m.eval();
        let active = b.transmit(&mut dec);
        b.merge(&mut merged, &mut counts);
        b.edge();
        t += 1;
        if b.settled(&mut quiet, t > len && !active) {
            break;
        }
        assert!(t < len * 4 + 1_000_000, "the board did not finish");
    }
    eprintln!("short gaps between sent frames: port 0 {:?}, port 1 {:?}", dec[0].gaps, dec[1].gaps);
    let [d0, d1] = dec;
    Outcome {
        cycles: b.cycles - start - 3000,
        min_gap: d0.min_gap.min(d1.min_gap),
        tx_errors: d0.errors + d1.errors,
        sent: [d0.frames, d1.frames],
        merged,
    }
}

/// The port of a worker's MAC in these tests: rank parity.
fn port_of(job: &JobConfig, mac: &[u8]) -> Option<usize> {
    job.workers.iter().position(|w| w.mac.0 == mac).map(|r| r % 2)
}

/// Where a frame from the switch to `dst` must come out: a worker's port; for any other
/// unicast MAC the port its frames were sent in on (the switch learned it from the request it
/// answers); group addresses on both.
fn expected_ports(job: &JobConfig, dst: &[u8]) -> Vec<usize> {
    if dst[0] & 1 == 1 {
        return vec![0, 1];
    }
    vec![port_of(job, dst).unwrap_or((dst[5] & 1) as usize)]
}

/// A trace's frames (padded) split by the port they come in on: by source MAC, unknown sources
/// by the last bit of their MAC.
fn split_by_port(job: &JobConfig, trace: &[Vec<u8>]) -> [Vec<Vec<u8>>; 2] {
    let mut frames: [Vec<Vec<u8>>; 2] = [vec![], vec![]];
    for f in trace {
        // A frame too short for a source MAC (a truncated one) comes in on port 0.
        let p = if f.len() < 12 { 0 } else { port_of(job, &f[6..12]).unwrap_or((f[11] & 1) as usize) };
        frames[p].push(padded(f));
    }
    frames
}

fn check_trace(spec: TraceSpec, core: CoreConfig, bad_fcs: bool, bridged: usize) {
    check_trace_clocks(spec, core, bad_fcs, bridged, None)
}

fn check_trace_clocks(spec: TraceSpec, core: CoreConfig, bad_fcs: bool, bridged: usize, periods: Option<[u64; 5]>) {
    check_trace_built(spec, core, bad_fcs, bridged, periods, true)
}

fn check_trace_built(
    spec: TraceSpec,
    core: CoreConfig,
    bad_fcs: bool,
    bridged: usize,
    periods: Option<[u64; 5]>,
    eaps: bool,
) {
    let trace = generate(&spec);
    let job = trace.job.clone();
    let Some(mut b) = Bench::built(core, &job, eaps) else { return };
    let sw = job.switch_mac.0;
    let to_core = |f: &[u8]| f[0..6] == sw || f[0] & 1 == 1;
    let to_bridge = |f: &[u8]| f[0..6] != sw;
    let mut frames = split_by_port(&job, &trace.frames);
    // Host-to-host frames through the bridge.
    for i in 0..bridged {
        let p = i % 2;
        let mut f = vec![0x02, 0x00, 0x00, 0x00, 0x99, i as u8, 0x02, 0x00, 0x00, 0x00, 0x98, i as u8, 0x88, 0xb5];
        f.extend((0..(60 + 37 * i)).map(|x| (x * 13 + i) as u8));
        let at = (frames[p].len() * (i + 1)) / (bridged + 1);
        frames[p].insert(at, f);
    }
    let mut inputs: [Vec<Vec<u8>>; 2] =
        [frames[0].iter().map(|f| wire(f)).collect(), frames[1].iter().map(|f| wire(f)).collect()];
    // One copy of a frame with a broken FCS, which must change nothing.
    let kept = frames.clone();
    if bad_fcs && !frames[0].is_empty() {
        let mut w = wire(&frames[0][0]);
        let n = w.len();
        w[n - 1] ^= 0x40;
        inputs[0].insert(1, w);
    }
    let out = run(&mut b, &inputs, periods);
    // The order in which the core took frames, and the reference's outputs for it.
    let core_frames: [Vec<Vec<u8>>; 2] = [
        kept[0].iter().filter(|f| to_core(f)).cloned().collect(),
        kept[1].iter().filter(|f| to_core(f)).cloned().collect(),
    ];
    {
        // Offered load against what each port must send (wire bytes with gap).
        let mut r = RefSwitch::new(job.clone());
        let mut o = vec![];
        for &(p, i) in &out.merged {
            r.process(&core_frames[p][i], &mut o);
        }
        let wire_len = |f: &Vec<u8>| f.len().max(60) + 24;
        for p in 0..2 {
            let rx: usize = kept[p].iter().map(wire_len).sum();
            let tx: usize =
                o.iter().filter(|f| expected_ports(&job, &f[0..6]).contains(&p)).map(wire_len).sum::<usize>()
                    + kept[1 - p].iter().filter(|f| to_bridge(f)).map(wire_len).sum::<usize>();
            eprintln!("port {p}: receives {rx} wire bytes, must send {tx}");
        }
    }
    if std::env::var_os("BOARD_DIAG").is_some() {
        let mut e = spotagg_sim::verilator_engine::verilator_engine(&job, core, None).unwrap();
        let seq: Vec<Vec<u8>> = out.merged.iter().map(|&(p, i)| core_frames[p][i].clone()).collect();
        let mut o = vec![];
        let st = e.run_stream(&seq, &mut o);
        let bytes: usize = seq.iter().map(|f| f.len()).sum();
        eprintln!("core alone: {} frames, {bytes} bytes, {st:?}", seq.len());
        let br: [usize; 2] = [0, 1].map(|p| kept[1 - p].iter().filter(|f| to_bridge(f)).map(|f| f.len()).sum());
        eprintln!("bridged bytes into port 0 / 1: {br:?}");
    }
    let pc: Vec<u32> = [0, 1, 2, 3, 4, 5, 6, 8, 9, 10, 11, 12, 13].iter().map(|&i| b.port_counter(i)).collect();
    let lens: Vec<usize> = kept.iter().flatten().map(|f| f.len()).filter(|&l| !(60..=1400).contains(&l)).collect();
    assert_eq!(
        out.merged.len(),
        core_frames[0].len() + core_frames[1].len(),
        "frames taken by the core; port counters {pc:?}; odd lengths {lens:?}"
    );
    let mut reference = RefSwitch::new(job.clone());
    let mut ref_out = vec![];
    for &(p, i) in &out.merged {
        reference.process(&core_frames[p][i], &mut ref_out);
    }
    for p in 0..2 {
        let from_switch: Vec<Vec<u8>> = out.sent[p].iter().filter(|f| f[6..12] == sw).cloned().collect();
        let expect: Vec<Vec<u8>> =
            ref_out.iter().filter(|f| expected_ports(&job, &f[0..6]).contains(&p)).map(|f| padded(f)).collect();
        assert_eq!(from_switch.len(), expect.len(), "port {p}: frames from the switch");
        for (i, (a, e)) in from_switch.iter().zip(&expect).enumerate() {
            assert_eq!(a, e, "port {p}: frame {i} from the switch differs from the reference");
        }
        let bridged_out: Vec<Vec<u8>> = out.sent[p].iter().filter(|f| f[6..12] != sw).cloned().collect();
        let bridged_in: Vec<Vec<u8>> = kept[1 - p].iter().filter(|f| to_bridge(f)).cloned().collect();
        assert_eq!(bridged_out, bridged_in, "port {p}: bridged frames");
    }

    let c = |b: &mut Bench, i| b.port_counter(i);
    let (bad0, bad1, over0, over1, good0, good1) =
        (c(&mut b, 1), c(&mut b, 9), c(&mut b, 4), c(&mut b, 12), c(&mut b, 0), c(&mut b, 8));
    let (sent0, sent1, flooded) = (c(&mut b, 5), c(&mut b, 13), c(&mut b, 6));
    assert_eq!(bad0, bad_fcs as u32, "bad FCS counted on port 0");
    assert_eq!(bad1, 0);
    assert_eq!((over0, over1), (0, 0), "frames dropped for capacity");
    assert_eq!(out.tx_errors, 0);
    assert!(out.min_gap >= 12, "inter-frame gap {}", out.min_gap);
    let rc = reference.counters();
    assert_eq!(u64::from(b.core_counter(0)), rc.frames_in, "core frames in");
    assert_eq!(u64::from(b.core_counter(1)), rc.frames_out, "core frames out");
    assert_eq!(u64::from(b.core_counter(2)), rc.contributions, "contributions");
    let bytes_in: usize = inputs.iter().flatten().map(|w| w.len() + 12).sum();
    eprintln!(
        "board: n={} {} frames in (port 0 {}, port 1 {}), {} cycles, {:.2} bytes/cycle offered over both ports; \
         sent port 0 {sent0}, port 1 {sent1} (flooded {flooded}); good {good0}/{good1}; bad FCS {bad0}; \
         dropped for capacity {}; min gap {}",
        job.n(),
        inputs[0].len() + inputs[1].len(),
        inputs[0].len(),
        inputs[1].len(),
        out.cycles,
        bytes_in as f64 / out.cycles as f64,
        over0 + over1,
        out.min_gap
    );
}

/// The board top's clock periods in ps with one job: core (100 MHz), transmit, port 0 and
/// port 1 receive (125 MHz), the EAPS node (50 MHz).
const BOARD_PERIODS: [u64; 5] = [CoreClock::MHZ_100.period_ps(), 8_000, 8_000, 8_000, 20_000];

/// The clock periods of the board top of `jobs` jobs in the line-rate tests: the core at the
/// build's clock ([`CoreClock::for_jobs`]: 10 ns with one job, 12 ns with two), or at
/// `BOARD_CORE_PERIOD_PS` when set (how docs/performance.md measured the headroom: the same
/// test at longer core periods; the asserts stay, so a period that drops frames fails and the
/// message has the port counters, the drops at 4 and 12 of them); the EAPS node at 50 MHz.
fn line_rate_periods(jobs: usize) -> [u64; 5] {
    let core = match std::env::var("BOARD_CORE_PERIOD_PS") {
        Ok(v) => v.parse().expect("BOARD_CORE_PERIOD_PS: a period in ps"),
        Err(_) => CoreClock::for_jobs(jobs).period_ps(),
    };
    eprintln!("core clock period {core} ps ({:.2} MHz)", 1e6 / core as f64);
    [core, 8_000, 8_000, 8_000, 20_000]
}

/// Both ports back to back at line rate for ~107 KB each (647 frames, 1.93 bytes a transmit
/// clock offered over both ports), far more than the 8 KiB receive FIFOs hold: the 100 MHz
/// core keeps up (nothing dropped) and its results equal the reference's.
#[test]
fn both_ports_at_line_rate_match_the_reference() {
    let core = CoreConfig::new(4, 8, 1024, 32).unwrap();
    check_trace_clocks(line_rate_trace(), core, true, 6, Some(line_rate_periods(1)));
}

/// The board of two jobs (docs/switch.md §8, `spotagg build --jobs 2`: the i9's) at its core
/// clock, 83.33 MHz ([`CoreClock::for_jobs`]): two cores behind the job router, built as the
/// i9's (1024-byte slots, 32 workers, straggler counters and tree leaf on, no EAPS node), two
/// 4-worker jobs of 256-byte contributions (the smallest the boards take, the most frames
/// and the most router work a byte) interleaved with frames of unknown (source, job) pairs,
/// back to back at line rate on both ports (each rank's frames on the port of its parity):
/// about 114 KB a port, 14 times what a receive FIFO holds. Nothing dropped for capacity;
/// each job's frames out of each port equal the reference `MultiSwitch`'s for the frames in
/// the order the fabric took them; each job's counters the reference's; every unknown pair
/// counted.
#[test]
fn two_jobs_at_line_rate_match_the_reference() {
    if !require_tool(Tool::Verilator) {
        return;
    }
    // The fabric with two cores is a large value and its Verilog generation deep.
    std::thread::Builder::new().stack_size(256 << 20).spawn(two_jobs_at_line_rate).unwrap().join().unwrap();
}

fn two_jobs_at_line_rate() {
    let a = TraceSpec::new(4, PayloadSize::B256, 8, 80, 21);
    let b = TraceSpec::new(4, PayloadSize::B256, 8, 80, 22).other_job(0xBEE1, 50);
    let t = spotagg_sim::trace::two_jobs(&a, &b, 23);
    assert!(t.a.complete && t.b.complete, "every worker of both traces got every result");
    let jobs = [t.a.job.clone(), t.b.job.clone()];
    assert_eq!(
        jobs[0].workers.iter().map(|w| w.mac).collect::<Vec<_>>(),
        jobs[1].workers.iter().map(|w| w.mac).collect::<Vec<_>>()
    );
    let core = CoreConfig::new(4, 8, 1024, 32).unwrap().with_stragglers(true);
    let mut b = Bench::of(SwitchFabric::<2>::with_jobs(core, &jobs).without_eaps());
    // Rank r of either job sends from the same MAC (JobConfig::example's), so one split serves.
    let frames = split_by_port(&jobs[0], &t.frames);
    let inputs = [0, 1].map(|p| frames[p].iter().map(|f| wire(f)).collect::<Vec<_>>());
    let periods = line_rate_periods(2);
    let out = run(&mut b, &inputs, Some(periods));
    let pc: Vec<u32> = [0, 1, 2, 3, 4, 5, 6, 8, 9, 10, 11, 12, 13].iter().map(|&i| b.port_counter(i)).collect();
    let dropped = b.port_counter(4) + b.port_counter(12);
    assert_eq!(dropped, 0, "frames dropped for capacity at a core period of {} ps; port counters {pc:?}", periods[0]);
    assert_eq!(out.merged.len(), frames[0].len() + frames[1].len(), "frames taken; port counters {pc:?}");
    let mut model = MultiSwitch::new(
        vec![JobPlacement { job: jobs[0].clone(), slot_base: 0 }, JobPlacement { job: jobs[1].clone(), slot_base: 8 }],
        16,
    )
    .unwrap();
    let mut want = vec![];
    for &(p, i) in &out.merged {
        model.process(&frames[p][i], &mut want);
    }
    // A result's job: its destination IPv4 address is one of the job's workers'.
    let job_of = |f: &[u8]| jobs.iter().position(|j| j.workers.iter().any(|w| w.ip.octets() == f[30..34]));
    let sw = jobs[0].switch_mac.0;
    for p in 0..2 {
        assert!(out.sent[p].iter().all(|f| f[6..12] == sw), "port {p}: every frame sent is the switch's");
        for j in 0..2 {
            let got: Vec<&Vec<u8>> = out.sent[p].iter().filter(|f| job_of(f) == Some(j)).collect();
            let expect: Vec<Vec<u8>> = want
                .iter()
                .filter(|f| job_of(f) == Some(j) && expected_ports(&jobs[0], &f[0..6]).contains(&p))
                .map(|f| padded(f))
                .collect();
            assert_eq!(got.len(), expect.len(), "port {p}, job {j}: results sent");
            for (i, (g, e)) in got.iter().zip(&expect).enumerate() {
                assert_eq!(*g, e, "port {p}, job {j}: result {i} differs from the reference");
            }
        }
        assert_eq!(out.sent[p].iter().filter(|f| job_of(f).is_none()).count(), 0, "port {p}: a frame of no job");
    }
    assert_eq!(out.tx_errors, 0);
    for j in 0..2u32 {
        b.write_reg(spotagg_hdl::multi_core::JOB_SELECT, j);
        let rc = model.job(j as usize).counters();
        let got = [0, 1, 2, 3].map(|i| u64::from(b.core_counter(i)));
        assert_eq!(got, [rc.frames_in, rc.frames_out, rc.contributions, rc.duplicates], "job {j}'s counters");
    }
    let unknown = u64::from(b.core_counter(spotagg_hdl::multi_core::UNKNOWN_SOURCE_JOB_COUNTER as u64));
    assert_eq!(unknown, model.unknown_source_job());
    assert_eq!(unknown, t.unknown as u64, "every unknown pair dropped and counted");
    let wire_bytes: usize = inputs.iter().flatten().map(|w| w.len() + 12).sum();
    eprintln!(
        "two jobs at a core period of {} ps: {} frames in (port 0 {}, port 1 {}; {} of unknown pairs), {} transmit clocks, \
         {:.2} bytes a transmit clock offered over both ports; results sent port 0 {}, port 1 {}; dropped for capacity {dropped}",
        periods[0],
        frames[0].len() + frames[1].len(),
        frames[0].len(),
        frames[1].len(),
        t.unknown,
        out.cycles,
        wire_bytes as f64 / out.cycles as f64,
        out.sent[0].len(),
        out.sent[1].len(),
    );
}

/// The trace of the line-rate test.
fn line_rate_trace() -> TraceSpec {
    TraceSpec::new(4, PayloadSize::B256, 8, 160, 7)
}

/// The line-rate test can fail: the same trace with the core at 50 MHz (half the board's core
/// clock, below the ~62 MHz two ports need) overflows the receive FIFOs.
#[test]
fn a_core_at_half_the_clock_drops_for_capacity() {
    let core = CoreConfig::new(4, 8, 1024, 32).unwrap();
    let trace = generate(&line_rate_trace());
    let Some(mut b) = Bench::new(core, &trace.job) else { return };
    let frames = split_by_port(&trace.job, &trace.frames);
    let inputs = [0, 1].map(|p| frames[p].iter().map(|f| wire(f)).collect::<Vec<_>>());
    let out = run(&mut b, &inputs, Some([20_000, 8_000, 8_000, 8_000, 20_000]));
    let dropped = b.port_counter(4) + b.port_counter(12);
    eprintln!("core at 50 MHz: {} frames into the core, {dropped} dropped for capacity", out.merged.len());
    assert!(dropped > 0, "nothing dropped with the core at 50 MHz");
    assert_eq!(out.merged.len() + dropped as usize, frames[0].len() + frames[1].len());
}

#[test]
fn troubled_trace_with_arp_ping_and_malformed_frames() {
    let core = CoreConfig::new(4, 8, 1024, 32).unwrap();
    check_trace(TraceSpec::new(6, PayloadSize::B256, 8, 12, 11).troubled(0.08), core, false, 4);
}

/// The fabric as `spotagg build` makes the board by default, without the EAPS node: the same
/// trace, the same reference, at the board's clocks.
#[test]
fn the_fabric_without_eaps_matches_the_reference() {
    let core = CoreConfig::new(4, 8, 1024, 32).unwrap();
    let spec = TraceSpec::new(6, PayloadSize::B256, 8, 12, 11).troubled(0.08);
    check_trace_built(spec, core, true, 4, Some(BOARD_PERIODS), false);
}

/// Five clocks of unrelated periods: core 9.007 ns (111 MHz), transmit 8.000 ns, port 0
/// receive 7.993 ns (875 ppm fast), port 1 receive 8.011 ns (1375 ppm slow), EAPS node
/// 20.011 ns: every FIFO's pointer crossings at unrelated rates.
#[test]
fn unrelated_clock_periods() {
    let core = CoreConfig::new(4, 8, 1024, 32).unwrap();
    check_trace_clocks(
        TraceSpec::new(4, PayloadSize::B256, 8, 12, 5),
        core,
        true,
        4,
        Some([9007, 8000, 7993, 8011, 20_011]),
    );
}

/// Port 0 must send 3% more than it receives (retransmitted results): its result FIFO fills
/// and the core waits, so both receive FIFOs fill meanwhile. Nothing is dropped with 8 KiB
/// receive FIFOs (36-bit words, 4 DP16KD a port) and the merge serving the fuller FIFO first
/// (with 4 KiB and round robin, port 1's FIFO overflowed once). At the board's periods.
#[test]
fn large_payloads_eight_workers() {
    let core = CoreConfig::new(4, 8, 1024, 32).unwrap();
    check_trace_clocks(
        TraceSpec::new(8, PayloadSize::B1024, 8, 6, 3).troubled(0.05),
        core,
        true,
        2,
        Some(BOARD_PERIODS),
    );
}

/// Verilator lint (default warnings) of the board logic with the core's waivers (rust-hdl's
/// width conventions and one-file output): no warning but UNOPTFLAT, Verilator's speed note on
/// signals whose bits feed each other through rust-hdl's one-block-per-module combinational
/// code (ready/valid handshakes; rust-hdl's loop check and Yosys see no loop).
#[test]
fn fabric_verilog_lints_clean() {
    if !require_tool(Tool::Verilator) {
        return;
    }
    let trace = generate(&TraceSpec::new(4, PayloadSize::B256, 4, 1, 1));
    let v = fabric_verilog(CoreConfig::new(4, 4, 256, 32).unwrap(), &trace.job);
    let (_, log) = spotagg_testkit::verilator_lint(&v, spotagg_sim::verilator_engine::WAIVERS, "-Wno-fatal");
    let warnings: Vec<&str> = log
        .lines()
        .filter(|l| l.starts_with("%Warning") || l.starts_with("%Error"))
        .filter(|l| !l.starts_with("%Warning-UNOPTFLAT"))
        .collect();
    assert!(warnings.is_empty(), "{} warnings:\n{}", warnings.len(), warnings.join("\n"));
}

/// EAPS on the board (docs/eaps.md §12): the fabric with a transit domain baked in (its port
/// states after enable: both blocked, Pre-Forwarding), both links up, `eaps_now` held at 0
/// (the reference's time too). Into port 0: a master's HEALTH on the control VLAN, the same PDU damaged
/// (another EDP frame, to be passed on unchanged), a PDU on a VLAN that is no domain's, and
/// data frames tagged with a protected VLAN, an unprotected one and none. Out of port 1 must
/// come exactly what the reference node (`spotagg_spec::eaps::EapsNode`, same configuration,
/// same links) sends for the control frames, in order, and the bridged data frames but the
/// protected one; nothing out of port 0; the node's status words agree with the reference's
/// state, port states and counters.
#[test]
fn eaps_transit_on_the_board_matches_the_reference_node() {
    eaps_transit_matches_the_reference_node(None);
}

/// The same at the board's clock periods ([`BOARD_PERIODS`]: the node at 50 MHz, the core at
/// 100 MHz, the ports at 125 MHz): the node's frames, verdicts, PDUs and status words cross
/// between clocks of unrelated phases.
#[test]
fn eaps_transit_at_the_board_clocks_matches_the_reference_node() {
    eaps_transit_matches_the_reference_node(Some(BOARD_PERIODS));
}

fn eaps_transit_matches_the_reference_node(periods: Option<[u64; 5]>) {
    use spotagg_driver::control::protocol::eaps::DomainSettings;
    use spotagg_driver::wire::eaps::{emit_frame, EapsRepr, EapsState, EapsType};
    use spotagg_driver::wire::MacAddr;
    use spotagg_spec::eaps::{Action, DomainConfig, EapsNode, FailAction, Role};
    if !require_tool(Tool::Verilator) {
        return;
    }
    let core = CoreConfig::new(4, 4, 256, 32).unwrap();
    let job = JobConfig::example(2, PayloadSize::B256, 4);
    let (cvlan, lo, hi) = (4000u16, 100u16, 102u16);
    // Periods far beyond the test (in core clocks): no timer fires.
    let (hello, fail, pf) = (1u64 << 28, 3u64 << 28, 6u64 << 28);
    let settings = DomainSettings {
        master: false,
        primary_port1: false,
        send_alert: false,
        control_vlan: cvlan,
        protected: (lo, hi),
        hello: hello as u32,
        fail: fail as u32,
        pre_forwarding: pf as u32,
        hello_field: (hello / 1_000_000) as u16,
        fail_field: (fail / 1_000_000) as u16,
    };
    let f = SwitchFabric::new(core, &job).with_eaps(&[Some(settings)], true);
    let mut b = Bench::of(f);
    let link = b.m.port("eaps_link_up");
    b.m.set(link, 3);
    let mut reference = EapsNode::new(
        job.switch_mac,
        vec![DomainConfig {
            role: Role::Transit,
            primary: 0,
            control_vlan: cvlan,
            protected: (lo..=hi).collect(),
            hello,
            fail,
            pre_forwarding: pf,
            fail_action: FailAction::OpenSecondary,
        }],
        [true, true],
    );
    let mut want_control: Vec<(usize, Vec<u8>)> = vec![];
    let mut forwarding = [true, true];
    let note = |actions: Vec<Action>, want: &mut Vec<(usize, Vec<u8>)>, fwd: &mut [bool; 2]| {
        for a in actions {
            match a {
                Action::Send { port, frame } => want.push((port, frame)),
                Action::PortState { domain: 0, port, forwarding } => fwd[port] = forwarding,
                _ => {}
            }
        }
    };
    note(reference.enable(0), &mut want_control, &mut forwarding);
    let master = MacAddr([0x02, 0, 0, 0, 0, 0x4d]);
    let health = emit_frame(
        &EapsRepr {
            edp_sequence: 17,
            eaps_type: EapsType::Health,
            control_vlan: cvlan,
            system_mac: master,
            hello_timer: 1,
            fail_timer: 3,
            state: EapsState::Complete,
            hello_seq: 5,
        },
        master,
        6,
    );
    let mut damaged = health.clone();
    damaged[90] ^= 0x40;
    let mut stray = emit_frame(
        &EapsRepr {
            edp_sequence: 18,
            eaps_type: EapsType::Health,
            control_vlan: 77,
            system_mac: master,
            hello_timer: 1,
            fail_timer: 3,
            state: EapsState::Complete,
            hello_seq: 6,
        },
        master,
        0,
    );
    stray[15] = 77;
    let data = |vlan: Option<u16>, seq: u8| {
        let mut f = vec![0x02, 0, 0, 0, 0x99, seq, 0x02, 0, 0, 0, 0x98, seq];
        if let Some(v) = vlan {
            f.extend([0x81, 0x00, (v >> 8) as u8, v as u8]);
        }
        f.extend([0x88, 0xb5]);
        f.extend((0..64).map(|i| i as u8 ^ seq));
        f
    };
    let control = [health.clone(), damaged.clone(), stray.clone()];
    for fr in &control {
        if let Ok(a) = reference.handle_frame(0, 0, fr) {
            note(a, &mut want_control, &mut forwarding);
        }
    }
    let (blocked, open, untagged) = (data(Some(lo + 1), 1), data(Some(300), 2), data(None, 3));
    let mut inputs: [Vec<Vec<u8>>; 2] = [vec![], vec![]];
    for fr in control.iter().chain([&blocked, &open, &untagged]) {
        inputs[0].push(wire(&padded(fr)));
    }
    let out = run(&mut b, &inputs, periods);
    let want1: Vec<Vec<u8>> = want_control
        .iter()
        .filter(|(p, _)| *p == 1)
        .map(|(_, f)| padded(f))
        .chain([padded(&open), padded(&untagged)])
        .collect();
    assert!(want_control.iter().all(|(p, _)| *p == 1), "{want_control:?}");
    // The damaged PDU's checksum fails: malformed, dropped at this first node and counted
    // (docs/eaps.md §1.1); only the HEALTH goes on.
    assert_eq!(want_control.len(), 1, "the reference forwards the HEALTH and drops the damaged PDU");
    assert!(out.sent[0].is_empty(), "{} frames out of port 0", out.sent[0].len());
    assert_eq!(out.sent[1].len(), want1.len(), "frames out of port 1: {:02x?}", out.sent[1]);
    for (i, (g, w)) in out.sent[1].iter().zip(&want1).enumerate() {
        assert_eq!(g, w, "frame {i} out of port 1");
    }
    // The status words: state, port states, counters.
    let mut word = |a: u64| b.eaps_status(a);
    let w0 = word(0);
    let c = reference.counters(0);
    let hw_state = spotagg_hdl::eaps_node::state_code(w0 & 0xf).expect("a state code").replace('-', "");
    assert_eq!(hw_state, format!("{:?}", reference.state(0)), "state (status word 0 {w0:#x})");
    assert_eq!([(w0 >> 4) & 1 == 1, (w0 >> 5) & 1 == 1], forwarding, "port states (status word 0 {w0:#x})");
    assert_eq!(
        [word(1), word(2), word(3), word(4)],
        [c.tx as u32, c.rx as u32, c.forwarded as u32, c.dropped as u32],
        "PDU counters tx, rx, forwarded, dropped"
    );
    let m = |r: spotagg_driver::wire::eaps::Malformed| c.malformed(r) as u32 & 0xffff;
    {
        use spotagg_driver::wire::eaps::Malformed::*;
        assert_eq!(
            [word(14), word(15)],
            [m(Length) | m(Version) << 16, m(Checksum) | m(TlvList) << 16],
            "malformed counters (status words 14, 15)"
        );
        assert_eq!(c.malformed(Checksum), 1, "the damaged PDU counted");
    }
    eprintln!(
        "EAPS transit on the board: state {:?} (hw code {}), forwarding {forwarding:?}, counters {c:?}, {} frames out of port 1",
        reference.state(0),
        w0 & 0xf,
        out.sent[1].len()
    );
}
