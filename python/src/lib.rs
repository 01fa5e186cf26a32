//! `spotagg._native`: the worker library ([`spotagg_driver`]) and the software switch
//! ([`spotagg_spec::udp_switch`]) for Python. Bindings only: every protocol decision stays in the
//! driver crate.
//!
//! - [`PyWorker`] (`spotagg.Worker`): one rank of a job over UDP; `allreduce` sums a float32
//!   or int32 numpy array (or a CPU `torch.Tensor`) in place, without a copy and with the GIL
//!   released.
//! - [`SoftwareSwitch`] (`spotagg.SoftwareSwitch`): the reference switch served over UDP by a
//!   background thread of the same process.
//! - Errors: `SwitchUnreachable` (the switch stopped answering), `ProtocolError` (an answer that
//!   contradicts the protocol), both subclasses of `SpotaggError`; bad arguments are
//!   `TypeError` / `ValueError`, socket failures `OSError`.

use numpy::{PyArrayDyn, PyArrayMethods, PyUntypedArray, PyUntypedArrayMethods};
use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyOSError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use spotagg_driver::config::JobConfig;
use spotagg_driver::fixedpoint;
use spotagg_driver::transport::{enlarge_buffers, UdpTransport, SOCKET_BUFFER};
use spotagg_driver::wire::switchml::is_switchml_port;
use spotagg_driver::wire::{Lanes, PayloadSize};
use spotagg_driver::worker::{Error as DriverError, Stats, Worker};
use spotagg_driver::{Counters, Engine};
use spotagg_spec::reference::RefSwitch;
use spotagg_spec::udp_switch::{self, ServeOptions, ServeStats};
use std::net::{Ipv4Addr, SocketAddr, UdpSocket};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;

create_exception!(spotagg, SpotaggError, PyException, "Base class of the errors of spotagg.");
create_exception!(
    spotagg,
    SwitchUnreachable,
    SpotaggError,
    "The switch stopped answering: a packet got no result after every retransmission."
);
create_exception!(
    spotagg,
    ProtocolError,
    SpotaggError,
    "The switch's answer contradicts the protocol (for example, workers that disagree on exponents)."
);

create_exception!(
    spotagg,
    ControllerError,
    SpotaggError,
    "The switch's controller refused a registration, or the job's workers did not all register in time."
);

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// A job from a path (str or os.PathLike) to a TOML file, or from the TOML text itself.
fn job_from(obj: &Bound<'_, PyAny>) -> PyResult<JobConfig> {
    if let Ok(text) = obj.extract::<String>() {
        let path = PathBuf::from(&text);
        if !text.contains('\n') && !text.contains('=') {
            return JobConfig::load(&path).map_err(|e| PyValueError::new_err(format!("job: {e}")));
        }
        return JobConfig::from_toml(&text).map_err(|e| PyValueError::new_err(format!("job TOML text: {e}")));
    }
    if let Ok(path) = obj.extract::<PathBuf>() {
        return JobConfig::load(&path).map_err(|e| PyValueError::new_err(format!("job: {e}")));
    }
    Err(PyTypeError::new_err(format!(
        "job must be a path to a job TOML file or the TOML text, not {}",
        obj.get_type().name()?
    )))
}

fn socket_addr(what: &str, s: &str) -> PyResult<SocketAddr> {
    s.parse().map_err(|_| {
        PyValueError::new_err(format!("{what} = {s:?} is not an address IP:PORT (like \"127.0.0.1:48864\")"))
    })
}

/// What an all-reduce did (`spotagg.Stats`).
#[pyclass(name = "Stats", module = "spotagg", frozen, get_all)]
#[derive(Clone)]
struct PyStats {
    /// Elements of the array.
    elements: usize,
    /// Chunks of k elements (one packet each, plus the priming packets of float32).
    chunks: usize,
    /// Packets sent, retransmissions and priming packets included.
    packets: u64,
    /// Packets received, ignored ones included.
    packets_received: u64,
    /// Retransmissions.
    retransmissions: u64,
    /// Received packets ignored (stale, duplicate or of another job).
    ignored: u64,
    /// Seconds from the first packet to the last result.
    seconds: f64,
    /// The worker's rank.
    rank: usize,
    /// Retransmissions found spurious (a lower bound).
    spurious_retransmissions: u64,
    /// The smoothed round-trip time at the end, seconds (0 before any sample).
    srtt_seconds: f64,
    /// The retransmission timeout a new packet would get at the end, seconds.
    rto_seconds: f64,
    /// Index of the switch that served the end (in the worker's list of switches).
    switch: usize,
    /// Its address, "IP:PORT".
    switch_name: String,
    /// The session epoch in use (None without sessions).
    epoch: Option<u8>,
    /// The failovers of the operation: dicts with from, to, reason, detect_seconds,
    /// stall_seconds.
    failovers: Vec<std::collections::HashMap<String, String>>,
}

#[pymethods]
impl PyStats {
    /// These stats in the Prometheus text exposition format (families `spotagg_worker_*`,
    /// labelled `rank`; docs/monitoring.md).
    fn prometheus(&self) -> String {
        let s = Stats {
            elements: self.elements,
            chunks: self.chunks,
            packets_sent: self.packets,
            packets_received: self.packets_received,
            retransmissions: self.retransmissions,
            spurious_retransmissions: self.spurious_retransmissions,
            ignored: self.ignored,
            seconds: self.seconds,
            srtt_seconds: self.srtt_seconds,
            rto_seconds: self.rto_seconds,
            switch: self.switch,
            switch_name: self.switch_name.clone(),
            epoch: self.epoch,
            failovers: Vec::new(),
        };
        spotagg_driver::metrics::render(&spotagg_driver::metrics::worker_families(self.rank, &s))
    }

    fn __repr__(&self) -> String {
        format!(
            "Stats(elements={}, chunks={}, packets={}, packets_received={}, retransmissions={}, ignored={}, seconds={:.6}, switch={:?}, failovers={})",
            self.elements,
            self.chunks,
            self.packets,
            self.packets_received,
            self.retransmissions,
            self.ignored,
            self.seconds,
            self.switch_name,
            self.failovers.len()
        )
    }
}

impl PyStats {
    fn new(s: Stats, rank: usize) -> PyStats {
        PyStats {
            elements: s.elements,
            chunks: s.chunks,
            packets: s.packets_sent,
            packets_received: s.packets_received,
            retransmissions: s.retransmissions,
            ignored: s.ignored,
            seconds: s.seconds,
            rank,
            spurious_retransmissions: s.spurious_retransmissions,
            srtt_seconds: s.srtt_seconds,
            rto_seconds: s.rto_seconds,
            switch: s.switch,
            switch_name: s.switch_name,
            epoch: s.epoch,
            failovers: s
                .failovers
                .iter()
                .map(|f| {
                    [
                        ("from", f.from.to_string()),
                        ("to", f.to.to_string()),
                        ("reason", f.reason.clone()),
                        ("detect_seconds", f.detect_seconds.to_string()),
                        ("stall_seconds", f.stall_seconds.to_string()),
                    ]
                    .into_iter()
                    .map(|(k, v)| (k.to_string(), v))
                    .collect()
                })
                .collect(),
        }
    }
}

struct WorkerState {
    worker: Worker,
    transport: UdpTransport,
    /// Why the worker can no longer be used: after a failed operation its slot state no
    /// longer matches the switch's.
    failed: Option<String>,
}

/// One rank of a job, talking to a switch over UDP (`spotagg.Worker`).
#[pyclass(name = "Worker", module = "spotagg", frozen)]
struct PyWorker {
    state: Mutex<WorkerState>,
    job: JobConfig,
    rank: usize,
    switch: SocketAddr,
    bind: SocketAddr,
}

enum Data<'a> {
    F32(&'a mut [f32], Lanes),
    I32(&'a mut [i32]),
}

/// `lanes=`: 16 or 32.
fn lanes_of(lanes: u32) -> PyResult<Lanes> {
    match lanes {
        32 => Ok(Lanes::I32),
        16 => Ok(Lanes::I16),
        _ => Err(PyValueError::new_err(format!("lanes = {lanes}: 16 or 32 bits a coordinate"))),
    }
}

impl PyWorker {
    fn run(&self, data: Data<'_>) -> PyResult<Stats> {
        let mut st = lock(&self.state);
        if let Some(why) = &st.failed {
            return Err(SpotaggError::new_err(why.clone()));
        }
        let WorkerState { worker, transport, .. } = &mut *st;
        let r = match data {
            Data::F32(d, lanes) => worker.allreduce_f32_lanes(transport, d, lanes),
            Data::I32(d) => worker.allreduce_i32(transport, d),
        };
        r.map_err(|e| {
            let msg = match &e {
                DriverError::Timeout { .. } | DriverError::NoSwitch { .. } => {
                    format!("switch {} (rank {}, bound to {}): {e}", self.switch, self.rank, self.bind)
                }
                _ => format!("switch {}: {e}", self.switch),
            };
            // A tensor refused before anything was sent (a value that fixed point cannot hold,
            // too many packets) leaves the worker and the switch in step: the worker stays
            // usable. Anything after the first packet leaves them apart.
            if !matches!(e, DriverError::Conversion(_) | DriverError::TooLarge { .. } | DriverError::Lanes16(_)) {
                st.failed = Some(format!(
                    "an earlier all-reduce of this worker failed ({msg}); make a new Worker (it opens a new session on the running switch)"
                ));
            }
            match e {
                DriverError::Timeout { .. } | DriverError::NoSwitch { .. } => SwitchUnreachable::new_err(msg),
                DriverError::Protocol { .. } => ProtocolError::new_err(msg),
                DriverError::Transport(_) => PyOSError::new_err(msg),
                // Conversion (NaN, infinity, too large), TooLarge, Rank, Lanes16 (a job without
                // 16-bit lanes), and whatever the driver adds: a bad argument.
                _ => PyValueError::new_err(msg),
            }
        })
    }
}

/// The numpy array behind `obj`: the array itself, or a torch.Tensor's `.numpy()` view after
/// checking that it is a contiguous CPU tensor that does not require grad.
fn as_array<'py>(obj: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyUntypedArray>> {
    if let Ok(a) = obj.cast::<PyUntypedArray>() {
        return Ok(a.clone());
    }
    let ty = obj.get_type();
    let module: String = ty.getattr("__module__")?.extract().unwrap_or_default();
    if module.starts_with("torch") && obj.hasattr("requires_grad")? {
        if obj.getattr("requires_grad")?.is_truthy()? {
            return Err(PyTypeError::new_err(
                "the tensor requires grad: all-reduce tensor.detach() (or its .data) instead",
            ));
        }
        let device: String = obj.getattr("device")?.getattr("type")?.extract()?;
        if device != "cpu" {
            return Err(PyTypeError::new_err(format!("the tensor is on device {device:?}: spotagg sums CPU tensors")));
        }
        let dtype: String = obj.getattr("dtype")?.str()?.extract()?;
        if dtype != "torch.float32" && dtype != "torch.int32" {
            return Err(PyTypeError::new_err(format!(
                "the tensor's dtype is {dtype}: spotagg sums torch.float32 or torch.int32"
            )));
        }
        if !obj.call_method0("is_contiguous")?.is_truthy()? {
            return Err(PyTypeError::new_err("the tensor is not contiguous: pass tensor.contiguous()"));
        }
        let a = obj.call_method0("numpy")?;
        return Ok(a.cast_into::<PyUntypedArray>()?);
    }
    Err(PyTypeError::new_err(format!("allreduce takes a numpy.ndarray or a torch.Tensor, not {}", ty.name()?)))
}

#[pymethods]
impl PyWorker {
    /// `Worker(job, rank, switch, bind=None, finite_only=False)`: `job` a path to a job TOML or the TOML text,
    /// `switch` "IP:PORT", or a list of them (or one string, comma-separated): the switches in
    /// failover order, the first active (default with None: the job's `switches`), `bind`
    /// "IP:PORT" (default: the rank's address in the job and the
    /// job's worker_port). The switch knows a rank by its source IPv4 address, so `bind` must
    /// keep the rank's IP, and answers every rank at the port of the round's last contribution,
    /// so with more than one worker the port must be the job's worker_port (else a ValueError).
    /// A float32 chunk with a NaN or an infinity comes back NaN on every rank (docs/switch.md
    /// §2.0, as NCCL gives a GradScaler to find); with `finite_only=True` it is a ValueError
    /// naming the element instead.
    #[new]
    #[pyo3(signature = (job, rank, switch=None, bind=None, finite_only=false))]
    fn new(
        job: &Bound<'_, PyAny>,
        rank: usize,
        switch: Option<&Bound<'_, PyAny>>,
        bind: Option<&str>,
        finite_only: bool,
    ) -> PyResult<PyWorker> {
        let mut job = job_from(job)?;
        let list: Vec<String> = match switch {
            None => Vec::new(),
            Some(s) => match s.extract::<String>() {
                Ok(one) => one.split(',').map(|x| x.trim().to_string()).filter(|x| !x.is_empty()).collect(),
                Err(_) => s.extract::<Vec<String>>().map_err(|_| {
                    PyTypeError::new_err("switch must be \"IP:PORT\", a comma-separated string or a list of them")
                })?,
            },
        };
        if !list.is_empty() {
            job.switches = list.iter().map(|a| socket_addr("switch", a)).collect::<PyResult<_>>()?;
        }
        if job.switches.is_empty() {
            return Err(PyValueError::new_err("no switch: pass switch=\"IP:PORT\" (or `switches` in the job)"));
        }
        if job.switches.len() > 1 && !job.sessions {
            return Err(PyValueError::new_err("failover to a standby needs sessions = true in the job"));
        }
        let switch = job.switches[0];
        let mut worker = Worker::new(job.clone(), rank).map_err(|e| PyValueError::new_err(e.to_string()))?;
        worker.set_finite_only(finite_only);
        let transport = match bind {
            Some(b) => {
                let local = socket_addr("bind", b)?;
                if job.n() > 1 && local.port() != job.worker_port {
                    return Err(PyValueError::new_err(format!(
                        "bind = {b:?}: the port must be the job's worker_port {}, since the switch sends each round's \
                         result to every rank at the UDP port of the contribution that completed it",
                        job.worker_port
                    )));
                }
                UdpTransport::bind(local, switch)
                    .map_err(|e| PyOSError::new_err(format!("cannot bind {local} for rank {rank}: {e}")))?
                    .with_switch_ports(job.switch_ports)
                    .with_switches(job.switches.clone())
            }
            None => UdpTransport::for_rank(&job, rank, switch).map_err(|e| {
                PyOSError::new_err(format!(
                    "cannot bind rank {rank}'s address {}:{}: {e}",
                    job.workers[rank].ip, job.worker_port
                ))
            })?,
        };
        let bind = transport.local_addr().map_err(|e| PyOSError::new_err(e.to_string()))?;
        Ok(PyWorker { state: Mutex::new(WorkerState { worker, transport, failed: None }), job, rank, switch, bind })
    }

    /// The rank, 0..world_size.
    #[getter]
    fn rank(&self) -> usize {
        self.rank
    }

    /// Workers in the job.
    #[getter]
    fn world_size(&self) -> usize {
        self.job.n()
    }

    /// The switch's address, "IP:PORT".
    #[getter]
    fn switch(&self) -> String {
        self.switch.to_string()
    }

    /// The bound local address, "IP:PORT".
    #[getter]
    fn bind(&self) -> String {
        self.bind.to_string()
    }

    /// Elements per packet (payload bytes / 4): the block of one shared exponent.
    #[getter]
    fn elements_per_packet(&self) -> usize {
        self.job.payload.bytes() / 4
    }

    /// Whether the job carries 16-bit lanes (`lanes16 = true`: `allreduce(x, lanes=16)`).
    #[getter]
    fn lanes16(&self) -> bool {
        self.job.lanes16
    }

    /// The job as TOML text.
    #[getter]
    fn job(&self) -> String {
        self.job.to_toml()
    }

    /// Sums `array` (float32 or int32, C-contiguous numpy array or CPU torch.Tensor) over all
    /// ranks, in place, with the GIL released; returns a Stats. Every rank must call it in the
    /// same order with arrays of the same length and dtype. `lanes=16` sends a float32 array
    /// as 16-bit lanes (docs/switch.md §9: half the bytes, each element within
    /// `error_bounds(..., lanes=16)`; the job needs `lanes16 = true`, else a ValueError before
    /// anything is sent); every rank must pass the same `lanes`.
    #[pyo3(signature = (array, lanes=32))]
    fn allreduce(&self, py: Python<'_>, array: &Bound<'_, PyAny>, lanes: u32) -> PyResult<PyStats> {
        let lanes = lanes_of(lanes)?;
        let arr = as_array(array)?;
        if !arr.is_c_contiguous() {
            return Err(PyTypeError::new_err("the array is not contiguous: pass numpy.ascontiguousarray(a)"));
        }
        let result = if let Ok(a) = arr.cast::<PyArrayDyn<f32>>() {
            let mut rw =
                a.try_readwrite().map_err(|e| PyTypeError::new_err(format!("the array is not writable: {e}")))?;
            let s = rw.as_slice_mut().map_err(|e| PyTypeError::new_err(e.to_string()))?;
            py.detach(|| self.run(Data::F32(s, lanes)))
        } else if let Ok(a) = arr.cast::<PyArrayDyn<i32>>() {
            if lanes != Lanes::I32 {
                return Err(PyValueError::new_err("lanes = 16 is for float32 arrays: int32 sums are exact in 32 bits"));
            }
            let mut rw =
                a.try_readwrite().map_err(|e| PyTypeError::new_err(format!("the array is not writable: {e}")))?;
            let s = rw.as_slice_mut().map_err(|e| PyTypeError::new_err(e.to_string()))?;
            py.detach(|| self.run(Data::I32(s)))
        } else {
            return Err(PyTypeError::new_err(format!(
                "the array's dtype is {}: spotagg sums float32 or int32",
                arr.dtype().str()?
            )));
        };
        result.map(|s| PyStats::new(s, self.rank))
    }

    fn __repr__(&self) -> String {
        format!(
            "Worker(rank={}, world_size={}, switch={:?}, bind={:?})",
            self.rank,
            self.job.n(),
            self.switch.to_string(),
            self.bind.to_string()
        )
    }
}

/// The engine shared between the serving thread and `counters()`.
#[derive(Clone)]
struct SharedEngine(Arc<Mutex<RefSwitch>>);

impl Engine for SharedEngine {
    fn process(&mut self, frame: &[u8], out: &mut Vec<Vec<u8>>) {
        lock(&self.0).process(frame, out)
    }
    fn counters(&self) -> Counters {
        lock(&self.0).counters()
    }
    fn name(&self) -> &'static str {
        "reference"
    }
}

/// The reference switch served over UDP by a background thread (`spotagg.SoftwareSwitch`).
#[pyclass(module = "spotagg", frozen)]
struct SoftwareSwitch {
    address: SocketAddr,
    /// The serving thread's engine (a handle to it: the reference switch of the job, or the
    /// switch of several jobs a controller configures).
    engine: Box<dyn Engine + Sync>,
    /// The controller's address and thread, with `controller=`.
    controller: Option<SocketAddr>,
    controller_thread: Mutex<Option<JoinHandle<()>>>,
    stop: Arc<AtomicBool>,
    thread: Mutex<Option<JoinHandle<std::io::Result<ServeStats>>>>,
    served: Mutex<Option<ServeStats>>,
}

impl SoftwareSwitch {
    fn shutdown(&self) -> PyResult<()> {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = lock(&self.controller_thread).take() {
            let _ = h.join();
        }
        let handle = lock(&self.thread).take();
        if let Some(h) = handle {
            match h.join() {
                Ok(Ok(st)) => *lock(&self.served) = Some(st),
                Ok(Err(e)) => return Err(PyOSError::new_err(format!("software switch {}: {e}", self.address))),
                Err(_) => {
                    return Err(SpotaggError::new_err(format!(
                        "software switch {}: the serving thread panicked",
                        self.address
                    )))
                }
            }
        }
        Ok(())
    }
}

#[pymethods]
impl SoftwareSwitch {
    /// `SoftwareSwitch(job=None, bind="127.0.0.1:0", loss=0.0, seed=0, controller=None,
    /// token=None, allow=None)`: serves
    /// the reference switch for `job` (path or TOML text) on UDP `bind` until `close()`; `loss`
    /// drops each datagram with that probability in each direction (seeded by `seed`), for tests
    /// of retransmission. A job with `lanes16 = true` is also served on the 16-bit twin of the
    /// port (docs/switch.md §9), so the port must be a SwitchML port (0xBEE0..=0xBEEF); with
    /// port 0 the first such port whose twin is free too is taken.
    ///
    /// `controller="IP:PORT"` also serves SwitchML's gRPC controller there (docs/controller.md;
    /// port 0: any, see `controller_address`): jobs set themselves up as their workers register
    /// (`spotagg.register`), `job` (if given) keeping slots 0..S; the switch's address is
    /// `bind`'s (which must name one), its 16-bit twin always served. `token` admits any worker
    /// that sends it (SPOTAGG_TOKEN), `allow` (a list of "a.b.c.d/len") the workers of those
    /// networks without it; with neither, loopback workers only (docs/controller.md §5).
    #[new]
    #[pyo3(signature = (job=None, bind="127.0.0.1:0", loss=0.0, seed=0, controller=None, token=None, allow=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        job: Option<&Bound<'_, PyAny>>,
        bind: &str,
        loss: f64,
        seed: u64,
        controller: Option<&str>,
        token: Option<String>,
        allow: Option<Vec<String>>,
    ) -> PyResult<SoftwareSwitch> {
        if !(0.0..=1.0).contains(&loss) {
            return Err(PyValueError::new_err(format!("loss = {loss} is not a probability in 0..=1")));
        }
        let local = socket_addr("bind", bind)?;
        let job = match (job, controller) {
            (Some(j), _) => Some(job_from(j)?),
            (None, Some(_)) => None,
            (None, None) => return Err(PyValueError::new_err("SoftwareSwitch needs a job, or controller=\"IP:PORT\"")),
        };
        let lanes16 = controller.is_some() || job.as_ref().is_some_and(|j| j.lanes16);
        let (socket, twin) = if lanes16 { bind_with_twin(local)? } else { (bind_udp(local)?, None) };
        enlarge_buffers(&socket, SOCKET_BUFFER);
        if let Some(t) = &twin {
            enlarge_buffers(t, SOCKET_BUFFER);
        }
        let address = socket.local_addr().map_err(|e| PyOSError::new_err(e.to_string()))?;
        let stop = Arc::new(AtomicBool::new(false));
        let (engine, serving, addressing, ctl): (Box<dyn Engine + Sync>, Box<dyn Engine>, JobConfig, _) =
            match controller {
                None => {
                    let job = job.expect("a job without a controller");
                    let e = SharedEngine(Arc::new(Mutex::new(RefSwitch::new(job.clone()))));
                    (Box::new(e.clone()), Box::new(e), job, None)
                }
                Some(c) => {
                    let at = socket_addr("controller", c)?;
                    let (sw, addressing) = controlled(job, address)?;
                    let mut settings =
                        spotagg_controller::registry::Settings::new(addressing.switch_mac, addressing.switch_ip);
                    settings.switch_port = address.port();
                    settings.token = token.filter(|t| !t.is_empty());
                    settings.allow = allow
                        .unwrap_or_default()
                        .iter()
                        .map(|n| n.parse().map_err(|e: String| PyValueError::new_err(format!("allow: {e}"))))
                        .collect::<PyResult<_>>()?;
                    let registry = spotagg_controller::registry::Registry::new(settings, sw.clone());
                    let (at, h) = spotagg_controller::server::Controller::new(registry)
                        .spawn(at, stop.clone())
                        .map_err(|e| PyOSError::new_err(format!("controller = {c:?}: cannot listen: {e}")))?;
                    (Box::new(sw.clone()), Box::new(sw), addressing, Some((at, h)))
                }
            };
        let s = stop.clone();
        let thread = std::thread::Builder::new()
            .name(format!("spotagg-switch-{address}"))
            .spawn(move || {
                let opts = ServeOptions { loss, seed, ..ServeOptions::default() };
                let mut engines: Vec<Box<dyn Engine>> = vec![serving];
                let twins: Vec<UdpSocket> = twin.into_iter().collect();
                udp_switch::serve_threads_lanes(
                    std::slice::from_ref(&socket),
                    &twins,
                    &addressing,
                    &mut engines,
                    &opts,
                    &s,
                )
            })
            .map_err(|e| PyOSError::new_err(format!("cannot start the switch thread: {e}")))?;
        let (controller, controller_thread) = match ctl {
            Some((a, h)) => (Some(a), Some(h)),
            None => (None, None),
        };
        Ok(SoftwareSwitch {
            address,
            engine,
            controller,
            controller_thread: Mutex::new(controller_thread),
            stop,
            thread: Mutex::new(Some(thread)),
            served: Mutex::new(None),
        })
    }

    /// The controller's address, "IP:PORT" (`SPOTAGG_CONTROLLER`), or None without one.
    #[getter]
    fn controller_address(&self) -> Option<String> {
        self.controller.map(|a| a.to_string())
    }

    /// The bound address, "IP:PORT" (what workers take as `switch`).
    #[getter]
    fn address(&self) -> String {
        self.address.to_string()
    }

    /// Whether `close()` was called.
    #[getter]
    fn closed(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    /// The switch's counters (frames in/out, contributions, duplicates, results, drops by
    /// reason) as a dict; after `close()` also the serving loop's datagram counts.
    fn counters<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        for (k, v) in self.engine.counters().named() {
            d.set_item(k, v)?;
        }
        if let Some(st) = *lock(&self.served) {
            d.set_item("datagrams_in", st.datagrams_in)?;
            d.set_item("datagrams_out", st.datagrams_out)?;
            d.set_item("unknown_senders", st.unknown_senders)?;
            d.set_item("injected_drops_in", st.injected_drops_in)?;
            d.set_item("injected_drops_out", st.injected_drops_out)?;
        }
        Ok(d)
    }

    /// Stops the serving thread and waits for it (at most one 50 ms receive timeout).
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        py.detach(|| self.shutdown())
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, py: Python<'_>, _args: &Bound<'_, pyo3::types::PyTuple>) -> PyResult<bool> {
        self.close(py)?;
        Ok(false)
    }

    fn __repr__(&self) -> String {
        format!("SoftwareSwitch(address={:?}, closed={})", self.address.to_string(), self.closed())
    }
}

impl Drop for SoftwareSwitch {
    fn drop(&mut self) {
        let _ = self.shutdown();
    }
}

fn bind_udp(local: SocketAddr) -> PyResult<UdpSocket> {
    UdpSocket::bind(local).map_err(|e| PyOSError::new_err(format!("cannot bind the switch to {local}: {e}")))
}

/// A socket on `local` and one on its 16-bit twin (docs/switch.md §9); port 0: the first
/// SwitchML port of the address that is free with its twin.
fn bind_with_twin(local: SocketAddr) -> PyResult<(UdpSocket, Option<UdpSocket>)> {
    let twin_of = |a: SocketAddr| {
        let mut t = a;
        t.set_port(Lanes::I16.port(a.port()));
        t
    };
    if local.port() == 0 {
        for p in spotagg_driver::wire::switchml::UDP_PORT_BASE..=spotagg_driver::wire::switchml::UDP_PORT_BASE + 15 {
            let mut a = local;
            a.set_port(p);
            if let (Ok(s), Ok(t)) = (UdpSocket::bind(a), UdpSocket::bind(twin_of(a))) {
                return Ok((s, Some(t)));
            }
        }
        return Err(PyOSError::new_err(format!(
            "the job has lanes16 = true: no SwitchML port of {} is free with its 16-bit twin (0xBEE0 + t and 0xBEF0 + t)",
            local.ip()
        )));
    }
    if !is_switchml_port(local.port()) {
        return Err(PyValueError::new_err(format!(
            "bind = \"{local}\": the job has lanes16 = true, so the switch must be on a SwitchML port \
             (0xBEE0..=0xBEEF, 48864..=48879) for its 16-bit twin (0xBEF0..=0xBEFF)"
        )));
    }
    let t = twin_of(local);
    let twin = UdpSocket::bind(t)
        .map_err(|e| PyOSError::new_err(format!("cannot bind the switch's 16-bit port {t} (lanes16 = true): {e}")))?;
    Ok((bind_udp(local)?, Some(twin)))
}

/// The switch a controller configures for `SoftwareSwitch(controller=...)`: `job` (if any) at
/// slots 0..S, 4096 slots in all (sessions of 512, docs/controller.md §4); and the job the
/// serve loop addresses frames with.
fn controlled(
    job: Option<JobConfig>,
    address: SocketAddr,
) -> PyResult<(spotagg_spec::multi_job::SharedSwitch, JobConfig)> {
    use spotagg_spec::multi_job::{JobPlacement, MultiSwitch, SharedSwitch};
    let SocketAddr::V4(a) = address else {
        return Err(PyValueError::new_err(format!("bind = {address}: the controller's switch needs an IPv4 address")));
    };
    if a.ip().is_unspecified() {
        return Err(PyValueError::new_err(format!(
            "bind = {address}: with a controller, bind the address workers send to (not 0.0.0.0)"
        )));
    }
    let mut addressing = job.clone().unwrap_or_else(|| {
        let mut j = JobConfig::example(1, PayloadSize::B256, 1);
        j.workers.clear();
        j
    });
    addressing.switch_ip = *a.ip();
    addressing.switch_port = a.port();
    addressing.lanes16 = true;
    let mut multi = MultiSwitch::empty(addressing.switch_mac, *a.ip(), 4096);
    if let Some(mut j) = job {
        j.switch_ip = *a.ip();
        multi.add(JobPlacement { job: j, slot_base: 0 }).map_err(|e| PyValueError::new_err(format!("job: {e}")))?;
    }
    Ok((SharedSwitch(Arc::new(Mutex::new(multi))), addressing))
}

/// `register(controller, rank, world_size, bind, payload_bytes=256, lanes16=False, mac=None,
/// worker_port=None, token=None, timeout=60.0, scope=0)`: registers this worker with the switch's
/// controller (docs/controller.md §7: SwitchML's sequence, every worker of the job calling it)
/// and returns the job's TOML text, for `Worker(job, rank, switch)`. `bind` is the worker's
/// IPv4 address (the one it sends from and connects to the controller from); `mac` defaults
/// to its interface's (02:00 and the address on loopback); `token` to SPOTAGG_TOKEN. A refusal
/// or a timeout is a `ControllerError` naming the controller, the call and the reason. `scope`
/// (a number the job's workers share and no other job has) keeps the session id's Broadcast
/// apart from another job's of the same size registering at the same moment.
#[pyfunction]
#[pyo3(signature = (controller, rank, world_size, bind, payload_bytes=256, lanes16=false, mac=None, worker_port=None, token=None, timeout=60.0, scope=0))]
#[allow(clippy::too_many_arguments)]
fn register(
    py: Python<'_>,
    controller: &str,
    rank: u32,
    world_size: u32,
    bind: &str,
    payload_bytes: usize,
    lanes16: bool,
    mac: Option<&str>,
    worker_port: Option<u16>,
    token: Option<String>,
    timeout: f64,
    scope: u64,
) -> PyResult<String> {
    let ip: Ipv4Addr =
        bind.parse().map_err(|_| PyValueError::new_err(format!("bind = {bind:?} is not an IPv4 address")))?;
    let payload = PayloadSize::from_bytes(payload_bytes).ok_or_else(|| {
        PyValueError::new_err(format!("payload_bytes = {payload_bytes}: must be 128, 256, 512 or 1024"))
    })?;
    let mac = match mac {
        Some(m) => m.parse().map_err(|_| PyValueError::new_err(format!("mac = {m:?} is not a MAC address")))?,
        None => spotagg_controller::client::mac_of(ip),
    };
    if !(timeout > 0.0 && timeout.is_finite()) {
        return Err(PyValueError::new_err(format!("timeout = {timeout}: must be a positive number of seconds")));
    }
    let reg = spotagg_controller::client::Registration {
        controller: controller.to_string(),
        token: token.or_else(|| std::env::var("SPOTAGG_TOKEN").ok()).filter(|t| !t.is_empty()),
        rank,
        num_workers: world_size,
        ip,
        mac,
        payload,
        worker_port,
        lanes16,
        timeout: std::time::Duration::from_secs_f64(timeout),
        scope,
    };
    let job = py
        .detach(|| spotagg_controller::client::register(&reg))
        .map_err(|e| ControllerError::new_err(e.to_string()))?;
    Ok(job.to_toml())
}

/// `example_job(n, ...)`: the TOML text of a job of `n` workers on loopback addresses: the
/// switch at `switch_ip`, rank r at `first_worker_ip` + r.
#[pyfunction]
#[pyo3(signature = (n, payload_bytes=1024, slots=128, window=None, switch_ip="127.0.0.1", first_worker_ip="127.0.0.10", timeout_ms=20, max_retries=12, lanes16=false))]
#[allow(clippy::too_many_arguments)]
fn example_job(
    n: usize,
    payload_bytes: usize,
    slots: u16,
    window: Option<u16>,
    switch_ip: &str,
    first_worker_ip: &str,
    timeout_ms: u64,
    max_retries: u32,
    lanes16: bool,
) -> PyResult<String> {
    if !(1..=spotagg_driver::config::MAX_WORKERS).contains(&n) {
        return Err(PyValueError::new_err(format!(
            "n = {n}: a job has 1..={} workers",
            spotagg_driver::config::MAX_WORKERS
        )));
    }
    let payload = PayloadSize::from_bytes(payload_bytes).ok_or_else(|| {
        PyValueError::new_err(format!("payload_bytes = {payload_bytes}: must be 128, 256, 512 or 1024"))
    })?;
    let ip = |what: &str, s: &str| {
        s.parse::<Ipv4Addr>().map_err(|_| PyValueError::new_err(format!("{what} = {s:?} is not an IPv4 address")))
    };
    let mut job = JobConfig::example(n, payload, slots.max(1));
    job.switch_ip = ip("switch_ip", switch_ip)?;
    let first = u32::from(ip("first_worker_ip", first_worker_ip)?);
    for (r, w) in job.workers.iter_mut().enumerate() {
        w.ip = Ipv4Addr::from(first + r as u32);
    }
    job.window = window.unwrap_or(job.slots);
    job.timeout = std::time::Duration::from_millis(timeout_ms);
    job.max_retries = max_retries;
    job.lanes16 = lanes16;
    // Round trip through the validating parser: a bad value is reported as the parser names it.
    let text = job.to_toml();
    JobConfig::from_toml(&text).map_err(|e| PyValueError::new_err(format!("example_job: {e}")))?;
    Ok(text)
}

/// `error_bounds(contributions, result, elements_per_packet, lanes=32)`: the per-element bound
/// of driver/src/fixedpoint.rs on |result − exact sum| of a float32 all-reduce, given every
/// rank's input (a list of float32 arrays of one length) and the result. `elements_per_packet`
/// is the 32-bit count (`Worker.elements_per_packet`); with `lanes=16` a packet carries twice
/// as many, each with the 16-bit scale.
#[pyfunction]
#[pyo3(signature = (contributions, result, elements_per_packet, lanes=32))]
fn error_bounds<'py>(
    py: Python<'py>,
    contributions: Vec<Bound<'py, PyArrayDyn<f32>>>,
    result: Bound<'py, PyArrayDyn<f32>>,
    elements_per_packet: usize,
    lanes: u32,
) -> PyResult<Bound<'py, PyArrayDyn<f64>>> {
    let lanes = lanes_of(lanes)?;
    let elements_per_packet = elements_per_packet * 32 / lanes.bits() as usize;
    let n = contributions.len();
    if n == 0 || elements_per_packet == 0 {
        return Err(PyValueError::new_err("error_bounds needs at least one contribution and elements_per_packet > 0"));
    }
    let res = result.to_vec().map_err(|e| PyTypeError::new_err(e.to_string()))?;
    let mut exps: Vec<i8> = vec![fixedpoint::E_ZERO; res.len().div_ceil(elements_per_packet)];
    for c in &contributions {
        let v = c.to_vec().map_err(|e| PyTypeError::new_err(e.to_string()))?;
        if v.len() != res.len() {
            return Err(PyValueError::new_err(format!(
                "a contribution has {} elements, the result {}",
                v.len(),
                res.len()
            )));
        }
        let e = fixedpoint::exponents(&v, elements_per_packet).map_err(|e| PyValueError::new_err(e.to_string()))?;
        for (m, x) in exps.iter_mut().zip(e) {
            *m = (*m).max(x);
        }
    }
    let bound = |e: i8, s: f32| fixedpoint::Scale::of_lanes(lanes, n, e).bound(s);
    if lanes == Lanes::I16 && n > spotagg_driver::config::MAX_LANES16_WORKERS {
        return Err(PyValueError::new_err(format!(
            "{n} contributions: 16-bit lanes serve at most {}",
            spotagg_driver::config::MAX_LANES16_WORKERS
        )));
    }
    let bounds: Vec<f64> = res.iter().enumerate().map(|(i, &s)| bound(exps[i / elements_per_packet], s)).collect();
    numpy::PyArray1::from_vec(py, bounds).reshape(result.shape())
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add_class::<PyWorker>()?;
    m.add_class::<PyStats>()?;
    m.add_class::<SoftwareSwitch>()?;
    m.add_function(wrap_pyfunction!(example_job, m)?)?;
    m.add_function(wrap_pyfunction!(error_bounds, m)?)?;
    m.add_function(wrap_pyfunction!(register, m)?)?;
    m.add("ControllerError", py.get_type::<ControllerError>())?;
    m.add("SpotaggError", py.get_type::<SpotaggError>())?;
    m.add("SwitchUnreachable", py.get_type::<SwitchUnreachable>())?;
    m.add("ProtocolError", py.get_type::<ProtocolError>())?;
    Ok(())
}
