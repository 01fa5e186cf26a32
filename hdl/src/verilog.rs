//! Verilog of a core configuration (rust-hdl's generator), and of single blocks for checks.

use crate::config::CoreConfig;
use crate::core::Core;
use rust_hdl::prelude::*;

fn verilog_of<B: Block>(mut block: B) -> String {
    block.connect_all();
    generate_verilog(&block)
}

/// The Verilog of the core built with `config`; the top module is `top`.
pub fn core_verilog(config: &CoreConfig) -> String {
    match config.width_bytes {
        1 => verilog_of(Core::<8>::new(*config)),
        4 => verilog_of(Core::<32>::new(*config)),
        8 => verilog_of(Core::<64>::new(*config)),
        w => panic!("width_bytes = {w} is not supported"),
    }
}

/// The Verilog of each block of the core on its own, by block name (top module `top`).
pub fn block_verilogs(config: &CoreConfig) -> Vec<(&'static str, String)> {
    use crate::*;
    let mut v = vec![
        ("frame_checks", verilog_of(frame_checks::FrameChecks::default())),
        ("frame_parser", verilog_of(frame_parser::FrameParser::new())),
        ("scoreboard", verilog_of(scoreboard::Scoreboard::new(config.slots))),
        ("session", verilog_of(session::Session::default())),
        ("slot_memory", verilog_of(slot_memory::SlotMemory::new(config))),
        ("lane_adders", verilog_of(lane_adders::LaneAdders::default())),
        ("element_pass", verilog_of(element_pass::ElementPass::default())),
        ("header_writer", verilog_of(header_writer::HeaderWriter::default())),
        ("aggregator", verilog_of(aggregator::Aggregator::new(config.max_elements()))),
        ("result_builder", verilog_of(result_builder::ResultBuilder::new())),
        ("counters", verilog_of(counters::Counters::default())),
        ("stragglers", verilog_of(straggler::Stragglers::new(true))),
        ("config_registers", verilog_of(config_registers::ConfigRegisters::new(config.slots, config.tree))),
    ];
    match config.width_bytes {
        1 => {
            v.push(("rx_width", verilog_of(stream_width::RxWidth::<8>::new())));
            v.push(("tx_width", verilog_of(stream_width::TxWidth::<8>::new())));
        }
        8 => {
            v.push(("rx_width", verilog_of(stream_width::RxWidth::<64>::new())));
            v.push(("tx_width", verilog_of(stream_width::TxWidth::<64>::new())));
        }
        _ => {
            v.push(("rx_width", verilog_of(stream_width::RxWidth::<32>::new())));
            v.push(("tx_width", verilog_of(stream_width::TxWidth::<32>::new())));
        }
    }
    v
}

/// The Verilog of the EAPS node with `domains` domains (1, 2, 4 or 8), of its PDU receiver and
/// emitter, its domain step, its VLAN gate and its time base (1 µs at 125 MHz), by block name
/// (top module `top`).
pub fn eaps_verilogs(domains: usize) -> Vec<(&'static str, String)> {
    use crate::eaps_node::EapsNode;
    use crate::eaps_pdu::{EapsRx, EapsTx};
    let node = match domains {
        1 => verilog_of(EapsNode::<1>::default()),
        2 => verilog_of(EapsNode::<2>::default()),
        4 => verilog_of(EapsNode::<4>::default()),
        8 => verilog_of(EapsNode::<8>::default()),
        d => panic!("EAPS node with {d} domains is not built (1, 2, 4 or 8)"),
    };
    let gate = match domains {
        1 => verilog_of(crate::eaps_gate::EapsVlanGate::<1>::default()),
        2 => verilog_of(crate::eaps_gate::EapsVlanGate::<2>::default()),
        4 => verilog_of(crate::eaps_gate::EapsVlanGate::<4>::default()),
        _ => verilog_of(crate::eaps_gate::EapsVlanGate::<8>::default()),
    };
    vec![
        ("eaps_rx", verilog_of(EapsRx::default())),
        ("eaps_tx", verilog_of(EapsTx::default())),
        ("eaps_esl_check", verilog_of(crate::eaps_esl::EslCheck::default())),
        ("eaps_esl_seen", verilog_of(crate::eaps_esl::EslSeen::default())),
        ("eaps_domain_step", verilog_of(crate::eaps_step::DomainStep::default())),
        ("eaps_node", node),
        ("eaps_vlan_gate", gate),
        ("eaps_timebase", verilog_of(crate::eaps_gate::EapsTimebase::new(125))),
    ]
}

/// Cells of a Yosys `synth_ecp5` run (the `stat` of the top module, hierarchy flattened).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Utilization {
    /// 4-input LUTs.
    pub lut4: u64,
    /// Flip-flops (TRELLIS_FF).
    pub flip_flops: u64,
    /// Block RAMs (DP16KD, 18 Kbit each).
    pub dp16kd: u64,
    /// Carry cells (CCU2C, two LUTs each).
    pub ccu2c: u64,
    /// Distributed RAM cells (TRELLIS_DPR16X4).
    pub lut_ram: u64,
}

/// Why a synthesis check failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SynthError {
    /// `yosys` is not on PATH.
    NoYosys,
    /// Yosys reported an error (the log's tail).
    Failed(String),
    /// A latch was inferred (the signals).
    Latches(Vec<String>),
}

impl std::fmt::Display for SynthError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SynthError::NoYosys => f.write_str("yosys is not on PATH"),
            SynthError::Failed(log) => write!(f, "yosys failed:\n{log}"),
            SynthError::Latches(s) => write!(f, "latches inferred for {}", s.join(", ")),
        }
    }
}

impl std::error::Error for SynthError {}

/// True when `yosys` can be run.
pub fn yosys_available() -> bool {
    std::process::Command::new("yosys").arg("-V").output().map(|o| o.status.success()).unwrap_or(false)
}

/// Runs Yosys `synth_ecp5` on Verilog whose top module is `top`; fails on any error or latch.
pub fn synth_ecp5(verilog: &str) -> Result<Utilization, SynthError> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static RUN: AtomicUsize = AtomicUsize::new(0);
    if !yosys_available() {
        return Err(SynthError::NoYosys);
    }
    let dir = std::env::temp_dir().join(format!(
        "spotagg-synth-{}-{}",
        std::process::id(),
        RUN.fetch_add(1, Ordering::SeqCst)
    ));
    std::fs::create_dir_all(&dir).map_err(|e| SynthError::Failed(e.to_string()))?;
    std::fs::write(dir.join("top.v"), verilog).map_err(|e| SynthError::Failed(e.to_string()))?;
    let out = std::process::Command::new("yosys")
        .current_dir(&dir)
        .arg("-p")
        .arg("read_verilog top.v; synth_ecp5 -top top; stat")
        .output()
        .map_err(|e| SynthError::Failed(e.to_string()))?;
    let _ = std::fs::remove_dir_all(&dir);
    let log = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    if !out.status.success() || log.contains("ERROR") {
        let tail: Vec<&str> = log.lines().rev().take(30).collect();
        return Err(SynthError::Failed(tail.into_iter().rev().collect::<Vec<_>>().join("\n")));
    }
    let latches: Vec<String> =
        log.lines().filter(|l| l.starts_with("Latch inferred for signal")).map(|l| l.to_string()).collect();
    // The last `stat` block is the top's.
    let stat = &log[log.rfind("Number of cells").unwrap_or(0)..];
    if !latches.is_empty() || stat.contains("LATCH") {
        return Err(SynthError::Latches(latches));
    }
    let count = |cell: &str| -> u64 {
        stat.lines()
            .find_map(|l| {
                let mut it = l.split_whitespace();
                (it.next() == Some(cell)).then(|| it.next().and_then(|n| n.parse().ok())).flatten()
            })
            .unwrap_or(0)
    };
    Ok(Utilization {
        lut4: count("LUT4"),
        flip_flops: count("TRELLIS_FF"),
        dp16kd: count("DP16KD"),
        ccu2c: count("CCU2C"),
        lut_ram: count("TRELLIS_DPR16X4"),
    })
}

/// Yosys `synth_ecp5` utilization of the core built with `config`.
pub fn core_utilization(config: &CoreConfig) -> Result<Utilization, SynthError> {
    synth_ecp5(&core_verilog(config))
}

/// Slots of the largest width-4, 1024-byte core whose block RAM fits in `dp16kd` DP16KD:
/// one DP16KD per slot (2 sets × 256 words × 32 bits) plus 4 for the frame and reply buffers.
pub fn slots_fitting(dp16kd: usize) -> usize {
    dp16kd.saturating_sub(4).min(crate::config::MAX_SLOTS)
}
