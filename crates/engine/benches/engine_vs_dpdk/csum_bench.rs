//! W3: the Internet checksum over 1500 B and 64 KiB (vs `rte_raw_cksum`).

use std::hint::black_box;

use offlab_engine::checksum;

use crate::measure::{measure, Row};
use crate::packets::{csum_buffer, ref_fold};

/// 64-byte aligned, like the DPDK side's static buffer.
#[repr(C, align(64))]
struct Aligned([u8; 65536]);

pub fn run(seconds: f64, only: &str) {
    let mut buf = Box::new(Aligned([0; 65536]));
    buf.0.copy_from_slice(&csum_buffer(65536));
    for len in [1500usize, 65536] {
        let name = format!("csum_{len}");
        if !name.starts_with(only) {
            continue;
        }
        let data = &buf.0[..len];
        let expected = ref_fold(data, 0);
        assert_eq!(checksum::fold(checksum::sum(data, 0)), expected, "engine sum disagrees");
        let m = measure(seconds, || {
            black_box(checksum::fold(checksum::sum(black_box(data), 0)));
        });
        Row {
            workload: &name,
            unit: "Gbit/s",
            ops_per_round: len as f64 * 8.0 / 1e9,
            depth: None,
            digest: u64::from(expected),
            reprime_ns_per_pkt: None,
        }
        .print(&m);
    }
}
