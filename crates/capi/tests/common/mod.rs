//! What the C API's integration tests share: frames, and the libraries cargo built.
#![allow(dead_code)] // each test binary uses part of it
use std::path::{Path, PathBuf};
use std::process::Command;

use offlab_engine_c::*;

/// A TCP/IPv4 frame from 10.0.0.1:`sport` to 10.0.0.2:5201 with `payload` bytes at
/// `seq` (each byte a function of its index and `seq`), IPv4 ID `ip_id`, TCP flags
/// `flags`, a correct IPv4 checksum and, with `full`, a correct TCP checksum (else the
/// pseudo-header sum only, as a sender leaves it for a device to finish).
pub fn tcp4_frame(sport: u16, seq: u32, ip_id: u16, payload: usize, flags: u8, full: bool) -> Vec<u8> {
    let mut f = vec![0u8; 54 + payload];
    f[..12].copy_from_slice(&[2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1]);
    f[12..14].copy_from_slice(&[0x08, 0x00]);
    f[14] = 0x45;
    f[16..18].copy_from_slice(&((40 + payload) as u16).to_be_bytes());
    f[18..20].copy_from_slice(&ip_id.to_be_bytes());
    f[20] = 0x40;
    f[22] = 64;
    f[23] = 6;
    f[26..30].copy_from_slice(&[10, 0, 0, 1]);
    f[30..34].copy_from_slice(&[10, 0, 0, 2]);
    let mut check = 0u16;
    assert_eq!(unsafe { ofl_csum_of(f[14..34].as_ptr(), 20, &mut check) }, 0);
    f[24..26].copy_from_slice(&check.to_be_bytes());
    f[34..36].copy_from_slice(&sport.to_be_bytes());
    f[36..38].copy_from_slice(&5201u16.to_be_bytes());
    f[38..42].copy_from_slice(&seq.to_be_bytes());
    f[42..46].copy_from_slice(&1u32.to_be_bytes());
    f[46] = 5 << 4;
    f[47] = flags;
    f[48..50].copy_from_slice(&0xffffu16.to_be_bytes());
    // Byte i of the payload is (13 i + 7 seq + 1) mod 256, which repeats every 256 bytes:
    // one period is built, then copied (a slice copy is one step under Miri, which runs
    // the allocator tests; a loop over 64 KiB payloads took it minutes).
    let period: Vec<u8> = (0..256u32).map(|i| (i * 13 + seq * 7 + 1) as u8).collect();
    for chunk in f[54..].chunks_mut(256) {
        chunk.copy_from_slice(&period[..chunk.len()]);
    }
    let mut pseudo = 0u32;
    let (src, dst) = (f[26..].as_ptr(), f[30..].as_ptr());
    assert_eq!(unsafe { ofl_csum_pseudo_v4(src, dst, 6, (20 + payload) as u16, &mut pseudo) }, 0);
    let check = if full {
        let mut sum = 0u32;
        assert_eq!(unsafe { ofl_csum_sum(f[34..].as_ptr(), 20 + payload, pseudo, &mut sum) }, 0);
        ofl_csum_finish(sum)
    } else {
        ofl_csum_fold(pseudo)
    };
    f[50..52].copy_from_slice(&check.to_be_bytes());
    f
}

/// A TCP/IPv4 frame of flow `flow`, packet `k` of `payload`-byte packets, with the
/// pseudo-header sum only (GRO is told the checksums were validated).
pub fn tcp4(flow: u16, k: u32, payload: usize, flags: u8) -> Vec<u8> {
    tcp4_frame(10000 + flow, 1 + k * payload as u32, k as u16, payload, flags, false)
}

/// The virtio-net header of a TCP/IPv4 super-packet built by `tcp4_frame`.
pub fn tso_vnet(mss: u16) -> ofl_vnet_hdr {
    ofl_vnet_hdr {
        flags: OFL_VNET_F_NEEDS_CSUM,
        gso_type: OFL_VNET_GSO_TCPV4,
        hdr_len: 54,
        gso_size: mss,
        csum_start: 34,
        csum_offset: 16,
        ..ofl_vnet_hdr::default()
    }
}

/// `frame` cut at `cuts` (sorted, each at most the frame length; repeats give empty
/// iovecs), as C iovecs pointing into it.
pub fn iovecs(frame: &[u8], cuts: &[usize]) -> Vec<ofl_iovec> {
    let mut out = Vec::new();
    let mut start = 0;
    for &cut in cuts.iter().chain([frame.len()].iter()) {
        out.push(ofl_iovec { base: frame[start..].as_ptr(), len: cut - start });
        start = cut;
    }
    out
}

/// The static library cargo built with this test: the newest of the copies cargo
/// leaves. `cargo test` writes it into `deps/` under a hashed name next to this test's
/// executable (only `cargo build` is sure to copy it up to `<target>/<profile>/`, which
/// may be older), and a checkout built when the crate was also a cdylib has a stale
/// unhashed copy in `deps/`: the modification time picks the right one.
pub fn static_lib() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    let mut candidates = Vec::new();
    if let Some(deps) = exe.parent() {
        if let Ok(entries) = std::fs::read_dir(deps) {
            candidates.extend(entries.flatten().map(|e| e.path()).filter(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with("libofflab_engine_c") && n.ends_with(".a"))
            }));
        }
        if let Some(profile_dir) = deps.parent() {
            candidates.push(profile_dir.join("libofflab_engine_c.a"));
        }
    }
    if let Ok(dir) = std::env::var("CARGO_TARGET_DIR") {
        candidates.push(Path::new(&dir).join("release/libofflab_engine_c.a"));
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    candidates.push(root.join("target/release/libofflab_engine_c.a"));
    let newest = candidates
        .iter()
        .filter_map(|p| Some((std::fs::metadata(p).ok()?.modified().ok()?, p)))
        .max_by_key(|(modified, _)| *modified);
    if let Some((_, found)) = newest {
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
