//! Compiles the C examples with the system C compiler against the static library and
//! runs them: the C API works end to end from C (example.c: parse, checksum, GSO, GRO,
//! the merged payload equals the original; mbuf_chain.c: the same as a DPDK-style
//! datapath does it with mbuf chains, header mbufs and indirect payload mbufs).
use std::path::Path;
use std::process::Command;

mod common;
use common::static_lib;

/// Builds `examples/c/<name>.c` against the static library, runs it, and returns its
/// standard output; fails the test when it does not build or exits non-zero.
fn build_and_run(name: &str, defines: &[&str]) -> String {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let lib = static_lib();
    let out_dir = std::env::temp_dir().join(format!("offlab-capi-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&out_dir).unwrap();
    let exe = out_dir.join(name);
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let build = Command::new(&cc)
        .args(["-O2", "-std=c11", "-Wall", "-Wextra", "-Werror"])
        .args(defines)
        .arg("-I")
        .arg(dir.join("include"))
        .arg(dir.join(format!("examples/c/{name}.c")))
        .arg(&lib)
        .args(["-lpthread", "-ldl", "-lm", "-o"])
        .arg(&exe)
        .output()
        .expect("run the C compiler");
    assert!(
        build.status.success(),
        "{cc} failed on {name}.c:\n{}",
        String::from_utf8_lossy(&build.stderr)
    );
    let run = Command::new(&exe).output().expect("run the example");
    let stdout = String::from_utf8_lossy(&run.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&run.stderr);
    let _ = std::fs::remove_dir_all(&out_dir);
    assert!(run.status.success(), "{name} failed:\n{stdout}\n{stderr}");
    stdout
}

fn assert_lines(stdout: &str, expected: &[&str]) {
    for line in expected {
        assert!(stdout.contains(line), "missing {line:?} in:\n{stdout}");
    }
}

#[test]
fn c_example_builds_and_runs() {
    let stdout = build_and_run("example", &[]);
    assert_lines(
        &stdout,
        &[
            "parse: ipv4, l4 tcp, headers 54 bytes, payload 10480 bytes at 54",
            "parse of 30 bytes: parse: truncated",
            "checksum: ipv4 header verifies",
            "gso: 11 segments, first 1054 bytes, last 534 bytes",
            "gro: 1 packet(s), 11 segments merged",
            "merged payload equals the original (10480 bytes)",
            "all checks passed",
        ],
    );
}

/// Whether the committed header declares the chain API (`ofl_gso_segment_chain` and
/// the rest); the example's chained half is built only then.
fn header_has_chain_api() -> bool {
    let header = Path::new(env!("CARGO_MANIFEST_DIR")).join("include/offlab_engine.h");
    std::fs::read_to_string(header)
        .unwrap()
        .contains("ofl_gso_segment_chain")
}

#[test]
fn mbuf_chain_example_builds_and_runs() {
    let chain = header_has_chain_api();
    let stdout = build_and_run("mbuf_chain", &[]);
    assert_lines(
        &stdout,
        &[
            "gso contiguous: 11 segments, each a header mbuf + 1 indirect mbuf on the input (input refcnt 12)",
            "gro contiguous: 1 packet(s), 11 segments, a chain of 12 mbufs, payload equals the original (10480 bytes)",
            "mbufs: every one back in its pool",
            "all checks passed",
        ],
    );
    // The chained super-packet is a header mbuf and seven payload mbufs of 1500 bytes,
    // so three of the eleven 1000-byte segments span two of them.
    if chain {
        assert_lines(
            &stdout,
            &[
                "gso chained: input of 8 mbufs, 11 segments, 14 indirect pieces (3 segments span two input mbufs)",
                "gro chained: 1 packet(s), 11 segments, a chain of 15 mbufs, payload equals the original (10480 bytes)",
            ],
        );
    } else {
        assert_lines(&stdout, &["chain API: not built in"]);
    }
    assert_lines(
        &stdout,
        &["gso bulk: 11 segments, every header written into its header mbuf by one call (input refcnt 12)"],
    );
    assert_lines(
        &stdout,
        &["gso segment bulk: 11 segments, every header written into its header mbuf by one call (input refcnt 12)"],
    );
}
