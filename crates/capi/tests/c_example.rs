//! Compiles examples/c/example.c with the system C compiler against the static
//! library and runs it: the C API works end to end from C (parse, checksum, GSO,
//! GRO, the merged payload equals the original).
use std::path::Path;
use std::process::Command;

mod common;
use common::static_lib;

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
