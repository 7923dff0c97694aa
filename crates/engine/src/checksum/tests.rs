use super::*;

/// A deterministic, irregular byte pattern so every lane and carry path is exercised.
fn pattern(len: usize, seed: u32) -> Vec<u8> {
    let mut state = seed.wrapping_mul(2_654_435_761).wrapping_add(1);
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            (state >> 8) as u8
        })
        .collect()
}

#[test]
fn every_kernel_matches_reference_for_every_length_and_alignment() {
    const MAX_LEN: usize = 9001;
    let random = pattern(MAX_LEN + 64, 7);
    // All-ones data maximises carries out of every lane.
    let all_ones = vec![0xffu8; MAX_LEN + 64];
    for source in [&random, &all_ones] {
        for align in 0..64 {
            let data = &source[align..align + MAX_LEN];
            // The reference sum of each prefix, grown one byte at a time.
            let mut running: u64 = 0;
            for len in 0..=MAX_LEN {
                if len > 0 {
                    let byte = u64::from(data[len - 1]);
                    running += if (len - 1) % 2 == 0 { byte << 8 } else { byte };
                }
                let expected = fold64(running);
                for kernel in Kernel::available() {
                    // The kernel itself on every length (no size thresholds)...
                    let exact = fold64(dispatch::sum_le_exact(kernel, &data[..len])).swap_bytes();
                    assert_eq!(
                        exact,
                        expected,
                        "kernel {} alone, len {len} align {align}",
                        kernel.name()
                    );
                    // ...and through the dispatcher.
                    assert_eq!(
                        fold(sum_with(kernel, &data[..len], 0)),
                        expected,
                        "kernel {} len {len} align {align}",
                        kernel.name()
                    );
                }
            }
        }
    }
}

#[test]
fn reference_is_the_plain_definition() {
    assert_eq!(reference(&[]), 0);
    assert_eq!(reference(&[0xab]), 0xab00);
    assert_eq!(reference(&[0xff, 0xff, 0x00, 0x01]), 0x0001);
    assert_eq!(reference(&[0x80, 0x00, 0x80, 0x00]), 0x0001);
}

proptest::proptest! {
    #[test]
    fn fast_sum_equals_reference_on_random_data(
        data in proptest::collection::vec(proptest::num::u8::ANY, 0..9002),
        skip in 0usize..64,
        initial in 0u32..0x10000,
    ) {
        let data = &data[skip.min(data.len())..];
        let expected = fold(combine(initial, u32::from(reference(data)), 0));
        for kernel in Kernel::available() {
            proptest::prop_assert_eq!(fold(sum_with(kernel, data, initial)), expected);
        }
    }
}

#[test]
fn worked_example_from_rfc_1071() {
    // RFC 1071 section 3: words 0001 f203 f4f5 f6f7 sum to ddf2.
    let data = [0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7];
    assert_eq!(fold(sum(&data, 0)), 0xddf2);
    assert_eq!(of(&data), !0xddf2);
}

#[test]
fn real_ipv4_header_checksums_to_zero() {
    // 45 00 00 3c 1c 46 40 00 40 06 b1 e6 ac 10 0a 63 ac 10 0a 0c (checksum b1e6)
    let header = [
        0x45, 0x00, 0x00, 0x3c, 0x1c, 0x46, 0x40, 0x00, 0x40, 0x06, 0xb1, 0xe6, 0xac, 0x10, 0x0a,
        0x63, 0xac, 0x10, 0x0a, 0x0c,
    ];
    assert_eq!(of(&header), 0);
    let mut zeroed = header;
    zeroed[10] = 0;
    zeroed[11] = 0;
    assert_eq!(of(&zeroed), 0xb1e6);
}

#[test]
fn combine_handles_odd_offsets() {
    let data = pattern(1001, 3);
    for split in [0, 1, 2, 499, 500, 1000, 1001] {
        let (a, b) = data.split_at(split);
        assert_eq!(
            fold(combine(sum(a, 0), sum(b, 0), split)),
            reference(&data),
            "split {split}"
        );
    }
}

#[test]
fn initial_value_is_added() {
    let data = pattern(77, 9);
    let pseudo = 0x1234;
    assert_eq!(
        fold(sum(&data, pseudo)),
        fold(combine(pseudo, sum(&data, 0), 0))
    );
}

#[test]
fn pseudo_headers_match_their_byte_layout() {
    let src = Ipv4Addr::new(192, 168, 1, 1);
    let dst = Ipv4Addr::new(10, 0, 0, 42);
    let mut v4 = Vec::new();
    v4.extend_from_slice(&src.octets());
    v4.extend_from_slice(&dst.octets());
    v4.extend_from_slice(&[0, 6, 0x05, 0xdc]);
    assert_eq!(fold(pseudo_header_v4(src, dst, 6, 1500)), reference(&v4));

    let src6: Ipv6Addr = "fd00::1".parse().unwrap();
    let dst6: Ipv6Addr = "fd00:ffff::abcd:2".parse().unwrap();
    let mut v6 = Vec::new();
    v6.extend_from_slice(&src6.octets());
    v6.extend_from_slice(&dst6.octets());
    v6.extend_from_slice(&70_000u32.to_be_bytes());
    v6.extend_from_slice(&[0, 0, 0, 17]);
    assert_eq!(
        fold(pseudo_header_v6(&src6, &dst6, 17, 70_000)),
        reference(&v6)
    );
}

#[test]
fn incremental_update_equals_recomputation() {
    let mut data = pattern(40, 11);
    data[10] = 0;
    data[11] = 0;
    let check = of(&data);
    // Change a 16-bit word.
    let old16 = u16::from_be_bytes([data[4], data[5]]);
    data[4..6].copy_from_slice(&0xbeefu16.to_be_bytes());
    let after16 = of(&data);
    assert_eq!(update16(check, old16, 0xbeef), after16);
    // Change a 32-bit word.
    let old32 = u32::from_be_bytes([data[12], data[13], data[14], data[15]]);
    data[12..16].copy_from_slice(&0x0a00_0001u32.to_be_bytes());
    assert_eq!(update32(after16, old32, 0x0a00_0001), of(&data));
}

#[test]
fn update16_never_yields_negative_zero_for_real_headers() {
    // RFC 1624 section 3 example: eqn 3 gives 0x0000 where eqn 2 gave 0xffff.
    assert_eq!(update16(0xdd2f, 0x5555, 0x3285), 0x0000);
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 200, ..Default::default() })]

    /// Every kernel, run alone on the whole slice (no size thresholds), equals the
    /// byte-by-byte reference on random lengths up to past 64 KiB and random starting
    /// offsets (so every alignment and parity of start and end).
    #[test]
    fn every_kernel_matches_reference_on_long_random_slices(
        len in 0usize..70_000,
        offset in 0usize..128,
        seed in proptest::num::u32::ANY,
        saturate in proptest::bool::weighted(0.2),
    ) {
        let mut data = pattern(len + offset, seed);
        if saturate {
            // Long runs of 0xff maximise the carries.
            data.iter_mut().step_by(3).for_each(|b| *b = 0xff);
            data[offset..].iter_mut().take(len / 2).for_each(|b| *b = 0xff);
        }
        let data = &data[offset..];
        let expected = reference(data);
        for kernel in Kernel::available() {
            let exact = fold64(dispatch::sum_le_exact(kernel, data)).swap_bytes();
            proptest::prop_assert_eq!(exact, expected, "kernel {} alone", kernel.name());
            proptest::prop_assert_eq!(fold(sum_with(kernel, data, 0)), expected, "kernel {}", kernel.name());
        }
    }
}

#[test]
fn kernels_agree_across_their_widening_runs() {
    // Longer than several 256 KiB runs of the SIMD kernels, all ones (the largest
    // lane values) and random, at odd and even offsets and lengths.
    let ones = vec![0xffu8; (1 << 20) + 300];
    let random = pattern((1 << 20) + 300, 5);
    for source in [&ones, &random] {
        for (offset, len) in [(0, 1 << 20), (1, (1 << 18) + 1), (3, (1 << 19) + 77), (2, (1 << 18) * 3)] {
            let data = &source[offset..offset + len];
            let expected = reference(data);
            for kernel in Kernel::available() {
                let exact = fold64(dispatch::sum_le_exact(kernel, data)).swap_bytes();
                assert_eq!(exact, expected, "kernel {} len {len} offset {offset}", kernel.name());
            }
        }
    }
}

#[test]
fn kernels_are_exact_where_their_lanes_hold_the_most() {
    // All zeros and all ones give the SIMD kernels' lanes their most negative and most
    // positive values (the words are biased to signed). Around the longest buffers the
    // AVX-512 kernels (128 KiB) and the AVX-VNNI kernel (64 KiB) add up in 32 bits, and
    // well past them, every kernel's sum must fold to the exact one (a 32-bit wrap would
    // be off by 2^32 = 1 mod 65535).
    const SHORT: usize = 128 * 1024;
    const HALF: usize = SHORT / 2;
    let longest = 4 * SHORT + 64;
    for byte in [0x00u8, 0xff] {
        let source = vec![byte; longest + 64];
        // Offsets from a 64-byte boundary, so the kernels' vector count is exactly known.
        let aligned = source.as_ptr().align_offset(64);
        for len in [HALF, HALF + 2, SHORT - 64, SHORT - 1, SHORT, SHORT + 1, SHORT + 64, 2 * SHORT, 4 * SHORT] {
            for offset in [aligned, aligned + 2, aligned + 62] {
                let data = &source[offset..offset + len];
                let words = (len / 2) as u64 * u64::from(u16::from_le_bytes([byte, byte]));
                let expected = words + if len % 2 == 1 { u64::from(byte) } else { 0 };
                for kernel in Kernel::available() {
                    assert_eq!(
                        fold64(dispatch::sum_le_exact(kernel, data)),
                        fold64(expected),
                        "kernel {} byte {byte:#x} len {len} offset {}",
                        kernel.name(),
                        offset - aligned
                    );
                }
            }
        }
    }
}

#[test]
fn zero_data_sums_to_zero_and_nothing_else_does() {
    // Folding distinguishes 0 from 0xffff, so a kernel must return 0 only for zeros.
    for kernel in Kernel::available() {
        for len in [0, 1, 2, 31, 32, 33, 255, 256, 1500, 65536] {
            assert_eq!(dispatch::sum_le_exact(kernel, &vec![0u8; len]), 0, "{}", kernel.name());
        }
        let mut words = vec![0u8; 1500];
        words[0] = 0xff;
        words[1] = 0xff;
        words[700] = 0x00;
        assert_ne!(dispatch::sum_le_exact(kernel, &words), 0, "{}", kernel.name());
    }
}

#[test]
fn every_kernel_is_listed_and_sse2_exists_on_x86_64() {
    let names: Vec<_> = Kernel::available().map(Kernel::name).collect();
    assert_eq!(names.first(), Some(&"portable"));
    #[cfg(target_arch = "x86_64")]
    assert!(names.contains(&"sse2"));
}

proptest::proptest! {
    /// `sum_pieces` with every kernel equals one `sum` per chunk, for piece sizes odd
    /// and even, short and long, and a final short chunk.
    #[test]
    fn sum_pieces_equals_one_sum_per_chunk(
        len in 0usize..20_000,
        piece in prop_oneof_piece(),
        offset in 0usize..64,
        seed in proptest::num::u32::ANY,
    ) {
        let data = pattern(len + offset, seed);
        let data = &data[offset..];
        let expected: Vec<u32> = data.chunks(piece).map(|c| u32::from(reference(c))).collect();
        for kernel in Kernel::available() {
            let mut sums = vec![0xdead_beef; expected.len() + 1];
            dispatch::sum_pieces_supported(kernel, data, piece, &mut sums);
            let folded: Vec<u32> = sums[..expected.len()].iter().map(|&s| u32::from(fold(s))).collect();
            proptest::prop_assert_eq!(&folded, &expected, "kernel {}", kernel.name());
            proptest::prop_assert_eq!(sums[expected.len()], 0xdead_beef);
            let one_by_one: Vec<u32> = data.chunks(piece).map(|c| sum_with(kernel, c, 0)).collect();
            proptest::prop_assert_eq!(&sums[..expected.len()], &one_by_one[..]);
        }
    }
}

fn prop_oneof_piece() -> impl proptest::strategy::Strategy<Value = usize> {
    use proptest::strategy::Strategy;
    proptest::prop_oneof![1usize..200, 200usize..3000, proptest::strategy::Just(1448usize)]
        .prop_map(|p| p.max(1))
}

/// Folding by the definition: add the bits above 16 back in until none are left.
fn fold_by_definition(mut sum: u64) -> u16 {
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    sum as u16
}

#[test]
fn folds_match_the_definition_at_every_carry_edge() {
    // Every combination of 16-bit limbs at the values where carries start or stop.
    const EDGES: [u64; 6] = [0, 1, 0x7fff, 0x8000, 0xfffe, 0xffff];
    for a in EDGES {
        for b in EDGES {
            let narrow = (a << 16 | b) as u32;
            assert_eq!(fold(narrow), fold_by_definition(u64::from(narrow)), "{narrow:#x}");
            for c in EDGES {
                for d in EDGES {
                    let wide = a << 48 | b << 32 | c << 16 | d;
                    assert_eq!(fold64(wide), fold_by_definition(wide), "{wide:#x}");
                }
            }
        }
    }
}

proptest::proptest! {
    #[test]
    fn folds_match_the_definition(wide in proptest::num::u64::ANY) {
        proptest::prop_assert_eq!(fold64(wide), fold_by_definition(wide));
        proptest::prop_assert_eq!(fold(wide as u32), fold_by_definition(u64::from(wide as u32)));
    }
}

/// Which AVX2 path a buffer takes depends on the CPU (`x86::halves_256_bit_ops`), so
/// the all-vector one is checked directly here, on every even length it takes, from
/// every alignment within a vector, on irregular and all-ones bytes: the other path is
/// checked through the kernel by the tests above on every CPU.
#[cfg(target_arch = "x86_64")]
#[test]
fn avx2_short_and_block_paths_match_reference_below_2_kib() {
    if !std::is_x86_feature_detected!("avx2") {
        return;
    }
    const MAX_LEN: usize = 2048;
    let random = pattern(MAX_LEN + 32, 11);
    // All ones and all zeros: the lanes' most positive and most negative totals, which
    // the short path adds up in 32 bits.
    let all_ones = vec![0xffu8; MAX_LEN + 32];
    let zeros = vec![0u8; MAX_LEN + 32];
    for source in [&random, &all_ones, &zeros] {
        for align in 0..32 {
            let data = &source[align..align + MAX_LEN];
            // The little-endian word sum of each even prefix, grown a word at a time.
            let mut running: u64 = 0;
            for even in (2..MAX_LEN).step_by(2) {
                running += u64::from(u16::from_le_bytes([data[even - 2], data[even - 1]]));
                if even < 32 {
                    continue;
                }
                // SAFETY: AVX2 is present; `data` has `even` readable bytes, 32 <= even < 2048.
                let (short, blocks) = unsafe {
                    (x86::sum_avx2_short(data.as_ptr(), even), x86::sum_avx2_long(data.as_ptr(), even))
                };
                assert_eq!(fold64(short), fold64(running), "short path, len {even} align {align}");
                // The block path, which AMD Zen and Zen+ take at these lengths too.
                assert_eq!(fold64(blocks), fold64(running), "block path, len {even} align {align}");
            }
        }
    }
}
