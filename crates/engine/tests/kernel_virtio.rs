//! virtio-net header differential test: what Linux accepts from a TAP writer (the
//! driver's side of a virtio device) against what `virtio::Header::validate` accepts.
//!
//! - Checksum start/offset: each header is written with its frame into a TAP with
//!   `IFF_VNET_HDR`; `virtio_net_hdr_to_skb` either takes it or the write fails with
//!   EINVAL. Everything the kernel refuses, the engine must refuse. Where the engine
//!   refuses what the kernel takes, the difference must be a named, stricter rule:
//!   a checksum start inside the L2/IP headers (Linux only refuses starts below 20
//!   bytes), a GSO checksum start other than the transport header, or a start at the
//!   transport header whose offset is not its checksum field.
//! - DATA_VALID: written by the TAP's writer on a UDP datagram with a wrong checksum,
//!   the kernel ignores it (the datagram is verified and dropped, `UdpInCsumErrors`),
//!   which is what the engine's `Header::from_driver` does with it.

mod kernel;

use kernel::frames::{self, Csum, Eth, Ip, Packet, Tcp, V6Ext, L4};
use kernel::netns::Netns;
use kernel::sock::Tap;
use kernel::vnet::{self, VnetHdr};
use offlab_engine::virtio::{self, HeaderForm, VirtioError, HEADER_LEN_V1};
use std::net::UdpSocket;
use std::time::Duration;

const TAP_MAC: [u8; 6] = [0x02, 0, 0, 0, 0, 0x02];

fn eth() -> Eth {
    Eth {
        dst: TAP_MAC,
        src: [0x02, 0, 0, 0, 0, 0x01],
        vlan: None,
    }
}

fn v4() -> Ip {
    Ip::V4 {
        src: [10, 9, 0, 1],
        dst: [10, 9, 0, 2],
        id: 1,
        ttl: 64,
        tos: 0,
        df: true,
    }
}

fn v6() -> Ip {
    let mut src = [0u8; 16];
    src[0] = 0xfd;
    src[15] = 1;
    let mut dst = src;
    dst[15] = 2;
    Ip::V6 {
        src,
        dst,
        hop_limit: 64,
        tclass: 0,
        flow_label: 0,
        dest_opts: false,
        ext: V6Ext::None,
    }
}

fn tcp_packet(ip: Ip, payload: usize) -> Packet {
    Packet {
        eth: eth(),
        ip,
        l4: L4::Tcp(Tcp {
            sport: 40000,
            dport: 5201,
            seq: 1,
            ack: 1,
            flags: frames::tcp_flags::ACK,
            window: 500,
            options: vec![],
        }),
        payload: vec![0x5a; payload],
    }
}

/// One header and frame to hand to both sides.
struct Case {
    what: String,
    header: VnetHdr,
    frame: Vec<u8>,
    /// Offset of the outermost transport header (the engine's lowest checksum start).
    transport: usize,
}

fn cases() -> Vec<Case> {
    let mut out = Vec::new();
    let partial = |start: usize, offset: u16| VnetHdr {
        flags: vnet::F_NEEDS_CSUM,
        csum_start: start as u16,
        csum_offset: offset,
        ..VnetHdr::default()
    };
    for (name, ip) in [("tcp4", v4()), ("tcp6", v6())] {
        let p = tcp_packet(ip, 100);
        let frame = p.build(Csum::Partial);
        let l4 = p.l4_offset();
        for start in [0, 6, 12, 14, 19, 20, 21, 24, 30, l4 - 1, l4, l4 + 1, l4 + 20, frame.len() - 2] {
            for offset in [0u16, 16] {
                out.push(Case {
                    what: format!("{name} NEEDS_CSUM start {start} offset {offset}"),
                    header: partial(start, offset),
                    frame: frame.clone(),
                    transport: l4,
                });
            }
        }
        // GSO: the kernel wants the start at or after the minimal IP header of the type.
        let big = tcp_packet(p.ip.clone(), 3000);
        let frame = big.build(Csum::Partial);
        let gso_type = if name == "tcp4" { vnet::GSO_TCPV4 } else { vnet::GSO_TCPV6 };
        for start in [14, 20, 34, 40, l4 - 1, l4, l4 + 4] {
            out.push(Case {
                what: format!("{name} GSO start {start}"),
                header: VnetHdr {
                    gso_type,
                    gso_size: 1000,
                    hdr_len: big.headers_len() as u16,
                    ..partial(start, 16)
                },
                frame: frame.clone(),
                transport: l4,
            });
        }
    }
    // VXLAN: the outer UDP checksum and the inner TCP one are both legitimate starts.
    let inner = tcp_packet(v4(), 200).build(Csum::Partial);
    let frame = frames::vxlan_frame(&eth(), &v4(), 50000, 42, &inner, Csum::Partial);
    let outer_l4 = frames::ETH_LEN + 20;
    let inner_l4 = outer_l4 + 8 + 8 + frames::ETH_LEN + 20;
    for (start, offset) in [(20, 6), (30, 6), (outer_l4, 6), (inner_l4, 16)] {
        out.push(Case {
            what: format!("vxlan NEEDS_CSUM start {start} offset {offset}"),
            header: partial(start, offset),
            frame: frame.clone(),
            transport: outer_l4,
        });
    }
    // Not IP: only the kernel's floor applies.
    let mut arp = [TAP_MAC, [0x02, 0, 0, 0, 0, 0x01]].concat();
    arp.extend_from_slice(&0x0806u16.to_be_bytes());
    arp.extend_from_slice(&[0u8; 28]);
    for start in [12, 19, 20, 24] {
        out.push(Case {
            what: format!("arp NEEDS_CSUM start {start}"),
            header: partial(start, 2),
            frame: arp.clone(),
            transport: 20,
        });
    }
    out
}

/// The engine's verdict on a case, from the very header bytes the kernel was given.
fn engine_verdict(case: &Case) -> Result<(), VirtioError> {
    let bytes = case.header.encode(HEADER_LEN_V1);
    let header = virtio::Header::decode(&bytes, HeaderForm::V1)?;
    header.validate(&case.frame, None).map(|_| ())
}

#[test]
fn checksum_start_and_offset_refused_where_the_kernel_refuses() {
    let test = "checksum_start_and_offset_refused_where_the_kernel_refuses";
    if kernel::skip_unless_root(test) {
        return;
    }
    let a = Netns::create("vc");
    let tap = a
        .enter(|| Tap::open("ofl-tap", HEADER_LEN_V1 as i32, libc::TUN_F_CSUM))
        .expect("open TAP");
    a.ip(&["link", "set", "ofl-tap", "up"]);
    let (mut both_refuse, mut both_accept, mut stricter) = (0, 0, Vec::new());
    let mut failures = Vec::new();
    for case in cases() {
        let mut write = case.header.encode(HEADER_LEN_V1);
        write.extend_from_slice(&case.frame);
        let kernel = tap.write(&write);
        let engine = engine_verdict(&case);
        match (&kernel, &engine) {
            (Err(e), Err(_)) if e.kind() == std::io::ErrorKind::InvalidInput => both_refuse += 1,
            (Ok(()), Ok(())) => both_accept += 1,
            (Ok(()), Err(VirtioError::ChecksumStartInHeaders))
                if usize::from(case.header.csum_start) < case.transport =>
            {
                stricter.push(case.what.clone())
            }
            (Ok(()), Err(VirtioError::ChecksumStartMismatch)) if case.header.gso_type != 0 => {
                stricter.push(case.what.clone())
            }
            // A start at the transport header with an offset that is not its checksum
            // field: completing it would overwrite other transport header bytes.
            (Ok(()), Err(VirtioError::ChecksumOffsetMismatch)) => stricter.push(case.what.clone()),
            _ => failures.push(format!("{}: kernel {kernel:?}, engine {engine:?}", case.what)),
        }
    }
    eprintln!(
        "{test}: both refuse {both_refuse}, both accept {both_accept}, engine stricter (start inside the \
         headers, or a GSO start off the transport header) {}",
        stricter.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(both_refuse > 0 && both_accept > 0, "the grid must exercise both outcomes");
}

/// Reads one counter of the `Udp:` lines of /proc/net/snmp inside `ns`.
fn udp_counter(ns: &Netns, name: &str) -> u64 {
    let snmp = ns.exec("cat", &["/proc/net/snmp"]).expect("read snmp");
    let lines: Vec<&str> = snmp.lines().filter(|l| l.starts_with("Udp:")).collect();
    let names: Vec<&str> = lines[0].split_whitespace().collect();
    let values: Vec<&str> = lines[1].split_whitespace().collect();
    let at = names.iter().position(|n| *n == name).expect("counter exists");
    values[at].parse().expect("a number")
}

#[test]
fn data_valid_from_a_tap_writer_is_ignored_by_the_kernel_as_by_the_engine() {
    let test = "data_valid_from_a_tap_writer_is_ignored_by_the_kernel_as_by_the_engine";
    if kernel::skip_unless_root(test) {
        return;
    }
    let ns = Netns::create("vd");
    let tap = ns
        .enter(|| Tap::open("ofl-tap", HEADER_LEN_V1 as i32, libc::TUN_F_CSUM))
        .expect("open TAP");
    ns.ip(&["link", "set", "ofl-tap", "address", "02:00:00:00:00:02"]);
    ns.ip(&["addr", "add", "10.9.0.2/24", "dev", "ofl-tap"]);
    ns.ip(&["link", "set", "ofl-tap", "up"]);
    let socket = ns
        .enter(|| UdpSocket::bind("10.9.0.2:5555"))
        .expect("bind UDP");
    socket.set_read_timeout(Some(Duration::from_millis(500))).unwrap();
    let datagram = |marker: u8, csum: Csum| {
        Packet {
            eth: eth(),
            ip: v4(),
            l4: L4::Udp { sport: 4000, dport: 5555 },
            payload: vec![marker; 32],
        }
        .build(csum)
    };
    let data_valid = VnetHdr {
        flags: 2, // VIRTIO_NET_HDR_F_DATA_VALID
        ..VnetHdr::default()
    }
    .encode(HEADER_LEN_V1);
    let errors_before = udp_counter(&ns, "InCsumErrors");
    tap.write(&[data_valid.clone(), datagram(1, Csum::Corrupt)].concat())
        .expect("the kernel takes the frame");
    tap.write(&[data_valid.clone(), datagram(2, Csum::Full)].concat())
        .expect("the kernel takes the frame");
    let mut buf = [0u8; 64];
    let (len, _) = socket.recv_from(&mut buf).expect("the good datagram arrives");
    assert_eq!(&buf[..len], &[2u8; 32], "only the datagram with the right checksum arrives");
    assert!(socket.recv_from(&mut buf).is_err(), "the corrupt one was delivered");
    assert_eq!(
        udp_counter(&ns, "InCsumErrors"),
        errors_before + 1,
        "the kernel verified the checksum despite DATA_VALID"
    );
    // The engine, taking the same header from a driver, drops the flag the same way.
    let header = virtio::Header::decode(&data_valid, HeaderForm::V1).unwrap().from_driver();
    let frame = datagram(1, Csum::Corrupt);
    let checksum = header.validate(&frame, None).unwrap().checksum;
    assert_eq!(checksum, virtio::ChecksumState::Complete);
    let mut raw = data_valid[0];
    assert!(virtio::ignore_driver_data_valid(&mut raw));
    assert_eq!(raw, 0);
}
