//! Test support shared by every spotagg crate: the one rule for tests that need a tool;
//! ([`procs`]) the processes and ports of the tests that start `spotagg` processes;
//! ([`ring_script`]) the namespace ring scripts as the tests run them.
//!
//! A test that needs Verilator, Yosys, tshark, openFPGALoader, network namespaces (root) or the
//! YoWASP flow calls [`require_tool`] first. Where the tool is there, the test runs. Where it is
//! missing, the test **fails** with a message that starts with `NOT RUN:`, names the tool and
//! says how to install it, unless the tool's skip variable (`SPOTAGG_SKIP_VERILATOR=1`, …) says
//! that skipping is intended; then it prints the `NOT RUN:` line and `require_tool` returns
//! false, so that the caller returns. A missing tool never passes silently.
//!
//! ```no_run
//! use spotagg_testkit::{require_tool, Tool};
//! if !require_tool(Tool::Verilator) {
//!     return; // SPOTAGG_SKIP_VERILATOR=1: skipped on purpose, and said so
//! }
//! ```
//!
//! The slow tier (place and route, full-size synthesis) is made of `#[ignore]`d tests: plain
//! `cargo test` stays fast for the inner loop, and `scripts/test.sh` runs them with `--ignored`.

use std::process::{Command, Stdio};

pub mod procs;
pub mod ring_script;

/// A tool, or a permission, that a test needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tool {
    /// Verilator (`verilator --version`).
    Verilator,
    /// Yosys (`yosys -V`, or the program `$SPOTAGG_YOSYS` names: `scripts/test.sh` points it at
    /// the board flow's YoWASP Yosys).
    Yosys,
    /// tshark, Wireshark's command-line decoder.
    Tshark,
    /// openFPGALoader.
    OpenFpgaLoader,
    /// Network namespaces, veth and TAP devices: root, `/dev/net/tun`, `ip`, `ping` and `nft`.
    Netns,
}

impl Tool {
    /// Every tool, for listings.
    pub const ALL: [Tool; 5] = [Tool::Verilator, Tool::Yosys, Tool::Tshark, Tool::OpenFpgaLoader, Tool::Netns];

    /// The tool's name in messages.
    pub fn name(self) -> &'static str {
        match self {
            Tool::Verilator => "verilator",
            Tool::Yosys => "yosys",
            Tool::Tshark => "tshark",
            Tool::OpenFpgaLoader => "openFPGALoader",
            Tool::Netns => "network namespaces",
        }
    }

    /// The variable that says skipping is intended (set to `1`).
    pub fn skip_var(self) -> &'static str {
        match self {
            Tool::Verilator => "SPOTAGG_SKIP_VERILATOR",
            Tool::Yosys => "SPOTAGG_SKIP_YOSYS",
            Tool::Tshark => "SPOTAGG_SKIP_TSHARK",
            Tool::OpenFpgaLoader => "SPOTAGG_SKIP_OPENFPGALOADER",
            Tool::Netns => "SPOTAGG_SKIP_NETNS",
        }
    }

    /// How to get it.
    pub fn install_hint(self) -> &'static str {
        match self {
            Tool::Verilator => "apt-get install verilator",
            Tool::Yosys => "apt-get install yosys",
            Tool::Tshark => "apt-get install tshark",
            Tool::OpenFpgaLoader => "apt-get install openfpgaloader",
            Tool::Netns => {
                "run the tests as root on Linux with TUN/TAP, and apt-get install iproute2 iputils-ping nftables"
            }
        }
    }

    /// `None` when the tool is usable, else why not.
    pub fn missing(self) -> Option<String> {
        let runs = |cmd: &str, arg: &str| {
            Command::new(cmd)
                .arg(arg)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .map(|s| s.success())
                .unwrap_or(false)
        };
        let ok = |b: bool, what: &str| if b { None } else { Some(what.to_string()) };
        match self {
            Tool::Verilator => ok(runs("verilator", "--version"), "`verilator` is not on PATH"),
            Tool::Yosys => match std::env::var("SPOTAGG_YOSYS").ok().filter(|p| !p.is_empty()) {
                Some(p) => ok(runs(&p, "-V"), &format!("SPOTAGG_YOSYS={p} does not run")),
                None => ok(runs("yosys", "-V"), "`yosys` is not on PATH"),
            },
            Tool::Tshark => ok(runs("tshark", "--version"), "`tshark` is not on PATH"),
            // openFPGALoader exits non-zero on --help with some versions: being found is enough.
            Tool::OpenFpgaLoader => ok(
                Command::new("openFPGALoader")
                    .arg("--help")
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .status()
                    .is_ok(),
                "`openFPGALoader` is not on PATH",
            ),
            Tool::Netns => {
                // SAFETY: geteuid has no preconditions.
                if unsafe { libc::geteuid() } != 0 {
                    return Some("network namespaces and TAP devices need root (not running as root)".into());
                }
                if !std::path::Path::new("/dev/net/tun").exists() {
                    return Some("/dev/net/tun does not exist (no TUN/TAP support)".into());
                }
                if !runs("ip", "-V") {
                    return Some("`ip` (iproute2) is not on PATH".into());
                }
                if Command::new("ping").arg("-V").stdout(Stdio::null()).stderr(Stdio::null()).status().is_err() {
                    return Some("`ping` (iputils-ping) is not on PATH".into());
                }
                if !runs("nft", "--version") {
                    return Some("`nft` (nftables) is not on PATH".into());
                }
                None
            }
        }
    }

    /// True when the skip variable is set to `1`.
    pub fn skip_requested(self) -> bool {
        std::env::var(self.skip_var()).as_deref() == Ok("1")
    }
}

/// The text of the failure for a missing tool.
pub fn not_run_message(tool: Tool, why: &str) -> String {
    format!(
        "NOT RUN: {} is needed and missing ({why}); install: {}; or set {}=1 to skip on purpose",
        tool.name(),
        tool.install_hint(),
        tool.skip_var()
    )
}

/// Returns true when `tool` is usable. Where it is not: panics with a `NOT RUN:` message naming
/// the tool and its install command, or, when the tool's skip variable is `1`, prints that
/// message and returns false.
#[track_caller]
pub fn require_tool(tool: Tool) -> bool {
    match tool.missing() {
        None => true,
        Some(why) => {
            let msg = not_run_message(tool, &why);
            if tool.skip_requested() {
                eprintln!("{msg} [skipped: {}=1]", tool.skip_var());
                false
            } else {
                panic!("{msg}");
            }
        }
    }
}

/// A precondition that is not a tool (PyPI reachable for the YoWASP install, say): panics with a
/// `NOT RUN:` message unless `skip_var` is `1`, in which case it prints it and returns false.
#[track_caller]
pub fn require(what: &str, result: Result<(), String>, skip_var: &str) -> bool {
    match result {
        Ok(()) => true,
        Err(e) => {
            let msg = format!("NOT RUN: {what}: {e}; or set {skip_var}=1 to skip on purpose");
            if std::env::var(skip_var).as_deref() == Ok("1") {
                eprintln!("{msg} [skipped: {skip_var}=1]");
                false
            } else {
                panic!("{msg}");
            }
        }
    }
}

/// Verilator's lint of `verilog` (top module `top`) with the configuration file `waivers` and
/// the warning switch `warnings` (`-Wall`, or `-Wno-fatal` for the default set), in a folder of
/// its own that is removed after: whether Verilator passed it, and its messages.
pub fn verilator_lint(verilog: &str, waivers: &str, warnings: &str) -> (bool, String) {
    static RUN: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let run = RUN.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("spotagg-lint-{}-{run}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a lint folder");
    std::fs::write(dir.join("top.v"), verilog).expect("top.v written");
    std::fs::write(dir.join("waivers.vlt"), waivers).expect("waivers.vlt written");
    let out = std::process::Command::new("verilator")
        .current_dir(&dir)
        .args(["--lint-only", warnings, "--top-module", "top", "waivers.vlt", "top.v"])
        .output()
        .expect("verilator runs");
    let _ = std::fs::remove_dir_all(&dir);
    (out.status.success(), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_the_tool_and_the_fix() {
        let m = not_run_message(Tool::Verilator, "`verilator` is not on PATH");
        assert!(m.starts_with("NOT RUN: verilator is needed"), "{m}");
        assert!(m.contains("apt-get install verilator") && m.contains("SPOTAGG_SKIP_VERILATOR=1"), "{m}");
    }

    #[test]
    fn a_missing_precondition_fails_unless_skipped() {
        let r = std::panic::catch_unwind(|| require("thing", Err("gone".into()), "SPOTAGG_SKIP_TESTKIT_NEVER_SET"));
        let e = r.unwrap_err();
        let s = e.downcast_ref::<String>().unwrap();
        assert!(s.starts_with("NOT RUN: thing: gone"), "{s}");
        assert!(require("thing", Ok(()), "SPOTAGG_SKIP_TESTKIT_NEVER_SET"));
    }

    #[test]
    fn verilator_lint_passes_a_clean_module_and_reports_an_undeclared_net() {
        if !require_tool(Tool::Verilator) {
            return;
        }
        let config = "`verilator_config\n";
        let (ok, log) = verilator_lint("module top(input a, output b);\nassign b = a;\nendmodule\n", config, "-Wall");
        assert!(ok, "{log}");
        let (ok, log) = verilator_lint("module top(output b);\nassign b = c;\nendmodule\n", config, "-Wall");
        assert!(!ok && log.contains("%Error"), "{log}");
    }
}
