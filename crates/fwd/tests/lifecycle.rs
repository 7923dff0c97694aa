//! The forwarder's life: stats on SIGUSR1, a clean exit with stats on SIGTERM, clear
//! errors for what is missing, and nothing left behind.

mod common;

use common::traffic::tcp_exchange;
use common::{total, Netns, Topology, ADDR_B};
use std::process::Command;

#[test]
fn sigusr1_reports_and_sigterm_exits_cleanly_with_stats() {
    let dir = std::env::temp_dir().join(format!("ofl-{}-stats", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let stats_file = dir.join("stats.json");
    let a = Netns::new("la");
    let b = Netns::new("lb");
    let fwd = common::Fwd::start(&[
        "--port".into(),
        format!("tap:ofl-ta@{},offloads=csum+tso4", a.name),
        "--port".into(),
        format!("tap:ofl-tb@{},offloads=csum+tso4", b.name),
        "--mode".into(),
        "pass".into(),
        "--batch".into(),
        "16".into(),
        "--stats-file".into(),
        stats_file.display().to_string(),
    ]);
    a.ip(&["addr", "add", "10.210.0.1/24", "dev", "ofl-ta"]);
    b.ip(&["addr", "add", "10.210.0.2/24", "dev", "ofl-tb"]);
    assert_eq!(fwd.ready["ports"][0]["offloads"], "csum+tso4");
    let mut topo = Topology {
        fwd: Some(fwd),
        a,
        b,
        middle: None,
    };
    tcp_exchange(&topo.a, &topo.b, ADDR_B, 1 << 20, 1 << 16);

    let snapshot = topo.fwd().stats();
    assert!(total(&snapshot, "rx_packets") > 0, "{snapshot:#}");
    let from_file: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&stats_file).unwrap()).unwrap();
    assert_eq!(from_file["event"], "stats");

    let (status, last) = topo.stop();
    assert_eq!(status.code(), Some(0), "{status:?}");
    assert_eq!(last["event"], "exit");
    assert!(total(&last, "tx_bytes") >= 1 << 20, "{last:#}");
    let from_file: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&stats_file).unwrap()).unwrap();
    assert_eq!(from_file["event"], "exit");
    std::fs::remove_dir_all(&dir).unwrap();
}

fn run_fwd(args: &[&str]) -> (Option<i32>, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_offlab-fwd"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).trim().to_string(),
    )
}

#[test]
fn a_missing_device_or_namespace_is_one_clear_error() {
    let ns = Netns::new("le");
    let tap = format!("tap:ofl-ta@{}", ns.name);
    let missing_dev = format!("packet:ofl-nope@{}", ns.name);
    let (code, err) = run_fwd(&["--port", &tap, "--port", &missing_dev, "--mode", "pass"]);
    assert_eq!(code, Some(1));
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains(&format!("no device ofl-nope in namespace {}", ns.name)),
        "{err}"
    );

    let missing_ns = format!("ofl-{}-nowhere", std::process::id());
    let (code, err) = run_fwd(&[
        "--port",
        &format!("tap:ofl-ta@{missing_ns}"),
        "--port",
        &tap,
        "--mode",
        "gro",
    ]);
    assert_eq!(code, Some(1));
    assert!(err.contains(&format!("no namespace {missing_ns}")), "{err}");

    let (code, err) = run_fwd(&["--port", &tap, "--mode", "pass"]);
    assert_eq!(code, Some(1));
    assert!(err.contains("exactly two --port"), "{err}");
}

#[test]
fn bad_arguments_are_usage_errors() {
    let (code, err) = run_fwd(&[
        "--port",
        "tap:x@y,offloads=tso4",
        "--port",
        "tap:z@y",
        "--mode",
        "pass",
    ]);
    assert_eq!(code, Some(2));
    assert!(err.contains("need csum"), "{err}");
    let (code, _) = run_fwd(&["--port", "tap:x@y", "--port", "tap:z@y", "--mode", "turbo"]);
    assert_eq!(code, Some(2));
}

#[test]
fn nothing_is_left_behind() {
    let names: Vec<String>;
    {
        let mut topo = Topology::vm2host("lx", "pass", "csum");
        names = [&topo.a, &topo.b, topo.middle.as_ref().unwrap()]
            .iter()
            .map(|ns| ns.name.clone())
            .collect();
        tcp_exchange(&topo.a, &topo.b, ADDR_B, 1 << 16, 1 << 16);
        let (status, _) = topo.stop();
        assert!(status.success());
    }
    for name in &names {
        assert!(!Netns::exists(name), "{name} left behind");
    }
    let links = Command::new("ip")
        .args(["-o", "link", "show"])
        .output()
        .unwrap();
    let links = String::from_utf8_lossy(&links.stdout);
    assert!(
        !links.contains("ofl-ta") && !links.contains("ofl-vm"),
        "device in the root namespace: {links}"
    );
}
