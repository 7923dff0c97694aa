//! The engine's module folders import downward only: among the sibling modules of one
//! folder, the `super::x` references outside test code form no loop. A loop means a
//! shared definition should move down a layer (docs/engine.md, "Layers").

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Folders whose sibling modules must form layers.
const FOLDERS: [&str; 5] = ["checksum", "gro", "gso", "virtio", "wire"];

/// The sibling modules a module file names through `super::` (or `crate::<folder>::`),
/// ignoring everything from its first `#[cfg(test)]` on.
fn references(source: &str, folder: &str, siblings: &BTreeSet<String>) -> BTreeSet<String> {
    let code = source.split("#[cfg(test)]").next().unwrap_or("");
    let crate_prefix = format!("crate::{folder}::");
    let mut found = BTreeSet::new();
    for prefix in ["super::", crate_prefix.as_str()] {
        for (at, _) in code.match_indices(prefix) {
            let rest = &code[at + prefix.len()..];
            let name: String = rest.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
            // `super::{a, b}` lists.
            if rest.starts_with('{') {
                let list = &rest[1..rest.find('}').unwrap_or(1)];
                for item in list.split(',') {
                    let item = item.trim().split("::").next().unwrap_or("").trim();
                    if siblings.contains(item) {
                        found.insert(item.to_string());
                    }
                }
            } else if siblings.contains(&name) {
                found.insert(name);
            }
        }
    }
    found
}

/// A loop in `graph`, as the modules along it, if there is one.
fn find_loop(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|n| n == node) {
            let mut cycle = path[at..].to_vec();
            cycle.push(node.to_string());
            return Some(cycle);
        }
        if done.contains(node) {
            return None;
        }
        path.push(node.to_string());
        for next in graph.get(node).into_iter().flatten() {
            if let Some(cycle) = visit(next, graph, path, done) {
                return Some(cycle);
            }
        }
        path.pop();
        done.insert(node.to_string());
        None
    }
    let mut done = BTreeSet::new();
    graph.keys().find_map(|node| visit(node, graph, &mut Vec::new(), &mut done))
}

#[test]
fn module_folders_import_downward_only() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    for folder in FOLDERS {
        let dir = src.join(folder);
        let files: Vec<_> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "rs"))
            .collect();
        let name = |p: &Path| p.file_stem().unwrap().to_string_lossy().into_owned();
        let siblings: BTreeSet<String> = files.iter().map(|p| name(p)).filter(|n| n != "mod").collect();
        let graph: BTreeMap<String, BTreeSet<String>> = files
            .iter()
            .filter(|p| name(p) != "mod")
            .map(|p| {
                let source = std::fs::read_to_string(p).unwrap();
                let mut refs = references(&source, folder, &siblings);
                refs.remove(&name(p));
                (name(p), refs)
            })
            .collect();
        assert!(graph.len() > 1, "{folder}: no modules found");
        if let Some(cycle) = find_loop(&graph) {
            panic!("src/{folder}: import loop {}", cycle.join(" -> "));
        }
    }
}
