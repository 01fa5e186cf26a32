//! Prints the Verilog of the EAPS node with the domains given (default 2): `cargo run -p
//! spotagg-hdl --example eaps_verilog -- 2 > node.v`.
fn main() {
    let d = std::env::args().nth(1).map_or(2, |a| a.parse().expect("domains: a number"));
    for (name, v) in spotagg_hdl::verilog::eaps_verilogs(d) {
        if name == "eaps_node" {
            print!("{v}");
        }
    }
}
