//! The processes of a test: killed when the test ends, however it ends, and waited for with a
//! deadline; and a UDP port that they can all bind (a SwitchML one:
//! `spotagg_driver::transport::free_worker_port`).

use std::io::Read;
use std::net::{Ipv4Addr, UdpSocket};
use std::process::{Child, ExitStatus};
use std::time::{Duration, Instant};

/// Child processes, killed and reaped when dropped (on a failed assertion too).
#[derive(Default)]
pub struct Procs(pub Vec<Child>);

impl Drop for Procs {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// A UDP port (any) free on every address of `ips`: the one the system gives the first, when
/// the others can bind it too (100 tries).
pub fn free_udp_port(ips: &[Ipv4Addr]) -> u16 {
    for _ in 0..100 {
        let first = UdpSocket::bind((ips[0], 0)).unwrap();
        let port = first.local_addr().unwrap().port();
        if ips[1..].iter().all(|ip| UdpSocket::bind((*ip, port)).is_ok()) {
            return port;
        }
    }
    panic!("no UDP port free on all of {ips:?}");
}

/// A process that has exited: its status and what it printed (an unpiped stream reads as empty).
#[derive(Debug)]
pub struct Finished {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
}

/// Waits, `limit` at most, until the processes `idx` of `procs` have exited (panics naming those
/// still running), then reads what each printed; in the order of `idx`.
pub fn finish(procs: &mut [Child], idx: &[usize], limit: Duration) -> Vec<Finished> {
    let deadline = Instant::now() + limit;
    let mut pending = idx.to_vec();
    while !pending.is_empty() {
        assert!(Instant::now() < deadline, "processes {pending:?} did not finish in {limit:?}");
        pending.retain(|&i| procs[i].try_wait().unwrap().is_none());
        std::thread::sleep(Duration::from_millis(10));
    }
    idx.iter()
        .map(|&i| {
            let c = &mut procs[i];
            let status = c.wait().unwrap();
            let mut stdout = String::new();
            if let Some(s) = c.stdout.as_mut() {
                s.read_to_string(&mut stdout).unwrap();
            }
            let mut stderr = String::new();
            if let Some(s) = c.stderr.as_mut() {
                s.read_to_string(&mut stderr).unwrap();
            }
            Finished { status, stdout, stderr }
        })
        .collect()
}
