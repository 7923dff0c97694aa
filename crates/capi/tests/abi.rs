//! The ABI check: a caller built against an older header (`abi/offlab_engine-1.0.h`,
//! the header as released before ABI 1.1; `abi/offlab_engine-1.1.h`, before ABI 1.2;
//! `abi/offlab_engine-1.2.h`, before ABI 1.3; `abi/offlab_engine-1.3.h`, before ABI 1.4)
//! keeps working with this library.
//!
//! - Every constant, enum value and function of each old header is in the current one
//!   with the same value; every struct keeps its old fields in the same order, and
//!   only `ofl_gro_merged` (written by the library, read by the caller) may grow, at its
//!   end. `sizeof` of each struct, compiled against each header, agrees.
//! - The C example, compiled against the old header, runs against the current shared
//!   library (linked as `make build` links it) through its SONAME, bound to OFL_1.0.
//! - The shared library exports every function of the header under its version node
//!   in `offlab_engine.map` and nothing else; a map missing a function fails the link.
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

mod common;

const BASELINE: &str = "abi/offlab_engine-1.0.h";
/// Every released header: each must survive in the current one.
const BASELINES: [&str; 4] =
    [BASELINE, "abi/offlab_engine-1.1.h", "abi/offlab_engine-1.2.h", "abi/offlab_engine-1.3.h"];
/// Macros that name the header's own version, and so differ between releases.
const VERSION_MACROS: [&str; 4] = ["OFL_ABI_MINOR", "OFL_VERSION_MAJOR", "OFL_VERSION_MINOR", "OFL_VERSION_PATCH"];
/// The shared library's version script.
const MAP: &str = "offlab_engine.map";
/// Structs the library writes and the caller only reads: they may grow at their end.
const GROWABLE: [&str; 1] = ["ofl_gro_merged"];

fn dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn read(rel: &str) -> String {
    std::fs::read_to_string(dir().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// `NAME = value` enum entries and `#define NAME value` constants.
fn constants(header: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for line in header.lines().map(str::trim) {
        if let Some(rest) = line.strip_prefix("#define OFL_") {
            let mut it = rest.split_whitespace();
            if let (Some(name), Some(value)) = (it.next(), it.next()) {
                out.insert(format!("OFL_{name}"), value.to_string());
            }
        } else if line.starts_with("OFL_") && line.contains(" = ") {
            let (name, value) = line.trim_end_matches(',').split_once(" = ").unwrap();
            out.insert(name.to_string(), value.to_string());
        }
    }
    out
}

/// Function names declared (`ofl_x(`) at the start of a prototype's name.
fn functions(header: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (at, _) in header.match_indices("ofl_") {
        let rest = &header[at..];
        let name: String = rest.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
        if rest[name.len()..].starts_with('(') && !out.contains(&name) {
            out.push(name);
        }
    }
    out
}

/// Field declarations of each `typedef struct NAME { ... } NAME;`, comments dropped.
fn structs(header: &str) -> BTreeMap<String, Vec<String>> {
    let mut out = BTreeMap::new();
    let mut current: Option<(String, Vec<String>)> = None;
    for line in header.lines().map(str::trim) {
        if let Some(name) = line.strip_prefix("typedef struct ").and_then(|l| l.strip_suffix(" {")) {
            current = Some((name.to_string(), Vec::new()));
        } else if line.starts_with('}') {
            if let Some((name, fields)) = current.take() {
                out.insert(name, fields);
            }
        } else if let Some((_, fields)) = current.as_mut() {
            if !line.is_empty() && !line.starts_with("//") && !line.starts_with("/*") && !line.starts_with('*') {
                fields.push(line.to_string());
            }
        }
    }
    out
}

#[test]
fn old_header_declarations_survive() {
    for baseline in BASELINES {
        declarations_survive(baseline);
    }
}

fn declarations_survive(baseline: &str) {
    let (old, new) = (read(baseline), read("include/offlab_engine.h"));
    let new_constants = constants(&new);
    for (name, value) in constants(&old) {
        if !VERSION_MACROS.contains(&name.as_str()) {
            assert_eq!(new_constants.get(&name), Some(&value), "{baseline}: {name} changed or vanished");
        }
    }
    let new_functions = functions(&new);
    for name in functions(&old) {
        assert!(new_functions.contains(&name), "{name} vanished");
    }
    // Array bounds compared by value: a bound may be renamed, not resized.
    let resolve = |fields: Vec<String>, consts: &BTreeMap<String, String>| -> Vec<String> {
        fields
            .into_iter()
            .map(|f| consts.iter().fold(f, |f, (name, value)| f.replace(&format!("[{name}]"), &format!("[{value}]"))))
            .collect()
    };
    let old_constants = constants(&old);
    let new_structs: BTreeMap<_, _> =
        structs(&new).into_iter().map(|(k, v)| (k, resolve(v, &new_constants))).collect();
    let old_structs: BTreeMap<_, _> =
        structs(&old).into_iter().map(|(k, v)| (k, resolve(v, &old_constants))).collect();
    assert!(old_structs.len() >= 8, "the baseline's structs were not found");
    for (name, fields) in &old_structs {
        let now = new_structs.get(name).unwrap_or_else(|| panic!("struct {name} vanished"));
        if GROWABLE.contains(&name.as_str()) {
            assert_eq!(&now[..fields.len()], &fields[..], "{name}: old fields changed");
        } else {
            assert_eq!(now, fields, "{name}: fields changed");
        }
    }
}

/// `sizeof` of each struct of the baseline, compiled against `include_dir`'s header.
fn sizes(include_dir: &Path, names: &[String], out: &Path) -> Vec<usize> {
    let mut src = String::from("#include <stdio.h>\n#include \"offlab_engine.h\"\nint main(void) {\n");
    for name in names {
        src.push_str(&format!("    printf(\"%zu\\n\", sizeof({name}));\n"));
    }
    src.push_str("    return 0;\n}\n");
    let c = out.with_extension("c");
    std::fs::write(&c, src).unwrap();
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let built = Command::new(&cc).arg("-I").arg(include_dir).arg(&c).arg("-o").arg(out).output().unwrap();
    assert!(built.status.success(), "{}", String::from_utf8_lossy(&built.stderr));
    let run = Command::new(out).output().unwrap();
    String::from_utf8_lossy(&run.stdout).lines().map(|l| l.parse().unwrap()).collect()
}

#[test]
fn struct_sizes_agree_between_the_headers() {
    for (i, baseline) in BASELINES.iter().enumerate() {
        sizes_agree(baseline, &format!("offlab-abi-sizes-{}-{i}", std::process::id()));
    }
}

fn sizes_agree(baseline: &str, scratch: &str) {
    let tmp = std::env::temp_dir().join(scratch);
    let old_dir = tmp.join("old");
    std::fs::create_dir_all(&old_dir).unwrap();
    std::fs::copy(dir().join(baseline), old_dir.join("offlab_engine.h")).unwrap();
    let names: Vec<String> = structs(&read(baseline)).into_keys().collect();
    let old = sizes(&old_dir, &names, &tmp.join("old_sizes"));
    let new = sizes(&dir().join("include"), &names, &tmp.join("new_sizes"));
    let _ = std::fs::remove_dir_all(&tmp);
    for ((name, o), n) in names.iter().zip(&old).zip(&new) {
        if GROWABLE.contains(&name.as_str()) {
            assert!(n >= o, "{name} shrank");
        } else {
            assert_eq!(o, n, "sizeof({name}) changed");
        }
    }
}

/// `name -> node` of the version script.
fn version_nodes(map: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut node = None;
    for line in map.lines().map(str::trim) {
        if let Some(name) = line.strip_suffix(" {") {
            node = Some(name.to_string());
        } else if let (Some(name), Some(node)) = (line.strip_suffix(';'), node.as_ref()) {
            if name.starts_with("ofl_") {
                out.insert(name.to_string(), node.clone());
            }
        }
    }
    out
}

fn scratch(what: &str) -> PathBuf {
    let tmp = std::env::temp_dir().join(format!("offlab-abi-{what}-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).unwrap();
    tmp
}

fn readelf(args: &[&str], file: &Path) -> String {
    let out = Command::new("readelf").args(args).arg(file).output().expect("readelf (binutils)");
    assert!(out.status.success(), "readelf {args:?} {}", file.display());
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The defined dynamic symbols of a shared library (`name@@NODE`, or a node's own
/// name).
fn exports(so: &Path) -> Vec<String> {
    readelf(&["--dyn-syms", "-W"], so)
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() == 8 && f[6] != "UND" && f[6] != "Ndx" && (f[4] == "GLOBAL" || f[4] == "WEAK"))
                .then(|| f[7].to_string())
        })
        .collect()
}

#[test]
fn every_exported_function_carries_its_version_node_and_nothing_else_is_exported() {
    let tmp = scratch("versions");
    let (so, out) = common::link_shared(&dir().join(MAP), &tmp);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let nodes = version_nodes(&read(MAP));
    let exported = exports(&so);
    let versions = readelf(&["-V", "-W"], &so);
    let dynamic = readelf(&["-d"], &so);
    let _ = std::fs::remove_dir_all(&tmp);
    let header_functions = functions(&read("include/offlab_engine.h"));
    for name in &header_functions {
        let node = nodes.get(name).unwrap_or_else(|| panic!("{name} is not in {MAP}"));
        assert!(exported.contains(&format!("{name}@@{node}")), "{name} is not exported as {name}@@{node}");
    }
    for entry in &exported {
        let ok = match entry.split_once("@@") {
            Some((name, node)) => header_functions.contains(&name.to_string()) && nodes.get(name) == Some(&node.to_string()),
            None => entry.starts_with("OFL_1."), // the version nodes themselves
        };
        assert!(ok, "unexpected export {entry}");
    }
    // The 1.0 functions keep OFL_1.0, later ones their own node; each node inherits.
    for (name, node) in [
        ("ofl_gro_new", "OFL_1.0"),
        ("ofl_abi_version", "OFL_1.1"),
        ("ofl_gro_new_ex", "OFL_1.2"),
        ("ofl_gso_segment_get_bulk", "OFL_1.3"),
        ("ofl_gso_segment_bulk", "OFL_1.4"),
    ] {
        assert_eq!(nodes.get(name).map(String::as_str), Some(node), "{name}");
    }
    // Each released header's functions keep the node of the release that added them.
    let v10 = functions(&read(BASELINE));
    for name in &v10 {
        assert_eq!(nodes.get(name).map(String::as_str), Some("OFL_1.0"), "{name} left OFL_1.0");
    }
    for name in functions(&read(BASELINES[1])).iter().filter(|n| !v10.contains(n)) {
        assert_eq!(nodes.get(name).map(String::as_str), Some("OFL_1.1"), "{name} is not in OFL_1.1");
    }
    let v11 = functions(&read(BASELINES[1]));
    for name in functions(&read(BASELINES[2])).iter().filter(|n| !v11.contains(n)) {
        assert_eq!(nodes.get(name).map(String::as_str), Some("OFL_1.2"), "{name} is not in OFL_1.2");
    }
    let v12 = functions(&read(BASELINES[2]));
    for name in functions(&read(BASELINES[3])).iter().filter(|n| !v12.contains(n)) {
        assert_eq!(nodes.get(name).map(String::as_str), Some("OFL_1.3"), "{name} is not in OFL_1.3");
    }
    for parent in ["OFL_1.0", "OFL_1.1", "OFL_1.2", "OFL_1.3"] {
        assert!(versions.contains(&format!("Parent 1: {parent}")), "{versions}");
    }
    let soname = format!("[libofflab_engine_c.so.{}]", offlab_engine_c::OFL_ABI_MAJOR);
    assert!(dynamic.contains(&soname), "SONAME is not {soname}:\n{dynamic}");
}

#[test]
fn a_version_script_missing_an_exported_function_fails_the_link() {
    let tmp = scratch("badmap");
    let map: String = read(MAP).lines().filter(|l| l.trim() != "ofl_gso_count;").map(|l| format!("{l}\n")).collect();
    std::fs::write(tmp.join("bad.map"), map).unwrap();
    let (so, out) = common::link_shared(&tmp.join("bad.map"), &tmp);
    let linked = so.exists();
    let _ = std::fs::remove_dir_all(&tmp);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "linked without ofl_gso_count in the map");
    assert!(stderr.contains("not exported with a version") && stderr.contains("ofl_gso_count"), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(!linked, "the library was left behind");
}

#[test]
fn an_abi_1_0_caller_runs_against_this_shared_library() {
    let tmp = scratch("caller");
    let (so, out) = common::link_shared(&dir().join(MAP), &tmp);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let old_dir = tmp.join("include");
    std::fs::create_dir_all(&old_dir).unwrap();
    std::fs::copy(dir().join(BASELINE), old_dir.join("offlab_engine.h")).unwrap();
    // The loader finds the library by its SONAME, as an installed one would be found.
    std::os::unix::fs::symlink(so.file_name().unwrap(), tmp.join("libofflab_engine_c.so")).unwrap();
    let exe = tmp.join("example");
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let built = Command::new(&cc)
        .args(["-O2", "-std=c11", "-Wall", "-Werror", "-I"])
        .arg(&old_dir)
        .arg(dir().join("examples/c/example.c"))
        .arg("-L")
        .arg(&tmp)
        .args(["-lofflab_engine_c", "-o"])
        .arg(&exe)
        .output()
        .unwrap();
    assert!(built.status.success(), "{}", String::from_utf8_lossy(&built.stderr));
    let run = Command::new(&exe).env("LD_LIBRARY_PATH", &tmp).output().unwrap();
    let needed = readelf(&["-d"], &exe);
    let imports = readelf(&["--dyn-syms", "-W"], &exe);
    let _ = std::fs::remove_dir_all(&tmp);
    let soname = so.file_name().unwrap().to_string_lossy().into_owned();
    assert!(needed.contains(&format!("[{soname}]")));
    // The caller binds each function to the version it was linked against.
    let bound: Vec<&str> = imports.split_whitespace().filter(|w| w.starts_with("ofl_")).collect();
    assert!(!bound.is_empty() && bound.iter().all(|w| w.contains("@OFL_1.0")), "{bound:?}");
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(run.status.success() && stdout.contains("all checks passed"), "{stdout}");
}
