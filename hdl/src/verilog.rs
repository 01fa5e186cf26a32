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
        ("header_writer", verilog_of(reply::header_buffer_writer::HeaderWriter::default())),
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
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
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

impl Utilization {
    /// LUT4s the cells take: LUT4s, two per carry cell, two per distributed RAM cell.
    pub fn luts(&self) -> u64 {
        self.lut4 + 2 * self.ccu2c + 2 * self.lut_ram
    }
}

/// Why a synthesis check failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SynthError {
    /// Yosys cannot be run (the program [`yosys_program`] names).
    NoYosys,
    /// Yosys reported an error (the log's tail, or its `ERROR:` line).
    Failed(String),
    /// A latch was inferred (the signals).
    Latches(Vec<String>),
}

impl std::fmt::Display for SynthError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SynthError::NoYosys => write!(f, "{} cannot be run", yosys_program()),
            SynthError::Failed(log) => write!(f, "yosys failed:\n{log}"),
            SynthError::Latches(s) => write!(f, "latches inferred for {}", s.join(", ")),
        }
    }
}

impl std::error::Error for SynthError {}

/// The variable that names the Yosys program of [`synth_ecp5`].
pub const YOSYS_VAR: &str = "SPOTAGG_YOSYS";

/// The Yosys that [`synth_ecp5`] runs: `$SPOTAGG_YOSYS` (a path or a command), else `yosys` on
/// PATH. `scripts/test.sh` points it at the flow's pinned YoWASP Yosys in `.venv`, which is
/// the Yosys that builds the bitstream and twice as fast here as Debian's 0.23.
pub fn yosys_program() -> String {
    std::env::var(YOSYS_VAR).ok().filter(|p| !p.is_empty()).unwrap_or_else(|| "yosys".into())
}

/// The command for [`yosys_program`]; a YoWASP one keeps its compiled-code cache beside its
/// virtual environment (`VENV/yowasp-cache`, as the board flow does), not in the home folder.
fn yosys_command() -> std::process::Command {
    let program = yosys_program();
    let mut cmd = std::process::Command::new(&program);
    let path = std::path::Path::new(&program);
    if path.file_name().is_some_and(|n| n.to_string_lossy().starts_with("yowasp-")) {
        if let Some(venv) = path.parent().and_then(|bin| bin.parent()) {
            if std::env::var_os("YOWASP_CACHE_DIR").is_none() {
                cmd.env("YOWASP_CACHE_DIR", venv.join("yowasp-cache"));
            }
        }
    }
    cmd
}

/// True when [`yosys_program`] can be run.
pub fn yosys_available() -> bool {
    yosys_command().arg("-V").output().map(|o| o.status.success()).unwrap_or(false)
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
    // The complete log goes to a file (-l): YoWASP's standard output may lose its end.
    let out = yosys_command()
        .current_dir(&dir)
        .args(["-q", "-l", "yosys.log", "-p", "read_verilog top.v; synth_ecp5 -top top; stat"])
        .output()
        .map_err(|e| SynthError::Failed(e.to_string()))?;
    let log = std::fs::read_to_string(dir.join("yosys.log")).unwrap_or_default();
    let _ = std::fs::remove_dir_all(&dir);
    if !out.status.success() {
        let all = log + &String::from_utf8_lossy(&out.stdout) + &String::from_utf8_lossy(&out.stderr);
        let tail: Vec<&str> = all.lines().rev().take(30).collect();
        return Err(SynthError::Failed(tail.into_iter().rev().collect::<Vec<_>>().join("\n")));
    }
    parse_synth_log(&log)
}

/// Reads Yosys' log of a `synth_ecp5` run: fails on `ERROR:` lines and on inferred latches,
/// else counts the cells of the last statistics block. Reads both `stat` layouts (`LUT4 12` of
/// older Yosys, Debian's 0.23, and `12   LUT4` of newer, the YoWASP 0.70 of the board flow).
pub fn parse_synth_log(log: &str) -> Result<Utilization, SynthError> {
    if let Some(line) = log.lines().find(|l| l.starts_with("ERROR:")) {
        return Err(SynthError::Failed(line.to_string()));
    }
    let start = ["Printing statistics", "Number of cells"].iter().filter_map(|m| log.rfind(m)).max();
    let Some(stat) = start.map(|i| &log[i..]) else {
        return Err(SynthError::Failed("no statistics in the Yosys log".into()));
    };
    // Latches: reported while processes are lowered, or left as cells in the netlist (the
    // techmap libraries that Yosys reads also name `$_DLATCH_*`, so only the statistics count).
    let latches: Vec<String> = log
        .lines()
        .filter(|l| l.contains("Latch inferred for signal"))
        .chain(stat.lines().filter(|l| l.contains("LATCH")))
        .map(|l| l.trim().to_string())
        .collect();
    if !latches.is_empty() {
        return Err(SynthError::Latches(latches));
    }
    let count = |cell: &str| -> u64 {
        stat.lines()
            .find_map(|l| match l.split_whitespace().collect::<Vec<_>>().as_slice() {
                [n, c] | [c, n] if *c == cell => n.parse().ok(),
                _ => None,
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
/// one DP16KD per slot (2 sets × 256 words × 32 bits) in banks of two slots (1024 words, two
/// DP16KD side by side: `slot_memory`), so an even count, plus 4 for the frame and reply buffers.
pub fn slots_fitting(dp16kd: usize) -> usize {
    (dp16kd.saturating_sub(4) / 2 * 2).min(crate::config::MAX_SLOTS)
}

#[cfg(test)]
mod test {
    use super::*;

    /// Whole banks of two slots: the 5A-75B's board top leaves 35 DP16KD to its core (56 less
    /// 21), which hold 30 slots (55 of 56 placed; 31 slots took 57); the i9's 108 hold the
    /// core's maximum; half the 25F's, 24.
    #[test]
    fn slots_fitting_counts_whole_banks() {
        assert_eq!(slots_fitting(35), 30);
        assert_eq!(slots_fitting(34), 30);
        assert_eq!(slots_fitting(28), 24);
        assert_eq!(slots_fitting(108), crate::config::MAX_SLOTS);
        assert_eq!(slots_fitting(6), 2);
        assert_eq!(slots_fitting(5), 0);
        assert_eq!(slots_fitting(3), 0);
    }

    /// The end of a Yosys 0.70 `synth_ecp5` log (counts first).
    const YOSYS_NEW: &str = "2.53. Executing JSON backend.

3. Printing statistics.

=== spotagg_core_top ===

        +----------Local Count, excluding submodules.
        | 
     2874 wires
    30512 wire bits
     5843 cells
     3901   LUT4
      212   CCU2C
     1655   TRELLIS_FF
       20   DP16KD
       16   TRELLIS_DPR16X4
        1   EHXPLLL

End of script.
";

    /// The same from an older Yosys (names first).
    const YOSYS_OLD: &str = "2.50. Printing statistics.

=== top ===

   Number of wires:               2874
   Number of cells:               5843
     CCU2C                         212
     DP16KD                         20
     EHXPLLL                         1
     LUT4                         3901
     TRELLIS_DPR16X4                16
     TRELLIS_FF                   1655
";

    #[test]
    fn yosys_utilization_is_extracted() {
        let want = Utilization { lut4: 3901, ccu2c: 212, flip_flops: 1655, dp16kd: 20, lut_ram: 16 };
        assert_eq!(parse_synth_log(YOSYS_NEW).unwrap(), want);
        assert_eq!(parse_synth_log(YOSYS_OLD).unwrap(), want);
        // Only the last statistics block counts.
        let twice = format!("Printing statistics.\n 9 LUT4\n{YOSYS_NEW}");
        assert_eq!(parse_synth_log(&twice).unwrap().lut4, 3901);
    }

    #[test]
    fn yosys_errors_and_latches_fail() {
        let latch = format!("Latch inferred for signal `\\top.\\q' from process `\\top.$proc$t.v:3$1'.\n{YOSYS_NEW}");
        assert!(matches!(parse_synth_log(&latch), Err(SynthError::Latches(l)) if l.len() == 1));
        let error = "ERROR: Module `nope' referenced in module `top' in cell `x' is not part of the design.\n";
        assert!(matches!(parse_synth_log(error), Err(SynthError::Failed(e)) if e.contains("Module `nope'")));
        assert!(parse_synth_log("no stat here").is_err());
    }
}
