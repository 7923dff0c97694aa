//! Shared harness for the kernel differential tests (`kernel_gso.rs`, `kernel_gro.rs`).
//!
//! The tests hand the same packets to the Linux kernel (inside network namespaces this
//! process creates) and to `offlab-engine`, and compare what comes out. This module owns
//! everything that is not the comparison itself: namespaces and their clean-up, TAP and
//! AF_PACKET sockets, a packet builder with hand-computed checksums, the virtio-net header
//! as the kernel writes it, and a byte-diff for readable failures.
//!
//! The corpora (`gso_corpus.rs`, `gro_corpus/`) live here too but are included by the
//! test file that uses them (`#[path]`), so each binary compiles only its own.
//! Each test binary uses only part of this module, hence the `dead_code` allowance.
#![allow(dead_code)]

pub mod diff;
pub mod frames;
pub mod netns;
pub mod sock;
pub mod vnet;

/// The kernel tests need root (namespaces, TAP, AF_PACKET). Without it they report the
/// skip on stderr and pass, so `cargo test` still works for an unprivileged developer.
pub fn skip_unless_root(test: &str) -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    let euid = unsafe { libc::geteuid() };
    if euid != 0 {
        eprintln!("{test}: SKIPPED — needs root for network namespaces, TAP and AF_PACKET");
        return true;
    }
    false
}
