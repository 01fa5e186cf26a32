//! The ring file of `spotagg eaps`: which bridge, which ports, which domains.
//!
//! ```toml
//! bridge = "br0"                 # the Linux bridge whose ports are the ring ports
//! system_mac = "02:00:00:00:00:01" # optional: default the bridge's MAC
//! status_file = "/run/eaps.json" # optional: default RING.toml's path + ".status.json"
//!
//! [[domain]]
//! name = "ring1"
//! role = "master"                # or "transit"
//! primary = "r0"                 # a bridge port; the master sends HEALTH out of it
//! secondary = "r1"               # another bridge port
//! control_vlan = 10
//! protected_vlans = [100]
//! hello_ms = 20
//! fail_ms = 100
//! pre_forwarding_ms = 200
//! fail_action = "open-secondary" # or "send-alert"
//! ```
//!
//! Every error names the file, the key and the value. Checks beyond the types: VLANs in
//! 1..=4094, a control VLAN is no protected VLAN and no other domain's control VLAN, the two
//! ports differ, fail > hello, pre-forwarding > hello; and configurations that could loop are
//! refused: two domains that protect the same VLAN on a common port (two rings sharing a link)
//! need a `[shared_port]` on that port, which must not be a master's secondary; without it the
//! file must say `allow_superloop = true` (for demonstrating the loop only).

use anyhow::{anyhow, bail, Context, Result};
use serde::Deserialize;
use spotagg_driver::control::protocol::eaps::DomainSettings;
use spotagg_driver::wire::MacAddr;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The file as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRing {
    bridge: String,
    system_mac: Option<String>,
    status_file: Option<PathBuf>,
    #[serde(default)]
    allow_superloop: bool,
    blocking: Option<String>,
    #[serde(default)]
    domain: Vec<RawDomain>,
    shared_port: Option<RawShared>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawDomain {
    name: String,
    role: String,
    primary: String,
    secondary: String,
    control_vlan: i64,
    protected_vlans: Vec<i64>,
    #[serde(default = "ms::<1000>")]
    hello_ms: i64,
    #[serde(default = "ms::<3000>")]
    fail_ms: i64,
    #[serde(default = "ms::<6000>")]
    pre_forwarding_ms: i64,
    #[serde(default = "default_fail_action")]
    fail_action: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawShared {
    port: String,
    mode: String,
    link_id: i64,
    #[serde(default = "ms::<1000>")]
    segment_hello_ms: i64,
    #[serde(default = "ms::<3000>")]
    segment_timeout_ms: i64,
    #[serde(default = "default_segment_timeout_action")]
    segment_timeout_action: String,
}

/// The default of a period: `N` ms.
fn ms<const N: i64>() -> i64 {
    N
}
fn default_fail_action() -> String {
    "open-secondary".into()
}
fn default_segment_timeout_action() -> String {
    "segment-down".into()
}

/// Role of this node in a domain.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Role {
    /// Master.
    Master,
    /// Transit.
    Transit,
}

/// One domain, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Domain {
    /// Its name, for messages and the status.
    pub name: String,
    /// Role.
    pub role: Role,
    /// Primary port (bridge port name).
    pub primary: String,
    /// Secondary port.
    pub secondary: String,
    /// Control VLAN.
    pub control_vlan: u16,
    /// Protected VLANs.
    pub protected_vlans: Vec<u16>,
    /// Hello period, ms.
    pub hello_ms: u64,
    /// Fail period, ms.
    pub fail_ms: u64,
    /// Pre-forwarding period, ms.
    pub pre_forwarding_ms: u64,
    /// Fail-timer action: true for open-secondary, false for send-alert.
    pub open_secondary: bool,
}

/// Controller or partner end of a common link.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum SharedMode {
    /// Blocks a segment port when the common link fails.
    Controller,
    /// Never blocks.
    Partner,
}

/// A shared port (the common link of two rings), checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shared {
    /// The bridge port of the common link.
    pub port: String,
    /// Controller or partner.
    pub mode: SharedMode,
    /// The common link's identifier (equal at both ends).
    pub link_id: u16,
    /// Segment health-check period, ms.
    pub segment_hello_ms: u64,
    /// Segment timeout, ms.
    pub segment_timeout_ms: u64,
    /// On segment timeout: true to treat the segment as down (block), false to alert only.
    pub timeout_segment_down: bool,
}

/// A ring file, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ring {
    /// The file it came from.
    pub path: PathBuf,
    /// The bridge.
    pub bridge: String,
    /// System MAC, if given.
    pub system_mac: Option<MacAddr>,
    /// Where the daemon writes its status.
    pub status_file: PathBuf,
    /// Two domains may protect one VLAN on a common port without a shared port.
    pub allow_superloop: bool,
    /// How a port is blocked (docs/eaps.md §9.1).
    pub blocking: Blocking,
    /// Domains, in file order.
    pub domains: Vec<Domain>,
    /// The shared port, if any.
    pub shared: Option<Shared>,
}

/// How the daemon blocks a port (`blocking`, docs/eaps.md §9.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Blocking {
    /// Per-VLAN gates in an nftables table of the bridge family (whole ports where nftables
    /// is missing).
    Vlan,
    /// Whole ports, out of the bridge.
    Port,
}

impl Ring {
    /// Every ring port named by a domain, in first-use order.
    pub fn ports(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for d in &self.domains {
            for p in [&d.primary, &d.secondary] {
                if !out.contains(p) {
                    out.push(p.clone());
                }
            }
        }
        out
    }
}

/// The board's EAPS node settings for `ring` (`spotagg ctl eaps configure`): the ring ports
/// named `0`/`1`, `eth0`/`eth1` or `port0`/`port1`, at most `max_domains` domains, each
/// protecting one contiguous VLAN range (the hardware's filter), periods in 1 µs units below
/// 2^31, no shared port. Errors name the file, the key and the value.
pub fn board_settings(ring: &Ring, max_domains: usize) -> Result<Vec<Option<DomainSettings>>> {
    let file = ring.path.display();
    let bad = |key: &str, value: &dyn std::fmt::Display, why: &str| anyhow!("{file}: {key} = {value}: {why}");
    if let Some(sh) = &ring.shared {
        return Err(bad("shared_port.port", &format!("{:?}", sh.port), "the board has no shared-port (ESL) mode"));
    }
    if ring.domains.len() > max_domains {
        bail!("{file}: domain: {} domains given; the board is built with {max_domains}", ring.domains.len());
    }
    let port = |key: String, name: &str| -> Result<bool> {
        match name {
            "0" | "eth0" | "port0" => Ok(false),
            "1" | "eth1" | "port1" => Ok(true),
            _ => Err(bad(&key, &format!("{name:?}"), "a board ring port is \"0\"/\"eth0\" or \"1\"/\"eth1\"")),
        }
    };
    let period = |key: String, ms: u64| -> Result<u32> {
        let us = ms.saturating_mul(1000);
        if us < 1 << 31 {
            Ok(us as u32)
        } else {
            Err(bad(&key, &ms, "the board's timers take less than 2^31 µs (2,147,483 ms)"))
        }
    };
    let mut out = vec![];
    for (i, d) in ring.domains.iter().enumerate() {
        let k = |f: &str| format!("domain[{i}].{f}");
        let primary_port1 = port(k("primary"), &d.primary)?;
        port(k("secondary"), &d.secondary)?;
        let mut v = d.protected_vlans.clone();
        v.sort_unstable();
        let protected = match (v.first(), v.last()) {
            (Some(&lo), Some(&hi)) => {
                if usize::from(hi - lo) + 1 != v.len() {
                    return Err(bad(
                        &k("protected_vlans"),
                        &format!("{:?}", d.protected_vlans),
                        "the board protects one contiguous range of VLANs per domain",
                    ));
                }
                (lo, hi)
            }
            _ => (1, 0),
        };
        let field = |ms: u64| ms.min(u64::from(u16::MAX)) as u16;
        out.push(Some(DomainSettings {
            master: d.role == Role::Master,
            primary_port1,
            send_alert: !d.open_secondary,
            control_vlan: d.control_vlan,
            protected,
            hello: period(k("hello_ms"), d.hello_ms)?,
            fail: period(k("fail_ms"), d.fail_ms)?,
            pre_forwarding: period(k("pre_forwarding_ms"), d.pre_forwarding_ms)?,
            hello_field: field(d.hello_ms),
            fail_field: field(d.fail_ms),
        }));
    }
    Ok(out)
}

/// The status file used when the ring file names none.
pub fn default_status_file(ring: &Path) -> PathBuf {
    let mut s = ring.as_os_str().to_owned();
    s.push(".status.json");
    PathBuf::from(s)
}

/// Reads and checks a ring file.
pub fn load(path: &Path) -> Result<Ring> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("{}: cannot read the ring file", path.display()))?;
    parse(path, &text)
}

/// Checks a ring file's text; `path` is named in errors.
pub fn parse(path: &Path, text: &str) -> Result<Ring> {
    let file = path.display();
    let raw: RawRing = toml::from_str(text).map_err(|e| anyhow!("{file}: {}", e.to_string().trim_end()))?;
    let bad = |key: &str, value: &dyn std::fmt::Display, why: &str| anyhow!("{file}: {key} = {value}: {why}");
    if raw.bridge.is_empty() {
        return Err(bad("bridge", &"\"\"", "a bridge name is needed"));
    }
    let system_mac = match &raw.system_mac {
        None => None,
        Some(s) => Some(
            s.parse::<MacAddr>()
                .map_err(|_| bad("system_mac", &format!("{s:?}"), "not a MAC address (aa:bb:cc:dd:ee:ff)"))?,
        ),
    };
    if raw.domain.is_empty() {
        bail!("{file}: domain: no [[domain]] given; a ring file needs at least one");
    }
    let vlan = |key: String, v: i64| -> Result<u16> {
        if (1..=4094).contains(&v) {
            Ok(v as u16)
        } else {
            Err(bad(&key, &v, "a VLAN is 1..=4094"))
        }
    };
    let ms = |key: String, v: i64| -> Result<u64> {
        if (1..=65535).contains(&v) {
            Ok(v as u64)
        } else {
            Err(bad(&key, &v, "a period is 1..=65535 ms"))
        }
    };
    let mut domains = Vec::new();
    let mut names = BTreeMap::new();
    for (i, d) in raw.domain.iter().enumerate() {
        let k = |f: &str| format!("domain[{i}].{f}");
        if d.name.is_empty() {
            return Err(bad(&k("name"), &"\"\"", "a domain needs a name"));
        }
        if let Some(j) = names.insert(d.name.clone(), i) {
            return Err(bad(&k("name"), &format!("{:?}", d.name), &format!("domain[{j}] has the same name")));
        }
        let role = match d.role.as_str() {
            "master" => Role::Master,
            "transit" => Role::Transit,
            r => return Err(bad(&k("role"), &format!("{r:?}"), "expected \"master\" or \"transit\"")),
        };
        for (f, p) in [("primary", &d.primary), ("secondary", &d.secondary)] {
            if p.is_empty() || p.len() > 15 {
                return Err(bad(&k(f), &format!("{p:?}"), "an interface name is 1..=15 characters"));
            }
        }
        if d.primary == d.secondary {
            return Err(bad(&k("secondary"), &format!("{:?}", d.secondary), "equals the primary port"));
        }
        let control_vlan = vlan(k("control_vlan"), d.control_vlan)?;
        if d.protected_vlans.is_empty() {
            return Err(bad(&k("protected_vlans"), &"[]", "a domain protects at least one VLAN"));
        }
        let mut protected_vlans = Vec::new();
        for (j, &v) in d.protected_vlans.iter().enumerate() {
            let v = vlan(k(&format!("protected_vlans[{j}]")), v)?;
            if v == control_vlan {
                return Err(bad(&k(&format!("protected_vlans[{j}]")), &v, "is the domain's control VLAN"));
            }
            protected_vlans.push(v);
        }
        let hello_ms = ms(k("hello_ms"), d.hello_ms)?;
        let fail_ms = ms(k("fail_ms"), d.fail_ms)?;
        let pre_forwarding_ms = ms(k("pre_forwarding_ms"), d.pre_forwarding_ms)?;
        if fail_ms <= hello_ms {
            return Err(bad(&k("fail_ms"), &fail_ms, &format!("must exceed hello_ms ({hello_ms})")));
        }
        if pre_forwarding_ms <= hello_ms {
            return Err(bad(
                &k("pre_forwarding_ms"),
                &pre_forwarding_ms,
                &format!("must exceed hello_ms ({hello_ms})"),
            ));
        }
        let open_secondary = match d.fail_action.as_str() {
            "open-secondary" => true,
            "send-alert" => false,
            a => {
                return Err(bad(&k("fail_action"), &format!("{a:?}"), "expected \"open-secondary\" or \"send-alert\""))
            }
        };
        for (j, o) in domains.iter().enumerate() {
            let o: &Domain = o;
            if o.control_vlan == control_vlan {
                return Err(bad(&k("control_vlan"), &control_vlan, &format!("domain[{j}] uses the same control VLAN")));
            }
            if o.protected_vlans.contains(&control_vlan) {
                return Err(bad(&k("control_vlan"), &control_vlan, &format!("domain[{j}] protects it")));
            }
            if let Some(&v) = protected_vlans.iter().find(|v| **v == o.control_vlan) {
                return Err(bad(&k("protected_vlans"), &v, &format!("is domain[{j}]'s control VLAN")));
            }
        }
        domains.push(Domain {
            name: d.name.clone(),
            role,
            primary: d.primary.clone(),
            secondary: d.secondary.clone(),
            control_vlan,
            protected_vlans,
            hello_ms,
            fail_ms,
            pre_forwarding_ms,
            open_secondary,
        });
    }
    let shared = match &raw.shared_port {
        None => None,
        Some(s) => {
            let mode = match s.mode.as_str() {
                "controller" => SharedMode::Controller,
                "partner" => SharedMode::Partner,
                m => return Err(bad("shared_port.mode", &format!("{m:?}"), "expected \"controller\" or \"partner\"")),
            };
            let link_id = if (1..=65535).contains(&s.link_id) {
                s.link_id as u16
            } else {
                return Err(bad("shared_port.link_id", &s.link_id, "a link ID is 1..=65535"));
            };
            let segment_hello_ms = ms("shared_port.segment_hello_ms".into(), s.segment_hello_ms)?;
            let segment_timeout_ms = ms("shared_port.segment_timeout_ms".into(), s.segment_timeout_ms)?;
            if segment_timeout_ms <= segment_hello_ms {
                return Err(bad(
                    "shared_port.segment_timeout_ms",
                    &segment_timeout_ms,
                    &format!("must exceed segment_hello_ms ({segment_hello_ms})"),
                ));
            }
            let timeout_segment_down = match s.segment_timeout_action.as_str() {
                "segment-down" => true,
                "send-alert" => false,
                a => {
                    return Err(bad(
                        "shared_port.segment_timeout_action",
                        &format!("{a:?}"),
                        "expected \"segment-down\" or \"send-alert\"",
                    ))
                }
            };
            let users: Vec<usize> = (0..domains.len())
                .filter(|&i| domains[i].primary == s.port || domains[i].secondary == s.port)
                .collect();
            if users.len() < 2 {
                return Err(bad(
                    "shared_port.port",
                    &format!("{:?}", s.port),
                    "a shared port is the common link of two domains: name a port that at least two domains use",
                ));
            }
            for &i in &users {
                if domains[i].role == Role::Master && domains[i].secondary == s.port {
                    return Err(bad(
                        "shared_port.port",
                        &format!("{:?}", s.port),
                        &format!(
                            "is domain[{i}] ({})'s master secondary port: the master would open it on the common \
                             link's failure and the shared-port controller could not break the superloop",
                            domains[i].name
                        ),
                    ));
                }
            }
            Some(Shared {
                port: s.port.clone(),
                mode,
                link_id,
                segment_hello_ms,
                segment_timeout_ms,
                timeout_segment_down,
            })
        }
    };
    // Two domains protecting one VLAN on a common port: two rings sharing a link.
    for (i, a) in domains.iter().enumerate() {
        for (j, b) in domains.iter().enumerate().skip(i + 1) {
            let common: Vec<&String> =
                [&a.primary, &a.secondary].into_iter().filter(|p| **p == b.primary || **p == b.secondary).collect();
            let Some(&v) = a.protected_vlans.iter().find(|v| b.protected_vlans.contains(v)) else { continue };
            if common.len() == 2 {
                return Err(bad(
                    &format!("domain[{j}].protected_vlans"),
                    &v,
                    &format!("domain[{i}] protects it on the same two ports: one VLAN, one domain per ring"),
                ));
            }
            if common.len() == 1 && shared.as_ref().is_none_or(|s| s.port != *common[0]) && !raw.allow_superloop {
                return Err(bad(
                    &format!("domain[{j}].protected_vlans"),
                    &v,
                    &format!(
                        "domain[{i}] also protects it and both use port {:?}: if that common link fails both masters \
                         open and the VLAN loops round both rings (a superloop); add [shared_port] port = {:?}, or \
                         allow_superloop = true to demonstrate the loop",
                        common[0], common[0]
                    ),
                ));
            }
        }
    }
    let blocking = match raw.blocking.as_deref() {
        None | Some("vlan") => Blocking::Vlan,
        Some("port") => Blocking::Port,
        Some(b) => return Err(bad("blocking", &format!("{b:?}"), "expected \"vlan\" or \"port\"")),
    };
    let status_file = raw.status_file.clone().unwrap_or_else(|| default_status_file(path));
    Ok(Ring {
        path: path.to_path_buf(),
        bridge: raw.bridge,
        system_mac,
        status_file,
        allow_superloop: raw.allow_superloop,
        blocking,
        domains,
        shared,
    })
}

#[cfg(test)]
mod test {
    use super::*;

    /// A `[[domain]]` of a ring file, protecting VLAN 100.
    fn domain(name: &str, role: &str, ports: (&str, &str), control_vlan: u16) -> String {
        let (primary, secondary) = ports;
        format!(
            "[[domain]]\nname = \"{name}\"\nrole = \"{role}\"\nprimary = \"{primary}\"\nsecondary = \"{secondary}\"\n\
             control_vlan = {control_vlan}\nprotected_vlans = [100]\n"
        )
    }

    /// A good ring file: one master domain.
    fn good() -> String {
        let d = domain("ring1", "master", ("r0", "r1"), 10);
        format!("\nbridge = \"br0\"\n{d}hello_ms = 20\nfail_ms = 100\npre_forwarding_ms = 200\n")
    }

    /// Two transit domains protecting VLAN 100 on port c.
    fn two() -> String {
        let (d1, d2) = (domain("ring1", "transit", ("a", "c"), 10), domain("ring2", "transit", ("b", "c"), 20));
        format!("\nbridge = \"br0\"\n{d1}{d2}")
    }

    fn err(text: &str) -> String {
        format!("{:#}", parse(Path::new("ring.toml"), text).unwrap_err())
    }

    #[test]
    fn good_file() {
        let r = parse(Path::new("ring.toml"), &good()).unwrap();
        assert_eq!(r.bridge, "br0");
        assert_eq!(r.ports(), ["r0", "r1"]);
        assert_eq!(r.domains[0].role, Role::Master);
        assert_eq!(r.status_file, PathBuf::from("ring.toml.status.json"));
        assert!(r.domains[0].open_secondary);
        assert_eq!(r.blocking, Blocking::Vlan);
        let r = parse(Path::new("ring.toml"), &format!("blocking = \"port\"\n{}", good())).unwrap();
        assert_eq!(r.blocking, Blocking::Port);
    }

    #[test]
    fn bad_values_name_file_key_and_value() {
        // (in good(), replace, by): the error after "ring.toml: "
        let replaced = [
            ("control_vlan = 10", "control_vlan = 5000", "domain[0].control_vlan = 5000: a VLAN is 1..=4094"),
            ("[100]", "[100, 10]", "domain[0].protected_vlans[1] = 10: is the domain's control VLAN"),
            ("\"master\"", "\"boss\"", "domain[0].role = \"boss\": expected \"master\" or \"transit\""),
            ("secondary = \"r1\"", "secondary = \"r0\"", "domain[0].secondary = \"r0\": equals the primary port"),
            ("fail_ms = 100", "fail_ms = 20", "domain[0].fail_ms = 20: must exceed hello_ms (20)"),
            ("hello_ms = 20", "hello_ms = 0", "domain[0].hello_ms = 0: a period is 1..=65535 ms"),
            (
                "pre_forwarding_ms = 200",
                "pre_forwarding_ms = 200\nfail_action = \"panic\"",
                "domain[0].fail_action = \"panic\": expected \"open-secondary\" or \"send-alert\"",
            ),
        ];
        let whole = [
            (format!("system_mac = \"zz\"\n{}", good()), "system_mac = \"zz\": not a MAC address (aa:bb:cc:dd:ee:ff)"),
            ("bridge = \"br0\"\n".to_string(), "domain: no [[domain]] given; a ring file needs at least one"),
            (format!("blocking = \"stp\"\n{}", good()), "blocking = \"stp\": expected \"vlan\" or \"port\""),
        ];
        let cases = replaced.iter().map(|&(from, to, want)| (good().replace(from, to), want)).chain(whole);
        for (text, want) in cases {
            assert_eq!(err(&text), format!("ring.toml: {want}"));
        }
    }

    #[test]
    fn toml_errors_name_the_file_and_key() {
        let e = err(&good().replace("control_vlan = 10", "control_vlan = \"ten\""));
        assert!(e.starts_with("ring.toml: TOML parse error at line 8"), "{e}");
        assert!(e.contains("control_vlan = \"ten\""), "{e}");
        let e = err(&good().replace("hello_ms", "helo_ms"));
        assert!(e.contains("unknown field `helo_ms`"), "{e}");
    }

    #[test]
    fn loops_are_refused() {
        let e = err(&two());
        assert!(
            e.starts_with(
                "ring.toml: domain[1].protected_vlans = 100: domain[0] also protects it and both use port \"c\""
            ),
            "{e}"
        );
        assert!(parse(Path::new("ring.toml"), &format!("allow_superloop = true\n{}", two())).is_ok());
        let shared = format!("{}[shared_port]\nport = \"c\"\nmode = \"controller\"\nlink_id = 1\n", two());
        assert_eq!(parse(Path::new("ring.toml"), &shared).unwrap().shared.unwrap().port, "c");
        // A shared port on a master's secondary port.
        let m = shared.replacen("role = \"transit\"", "role = \"master\"", 1);
        assert_eq!(
            err(&m),
            "ring.toml: shared_port.port = \"c\": is domain[0] (ring1)'s master secondary port: the master would open \
             it on the common link's failure and the shared-port controller could not break the superloop"
        );
        // One VLAN protected twice on the same two ports.
        let same = two().replace("primary = \"b\"", "primary = \"a\"");
        assert_eq!(
            err(&same),
            "ring.toml: domain[1].protected_vlans = 100: domain[0] protects it on the same two ports: one VLAN, one domain per ring"
        );
        let cv = two().replace("control_vlan = 20", "control_vlan = 10");
        assert_eq!(err(&cv), "ring.toml: domain[1].control_vlan = 10: domain[0] uses the same control VLAN");
    }

    #[test]
    fn unreadable_file_is_named() {
        let e = format!("{:#}", load(Path::new("/nonexistent/ring.toml")).unwrap_err());
        assert!(e.starts_with("/nonexistent/ring.toml: cannot read the ring file"), "{e}");
    }
}
