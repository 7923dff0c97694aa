//! The ABI check: a caller built against the ABI 1.0 header (`abi/offlab_engine-1.0.h`,
//! the header as released before ABI 1.1) keeps working with this library.
//!
//! - Every constant, enum value and function of the old header is in the current one
//!   with the same value; every struct keeps its old fields in the same order, and
//!   only `ofl_gro_merged` (written by the library, read by the caller) may grow, at its
//!   end. `sizeof` of each struct, compiled against each header, agrees.
//! - The C example, compiled against the old header, runs against the current shared
//!   library through its SONAME.
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

const BASELINE: &str = "abi/offlab_engine-1.0.h";
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
    let (old, new) = (read(BASELINE), read("include/offlab_engine.h"));
    let new_constants = constants(&new);
    for (name, value) in constants(&old) {
        assert_eq!(new_constants.get(&name), Some(&value), "{name} changed or vanished");
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
    let tmp = std::env::temp_dir().join(format!("offlab-abi-sizes-{}", std::process::id()));
    let old_dir = tmp.join("old");
    std::fs::create_dir_all(&old_dir).unwrap();
    std::fs::copy(dir().join(BASELINE), old_dir.join("offlab_engine.h")).unwrap();
    let names: Vec<String> = structs(&read(BASELINE)).into_keys().collect();
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

/// The shared library cargo built with this test (see `c_example.rs` for the search).
fn shared_lib() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let deps = exe.parent().unwrap();
    [deps.join("libofflab_engine_c.so"), deps.parent().unwrap().join("libofflab_engine_c.so")]
        .into_iter()
        .find(|p| p.exists())
        .expect("cargo builds the cdylib with the tests")
}

#[test]
fn an_abi_1_0_caller_runs_against_this_shared_library() {
    let lib = shared_lib();
    let soname = format!("libofflab_engine_c.so.{}", offlab_engine_c::OFL_ABI_MAJOR);
    let dynamic = Command::new("readelf").arg("-d").arg(&lib).output().expect("readelf (binutils)");
    let dynamic = String::from_utf8_lossy(&dynamic.stdout);
    assert!(dynamic.contains(&format!("[{soname}]")), "SONAME is not {soname}:\n{dynamic}");
    let tmp = std::env::temp_dir().join(format!("offlab-abi-caller-{}", std::process::id()));
    let old_dir = tmp.join("include");
    std::fs::create_dir_all(&old_dir).unwrap();
    std::fs::copy(dir().join(BASELINE), old_dir.join("offlab_engine.h")).unwrap();
    // The loader finds the library by its SONAME, as an installed one would be found.
    std::fs::copy(&lib, tmp.join(&soname)).unwrap();
    std::os::unix::fs::symlink(&soname, tmp.join("libofflab_engine_c.so")).unwrap();
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
    let needed = Command::new("readelf").arg("-d").arg(&exe).output().unwrap();
    let _ = std::fs::remove_dir_all(&tmp);
    assert!(String::from_utf8_lossy(&needed.stdout).contains(&format!("[{soname}]")));
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(run.status.success() && stdout.contains("all checks passed"), "{stdout}");
}
