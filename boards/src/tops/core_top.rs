//! The core-only top: the portable core (module `top` of `spotagg_hdl::verilog::core_verilog`)
//! inside a minimal board top, for measuring what the core costs on a board's FPGA before the
//! real board top (MACs, RGMII, bridge) exists, and for checking that it meets timing.
//!
//! It is **not** a working switch: there is no MAC. What it has:
//!
//! - an EHXPLLL making `clk125` (125 MHz) from the 25 MHz oscillator `clk25`;
//! - every core input fed from a shift register that takes 5 bits a cycle from port 0's RGMII
//!   receive pins (`eth0_rx_ctl`, `eth0_rxd`), so no input is a constant;
//! - every core output registered and folded by XOR onto port 0's RGMII transmit pins
//!   (`eth0_tx_ctl`, `eth0_txd`), so no output is unobserved and nothing is optimized away;
//! - `phy_reset_n` held high (on the 5A-75B the 25 MHz clock comes from a PHY, which must not
//!   be held in reset) and `led_n` lit while the PLL is locked.
//!
//! Everything runs on `clk125`, the net the LPF constrains to 125 MHz.

use crate::ecp5::{PllNets, PllSetting};
use crate::Board;
use std::fmt::Write;

/// Name of the core-only top module.
pub const CORE_TOP: &str = "spotagg_core_top";

/// Top-level ports of the core-only top (bus ports without their index).
pub const CORE_TOP_PORTS: &[&str] =
    &["clk25", "led_n", "phy_reset_n", "eth0_rx_ctl", "eth0_rxd", "eth0_tx_ctl", "eth0_txd"];

/// The core-only top's PLL: 125 MHz on `CLKOP` from 25 MHz (VCO 625 MHz).
pub const CORE_TOP_PLL: PllSetting =
    PllSetting { clki_mhz: 25, clkfb_div: 5, clkop_div: 5, clkos_div: None, clkos2_div: None };

/// The EHXPLLL instance ([`CORE_TOP_PLL`]) making 125 MHz on `clkout` from 25 MHz on `clkin`.
pub fn pll_25_to_125(instance: &str, clkin: &str, clkout: &str, lock: &str) -> String {
    CORE_TOP_PLL.instance(instance, PllNets { clki: clkin, clkop: clkout, clkos: None, clkos2: None, lock }, "    ")
}

/// The Verilog of the core-only top around `core_verilog` (whose top module is `top`) built
/// with `width_bytes` bytes per stream beat. The result's top module is [`CORE_TOP`].
pub fn core_top_verilog(core_verilog: &str, width_bytes: usize) -> String {
    let d = 8 * width_bytes;
    // Core inputs, in shift-register order: rx$valid, rx$data, rx$last, rx$bytes, tx$ready,
    // cfg$write, cfg$address, cfg$data, counter$address (the core's ports are interfaces:
    // `rx$valid` is `valid` of `rx`); here the wire of port `rx$valid` is `core_rx_valid`.
    let inputs: [(&str, usize); 9] = [
        ("rx$valid", 1),
        ("rx$data", d),
        ("rx$last", 1),
        ("rx$bytes", 4),
        ("tx$ready", 1),
        ("cfg$write", 1),
        ("cfg$address", 8),
        ("cfg$data", 32),
        ("counter$address", 5),
    ];
    let outputs: [(&str, usize); 10] = [
        ("rx$ready", 1),
        ("tx$valid", 1),
        ("tx$data", d),
        ("tx$last", 1),
        ("tx$bytes", 4),
        ("counter$data", 32),
        ("straggler$index", 7),
        ("straggler$data", 32),
        ("straggler$valid", 1),
        ("idle", 1),
    ];
    let n_in: usize = inputs.iter().map(|(_, w)| w).sum();
    let n_out: usize = outputs.iter().map(|(_, w)| w).sum();
    // The shift register grows by 5 bits a cycle: round it up to a multiple of 5.
    let sr = n_in.div_ceil(5) * 5;

    let mut s = String::new();
    let _ =
        writeln!(s, "// Core-only top (spotagg-boards tops/core_top.rs): the core between a PLL and shift registers.");
    let _ = writeln!(s, "// Not a switch: no MAC. For utilization and timing of the core on the board's FPGA.");
    let _ = writeln!(s, "module {CORE_TOP}(");
    let _ = writeln!(s, "    input wire clk25,");
    let _ = writeln!(s, "    output wire led_n,");
    let _ = writeln!(s, "    output wire phy_reset_n,");
    let _ = writeln!(s, "    input wire eth0_rx_ctl,");
    let _ = writeln!(s, "    input wire [3:0] eth0_rxd,");
    let _ = writeln!(s, "    output reg eth0_tx_ctl,");
    let _ = writeln!(s, "    output reg [3:0] eth0_txd");
    let _ = writeln!(s, ");");
    let _ = writeln!(s, "    wire clk125;");
    let _ = writeln!(s, "    wire pll_lock;");
    s += &pll_25_to_125("pll_25_to_125", "clk25", "clk125", "pll_lock");
    let _ = writeln!(s, "    assign phy_reset_n = 1'b1;");
    let _ = writeln!(s, "    assign led_n = ~pll_lock;");
    let _ = writeln!(s);
    let _ = writeln!(s, "    // Inputs: a {sr}-bit shift register fed 5 bits a cycle from the receive pins.");
    let _ = writeln!(s, "    reg [{}:0] in_sr = {sr}'d0;", sr - 1);
    let _ = writeln!(s, "    always @(posedge clk125) in_sr <= {{in_sr[{}:0], eth0_rx_ctl, eth0_rxd}};", sr - 6);
    let mut bit = 0;
    let wire = |name: &str| format!("core_{}", name.replace('$', "_"));
    for (name, w) in inputs {
        let name = wire(name);
        if w == 1 {
            let _ = writeln!(s, "    wire {name} = in_sr[{bit}];");
        } else {
            let _ = writeln!(s, "    wire [{}:0] {name} = in_sr[{}:{bit}];", w - 1, bit + w - 1);
        }
        bit += w;
    }
    for (name, w) in outputs {
        let name = wire(name);
        if w == 1 {
            let _ = writeln!(s, "    wire {name};");
        } else {
            let _ = writeln!(s, "    wire [{}:0] {name};", w - 1);
        }
    }
    let _ = writeln!(s);
    let _ = writeln!(s, "    top core (");
    let _ = writeln!(s, "        .clock(clk125),");
    let ports: Vec<String> =
        inputs.iter().chain(outputs.iter()).map(|(n, _)| format!("        .{n}({})", wire(n))).collect();
    let _ = writeln!(s, "{}", ports.join(",\n"));
    let _ = writeln!(s, "    );");
    let _ = writeln!(s);
    let _ = writeln!(s, "    // Outputs: registered, then folded by XOR onto the 5 transmit pins.");
    let names: Vec<String> = outputs.iter().map(|(n, _)| wire(n)).collect();
    let _ = writeln!(s, "    reg [{}:0] out_r = {n_out}'d0;", n_out - 1);
    let _ = writeln!(s, "    always @(posedge clk125) out_r <= {{{}}};", names.join(", "));
    let _ = writeln!(s, "    reg [4:0] fold;");
    let _ = writeln!(s, "    integer i;");
    let _ = writeln!(s, "    always @* begin");
    let _ = writeln!(s, "        fold = 5'd0;");
    let _ = writeln!(s, "        for (i = 0; i < {n_out}; i = i + 1) fold[i % 5] = fold[i % 5] ^ out_r[i];");
    let _ = writeln!(s, "    end");
    let _ = writeln!(s, "    initial begin eth0_tx_ctl = 1'b0; eth0_txd = 4'd0; end");
    let _ = writeln!(s, "    always @(posedge clk125) {{eth0_tx_ctl, eth0_txd}} <= fold;");
    let _ = writeln!(s, "endmodule");
    let _ = writeln!(s);
    s + core_verilog
}

/// The board's LPF keeping only the pins the core-only top has (and every clock constraint of
/// those pins and of the internal nets; the PLL's output is `clk125` of the top module here).
pub fn core_top_lpf(board: &Board) -> String {
    let full = crate::board::lpf::lpf(board)
        .replace(&format!("FREQUENCY NET \"{}\"", crate::board::lpf::PLL_CLOCK_NET), "FREQUENCY NET \"clk125\"");
    let mut s = String::new();
    for line in full.lines() {
        let port = ["COMP \"", "PORT \""].iter().find_map(|k| {
            let start = line.find(k)? + k.len();
            let end = line[start..].find('"')? + start;
            Some(&line[start..end])
        });
        let keep = match port {
            Some(p) => CORE_TOP_PORTS.contains(&p.split('[').next().unwrap_or(p)),
            // The board top's 100 MHz core clock and 50 MHz EAPS clock are not here: this top runs
            // everything on clk125.
            None => {
                !line.contains(crate::board::lpf::CORE_CLOCK_NET) && !line.contains(crate::board::lpf::EAPS_CLOCK_NET)
            }
        };
        if keep {
            s += line;
            s.push('\n');
        }
    }
    s
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn lpf_keeps_only_the_core_top_pins() {
        let lpf = core_top_lpf(&crate::board::colorlight_5a_75b_v8::board());
        assert!(lpf.contains("LOCATE COMP \"clk25\" SITE \"P6\";"));
        assert!(lpf.contains("LOCATE COMP \"eth0_rxd[3]\""));
        assert!(lpf.contains("FREQUENCY NET \"clk125\" 125 MHZ;"));
        assert!(lpf.contains("FREQUENCY PORT \"clk25\" 25 MHZ;"));
        assert!(!lpf.contains("eth1_"));
        assert!(!lpf.contains("eth0_rxc"));
        assert!(!lpf.contains("\"mdio\""));
    }

    /// Every port of the real core's `top` (read from its Verilog), with its width, is wired.
    #[test]
    fn top_wires_every_port_of_the_core() {
        let core = spotagg_hdl::verilog::core_verilog(&spotagg_hdl::CoreConfig::default());
        let v = core_top_verilog("module top(); endmodule\n", 4);
        assert!(v.starts_with("// Core-only top"));
        assert!(v.contains("module spotagg_core_top("));
        assert!(v.contains("wire [31:0] core_rx_data = in_sr[32:1];"));
        assert!(v.contains(".CLKFB_DIV(5)"));
        assert!(v.ends_with("module top(); endmodule\n"));
        let args = core.split("// Module arguments").nth(1).and_then(|r| r.split("// Enums").next()).unwrap();
        let (mut n_in, mut n_out) = (0, 0);
        for decl in args.lines().map(str::trim).filter(|l| l.starts_with("input") || l.starts_with("output")) {
            let words: Vec<&str> = decl.trim_end_matches(';').split_whitespace().collect();
            let name = words[words.len() - 1];
            let width = words
                .iter()
                .find_map(|w| w.strip_prefix('[').and_then(|w| w.strip_suffix(":0]")))
                .map_or(1, |hi| hi.parse::<usize>().unwrap() + 1);
            if name == "clock" {
                continue;
            }
            let wire = format!("core_{}", name.replace('$', "_"));
            assert!(v.contains(&format!(".{name}({wire})")), "core port {name} is not wired");
            let declared = if width == 1 { format!("wire {wire}") } else { format!("wire [{}:0] {wire}", width - 1) };
            assert!(v.contains(&declared), "{name}: {declared}");
            if decl.starts_with("input") {
                n_in += width;
            } else {
                n_out += width;
            }
        }
        // The shift register is the inputs rounded up to 5 bits; every output is folded.
        assert!(v.contains(&format!("reg [{}:0] in_sr", n_in.div_ceil(5) * 5 - 1)), "{n_in} input bits");
        assert!(v.contains(&format!("reg [{}:0] out_r", n_out - 1)), "{n_out} output bits");
        assert_eq!((n_in, n_out), (1 + 32 + 1 + 4 + 1 + 1 + 8 + 32 + 5, 1 + 1 + 32 + 1 + 4 + 32 + 7 + 32 + 1 + 1));
    }
}
