//! The frames a guest sends, prepared once: TCP segments of N flows (each flow `runs`
//! runs of `SEGMENTS_PER_RUN` MTU segments, interleaved flow by flow as a NIC or a switch
//! hands them on) or the same runs as 64 KiB TSO super-packets with their virtio-net
//! header, over IPv4 or IPv6, bare or inside VXLAN. The source sends them in a cycle, so a
//! flow's sequence numbers repeat every `runs` runs. Every payload byte is a function of
//! its flow and stream offset, so the sink can check any frame it gets, however the
//! backend merged or cut it.

use crate::wire::{self, sum, fold, Ip};

/// Segments per flow run: 45 × 1448 B = 65160 B, the largest TSO burst Linux sends
/// within the 64 KiB IP limit.
pub const SEGMENTS_PER_RUN: usize = 45;
const TCP_HEADER_LEN: usize = 32; // 20 + NOP NOP timestamp, as Linux sends
const TCP_FLAGS_ACK: u8 = 0x10;
pub const GSO_TCPV4: u8 = 1;
pub const GSO_TCPV6: u8 = 4;
pub const NEEDS_CSUM: u8 = 1;
pub const VXLAN_PORT: u16 = 4789;
/// What VXLAN adds around the inner frame: outer Ethernet, IPv4, UDP, VXLAN.
const VXLAN_OVERHEAD: usize = 14 + 20 + 8 + 8;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// MTU-size segments (what GRO merges).
    Mtu,
    /// One TSO super-packet per run (what GSO cuts).
    Tso,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SourceChecksum {
    /// NEEDS_CSUM with the pseudo-header sum in the field, as Linux sends with CSUM.
    Partial,
    /// Complete checksums, no flags (a driver without CSUM).
    Full,
}

#[derive(Debug, Clone, Copy)]
pub struct Workload {
    pub ip: Ip,
    pub vxlan: bool,
    pub flows: u16,
    pub shape: Shape,
    pub checksum: SourceChecksum,
    /// The guest interface's MTU (of the outer packet with VXLAN).
    pub mtu: usize,
    /// Runs per flow before its sequence numbers repeat. With one, a segment of the
    /// next cycle follows the run's last in time but not in sequence, so no merge crosses
    /// runs, and a GRO that may also prepend (DPDK's) splits runs where one that only
    /// appends (offlab-fwd's) does not: merge depths differ for the source's sake, not
    /// the backends'. More runs make the stream continue across them, as a real one does.
    pub runs: u16,
}

impl Workload {
    pub fn validate(&self) -> Result<(), String> {
        if self.flows == 0 || self.flows > 1024 {
            return Err(format!("--flows {}: give 1 to 1024", self.flows));
        }
        if self.shape == Shape::Tso && self.checksum == SourceChecksum::Full {
            return Err("TSO super-packets carry partial checksums: use --checksum partial".into());
        }
        if self.shape == Shape::Tso && self.vxlan {
            return Err("VXLAN super-packets need the UDP-tunnel GSO feature, which this source does not offer: use --shape mtu with --vxlan".into());
        }
        if self.vxlan && self.ip == Ip::V6 {
            return Err("--vxlan carries inner IPv4 only".into());
        }
        if !(576..=9000).contains(&self.mtu) {
            return Err(format!("--mtu {}: give 576 to 9000", self.mtu));
        }
        let most = LONGEST_STREAM / self.run_len();
        if self.runs == 0 || usize::from(self.runs) > most {
            return Err(format!("--runs {}: give 1 to {most} at this MTU (the sink's check covers {LONGEST_STREAM} bytes of a flow)",
                               self.runs));
        }
        Ok(())
    }

    /// Offset of the inner Ethernet header in the frame.
    pub fn inner_offset(&self) -> usize {
        if self.vxlan { VXLAN_OVERHEAD } else { 0 }
    }

    fn inner_mtu(&self) -> usize {
        self.mtu - if self.vxlan { VXLAN_OVERHEAD } else { 0 }
    }

    /// TCP payload per MTU segment.
    pub fn mss(&self) -> usize {
        self.inner_mtu() - self.ip.header_len() - TCP_HEADER_LEN
    }

    pub fn run_len(&self) -> usize {
        self.mss() * SEGMENTS_PER_RUN
    }

    /// A flow's bytes before its sequence numbers repeat.
    pub fn stream_len(&self) -> usize {
        self.run_len() * usize::from(self.runs)
    }

    /// Frame offset of the inner TCP header.
    pub fn tcp_offset(&self) -> usize {
        self.inner_offset() + 14 + self.ip.header_len()
    }

    pub fn headers_len(&self) -> usize {
        self.tcp_offset() + TCP_HEADER_LEN
    }
}

/// Payload byte at `offset` of `flow`'s run: flow 0's byte there, XOR the flow's key.
pub fn pattern(flow: u16, offset: usize) -> u8 {
    flow_zero_byte(offset) ^ flow_key(flow)
}

fn flow_zero_byte(offset: usize) -> u8 {
    (offset as u32).wrapping_mul(131).wrapping_add((offset / 251) as u32) as u8
}

/// What a flow's payload bytes are XORed with (`pattern`).
pub fn flow_key(flow: u16) -> u8 {
    (flow as u8).wrapping_mul(37)
}

/// The longest run a workload can have: IPv4 without VXLAN at the largest MTU
/// `Workload::validate` takes (9000), 45 segments of 9000 − 20 − 32 bytes.
pub const LONGEST_RUN: usize = (9000 - 20 - TCP_HEADER_LEN) * SEGMENTS_PER_RUN;

/// The most bytes a flow may carry before its sequence numbers repeat (`runs` runs):
/// 1 MiB, two longest runs and 16 of the 1500-byte MTU's.
pub const LONGEST_STREAM: usize = 1 << 20;

/// Flow 0's bytes at every offset of the longest stream, computed once: the sink checks
/// a payload against a slice of it in one pass (`verify`), where a byte-by-byte
/// `pattern` with its division took most of the load's CPU at 1 flow.
pub fn flow_zero_stream() -> &'static [u8] {
    static STREAM: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
    STREAM.get_or_init(|| (0..LONGEST_STREAM).map(flow_zero_byte).collect())
}

pub fn isn(flow: u16) -> u32 {
    0x1000_0000u32.wrapping_mul(u32::from(flow) + 1).wrapping_add(7)
}

pub const SOURCE_PORT_BASE: u16 = 10_000;
pub const DEST_PORT: u16 = 5201;

/// Every frame of one cycle of the workload, each with its 12-byte virtio-net header.
pub fn build(w: &Workload) -> Vec<Vec<u8>> {
    match w.shape {
        Shape::Mtu => (0..SEGMENTS_PER_RUN * usize::from(w.runs))
            .flat_map(|seg| (0..w.flows).map(move |flow| (flow, seg)))
            .map(|(flow, seg)| segment(w, flow, seg * w.mss(), w.mss(), seg as u16))
            .collect(),
        Shape::Tso => (0..usize::from(w.runs))
            .flat_map(|run| (0..w.flows).map(move |flow| (flow, run)))
            .map(|(flow, run)| segment(w, flow, run * w.run_len(), w.run_len(), 0))
            .collect(),
    }
}

/// One frame of `flow`: `len` payload bytes from stream offset `offset`.
pub(crate) fn segment(w: &Workload, flow: u16, offset: usize, len: usize, ip_id: u16) -> Vec<u8> {
    let mut f = vec![0u8; 12];
    if w.vxlan {
        let inner_len = 14 + w.ip.header_len() + TCP_HEADER_LEN + len;
        wire::ethernet(&mut f, Ip::V4);
        wire::ipv4(&mut f, 17, 8 + 8 + inner_len, 0, [10, 217, 0, 1], [10, 217, 0, 2]);
        let udp_len = (8 + 8 + inner_len) as u16;
        f.extend_from_slice(&(40_000 + flow).to_be_bytes());
        f.extend_from_slice(&VXLAN_PORT.to_be_bytes());
        f.extend_from_slice(&udp_len.to_be_bytes());
        f.extend_from_slice(&[0, 0]); // outer UDP checksum zero, as Linux's VXLAN default
        f.extend_from_slice(&[0x08, 0, 0, 0, 0, 0, 42, 0]);
    }
    wire::ethernet(&mut f, w.ip);
    let l4_len = TCP_HEADER_LEN + len;
    let ip_start = f.len();
    match w.ip {
        Ip::V4 => wire::ipv4(&mut f, 6, l4_len, (flow << 8).wrapping_add(ip_id), [10, 218, 1, 1], [10, 218, 2, 1]),
        Ip::V6 => wire::ipv6(&mut f, 6, l4_len),
    }
    let tcp_start = f.len();
    f.extend_from_slice(&(SOURCE_PORT_BASE + flow).to_be_bytes());
    f.extend_from_slice(&DEST_PORT.to_be_bytes());
    f.extend_from_slice(&isn(flow).wrapping_add(offset as u32).to_be_bytes());
    f.extend_from_slice(&1u32.to_be_bytes());
    f.extend_from_slice(&[(TCP_HEADER_LEN as u8 / 4) << 4, TCP_FLAGS_ACK, 0x02, 0x00, 0, 0, 0, 0]);
    f.extend_from_slice(&[1, 1, 8, 10, 0, 0, 0x10, 0, 0, 0, 0x20, 0]); // NOP NOP TS
    f.extend((offset..offset + len).map(|o| pattern(flow, o)));
    let pseudo = wire::pseudo_header(&f[ip_start..], w.ip, l4_len);
    let field = tcp_start + 16;
    let header = if w.checksum == SourceChecksum::Partial {
        f[field..field + 2].copy_from_slice(&fold(pseudo).to_be_bytes());
        let (gso, size) = match (w.shape, w.ip) {
            (Shape::Mtu, _) => (0, 0),
            (Shape::Tso, Ip::V4) => (GSO_TCPV4, w.mss() as u16),
            (Shape::Tso, Ip::V6) => (GSO_TCPV6, w.mss() as u16),
        };
        let hdr_len = if gso != 0 { (tcp_start - 12 + TCP_HEADER_LEN) as u16 } else { 0 };
        vnet_header(NEEDS_CSUM, gso, hdr_len, size, (tcp_start - 12) as u16, 16)
    } else {
        let value = !fold(sum(&f[tcp_start..], pseudo));
        f[field..field + 2].copy_from_slice(&value.to_be_bytes());
        [0; 12]
    };
    f[..12].copy_from_slice(&header);
    f
}

pub fn vnet_header(flags: u8, gso: u8, hdr_len: u16, gso_size: u16, csum_start: u16, csum_offset: u16) -> [u8; 12] {
    let mut h = [0u8; 12];
    h[0] = flags;
    h[1] = gso;
    h[2..4].copy_from_slice(&hdr_len.to_le_bytes());
    h[4..6].copy_from_slice(&gso_size.to_le_bytes());
    h[6..8].copy_from_slice(&csum_start.to_le_bytes());
    h[8..10].copy_from_slice(&csum_offset.to_le_bytes());
    h
}

/// FNV-1a over every prepared frame: equal on both backends' runs when the source
/// sent the same frames.
pub fn digest(frames: &[Vec<u8>]) -> u64 {
    frames.iter().flatten().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mtu_workload(flows: u16, runs: u16) -> Workload {
        Workload { ip: Ip::V4, vxlan: false, flows, shape: Shape::Mtu, checksum: SourceChecksum::Partial,
                   mtu: 1500, runs }
    }

    fn seq(w: &Workload, frame: &[u8]) -> u32 {
        let at = 12 + w.tcp_offset() + 4;
        u32::from_be_bytes(frame[at..at + 4].try_into().unwrap())
    }

    #[test]
    fn a_flows_sequence_continues_across_its_runs_and_repeats_only_with_the_cycle() {
        let w = mtu_workload(2, 3);
        let frames = build(&w);
        assert_eq!(frames.len(), 2 * 3 * SEGMENTS_PER_RUN);
        for flow in 0..2u16 {
            let seqs: Vec<u32> = frames.iter().skip(usize::from(flow)).step_by(2).map(|f| seq(&w, f)).collect();
            // one segment after the other, run after run: the next cycle's first repeats it
            let expected: Vec<u32> = (0..3 * SEGMENTS_PER_RUN)
                .map(|n| isn(flow).wrapping_add((n * w.mss()) as u32))
                .collect();
            assert_eq!(seqs, expected, "flow {flow}");
        }
        // one run: the sequence repeats every run, as before
        assert_eq!(build(&mtu_workload(2, 1)).len(), 2 * SEGMENTS_PER_RUN);
    }

    #[test]
    fn runs_beyond_what_the_sinks_check_covers_are_refused() {
        assert!(mtu_workload(1, 0).validate().unwrap_err().contains("--runs 0"));
        let most = LONGEST_STREAM / mtu_workload(1, 1).run_len();
        assert_eq!(most, 16);
        assert!(mtu_workload(1, 16).validate().is_ok());
        assert!(mtu_workload(1, 17).validate().unwrap_err().contains("give 1 to 16"));
    }
}
