//! Network namespaces named `ofl-<pid>-<role>`, removed on drop (even when a test panics),
//! plus the commands that configure devices inside them.

use std::fs::File;
use std::io::{self, Write};
use std::os::fd::AsRawFd;
use std::process::{Command, Stdio};
use std::sync::Once;

const NETNS_DIR: &str = "/run/netns";
const PREFIX: &str = "ofl-";

/// One namespace this process created. Dropping it deletes the namespace, which also
/// destroys every device inside it.
pub struct Netns {
    name: String,
}

impl Netns {
    /// Creates `ofl-<pid>-<role>` with loopback up and IPv6 autoconfiguration disabled
    /// (so no neighbour discovery or MLD noise reaches the capture sockets; IPv6 frames
    /// are still received, segmented and coalesced — those paths do not need an address).
    pub fn create(role: &str) -> Netns {
        static SWEEP: Once = Once::new();
        SWEEP.call_once(sweep_dead_leftovers);
        let name = format!("{PREFIX}{}-{role}", std::process::id());
        assert!(name.len() < 64, "namespace name too long: {name}");
        if std::path::Path::new(NETNS_DIR).join(&name).exists() {
            let _ = run("ip", &["netns", "del", &name]);
        }
        run("ip", &["netns", "add", &name]).expect("ip netns add");
        let ns = Netns { name };
        ns.ip(&["link", "set", "lo", "up"]);
        ns.sysctl("net.ipv6.conf.all.disable_ipv6", "1");
        ns.sysctl("net.ipv6.conf.default.disable_ipv6", "1");
        ns
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// `ip -n <ns> <args>`; panics with ip's own message on failure.
    pub fn ip(&self, args: &[&str]) {
        let mut full = vec!["-n", self.name.as_str()];
        full.extend_from_slice(args);
        if let Err(e) = run("ip", &full) {
            panic!("ip {}: {e}", full.join(" "));
        }
    }

    /// Runs a program inside the namespace (`ip netns exec`), returning its stdout.
    pub fn exec(&self, program: &str, args: &[&str]) -> Result<String, String> {
        let mut full = vec!["netns", "exec", self.name.as_str(), program];
        full.extend_from_slice(args);
        run("ip", &full)
    }

    pub fn sysctl(&self, key: &str, value: &str) {
        let setting = format!("{key}={value}");
        if let Err(e) = self.exec("sysctl", &["-qw", &setting]) {
            panic!("sysctl {setting} in {}: {e}", self.name);
        }
    }

    /// `ethtool -K <dev> feature on|off ...`. ethtool exits non-zero when a requested
    /// feature cannot change (e.g. `[fixed]`); that is a setup failure for these tests.
    pub fn ethtool_features(&self, dev: &str, features: &[(&str, bool)]) {
        let mut args = vec!["-K", dev];
        for (feature, on) in features {
            args.push(feature);
            args.push(if *on { "on" } else { "off" });
        }
        if let Err(e) = self.exec("ethtool", &args) {
            panic!("ethtool {} in {}: {e}", args.join(" "), self.name);
        }
    }

    /// The state of one offload feature as `ethtool -k` reports it after the change.
    pub fn ethtool_feature_on(&self, dev: &str, feature: &str) -> bool {
        let out = self.exec("ethtool", &["-k", dev]).expect("ethtool -k");
        let prefix = format!("{feature}: ");
        out.lines()
            .map(str::trim)
            .find_map(|l| l.strip_prefix(&prefix))
            .map(|v| v.starts_with("on"))
            .unwrap_or_else(|| panic!("ethtool -k {dev} has no feature {feature}"))
    }

    /// Writes a sysfs attribute of a device in this namespace. sysfs shows the devices of
    /// the namespace it was mounted in, so the write goes through `ip netns exec`, which
    /// mounts a fresh sysfs for the namespace.
    pub fn write_sysfs(&self, dev: &str, attribute: &str, value: &str) {
        let path = format!("/sys/class/net/{dev}/{attribute}");
        let mut child = Command::new("ip")
            .args(["netns", "exec", &self.name, "tee", &path])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn ip netns exec tee");
        child
            .stdin
            .take()
            .expect("piped stdin")
            .write_all(value.as_bytes())
            .expect("write to tee");
        let out = child.wait_with_output().expect("wait for tee");
        assert!(
            out.status.success(),
            "writing {value} to {path} in {}: {}",
            self.name,
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// Runs `f` on a fresh thread that has joined this namespace, and returns its result.
    /// Sockets and TAP file descriptors opened there stay bound to the namespace after the
    /// thread ends, so they can be used from the test thread afterwards. (A thread's
    /// network namespace is its own; the test thread itself never moves.)
    pub fn enter<T: Send>(&self, f: impl FnOnce() -> T + Send) -> T {
        let path = format!("{NETNS_DIR}/{}", self.name);
        std::thread::scope(|scope| {
            scope
                .spawn(|| {
                    let file = File::open(&path).expect("open namespace file");
                    // SAFETY: setns on a valid namespace fd only changes this thread's
                    // network namespace; the thread ends when `f` returns.
                    let rc = unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) };
                    assert_eq!(rc, 0, "setns {path}: {}", io::Error::last_os_error());
                    f()
                })
                .join()
                .expect("thread inside namespace panicked")
        })
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        if let Err(e) = run("ip", &["netns", "del", &self.name]) {
            eprintln!("warning: could not delete namespace {}: {e}", self.name);
        }
    }
}

/// Creates a veth pair with one end in each namespace (names are per namespace, so the
/// same short names can be used by tests running in parallel).
pub fn veth_pair(a: &Netns, a_dev: &str, b: &Netns, b_dev: &str) {
    a.ip(&[
        "link",
        "add",
        a_dev,
        "type",
        "veth",
        "peer",
        "name",
        b_dev,
        "netns",
        b.name(),
    ]);
}

/// Deletes `ofl-<pid>-*` namespaces whose creating process no longer exists. Namespaces
/// of live processes (including other test binaries running now) are never touched.
fn sweep_dead_leftovers() {
    let Ok(entries) = std::fs::read_dir(NETNS_DIR) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(pid) = owner_pid(&name) else {
            continue;
        };
        if !std::path::Path::new(&format!("/proc/{pid}")).exists() {
            eprintln!("removing leftover namespace {name} (pid {pid} is gone)");
            let _ = run("ip", &["netns", "del", &name]);
        }
    }
}

fn owner_pid(name: &str) -> Option<u32> {
    let rest = name.strip_prefix(PREFIX)?;
    let (pid, role) = rest.split_once('-')?;
    if role.is_empty() {
        return None;
    }
    pid.parse().ok()
}

/// Runs a command (argument list, no shell) and returns stdout, or stderr on failure.
pub fn run(program: &str, args: &[&str]) -> Result<String, String> {
    let out = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run {program}: {e}"))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(format!(
            "{program} exited with {}: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}
