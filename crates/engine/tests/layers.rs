//! The engine's modules import downward only: the crate's top-level modules (`chain`,
//! `checksum`, `gro`, ...) name each other through `crate::x` without a loop, and among
//! the sibling modules of one folder the `super::x` references outside test code form
//! no loop either. A loop means a shared definition should move down a layer
//! (docs/engine.md, "Layers").

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

/// The Rust files of a top-level module: `src/<name>.rs` and everything under `src/<name>/`.
fn module_files(src: &Path, name: &str) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    let file = src.join(format!("{name}.rs"));
    if file.is_file() {
        files.push(file);
    }
    let mut dirs = vec![src.join(name)];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().filter_map(Result::ok) {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|x| x == "rs") {
                files.push(path);
            }
        }
    }
    files
}

/// The other top-level modules that `source` names as `crate::<module>`, ignoring
/// everything from its first `#[cfg(test)]` on.
fn crate_references(source: &str, modules: &BTreeSet<String>) -> BTreeSet<String> {
    let code = source.split("#[cfg(test)]").next().unwrap_or("");
    let mut found = BTreeSet::new();
    for (at, _) in code.match_indices("crate::") {
        let rest = &code[at + "crate::".len()..];
        let items: Vec<&str> = match rest.strip_prefix('{') {
            Some(list) => list[..list.find('}').unwrap_or(0)].split(',').collect(),
            None => vec![rest],
        };
        for item in items {
            let name: String = item.trim().chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
            if modules.contains(&name) {
                found.insert(name);
            }
        }
    }
    found
}

#[test]
fn top_level_modules_import_downward_only() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let lib = std::fs::read_to_string(src.join("lib.rs")).unwrap();
    let modules: BTreeSet<String> = lib
        .lines()
        .filter_map(|line| line.trim().strip_prefix("pub mod ").or_else(|| line.trim().strip_prefix("mod ")))
        .map(|rest| rest.trim_end_matches(';').trim().to_string())
        .collect();
    assert!(modules.contains("chain") && modules.contains("gro"), "modules read from lib.rs: {modules:?}");
    let graph: BTreeMap<String, BTreeSet<String>> = modules
        .iter()
        .map(|module| {
            let mut refs = BTreeSet::new();
            for file in module_files(&src, module) {
                refs.extend(crate_references(&std::fs::read_to_string(&file).unwrap(), &modules));
            }
            refs.remove(module);
            (module.clone(), refs)
        })
        .collect();
    if let Some(cycle) = find_loop(&graph) {
        panic!("src: import loop between top-level modules {}", cycle.join(" -> "));
    }
}
