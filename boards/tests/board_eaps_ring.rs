//! The board as an EAPS ring node (docs/eaps.md §12, issue item "board logic with MACs against
//! the reference"): the switch fabric with its MACs, FIFOs, router, bridge, MAC table, EAPS node,
//! VLAN gates and PDU merges, in Verilator (`spotagg_sim::eaps::board_node`), takes the place of
//! one or more nodes of the ring simulator's differential scenarios
//! (`spotagg_sim::eaps::differential`). Every control frame sent (time, node, port, bytes: the
//! ones the board's node emits and the ones its bridge passes on), every port-state change,
//! every transition and alert, and the data frames lost and looped must be those of the
//! all-reference ring.

use spotagg_boards::tops::switch_fabric::{placeholder_job, SwitchFabric};
use spotagg_hdl::rust_hdl::prelude::*;
use spotagg_hdl::CoreConfig;
use spotagg_sim::eaps::board_node::BoardNodePins;
use spotagg_sim::eaps::differential::{compare_placements, reference};
use spotagg_sim::eaps::hdl_node::HdlEapsNode;
use spotagg_sim::eaps::EapsEngine;
use spotagg_sim::verilator::{ports_of, PortSpec};
use spotagg_testkit::{require_tool, Tool};

/// The fabric's Verilog and ports: a width-4 core of 8 slots of up to 1024 B with the
/// placeholder job (no job is needed here: the model is the one `spotagg tap` and the board
/// benches build), the EAPS node built in with no domain at power-up (the bench writes them as
/// the control link would).
fn fabric() -> (String, Vec<PortSpec>) {
    let core = CoreConfig::new(4, 8, 1024, 32).unwrap();
    let mut f = SwitchFabric::new(core, &placeholder_job(core));
    f.connect_all();
    (generate_verilog(&f), ports_of(&f))
}

fn boards_in_rings(n: usize, placements: &[Vec<usize>]) {
    let (verilog, ports) = fabric();
    let t0 = std::time::Instant::now();
    let (cases, control) = compare_placements(n, placements, |boards, i, mac, domains| -> Box<dyn EapsEngine> {
        if boards.contains(&i) {
            let pins = BoardNodePins::build(&verilog, &ports).expect("the Verilator board model");
            Box::new(HdlEapsNode::with_pins(pins, mac, domains, [true, true]))
        } else {
            reference(i, mac, domains)
        }
    });
    eprintln!(
        "{n} nodes: {cases} rings with boards at {placements:?} identical to the reference ring ({control} control \
         frames in the reference runs, {:.1} s)",
        t0.elapsed().as_secs_f64()
    );
}

/// A 4-node ring: the board as the master, as a transit, as master and transit together, and
/// a ring of boards only, in every differential scenario (each link broken in turn, LINK-DOWN
/// lost, RING-UP lost at every node, stray control frames, two masters, two domains with one
/// send-alert).
///
/// This is the test that found the router handing the first word of a node frame to the
/// previous node frame's port (a PDU on port 1 after one on port 0 lost its first four bytes
/// and was rejected: a transit forwarded only one of the two RING-UP flushes that meet at it).
#[test]
fn the_board_in_a_ring_of_4_matches_the_reference() {
    if !require_tool(Tool::Verilator) {
        return;
    }
    boards_in_rings(4, &[vec![0], vec![2], vec![0, 1], vec![0, 1, 2, 3]]);
}

/// An 8-node ring: the second domain's master (node 4) and its neighbours as boards, and every
/// node a board.
#[test]
fn boards_in_a_ring_of_8_match_the_reference() {
    if !require_tool(Tool::Verilator) {
        return;
    }
    boards_in_rings(8, &[vec![3, 4, 5], (0..8).collect()]);
}
