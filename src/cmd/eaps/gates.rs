//! Per-VLAN gates (docs/eaps.md §9.1): the daemon's nftables table of the bridge family,
//! written whole, in one transaction, on every change of what a port blocks.
//!
//! [`ruleset`] is the text (pure, tested here with literals); [`Gates`] hands it to nftables'
//! own library, `libnftables.so.1` (Debian's libnftables1, which the `nft` command uses), loaded
//! at run time and kept for the daemon's life: a transaction then takes about a millisecond in
//! the protocol loop, where running `nft -f -` took 40 ms idle and up to 290 ms on a loaded
//! machine, long enough for a master to miss its own HEALTH. Without the library the gates run
//! the `nft` command as before.

use anyhow::{anyhow, bail, Context, Result};
use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::io::Write;
use std::process::{Command, Stdio};

/// What one ring port blocks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortGate {
    /// The interface.
    pub port: String,
    /// The VLANs it drops both ways, sorted, without repeats.
    pub vlans: Vec<u16>,
    /// Whether it drops untagged frames (any domain, or the shared port, blocks it).
    pub untagged: bool,
    /// The domains that block it (the rules' comment).
    pub by: Vec<String>,
}

/// The table's name for `bridge`: `spotagg_eaps_` and the name, with every character other
/// than an ASCII letter, digit or `_` written `_`.
pub fn table_name(bridge: &str) -> String {
    let clean: String = bridge.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' { c } else { '_' }).collect();
    format!("spotagg_eaps_{clean}")
}

/// `vlans` (sorted) as nft ranges: "100-199, 300".
pub fn ranges(vlans: &[u16]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < vlans.len() {
        let mut j = i;
        while j + 1 < vlans.len() && vlans[j + 1] == vlans[j] + 1 {
            j += 1;
        }
        out.push(if i == j { vlans[i].to_string() } else { format!("{}-{}", vlans[i], vlans[j]) });
        i = j + 1;
    }
    out.join(", ")
}

/// The transaction that replaces the table `table` with gates for `ports` (ports that block
/// nothing have no rule). `table` is created first so that `delete table` never fails.
pub fn ruleset(table: &str, ports: &[PortGate]) -> String {
    let mut rules = [String::new(), String::new()];
    for p in ports {
        let by = p.by.join(",");
        // Chain ingress matches the port frames come in on, chain egress the port they leave by.
        for (dir, key) in ["iifname", "oifname"].into_iter().enumerate() {
            let r = &mut rules[dir];
            if !p.vlans.is_empty() {
                r.push_str(&format!(
                    "\t\t{key} \"{}\" vlan id {{ {} }} counter drop comment \"{by}\"\n",
                    p.port,
                    ranges(&p.vlans)
                ));
            }
            if p.untagged {
                r.push_str(&format!(
                    "\t\t{key} \"{}\" ether type != {{ 8021q, 8021ad }} counter drop comment \"untagged {by}\"\n",
                    p.port
                ));
            }
        }
    }
    format!(
        "table bridge {table}\ndelete table bridge {table}\ntable bridge {table} {{\n\
         \tchain ingress {{\n\t\ttype filter hook prerouting priority filter; policy accept;\n{}\t}}\n\
         \tchain egress {{\n\t\ttype filter hook postrouting priority filter; policy accept;\n{}\t}}\n}}\n",
        rules[0], rules[1]
    )
}

/// Runs `nft -f -` with `text` on stdin; the error has nft's own message.
fn nft_command(text: &str) -> Result<()> {
    let mut child = Command::new("nft")
        .args(["-f", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .context("running nft (Debian's nftables package)")?;
    child.stdin.take().expect("piped").write_all(text.as_bytes()).context("writing to nft")?;
    let out = child.wait_with_output().context("waiting for nft")?;
    if !out.status.success() {
        bail!("nft -f: {} ({})", String::from_utf8_lossy(&out.stderr).trim(), out.status);
    }
    Ok(())
}

type CtxNew = unsafe extern "C" fn(u32) -> *mut c_void;
type CtxFree = unsafe extern "C" fn(*mut c_void);
type RunCmd = unsafe extern "C" fn(*mut c_void, *const c_char) -> c_int;
type BufferError = unsafe extern "C" fn(*mut c_void) -> c_int;
type GetError = unsafe extern "C" fn(*mut c_void) -> *const c_char;

/// A context of nftables' library (`nft_ctx_new`), with its error output buffered.
struct Libnftables {
    ctx: *mut c_void,
    free: CtxFree,
    run: RunCmd,
    error: GetError,
    _lib: libloading::Library,
}

impl Libnftables {
    /// The library named by `SPOTAGG_LIBNFTABLES` (default `libnftables.so.1`; empty: none,
    /// the `nft` command then writes the gates).
    fn open() -> Result<Libnftables> {
        let name = std::env::var("SPOTAGG_LIBNFTABLES").unwrap_or_else(|_| "libnftables.so.1".into());
        if name.is_empty() {
            bail!("SPOTAGG_LIBNFTABLES is empty");
        }
        // SAFETY: loading nftables' own library runs no initialiser that needs anything from us;
        // each symbol is declared with the signature of its prototype in nftables/libnftables.h.
        unsafe {
            let lib = libloading::Library::new(&name).with_context(|| format!("loading {name}"))?;
            let new: CtxNew = *lib.get::<CtxNew>(b"nft_ctx_new\0")?;
            let free: CtxFree = *lib.get::<CtxFree>(b"nft_ctx_free\0")?;
            let run: RunCmd = *lib.get::<RunCmd>(b"nft_run_cmd_from_buffer\0")?;
            let buffer: BufferError = *lib.get::<BufferError>(b"nft_ctx_buffer_error\0")?;
            let error: GetError = *lib.get::<GetError>(b"nft_ctx_get_error_buffer\0")?;
            // NFT_CTX_DEFAULT (0).
            let ctx = new(0);
            if ctx.is_null() {
                bail!("nft_ctx_new failed");
            }
            if buffer(ctx) != 0 {
                free(ctx);
                bail!("nft_ctx_buffer_error failed");
            }
            Ok(Libnftables { ctx, free, run, error, _lib: lib })
        }
    }

    fn run(&mut self, text: &str) -> Result<()> {
        let cmd = CString::new(text).map_err(|_| anyhow!("a NUL byte in the ruleset"))?;
        // SAFETY: `ctx` is live until drop; `cmd` outlives the call; the error buffer is a
        // NUL-terminated string owned by the context, copied before the next call.
        unsafe {
            if (self.run)(self.ctx, cmd.as_ptr()) != 0 {
                let e = (self.error)(self.ctx);
                let msg = if e.is_null() { String::new() } else { CStr::from_ptr(e).to_string_lossy().into_owned() };
                bail!("nftables: {}", msg.trim());
            }
        }
        Ok(())
    }
}

impl Drop for Libnftables {
    fn drop(&mut self) {
        // SAFETY: the context came from nft_ctx_new and is freed once.
        unsafe { (self.free)(self.ctx) }
    }
}

/// The daemon's table.
pub struct Gates {
    table: String,
    /// The text last applied.
    applied: Option<String>,
    /// nftables' library; None: the `nft` command.
    lib: Option<Libnftables>,
}

impl Gates {
    /// Checks that `nft` runs and the kernel takes a bridge table (one transaction that creates
    /// and deletes the table `table_name(bridge)`, so none is left behind).
    pub fn probe(bridge: &str) -> Result<Gates> {
        let table = table_name(bridge);
        let mut gates = Gates { table, applied: None, lib: Libnftables::open().ok() };
        let t = &gates.table;
        let text = format!("table bridge {t}\ndelete table bridge {t}\n");
        gates.nft(&text)?;
        Ok(gates)
    }

    /// How the gates are written: "libnftables" or "nft".
    pub fn via(&self) -> &'static str {
        if self.lib.is_some() {
            "libnftables"
        } else {
            "nft"
        }
    }

    fn nft(&mut self, text: &str) -> Result<()> {
        match self.lib.as_mut() {
            Some(lib) => lib.run(text),
            None => nft_command(text),
        }
    }

    /// The table's name.
    pub fn table(&self) -> &str {
        &self.table
    }

    /// Writes the gates of `ports` unless they are those last written (or `force`).
    pub fn apply(&mut self, ports: &[PortGate], force: bool) -> Result<()> {
        let text = ruleset(&self.table, ports);
        if force || self.applied.as_deref() != Some(text.as_str()) {
            self.nft(&text).with_context(|| format!("writing the gates (table bridge {})", self.table))?;
            self.applied = Some(text);
        }
        Ok(())
    }

    /// Deletes the table.
    pub fn remove(&mut self) -> Result<()> {
        self.applied = None;
        let t = self.table.clone();
        self.nft(&format!("table bridge {t}\ndelete table bridge {t}\n"))
            .with_context(|| format!("deleting table bridge {t}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_ranges() {
        assert_eq!(table_name("br0"), "spotagg_eaps_br0");
        assert_eq!(table_name("br-ring.1"), "spotagg_eaps_br_ring_1");
        assert_eq!(ranges(&[]), "");
        assert_eq!(ranges(&[7]), "7");
        assert_eq!(ranges(&[100, 101, 102, 200, 300, 301]), "100-102, 200, 300-301");
    }

    #[test]
    fn ruleset_text() {
        let ports = [
            PortGate {
                port: "p14".into(),
                vlans: vec![100, 101, 102, 250],
                untagged: true,
                by: vec!["ring1".into(), "ring2".into()],
            },
            PortGate { port: "p12".into(), vlans: vec![], untagged: false, by: vec![] },
        ];
        assert_eq!(
            ruleset("spotagg_eaps_br0", &ports),
            "table bridge spotagg_eaps_br0\n\
             delete table bridge spotagg_eaps_br0\n\
             table bridge spotagg_eaps_br0 {\n\
             \tchain ingress {\n\
             \t\ttype filter hook prerouting priority filter; policy accept;\n\
             \t\tiifname \"p14\" vlan id { 100-102, 250 } counter drop comment \"ring1,ring2\"\n\
             \t\tiifname \"p14\" ether type != { 8021q, 8021ad } counter drop comment \"untagged ring1,ring2\"\n\
             \t}\n\
             \tchain egress {\n\
             \t\ttype filter hook postrouting priority filter; policy accept;\n\
             \t\toifname \"p14\" vlan id { 100-102, 250 } counter drop comment \"ring1,ring2\"\n\
             \t\toifname \"p14\" ether type != { 8021q, 8021ad } counter drop comment \"untagged ring1,ring2\"\n\
             \t}\n\
             }\n"
        );
    }
}
