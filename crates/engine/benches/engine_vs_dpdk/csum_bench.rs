//! W3: the Internet checksum over 1500 B and 64 KiB (vs `rte_raw_cksum`).
//!
//! `csum_<len>` is `checksum::sum` as dispatched (the kernel it ran is printed); then
//! `csum_<len>_<kernel>` runs each kernel this CPU has through `sum_with`. Every row
//! also carries the core's read bandwidth over the same buffer at that kernel's vector
//! width (`measure::read_reduce`) and the fraction of it the checksum reaches.

use std::hint::black_box;

use offlab_engine::checksum::{self, Kernel};

use crate::measure::{fixed_rounds_active, measure, read_reduce, Row};
use crate::packets::{csum_buffer, ref_fold};

/// 64-byte aligned, like the DPDK side's static buffer.
#[repr(C, align(64))]
struct Aligned([u8; 65536]);

pub fn run(seconds: f64, only: &str) {
    let mut buf = Box::new(Aligned([0; 65536]));
    buf.0.copy_from_slice(&csum_buffer(65536));
    for len in [1500usize, 65536] {
        let data = &buf.0[..len];
        let expected = ref_fold(data, 0);
        let dispatched = checksum::kernel();
        // Under `--rounds` (callgrind counts) only the dispatched row runs, without the
        // read-bandwidth side measurement, so the count is the checksum's alone. With
        // the dispatch forced (`KERNEL_ENV`, e.g. `benches/run.py`'s AVX2 side) only the
        // dispatched row runs too: the per-kernel rows do not depend on it.
        let per_kernel = !fixed_rounds_active() && std::env::var_os(checksum::KERNEL_ENV).is_none();
        let rows = std::iter::once((format!("csum_{len}"), None)).chain(
            Kernel::available()
                .filter(move |_| per_kernel)
                .map(|k| (format!("csum_{len}_{}", k.name()), Some(k))),
        );
        for (name, forced) in rows {
            if !name.starts_with(only) {
                continue;
            }
            let kernel = forced.unwrap_or(dispatched);
            let sum = |data: &[u8]| match forced {
                None => checksum::sum(data, 0),
                Some(k) => checksum::sum_with(k, data, 0),
            };
            assert_eq!(checksum::fold(sum(data)), expected, "{name}: engine sum disagrees");
            let m = measure(seconds, || {
                black_box(checksum::fold(sum(black_box(data))));
            });
            let extra = if fixed_rounds_active() {
                format!("\"kernel\":\"{}\",", kernel.name())
            } else {
                let read = measure(seconds / 3.0, || {
                    black_box(read_reduce(kernel, black_box(data)));
                });
                let gbits = |rate: f64| rate * len as f64 * 8.0 / 1e9;
                format!(
                    "\"kernel\":\"{}\",\"read_gbps\":{:.4},\"bw_fraction\":{:.4},",
                    kernel.name(),
                    gbits(read.best_rate),
                    m.best_rate / read.best_rate
                )
            };
            Row {
                workload: &name,
                unit: "Gbit/s",
                ops_per_round: len as f64 * 8.0 / 1e9,
                depth: None,
                digest: u64::from(expected),
                reprime_ns_per_pkt: None,
            }
            .print_with(&m, &extra);
        }
    }
}
