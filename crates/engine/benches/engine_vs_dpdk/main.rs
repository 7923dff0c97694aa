//! The engine side of the engine-vs-DPDK benchmark (`make bench` runs it through
//! `benches/run.py`, alternating with `benches/peer/build/dpdk_bench`). Prints one JSON
//! line per workload of `benches/workloads.md`, in the DPDK side's format, plus the
//! heap allocations of the timed part (must be 0) and the GRO table size for 1024 flows.
//!
//! Usage: engine_vs_dpdk [--seconds S] [--only PREFIX] [--rounds N]
//! (`--rounds N`: exactly N rounds per workload, for callgrind instruction counts.)

mod csum_bench;
mod gro_bench;
mod gso_bench;
mod measure;
mod packets;

#[global_allocator]
static ALLOC: measure::CountingAlloc = measure::CountingAlloc;

struct Args {
    seconds: f64,
    only: String,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args { seconds: 0.3, only: String::new() };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--seconds" => {
                let v = it.next().ok_or("--seconds needs a value")?;
                args.seconds = v.parse().map_err(|_| format!("bad --seconds {v}"))?;
            }
            "--only" => args.only = it.next().ok_or("--only needs a value")?,
            "--rounds" => {
                let v = it.next().ok_or("--rounds needs a value")?;
                measure::set_fixed_rounds(v.parse().map_err(|_| format!("bad --rounds {v}"))?);
            }
            // `cargo bench` passes --bench; accept and ignore it.
            "--bench" => {}
            other => return Err(format!("unknown argument {other}")),
        }
    }
    Ok(args)
}

/// Pins this thread to CPU 0, where the DPDK side runs its lcore.
fn pin_to_cpu0() {
    // SAFETY: a zeroed cpu_set_t is a valid empty set; CPU_SET and sched_setaffinity
    // only read/write that local set.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(0, &mut set);
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            eprintln!("engine_vs_dpdk: could not pin to CPU 0; continuing unpinned");
        }
    }
}

fn main() {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!(
                "engine_vs_dpdk: {e}\nusage: engine_vs_dpdk [--seconds S] [--only PREFIX] [--rounds N]"
            );
            std::process::exit(2);
        }
    };
    pin_to_cpu0();
    gro_bench::run(args.seconds, &args.only);
    gso_bench::run(args.seconds, &args.only);
    csum_bench::run(args.seconds, &args.only);
    if "gro_state".starts_with(&args.only) || args.only.is_empty() {
        gro_bench::print_state_size(1024);
    }
}
