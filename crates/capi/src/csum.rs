//! The Internet checksum from small parts (the engine's `checksum` module).
//!
//! A *partial sum* is a `uint32_t` one's-complement sum of big-endian 16-bit words,
//! folded to at most 16 bits; pieces combine with `ofl_csum_combine`, pseudo-headers
//! give their own partial sums, and `ofl_csum_finish` gives the value stored in a
//! header. All functions are thread-safe and never allocate.

use core::ffi::c_char;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::panic::catch_unwind;

use engine::checksum::{self, Kernel};

use crate::{bytes, guard, out};

/// Value-returning functions cannot fail; a (never expected) panic gives 0.
fn pure<T: Default>(f: impl FnOnce() -> T + std::panic::UnwindSafe) -> T {
    catch_unwind(f).unwrap_or_default()
}

/// Partial sum of `len` bytes at `data` (an odd last byte padded with zero) added to
/// the partial sum `initial`, into `*sum`. Uses the fastest kernel the CPU has.
/// Returns `OFL_OK`, or `OFL_ERR_NULL` (`data` NULL with `len` > 0, or `sum` NULL).
///
/// # Safety
/// `data` must be readable for `len` bytes; `sum` must point to a `uint32_t`.
#[no_mangle]
pub unsafe extern "C" fn ofl_csum_sum(
    data: *const u8,
    len: usize,
    initial: u32,
    sum: *mut u32,
) -> i32 {
    guard(|| {
        // SAFETY: caller contract, NULL checked inside.
        let data = unsafe { bytes(data, len) }?;
        let sum = unsafe { out(sum) }?;
        *sum = checksum::sum(data, initial);
        Ok(0)
    })
}

/// The checksum field value for `len` bytes at `data` alone (`finish(sum(data, 0))`):
/// 0 means a buffer containing a correct checksum verifies.
///
/// # Safety
/// As `ofl_csum_sum`; `check` must point to a `uint16_t`.
#[no_mangle]
pub unsafe extern "C" fn ofl_csum_of(data: *const u8, len: usize, check: *mut u16) -> i32 {
    guard(|| {
        // SAFETY: caller contract, NULL checked inside.
        let data = unsafe { bytes(data, len) }?;
        let check = unsafe { out(check) }?;
        *check = checksum::of(data);
        Ok(0)
    })
}

/// Folds a one's-complement sum to 16 bits (end-around carry), not complemented.
#[no_mangle]
pub extern "C" fn ofl_csum_fold(sum: u32) -> u16 {
    pure(|| checksum::fold(sum))
}

/// The value to store in a checksum field: the complement of the folded sum.
#[no_mangle]
pub extern "C" fn ofl_csum_finish(sum: u32) -> u16 {
    pure(|| checksum::finish(sum))
}

/// Adds the partial sum `b` of a piece starting `offset_of_b` bytes after the start
/// of the piece summed in `a` (odd offsets swap the bytes, as they must).
#[no_mangle]
pub extern "C" fn ofl_csum_combine(a: u32, b: u32, offset_of_b: usize) -> u32 {
    pure(|| checksum::combine(a, b, offset_of_b))
}

/// New checksum field value after a 16-bit word it covers changed from `old` to `new`
/// (RFC 1624). All values in host order of the big-endian words.
#[no_mangle]
pub extern "C" fn ofl_csum_update16(check: u16, old: u16, new: u16) -> u16 {
    pure(|| checksum::update16(check, old, new))
}

/// `ofl_csum_update16` for an aligned 32-bit field (an IPv4 address, a sequence number).
#[no_mangle]
pub extern "C" fn ofl_csum_update32(check: u16, old: u32, new: u32) -> u16 {
    pure(|| checksum::update32(check, old, new))
}

/// Partial sum of the IPv4 pseudo-header: `src` and `dst` are 4 bytes each in network
/// order, `l4_len` the transport header + payload length.
///
/// # Safety
/// `src`/`dst` readable for 4 bytes; `sum` points to a `uint32_t`.
#[no_mangle]
pub unsafe extern "C" fn ofl_csum_pseudo_v4(
    src: *const u8,
    dst: *const u8,
    protocol: u8,
    l4_len: u16,
    sum: *mut u32,
) -> i32 {
    guard(|| {
        // SAFETY: caller contract, NULL checked inside.
        let (src, dst) = unsafe { (addr::<4>(src)?, addr::<4>(dst)?) };
        let sum = unsafe { out(sum) }?;
        *sum =
            checksum::pseudo_header_v4(Ipv4Addr::from(src), Ipv4Addr::from(dst), protocol, l4_len);
        Ok(0)
    })
}

/// Partial sum of the IPv6 pseudo-header: `src` and `dst` are 16 bytes each,
/// `l4_len` the upper-layer packet length.
///
/// # Safety
/// `src`/`dst` readable for 16 bytes; `sum` points to a `uint32_t`.
#[no_mangle]
pub unsafe extern "C" fn ofl_csum_pseudo_v6(
    src: *const u8,
    dst: *const u8,
    protocol: u8,
    l4_len: u32,
    sum: *mut u32,
) -> i32 {
    guard(|| {
        // SAFETY: caller contract, NULL checked inside.
        let (src, dst) = unsafe { (addr::<16>(src)?, addr::<16>(dst)?) };
        let sum = unsafe { out(sum) }?;
        *sum = checksum::pseudo_header_v6(
            &Ipv6Addr::from(src),
            &Ipv6Addr::from(dst),
            protocol,
            l4_len,
        );
        Ok(0)
    })
}

/// # Safety
/// `p` NULL or readable for `N` bytes.
unsafe fn addr<const N: usize>(p: *const u8) -> Result<[u8; N], crate::ofl_status> {
    // SAFETY: forwarded.
    let b = unsafe { bytes(p, N) }?;
    let mut a = [0u8; N];
    a.copy_from_slice(b);
    Ok(a)
}

/// Name of the summing kernel in use ("avx512vnni", "avx512", "avxvnni", "avx2", "sse2"
/// or "portable"); static string.
#[no_mangle]
pub extern "C" fn ofl_csum_kernel() -> *const c_char {
    let name = catch_unwind(|| match checksum::kernel() {
        Kernel::Avx512Vnni => c"avx512vnni",
        Kernel::Avx512 => c"avx512",
        Kernel::AvxVnni => c"avxvnni",
        Kernel::Avx2 => c"avx2",
        Kernel::Sse2 => c"sse2",
        Kernel::Portable => c"portable",
        // A kernel added to the engine after this list.
        _ => c"other",
    });
    name.unwrap_or(c"portable").as_ptr()
}
