//! What the C API's integration tests share: frames, and the libraries cargo built.
#![allow(dead_code)] // each test binary uses part of it
use std::path::{Path, PathBuf};
use std::process::Command;

use offlab_engine_c::ofl_csum_of;

/// A TCP/IPv4 frame of flow `flow`, packet `k`, with a pseudo-header-only checksum
/// (GRO is told the checksums were validated).
pub fn tcp4(flow: u16, k: u32, payload: usize, flags: u8) -> Vec<u8> {
    let mut f = vec![0u8; 54 + payload];
    f[12..14].copy_from_slice(&[0x08, 0x00]);
    f[14] = 0x45;
    f[16..18].copy_from_slice(&((40 + payload) as u16).to_be_bytes());
    f[18..20].copy_from_slice(&(k as u16).to_be_bytes());
    f[20] = 0x40;
    f[22] = 64;
    f[23] = 6;
    f[26..30].copy_from_slice(&[10, 0, 0, 1]);
    f[30..34].copy_from_slice(&[10, 0, 0, 2]);
    let mut check = 0u16;
    unsafe { ofl_csum_of(f[14..34].as_ptr(), 20, &mut check) };
    f[24..26].copy_from_slice(&check.to_be_bytes());
    f[34..36].copy_from_slice(&(10000 + flow).to_be_bytes());
    f[36..38].copy_from_slice(&5201u16.to_be_bytes());
    f[38..42].copy_from_slice(&(1 + k * payload as u32).to_be_bytes());
    f[42..46].copy_from_slice(&1u32.to_be_bytes());
    f[46] = 5 << 4;
    f[47] = flags;
    f[48..50].copy_from_slice(&0xffffu16.to_be_bytes());
    f
}

/// The static library cargo built with this test. `cargo test` leaves it in the
/// `deps/` directory next to this test's executable (only `cargo build` copies it up
/// to `<target>/<profile>/`, which may be older), so that one comes first.
pub fn static_lib() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    let mut candidates = Vec::new();
    if let Some(deps) = exe.parent() {
        candidates.push(deps.join("libofflab_engine_c.a"));
        if let Some(profile_dir) = deps.parent() {
            candidates.push(profile_dir.join("libofflab_engine_c.a"));
        }
    }
    if let Ok(dir) = std::env::var("CARGO_TARGET_DIR") {
        candidates.push(Path::new(&dir).join("release/libofflab_engine_c.a"));
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    candidates.push(root.join("target/release/libofflab_engine_c.a"));
    if let Some(found) = candidates.iter().find(|p| p.exists()) {
        return found.clone();
    }
    // Not built yet (e.g. a debug `cargo test` of another crate): build it.
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = Command::new(cargo)
        .args(["build", "--release", "-p", "offlab-engine-capi"])
        .current_dir(&root)
        .status()
        .expect("run cargo build");
    assert!(status.success(), "cargo build of the C API failed");
    root.join("target/release/libofflab_engine_c.a")
}

/// The shared library as `make build` links it (scripts/capi-so.sh, symbol versions
/// from `map`), into `dir` under its SONAME. The script's output and status.
pub fn link_shared(map: &Path, dir: &Path) -> (PathBuf, std::process::Output) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let soname = format!("libofflab_engine_c.so.{}", offlab_engine_c::OFL_ABI_MAJOR);
    let so = dir.join(&soname);
    let out = Command::new(root.join("scripts/capi-so.sh"))
        .arg(static_lib())
        .arg(map)
        .arg(&so)
        .arg(&soname)
        .output()
        .expect("run scripts/capi-so.sh");
    (so, out)
}
