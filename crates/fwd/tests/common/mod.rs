//! Namespaces, topologies, a running forwarder and verified transfers for the
//! integration tests. Everything lives in `ofl-<pid>-<role>` namespaces that are
//! removed on drop (the forwarder is stopped first, so no device outlives its test).
#![allow(dead_code)] // each test binary uses a different part of this module

pub mod inject;
pub mod traffic;

use serde_json::Value;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::os::fd::AsRawFd;
use std::process::{Child, ChildStdout, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// Runs `ip` with `args`, panicking with its stderr on failure.
pub fn ip(args: &[&str]) {
    let out = Command::new("ip").args(args).output().expect("run ip");
    assert!(
        out.status.success(),
        "ip {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A network namespace `ofl-<pid>-<role>`, deleted on drop.
pub struct Netns {
    pub name: String,
}

impl Netns {
    pub fn new(role: &str) -> Netns {
        remove_stale_namespaces();
        let name = format!("ofl-{}-{role}", std::process::id());
        let _ = Command::new("ip").args(["netns", "del", &name]).output();
        ip(&["netns", "add", &name]);
        let ns = Netns { name };
        ns.ip(&["link", "set", "lo", "up"]);
        ns
    }

    /// `ip -n <ns> …`
    pub fn ip(&self, args: &[&str]) {
        let mut all = vec!["-n", self.name.as_str()];
        all.extend_from_slice(args);
        ip(&all);
    }

    /// Runs `work` on a thread inside this namespace (sockets it opens stay there).
    pub fn spawn<T: Send + 'static>(
        &self,
        work: impl FnOnce() -> T + Send + 'static,
    ) -> std::thread::JoinHandle<T> {
        let file = File::open(format!("/var/run/netns/{}", self.name)).expect("open netns");
        std::thread::spawn(move || {
            // SAFETY: setns reads the fd only; it moves this new thread alone.
            let rc = unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) };
            assert_eq!(rc, 0, "setns: {}", std::io::Error::last_os_error());
            work()
        })
    }

    /// Checksum and header errors the namespace's stack counted (TCP/UDP InCsumErrors,
    /// IP InHdrErrors): a forwarder that sends a wrong checksum shows up here.
    pub fn checksum_errors(&self) -> u64 {
        let out = Command::new("ip")
            .args(["netns", "exec", &self.name, "cat", "/proc/net/snmp"])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        let lines: Vec<&str> = text.lines().collect();
        let mut errors = 0;
        for pair in lines.chunks(2) {
            let [names, values] = pair else { continue };
            for (name, value) in names.split_whitespace().zip(values.split_whitespace()) {
                if name == "InCsumErrors" || name == "InHdrErrors" {
                    errors += value.parse::<u64>().unwrap_or(0);
                }
            }
        }
        errors
    }

    pub fn exists(name: &str) -> bool {
        std::path::Path::new("/var/run/netns").join(name).exists()
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = Command::new("ip")
            .args(["netns", "del", &self.name])
            .output();
    }
}

/// Removes `ofl-<pid>-*` namespaces whose creating process is gone (never a live one's).
fn remove_stale_namespaces() {
    let Ok(entries) = std::fs::read_dir("/var/run/netns") else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().to_string();
        let Some(pid) = name
            .strip_prefix("ofl-")
            .and_then(|rest| rest.split('-').next())
        else {
            continue;
        };
        let Ok(pid) = pid.parse::<u32>() else {
            continue;
        };
        if !std::path::Path::new(&format!("/proc/{pid}")).exists() {
            let _ = Command::new("ip").args(["netns", "del", &name]).output();
        }
    }
}

/// A running offlab-fwd, stopped (SIGTERM, then SIGKILL) on drop.
pub struct Fwd {
    child: Option<Child>,
    lines: mpsc::Receiver<Value>,
    pub ready: Value,
}

impl Fwd {
    /// Starts the forwarder and waits for its `ready` line.
    pub fn start(args: &[String]) -> Fwd {
        let mut child = Command::new(env!("CARGO_BIN_EXE_offlab-fwd"))
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn offlab-fwd");
        let lines = read_json_lines(child.stdout.take().unwrap());
        let ready = match lines.recv_timeout(Duration::from_secs(10)) {
            Ok(value) => value,
            Err(_) => {
                let out = child.wait_with_output().expect("wait offlab-fwd");
                panic!(
                    "offlab-fwd did not start: {}",
                    String::from_utf8_lossy(&out.stderr)
                );
            }
        };
        assert_eq!(ready["event"], "ready", "{ready}");
        Fwd {
            child: Some(child),
            lines,
            ready,
        }
    }

    fn signal(&self, signal: libc::c_int) {
        if let Some(child) = &self.child {
            send_signal(child, signal);
        }
    }

    /// Asks for stats with SIGUSR1 and returns them (other event lines on the way, such
    /// as a vhost-user port's connections, are passed over).
    pub fn stats(&mut self) -> Value {
        self.signal(libc::SIGUSR1);
        self.wait_event("stats")
    }

    /// The next line whose event is `name`, within 10 s.
    pub fn wait_event(&mut self, name: &str) -> Value {
        loop {
            let value = self
                .lines
                .recv_timeout(Duration::from_secs(10))
                .unwrap_or_else(|_| panic!("no {name} line"));
            if value["event"] == name {
                return value;
            }
        }
    }

    /// Whether the forwarder is still running.
    pub fn alive(&mut self) -> bool {
        self.child
            .as_mut()
            .is_some_and(|child| matches!(child.try_wait(), Ok(None)))
    }

    /// SIGTERM; returns the exit status and the final stats.
    pub fn stop(mut self) -> (ExitStatus, Value) {
        self.signal(libc::SIGTERM);
        let status = self.child.take().unwrap().wait().expect("wait offlab-fwd");
        let mut last = Value::Null;
        while let Ok(value) = self.lines.recv_timeout(Duration::from_secs(2)) {
            last = value;
        }
        (status, last)
    }
}

impl Drop for Fwd {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            send_signal(&child, libc::SIGTERM);
            for _ in 0..50 {
                if let Ok(Some(_)) = child.try_wait() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn send_signal(child: &Child, signal: libc::c_int) {
    // SAFETY: kill only sends a signal to our own child process.
    unsafe { libc::kill(child.id() as libc::pid_t, signal) };
}

fn read_json_lines(stdout: ChildStdout) -> mpsc::Receiver<Value> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let value: Value =
                serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
            if tx.send(value).is_err() {
                break;
            }
        }
    });
    rx
}

pub const ADDR_A: &str = "10.210.0.1";
pub const ADDR_B: &str = "10.210.0.2";
/// IPv6 addresses, bracketed as socket addresses want them.
pub const ADDR6_A: &str = "[fd00:210::1]";
pub const ADDR6_B: &str = "[fd00:210::2]";

/// Gives `dev` in `ns` the IPv4 and IPv6 address of one side (no duplicate detection,
/// so IPv6 works at once).
fn address(ns: &Netns, dev: &str, v4: &str, v6: &str) {
    ns.ip(&["addr", "add", &format!("{v4}/24"), "dev", dev]);
    let v6 = v6.trim_matches(|c| c == '[' || c == ']');
    ns.ip(&[
        "-6",
        "addr",
        "add",
        &format!("{v6}/64"),
        "dev",
        dev,
        "nodad",
    ]);
}

/// nsA ⇄ tap ⇄ offlab-fwd ⇄ (tap | AF_PACKET on veth in a middle namespace) ⇄ nsB.
/// Field order is drop order: the forwarder stops before its namespaces go.
pub struct Topology {
    pub fwd: Option<Fwd>,
    pub a: Netns,
    pub b: Netns,
    pub middle: Option<Netns>,
}

impl Topology {
    /// VM to VM: a tap in each namespace, both created by the forwarder.
    pub fn vm2vm(tag: &str, mode: &str, offloads_a: &str, offloads_b: &str) -> Topology {
        let a = Netns::new(&format!("{tag}a"));
        let b = Netns::new(&format!("{tag}b"));
        let fwd = Fwd::start(&[
            "--port".into(),
            format!("tap:ofl-ta@{},offloads={offloads_a}", a.name),
            "--port".into(),
            format!("tap:ofl-tb@{},offloads={offloads_b}", b.name),
            "--mode".into(),
            mode.into(),
        ]);
        address(&a, "ofl-ta", ADDR_A, ADDR6_A);
        address(&b, "ofl-tb", ADDR_B, ADDR6_B);
        Topology {
            fwd: Some(fwd),
            a,
            b,
            middle: None,
        }
    }

    /// VM to host: tap in nsA, AF_PACKET on a veth whose peer is in nsB.
    pub fn vm2host(tag: &str, mode: &str, offloads_a: &str) -> Topology {
        let a = Netns::new(&format!("{tag}a"));
        let b = Netns::new(&format!("{tag}b"));
        let m = Netns::new(&format!("{tag}m"));
        m.ip(&[
            "link", "add", "ofl-vm", "type", "veth", "peer", "name", "ofl-vb", "netns", &b.name,
        ]);
        address(&b, "ofl-vb", ADDR_B, ADDR6_B);
        b.ip(&["link", "set", "ofl-vb", "up"]);
        let fwd = Fwd::start(&[
            "--port".into(),
            format!("tap:ofl-ta@{},offloads={offloads_a}", a.name),
            "--port".into(),
            format!("packet:ofl-vm@{}", m.name),
            "--mode".into(),
            mode.into(),
        ]);
        address(&a, "ofl-ta", ADDR_A, ADDR6_A);
        Topology {
            fwd: Some(fwd),
            a,
            b,
            middle: Some(m),
        }
    }

    pub fn fwd(&mut self) -> &mut Fwd {
        self.fwd.as_mut().unwrap()
    }

    /// Stops the forwarder; returns its exit status and final stats.
    pub fn stop(&mut self) -> (ExitStatus, Value) {
        self.fwd.take().unwrap().stop()
    }
}

/// Sum of one counter over both directions of a stats object.
pub fn total(stats: &Value, counter: &str) -> u64 {
    stats["directions"]
        .as_object()
        .unwrap()
        .values()
        .map(|d| d[counter].as_u64().unwrap_or(0))
        .sum()
}

/// Sum of drops in one category over both directions.
pub fn drops_in(stats: &Value, category: &str) -> u64 {
    stats["directions"]
        .as_object()
        .unwrap()
        .values()
        .filter_map(|d| d["drops"][category].as_object())
        .flat_map(|reasons| reasons.values())
        .map(|count| count.as_u64().unwrap())
        .sum()
}
