//! No two modules of `hdl/src` import each other, directly or through others: the graph of the
//! `crate::…` paths each module's code names (its `#[cfg(test)]` part and comments left out)
//! has no cycle, and neither has that graph with each folder (`parse/`, `aggregate/`, …) taken
//! as one node. A root re-export (`crate::eaps_node`) counts as the module it names.

use std::collections::BTreeMap;
use std::path::Path;

/// Module path (`parse::frame_parser`) → the source of each `.rs` file under `dir`.
fn modules(dir: &Path, prefix: &str, out: &mut BTreeMap<String, String>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let stem = path.file_stem().unwrap().to_str().unwrap().to_string();
        let name = if prefix.is_empty() { stem.clone() } else { format!("{prefix}::{stem}") };
        if path.is_dir() {
            modules(&path, &name, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let module = if stem == "mod" || stem == "lib" { prefix.to_string() } else { name };
            out.insert(module, std::fs::read_to_string(&path).unwrap());
        }
    }
}

/// The module a `crate::` path (its segments) names: the longest module prefix, a first
/// segment that no root module has taken as the one module of that name (a re-export).
fn resolve(modules: &BTreeMap<String, String>, segments: &[&str]) -> Option<String> {
    let mut at = String::new();
    for seg in segments {
        let next = if at.is_empty() { seg.to_string() } else { format!("{at}::{seg}") };
        if modules.contains_key(&next) {
            at = next;
        } else if at.is_empty() {
            let mut named = modules.keys().filter(|m| m.rsplit("::").next() == Some(*seg));
            match (named.next(), named.next()) {
                (Some(m), None) => at = m.clone(),
                _ => break,
            }
        } else {
            break;
        }
    }
    (!at.is_empty()).then_some(at)
}

#[test]
fn no_module_imports_itself_through_others() {
    let mut mods = BTreeMap::new();
    modules(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"), "", &mut mods);
    let mut edges: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for (module, source) in &mods {
        let code: String = source
            .lines()
            .take_while(|l| module.is_empty() || !l.trim_start().starts_with("#[cfg(test)]"))
            .map(|l| l.split("//").next().unwrap())
            .collect::<Vec<_>>()
            .join("\n");
        for (i, _) in code.match_indices("crate::") {
            let tail = &code[i + "crate::".len()..];
            let path = &tail
                [..tail.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':')).unwrap_or(tail.len())];
            let segments: Vec<&str> = path.split("::").filter(|s| !s.is_empty()).collect();
            let mut targets = vec![resolve(&mods, &segments)];
            if tail[path.len()..].starts_with('{') {
                // `crate::a::{b, c::d}`: each item under the path.
                let items = &tail[path.len() + 1..tail.find('}').unwrap()];
                for item in items.split(',') {
                    let mut s = segments.clone();
                    s.extend(item.trim().split("::").filter(|s| !s.is_empty()));
                    targets.push(resolve(&mods, &s));
                }
            }
            for t in targets.into_iter().flatten() {
                let ancestor = module.starts_with(&format!("{t}::"));
                if t != *module && !ancestor {
                    edges.entry(module).or_default().push(t);
                }
            }
        }
    }
    // Depth-first search; a module met again on the current path closes a cycle.
    fn visit<'a>(m: &'a str, edges: &'a BTreeMap<&str, Vec<String>>, path: &mut Vec<&'a str>, done: &mut Vec<&'a str>) {
        if let Some(at) = path.iter().position(|p| *p == m) {
            panic!("import cycle: {} -> {m}", path[at..].join(" -> "));
        }
        if done.contains(&m) {
            return;
        }
        path.push(m);
        for t in edges.get(m).into_iter().flatten() {
            visit(t, edges, path, done);
        }
        path.pop();
        done.push(m);
    }
    let mut done = Vec::new();
    for m in mods.keys() {
        visit(m, &edges, &mut Vec::new(), &mut done);
    }
    assert!(edges.len() > 20, "the graph was read: {} modules import others", edges.len());

    // The same graph with each folder as one node (`parse::frame_checks` is `parse`): no two
    // folders import each other either, so a folder can be read, tested and changed against
    // the ones below it only. A root module is its own node.
    let folder = |m: &str| m.split("::").next().unwrap().to_string();
    let mut folders: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (m, ts) in &edges {
        for t in ts {
            let (a, b) = (folder(m), folder(t));
            if a != b && !folders.get(&a).is_some_and(|v| v.contains(&b)) {
                folders.entry(a).or_default().push(b);
            }
        }
    }
    let names: Vec<String> = folders.keys().cloned().collect();
    let folder_edges: BTreeMap<&str, Vec<String>> = folders.iter().map(|(k, v)| (k.as_str(), v.clone())).collect();
    let mut done = Vec::new();
    for m in &names {
        visit(m, &folder_edges, &mut Vec::new(), &mut done);
    }
    assert!(folder_edges.contains_key("control") && folder_edges.contains_key("aggregate"), "{folder_edges:?}");
}
