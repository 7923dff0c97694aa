//! Builds real frames for GRO tests: Ethernet (optional VLAN), IPv4/IPv6 (optional
//! extension header), TCP/UDP with correct checksums, optionally inside VXLAN or
//! Geneve. Standalone (std only) so the property tests can include it too.
#![allow(dead_code)]

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum L4 {
    Tcp,
    Udp,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TunnelKind {
    Vxlan,
    Geneve,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tunnel {
    pub kind: TunnelKind,
    pub vni: u32,
    /// Geneve option bytes (a multiple of 4).
    pub options: Vec<u8>,
    pub outer_v6: bool,
    pub outer_id: u16,
    pub outer_df: bool,
    pub outer_ttl: u8,
    pub outer_udp_checksum: bool,
    pub src_port: u16,
}

impl Tunnel {
    pub fn vxlan(vni: u32) -> Tunnel {
        Tunnel {
            kind: TunnelKind::Vxlan,
            vni,
            options: Vec::new(),
            outer_v6: false,
            outer_id: 500,
            outer_df: false,
            outer_ttl: 64,
            outer_udp_checksum: false,
            src_port: 40000,
        }
    }

    pub fn geneve(vni: u32, options: Vec<u8>) -> Tunnel {
        Tunnel {
            kind: TunnelKind::Geneve,
            options,
            ..Tunnel::vxlan(vni)
        }
    }
}

/// One packet's fields; `build` makes the frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pkt {
    pub v6: bool,
    pub l4: L4,
    pub vlan: Option<u16>,
    pub src_mac: [u8; 6],
    pub src: u8,
    pub dst: u8,
    pub sport: u16,
    pub dport: u16,
    pub seq: u32,
    pub ack: u32,
    pub flags: u8,
    pub window: u16,
    pub tcp_options: Vec<u8>,
    pub ttl: u8,
    pub tos: u8,
    pub df: bool,
    pub id: u16,
    pub flow_label: u32,
    /// IPv6 Destination Options header body (6 bytes after next-header/length), if any.
    pub ext: Option<[u8; 6]>,
    pub ip_options: bool,
    pub payload: Vec<u8>,
    pub tunnel: Option<Tunnel>,
    pub bad_ip_checksum: bool,
    pub bad_l4_checksum: bool,
    pub zero_udp_checksum: bool,
}

pub const ACK: u8 = 0x10;
pub const PSH: u8 = 0x08;
pub const FIN: u8 = 0x01;
pub const SYN: u8 = 0x02;
pub const RST: u8 = 0x04;
pub const URG: u8 = 0x20;
pub const ECE: u8 = 0x40;
pub const CWR: u8 = 0x80;

impl Pkt {
    pub fn tcp4(seq: u32, len: usize) -> Pkt {
        Pkt {
            v6: false,
            l4: L4::Tcp,
            vlan: None,
            src_mac: [2, 0, 0, 0, 0, 1],
            src: 1,
            dst: 2,
            sport: 1000,
            dport: 2000,
            seq,
            ack: 77,
            flags: ACK,
            window: 512,
            tcp_options: vec![1, 1, 8, 10, 0, 0, 0, 1, 0, 0, 0, 2],
            ttl: 64,
            tos: 0,
            df: true,
            id: 100,
            flow_label: 0x12345,
            ext: None,
            ip_options: false,
            payload: (0..len).map(|i| (seq as usize + i) as u8).collect(),
            tunnel: None,
            bad_ip_checksum: false,
            bad_l4_checksum: false,
            zero_udp_checksum: false,
        }
    }

    pub fn tcp6(seq: u32, len: usize) -> Pkt {
        Pkt {
            v6: true,
            ..Pkt::tcp4(seq, len)
        }
    }

    pub fn udp4(len: usize) -> Pkt {
        Pkt {
            l4: L4::Udp,
            ..Pkt::tcp4(0, len)
        }
    }

    pub fn udp6(len: usize) -> Pkt {
        Pkt {
            v6: true,
            ..Pkt::udp4(len)
        }
    }

    /// The next TCP segment of this flow (sequence advanced, IPv4 ID + 1).
    pub fn next(&self, len: usize) -> Pkt {
        let seq = self.seq.wrapping_add(self.payload.len() as u32);
        let mut p = Pkt {
            seq,
            id: self.id.wrapping_add(1),
            ..self.clone()
        };
        p.payload = (0..len).map(|i| (seq as usize + i) as u8).collect();
        if let Some(t) = &mut p.tunnel {
            t.outer_id = t.outer_id.wrapping_add(1);
        }
        p
    }

    pub fn build(&self) -> Vec<u8> {
        let inner = self.inner_frame();
        let Some(t) = &self.tunnel else { return inner };
        let mut tunnel_header = Vec::new();
        match t.kind {
            TunnelKind::Vxlan => {
                tunnel_header.extend_from_slice(&[0x08, 0, 0, 0]);
                tunnel_header.extend_from_slice(&(t.vni << 8).to_be_bytes());
            }
            TunnelKind::Geneve => {
                tunnel_header.push((t.options.len() / 4) as u8);
                tunnel_header.push(0);
                tunnel_header.extend_from_slice(&0x6558u16.to_be_bytes());
                tunnel_header.extend_from_slice(&(t.vni << 8).to_be_bytes());
                tunnel_header.extend_from_slice(&t.options);
            }
        }
        let dport: u16 = if t.kind == TunnelKind::Vxlan {
            4789
        } else {
            6081
        };
        let mut udp_payload = tunnel_header;
        udp_payload.extend_from_slice(&inner);
        let ip = IpSpec {
            v6: t.outer_v6,
            src: 101,
            dst: 102,
            ttl: t.outer_ttl,
            tos: 0,
            df: t.outer_df,
            id: t.outer_id,
            flow_label: 7,
            ext: None,
            ip_options: false,
            bad_checksum: false,
        };
        let l4 = udp_segment(
            &ip,
            t.src_port,
            dport,
            &udp_payload,
            !t.outer_udp_checksum,
            false,
        );
        let mut frame = ethernet([2, 0, 0, 0, 0, 0xaa], None, ip.v6);
        frame.extend_from_slice(&ip.packet(17, &l4));
        frame
    }

    fn inner_frame(&self) -> Vec<u8> {
        let ip = IpSpec {
            v6: self.v6,
            src: self.src,
            dst: self.dst,
            ttl: self.ttl,
            tos: self.tos,
            df: self.df,
            id: self.id,
            flow_label: self.flow_label,
            ext: self.ext,
            ip_options: self.ip_options,
            bad_checksum: self.bad_ip_checksum,
        };
        let (proto, l4) = match self.l4 {
            L4::Tcp => (6, self.tcp_segment(&ip)),
            L4::Udp => (
                17,
                udp_segment(
                    &ip,
                    self.sport,
                    self.dport,
                    &self.payload,
                    self.zero_udp_checksum,
                    self.bad_l4_checksum,
                ),
            ),
        };
        let mut frame = ethernet(self.src_mac, self.vlan, self.v6);
        frame.extend_from_slice(&ip.packet(proto, &l4));
        frame
    }

    fn tcp_segment(&self, ip: &IpSpec) -> Vec<u8> {
        let header_len = 20 + self.tcp_options.len();
        let mut s = Vec::new();
        s.extend_from_slice(&self.sport.to_be_bytes());
        s.extend_from_slice(&self.dport.to_be_bytes());
        s.extend_from_slice(&self.seq.to_be_bytes());
        s.extend_from_slice(&self.ack.to_be_bytes());
        s.push(((header_len / 4) as u8) << 4);
        s.push(self.flags);
        s.extend_from_slice(&self.window.to_be_bytes());
        s.extend_from_slice(&[0, 0, 0, 0]);
        s.extend_from_slice(&self.tcp_options);
        s.extend_from_slice(&self.payload);
        let mut c = finish(sum(&s, ip.pseudo(6, s.len())));
        if self.bad_l4_checksum {
            c ^= 0x0101;
        }
        s[16..18].copy_from_slice(&c.to_be_bytes());
        s
    }
}

fn udp_segment(
    ip: &IpSpec,
    sport: u16,
    dport: u16,
    payload: &[u8],
    zero: bool,
    bad: bool,
) -> Vec<u8> {
    let mut s = Vec::new();
    s.extend_from_slice(&sport.to_be_bytes());
    s.extend_from_slice(&dport.to_be_bytes());
    s.extend_from_slice(&((8 + payload.len()) as u16).to_be_bytes());
    s.extend_from_slice(&[0, 0]);
    s.extend_from_slice(payload);
    if !zero {
        let mut c = finish(sum(&s, ip.pseudo(17, s.len())));
        if c == 0 {
            c = 0xffff;
        }
        if bad {
            c ^= 0x0101;
        }
        s[6..8].copy_from_slice(&c.to_be_bytes());
    }
    s
}

fn ethernet(src: [u8; 6], vlan: Option<u16>, v6: bool) -> Vec<u8> {
    let mut f = vec![2, 0, 0, 0, 0, 2];
    f.extend_from_slice(&src);
    if let Some(tci) = vlan {
        f.extend_from_slice(&0x8100u16.to_be_bytes());
        f.extend_from_slice(&tci.to_be_bytes());
    }
    f.extend_from_slice(&(if v6 { 0x86ddu16 } else { 0x0800 }).to_be_bytes());
    f
}

struct IpSpec {
    v6: bool,
    src: u8,
    dst: u8,
    ttl: u8,
    tos: u8,
    df: bool,
    id: u16,
    flow_label: u32,
    ext: Option<[u8; 6]>,
    ip_options: bool,
    bad_checksum: bool,
}

impl IpSpec {
    fn addr4(last: u8) -> [u8; 4] {
        [10, 0, 0, last]
    }

    fn addr6(last: u8) -> [u8; 16] {
        let mut a = [0u8; 16];
        a[0] = 0xfd;
        a[15] = last;
        a
    }

    fn pseudo(&self, proto: u8, len: usize) -> u32 {
        let mut p = Vec::new();
        if self.v6 {
            p.extend_from_slice(&Self::addr6(self.src));
            p.extend_from_slice(&Self::addr6(self.dst));
            p.extend_from_slice(&(len as u32).to_be_bytes());
            p.extend_from_slice(&[0, 0, 0, proto]);
        } else {
            p.extend_from_slice(&Self::addr4(self.src));
            p.extend_from_slice(&Self::addr4(self.dst));
            p.extend_from_slice(&[0, proto]);
            p.extend_from_slice(&(len as u16).to_be_bytes());
        }
        sum(&p, 0)
    }

    fn packet(&self, proto: u8, l4: &[u8]) -> Vec<u8> {
        let mut h = Vec::new();
        if self.v6 {
            let word = (6u32 << 28) | (u32::from(self.tos) << 20) | (self.flow_label & 0xfffff);
            h.extend_from_slice(&word.to_be_bytes());
            let ext_len = if self.ext.is_some() { 8 } else { 0 };
            h.extend_from_slice(&((l4.len() + ext_len) as u16).to_be_bytes());
            h.push(if self.ext.is_some() { 60 } else { proto });
            h.push(self.ttl);
            h.extend_from_slice(&Self::addr6(self.src));
            h.extend_from_slice(&Self::addr6(self.dst));
            if let Some(body) = self.ext {
                h.push(proto);
                h.push(0);
                h.extend_from_slice(&body);
            }
        } else {
            let ihl = if self.ip_options { 6 } else { 5 };
            h.push(0x40 | ihl);
            h.push(self.tos);
            h.extend_from_slice(&((ihl as usize * 4 + l4.len()) as u16).to_be_bytes());
            h.extend_from_slice(&self.id.to_be_bytes());
            h.extend_from_slice(&(if self.df { 0x4000u16 } else { 0 }).to_be_bytes());
            h.push(self.ttl);
            h.push(proto);
            h.extend_from_slice(&[0, 0]);
            h.extend_from_slice(&Self::addr4(self.src));
            h.extend_from_slice(&Self::addr4(self.dst));
            if self.ip_options {
                h.extend_from_slice(&[1, 1, 1, 0]);
            }
            let mut c = finish(sum(&h, 0));
            if self.bad_checksum {
                c ^= 0x0101;
            }
            h[10..12].copy_from_slice(&c.to_be_bytes());
        }
        h.extend_from_slice(l4);
        h
    }
}

/// Plain one's-complement sum (folded), the textbook way.
pub fn sum(data: &[u8], initial: u32) -> u32 {
    let mut s = u64::from(initial);
    for pair in data.chunks(2) {
        let word = if pair.len() == 2 {
            u16::from_be_bytes([pair[0], pair[1]])
        } else {
            u16::from_be_bytes([pair[0], 0])
        };
        s += u64::from(word);
    }
    while s > 0xffff {
        s = (s & 0xffff) + (s >> 16);
    }
    s as u32
}

pub fn finish(s: u32) -> u16 {
    !(s as u16)
}
