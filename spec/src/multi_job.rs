//! Several jobs on one switch (docs/switch.md §8): one [`RefSwitch`] per job, each with its own
//! workers, payload size and slot range of the switch's slot memory, behind one address.
//!
//! A frame (untagged, or after one 802.1Q tag: each job then checks its own VLAN) is a job's
//! when its source IPv4 address and UDP source port are those of one of the
//! job's workers (address, `worker_port`) or of its parent. The SwitchML `job_number` does not
//! pick the job: with sessions (docs/switch.md §2.1) it is the session epoch. A SwitchML frame
//! to the switch that is no job's — an unknown (source, job) pair — is dropped and counted (`unknown_source` of the
//! switch's total counters, and [`MultiSwitch::unknown_source_job`]); it reaches no job, so no
//! job's slots or counters change. Every other frame (ARP, ICMP, frames that fail a check before
//! the source, such as a wrong MAC) is the first job's to answer or count: all jobs share the
//! switch's MAC and IPv4 address. [`route`] is that rule as a function of the jobs and the frame.
//!
//! A switch of several jobs is read from a TOML file ([`MultiSwitch::load`]) that names each
//! job's own file (the job format of `spotagg_driver::config`, relative paths from the switch
//! file's folder) and its slot range:
//!
//! ```toml
//! capacity = 64            # [the sum of the jobs' slots] slots of the switch's memory
//!
//! [[job]]
//! config = "job-a.toml"    # worker_port 48864 in that file
//! slot_base = 0            # its slots are the switch's 0..S
//!
//! [[job]]
//! config = "job-b.toml"    # worker_port 48865: a host may be in both jobs
//! slot_base = 16
//! ```

use crate::reference::RefSwitch;
use spotagg_driver::counters::{Counters, DropReason};
use spotagg_driver::engine::Engine;
use spotagg_driver::metrics::{counter_families, merge, Family, Kind};
use spotagg_driver::wire::layout::{IP_OFFSET, L4_OFFSET, SWITCHML_OFFSET, TAG_LEN, TAG_OFFSET};
use spotagg_driver::wire::{
    switchml, udp, vlan, EtherType, EthernetFrame, IpProtocol, Ipv4Addr, Ipv4Packet, Lanes, MacAddr,
};
use spotagg_driver::JobConfig;

/// One job of a [`MultiSwitch`] and where its slots live in the switch's slot memory.
#[derive(Debug, Clone)]
pub struct JobPlacement {
    /// The job (its `job_number`, workers, payload size, S slots).
    pub job: JobConfig,
    /// Its first slot in the switch's memory: the job's slot s is the switch's `slot_base + s`.
    pub slot_base: u32,
}

/// A configuration of jobs that cannot share a switch.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct MultiJobError(pub String);

/// The reference switch for several jobs.
#[derive(Debug, Clone)]
pub struct MultiSwitch {
    jobs: Vec<(JobPlacement, RefSwitch)>,
    /// The switch's addresses, which every job shares.
    switch_mac: MacAddr,
    switch_ip: Ipv4Addr,
    /// Slots of the switch's memory.
    capacity: u32,
    unknown: Counters,
    unknown_source_job: u64,
    /// The clock of [`Engine::set_clock`], and each job's time of its last frame (or of its
    /// joining), by job index: [`MultiSwitch::idle_us`].
    now_us: u64,
    last_frame_us: Vec<u64>,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSwitch {
    capacity: Option<i64>,
    job: Vec<RawJobRef>,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct RawJobRef {
    config: String,
    slot_base: i64,
}

impl MultiSwitch {
    /// Reads a switch of several jobs from TOML text; job files are read relative to `dir`.
    /// Errors name the key (`job[i].config`, `job[i].slot_base`, `capacity`) and the value.
    pub fn from_toml(text: &str, dir: &std::path::Path) -> Result<MultiSwitch, MultiJobError> {
        let raw: RawSwitch = toml::from_str(text).map_err(|e| MultiJobError(e.to_string().trim_end().to_string()))?;
        let mut jobs = Vec::new();
        for (i, j) in raw.job.iter().enumerate() {
            let path = dir.join(&j.config);
            let job = JobConfig::load(&path).map_err(|e| MultiJobError(format!("job[{i}].config: {}", e.0)))?;
            let slot_base = u32::try_from(j.slot_base).ok().filter(|b| *b < 1 << 15).ok_or_else(|| {
                MultiJobError(format!("key `job[{i}].slot_base` = {}: must be 0..32768", j.slot_base))
            })?;
            jobs.push(JobPlacement { job, slot_base });
        }
        let capacity = match raw.capacity {
            None => jobs.iter().map(|p| p.slot_base + u32::from(p.job.slots)).max().unwrap_or(0),
            Some(c) if (1..=1 << 15).contains(&c) => c as u32,
            Some(c) => return Err(MultiJobError(format!("key `capacity` = {c}: must be 1..=32768"))),
        };
        MultiSwitch::new(jobs, capacity)
    }

    /// Reads and validates a switch file; errors name the file.
    pub fn load(path: &std::path::Path) -> Result<MultiSwitch, MultiJobError> {
        let text = std::fs::read_to_string(path).map_err(|e| MultiJobError(format!("{}: {e}", path.display())))?;
        let dir = path.parent().unwrap_or(std::path::Path::new("."));
        MultiSwitch::from_toml(&text, dir).map_err(|e| MultiJobError(format!("{}: {}", path.display(), e.0)))
    }

    /// A job that stands for all of them where the software switch needs one (the switch's
    /// addresses and ports; every job's workers, for their MACs; `lanes16` when any job has
    /// 16-bit lanes, so that `spotagg switch --jobs` binds their twin ports). Not a job to
    /// aggregate.
    pub fn addressing_job(&self) -> JobConfig {
        let mut j = self.jobs[0].0.job.clone();
        j.lanes16 = self.jobs.iter().any(|(p, _)| p.job.lanes16);
        for (p, _) in &self.jobs[1..] {
            for w in &p.job.workers {
                if j.rank_of(w.ip).is_none() {
                    j.workers.push(*w);
                }
            }
        }
        j
    }

    /// Jobs sharing `capacity` slots. Fails, naming the jobs, when they do not share the switch's
    /// MAC and IPv4 address, when two have a worker in common and overlapping worker ports, or when
    /// slot ranges overlap or pass the capacity.
    pub fn new(jobs: Vec<JobPlacement>, capacity: u32) -> Result<MultiSwitch, MultiJobError> {
        let Some(first) = jobs.first() else {
            return Err(MultiJobError("a switch needs at least one job".into()));
        };
        let mut sw = MultiSwitch::empty(first.job.switch_mac, first.job.switch_ip, capacity);
        for p in jobs {
            sw.add(p)?;
        }
        Ok(sw)
    }

    /// A switch with no job yet, at `switch_mac` / `switch_ip` with `capacity` slots: jobs join
    /// with [`MultiSwitch::add`] and leave with [`MultiSwitch::remove`] while it runs (the
    /// controller's sessions, docs/controller.md §4). Until a job joins, every frame is dropped
    /// and counted `unknown_source`.
    pub fn empty(switch_mac: MacAddr, switch_ip: Ipv4Addr, capacity: u32) -> MultiSwitch {
        MultiSwitch {
            jobs: Vec::new(),
            switch_mac,
            switch_ip,
            capacity,
            unknown: Counters::default(),
            unknown_source_job: 0,
            now_us: 0,
            last_frame_us: Vec::new(),
        }
    }

    /// Adds a job after the others, with a switch of its own state (every slot empty). Fails,
    /// naming the jobs and changing nothing, by the rules of [`MultiSwitch::new`] (job `a` is
    /// the new one, at the index it would have).
    pub fn add(&mut self, pa: JobPlacement) -> Result<(), MultiJobError> {
        let (mac, ip, capacity) = (self.switch_mac, self.switch_ip, self.capacity);
        let a = self.jobs.len();
        let j = &pa.job;
        if j.switch_mac != mac || j.switch_ip != ip {
            return Err(MultiJobError(format!(
                "job {a} (job_number {}): switch {} / {} differs from the switch's {mac} / {ip}",
                j.job_number, j.switch_mac, j.switch_ip
            )));
        }
        let end = pa.slot_base + u32::from(j.slots);
        if end > capacity {
            return Err(MultiJobError(format!(
                "job {a} (job_number {}): slots {}..{end} pass the switch's {capacity} slots",
                j.job_number, pa.slot_base
            )));
        }
        for (b, (pb, _)) in self.jobs.iter().enumerate() {
            let (s0, s1) = (pb.slot_base, pb.slot_base + u32::from(pb.job.slots));
            if pa.slot_base < s1 && s0 < end {
                return Err(MultiJobError(format!(
                    "jobs {b} and {a}: slot ranges {s0}..{s1} and {}..{end} overlap",
                    pa.slot_base
                )));
            }
            let shared = j.workers.iter().find(|w| pb.job.workers.iter().any(|v| v.ip == w.ip));
            let ports = |j: &JobConfig| u32::from(j.worker_port)..u32::from(j.worker_port) + u32::from(j.worker_ports);
            let (rb, ra) = (ports(&pb.job), ports(j));
            if let Some(w) = shared.filter(|_| rb.start < ra.end && ra.start < rb.end) {
                return Err(MultiJobError(format!(
                    "jobs {b} and {a}: worker ports {}..{} and {}..{} overlap with worker {} in common: its frames would be both jobs'",
                    rb.start, rb.end, ra.start, ra.end, w.ip
                )));
            }
        }
        let sw = RefSwitch::new(pa.job.clone());
        self.jobs.push((pa, sw));
        self.last_frame_us.push(self.now_us);
        Ok(())
    }

    /// Takes out the job whose slots start at `slot_base` (its state with it; its counters stay
    /// in the switch's total, [`Engine::counters`], not in any job's); `None` when no job
    /// starts there.
    pub fn remove(&mut self, slot_base: u32) -> Option<JobPlacement> {
        let i = self.jobs.iter().position(|(p, _)| p.slot_base == slot_base)?;
        self.last_frame_us.remove(i);
        let (p, sw) = self.jobs.remove(i);
        // Its counters stay in the switch's total (a session's frames were counted).
        self.unknown.add(&sw.counters());
        Some(p)
    }

    /// How long (µs of the [`Engine::set_clock`] clock) the job whose slots start at
    /// `slot_base` has received no frame, or since it joined; `None` when no job starts there.
    /// The controller ends a session idle for its timeout (docs/controller.md §4).
    pub fn idle_us(&self, slot_base: u32) -> Option<u64> {
        let i = self.jobs.iter().position(|(p, _)| p.slot_base == slot_base)?;
        Some(self.now_us.saturating_sub(self.last_frame_us[i]))
    }

    /// The MAC of the worker or parent at `ip` in any job (the first that has it): the software
    /// switch frames a datagram from `ip` with it.
    pub fn peer_mac(&self, ip: Ipv4Addr) -> Option<MacAddr> {
        self.jobs.iter().find_map(|(p, _)| match p.job.rank_of(ip) {
            Some(r) => Some(p.job.workers[r].mac),
            None => p.job.parent.filter(|q| q.ip == ip).map(|q| q.mac),
        })
    }

    /// Slots of the switch's memory.
    pub fn capacity(&self) -> u32 {
        self.capacity
    }

    /// The jobs, in configuration order.
    pub fn jobs(&self) -> impl Iterator<Item = (&JobPlacement, &RefSwitch)> {
        self.jobs.iter().map(|(p, s)| (p, s))
    }

    /// The switch of job `i` (its counters, tree and straggler counters).
    pub fn job(&self, i: usize) -> &RefSwitch {
        &self.jobs[i].1
    }

    /// SwitchML frames of an unknown (source address, source port) pair, dropped.
    pub fn unknown_source_job(&self) -> u64 {
        self.unknown_source_job
    }

    /// Which job a frame is for ([`route`] over the jobs, with job 0's switch address).
    fn route(&self, frame: &[u8]) -> Route {
        route(self.switch_ip, self.jobs.iter().map(|(p, _)| &p.job), frame)
    }
}

/// Where a received frame goes on a switch of several jobs (the module doc's rule).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    /// A SwitchML frame to the switch from job `i`'s worker (its address and the job's
    /// `worker_port`) or parent (address and port): job `i`'s only.
    Job(usize),
    /// A SwitchML frame to the switch from no job's (source address, source port): dropped and
    /// counted; no job sees it.
    NoJob,
    /// Any other frame (ARP, ICMP, not IPv4/UDP, not to the switch or to a SwitchML port, a
    /// runt): the first job's, to answer or count.
    FirstJob,
}

/// Which of `jobs` (in configuration order; the first that claims the source wins) a frame is
/// for, on a switch whose IPv4 address is `switch_ip`. A SwitchML frame to the switch is, after
/// at most one 802.1Q tag (whose VID only the job's switch checks): IPv4 with version 4 and IHL
/// 5, UDP, to `switch_ip`, to a SwitchML port (or to 0xBEF0..=0xBEFF when a job takes 16-bit
/// lanes, docs/switch.md §9), an IPv4 total length of at least 30 (the UDP header and the
/// SwitchML header's first two bytes) and a frame long enough for those two bytes. Nothing else
/// of the frame is looked at: the job's switch classifies it then. A parent's result of a
/// 16-bit round comes from the parent's 16-bit port, `port | 0x10`.
///
/// [`MultiSwitch`] routes by it; the hardware job router (`spotagg_hdl::job_router`) is tested
/// against it.
pub fn route<'a>(switch_ip: Ipv4Addr, jobs: impl IntoIterator<Item = &'a JobConfig>, frame: &[u8]) -> Route {
    let jobs: Vec<&JobConfig> = jobs.into_iter().collect();
    let lanes16 = jobs.iter().any(|j| j.lanes16);
    let Some((src, src_port)) = switchml_source(switch_ip, lanes16, frame) else {
        return Route::FirstJob;
    };
    let mine = |job: &&JobConfig| {
        (job.rank_of(src).is_some() && job.is_worker_port(src_port))
            || job.parent.is_some_and(|q| {
                q.ip == src && (q.port == src_port || job.lanes16 && Lanes::I16.port(q.port) == src_port)
            })
    };
    match jobs.iter().position(mine) {
        Some(i) => Route::Job(i),
        None => Route::NoJob,
    }
}

/// The source (IPv4 address, UDP port) of a SwitchML frame to the switch ([`route`]'s
/// conditions); `None` for any other frame.
fn switchml_source(switch_ip: Ipv4Addr, lanes16: bool, frame: &[u8]) -> Option<(Ipv4Addr, u16)> {
    let eth = EthernetFrame::new_checked(frame).ok()?;
    // One 802.1Q tag is looked past (each job checks its own VLAN, docs/switch.md §1 step 3).
    // (The inner EtherType is bytes 16..18: a tagged frame shorter than that is no job's.)
    let t = if eth.ethertype() == vlan::TPID && frame.len() >= TAG_OFFSET + TAG_LEN + 2 {
        let inner = u16::from_be_bytes([frame[TAG_OFFSET + 2 + 2], frame[TAG_OFFSET + 2 + 3]]);
        if EtherType(inner) != EtherType::IPV4 {
            return None;
        }
        TAG_LEN
    } else if eth.ethertype() == EtherType::IPV4 {
        0
    } else {
        return None;
    };
    if frame.len() < SWITCHML_OFFSET + t + 2 {
        return None;
    }
    let (ip_at, l4) = (IP_OFFSET + t, L4_OFFSET + t);
    let ip = Ipv4Packet::new_unchecked(&frame[ip_at..l4]);
    let dst_port = u16::from_be_bytes([frame[l4 + 2], frame[l4 + 3]]);
    if ip.version() != 4
        || ip.header_len() != 20
        || ip.protocol() != IpProtocol::UDP
        || ip.dst_addr() != switch_ip
        || !(switchml::is_switchml_port(dst_port) || lanes16 && Lanes::of_port(dst_port).is_some())
        || usize::from(ip.total_len()) < 20 + udp::HEADER_LEN + 2
    {
        return None;
    }
    Some((ip.src_addr(), u16::from_be_bytes([frame[l4], frame[l4 + 1]])))
}

impl Engine for MultiSwitch {
    fn process(&mut self, frame: &[u8], out: &mut Vec<Vec<u8>>) {
        match self.route(frame) {
            Route::Job(i) => {
                self.last_frame_us[i] = self.now_us;
                self.jobs[i].1.process(frame, out)
            }
            // No job yet (a switch that jobs join at run time): nothing to answer with.
            Route::FirstJob if self.jobs.is_empty() => {
                self.unknown.frames_in += 1;
                self.unknown.drops[DropReason::UnknownSource.index()] += 1;
            }
            Route::NoJob => {
                self.unknown.frames_in += 1;
                self.unknown.drops[DropReason::UnknownSource.index()] += 1;
                self.unknown_source_job += 1;
            }
            Route::FirstJob => self.jobs[0].1.process(frame, out),
        }
    }
    /// The switch's total: every job's counters and the unknown (source, job) drops.
    fn counters(&self) -> Counters {
        let mut c = self.unknown.clone();
        for (_, s) in &self.jobs {
            c.add(&s.counters());
        }
        c
    }
    fn name(&self) -> &'static str {
        "model"
    }
    fn peer_mac(&self, ip: Ipv4Addr) -> Option<MacAddr> {
        MultiSwitch::peer_mac(self, ip)
    }
    fn set_clock(&mut self, now_us: u64) {
        self.now_us = now_us;
        for (_, s) in &mut self.jobs {
            s.set_clock(now_us);
        }
    }
    /// The switch's total counters, each job's counters, tree and straggler counters labelled
    /// `job` (its index in the configuration), and the unknown (source, job) drops.
    fn metrics(&self) -> Vec<Family> {
        let mut per_job = Vec::new();
        for (i, (_, s)) in self.jobs.iter().enumerate() {
            let l = [("job", i.to_string())];
            let mut f = counter_families(&s.counters(), &l);
            f.extend(s.tree_and_straggler_families(&l));
            per_job.push(f);
        }
        let mut f = merge(&per_job);
        f.push(Family::single(
            "spotagg_switch_unknown_source_job_total",
            "SwitchML frames of no job's (source address, source port), dropped.",
            Kind::Counter,
            self.unknown_source_job as f64,
        ));
        f
    }
}

/// A [`MultiSwitch`] shared between the thread that serves it and the controller that adds
/// and removes its jobs while it runs (docs/controller.md §4): each frame takes the lock.
#[derive(Debug, Clone)]
pub struct SharedSwitch(pub std::sync::Arc<std::sync::Mutex<MultiSwitch>>);

impl SharedSwitch {
    fn lock(&self) -> std::sync::MutexGuard<'_, MultiSwitch> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Engine for SharedSwitch {
    fn process(&mut self, frame: &[u8], out: &mut Vec<Vec<u8>>) {
        self.lock().process(frame, out)
    }
    fn counters(&self) -> Counters {
        self.lock().counters()
    }
    fn name(&self) -> &'static str {
        "model"
    }
    fn peer_mac(&self, ip: Ipv4Addr) -> Option<MacAddr> {
        self.lock().peer_mac(ip)
    }
    fn set_clock(&mut self, now_us: u64) {
        self.lock().set_clock(now_us)
    }
    fn metrics(&self) -> Vec<Family> {
        self.lock().metrics()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use spotagg_driver::wire::PayloadSize;

    /// Tagged runts of 14 to 18 bytes (an 802.1Q TPID, then the frame ends inside the tag or
    /// its inner EtherType): each goes to job 0's switch, which counts it truncated, and none
    /// panics (a 16- or 17-byte one read past its end before).
    #[test]
    fn tagged_runts_go_to_job_0_and_are_counted() {
        let job = JobConfig::example(2, PayloadSize::B256, 4);
        let mut sw = MultiSwitch::new(vec![JobPlacement { job, slot_base: 0 }], 4).unwrap();
        let full: [u8; 18] = [
            0x02, 0x00, 0x5a, 0x00, 0x00, 0x01, // destination
            0x02, 0x00, 0x5a, 0x00, 0x01, 0x01, // source
            0x81, 0x00, 0x00, 0x64, // 802.1Q, VID 100
            0x08, 0x00, // IPv4
        ];
        for len in 14..=18 {
            assert_eq!(sw.route(&full[..len]), Route::FirstJob, "{len} bytes");
            let mut out = vec![];
            sw.process(&full[..len], &mut out);
            assert!(out.is_empty(), "{len} bytes: {out:?}");
        }
        assert_eq!(sw.counters().frames_in, 5);
        assert_eq!(sw.counters().drops.iter().sum::<u64>(), 5);
    }

    /// docs/switch.md §9 on a switch of two jobs: a 16-bit contribution (to 0xBEF0 + x) goes to
    /// the job of its source when some job takes 16-bit lanes, and to job 0 (which counts it
    /// bad_port) when none does; a parent's result of a 16-bit round comes from the parent's
    /// 16-bit port and goes to the job whose parent it is.
    #[test]
    fn sixteen_bit_frames_are_routed_only_where_a_job_takes_them() {
        use spotagg_driver::config::ParentConfig;
        use spotagg_driver::wire::frame::{encapsulate, Endpoint};
        use spotagg_driver::wire::MacAddr;
        let a = JobConfig::example(2, PayloadSize::B256, 4);
        let mut b = JobConfig::example(2, PayloadSize::B256, 4);
        for (r, w) in b.workers.iter_mut().enumerate() {
            w.ip = Ipv4Addr::new(192, 0, 2, 50 + r as u8);
        }
        let parent = ParentConfig {
            ip: Ipv4Addr::new(192, 0, 2, 100),
            mac: MacAddr([2, 0, 0x5a, 0, 0, 0x64]),
            port: 0xbee3,
            rank: 0,
        };
        b.parent = Some(parent);
        let sml = [0x11u8, 0, 0, 0, 0, 0, 0, 1];
        let frame = |src: Ipv4Addr, sport: u16, dport: u16| {
            let mut f = Vec::new();
            let switch = Endpoint { mac: a.switch_mac, ip: a.switch_ip, port: dport };
            encapsulate(Endpoint { mac: MacAddr([2, 0, 0, 0, 0, 9]), ip: src, port: sport }, switch, &sml, &mut f);
            f
        };
        let from_b = frame(b.workers[1].ip, 0xbee0, 0xbef0);
        let from_parent = frame(parent.ip, 0xbef3, 0xbef0);
        assert_eq!(route(a.switch_ip, [&a, &b], &from_b), Route::FirstJob);
        assert_eq!(route(a.switch_ip, [&a, &b], &from_parent), Route::FirstJob);
        let b16 = JobConfig { lanes16: true, ..b.clone() };
        assert_eq!(route(a.switch_ip, [&a, &b16], &from_b), Route::Job(1));
        assert_eq!(route(a.switch_ip, [&a, &b16], &from_parent), Route::Job(1));
        assert_eq!(route(a.switch_ip, [&a, &b16], &frame(parent.ip, 0xbee3, 0xbee0)), Route::Job(1));
        assert_eq!(route(a.switch_ip, [&a, &b16], &frame(parent.ip, 0xbef4, 0xbef0)), Route::NoJob);
        // Without a job that takes them, job 0 counts a 16-bit frame as a bad port.
        let mut sw =
            MultiSwitch::new(vec![JobPlacement { job: a, slot_base: 0 }, JobPlacement { job: b, slot_base: 4 }], 8)
                .unwrap();
        let mut out = vec![];
        sw.process(&from_b, &mut out);
        assert_eq!(sw.counters().dropped(spotagg_driver::DropReason::BadPort), 1);
    }
}
