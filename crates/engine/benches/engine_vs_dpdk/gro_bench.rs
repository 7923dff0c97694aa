//! W1 and W4 GRO rows: rounds of 1024 frames in bursts of 32, the same frames, flows,
//! bursts and flush points as the DPDK side, and the same re-priming cost (each burst's
//! headers copied back from their templates before the burst is offered).

use std::hint::black_box;

use offlab_engine::gro::{Gro, GroConfig, Merged, RxMeta};
use offlab_engine::wire::parse::parse_frame;

use crate::measure::{fixed_rounds_active, live_bytes, measure, Row};
use crate::packets::{self, Net, Transport, TCP_ACK};

const ROUND: usize = 1024;
const BURST: usize = 32;
const BURSTS: usize = ROUND / BURST;
/// Same flow-table size as the DPDK side's `max_flow_num`.
const MAX_FLOWS: usize = 64;

struct Case {
    name: &'static str,
    net: Net,
    transport: Transport,
    flows: u32,
    /// Flush after this many bursts (1: every burst, like DPDK's lightweight mode).
    flush_every: usize,
}

const TCP: Transport = Transport::Tcp { flags: TCP_ACK };

const fn case(name: &'static str, net: Net, flows: u32, flush_every: usize) -> Case {
    Case { name, net, transport: TCP, flows, flush_every }
}

const CASES: [Case; 9] = [
    case("gro_tcp4_f1_burst", Net::V4, 1, 1),
    case("gro_tcp4_f8_burst", Net::V4, 8, 1),
    case("gro_tcp4_f64_burst", Net::V4, 64, 1),
    case("gro_tcp4_f64_flush4", Net::V4, 64, 4),
    case("gro_tcp4_f64_flush32", Net::V4, 64, 32),
    case("gro_tcp6_f8_burst", Net::V6, 8, 1),
    case("gro_vxlan_tcp4_f8_burst", Net::Vxlan4, 8, 1),
    case("gro_geneve6_tcp6_f8_burst", Net::Geneve6, 8, 1),
    Case { name: "gro_udp4_f8_burst", net: Net::V4, transport: Transport::Udp, flows: 8, flush_every: 1 },
];

/// One round's frames and the header templates they are re-primed from.
struct Frames {
    frames: Vec<Vec<u8>>,
    headers: Vec<Vec<u8>>,
}

impl Frames {
    fn new(net: Net, transport: Transport, flows: u32) -> Frames {
        let frames = packets::gro_round(net, transport, flows, ROUND);
        let headers = frames
            .iter()
            .map(|f| {
                let layout = parse_frame(f).expect("benchmark frame parses");
                f[..layout.headers_len()].to_vec()
            })
            .collect();
        Frames { frames, headers }
    }

    #[inline]
    fn reprime(&mut self, n: usize) {
        let header = &self.headers[n];
        self.frames[n][..header.len()].copy_from_slice(header);
    }
}

/// Outputs (merged runs and refused frames) and segments seen.
#[derive(Default)]
struct Counts {
    inputs: u64,
    outputs: u64,
    segments: u64,
}

fn round(gro: &mut Gro, frames: &mut Frames, flush_every: usize, counts: &mut Counts) {
    let (mut outputs, mut segments, mut refused) = (0u64, 0u64, 0u64);
    let mut deliver = |m: Merged<'_>| {
        outputs += 1;
        segments += u64::from(m.segments);
        black_box((m.header, m.parts));
    };
    for b in 0..BURSTS {
        let meta = RxMeta { csum_validated: true, now: b as u64 };
        // The burst is re-primed before it is pushed, as the DPDK side restores its
        // burst of mbufs before `rte_gro_reassemble*` (and as a receive burst arrives).
        for n in b * BURST..(b + 1) * BURST {
            frames.reprime(n);
        }
        for n in b * BURST..(b + 1) * BURST {
            if gro.push(n as u64, &frames.frames[n], meta, &mut deliver).is_err() {
                refused += 1; // forwarded as it is
            }
        }
        if (b + 1) % flush_every == 0 {
            gro.flush(&mut deliver);
        }
    }
    counts.inputs += ROUND as u64;
    counts.outputs += outputs + refused;
    counts.segments += segments + refused;
}

pub fn run(seconds: f64, only: &str) {
    let mut reprime_ns = None;
    for case in CASES.iter().filter(|c| c.name.starts_with(only)) {
        let mut frames = Frames::new(case.net, case.transport, case.flows);
        let digest = packets::digest(&frames.frames);
        if reprime_ns.is_none() && !fixed_rounds_active() {
            reprime_ns = Some(reprime_cost(seconds, &mut frames));
        }
        let mut gro = Gro::new(GroConfig { max_flows: MAX_FLOWS, ..GroConfig::default() });
        let mut counts = Counts::default();
        round(&mut gro, &mut frames, case.flush_every, &mut counts);
        assert_eq!(counts.segments, ROUND as u64, "{}: every frame comes out once", case.name);
        assert_eq!(gro.stats().refused_total(), 0, "{}: nothing refused", case.name);
        counts = Counts::default();
        let m = measure(seconds, || round(&mut gro, &mut frames, case.flush_every, &mut counts));
        Row {
            workload: case.name,
            unit: "Mpps",
            ops_per_round: ROUND as f64 / 1e6,
            depth: Some(counts.inputs as f64 / counts.outputs as f64),
            digest,
            reprime_ns_per_pkt: reprime_ns,
        }
        .print(&m);
    }
}

/// ns per frame of the re-priming copy alone (included in every GRO figure).
fn reprime_cost(seconds: f64, frames: &mut Frames) -> f64 {
    let m = measure(seconds, || {
        for n in 0..ROUND {
            frames.reprime(n);
        }
        black_box(&frames.frames);
    });
    1e9 / (m.best_rate * ROUND as f64)
}

/// Prints the heap and inline size of a `Gro` for `flows` flows (goal: ≤ 1 MiB).
pub fn print_state_size(flows: usize) {
    let before = live_bytes();
    let gro = Gro::new(GroConfig { max_flows: flows, ..GroConfig::default() });
    let bytes = (live_bytes() - before) as usize + std::mem::size_of::<Gro>();
    drop(black_box(gro));
    println!(
        "{{\"side\":\"engine\",\"workload\":\"gro_state_{flows}_flows\",\"unit\":\"bytes\",\"value\":{bytes},\
         \"depth\":null,\"digest\":\"\",\"heap_allocs\":null}}"
    );
}
