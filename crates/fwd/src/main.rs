//! offlab-fwd: a userspace virtio-style forwarder between two ports (TAP with vnet
//! headers, AF_PACKET with vnet headers) that applies offlab-engine's offloads.
//!
//! Output: one JSON object per line on stdout — `{"event":"ready",…}` once the ports
//! are open, `{"event":"stats",…}` on SIGUSR1, `{"event":"exit",…}` on SIGTERM/SIGINT.
//! `--stats-file` receives the same stats objects, replaced atomically each time.

mod coalesce;
mod egress;
mod forward;
mod netns;
mod pipeline;
mod port;
mod stats;

use clap::Parser;
use egress::Mode;
use pipeline::{Flags, Forwarder};
use port::PortSpec;
use serde_json::json;
use stats::emit;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

#[derive(Parser, Debug)]
#[command(
    version,
    about = "Userspace virtio-style forwarder using offlab-engine"
)]
struct Cli {
    /// A port: tap:NAME@NETNS[,offloads=csum+tso4+tso6+ecn+uso][,napi],
    /// packet:IFNAME@NETNS[,offloads=…][,qdisc-bypass] or vhost-user:/SOCKET[,mtu=N]
    /// (a guest's QEMU connects; offloads follow what it negotiates). Give exactly two.
    #[arg(long = "port", required = true, num_args = 1)]
    ports: Vec<PortSpec>,
    /// What to do with offloads between the ports.
    #[arg(long, value_enum)]
    mode: Mode,
    /// Frames read per port per poll round.
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u16).range(1..=1024))]
    batch: u16,
    /// File that receives the stats JSON on SIGUSR1 and at exit.
    #[arg(long)]
    stats_file: Option<PathBuf>,
    /// Pin the forwarder to this CPU.
    #[arg(long)]
    cpu: Option<usize>,
}

fn main() {
    let cli = Cli::parse();
    if let Err(message) = run(cli) {
        eprintln!("offlab-fwd: {message}");
        std::process::exit(1);
    }
}

fn run(cli: Cli) -> Result<(), String> {
    let [a, b]: [PortSpec; 2] = cli
        .ports
        .try_into()
        .map_err(|p: Vec<PortSpec>| format!("give exactly two --port, not {}", p.len()))?;
    if let Some(cpu) = cli.cpu {
        pin_to_cpu(cpu).map_err(|err| format!("cannot pin to cpu {cpu}: {err}"))?;
    }
    let stop = Arc::new(AtomicBool::new(false));
    let report = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGTERM, signal_hook::consts::SIGINT] {
        signal_hook::flag::register(signal, Arc::clone(&stop)).map_err(|e| e.to_string())?;
    }
    signal_hook::flag::register(signal_hook::consts::SIGUSR1, Arc::clone(&report))
        .map_err(|e| e.to_string())?;

    let ports = [
        port::open(&a).map_err(|e| e.to_string())?,
        port::open(&b).map_err(|e| e.to_string())?,
    ];
    let describe = |p: &dyn port::Port| json!({"port": p.label(), "offloads": p.offloads().to_string(), "mtu": p.mtu()});
    emit(&json!({
        "event": "ready",
        "pid": std::process::id(),
        "mode": cli.mode.name(),
        "ports": [describe(ports[0].as_ref()), describe(ports[1].as_ref())],
    }));
    let mut forwarder = Forwarder::new(ports, cli.mode, cli.batch as usize);
    let stats_file = cli.stats_file;
    let publish = |fwd: &Forwarder, event: &str| {
        let value = fwd.report().to_json(event);
        if let Some(path) = &stats_file {
            if let Err(err) = stats::write_file(path, &value) {
                eprintln!("offlab-fwd: cannot write {}: {err}", path.display());
            }
        }
        emit(&value);
    };
    let result = forwarder.run(
        Flags {
            stop: &stop,
            report: &report,
        },
        |fwd| publish(fwd, "stats"),
    );
    publish(&forwarder, "exit");
    result.map_err(|err| err.to_string())
}

fn pin_to_cpu(cpu: usize) -> std::io::Result<()> {
    // SAFETY: cpu_set_t is plain old data; CPU_SET and sched_setaffinity get valid pointers.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if cpu >= libc::CPU_SETSIZE as usize {
            return Err(std::io::Error::from_raw_os_error(libc::EINVAL));
        }
        libc::CPU_SET(cpu, &mut set);
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}
