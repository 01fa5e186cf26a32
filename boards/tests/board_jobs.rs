//! Two jobs on one board model in Verilator (docs/switch.md §8): the switch fabric with two
//! cores (`SwitchFabric::<2>::with_jobs`: both MACs, FIFOs, the job router, a core per job, both
//! jobs in the power-up ROM), fed GMII bytes on port 0, against the reference `MultiSwitch` on
//! the same frames: two seeded traces with loss and duplication interleaved, frames of unknown
//! (source, job) pairs mixed in. Every frame port 0 sends is the reference's (padded to 60
//! bytes), each job's counters are the reference's, read through the job select, and every
//! worker's results are exact (the traces' closed loop).

use spotagg_boards::tops::switch_fabric::{fabric_verilog_jobs, SwitchFabric};
use spotagg_driver::engine::Engine;
use spotagg_driver::wire::PayloadSize;
use spotagg_hdl::rust_hdl::prelude::*;
use spotagg_hdl::CoreConfig;
use spotagg_sim::board_model::BoardModel;
use spotagg_sim::gmii::padded;
use spotagg_sim::trace::{self, TraceSpec};
use spotagg_sim::verilator::ports_of;
use spotagg_spec::multi_job::{JobPlacement, MultiSwitch};
use spotagg_testkit::{require_tool, Tool};

#[test]
fn two_jobs_on_the_board_model_are_isolated_exact_and_counted_per_job() {
    if !require_tool(Tool::Verilator) {
        return;
    }
    // The fabric with two cores is a large value (and its Verilog generation deep): a thread of
    // its own with room for both.
    std::thread::Builder::new().stack_size(256 << 20).spawn(run).unwrap().join().unwrap();
}

fn run() {
    let lossy = |s: TraceSpec| TraceSpec { loss: 0.05, duplication: 0.05, ..s };
    let a = lossy(TraceSpec::new(3, PayloadSize::B256, 4, 8, 11));
    let b = lossy(TraceSpec::new(2, PayloadSize::B1024, 2, 6, 12)).other_job(0xBEE1, 50);
    let t = trace::two_jobs(&a, &b, 13);
    assert!(t.a.complete && t.b.complete, "every worker of both traces got every result");
    let jobs = [t.a.job.clone(), t.b.job.clone()];
    let core = CoreConfig::new(4, 4, 1024, 32).unwrap();
    let mut f = SwitchFabric::<2>::with_jobs(core, &jobs);
    f.connect_all();
    let mut board = BoardModel::build_jobs(&fabric_verilog_jobs(core, &jobs), &ports_of(&f), 2).expect("board model");
    let mut model = MultiSwitch::new(
        vec![JobPlacement { job: jobs[0].clone(), slot_base: 0 }, JobPlacement { job: jobs[1].clone(), slot_base: 4 }],
        6,
    )
    .unwrap();
    for (i, frame) in t.frames.iter().enumerate() {
        let (mut want, mut got) = (vec![], vec![]);
        model.process(frame, &mut want);
        board.process(frame, &mut got);
        let want: Vec<Vec<u8>> = want.iter().map(|f| padded(f)).collect();
        assert_eq!(
            got,
            want,
            "frame {i} of {}: port 0 sent {} frames, the reference {}",
            t.frames.len(),
            got.len(),
            want.len()
        );
    }
    assert_eq!(board.bad_frames, 0);
    for j in 0..2 {
        assert_eq!(board.job_counters(j), &model.job(j).counters(), "job {j}'s counters");
    }
    assert_eq!(board.unknown_source_job(), model.unknown_source_job());
    assert_eq!(board.unknown_source_job(), t.unknown as u64, "every unknown pair dropped and counted");
    assert_eq!(board.counters(), model.counters());
    let (c0, c1) = (board.job_counters(0), board.job_counters(1));
    // Job 0: 3 workers x 8 chunks, job 1: 2 x 6, each round multicast to its own workers.
    assert_eq!((c0.contributions, c1.contributions), (24, 12), "{c0:?} {c1:?}");
    assert_eq!((c0.results_multicast, c1.results_multicast), (24, 12));
    println!(
        "board model, two jobs: {} frames in ({} unknown pairs), job 0 {} contributions, {} retransmissions answered; job 1 {}, {}; {} cycles",
        t.frames.len(),
        t.unknown,
        c0.contributions,
        c0.results_retransmitted,
        c1.contributions,
        c1.results_retransmitted,
        board.cycles
    );
}
