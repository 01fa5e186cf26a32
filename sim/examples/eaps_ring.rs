//! Prints the ring simulator's table: every scenario at 4, 16 and 50 nodes.
//!
//! `cargo run --release -p spotagg-sim --no-default-features --example eaps_ring`

fn main() {
    println!("hello 1 ms, fail 3 ms, pre-forwarding 3 ms; link-down detection 100 us; 1 Gb/s links, 1 us latency;");
    println!("4 flows per domain, 256-byte frames every 20 us (convergence resolution 20 us)\n");
    println!("{}", spotagg_sim::eaps::scenarios::HEADER);
    for n in [4, 16, 50] {
        match spotagg_sim::eaps::scenarios::all(n) {
            Ok(mut rows) => {
                if n == 16 {
                    for detect in [1_000_000, 5_000_000] {
                        if let Err(e) = spotagg_sim::eaps::scenarios::each_link_detect(n, detect, &mut rows) {
                            eprintln!("{n} nodes: {e}");
                            std::process::exit(1);
                        }
                    }
                }
                rows.iter().for_each(|r| println!("{r}"))
            }
            Err(e) => {
                eprintln!("{n} nodes: {e}");
                std::process::exit(1);
            }
        }
    }
}
