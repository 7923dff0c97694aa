//! Frames and chains for the chained-input tests (`chain.rs`, `no_alloc_chain.rs`).
#![allow(dead_code)]

use offlab_engine_c::*;

/// A TCP/IPv4 frame of flow `flow` with `payload` bytes at `seq`, TCP flags `flags`,
/// and correct checksums (the GRO tests have them verified, not trusted).
pub fn tcp4(flow: u16, seq: u32, ip_id: u16, payload: usize, flags: u8) -> Vec<u8> {
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
    f[34..36].copy_from_slice(&(40000 + flow).to_be_bytes());
    f[36..38].copy_from_slice(&5201u16.to_be_bytes());
    f[38..42].copy_from_slice(&seq.to_be_bytes());
    f[42..46].copy_from_slice(&1u32.to_be_bytes());
    f[46] = 5 << 4;
    f[47] = flags;
    f[48..50].copy_from_slice(&0xffffu16.to_be_bytes());
    for (i, b) in f[54..].iter_mut().enumerate() {
        *b = (i as u32 * 13 + seq * 7 + 1) as u8;
    }
    let mut pseudo = 0u32;
    let (src, dst) = (f[26..].as_ptr(), f[30..].as_ptr());
    assert_eq!(unsafe { ofl_csum_pseudo_v4(src, dst, 6, (20 + payload) as u16, &mut pseudo) }, 0);
    let mut sum = 0u32;
    assert_eq!(unsafe { ofl_csum_sum(f[34..].as_ptr(), 20 + payload, pseudo, &mut sum) }, 0);
    f[50..52].copy_from_slice(&ofl_csum_finish(sum).to_be_bytes());
    f
}

/// The virtio-net header of a TCP/IPv4 super-packet built by `tcp4`.
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
