//! Compiles examples/c/example.c with the system C compiler against the static
//! library and runs it: the C API works end to end from C (parse, checksum, GSO,
//! GRO, the merged payload equals the original).
use std::path::{Path, PathBuf};
use std::process::Command;

/// The static library cargo built with this test. `cargo test` leaves it in the
/// `deps/` directory next to this test's executable (only `cargo build` copies it up
/// to `<target>/<profile>/`, which may be older), so that one comes first.
fn static_lib() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    let mut candidates = Vec::new();
    if let Some(deps) = exe.parent() {
        candidates.push(deps.join("libofflab_engine_c.a"));
        if let Some(profile_dir) = deps.parent() {
            candidates.push(profile_dir.join("libofflab_engine_c.a"));
        }
    }
    if let Ok(dir) = std::env::var("CARGO_TARGET_DIR") {
        candidates.push(Path::new(&dir).join("release/libofflab_engine_c.a"));
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    candidates.push(root.join("target/release/libofflab_engine_c.a"));
    if let Some(found) = candidates.iter().find(|p| p.exists()) {
        return found.clone();
    }
    // Not built yet (e.g. a debug `cargo test` of another crate): build it.
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = Command::new(cargo)
        .args(["build", "--release", "-p", "offlab-engine-capi"])
        .current_dir(&root)
        .status()
        .expect("run cargo build");
    assert!(status.success(), "cargo build of the C API failed");
    root.join("target/release/libofflab_engine_c.a")
}

#[test]
fn c_example_builds_and_runs() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let lib = static_lib();
    let out_dir = std::env::temp_dir().join(format!("offlab-capi-example-{}", std::process::id()));
    std::fs::create_dir_all(&out_dir).unwrap();
    let exe = out_dir.join("example");
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let build = Command::new(&cc)
        .args(["-O2", "-std=c11", "-Wall", "-Wextra", "-Werror", "-I"])
        .arg(dir.join("include"))
        .arg(dir.join("examples/c/example.c"))
        .arg(&lib)
        .args(["-lpthread", "-ldl", "-lm", "-o"])
        .arg(&exe)
        .output()
        .expect("run the C compiler");
    assert!(
        build.status.success(),
        "{cc} failed:\n{}",
        String::from_utf8_lossy(&build.stderr)
    );
    let run = Command::new(&exe).output().expect("run the example");
    let stdout = String::from_utf8_lossy(&run.stdout);
    let stderr = String::from_utf8_lossy(&run.stderr);
    let _ = std::fs::remove_dir_all(&out_dir);
    assert!(run.status.success(), "example failed:\n{stdout}\n{stderr}");
    for expected in [
        "parse: ipv4, l4 tcp, headers 54 bytes, payload 10480 bytes at 54",
        "parse of 30 bytes: parse: truncated",
        "checksum: ipv4 header verifies",
        "gso: 11 segments, first 1054 bytes, last 534 bytes",
        "gro: 1 packet(s), 11 segments merged",
        "merged payload equals the original (10480 bytes)",
        "all checks passed",
    ] {
        assert!(
            stdout.contains(expected),
            "missing {expected:?} in:\n{stdout}"
        );
    }
}
