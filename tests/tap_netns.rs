//! The Linux network stack against the simulated switch: a network namespace of the test's
//! own, a TAP device in it, `spotagg tap` attaching the Verilator core (first test) or the
//! MAC-level board model (second test: the switch fabric with both MACs, frames in and out of
//! port 0 with preamble and FCS) to the device, and the kernel talking to it as to a host on
//! the link:
//!
//! - the kernel resolves the switch's MAC by ARP (answered by the HDL): `ip neigh` shows it;
//! - `ping -c 3` of the switch's address gets 3 replies (the RTT is printed);
//! - 4 `spotagg worker --verify` processes (ordinary kernel UDP sockets, each bound to its own
//!   address 10.77.0.10..13 on the TAP device) all-reduce through it, opening a session first
//!   (docs/switch.md §2.1): each exits 0 with `"ok":true` and epoch 1, and the switch's counters
//!   agree with the traffic; in the last test two sets of 4 workers run one after the other on
//!   the same running board model (epochs 1 and 2), both exact.
//!
//! Every worker address is on the one TAP interface, so every `[[worker]]` entry has that
//! interface's MAC (the kernel's source MAC); all workers use the same worker port, which works
//! with distinct addresses. Nothing is sent outside the namespace.
//!
//! The namespace (and with it the TAP device and every process in it) is removed by a Drop
//! guard, on failure too. Where namespaces cannot be made (not root, no `ip`, no /dev/net/tun,
//! no `ping`), the test prints `NOT RUN: ...` and fails, unless `SPOTAGG_SKIP_NETNS=1` says that
//! skipping is intended.

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_spotagg");
const SWITCH_IP: &str = "10.77.0.1";
const SWITCH_MAC: &str = "02:00:5a:00:00:01";
const TAP_MAC: &str = "02:77:00:00:00:0a";
const ELEMENTS: usize = 30_000;
const PAYLOAD_ELEMENTS: usize = 64; // payload_bytes = 256

/// The namespace and the processes started in it; all removed when dropped.
struct Netns {
    name: String,
    tap: String,
    procs: Vec<Child>,
}

impl Netns {
    /// `ip netns exec NAME args...` as a command.
    fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.name]).args(args);
        c
    }

    /// Runs `args` in the namespace; panics (naming the command) unless it succeeds.
    fn run(&self, args: &[&str]) -> Output {
        let out = self.cmd(args).output().unwrap_or_else(|e| panic!("cannot run {args:?} in {}: {e}", self.name));
        assert!(
            out.status.success(),
            "{args:?} in {} failed ({}): {}{}",
            self.name,
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        out
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        for c in &mut self.procs {
            let _ = c.kill();
            let _ = c.wait();
        }
        let _ = Command::new("ip")
            .args(["netns", "exec", &self.name, "ip", "link", "del", &self.tap])
            .stderr(Stdio::null())
            .status();
        let ok = Command::new("ip").args(["netns", "del", &self.name]).status().map(|s| s.success()).unwrap_or(false);
        if !ok {
            eprintln!(
                "tap_netns: could not delete network namespace {} (remove it with `ip netns del {}`)",
                self.name, self.name
            );
        }
    }
}

/// Fails with `NOT RUN` (or, with SPOTAGG_SKIP_NETNS=1, says so and returns) where the machine
/// cannot run the test.
fn not_run(why: &str) {
    spotagg_testkit::require("tap_netns", Err(why.to_string()), spotagg_testkit::Tool::Netns.skip_var());
}

/// Reads the first line of `child`'s stdout within `limit`; the rest of stdout goes to the
/// returned receiver line by line.
fn first_line(child: &mut Child, limit: Duration) -> (String, mpsc::Receiver<String>) {
    let (tx, rx) = mpsc::channel();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let line = rx.recv_timeout(limit).unwrap_or_else(|_| panic!("`spotagg tap` printed nothing in {limit:?}"));
    (line, rx)
}

/// One test at a time: both simulate a switch on the same 2 cores and report throughput.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[test]
fn kernel_arp_ping_and_udp_workers_through_tap_attached_verilator_core() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    through_tap(&["--engine", "verilator"], "verilator", "c", "Verilator core", None, 1);
}

#[test]
fn kernel_arp_ping_and_udp_workers_through_tap_attached_board_model() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    through_tap(&["--board-model"], "board model", "b", "MAC-level board model", None, 1);
}

/// The same on a tagged job: the kernel's VLAN device on the TAP sends and takes 802.1Q
/// frames, and the board's core takes only its VLAN and tags its replies (docs/switch.md §1
/// step 3, §3).
#[test]
fn kernel_arp_ping_and_udp_workers_on_a_vlan_through_tap_attached_board_model() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    through_tap(&["--board-model"], "board model", "v", "MAC-level board model, VLAN 77", Some(77), 1);
}

/// Two sessions back to back on one running board model: a second run of 4 worker processes
/// against the switch the first run left behind (no restart, no control link write) opens
/// epoch 2 and is exact too.
#[test]
fn two_sessions_back_to_back_through_tap_attached_board_model() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    through_tap(&["--board-model"], "board model", "s", "MAC-level board model, two sessions", None, 2);
}

/// The test with `spotagg tap ENGINE_ARGS` (whose first line names `engine`); `tag` tells the
/// namespace and device apart, `what` names the switch in the report; with `vlan` the job is
/// tagged and the workers' addresses live on a VLAN device of the TAP; `sessions` runs of 4
/// workers follow one another.
fn through_tap(engine_args: &[&str], engine: &str, tag: &str, what: &str, vlan: Option<u16>, sessions: usize) {
    let t0 = Instant::now();
    if !spotagg_testkit::require_tool(spotagg_testkit::Tool::Netns) {
        return;
    }
    let pid = std::process::id();
    let name = format!("spotagg-tap-{pid}-{tag}");
    let add = Command::new("ip").args(["netns", "add", &name]).output().expect("cannot run `ip`");
    if !add.status.success() {
        return not_run(&format!("`ip netns add {name}` failed: {}", String::from_utf8_lossy(&add.stderr).trim()));
    }
    let mut ns = Netns { name, tap: format!("sat{}{tag}", pid % 1_000_000), procs: Vec::new() };
    let tap = ns.tap.clone();

    // The link: lo, IPv6 off (no neighbour discovery noise), the TAP device with a fixed MAC
    // and the 4 worker addresses.
    ns.run(&["ip", "link", "set", "lo", "up"]);
    let _ =
        ns.cmd(&["sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1"]).status();
    ns.run(&["ip", "tuntap", "add", "dev", &tap, "mode", "tap"]);
    ns.run(&["ip", "link", "set", "dev", &tap, "address", TAP_MAC]);
    ns.run(&["ip", "link", "set", "dev", &tap, "up"]);
    let dev = match vlan {
        None => tap.clone(),
        Some(v) => {
            let dev = format!("{tap}.{v}");
            let out = ns
                .cmd(&["ip", "link", "add", "link", &tap, "name", &dev, "type", "vlan", "id", &v.to_string()])
                .output()
                .expect("cannot run `ip`");
            let why = format!(
                "the kernel has no 802.1Q VLAN devices (`ip link add ... type vlan`: {}); build it with \
                 CONFIG_VLAN_8021Q or `modprobe 8021q`",
                String::from_utf8_lossy(&out.stderr).trim()
            );
            if !spotagg_testkit::require(
                "a VLAN device on the TAP",
                if out.status.success() { Ok(()) } else { Err(why) },
                "SPOTAGG_SKIP_VLAN",
            ) {
                return;
            }
            ns.run(&["ip", "link", "set", "dev", &dev, "up"]);
            dev
        }
    };
    let ips: Vec<String> = (10..14).map(|d| format!("10.77.0.{d}")).collect();
    for ip in &ips {
        ns.run(&["ip", "addr", "add", &format!("{ip}/24"), "dev", &dev]);
    }

    let mut toml = format!(
        "switch_mac = \"{SWITCH_MAC}\"\nswitch_ip = \"{SWITCH_IP}\"\npayload_bytes = 256\nslots = 8\ntimeout_ms = 200\nmax_retries = 20\n"
    );
    if let Some(v) = vlan {
        toml += &format!("vlan = {v}\nvlan_priority = 4\n");
    }
    for ip in &ips {
        toml += &format!("\n[[worker]]\nip = \"{ip}\"\nmac = \"{TAP_MAC}\"\n");
    }
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("job.toml");
    std::fs::write(&cfg, toml).unwrap();
    let cfg = cfg.to_str().unwrap().to_string();

    // The switch attached to the TAP device.
    let mut args = vec![BIN, "tap", "--config", &cfg, "--tap", &tap];
    args.extend_from_slice(engine_args);
    args.extend(["--exit-after-idle", "60", "--json"]);
    let switch =
        ns.cmd(&args).stdout(Stdio::piped()).stderr(Stdio::inherit()).spawn().expect("cannot start `spotagg tap`");
    ns.procs.push(switch);
    // (The first line comes once the model is built: Verilator compiles it on its first use,
    // minutes on a loaded 2-core machine with nothing cached.)
    let (first, rest) = first_line(&mut ns.procs[0], Duration::from_secs(600));
    assert!(first.contains(&format!("attached to {tap}")) && first.contains(engine), "unexpected first line {first:?}");
    eprintln!("tap_netns: {first} ({:.1} s after the start)", t0.elapsed().as_secs_f64());

    // ping: the kernel first resolves the switch's MAC by ARP, then 3 echo requests.
    let ping = ns.cmd(&["ping", "-c", "3", "-i", "0.2", "-W", "2", "-w", "10", SWITCH_IP]).output().unwrap();
    let ping_out = String::from_utf8_lossy(&ping.stdout).to_string();
    eprint!("tap_netns: {ping_out}");
    assert!(
        // (With -w, ping goes on sending until 3 replies are in: a model slowed by load may
        // answer 5 requests of which the first took a second.)
        ping.status.success() && received(&ping_out) >= 3,
        "ping of the switch failed:\n{ping_out}{}",
        String::from_utf8_lossy(&ping.stderr)
    );
    let rtt = ping_out.lines().find(|l| l.contains("rtt min/avg/max")).expect("no RTT line from ping");
    eprintln!("tap_netns: ping RTT to the TAP-attached {what}: {rtt}");

    let neigh = String::from_utf8_lossy(&ns.run(&["ip", "neigh", "show", SWITCH_IP, "dev", &dev]).stdout).to_string();
    eprintln!("tap_netns: ip neigh: {}", neigh.trim());
    assert!(
        neigh.contains(&format!("lladdr {SWITCH_MAC}")),
        "the kernel did not resolve {SWITCH_IP} to {SWITCH_MAC} by ARP: {neigh:?}"
    );

    // 4 worker processes with kernel UDP sockets, each bound to its own address; each run
    // opens the next session.
    let switch_addr = format!("{SWITCH_IP}:48864");
    let mut gbps = Vec::new();
    let mut sent = 0;
    for session in 1..=sessions {
        ns.procs.truncate(1);
        for (r, ip) in ips.iter().enumerate() {
            let w = ns
                .cmd(&[
                    BIN,
                    "worker",
                    "--config",
                    &cfg,
                    "--rank",
                    &r.to_string(),
                    "--switch",
                    &switch_addr,
                    "--bind",
                    ip,
                    "--elements",
                    &ELEMENTS.to_string(),
                    "--seed",
                    "5",
                    "--verify",
                ])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("cannot start `spotagg worker`");
            ns.procs.push(w);
        }
        let deadline = Instant::now() + Duration::from_secs(90);
        let mut pending: Vec<usize> = (1..=4).collect();
        while !pending.is_empty() {
            assert!(Instant::now() < deadline, "workers {pending:?} did not finish in 90 s");
            pending.retain(|&i| ns.procs[i].try_wait().unwrap().is_none());
            std::thread::sleep(Duration::from_millis(20));
        }
        for i in 1..=4 {
            let c = &mut ns.procs[i];
            let status = c.wait().unwrap();
            let mut out = String::new();
            c.stdout.as_mut().unwrap().read_to_string(&mut out).unwrap();
            let mut err = String::new();
            c.stderr.as_mut().unwrap().read_to_string(&mut err).unwrap();
            assert!(status.success(), "worker {} failed ({status}): {out}{err}", i - 1);
            let v: serde_json::Value =
                serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("worker {} printed {out:?}: {e}", i - 1));
            assert_eq!(v["ok"], true, "worker {}: {out}", i - 1);
            assert_eq!(v["epoch"], session, "worker {}: session {session}'s epoch: {out}", i - 1);
            gbps.push(v["gbps"].as_f64().unwrap());
            sent += v["packets"].as_u64().unwrap();
            eprintln!("tap_netns: worker {}: {}", i - 1, out.trim());
        }
    }

    // Stop the switch and check its counters against the traffic.
    // SAFETY: kill of a child process of ours that has not been reaped.
    unsafe { libc::kill(ns.procs[0].id() as libc::pid_t, libc::SIGTERM) };
    let limit = Instant::now() + Duration::from_secs(60);
    while ns.procs[0].try_wait().unwrap().is_none() {
        assert!(Instant::now() < limit, "`spotagg tap` did not exit on SIGTERM in 60 s");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(ns.procs[0].wait().unwrap().success(), "`spotagg tap` failed");
    let report = rest.recv_timeout(Duration::from_secs(5)).expect("`spotagg tap` printed no counters");
    eprintln!("tap_netns: switch: {report}");
    let v: serde_json::Value = serde_json::from_str(&report).unwrap();
    let c = &v["counters"];
    let contributions = c["contributions"].as_u64().unwrap();
    assert!(c["arp_replies"].as_u64().unwrap() >= 1, "no ARP reply counted: {report}");
    assert!(c["icmp_replies"].as_u64().unwrap() >= 3, "fewer than 3 echo replies counted: {report}");
    // Every packet a worker sent reached the core: a new contribution or a duplicate; every
    // round completed and was answered to all 4.
    let min = sessions as u64 * 4 * ELEMENTS.div_ceil(PAYLOAD_ELEMENTS) as u64;
    assert!(contributions >= min, "too few contributions: {report}");
    assert_eq!(
        contributions + c["duplicates"].as_u64().unwrap(),
        sent,
        "packets sent by the workers vs the core's counters: {report}"
    );
    assert_eq!(c["results_multicast"].as_u64().unwrap(), contributions, "results: {report}");
    assert_eq!(v["tap"]["frames_from_kernel"], c["frames_in"], "{report}");
    assert_eq!(v["tap"]["frames_to_kernel"], c["frames_out"], "{report}");
    assert_eq!(v["tap"]["write_errors"], 0, "{report}");
    eprintln!(
        "tap_netns: {what}: all-reduce of 4 x {ELEMENTS} f32 exact; per-worker payload Gb/s {:?}; test took {:.1} s",
        gbps,
        t0.elapsed().as_secs_f64()
    );
}

/// The replies ping counted ("5 packets transmitted, 5 received, ...").
fn received(ping_out: &str) -> u32 {
    ping_out.split(',').find_map(|f| f.trim().strip_suffix(" received")?.parse().ok()).unwrap_or(0)
}
