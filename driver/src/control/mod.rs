//! The control link, host side: typed register access to a board over a serial port with the
//! framed protocol of [`protocol`].
//!
//! [`Control::open`] reads the identity and refuses a design whose major version differs from
//! [`DESIGN_VERSION`] (the version this driver speaks), naming both. Every request waits at
//! most the configured timeout for its response: a silent or garbled board is an error, never
//! a hang. Requests are sent one at a time; a response with an error status is an error that
//! names the status and the request.

pub mod protocol;

/// The serial port crate, for callers that make their own ports (e.g. a pty pair in tests).
pub use serialport;

use crate::config::{JobConfig, JobVlan};
use crate::counters::Counters;
use protocol::{reg, BoardId, ParseError, Status};
use serde::Serialize;
use std::io::{ErrorKind, Read, Write};
use std::time::{Duration, Instant};

/// The design version this driver speaks: (major, minor, patch). The hardware stamps its own
/// into register [`reg::VERSION`]; a different major version is refused.
pub const DESIGN_VERSION: (u8, u8, u8) = (1, 0, 0);

/// Packs a version as register [`reg::VERSION`] holds it.
pub const fn pack_version(v: (u8, u8, u8)) -> u32 {
    (v.0 as u32) << 16 | (v.1 as u32) << 8 | v.2 as u32
}

/// What went wrong on the control link.
#[derive(Debug, thiserror::Error)]
pub enum ControlError {
    /// The serial port failed.
    #[error("serial port: {0}")]
    Io(#[from] std::io::Error),
    /// No complete response within the timeout.
    #[error("no response to {request} within {timeout:?} (got {got} bytes)")]
    Timeout {
        /// The request.
        request: String,
        /// The timeout.
        timeout: Duration,
        /// Bytes received.
        got: usize,
    },
    /// The board answered with an error.
    #[error("board answered {status} to {request}")]
    Status {
        /// The status.
        status: Status,
        /// The request.
        request: String,
    },
    /// The response could not be parsed.
    #[error("malformed response to {request}: {why}")]
    Malformed {
        /// The request.
        request: String,
        /// Why.
        why: String,
    },
    /// Not a spotagg design.
    #[error("not a spotagg design: magic 0x{0:08x}, expected 0x{m:08x}", m = protocol::MAGIC)]
    BadMagic(u32),
    /// Major version mismatch.
    #[error("design version {design} is not compatible with this driver's version {driver} (major versions differ)")]
    Version {
        /// The design's version.
        design: String,
        /// The driver's version.
        driver: String,
    },
    /// The job does not fit the design.
    #[error("job does not fit the design: {0}")]
    Job(String),
    /// The serial port could not be opened.
    #[error("cannot open serial port {path}: {why}")]
    Open {
        /// The port.
        path: String,
        /// Why.
        why: String,
    },
}

/// A serial port as the control link uses it.
pub type SerialControl = Control<Box<dyn serialport::SerialPort>>;

/// Opens the serial port `path` at `baud` (8N1) and the control link on it ([`Control::open`]:
/// identity and major version checked); every request waits at most `timeout`.
pub fn open_serial(path: &str, baud: u32, timeout: Duration) -> Result<SerialControl, ControlError> {
    let port = serialport::new(path, baud)
        .timeout(Duration::from_millis(20))
        .open()
        .map_err(|e| ControlError::Open { path: path.into(), why: e.to_string() })?;
    Control::open(port, timeout)
}

/// The identity registers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Identity {
    /// Board id.
    pub board_id: u32,
    /// Board name of the id.
    pub board: &'static str,
    /// Design version (major, minor, patch).
    pub version: (u8, u8, u8),
    /// First 32 bits of the git hash.
    pub git_hash: u32,
    /// Build date, days since 1970-01-01.
    pub build_date_days: u32,
    /// Stream width in bytes.
    pub width_bytes: u32,
    /// Slots built.
    pub slots: u32,
    /// Largest payload in bytes.
    pub max_payload: u32,
    /// Largest number of workers.
    pub max_workers: u32,
    /// UART clocks per bit.
    pub baud_divisor: u32,
    /// Counter registers (24: the core's; 46: a board's, with its MAC counters).
    pub counter_registers: u32,
}

impl Identity {
    /// `major.minor.patch`.
    pub fn version_string(&self) -> String {
        format!("{}.{}.{}", self.version.0, self.version.1, self.version.2)
    }
    /// The build date as `YYYY-MM-DD` (proleptic Gregorian), or "unknown".
    pub fn build_date(&self) -> String {
        if self.build_date_days == 0 {
            return "unknown".into();
        }
        // Civil date from days since the epoch (Howard Hinnant's algorithm).
        let z = i64::from(self.build_date_days) + 719_468;
        let era = z.div_euclid(146_097);
        let doe = z - era * 146_097;
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        let mp = (5 * doy + 2) / 153;
        let d = doy - (153 * mp + 2) / 5 + 1;
        let m = if mp < 10 { mp + 3 } else { mp - 9 };
        let y = yoe + era * 400 + i64::from(m <= 2);
        format!("{y:04}-{m:02}-{d:02}")
    }
}

/// The status registers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BoardStatus {
    /// Nothing in flight in the core.
    pub idle: bool,
    /// A job was enabled and no job register was written since.
    pub job_enabled: bool,
    /// Slots in use (S clamped to the built slots).
    pub slots_in_use: u32,
    /// Clock cycles since power-up (wraps at 2^32).
    pub uptime_cycles: u32,
    /// Link state of each port: 0 unknown, 1 down, 2 up 10M, 3 up 100M, 4 up 1G.
    pub link_state: Vec<u32>,
    /// The job registers as read back: switch MAC hi, lo, IP, n, size code, S.
    pub job_registers: Vec<u32>,
    /// The VLAN register: 0 for an untagged job, else the TCI of the frames sent.
    pub vlan: u32,
    /// The workers' first UDP source port (docs/switch.md §1 7.5).
    pub worker_port: u32,
    /// How many ports from `worker_port` the core takes (1 from a bitstream that has one).
    pub worker_ports: u32,
    /// The job's `job_number`: the session epoch after the job was enabled (docs/switch.md §2.1).
    pub job_number: u32,
}

/// One MAC port's counters (from power-up; not cleared by `reset_counters`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct PortCounters {
    /// Frames received with a good FCS and a legal length.
    pub good: u64,
    /// Frames received with a bad FCS (or a receive error).
    pub bad_fcs: u64,
    /// Frames shorter than 64 bytes.
    pub runts: u64,
    /// Frames longer than the largest the MAC takes.
    pub giants: u64,
    /// Good frames dropped for lack of room in the receive FIFO.
    pub overflow: u64,
    /// Frames sent.
    pub sent: u64,
}

impl PortCounters {
    /// Name and value of every field, in register order.
    pub fn named(&self) -> [(&'static str, u64); 6] {
        [
            ("good", self.good),
            ("bad_fcs", self.bad_fcs),
            ("runts", self.runts),
            ("giants", self.giants),
            ("overflow", self.overflow),
            ("sent", self.sent),
        ]
    }
}

/// One consistent snapshot of every counter of a design.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CounterSnapshot {
    /// The core's counters.
    pub core: Counters,
    /// Each MAC port's counters (empty for a design without MACs).
    pub ports: Vec<PortCounters>,
    /// Frames sent to both ports (None without MACs).
    pub flooded: Option<u64>,
    /// The core was idle with its input held while the counters were copied.
    pub quiescent: bool,
    /// On a board of several jobs (docs/switch.md §8): SwitchML frames of no job's (source
    /// address, source port), dropped by the job router ([`reg::UNKNOWN_SOURCE_JOB`]; 0 with
    /// one job, None without board counters).
    pub unknown_source_job: Option<u64>,
    /// The tree counters (docs/switch.md §6): partials up, partials resent, parent results,
    /// stale parent results, at 0x0218..=0x021B of a board's snapshot (0 in a build without the
    /// tree leaf; None for a link that does not reach them, such as the core-only link's 24).
    pub tree: Option<[u64; 4]>,
}

/// The name of a link state value.
pub fn link_state_name(v: u32) -> &'static str {
    match v {
        0 => "unknown",
        1 => "down",
        2 => "up 10M",
        3 => "up 100M",
        4 => "up 1G",
        _ => "invalid",
    }
}

/// A control link over a byte stream (a `serialport::SerialPort` in practice).
pub struct Control<P: Read + Write> {
    port: P,
    timeout: Duration,
    identity: Option<Identity>,
}

impl<P: Read + Write> Control<P> {
    /// A link over `port` without any check; every request waits at most `timeout`.
    pub fn new_unchecked(port: P, timeout: Duration) -> Self {
        Control { port, timeout, identity: None }
    }

    /// A link over `port`: reads the identity and refuses another design or major version.
    pub fn open(port: P, timeout: Duration) -> Result<Self, ControlError> {
        let mut c = Self::new_unchecked(port, timeout);
        let id = c.identity()?;
        if id.version.0 != DESIGN_VERSION.0 {
            return Err(ControlError::Version {
                design: id.version_string(),
                driver: format!("{}.{}.{}", DESIGN_VERSION.0, DESIGN_VERSION.1, DESIGN_VERSION.2),
            });
        }
        c.identity = Some(id);
        Ok(c)
    }

    /// The underlying port.
    pub fn port_mut(&mut self) -> &mut P {
        &mut self.port
    }

    /// Sends raw request bytes and waits for one response (for tests of error paths).
    pub fn transact_raw(&mut self, request: &[u8], what: &str) -> Result<protocol::Response, ControlError> {
        self.port.write_all(request)?;
        self.port.flush()?;
        let deadline = Instant::now() + self.timeout;
        let mut buf: Vec<u8> = Vec::new();
        let mut chunk = [0u8; 256];
        loop {
            // Resynchronise on the response SYNC.
            if let Some(p) = buf.iter().position(|&b| b == protocol::RESPONSE_SYNC) {
                buf.drain(..p);
            } else {
                buf.clear();
            }
            match protocol::parse_response(&buf) {
                Ok((r, _)) => return Ok(r),
                Err(ParseError::Malformed(why)) => return Err(ControlError::Malformed { request: what.into(), why }),
                Err(ParseError::Incomplete) => {}
            }
            if Instant::now() >= deadline {
                return Err(ControlError::Timeout { request: what.into(), timeout: self.timeout, got: buf.len() });
            }
            match self.port.read(&mut chunk) {
                Ok(0) => std::thread::sleep(Duration::from_millis(1)),
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
                Err(e) if matches!(e.kind(), ErrorKind::TimedOut | ErrorKind::WouldBlock | ErrorKind::Interrupted) => {}
                Err(e) => return Err(e.into()),
            }
        }
    }

    fn check(r: protocol::Response, what: String, want_words: usize) -> Result<Vec<u32>, ControlError> {
        if r.status != Status::Ok {
            return Err(ControlError::Status { status: r.status, request: what });
        }
        if r.words.len() != want_words {
            return Err(ControlError::Malformed {
                request: what,
                why: format!("{} words, expected {want_words}", r.words.len()),
            });
        }
        Ok(r.words)
    }

    /// Reads `count` consecutive registers (any count; split into requests of at most
    /// [`protocol::MAX_COUNT`]).
    pub fn read(&mut self, address: u16, count: usize) -> Result<Vec<u32>, ControlError> {
        let mut out = Vec::with_capacity(count);
        while out.len() < count {
            let a = address + out.len() as u16;
            let c = (count - out.len()).min(usize::from(protocol::MAX_COUNT));
            let what = format!("read of {c} registers at 0x{a:04x}");
            let r = self.transact_raw(&protocol::read_request(a, c as u8), &what)?;
            out.extend(Self::check(r, what, c)?);
        }
        Ok(out)
    }

    /// Writes consecutive registers (split into requests of at most [`protocol::MAX_COUNT`]).
    pub fn write(&mut self, address: u16, words: &[u32]) -> Result<(), ControlError> {
        for (i, chunk) in words.chunks(usize::from(protocol::MAX_COUNT)).enumerate() {
            let a = address + (i * usize::from(protocol::MAX_COUNT)) as u16;
            let what = format!("write of {} registers at 0x{a:04x}", chunk.len());
            let r = self.transact_raw(&protocol::write_request(a, chunk), &what)?;
            Self::check(r, what, 0)?;
        }
        Ok(())
    }

    /// The identity registers.
    pub fn identity(&mut self) -> Result<Identity, ControlError> {
        let w = self.read(reg::MAGIC, usize::from(reg::IDENTITY_COUNT))?;
        if w[0] != protocol::MAGIC {
            return Err(ControlError::BadMagic(w[0]));
        }
        Ok(Identity {
            board_id: w[1],
            board: BoardId(w[1]).name(),
            version: ((w[2] >> 16) as u8, (w[2] >> 8) as u8, w[2] as u8),
            git_hash: w[3],
            build_date_days: w[4],
            width_bytes: w[5],
            slots: w[6],
            max_payload: w[7],
            max_workers: w[8],
            baud_divisor: w[9],
            counter_registers: w[10],
        })
    }

    /// One snapshot of every counter (see the protocol's counter snapshot): a read at the
    /// first counter refreshes the board's shadow, the rest are read from it.
    pub fn snapshot(&mut self) -> Result<CounterSnapshot, ControlError> {
        let total = match &self.identity {
            Some(id) => id.counter_registers as usize,
            None => self.read(reg::COUNTER_REGISTERS, 1)?[0] as usize,
        };
        let core_n = usize::from(reg::COUNTER_COUNT);
        if total < core_n {
            return Err(ControlError::Malformed {
                request: "read of the counter count".into(),
                why: format!("{total} counter registers, fewer than the core's {core_n}"),
            });
        }
        let w = self.read(reg::COUNTERS, total)?;
        let status = self.read(reg::STATUS, 1)?[0];
        let words: Vec<u64> = w.iter().map(|&x| u64::from(x)).collect();
        let mut core = Counters::from_words(&words[..core_n]);
        core.ip_checksum_zero = words.get(usize::from(reg::IP_CHECKSUM_ZERO - reg::COUNTERS)).copied().unwrap_or(0);
        let base = usize::from(reg::BOARD_COUNTERS - reg::COUNTERS);
        let (mut ports, mut flooded) = (vec![], None);
        if total >= usize::from(reg::BOARD_COUNTER_COUNT) {
            for p in 0..2 {
                let r = |j: usize| u64::from(w[base + 8 * p + j]);
                ports.push(PortCounters {
                    good: r(0),
                    bad_fcs: r(1),
                    runts: r(2),
                    giants: r(3),
                    overflow: r(4),
                    sent: r(5),
                });
            }
            flooded = Some(u64::from(w[usize::from(reg::FLOODED - reg::COUNTERS)]));
        }
        let unknown_source_job = w.get(usize::from(reg::UNKNOWN_SOURCE_JOB - reg::COUNTERS)).map(|&x| u64::from(x));
        let tree = w.get(core_n..core_n + 4).map(|t| [0, 1, 2, 3].map(|i| u64::from(t[i])));
        Ok(CounterSnapshot { core, ports, flooded, quiescent: status & 2 == 0, unknown_source_job, tree })
    }

    /// The core's counters (32-bit hardware counters, widened), from one snapshot.
    pub fn counters(&mut self) -> Result<Counters, ControlError> {
        Ok(self.snapshot()?.core)
    }

    /// Zeroes the counters.
    pub fn reset_counters(&mut self) -> Result<(), ControlError> {
        self.write(reg::CONTROL, &[2])
    }

    /// Writes the job's registers and worker table, then enables the job (which clears the
    /// slot state). Checks the job against the identity when the link was opened with
    /// [`Control::open`].
    pub fn configure(&mut self, job: &JobConfig) -> Result<(), ControlError> {
        if let Some(why) = job.core_unsupported() {
            return Err(ControlError::Job(why));
        }
        if let Some(id) = &self.identity {
            if job.n() as u32 > id.max_workers {
                return Err(ControlError::Job(format!("n = {} above max workers {}", job.n(), id.max_workers)));
            }
            if job.payload.bytes() as u32 > id.max_payload {
                return Err(ControlError::Job(format!(
                    "payload {} B above max payload {} B",
                    job.payload.bytes(),
                    id.max_payload
                )));
            }
        }
        let m = job.switch_mac.0;
        self.write(
            reg::SWITCH_MAC_HI,
            &[
                u32::from(u16::from_be_bytes([m[0], m[1]])),
                u32::from_be_bytes([m[2], m[3], m[4], m[5]]),
                u32::from(job.switch_ip),
                job.n() as u32,
                u32::from(job.payload.code()),
                u32::from(job.slots),
            ],
        )?;
        let mut table = Vec::with_capacity(4 * job.n());
        for w in &job.workers {
            let m = w.mac.0;
            table.extend([
                u32::from(w.ip),
                u32::from(u16::from_be_bytes([m[0], m[1]])),
                u32::from_be_bytes([m[2], m[3], m[4], m[5]]),
                0,
            ]);
        }
        self.write(reg::WORKER_TABLE, &table)?;
        self.write(reg::VLAN, &[JobVlan::register(job.vlan), job.worker_port_register(), u32::from(job.job_number)])?;
        if job.worker_ports > 1 || job.zero_ip_checksum {
            // A bitstream from before the port ranges keeps the low 16 bits only (it would drop
            // every port but the first as wrong_src_port), one from before zero checksums the
            // low 24 (it would drop every such frame as ip_checksum).
            let back = self.read(reg::WORKER_PORT, 1)?[0];
            if back != job.worker_port_register() {
                let what = if back & 0xff_ffff != job.worker_port_register() & 0xff_ffff {
                    format!("worker_ports = {}: the board's core takes one worker port", job.worker_ports)
                } else {
                    "zero_ip_checksum = true: the board's core checks every IPv4 checksum".to_string()
                };
                return Err(ControlError::Job(format!(
                    "{what} (register {:#06x} reads {back:#x} after {:#x} was written): rebuild it with `spotagg build`",
                    reg::WORKER_PORT,
                    job.worker_port_register()
                )));
            }
        }
        self.write(reg::PARENT_IP, &parent_registers(job.parent.as_ref()))?;
        self.write(reg::CONTROL, &[1])
    }

    /// On a board of several jobs (docs/switch.md §8): sends the job registers' and the worker
    /// table's writes, the counter snapshot and the straggler read-out to job `job` from now on
    /// (a job the board does not have reads zero counters and takes no frames). A board built
    /// for one job has no job select: that is a [`ControlError::Job`] naming the register.
    pub fn select_job(&mut self, job: usize) -> Result<(), ControlError> {
        match self.write(reg::JOB_SELECT, &[job as u32]) {
            Err(ControlError::Status { status: Status::UnknownRegister, .. }) => Err(ControlError::Job(format!(
                "job {job}: the board is built for one job (it has no job select register {:#06x})",
                reg::JOB_SELECT
            ))),
            r => r,
        }
    }

    /// Writes and enables each of `jobs` in its own core (job i after selecting i, as
    /// [`Self::configure`] does for one), then selects job 0 again. One job is
    /// [`Self::configure`] alone, on any board.
    pub fn configure_jobs(&mut self, jobs: &[JobConfig]) -> Result<(), ControlError> {
        if let [job] = jobs {
            return self.configure(job);
        }
        for (i, job) in jobs.iter().enumerate() {
            self.select_job(i)?;
            self.configure(job).map_err(|e| match e {
                ControlError::Job(why) => ControlError::Job(format!("job {i}: {why}")),
                e => e,
            })?;
        }
        self.select_job(0)
    }

    /// The straggler counters of ranks `0..n` from the last counter snapshot ([`Self::snapshot`]
    /// takes one; docs/control.md): per rank the rounds it was last in, and the sum and largest
    /// of its lags, in core clock cycles. `None` when the design has none (its control link
    /// answers unknown register at [`reg::STRAGGLERS`]).
    pub fn stragglers(&mut self, n: usize) -> Result<Option<Vec<[u32; 3]>>, ControlError> {
        let per = usize::from(reg::STRAGGLER_WORDS_PER_RANK);
        let w = match self.read(reg::STRAGGLERS, per * n) {
            Err(ControlError::Status { status: Status::UnknownRegister, .. }) => return Ok(None),
            r => r?,
        };
        Ok(Some(w.chunks(per).map(|c| [c[0], c[1], c[2]]).collect()))
    }

    /// The status registers and the job registers.
    pub fn status(&mut self) -> Result<BoardStatus, ControlError> {
        let s = self.read(reg::STATUS, 3)?;
        let link = self.read(reg::LINK_STATE, usize::from(reg::LINK_PORTS))?;
        let job = self.read(reg::SWITCH_MAC_HI, usize::from(reg::JOB_NUMBER - reg::SWITCH_MAC_HI) + 1)?;
        Ok(BoardStatus {
            idle: s[0] & 1 != 0,
            job_enabled: job[6] & 1 != 0,
            slots_in_use: s[1],
            uptime_cycles: s[2],
            link_state: link,
            job_registers: job[..6].to_vec(),
            vlan: job[7],
            worker_port: job[8] & 0xffff,
            worker_ports: (job[8] >> 16 & 0xff) + 1,
            job_number: job[9],
        })
    }
}

/// One EAPS domain's status as the node reports it (docs/control.md, 0x0800 + 16·d..).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct EapsDomainStatus {
    /// The domain index.
    pub domain: usize,
    /// Configured (the flags' active bit as the node reads it).
    pub active: bool,
    /// Master (else transit).
    pub master: bool,
    /// The primary port.
    pub primary_port: u8,
    /// The state's name.
    pub state: &'static str,
    /// Forwarding on ports 0 and 1.
    pub forwarding: [bool; 2],
    /// PDUs sent.
    pub tx: u32,
    /// PDUs received.
    pub rx: u32,
    /// PDUs forwarded.
    pub forwarded: u32,
    /// PDUs dropped.
    pub dropped: u32,
    /// Time of the last transition (the node's time units, 1 µs on the board).
    pub transition_time: u32,
    /// Its cause.
    pub transition_cause: &'static str,
    /// Malformed EDP frames dropped (docs/eaps.md §1.1), by reason: length, version, checksum,
    /// TLV list (16-bit counters, wrapping; words 14 and 15).
    pub malformed: [u16; 4],
}

impl EapsDomainStatus {
    /// Decodes domain `domain`'s status words (the first seven, and the malformed counters
    /// where `w` holds all 16).
    pub fn from_words(domain: usize, w: &[u32]) -> Self {
        let malformed = if w.len() >= 16 {
            [w[14] as u16, (w[14] >> 16) as u16, w[15] as u16, (w[15] >> 16) as u16]
        } else {
            [0; 4]
        };
        let state = protocol::eaps::STATE_NAMES.get((w[0] & 0xf) as usize).copied().unwrap_or("?");
        let cause = protocol::eaps::CAUSE_NAMES.get((w[6] & 0xf) as usize).copied().unwrap_or("?");
        EapsDomainStatus {
            domain,
            active: (w[0] >> 10) & 1 == 1,
            master: (w[0] >> 8) & 1 == 1,
            primary_port: ((w[0] >> 9) & 1) as u8,
            state,
            forwarding: [(w[0] >> 4) & 1 == 1, (w[0] >> 5) & 1 == 1],
            tx: w[1],
            rx: w[2],
            forwarded: w[3],
            dropped: w[4],
            transition_time: w[5],
            transition_cause: cause,
            malformed,
        }
    }
}

impl<P: Read + Write> Control<P> {
    /// Configures the board's EAPS node (docs/control.md 0x0700..): disables it, writes every
    /// domain's registers (slot d: domain d, `None` cleared), then enables it if `enable`.
    pub fn configure_eaps(
        &mut self,
        domains: &[Option<protocol::eaps::DomainSettings>],
        enable: bool,
    ) -> Result<(), ControlError> {
        let writes = protocol::eaps::writes(domains, enable);
        let mut i = 0;
        while i < writes.len() {
            // Consecutive registers in one request.
            let mut j = i + 1;
            while j < writes.len() && writes[j].0 == writes[j - 1].0 + 1 {
                j += 1;
            }
            let words: Vec<u32> = writes[i..j].iter().map(|w| w.1).collect();
            self.write(writes[i].0, &words)?;
            i = j;
        }
        Ok(())
    }

    /// The status of EAPS domains 0..`domains` (at most the board's build).
    pub fn eaps_status(&mut self, domains: usize) -> Result<Vec<EapsDomainStatus>, ControlError> {
        (0..domains)
            .map(|d| {
                let w = self.read(reg::EAPS_STATUS + protocol::eaps::DOMAIN_STRIDE * d as u16, 16)?;
                Ok(EapsDomainStatus::from_words(d, &w))
            })
            .collect()
    }
}

/// The parent registers 0x010A..=0x010D for `parent` (docs/switch.md §6): IPv4, MAC bytes 0..2,
/// MAC bytes 2..6, then enable (bit 31), rank (bits 20..16) and port; all zero without a parent,
/// so that a job without one disables a former job's.
pub fn parent_registers(parent: Option<&crate::config::ParentConfig>) -> [u32; 4] {
    match parent {
        None => [0; 4],
        Some(p) => {
            let m = p.mac.0;
            [
                u32::from(p.ip),
                u32::from(u16::from_be_bytes([m[0], m[1]])),
                u32::from_be_bytes([m[2], m[3], m[4], m[5]]),
                1 << 31 | (p.rank as u32 & 0x1f) << 16 | u32::from(p.port),
            ]
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::counters::DropReason;
    use std::collections::VecDeque;

    /// A port that answers each request with the next canned response.
    struct Canned {
        sent: Vec<u8>,
        replies: VecDeque<Vec<u8>>,
        pending: VecDeque<u8>,
    }
    impl Write for Canned {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.sent.extend_from_slice(b);
            if let Some(r) = self.replies.pop_front() {
                self.pending.extend(r);
            }
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    impl Read for Canned {
        fn read(&mut self, b: &mut [u8]) -> std::io::Result<usize> {
            let n = b.len().min(self.pending.len()).min(3);
            for x in b.iter_mut().take(n) {
                *x = self.pending.pop_front().unwrap();
            }
            if n == 0 {
                return Err(ErrorKind::TimedOut.into());
            }
            Ok(n)
        }
    }

    fn ident(version: (u8, u8, u8)) -> Vec<u8> {
        protocol::response(
            Status::Ok,
            &[protocol::MAGIC, 0, pack_version(version), 0xdeadbeef, 20_000, 4, 64, 1024, 32, 8, 22],
        )
    }

    fn canned(r: Vec<Vec<u8>>) -> Canned {
        Canned { sent: vec![], replies: r.into(), pending: VecDeque::new() }
    }

    /// A link (timeout 30 ms) whose board answers each request with the next of `responses`.
    fn answering(responses: &[(Status, &[u32])]) -> Control<Canned> {
        let replies = responses.iter().map(|(status, words)| protocol::response(*status, words)).collect();
        Control::new_unchecked(canned(replies), Duration::from_millis(30))
    }

    /// The read requests for (register, count), in order.
    fn reads(requests: &[(u16, u8)]) -> Vec<u8> {
        requests.iter().flat_map(|&(register, count)| protocol::read_request(register, count)).collect()
    }

    #[test]
    fn open_checks_major_version() {
        let c = Control::open(canned(vec![ident((1, 4, 2))]), Duration::from_millis(50)).unwrap();
        assert_eq!(c.identity.as_ref().unwrap().git_hash, 0xdeadbeef);
        assert_eq!(c.identity.as_ref().unwrap().build_date(), "2024-10-04");
        let e = Control::open(canned(vec![ident((2, 0, 0))]), Duration::from_millis(50)).err().unwrap();
        let msg = e.to_string();
        assert!(msg.contains("2.0.0") && msg.contains("1.0.0"), "{msg}");
    }

    #[test]
    fn silence_is_a_timeout_with_garbage_skipped() {
        let mut junk = vec![0x00, 0x13];
        junk.extend(protocol::response(Status::Ok, &[7]));
        let mut c = Control::new_unchecked(canned(vec![vec![], junk]), Duration::from_millis(30));
        let t = Instant::now();
        assert!(matches!(c.read(0x0400, 1), Err(ControlError::Timeout { .. })));
        assert!(t.elapsed() < Duration::from_secs(1));
        assert_eq!(c.read(0x0400, 1).unwrap(), vec![7]);
    }

    #[test]
    fn error_status_is_an_error() {
        let mut c = answering(&[(Status::UnknownRegister, &[])]);
        let e = c.write(0x0000, &[1]).err().unwrap();
        assert!(e.to_string().contains("unknown register"), "{e}");
        assert_eq!(c.port.sent, protocol::write_request(0, &[1]));
    }

    /// `configure` writes the job registers, the worker table, then VLAN, worker port and job
    /// number (0x0107..=0x0109) in one request, the parent (none), then enables the job; `status` reads the ten
    /// job registers back. Byte literals of the requests.
    #[test]
    fn configure_writes_worker_port_and_job_number() {
        let ok = || protocol::response(Status::Ok, &[]);
        let mut job = JobConfig::example(1, crate::wire::PayloadSize::B256, 4);
        job.worker_port = 0xbee3;
        job.job_number = 9;
        let mut c = Control::new_unchecked(canned(vec![ok(), ok(), ok(), ok(), ok()]), Duration::from_millis(30));
        c.configure(&job).unwrap();
        let vlan_port_job = [0xA5, 0x02, 0x01, 0x07, 0x03, 0, 0, 0, 0, 0, 0, 0xBE, 0xE3, 0, 0, 0, 0x09];
        let sent = &c.port.sent;
        let at = sent.windows(vlan_port_job.len()).position(|w| w == vlan_port_job).expect("the 0x0107 write");
        // Then the parent registers 0x010A..=0x010D, zero (no parent), and the enable.
        let mut rest = vec![0x04, 0xC4, 0xA5, 0x02, 0x01, 0x0A, 0x04];
        rest.extend([0; 16]);
        rest.extend([0x01, 0x65, 0xA5, 0x02, 0x01, 0x06, 0x01, 0, 0, 0, 1, 0x31, 0x68]);
        assert_eq!(&sent[at + vlan_port_job.len()..], &rest[..]);
        let mut job_regs = vec![0x0211, 0x2233_4455, 0x0a00_0001, 1, 1, 4, 1, 0, 0xbee3, 9];
        let mut c = Control::new_unchecked(
            canned(vec![
                protocol::response(Status::Ok, &[1, 4, 77]),
                protocol::response(Status::Ok, &[4, 1, 0, 0]),
                protocol::response(Status::Ok, &job_regs),
            ]),
            Duration::from_millis(30),
        );
        let s = c.status().unwrap();
        assert_eq!(&c.port.sent[c.port.sent.len() - 7..], &[0xA5, 0x01, 0x01, 0x00, 0x0A, 0x64, 0x0E]);
        assert_eq!((s.worker_port, s.job_number, s.vlan), (0xbee3, 9, 0));
        job_regs.truncate(6);
        assert_eq!(s.job_registers, job_regs);
    }

    /// A range of worker ports goes into register 0x0108's bits 23..16 and zero checksums into
    /// bit 24, and the register is read back, so that a bitstream from before the ranges (it
    /// keeps the low 16 bits) or before zero checksums (the low 24) is found out, naming the
    /// key and the register. Byte literals of the requests.
    #[test]
    fn configure_writes_worker_port_ranges_and_zero_checksums_and_reads_them_back() {
        let ok = || protocol::response(Status::Ok, &[]);
        let mut job = JobConfig::example(2, crate::wire::PayloadSize::B256, 4);
        // SwitchML's defaults: port 4000 (0x0fa0), 4 threads: 0x0003_0fa0.
        (job.worker_port, job.worker_ports) = (4000, 4);
        let vlan_port_job = [0xA5, 0x02, 0x01, 0x07, 0x03, 0, 0, 0, 0, 0, 0x03, 0x0F, 0xA0, 0, 0, 0, 0x00];
        let read_back = [0xA5, 0x01, 0x01, 0x08, 0x01];
        let old = protocol::response(Status::Ok, &[0x0fa0]);
        let mut c = Control::new_unchecked(canned(vec![ok(), ok(), ok(), old]), Duration::from_millis(30));
        let e = c.configure(&job).unwrap_err().to_string();
        assert!(e.contains("worker_ports = 4") && e.contains("0x0108 reads 0xfa0 after 0x30fa0"), "{e}");
        let sent = &c.port.sent;
        let at = sent.windows(vlan_port_job.len()).position(|w| w == vlan_port_job).expect("the 0x0107 write");
        let after = &sent[at + vlan_port_job.len() + 2..];
        assert_eq!(&after[..read_back.len()], &read_back, "the read of 0x0108 after the write (and its CRC)");
        let new = protocol::response(Status::Ok, &[0x0003_0fa0]);
        let mut c = Control::new_unchecked(canned(vec![ok(), ok(), ok(), new, ok(), ok()]), Duration::from_millis(30));
        c.configure(&job).unwrap();
        // Zero checksums: bit 24 (0x0103_0fa0); a board from before them reads 0x0003_0fa0.
        job.zero_ip_checksum = true;
        let with_z = [0xA5, 0x02, 0x01, 0x07, 0x03, 0, 0, 0, 0, 0x01, 0x03, 0x0F, 0xA0, 0, 0, 0, 0x00];
        let before_z = protocol::response(Status::Ok, &[0x0003_0fa0]);
        let mut c = Control::new_unchecked(canned(vec![ok(), ok(), ok(), before_z]), Duration::from_millis(30));
        let e = c.configure(&job).unwrap_err().to_string();
        assert!(e.contains("zero_ip_checksum = true") && e.contains("reads 0x30fa0 after 0x1030fa0"), "{e}");
        assert!(c.port.sent.windows(with_z.len()).any(|w| w == with_z), "bit 24 written");
        let z = protocol::response(Status::Ok, &[0x0103_0fa0]);
        let mut c = Control::new_unchecked(canned(vec![ok(), ok(), ok(), z, ok(), ok()]), Duration::from_millis(30));
        c.configure(&job).unwrap();
        // One port and zero checksums: read back too.
        job.worker_ports = 1;
        let z1 = protocol::response(Status::Ok, &[0x0100_0fa0]);
        let mut c = Control::new_unchecked(canned(vec![ok(), ok(), ok(), z1, ok(), ok()]), Duration::from_millis(30));
        c.configure(&job).unwrap();
    }

    /// `stragglers(n)` reads 4n registers at 0x0600 (byte literal of the request) and splits them
    /// by rank; a design without them answers unknown register: `None`.
    #[test]
    fn stragglers_by_rank_or_none() {
        let words: Vec<u32> = (0..12).map(|i| 100 + i).collect();
        let mut c = answering(&[(Status::Ok, &words), (Status::UnknownRegister, &[])]);
        assert_eq!(c.stragglers(3).unwrap(), Some(vec![[100, 101, 102], [104, 105, 106], [108, 109, 110]]));
        assert_eq!(c.port.sent, [0xA5, 0x01, 0x06, 0x00, 0x0C, 0x81, 0x58]);
        assert_eq!(c.stragglers(3).unwrap(), None);
    }

    /// A leaf's job (docs/switch.md §6) writes its parent to 0x010A..=0x010D before the enable:
    /// IPv4, MAC bytes 0..2, MAC bytes 2..6, enable | rank << 16 | port. Byte literals.
    #[test]
    fn configure_writes_the_parent() {
        let ok = || protocol::response(Status::Ok, &[]);
        let mut job = JobConfig::example(1, crate::wire::PayloadSize::B256, 4);
        job.parent = Some(crate::config::ParentConfig {
            ip: std::net::Ipv4Addr::new(192, 0, 2, 100),
            mac: crate::wire::MacAddr([0x02, 0x00, 0x5a, 0x00, 0x00, 0x64]),
            port: 0xbee3,
            rank: 1,
        });
        let mut c = Control::new_unchecked(canned(vec![ok(), ok(), ok(), ok(), ok()]), Duration::from_millis(30));
        c.configure(&job).unwrap();
        let parent = [
            0xA5, 0x02, 0x01, 0x0A, 0x04, 0xC0, 0, 2, 100, 0, 0, 0x02, 0x00, 0x5a, 0, 0, 0x64, 0x80, 0x01, 0xBE, 0xE3,
            0x0F, 0xE4,
        ];
        let enable = [0xA5, 0x02, 0x01, 0x06, 0x01, 0, 0, 0, 1, 0x31, 0x68];
        let sent = &c.port.sent;
        assert_eq!(&sent[sent.len() - enable.len() - parent.len()..sent.len() - enable.len()], &parent);
        assert_eq!(&sent[sent.len() - enable.len()..], &enable);
    }

    #[test]
    fn counters_in_order() {
        let words: Vec<u32> = (1..=24).collect();
        let mut c = answering(&[(Status::Ok, &[24]), (Status::Ok, &words), (Status::Ok, &[1])]);
        let k = c.counters().unwrap();
        assert_eq!((k.frames_in, k.icmp_replies), (1, 8));
        assert_eq!(k.dropped(DropReason::Truncated), 9);
        assert_eq!(k.dropped(DropReason::WrongVlan), 11);
        assert_eq!(k.dropped(DropReason::BadSlot), 22);
        assert_eq!(c.port.sent, reads(&[(reg::COUNTER_REGISTERS, 1), (reg::COUNTERS, 24), (reg::STATUS, 1)]));
    }

    #[test]
    fn board_snapshot_reads_the_first_counter_first() {
        let words: Vec<u32> = (1..=46).collect();
        let mut c = answering(&[
            (Status::Ok, &[46]),
            (Status::Ok, &words[..32]),
            (Status::Ok, &words[32..]),
            (Status::Ok, &[3]),
        ]);
        let k = c.snapshot().unwrap();
        assert_eq!(k.core.frames_in, 1);
        assert_eq!(k.ports[0].good, 33);
        assert_eq!(k.ports[1].sent, 46);
        assert_eq!(k.flooded, Some(39));
        assert!(!k.quiescent);
        let sent =
            reads(&[(reg::COUNTER_REGISTERS, 1), (reg::COUNTERS, 32), (reg::COUNTERS + 32, 14), (reg::STATUS, 1)]);
        assert_eq!(c.port.sent, sent);
    }
}
