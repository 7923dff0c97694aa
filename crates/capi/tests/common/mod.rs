//! Frames shared by the C API's integration tests.
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
