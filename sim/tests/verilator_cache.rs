//! The Verilator build cache under concurrency: two threads of one process, and two processes,
//! build the same model at the same moment into one cold cache. Both must get a working model,
//! and the model must be compiled exactly once: the second builder waits for the first and
//! loads its result (the cache's lock), rather than racing it in a shared build folder.
//!
//! Before the fix, builders of one process shared the folder `<hash>.tmp<pid>` and the second
//! deleted it while the first was compiling in it (`getcwd() failed`, `Cannot find file
//! containing module: waivers.vlt`).

use spotagg_sim::verilator::{BuildOptions, PortSpec, Provenance, VerilatedModel};
use spotagg_testkit::{require_tool, Tool};
use std::path::Path;
use std::process::Command;
use std::sync::{Arc, Barrier};

/// A registered 16-bit adder, written by hand so that the test does not depend on rust-hdl.
const VERILOG: &str = "\
module top(input wire clock, input wire [15:0] a, output reg [15:0] acc);
  initial acc = 16'd0;
  always @(posedge clock) acc <= acc + a;
endmodule
";

fn ports() -> Vec<PortSpec> {
    vec![
        PortSpec { name: "clock".into(), width: 1, input: true },
        PortSpec { name: "a".into(), width: 16, input: true },
        PortSpec { name: "acc".into(), width: 16, input: false },
    ]
}

/// A configuration file, as the real harnesses pass one (the failure named waivers.vlt).
fn opts() -> BuildOptions {
    BuildOptions { config: Some("`verilator_config\nlint_off -rule DECLFILENAME\n".into()), ..Default::default() }
}

/// Builds the model in `root`, checks that it adds, and says whether it compiled it.
fn build_and_check(root: &Path) -> Provenance {
    let mut m = VerilatedModel::build_in(root, VERILOG, &ports(), &opts()).expect("verilator build");
    let (clk, a, acc) = (m.port("clock"), m.port("a"), m.port("acc"));
    let mut expect = 0u16;
    for i in 0..50u16 {
        let v = i.wrapping_mul(977);
        m.set(a, u64::from(v));
        m.tick(clk);
        expect = expect.wrapping_add(v);
        assert_eq!(m.get(acc), u64::from(expect), "cycle {i}");
    }
    m.provenance()
}

#[test]
fn two_threads_build_the_same_model_at_once() {
    if !require_tool(Tool::Verilator) {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let start = Arc::new(Barrier::new(2));
    let handles: Vec<_> = (0..2)
        .map(|_| {
            let (root, start) = (root.path().to_path_buf(), start.clone());
            std::thread::spawn(move || {
                start.wait();
                build_and_check(&root)
            })
        })
        .collect();
    let mut got: Vec<_> = handles.into_iter().map(|h| h.join().expect("a builder thread panicked")).collect();
    got.sort_by_key(|p| *p != Provenance::Built);
    assert_eq!(got, [Provenance::Built, Provenance::Cached], "the model must be compiled exactly once");
    assert_only_published(root.path());
}

/// The child half of the two-process test: run by `two_processes_build_the_same_model_at_once`
/// with `SPOTAGG_CACHE_TEST_ROOT` set (ignored in a plain run, since it has no root to use).
#[test]
#[ignore = "the child process of two_processes_build_the_same_model_at_once"]
fn child_builds_the_model() {
    let root = std::env::var_os("SPOTAGG_CACHE_TEST_ROOT").expect("run by the two-process test");
    // Both children start compiling as close together as process start allows: wait for the
    // moment the parent named.
    let at: u128 = std::env::var("SPOTAGG_CACHE_TEST_START").unwrap().parse().unwrap();
    while std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() < at {
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    println!("provenance={:?}", build_and_check(Path::new(&root)));
}

#[test]
fn two_processes_build_the_same_model_at_once() {
    if !require_tool(Tool::Verilator) {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let exe = std::env::current_exe().unwrap();
    let start = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() + 500;
    let children: Vec<_> = (0..2)
        .map(|_| {
            Command::new(&exe)
                .args(["--exact", "child_builds_the_model", "--ignored", "--nocapture", "--test-threads", "1"])
                .env("SPOTAGG_CACHE_TEST_ROOT", root.path())
                .env("SPOTAGG_CACHE_TEST_START", start.to_string())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let mut got = vec![];
    for c in children {
        let out = c.wait_with_output().unwrap();
        let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(out.status.success(), "a builder process failed:\n{text}");
        let p = text.lines().find_map(|l| l.split("provenance=").nth(1)).unwrap_or_else(|| panic!("{text}"));
        got.push(p.trim().to_string());
    }
    got.sort();
    assert_eq!(got, ["Built", "Cached"], "the model must be compiled exactly once");
    assert_only_published(root.path());
}

/// After the builds, the cache holds the published model, the Verilator runtime that every model
/// links (`runtime-KEY`, built once too) and their lock files, and no build folder.
fn assert_only_published(root: &Path) {
    let mut names: Vec<_> =
        std::fs::read_dir(root).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    assert_eq!(names.len(), 4, "{names:?}");
    assert!(names[1].ends_with(".lock") && names[1].starts_with(&names[0]), "{names:?}");
    assert!(names[2].starts_with("runtime-") && names[3] == format!("{}.lock", names[2]), "{names:?}");
    assert!(root.join(&names[2]).join("libverilated.a").is_file(), "{names:?}");
}
