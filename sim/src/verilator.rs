//! Verilator co-simulation of generated Verilog, driven from Rust.
//!
//! [`VerilatedModel::build`] takes the Verilog of a rust-hdl block and the list of its top-level
//! ports ([`ports_of`]), writes a small C++ shim of ours that exposes `new / eval / set / get /
//! trace` with a C ABI, compiles both with Debian's Verilator (`verilator --cc --build`) and g++
//! into a shared library, and loads it. Builds are cached by a hash of everything that goes
//! into them, so a test suite that asks for the same design twice compiles it once.
//!
//! Ports are set and read as little-endian 32-bit words, whatever their width, so one pair of
//! functions serves every port (a `u64` convenience covers the common case).
//!
//! Where Verilator is not installed, [`verilator_available`] says so and [`VerilatedModel::build`]
//! returns [`VerilatorError::NotInstalled`]: callers report that the Verilator checks did not
//! run, they never pass silently.

use rust_hdl::core::prelude::*;
use std::collections::hash_map::DefaultHasher;
use std::ffi::{c_char, c_void, CString};
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::process::Command;

/// One top-level port of the design.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PortSpec {
    /// The name rust-hdl gives the port in Verilog (nested interfaces joined by `$`).
    pub name: String,
    /// Width in bits.
    pub width: usize,
    /// True for an input of the design.
    pub input: bool,
}

impl PortSpec {
    /// 32-bit words needed to carry the port.
    pub fn words(&self) -> usize {
        self.width.div_ceil(32)
    }
    /// The C++ member name Verilator gives the port (`$` becomes `__024`).
    fn cpp_name(&self) -> String {
        self.name.replace('$', "__024")
    }
}

struct PortProbe {
    depth: usize,
    prefix: Vec<String>,
    ports: Vec<PortSpec>,
}

impl Probe for PortProbe {
    fn visit_start_scope(&mut self, _name: &str, _node: &dyn Block) {
        self.depth += 1;
    }
    fn visit_start_namespace(&mut self, name: &str, _node: &dyn Block) {
        self.prefix.push(name.to_string());
    }
    fn visit_atom(&mut self, name: &str, signal: &dyn Atom) {
        if self.depth != 1 {
            return;
        }
        let input = match signal.kind() {
            AtomKind::InputParameter => true,
            AtomKind::OutputParameter | AtomKind::OutputPassthrough => false,
            _ => return,
        };
        let mut full = self.prefix.clone();
        full.push(name.to_string());
        self.ports.push(PortSpec { name: full.join("$"), width: signal.bits(), input });
    }
    fn visit_end_namespace(&mut self, _name: &str, _node: &dyn Block) {
        self.prefix.pop();
    }
    fn visit_end_scope(&mut self, _name: &str, _node: &dyn Block) {
        self.depth -= 1;
    }
}

/// The top-level ports of a block, in declaration order.
pub fn ports_of(block: &dyn Block) -> Vec<PortSpec> {
    let mut p = PortProbe { depth: 0, prefix: vec![], ports: vec![] };
    block.accept("top", &mut p);
    p.ports
}

/// Why a Verilator model could not be built or loaded.
#[derive(Debug, thiserror::Error)]
pub enum VerilatorError {
    /// `verilator` is not on PATH.
    #[error("verilator is not installed (Debian: apt-get install verilator)")]
    NotInstalled,
    /// A tool failed; the text holds its command line and output.
    #[error("{0}")]
    Tool(String),
    /// File system error in the build folder.
    #[error("verilator build folder {path}: {source}")]
    Io {
        /// The folder or file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// The shared library could not be loaded.
    #[error("loading {path}: {source}")]
    Load {
        /// The library.
        path: PathBuf,
        /// The error.
        source: libloading::Error,
    },
}

/// True when `verilator` runs.
pub fn verilator_available() -> bool {
    Command::new("verilator").arg("--version").output().map(|o| o.status.success()).unwrap_or(false)
}

fn verilator_version() -> Result<String, VerilatorError> {
    let o = Command::new("verilator").arg("--version").output().map_err(|_| VerilatorError::NotInstalled)?;
    if !o.status.success() {
        return Err(VerilatorError::NotInstalled);
    }
    Ok(String::from_utf8_lossy(&o.stdout).trim().to_string())
}

/// Where builds are cached: `$SPOTAGG_VERILATOR_CACHE`, else `spotagg-verilator` in cargo's
/// target folder (`$CARGO_TARGET_DIR`, else the workspace's `target/`), so that a clean clone,
/// or `cargo clean`, starts cold, as a new user's first run does. A binary installed away from
/// its workspace uses `$XDG_CACHE_HOME/spotagg/verilator` (or `~/.cache/...`).
pub fn cache_root() -> PathBuf {
    if let Some(dir) = std::env::var_os("SPOTAGG_VERILATOR_CACHE") {
        return PathBuf::from(dir);
    }
    if let Some(dir) = std::env::var_os("CARGO_TARGET_DIR") {
        return PathBuf::from(dir).join("spotagg-verilator");
    }
    // This crate's manifest folder, known when it was compiled: the workspace is its parent.
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).parent().map(Path::to_path_buf);
    if let Some(ws) = workspace.filter(|ws| ws.join("Cargo.toml").is_file()) {
        return ws.join("target").join("spotagg-verilator");
    }
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(std::env::temp_dir);
    cache.join("spotagg").join("verilator")
}

/// Whether [`VerilatedModel::build`] compiled the model or found it built.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Provenance {
    /// Compiled by this call.
    Built,
    /// Found in the cache (built earlier, or by a concurrent builder this call waited for).
    Cached,
}

/// Options of a Verilator build.
#[derive(Debug, Clone, Default, Hash)]
pub struct BuildOptions {
    /// Compile with `--trace` so that a VCD can be written.
    pub trace: bool,
    /// A Verilator configuration file (waivers) passed on the command line, as text.
    pub config: Option<String>,
    /// Extra Verilator arguments (e.g. `-Wall`).
    pub extra_args: Vec<String>,
}

fn shim_source(ports: &[PortSpec], trace: bool) -> String {
    let mut s = String::new();
    s += "// Generated by spotagg-sim: C ABI over a Verilated model. Do not edit.\n";
    s += "#include <cstdint>\n#include \"Vtop.h\"\n#include \"verilated.h\"\n";
    if trace {
        s += "#include \"verilated_vcd_c.h\"\n";
    }
    s += "struct Sa { VerilatedContext* ctx; Vtop* top; ";
    s += if trace { "VerilatedVcdC* tfp; };\n" } else { "void* tfp; };\n" };
    s += "extern \"C\" {\n";
    s += "void* sa_new() { Sa* s = new Sa; s->ctx = new VerilatedContext; ";
    if trace {
        s += "s->ctx->traceEverOn(true); ";
    }
    s += "s->top = new Vtop{s->ctx}; s->tfp = nullptr; return s; }\n";
    s += "void sa_free(void* p) { Sa* s = (Sa*)p; ";
    if trace {
        s += "if (s->tfp) { s->tfp->close(); delete s->tfp; } ";
    }
    s += "s->top->final(); delete s->top; delete s->ctx; delete s; }\n";
    s += "void sa_eval(void* p) { ((Sa*)p)->top->eval(); }\n";
    s += "int sa_trace_open(void* p, const char* path) { ";
    if trace {
        s += "Sa* s = (Sa*)p; s->tfp = new VerilatedVcdC; s->top->trace(s->tfp, 99); s->tfp->open(path); return 0; }\n";
        s += "void sa_trace_dump(void* p, uint64_t t) { Sa* s = (Sa*)p; if (s->tfp) s->tfp->dump(t); }\n";
        s += "void sa_trace_flush(void* p) { Sa* s = (Sa*)p; if (s->tfp) s->tfp->flush(); }\n";
    } else {
        s += "(void)p; (void)path; return -1; }\n";
        s += "void sa_trace_dump(void* p, uint64_t t) { (void)p; (void)t; }\n";
        s += "void sa_trace_flush(void* p) { (void)p; }\n";
    }
    // The port setter and getter: a statement for each width class (one word, two, an array).
    let set = ["t->{n} = w[0];", "t->{n} = (uint64_t)w[0] | ((uint64_t)w[1] << 32);", "t->{n}[k] = w[k];"];
    let get = ["w[0] = t->{n};", "w[0] = (uint32_t)t->{n}; w[1] = (uint32_t)(t->{n} >> 32);", "w[k] = t->{n}[k];"];
    let inputs = ports.iter().enumerate().filter(|(_, p)| p.input);
    s += &port_switch("void sa_set(void* p, uint32_t id, const uint32_t* w)", inputs, set);
    s += &port_switch("void sa_get(void* p, uint32_t id, uint32_t* w)", ports.iter().enumerate(), get);
    s += "}\n";
    s
}

/// A C function `signature` that switches on the port id: `by_width[c]` is the statement for a
/// port of width class c (up to 32 bits, up to 64, wider: run for each word `k`), `{n}` its name.
fn port_switch<'a>(signature: &str, ports: impl Iterator<Item = (usize, &'a PortSpec)>, by_width: [&str; 3]) -> String {
    let mut s = format!("{signature} {{ Vtop* t = ((Sa*)p)->top; switch (id) {{\n");
    for (i, p) in ports {
        let (class, each_word) = match p.width {
            0..=32 => (0, String::new()),
            33..=64 => (1, String::new()),
            _ => (2, format!("for (int k = 0; k < {}; k++) ", p.words())),
        };
        s += &format!("  case {i}: {each_word}{} break;\n", by_width[class].replace("{n}", &p.cpp_name()));
    }
    s + "  default: break; } }\n"
}

/// The optimization level of the C++ that Verilator writes and of its runtime. Measured on a
/// board model (docs/performance.md, "Test suite"): -O1 compiles in 14 s of CPU against 18 s
/// for Verilator's own -Os and 19 s for -O2, and runs as fast as either; -O0 compiles in 9 s but
/// runs 4.6 times slower.
const CXX_OPT: &str = "-O1";

/// The optimization level of Verilator's `__Slow` files: the code that runs once (construction,
/// initial blocks, the first settle), about 40 % of a board model's C++. At -O0 it compiles 4.5
/// times faster (0.75 s of g++ against 3.3 s for the largest file of a board model) and the
/// model runs as fast.
const CXX_OPT_SLOW: &str = "-O0";

/// Builds `root/KEY` once, whatever the concurrency (threads of one process, several processes,
/// several clones sharing one cache): returns the folder once it holds `marker`, a file that
/// `build` writes into its folder. The builder holds the lock file `KEY.lock` (an exclusive
/// `flock`), builds in a temporary folder of its own (`KEY.build-XXXXXX`) and publishes it by
/// renaming it to `KEY`, so a published folder is always whole; a second builder waits on the
/// lock and then finds the first one's result.
fn publish(
    root: &Path,
    key: &str,
    marker: &str,
    build: impl FnOnce(&Path) -> Result<(), VerilatorError>,
) -> Result<(PathBuf, Provenance), VerilatorError> {
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| VerilatorError::Io { path, source }
    };
    let dir = root.join(key);
    // A published folder is whole (it appeared by rename).
    if dir.join(marker).exists() {
        return Ok((dir, Provenance::Cached));
    }
    std::fs::create_dir_all(root).map_err(io(root))?;
    let lock_path = root.join(format!("{key}.lock"));
    let lock = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .map_err(io(&lock_path))?;
    // Blocks while another thread or process builds this folder; released on drop.
    lock.lock().map_err(io(&lock_path))?;
    if dir.join(marker).exists() {
        return Ok((dir, Provenance::Cached));
    }
    let tmp = tempfile::Builder::new().prefix(&format!("{key}.build-")).tempdir_in(root).map_err(io(root))?;
    build(tmp.path())?;
    // Only a folder left by an interrupted publish could be here (we hold the lock).
    if dir.exists() {
        std::fs::remove_dir_all(&dir).map_err(io(&dir))?;
    }
    std::fs::rename(tmp.path(), &dir).map_err(io(&dir))?;
    // The folder was renamed away: nothing is left for the guard to delete.
    let _ = tmp.keep();
    drop(lock);
    Ok((dir, Provenance::Built))
}

/// The Verilator runtime (`verilated.cpp`, its threads and its VCD writer) compiled once into
/// `root/runtime-KEY/libverilated.a` (KEY: the Verilator version and the flags), for every model
/// of the cache to link: it is the same C++ for each (about 5 s of g++ a model otherwise).
fn ensure_runtime(root: &Path) -> Result<PathBuf, VerilatorError> {
    const SOURCES: [&str; 3] = ["verilated.cpp", "verilated_threads.cpp", "verilated_vcd_c.cpp"];
    let version = verilator_version()?;
    let mut h = DefaultHasher::new();
    (&version, CXX_OPT, SOURCES).hash(&mut h);
    let key = format!("runtime-{:016x}", h.finish());
    let (dir, _) = publish(root, &key, "libverilated.a", |tmp| {
        let include = verilator_include()?;
        let mut objects = Vec::new();
        for src in SOURCES {
            let obj = src.replace(".cpp", ".o");
            let mut g = Command::new("g++");
            g.current_dir(tmp)
                .args(["-c", "-fPIC", CXX_OPT, "-std=c++17", "-o", &obj])
                .arg(format!("-I{}", include.display()))
                .arg(format!("-I{}", include.join("vltstd").display()))
                .arg(include.join(src));
            run(&mut g, "g++ (the Verilator runtime)")?;
            objects.push(obj);
        }
        run(
            Command::new("ar").current_dir(tmp).arg("rcs").arg("libverilated.a").args(&objects),
            "ar (the Verilator runtime)",
        )
    })?;
    Ok(dir.join("libverilated.a"))
}

fn run(cmd: &mut Command, what: &str) -> Result<(), VerilatorError> {
    let out = cmd.output().map_err(|e| VerilatorError::Tool(format!("{what}: cannot run {cmd:?}: {e}")))?;
    if !out.status.success() {
        return Err(VerilatorError::Tool(format!(
            "{what} failed ({}): {cmd:?}\n{}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )));
    }
    Ok(())
}

type FnNew = unsafe extern "C" fn() -> *mut c_void;
type FnPtr = unsafe extern "C" fn(*mut c_void);
type FnSet = unsafe extern "C" fn(*mut c_void, u32, *const u32);
type FnGet = unsafe extern "C" fn(*mut c_void, u32, *mut u32);
type FnTraceOpen = unsafe extern "C" fn(*mut c_void, *const c_char) -> i32;
type FnTraceDump = unsafe extern "C" fn(*mut c_void, u64);

/// A Verilated design loaded in this process.
pub struct VerilatedModel {
    handle: *mut c_void,
    eval: FnPtr,
    set: FnSet,
    get: FnGet,
    free: FnPtr,
    trace_open: FnTraceOpen,
    trace_dump: FnTraceDump,
    trace_flush: FnPtr,
    ports: Vec<PortSpec>,
    traced: bool,
    time: u64,
    provenance: Provenance,
    // Keeps the code mapped while `handle` lives; dropped last.
    _lib: libloading::Library,
}

// The model is owned by one thread at a time; Verilator models have no thread affinity.
unsafe impl Send for VerilatedModel {}

impl VerilatedModel {
    /// Verilates `verilog` (top module `top`, as rust-hdl names it) with the ports `ports`,
    /// or reuses a cached build of the same inputs, and loads it.
    pub fn build(verilog: &str, ports: &[PortSpec], opts: &BuildOptions) -> Result<VerilatedModel, VerilatorError> {
        Self::build_in(&cache_root(), verilog, ports, opts)
    }

    /// [`VerilatedModel::build`] with the cache in `root`.
    ///
    /// Safe under any concurrency: threads of one process, several processes, several clones
    /// sharing one cache ([`publish`]: a lock file per model, a folder published whole by a
    /// rename). A second builder of the same model waits on the lock and then loads the first
    /// one's result.
    pub fn build_in(
        root: &Path,
        verilog: &str,
        ports: &[PortSpec],
        opts: &BuildOptions,
    ) -> Result<VerilatedModel, VerilatorError> {
        let version = verilator_version()?;
        let shim = shim_source(ports, opts.trace);
        let mut h = DefaultHasher::new();
        (verilog, &shim, &version, opts, ports, CXX_OPT, CXX_OPT_SLOW).hash(&mut h);
        let key = format!("{:016x}", h.finish());
        let (lib, provenance) = Self::ensure_built(root, &key, verilog, &shim, opts)?;
        let mut m = Self::load(&lib, ports, opts.trace)?;
        m.provenance = provenance;
        Ok(m)
    }

    /// The model's library in `root/KEY`, compiled there by this call (under the lock) or found
    /// there.
    fn ensure_built(
        root: &Path,
        key: &str,
        verilog: &str,
        shim: &str,
        opts: &BuildOptions,
    ) -> Result<(PathBuf, Provenance), VerilatorError> {
        let (dir, provenance) = publish(root, key, "libspotagg_model.so", |tmp| {
            let runtime = ensure_runtime(root)?;
            Self::compile(tmp, verilog, shim, opts, &runtime)
        })?;
        Ok((dir.join("libspotagg_model.so"), provenance))
    }

    fn compile(
        tmp: &Path,
        verilog: &str,
        shim: &str,
        opts: &BuildOptions,
        runtime: &Path,
    ) -> Result<(), VerilatorError> {
        let io = |path: &Path| {
            let path = path.to_path_buf();
            move |source| VerilatorError::Io { path, source }
        };
        std::fs::write(tmp.join("top.v"), verilog).map_err(io(tmp))?;
        std::fs::write(tmp.join("shim.cpp"), shim).map_err(io(tmp))?;
        let mut v = Command::new("verilator");
        v.current_dir(tmp)
            .args(["--cc", "--top-module", "top", "-Mdir", "obj", "--build", "-O3"])
            .args(["--x-assign", "fast", "--x-initial", "fast", "--noassert"])
            .args(["-CFLAGS", "-fPIC", "-MAKEFLAGS", "-s"])
            // Verilator's makefile puts its own levels (OPT_FAST, OPT_SLOW: -Os) after -CFLAGS.
            .args(["-MAKEFLAGS", &format!("OPT_FAST={CXX_OPT} OPT_SLOW={CXX_OPT_SLOW} OPT_GLOBAL={CXX_OPT}")]);
        if let Some(cfg) = &opts.config {
            std::fs::write(tmp.join("waivers.vlt"), cfg).map_err(io(tmp))?;
            v.arg("waivers.vlt");
        }
        if opts.trace {
            v.arg("--trace");
        }
        // Configuration files must come before the sources they waive warnings in.
        v.args(&opts.extra_args).arg("top.v");
        run(&mut v, "verilator")?;
        let include = verilator_include()?;
        let mut g = Command::new("g++");
        g.current_dir(tmp)
            .args(["-shared", "-fPIC", CXX_OPT, "-std=c++17", "-o", "libspotagg_model.so", "shim.cpp"])
            .arg(format!("-I{}", include.display()))
            .arg(format!("-I{}", include.join("vltstd").display()))
            .arg("-Iobj")
            .args(["-Wl,--whole-archive", "obj/Vtop__ALL.a", "-Wl,--no-whole-archive"])
            // The Verilator runtime (`--build` without `--exe` only archives the model), compiled
            // once per cache (`ensure_runtime`): the linker takes the members the model uses.
            .arg(runtime)
            .arg("-lpthread");
        run(&mut g, "g++ (linking the Verilator model)")?;
        Ok(())
    }

    fn load(path: &Path, ports: &[PortSpec], traced: bool) -> Result<VerilatedModel, VerilatorError> {
        let err = |source| VerilatorError::Load { path: path.to_path_buf(), source };
        // SAFETY: the library is our own shim, built above from our generated sources; the
        // symbols have the signatures declared here.
        unsafe {
            let lib = libloading::Library::new(path).map_err(err)?;
            let new: FnNew = *lib.get::<FnNew>(b"sa_new\0").map_err(err)?;
            let mut m = VerilatedModel {
                eval: *lib.get(b"sa_eval\0").map_err(err)?,
                set: *lib.get(b"sa_set\0").map_err(err)?,
                get: *lib.get(b"sa_get\0").map_err(err)?,
                free: *lib.get(b"sa_free\0").map_err(err)?,
                trace_open: *lib.get(b"sa_trace_open\0").map_err(err)?,
                trace_dump: *lib.get(b"sa_trace_dump\0").map_err(err)?,
                trace_flush: *lib.get(b"sa_trace_flush\0").map_err(err)?,
                handle: new(),
                ports: ports.to_vec(),
                traced,
                time: 0,
                provenance: Provenance::Cached,
                _lib: lib,
            };
            // Settle the initial state with every input 0, so the first rising clock edge
            // is seen as one.
            m.eval();
            Ok(m)
        }
    }

    /// Whether this model was compiled by the call that made it, or found in the cache.
    pub fn provenance(&self) -> Provenance {
        self.provenance
    }

    /// The ports, in the order their ids refer to.
    pub fn ports(&self) -> &[PortSpec] {
        &self.ports
    }

    /// The id of a port by name. Panics with the list of ports when there is none: a harness
    /// asking for a port the design lacks is a programming error.
    pub fn port(&self, name: &str) -> u32 {
        match self.ports.iter().position(|p| p.name == name) {
            Some(i) => i as u32,
            None => panic!(
                "the design has no port `{name}`; it has: {}",
                self.ports.iter().map(|p| p.name.as_str()).collect::<Vec<_>>().join(", ")
            ),
        }
    }

    /// Sets an input port from little-endian 32-bit words (at least `words()` of them).
    pub fn set_words(&mut self, id: u32, words: &[u32]) {
        let p = &self.ports[id as usize];
        assert!(p.input, "port `{}` is an output", p.name);
        assert!(words.len() >= p.words(), "port `{}` needs {} words", p.name, p.words());
        // SAFETY: handle is live; the shim reads `words()` words for this id.
        unsafe { (self.set)(self.handle, id, words.as_ptr()) }
    }

    /// Sets an input port of at most 64 bits.
    #[inline]
    pub fn set(&mut self, id: u32, value: u64) {
        let w = [value as u32, (value >> 32) as u32];
        debug_assert!(self.ports[id as usize].width <= 64);
        debug_assert!(self.ports[id as usize].input);
        // SAFETY: as in set_words; ports of ≤ 64 bits read at most two words.
        unsafe { (self.set)(self.handle, id, w.as_ptr()) }
    }

    /// Reads a port into little-endian 32-bit words.
    pub fn get_words(&self, id: u32, words: &mut [u32]) {
        let p = &self.ports[id as usize];
        assert!(words.len() >= p.words(), "port `{}` needs {} words", p.name, p.words());
        // SAFETY: handle is live; the shim writes `words()` words for this id.
        unsafe { (self.get)(self.handle, id, words.as_mut_ptr()) }
    }

    /// Reads a port of at most 64 bits.
    #[inline]
    pub fn get(&self, id: u32) -> u64 {
        let mut w = [0u32; 2];
        debug_assert!(self.ports[id as usize].width <= 64);
        // SAFETY: ports of ≤ 64 bits write at most two words.
        unsafe { (self.get)(self.handle, id, w.as_mut_ptr()) };
        u64::from(w[0]) | (u64::from(w[1]) << 32)
    }

    /// Evaluates the design after inputs changed.
    #[inline]
    pub fn eval(&mut self) {
        // SAFETY: handle is live.
        unsafe { (self.eval)(self.handle) }
    }

    /// One clock cycle on port `clock`: rising edge, eval, falling edge, eval (two VCD samples
    /// when tracing).
    #[inline]
    pub fn tick(&mut self, clock: u32) {
        self.set(clock, 1);
        self.eval();
        self.dump();
        self.set(clock, 0);
        self.eval();
        self.dump();
    }

    fn dump(&mut self) {
        self.time += 5;
        if self.traced {
            // SAFETY: handle is live.
            unsafe { (self.trace_dump)(self.handle, self.time) }
        }
    }

    /// Starts writing a VCD to `path` (the model must have been built with `trace`).
    pub fn open_vcd(&mut self, path: &Path) -> Result<(), VerilatorError> {
        if !self.traced {
            return Err(VerilatorError::Tool("the model was built without --trace".into()));
        }
        let c = CString::new(path.to_string_lossy().as_bytes()).expect("path without NUL");
        // SAFETY: handle is live; the string outlives the call (Verilator copies it).
        let rc = unsafe { (self.trace_open)(self.handle, c.as_ptr()) };
        if rc != 0 {
            return Err(VerilatorError::Tool(format!("cannot open VCD {}", path.display())));
        }
        Ok(())
    }

    /// Flushes the VCD written so far.
    pub fn flush_vcd(&mut self) {
        // SAFETY: handle is live.
        unsafe { (self.trace_flush)(self.handle) }
    }
}

impl Drop for VerilatedModel {
    fn drop(&mut self) {
        // SAFETY: handle came from sa_new and is freed once; the library is still loaded.
        unsafe { (self.free)(self.handle) }
    }
}

fn verilator_include() -> Result<PathBuf, VerilatorError> {
    if let Ok(root) = std::env::var("VERILATOR_ROOT") {
        return Ok(PathBuf::from(root).join("include"));
    }
    let o = Command::new("verilator")
        .arg("--getenv")
        .arg("VERILATOR_ROOT")
        .output()
        .map_err(|_| VerilatorError::NotInstalled)?;
    let root = String::from_utf8_lossy(&o.stdout).trim().to_string();
    Ok(PathBuf::from(root).join("include"))
}

#[cfg(test)]
mod test {
    use super::*;
    use rust_hdl::prelude::*;

    /// A small registered design with ports of every width class.
    #[derive(LogicBlock)]
    struct Toy {
        clock: Signal<In, Clock>,
        a: Signal<In, Bits<8>>,
        b: Signal<In, Bits<40>>,
        w: Signal<In, Bits<100>>,
        sum: Signal<Out, Bits<40>>,
        wide: Signal<Out, Bits<100>>,
        one: Constant<Bits<100>>,
        acc: DFF<Bits<40>>,
    }

    impl Logic for Toy {
        #[hdl_gen]
        fn update(&mut self) {
            dff_setup!(self, clock, acc);
            self.acc.d.next = self.acc.q.val() + bit_cast::<40, 8>(self.a.val()) + self.b.val();
            self.sum.next = self.acc.q.val();
            self.wide.next = self.w.val() + self.one.val();
        }
    }

    impl Default for Toy {
        fn default() -> Self {
            Toy {
                clock: Default::default(),
                a: Default::default(),
                b: Default::default(),
                w: Default::default(),
                sum: Default::default(),
                wide: Default::default(),
                one: Constant::new(1.into()),
                acc: Default::default(),
            }
        }
    }

    #[test]
    fn toy_design_matches_rust_hdl() {
        let mut uut = Toy::default();
        uut.connect_all();
        let ports = ports_of(&uut);
        let names: Vec<_> = ports.iter().map(|p| (p.name.as_str(), p.width, p.input)).collect();
        assert_eq!(
            names,
            [
                ("clock", 1, true),
                ("a", 8, true),
                ("b", 40, true),
                ("w", 100, true),
                ("sum", 40, false),
                ("wide", 100, false)
            ]
        );
        if !spotagg_testkit::require_tool(spotagg_testkit::Tool::Verilator) {
            return;
        }
        let verilog = generate_verilog(&uut);
        // rust-hdl widens with `bit_cast` by masking the narrow operand with a wide constant,
        // which Verilator reports as WIDTH: waived for that expression only. rust-hdl also writes
        // every module into one file (DECLFILENAME).
        let opts = BuildOptions {
            config: Some("`verilator_config\n// rust-hdl writes every module into one file.\nlint_off -rule DECLFILENAME -file \"*top.v\"\nlint_off -rule WIDTH -file \"*top.v\" -match \"*VARREF 'a' generates 8 bits*\"\n".into()),
            extra_args: vec!["-Wall".into()],
            ..Default::default()
        };
        let mut m = VerilatedModel::build(&verilog, &ports, &opts).unwrap();
        let (clk, a, b, w, sum, wide) =
            (m.port("clock"), m.port("a"), m.port("b"), m.port("w"), m.port("sum"), m.port("wide"));
        let mut expect: u64 = 0;
        for i in 0..100u64 {
            let (av, bv) = (i * 37 % 256, (i << 33) | 5);
            m.set(a, av);
            m.set(b, bv);
            m.tick(clk);
            expect = (expect + av + bv) & ((1 << 40) - 1);
            m.eval();
            // sum is the register's output one cycle behind.
            let _ = m.get(sum);
        }
        m.set(a, 0);
        m.set(b, 0);
        m.tick(clk);
        assert_eq!(m.get(sum), expect);
        m.set_words(w, &[0xffff_ffff, 0xffff_ffff, 7, 0]);
        m.eval();
        let mut out = [0u32; 4];
        m.get_words(wide, &mut out);
        assert_eq!(out, [0, 0, 8, 0]);
    }
}
