//! offlab-vcpu-rtt: the round trip of one cache line between two CPUs, a few times over;
//! W5 runs it before and after each run to record where the host placed the vCPUs
//! (see `offlab_vhostload::rtt`). Prints one JSON object.

use clap::Parser;
use offlab_vhostload::rtt;
use serde_json::json;

#[derive(Parser)]
#[command(about = "Round trip of one cache line between two CPUs (ns)")]
struct Args {
    /// The two CPUs, e.g. 0,1.
    #[arg(long, default_value = "0,1", value_parser = parse_cpus)]
    cpus: (usize, usize),
    /// Round trips per measurement.
    #[arg(long, default_value_t = 20_000)]
    rounds: u64,
    /// Measurements (the caller takes their median: one can land on a preemption).
    #[arg(long, default_value_t = 5)]
    repeat: u32,
}

fn parse_cpus(text: &str) -> Result<(usize, usize), String> {
    let (a, b) = text.split_once(',').ok_or("give two CPUs: A,B")?;
    let cpu = |s: &str| s.trim().parse::<usize>().map_err(|e| format!("{s:?}: {e}"));
    Ok((cpu(a)?, cpu(b)?))
}

fn main() {
    let args = Args::parse();
    let times: Vec<u64> = match rtt::round_trips(Some(args.cpus), args.rounds, args.repeat) {
        Ok(times) => times.iter().map(|t| t.as_nanos() as u64).collect(),
        Err(err) => {
            eprintln!("offlab-vcpu-rtt: cpus {:?}: {err}", args.cpus);
            std::process::exit(1);
        }
    };
    println!(
        "{}",
        json!({"cpus": [args.cpus.0, args.cpus.1], "rounds": args.rounds, "round_trip_ns": times})
    );
}
