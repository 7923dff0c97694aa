//! Every summing kernel agrees with the byte-by-byte reference, and `combine` of any
//! split equals the sum of the whole.
#![no_main]

use libfuzzer_sys::fuzz_target;
use offlab_engine::checksum::{combine, fold, reference, sum, sum_with, Kernel};

fuzz_target!(|data: &[u8]| {
    let expected = reference(data);
    for kernel in Kernel::available() {
        assert_eq!(
            fold(sum_with(kernel, data, 0)),
            expected,
            "kernel {}",
            kernel.name()
        );
    }
    let split = data.first().map_or(0, |&b| usize::from(b)).min(data.len());
    let (head, tail) = data.split_at(split);
    assert_eq!(fold(combine(sum(head, 0), sum(tail, 0), split)), expected);
});
