//! The job configuration: the switch's addresses, the workers, the payload size and the slots,
//! read from a TOML file shared by every command.
//!
//! ```toml
//! switch_mac = "02:00:5a:00:00:01"
//! switch_ip = "192.0.2.1"
//! payload_bytes = 256      # 128, 256 (k = 64), 512 or 1024 (k = 256)
//! slots = 16               # slots in use, S
//!
//! [[worker]]               # rank 0; ranks follow the order of the entries, n = their number
//! ip = "192.0.2.10"
//! mac = "02:00:5a:00:01:00"
//! ```
//!
//! Optional keys (defaults in brackets): `switch_port` [0xBEE0], the UDP port of the software
//! switch; `worker_port` [0xBEE0], the UDP port workers send from (any port, 1..=65535);
//! `worker_ports` [1], how many consecutive ports from `worker_port` the switch takes a worker's
//! frames from (SwitchML's DPDK workers send thread t's from `worker_port + t`; results go back
//! to the port the contribution came from, docs/switch.md §1 7.5, §3); `zero_ip_checksum`
//! [false], take frames whose IPv4 header checksum is 0 ("not computed", as SwitchML's DPDK
//! workers send them) and count them apart (docs/switch.md §1 6.4); `window` [slots], slots a
//! worker keeps in flight; `timeout_ms` [20], the first retransmission timeout and its floor (the timeout then follows
//! the measured round trip: [`crate::rtt`]); `max_retries`
//! [12], retransmissions of one packet before a worker gives up; `job_number` [0];
//! `switch_ports` [1], the UDP ports of a multi-threaded software switch (`spotagg switch
//! --threads T`): a worker sends slot s to the switch's port + (s mod `switch_ports`);
//! `vlan` [none], the job's 802.1Q VLAN ID (1..=4094): the switch then takes only frames tagged
//! with it and tags what it sends, with PCP `vlan_priority` [0] (docs/switch.md §1 step 3, §3).
//! The hosts reach such a job through a VLAN interface (`ip link add … type vlan id V`).
//! `tree_workers` [n], the workers of the whole aggregation tree, by which a worker scales its
//! floats so that no level can overflow (docs/switch.md §6). `lanes16` [false], the switch takes
//! contributions of 16-bit lanes at 0xBEF0..=0xBEFF as well (docs/switch.md §9; at most
//! [`MAX_LANES16_WORKERS`] workers in the tree).
//!
//! A switch that is a leaf of a parent switch (docs/switch.md §6) names it in a table:
//!
//! ```toml
//! [parent]
//! ip = "192.0.2.100"        # the parent switch
//! mac = "02:00:5a:00:00:64"
//! rank = 3                  # this switch's rank in the parent's job
//! port = 48864              # [0xBEE0] the parent's UDP port
//! ```
//! `sessions` [true], a worker opens a session (docs/switch.md §2.1) before its first operation,
//! so that it works against a switch that served earlier runs (false: the job's `job_number`
//! is sent as it is and a fresh worker needs a freshly configured switch, as with a SwitchML
//! switch); `switches` [none: the one switch the command line names], the ordered list of
//! switch UDP addresses (`"ip:port"`), the first active, each next one a standby a worker
//! moves to when the active one stops answering (docs/worker.md; needs sessions);
//! `failover_ms` [500], the bound of the failure detection time: a worker moves on after
//! min(`failover_ms`, 8 × its retransmission timeout) without any result.

use crate::wire::vlan::MAX_VID;
use crate::wire::{switchml, Ipv4Addr, MacAddr, PayloadSize};
use serde::Deserialize;
use std::net::SocketAddr;
use std::time::Duration;

/// Most workers a job can have (the width of the worker bitmap).
pub const MAX_WORKERS: usize = 32;
/// Most workers of a whole aggregation tree (`tree_workers`): 2^20, so that the fixed-point
/// scale keeps at least 10 bits per worker.
pub const MAX_TREE_WORKERS: usize = 1 << 20;
/// Most workers of a tree whose jobs take 16-bit lanes (`lanes16`, docs/switch.md §9): each
/// contribution then has ⌊(2^15 − 1)/N⌋ ≥ 31 levels each side of zero.
pub const MAX_LANES16_WORKERS: usize = 1024;
/// Most consecutive worker ports a job takes (`worker_ports`): SwitchML's worker threads, 256 at
/// most in any configuration it ships.
pub const MAX_WORKER_PORTS: u16 = 256;
/// Most slots a job can address (15 bits of `pool_index`).
pub const MAX_SLOTS: usize = 1 << 15;

/// One worker of the job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WorkerEntry {
    /// The worker's IPv4 address: its contributions are recognised by it.
    pub ip: Ipv4Addr,
    /// The worker's MAC: results are sent to it.
    pub mac: MacAddr,
}

/// The parent of a switch in an aggregation tree (docs/switch.md §6).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParentConfig {
    /// The parent switch's IPv4 address.
    pub ip: Ipv4Addr,
    /// The parent switch's MAC.
    pub mac: MacAddr,
    /// The parent's UDP port (a SwitchML port).
    pub port: u16,
    /// This switch's rank in the parent's job.
    pub rank: usize,
}

/// A validated job configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobConfig {
    /// The switch's MAC.
    pub switch_mac: MacAddr,
    /// The switch's IPv4 address.
    pub switch_ip: Ipv4Addr,
    /// Payload bytes per packet.
    pub payload: PayloadSize,
    /// Slots in use, S.
    pub slots: u16,
    /// The workers, by rank.
    pub workers: Vec<WorkerEntry>,
    /// UDP port of the software switch.
    pub switch_port: u16,
    /// UDP port workers send from (results come back to it), the first of `worker_ports`.
    pub worker_port: u16,
    /// Consecutive worker ports from `worker_port` (≥ 1; SwitchML's worker threads): the switch
    /// takes a worker's frames from any of them (docs/switch.md §1 7.5).
    pub worker_ports: u16,
    /// Take IPv4 headers whose checksum is 0 ("not computed"), counted apart (docs/switch.md §1
    /// 6.4); never a wrong non-zero one.
    pub zero_ip_checksum: bool,
    /// Take contributions of 16-bit lanes at 0xBEF0..=0xBEFF (docs/switch.md §9).
    pub lanes16: bool,
    /// Slots a worker keeps in flight (≤ `slots`).
    pub window: u16,
    /// First retransmission timeout, and the floor of the adaptive one.
    pub timeout: Duration,
    /// Retransmissions of one packet before giving up.
    pub max_retries: u32,
    /// `job_number` written in every packet.
    pub job_number: u8,
    /// Ports of the software switch, T: slot s goes to the switch's port + (s mod T).
    pub switch_ports: u16,
    /// The job's 802.1Q VLAN, or `None` for an untagged job (docs/switch.md §1 step 3, §3).
    pub vlan: Option<JobVlan>,
    /// The parent switch, when this switch is a leaf (or inner node) of an aggregation tree.
    pub parent: Option<ParentConfig>,
    /// Workers of the whole tree (≥ n; n for a switch that is not in a tree): the workers
    /// scale floats by it ([`JobConfig::scale_workers`]).
    pub tree_workers: usize,
    /// Open a session before the first operation (docs/switch.md §2.1).
    pub sessions: bool,
    /// The switches in failover order (empty: the one switch a command line or transport names).
    pub switches: Vec<SocketAddr>,
    /// Bound of the failure detection time (docs/worker.md).
    pub failover_after: Duration,
}

/// A tagged job's VLAN: the switch accepts only frames tagged with `id` and tags every frame it
/// sends with `id` and `priority`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JobVlan {
    /// VLAN ID, 1..=4094.
    pub id: u16,
    /// PCP of the frames the switch sends, 0..=7.
    pub priority: u8,
}

impl JobVlan {
    /// The TCI of the frames the switch sends: `priority << 13 | id` (DEI 0).
    pub const fn tci(self) -> u16 {
        (self.priority as u16) << 13 | self.id
    }

    /// The value of the core's VLAN register: the TCI, 0 for an untagged job.
    pub fn register(vlan: Option<JobVlan>) -> u32 {
        vlan.map_or(0, |v| u32::from(v.tci()))
    }
}

/// A configuration that could not be read or is not valid. The message names the key and the
/// value; callers add the file name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ConfigError(pub String);

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawWorker {
    ip: String,
    mac: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawParent {
    ip: String,
    mac: String,
    rank: i64,
    port: Option<i64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawJob {
    switch_mac: String,
    switch_ip: String,
    payload_bytes: i64,
    slots: i64,
    #[serde(default)]
    worker: Vec<RawWorker>,
    switch_port: Option<i64>,
    worker_port: Option<i64>,
    worker_ports: Option<i64>,
    zero_ip_checksum: Option<bool>,
    lanes16: Option<bool>,
    window: Option<i64>,
    timeout_ms: Option<i64>,
    max_retries: Option<i64>,
    job_number: Option<i64>,
    switch_ports: Option<i64>,
    vlan: Option<i64>,
    vlan_priority: Option<i64>,
    tree_workers: Option<i64>,
    parent: Option<RawParent>,
    sessions: Option<bool>,
    switches: Option<Vec<String>>,
    failover_ms: Option<i64>,
}

fn bad(key: &str, value: impl std::fmt::Display, why: &str) -> ConfigError {
    ConfigError(format!("key `{key}` = {value}: {why}"))
}

fn mac(key: &str, s: &str) -> Result<MacAddr, ConfigError> {
    s.parse().map_err(|_| bad(key, format!("{s:?}"), "not a MAC address (like \"02:00:5a:00:00:01\")"))
}

fn ip(key: &str, s: &str) -> Result<Ipv4Addr, ConfigError> {
    s.parse().map_err(|_| bad(key, format!("{s:?}"), "not an IPv4 address (like \"192.0.2.1\")"))
}

fn port(key: &str, v: Option<i64>) -> Result<u16, ConfigError> {
    match v {
        None => Ok(switchml::UDP_PORT_BASE),
        Some(p) if (0..=0xffff).contains(&p) && switchml::is_switchml_port(p as u16) => Ok(p as u16),
        Some(p) => Err(bad(key, p, "must be a SwitchML port, 0xBEE0..=0xBEEF (48864..=48879)")),
    }
}

impl JobConfig {
    /// A contribution of this job (its payload size and `job_number`, exponents 0) to `pool`
    /// with `tsi`: the SwitchML message, its elements from `values` (the rest 0).
    pub fn contribution(&self, pool: switchml::PoolIndex, tsi: u32, values: impl IntoIterator<Item = i32>) -> Vec<u8> {
        let mut m = vec![0u8; switchml::PREAMBLE_LEN + self.payload.bytes()];
        let mut p = switchml::SwitchmlPacket::new_unchecked(&mut m[..]);
        switchml::SwitchmlRepr {
            msg_type: switchml::MSG_TYPE_CONTRIBUTION,
            size_code: self.payload.code(),
            job: self.job_number,
            tsi,
            pool,
            e0: 0,
            e1: 0,
        }
        .emit(&mut p);
        for (i, v) in values.into_iter().enumerate() {
            p.set_element(i, v);
        }
        m
    }

    /// Parses and validates TOML text.
    pub fn from_toml(text: &str) -> Result<JobConfig, ConfigError> {
        let raw: RawJob = toml::from_str(text).map_err(|e| ConfigError(e.to_string().trim_end().to_string()))?;
        let switch_mac = mac("switch_mac", &raw.switch_mac)?;
        if switch_mac.0[0] & 1 == 1 {
            return Err(bad(
                "switch_mac",
                format!("{:?}", raw.switch_mac),
                "a multicast address cannot be the switch's",
            ));
        }
        let switch_ip = ip("switch_ip", &raw.switch_ip)?;
        let payload = usize::try_from(raw.payload_bytes)
            .ok()
            .and_then(PayloadSize::from_bytes)
            .ok_or_else(|| bad("payload_bytes", raw.payload_bytes, "must be 128, 256, 512 or 1024"))?;
        if !(1..=MAX_SLOTS as i64).contains(&raw.slots) {
            return Err(bad("slots", raw.slots, &format!("must be 1..={MAX_SLOTS}")));
        }
        let slots = raw.slots as u16;
        if raw.worker.is_empty() || raw.worker.len() > MAX_WORKERS {
            return Err(bad(
                "worker",
                format!("[{} entries]", raw.worker.len()),
                &format!("a job needs 1..={MAX_WORKERS} [[worker]] entries"),
            ));
        }
        let mut workers: Vec<WorkerEntry> = Vec::with_capacity(raw.worker.len());
        for (rank, w) in raw.worker.iter().enumerate() {
            let e = WorkerEntry {
                ip: ip(&format!("worker[{rank}].ip"), &w.ip)?,
                mac: mac(&format!("worker[{rank}].mac"), &w.mac)?,
            };
            if let Some(prev) = workers.iter().position(|p| p.ip == e.ip) {
                return Err(bad(
                    &format!("worker[{rank}].ip"),
                    format!("{:?}", w.ip),
                    &format!("rank {prev} has the same address"),
                ));
            }
            if e.ip == switch_ip {
                return Err(bad(&format!("worker[{rank}].ip"), format!("{:?}", w.ip), "is the switch's address"));
            }
            workers.push(e);
        }
        let window = match raw.window {
            None => slots,
            Some(w) if w >= 1 && w <= i64::from(slots) => w as u16,
            Some(w) => return Err(bad("window", w, &format!("must be 1..=slots ({slots})"))),
        };
        let timeout_ms = match raw.timeout_ms {
            None => 20,
            Some(t) if (1..=60_000).contains(&t) => t as u64,
            Some(t) => return Err(bad("timeout_ms", t, "must be 1..=60000")),
        };
        let max_retries = match raw.max_retries {
            None => 12,
            Some(r) if (0..=1000).contains(&r) => r as u32,
            Some(r) => return Err(bad("max_retries", r, "must be 0..=1000")),
        };
        let job_number = match raw.job_number {
            None => 0,
            Some(j) if (0..=255).contains(&j) => j as u8,
            Some(j) => return Err(bad("job_number", j, "must be 0..=255")),
        };
        let switch_port = port("switch_port", raw.switch_port)?;
        let switch_ports = match raw.switch_ports {
            None => 1,
            Some(t) if (1..=16).contains(&t) => t as u16,
            Some(t) => return Err(bad("switch_ports", t, "must be 1..=16 (the ports 0xBEE0..=0xBEEF)")),
        };
        let vlan = match (raw.vlan, raw.vlan_priority) {
            (None, None) => None,
            (None, Some(p)) => {
                return Err(bad("vlan_priority", p, "needs `vlan`: an untagged job sends untagged frames"))
            }
            (Some(v), _) if !(1..=i64::from(MAX_VID)).contains(&v) => {
                return Err(bad("vlan", v, &format!("must be a VLAN ID, 1..={MAX_VID}")))
            }
            (Some(_), Some(p)) if !(0..=7).contains(&p) => return Err(bad("vlan_priority", p, "must be 0..=7")),
            (Some(v), p) => Some(JobVlan { id: v as u16, priority: p.unwrap_or(0) as u8 }),
        };
        let n = workers.len() as i64;
        let tree_workers = match raw.tree_workers {
            None => workers.len(),
            Some(t) if t >= n && t <= MAX_TREE_WORKERS as i64 => t as usize,
            Some(t) => {
                return Err(bad("tree_workers", t, &format!("must be n ({n}) ..={MAX_TREE_WORKERS}")));
            }
        };
        let lanes16 = raw.lanes16.unwrap_or(false);
        if lanes16 && tree_workers.max(workers.len()) > MAX_LANES16_WORKERS {
            return Err(ConfigError(format!(
                "`lanes16` = true with {} workers in the tree (`tree_workers`): 16-bit lanes take at most \
                 {MAX_LANES16_WORKERS} (docs/switch.md §9)",
                tree_workers.max(workers.len())
            )));
        }
        let parent = match raw.parent {
            None => None,
            Some(p) => {
                let pip = ip("parent.ip", &p.ip)?;
                if pip == switch_ip {
                    return Err(bad("parent.ip", format!("{:?}", p.ip), "is this switch's own address"));
                }
                if let Some(r) = workers.iter().position(|w| w.ip == pip) {
                    return Err(bad("parent.ip", format!("{:?}", p.ip), &format!("is the address of rank {r}")));
                }
                if !(0..MAX_WORKERS as i64).contains(&p.rank) {
                    return Err(bad("parent.rank", p.rank, &format!("must be 0..{MAX_WORKERS}")));
                }
                Some(ParentConfig {
                    ip: pip,
                    mac: mac("parent.mac", &p.mac)?,
                    port: port("parent.port", p.port)?,
                    rank: p.rank as usize,
                })
            }
        };
        let worker_port = match raw.worker_port {
            None => switchml::UDP_PORT_BASE,
            Some(p) if (1..=0xffff).contains(&p) => p as u16,
            Some(p) => return Err(bad("worker_port", p, "must be a UDP port, 1..=65535")),
        };
        let worker_ports = match raw.worker_ports {
            None => 1,
            Some(c) if c >= 1 && i64::from(worker_port) + c - 1 <= 0xffff && c <= i64::from(MAX_WORKER_PORTS) => {
                c as u16
            }
            Some(c) => {
                return Err(bad(
                    "worker_ports",
                    c,
                    &format!("must be 1..={MAX_WORKER_PORTS}, with worker_port + worker_ports - 1 ≤ 65535"),
                ))
            }
        };
        if worker_ports > 1 && parent.is_some() {
            return Err(bad(
                "worker_ports",
                worker_ports,
                "a tree leaf's job has one worker port: its parent's results carry no worker's port (docs/switch.md §3)",
            ));
        }
        let sessions = raw.sessions.unwrap_or(true);
        let mut switches = Vec::new();
        for (i, a) in raw.switches.unwrap_or_default().iter().enumerate() {
            let addr: SocketAddr = a.parse().map_err(|_| {
                bad(&format!("switches[{i}]"), format!("{a:?}"), "not a UDP address (like \"192.0.2.1:48864\")")
            })?;
            if switches.contains(&addr) {
                return Err(bad(&format!("switches[{i}]"), format!("{a:?}"), "is already in the list"));
            }
            switches.push(addr);
        }
        if switches.len() > 1 && !sessions {
            return Err(bad("sessions", false, "failover to a standby in `switches` needs sessions"));
        }
        let failover_ms = match raw.failover_ms {
            None => 500,
            Some(t) if (1..=600_000).contains(&t) => t as u64,
            Some(t) => return Err(bad("failover_ms", t, "must be 1..=600000")),
        };
        Ok(JobConfig {
            sessions,
            switches,
            failover_after: Duration::from_millis(failover_ms),
            switch_mac,
            switch_ip,
            payload,
            slots,
            workers,
            switch_port,
            worker_port,
            worker_ports,
            zero_ip_checksum: raw.zero_ip_checksum.unwrap_or(false),
            lanes16,
            window,
            timeout: Duration::from_millis(timeout_ms),
            max_retries,
            job_number,
            switch_ports,
            vlan,
            parent,
            tree_workers,
        })
    }

    /// The core's register 0x08 for this job: `worker_port` in bits 15..0, `worker_ports` − 1 in
    /// bits 23..16, `zero_ip_checksum` in bit 24 (docs/control.md).
    pub fn worker_port_register(&self) -> u32 {
        u32::from(self.worker_port) | u32::from(self.worker_ports - 1) << 16 | u32::from(self.zero_ip_checksum) << 24
    }

    /// Whether UDP source port `port` is one of the job's worker ports (docs/switch.md §1 7.5).
    pub fn is_worker_port(&self, port: u16) -> bool {
        port.wrapping_sub(self.worker_port) < self.worker_ports
    }

    /// What the hardware core cannot serve of this job yet, as an error naming the key: 16-bit
    /// lanes (docs/switch.md §9 is in the reference switch, the software switches and the
    /// workers; the board's core sums 32-bit lanes). `None` for a job the core serves.
    pub fn core_unsupported(&self) -> Option<String> {
        self.lanes16.then(|| {
            "lanes16 = true: the board's core sums 32-bit lanes only (docs/switch.md §9); serve this job with \
             `spotagg switch` or `spotagg tap`"
                .to_string()
        })
    }

    /// Reads and validates a file; errors name the file.
    pub fn load(path: &std::path::Path) -> Result<JobConfig, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|e| ConfigError(format!("{}: {e}", path.display())))?;
        JobConfig::from_toml(&text).map_err(|e| ConfigError(format!("{}: {}", path.display(), e.0)))
    }

    /// The embedded default job for `n` workers: switch 192.0.2.1, workers 192.0.2.10 + rank
    /// (TEST-NET-1 addresses, never routed), locally administered MACs.
    pub fn example(n: usize, payload: PayloadSize, slots: u16) -> JobConfig {
        assert!((1..=MAX_WORKERS).contains(&n), "n = {n} is outside 1..={MAX_WORKERS}");
        JobConfig {
            switch_mac: MacAddr([0x02, 0x00, 0x5a, 0x00, 0x00, 0x01]),
            switch_ip: Ipv4Addr::new(192, 0, 2, 1),
            payload,
            slots,
            workers: (0..n)
                .map(|r| WorkerEntry {
                    ip: Ipv4Addr::new(192, 0, 2, 10 + r as u8),
                    mac: MacAddr([0x02, 0x00, 0x5a, 0x00, 0x01, r as u8]),
                })
                .collect(),
            switch_port: switchml::UDP_PORT_BASE,
            worker_port: switchml::UDP_PORT_BASE,
            worker_ports: 1,
            zero_ip_checksum: false,
            lanes16: false,
            window: slots,
            timeout: Duration::from_millis(20),
            max_retries: 12,
            job_number: 0,
            switch_ports: 1,
            vlan: None,
            parent: None,
            tree_workers: n,
            sessions: true,
            switches: Vec::new(),
            failover_after: Duration::from_millis(500),
        }
    }

    /// The switches' names for reports and errors: the `switches` list, or "the switch".
    pub fn switch_names(&self) -> Vec<String> {
        if self.switches.is_empty() {
            vec!["the switch".to_string()]
        } else {
            self.switches.iter().map(|a| a.to_string()).collect()
        }
    }

    /// The number of workers a worker scales its floats by: the workers of the whole tree
    /// (`tree_workers`), n for a switch that is not in a tree.
    pub fn scale_workers(&self) -> usize {
        self.tree_workers.max(self.n())
    }

    /// Number of workers, n.
    pub fn n(&self) -> usize {
        self.workers.len()
    }

    /// The rank of a source address.
    pub fn rank_of(&self, ip: Ipv4Addr) -> Option<usize> {
        self.workers.iter().position(|w| w.ip == ip)
    }

    /// The configuration as TOML text that [`JobConfig::from_toml`] reads back.
    pub fn to_toml(&self) -> String {
        let mut s = format!(
            "switch_mac = \"{}\"\nswitch_ip = \"{}\"\npayload_bytes = {}\nslots = {}\nswitch_port = {}\nworker_port = {}\nwindow = {}\ntimeout_ms = {}\nmax_retries = {}\njob_number = {}\nswitch_ports = {}\n",
            self.switch_mac,
            self.switch_ip,
            self.payload.bytes(),
            self.slots,
            self.switch_port,
            self.worker_port,
            self.window,
            self.timeout.as_millis(),
            self.max_retries,
            self.job_number,
            self.switch_ports
        );
        if self.worker_ports != 1 {
            s += &format!("worker_ports = {}\n", self.worker_ports);
        }
        if self.zero_ip_checksum {
            s += "zero_ip_checksum = true\n";
        }
        if self.lanes16 {
            s += "lanes16 = true\n";
        }
        if let Some(v) = self.vlan {
            s += &format!("vlan = {}\nvlan_priority = {}\n", v.id, v.priority);
        }
        if self.tree_workers != self.n() {
            s += &format!("tree_workers = {}\n", self.tree_workers);
        }
        s += &format!("sessions = {}\nfailover_ms = {}\n", self.sessions, self.failover_after.as_millis());
        if !self.switches.is_empty() {
            let list: Vec<String> = self.switches.iter().map(|a| format!("\"{a}\"")).collect();
            s += &format!("switches = [{}]\n", list.join(", "));
        }
        for w in &self.workers {
            s += &format!("\n[[worker]]\nip = \"{}\"\nmac = \"{}\"\n", w.ip, w.mac);
        }
        if let Some(p) = &self.parent {
            s += &format!("\n[parent]\nip = \"{}\"\nmac = \"{}\"\nrank = {}\nport = {}\n", p.ip, p.mac, p.rank, p.port);
        }
        s
    }
}

#[cfg(test)]
mod test {
    use super::*;

    const ISSUE_FORM: &str = r#"
switch_mac = "02:00:5a:00:00:01"
switch_ip = "192.0.2.1"
payload_bytes = 256      # 256 (k = 64) or 1024 (k = 256)
slots = 16               # slots in use, S

[[worker]]               # rank 0; ranks follow the order of the entries, n = their number
ip = "192.0.2.10"
mac = "02:00:5a:00:01:00"
"#;

    #[test]
    fn accepts_the_documented_form() {
        let c = JobConfig::from_toml(ISSUE_FORM).unwrap();
        assert_eq!(c.n(), 1);
        assert_eq!(c.payload, PayloadSize::B256);
        assert_eq!(c.slots, 16);
        assert_eq!(c.window, 16);
        assert_eq!(c.workers[0].ip, Ipv4Addr::new(192, 0, 2, 10));
        assert_eq!(c.switch_port, 0xbee0);
        assert_eq!(c, JobConfig::from_toml(&c.to_toml()).unwrap());
    }

    #[test]
    fn vlan_round_trips_and_packs_its_tci() {
        let c = JobConfig::from_toml(&ISSUE_FORM.replace("slots = 16", "slots = 16\nvlan = 100\nvlan_priority = 5"))
            .unwrap();
        assert_eq!(c.vlan, Some(JobVlan { id: 100, priority: 5 }));
        assert_eq!(c.vlan.unwrap().tci(), 0xa064);
        assert_eq!(JobVlan::register(c.vlan), 0xa064);
        assert_eq!(JobVlan::register(None), 0);
        assert_eq!(c, JobConfig::from_toml(&c.to_toml()).unwrap());
        let d = JobConfig::from_toml(&ISSUE_FORM.replace("slots = 16", "slots = 16\nvlan = 4094")).unwrap();
        assert_eq!(d.vlan, Some(JobVlan { id: 4094, priority: 0 }));
    }

    #[test]
    fn a_tree_leaf_round_trips() {
        let text = format!(
            "{}tree_workers = 256\n{}\n[parent]\nip = \"192.0.2.100\"\nmac = \"02:00:5a:00:00:64\"\nrank = 3\n",
            ISSUE_FORM.split("[[worker]]").next().unwrap(),
            &ISSUE_FORM[ISSUE_FORM.find("[[worker]]").unwrap()..]
        );
        let c = JobConfig::from_toml(&text).unwrap();
        assert_eq!((c.tree_workers, c.scale_workers(), c.n()), (256, 256, 1));
        let p = c.parent.unwrap();
        assert_eq!((p.ip, p.rank, p.port), (Ipv4Addr::new(192, 0, 2, 100), 3, 0xbee0));
        assert_eq!(c, JobConfig::from_toml(&c.to_toml()).unwrap());
        assert_eq!(JobConfig::from_toml(ISSUE_FORM).unwrap().scale_workers(), 1);
    }

    #[test]
    fn example_round_trips() {
        let c = JobConfig::example(4, PayloadSize::B1024, 8);
        assert_eq!(c, JobConfig::from_toml(&c.to_toml()).unwrap());
        assert_eq!(c.rank_of(Ipv4Addr::new(192, 0, 2, 13)), Some(3));
    }

    fn err(text: &str) -> String {
        JobConfig::from_toml(text).unwrap_err().0
    }

    #[test]
    fn errors_name_key_and_value() {
        let added = |keys: &str| ISSUE_FORM.replace("slots = 16", &format!("slots = 16\n{keys}"));
        let parent = "\n[parent]\nip = \"192.0.2.10\"\nmac = \"02:00:5a:00:00:64\"\nrank = 3\n";
        // Each bad text and the words its error must hold.
        let cases: Vec<(String, &[&str])> = vec![
            (ISSUE_FORM.replace("\"02:00:5a:00:00:01\"", "\"02:00:5a:00:00\""), &["switch_mac", "02:00:5a:00:00"]),
            (ISSUE_FORM.replace("payload_bytes = 256", "payload_bytes = 300"), &["payload_bytes", "300"]),
            (ISSUE_FORM.replace("slots = 16", "slots = 0"), &["slots", "0"]),
            (ISSUE_FORM.replace("ip = \"192.0.2.10\"", "ip = \"192.0.2.300\""), &["worker[0].ip", "192.0.2.300"]),
            (format!("{ISSUE_FORM}\nwindow = 17\n").replace("[[worker]]", "window2 = 1\n[[worker]]"), &["window2"]),
            (ISSUE_FORM.replace("slots = 16", "slots = \"many\""), &["slots", "many"]),
            (
                format!("{ISSUE_FORM}\n[[worker]]\nip = \"192.0.2.10\"\nmac = \"02:00:5a:00:01:01\"\n"),
                &["worker[1].ip", "rank 0"],
            ),
            (added("switch_ports = 17"), &["switch_ports", "17", "1..=16"]),
            (format!("{ISSUE_FORM}switch_port = 80\n"), &["switch_port", "80"]),
            (added("worker_port = 0"), &["`worker_port` = 0", "1..=65535"]),
            (added("worker_port = 65536"), &["`worker_port` = 65536"]),
            (added("worker_ports = 0"), &["`worker_ports` = 0", "1..=256"]),
            (added("worker_ports = 257"), &["`worker_ports` = 257"]),
            (added("worker_port = 65535\nworker_ports = 2"), &["`worker_ports` = 2", "65535"]),
            (
                format!("{}{}", added("worker_ports = 4"), parent.replace("192.0.2.10", "192.0.2.100")),
                &["`worker_ports` = 4", "tree leaf"],
            ),
            (added("zero_ip_checksum = 1"), &["zero_ip_checksum"]),
            (added("lanes16 = \"yes\""), &["lanes16"]),
            (added("lanes16 = true\ntree_workers = 1025"), &["`lanes16` = true", "1025", "1024"]),
            (added("vlan = 4095"), &["`vlan` = 4095", "1..=4094"]),
            (added("vlan = 0"), &["`vlan` = 0"]),
            (added("vlan_priority = 3"), &["`vlan_priority` = 3", "needs `vlan`"]),
            (added("vlan = 7\nvlan_priority = 8"), &["`vlan_priority` = 8", "0..=7"]),
            (added("tree_workers = 0"), &["tree_workers", "must be n (1)"]),
            (format!("{ISSUE_FORM}{parent}"), &["parent.ip", "rank 0"]),
            (
                format!("{ISSUE_FORM}{}", parent.replace("192.0.2.10", "192.0.2.100").replace("3", "32")),
                &["parent.rank", "32"],
            ),
            (added("switches = [\"127.0.0.1:1\", \"nowhere\"]"), &["switches[1]", "nowhere"]),
            (added("switches = [\"127.0.0.1:1\", \"127.0.0.2:1\"]\nsessions = false"), &["sessions", "failover"]),
            (ISSUE_FORM.split("[[worker]]").next().unwrap().to_string(), &["worker"]),
        ];
        for (text, words) in cases {
            let e = err(&text);
            assert!(words.iter().all(|w| e.contains(w)), "{e:?} lacks one of {words:?}");
        }
        assert_eq!(JobConfig::from_toml(&added("switch_ports = 2")).unwrap().switch_ports, 2);
        // SwitchML's DPDK defaults: worker port 4000, 4 threads; its checksums left at 0.
        let c = JobConfig::from_toml(&added("worker_port = 4000\nworker_ports = 4\nzero_ip_checksum = true")).unwrap();
        assert_eq!((c.worker_port, c.worker_ports, c.zero_ip_checksum), (4000, 4, true));
        assert!(!c.is_worker_port(3999) && c.is_worker_port(4000) && c.is_worker_port(4003) && !c.is_worker_port(4004));
        assert_eq!(c, JobConfig::from_toml(&c.to_toml()).unwrap());
        let c = JobConfig::from_toml(&added("lanes16 = true\ntree_workers = 1024")).unwrap();
        assert!(c.lanes16 && c.core_unsupported().unwrap().contains("lanes16"));
        assert_eq!(c, JobConfig::from_toml(&c.to_toml()).unwrap());
        let one = JobConfig::from_toml(&added("worker_port = 65535")).unwrap();
        assert!(one.is_worker_port(65535) && !one.is_worker_port(0) && !one.is_worker_port(65534));
        let c = JobConfig::from_toml(&added("switches = [\"127.0.0.1:48864\", \"127.0.0.2:48864\"]\nfailover_ms = 80"))
            .unwrap();
        assert_eq!(c.switches.len(), 2);
        assert_eq!(c.failover_after, Duration::from_millis(80));
        assert_eq!(c, JobConfig::from_toml(&c.to_toml()).unwrap());
    }

    #[test]
    fn a_contribution_carries_the_job_and_its_values() {
        let mut job = JobConfig::example(2, PayloadSize::B128, 4);
        job.job_number = 7;
        let pool = switchml::PoolIndex { slot: 3, set: 1 };
        let m = job.contribution(pool, 0x0102_0304, [5, -6]);
        assert_eq!(m.len(), switchml::PREAMBLE_LEN + 128);
        let p = switchml::SwitchmlPacket::new_checked(&m[..]).unwrap();
        let r = switchml::SwitchmlRepr::parse(&p);
        assert_eq!(
            (r.msg_type, r.size(), r.job, r.tsi, r.pool),
            (switchml::MSG_TYPE_CONTRIBUTION, Some(PayloadSize::B128), 7, 0x0102_0304, pool)
        );
        assert_eq!((r.e0, r.e1), (0, 0));
        assert_eq!(p.elements().collect::<Vec<_>>(), [[5, -6].as_slice(), &[0; 30]].concat());
    }
}
