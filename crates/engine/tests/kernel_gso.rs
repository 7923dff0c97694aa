//! GSO differential test: the same super-packets are segmented by the Linux kernel and
//! by `offlab_engine::gso`, and the segments are compared byte for byte.
//!
//! Kernel path (namespace A → namespace B):
//!   write(TAP, virtio header + super-packet) → bridge ofl-br → veth ofl-a, whose TSO,
//!   GSO, USO and tx checksumming are off, so `validate_xmit_skb` segments and checksums
//!   in software → veth peer ofl-b (GRO off) → AF_PACKET capture.
//! A bridge forwards at L2 and leaves every IP field alone, so what is captured is
//! exactly what the kernel's GSO produced.
//!
//! Engine path: `wire::parse::parse_frame` + `gso::segment` with full checksums.

#[path = "kernel/gso_corpus.rs"]
mod corpus;
mod kernel;

use corpus::{GsoCase, Kind};
use kernel::diff::{self, Tally};
use kernel::frames;
use kernel::netns::{veth_pair, Netns};
use kernel::sock::{PacketSocket, Tap};
use kernel::vnet;
use offlab_engine::gso::{self, GsoKind, GsoOutput, GsoParams, L4Checksum};
use offlab_engine::virtio::{self, HeaderForm, HEADER_LEN_V1};
use offlab_engine::wire::layout::Layout;
use offlab_engine::wire::parse::parse_frame;
use std::time::Duration;

/// Quiet time after which all segments of one super-packet are taken to have arrived.
const QUIET: Duration = Duration::from_millis(150);

struct GsoLab {
    tap: Tap,
    capture: PacketSocket,
    // Dropped after the sockets (fields drop in order): namespaces go last.
    _b: Netns,
    _a: Netns,
}

impl GsoLab {
    fn new(tag: &str) -> GsoLab {
        let a = Netns::create(&format!("{tag}a"));
        let b = Netns::create(&format!("{tag}b"));
        a.ip(&["link", "add", "ofl-br", "type", "bridge"]);
        veth_pair(&a, "ofl-a", &b, "ofl-b");
        // Offload bits only govern what the kernel may hand *us* on reads; writes may
        // carry any GSO type. The 24-byte header lets the TAP accept UDP-tunnel GSO.
        let offload = libc::TUN_F_CSUM
            | libc::TUN_F_TSO4
            | libc::TUN_F_TSO6
            | libc::TUN_F_USO4
            | libc::TUN_F_USO6;
        let tap = a
            .enter(|| Tap::open("ofl-tap", vnet::TUNNEL_LEN as i32, offload))
            .expect("open TAP");
        for dev in ["ofl-br", "ofl-tap", "ofl-a"] {
            a.ip(&["link", "set", dev, "mtu", "9000"]);
        }
        b.ip(&["link", "set", "ofl-b", "mtu", "9000"]);
        a.ip(&["link", "set", "ofl-tap", "master", "ofl-br"]);
        a.ip(&["link", "set", "ofl-a", "master", "ofl-br"]);
        a.ethtool_features(
            "ofl-a",
            &[
                ("tx", false),
                ("tso", false),
                ("gso", false),
                ("tx-udp-segmentation", false),
                ("tx-udp_tnl-segmentation", false),
                ("tx-udp_tnl-csum-segmentation", false),
            ],
        );
        for feature in [
            "tcp-segmentation-offload",
            "tx-udp-segmentation",
            "tx-checksumming",
            "tx-udp_tnl-segmentation",
        ] {
            assert!(
                !a.ethtool_feature_on("ofl-a", feature),
                "ofl-a still has {feature} on"
            );
        }
        for dev in ["ofl-br", "ofl-tap", "ofl-a"] {
            a.ip(&["link", "set", dev, "up"]);
        }
        b.ip(&["link", "set", "ofl-b", "up"]);
        let capture = b
            .enter(|| PacketSocket::bind("ofl-b", false))
            .expect("bind capture");
        GsoLab {
            tap,
            capture,
            _b: b,
            _a: a,
        }
    }

    /// What leaves the kernel for one super-packet, in wire order.
    fn kernel_segments(&self, case: &GsoCase) -> Vec<Vec<u8>> {
        self.capture.drain().expect("drain capture");
        let mut write = case.vnet.encode(vnet::TUNNEL_LEN);
        write.extend_from_slice(&case.frame);
        if let Err(e) = self.tap.write(&write) {
            panic!("[{}] the kernel refused the super-packet: {e}", case.name);
        }
        let ours = |r: &kernel::sock::Received| r.bytes.get(6..12) == Some(&corpus::SRC_MAC[..]);
        let got = self
            .capture
            .collect(ours, QUIET, Duration::from_secs(5))
            .expect("capture");
        got.into_iter().map(|r| r.wire_frame(0)).collect()
    }
}

/// The engine's parameters for a case. Untunnelled: decoded from the very virtio header
/// bytes the kernel was given (`virtio::Header::decode` + `GsoParams::from_virtio`),
/// then cross-checked against the case. Tunnelled: the engine's virtio module has no
/// UDP-tunnel fields, so they are given explicitly.
fn engine_params(case: &GsoCase, layout: &Layout) -> Result<GsoParams, String> {
    let explicit = GsoParams {
        kind: match case.kind {
            Kind::Tcp => GsoKind::Tcp,
            Kind::Udp => GsoKind::Udp,
            Kind::UdpFragment => GsoKind::UdpFragment,
        },
        segment_size: case.segment_size,
        // The kernel's egress veth has no checksum offload, so it completes every
        // checksum in software: compare with the engine's full checksums.
        checksum: L4Checksum::Full,
        // A TAP cannot ask for TCP_FIXEDID, so the kernel increments the ID.
        fixed_ip_id: false,
        ecn: case.ecn,
        outer_udp_checksum: case.outer_udp_checksum.unwrap_or(false),
    };
    if case.vnet.tunnel.is_some() {
        return Ok(explicit);
    }
    let bytes = case.vnet.encode(HEADER_LEN_V1);
    let header = virtio::Header::decode(&bytes, HeaderForm::V1)
        .map_err(|e| format!("virtio decode: {e:?}"))?;
    let decoded =
        GsoParams::from_virtio(&header, layout).map_err(|e| format!("from_virtio: {e:?}"))?;
    if decoded.checksum != L4Checksum::Partial {
        return Err(format!(
            "NEEDS_CSUM header did not give partial checksums: {decoded:?}"
        ));
    }
    let decoded = GsoParams {
        checksum: L4Checksum::Full,
        ..decoded
    };
    if decoded != explicit {
        return Err(format!(
            "from_virtio gave {decoded:?}, the case says {explicit:?}"
        ));
    }
    Ok(decoded)
}

fn engine_segments(case: &GsoCase) -> Result<Vec<Vec<u8>>, String> {
    let layout = parse_frame(&case.frame).map_err(|e| format!("parse_frame: {e:?}"))?;
    let params = engine_params(case, &layout)?;
    let mut out = GsoOutput::new();
    gso::segment(&case.frame, &layout, &params, &mut out).map_err(|e| format!("segment: {e:?}"))?;
    Ok(out
        .iter()
        .map(|s| {
            let mut bytes = s.header.to_vec();
            bytes.extend_from_slice(s.payload_slice(&case.frame));
            bytes
        })
        .collect())
}

/// The kernel's own output must be valid (transport checksums verify, inner and, when
/// asked for, outer), or the comparison would hold the engine to a broken reference.
fn kernel_output_is_sound(case: &GsoCase, kernel: &[Vec<u8>]) -> Result<(), String> {
    let inner_ip = case.inner_ip;
    for (i, seg) in kernel.iter().enumerate() {
        if !frames::l4_checksum_ok(seg, inner_ip) {
            return Err(format!(
                "kernel segment {i}: inner transport checksum does not verify"
            ));
        }
        if case.outer_udp_checksum == Some(true) && !frames::l4_checksum_ok(seg, frames::ETH_LEN) {
            return Err(format!(
                "kernel segment {i}: outer UDP checksum does not verify"
            ));
        }
    }
    Ok(())
}

fn compare(case: &GsoCase, kernel: &[Vec<u8>], tally: &mut Tally) {
    tally.cases += 1;
    tally.packets_in += 1;
    let engine = match engine_segments(case) {
        Ok(segments) => segments,
        Err(e) => {
            return tally.fail(
                &case.name,
                format!("engine refused what the kernel segmented: {e}"),
            )
        }
    };
    if kernel.len() != engine.len() {
        let sizes = |v: &[Vec<u8>]| v.iter().map(Vec::len).collect::<Vec<_>>();
        return tally.fail(
            &case.name,
            format!(
                "kernel made {} segments {:?}, engine {} {:?}",
                kernel.len(),
                sizes(kernel),
                engine.len(),
                sizes(&engine)
            ),
        );
    }
    for (i, (k, e)) in kernel.iter().zip(&engine).enumerate() {
        tally.packets_compared += 1;
        if let Some(d) = diff::bytes(k, e) {
            tally.fail(&case.name, format!("segment {i}: {d}"));
        }
    }
}

fn run(test: &str, tag: &str, cases: Vec<GsoCase>) {
    if kernel::skip_unless_root(test) {
        return;
    }
    let lab = GsoLab::new(tag);
    let mut tally = Tally::default();
    for case in &cases {
        let kernel = lab.kernel_segments(case);
        assert!(
            !kernel.is_empty(),
            "[{}] the kernel emitted nothing (path broken?)",
            case.name
        );
        if let Err(e) = kernel_output_is_sound(case, &kernel) {
            panic!("[{}] {e}", case.name);
        }
        compare(case, &kernel, &mut tally);
    }
    tally.finish(test);
}

#[test]
fn gso_tcp_matches_kernel() {
    run("gso_tcp_matches_kernel", "gt", corpus::tcp_cases());
}

#[test]
fn gso_udp_matches_kernel() {
    run("gso_udp_matches_kernel", "gu", corpus::udp_cases());
}

#[test]
fn gso_vxlan_matches_kernel() {
    run("gso_vxlan_matches_kernel", "gv", corpus::vxlan_cases());
}
