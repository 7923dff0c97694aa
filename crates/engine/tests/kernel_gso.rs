//! GSO differential test: the same super-packets are segmented by the Linux kernel and
//! by `offlab_engine::gso`, and the segments are compared byte for byte.
//!
//! Kernel path (namespace A → namespace B):
//!   write(TAP, virtio header + super-packet) → bridge ofl-br → veth ofl-a, whose TSO,
//!   GSO, USO and tx checksumming are off, so `validate_xmit_skb` segments and checksums
//!   in software → veth peer ofl-b (GRO off) → AF_PACKET capture.
//! A bridge forwards at L2 and leaves every IP field alone, so what is captured is
//! exactly what the kernel's GSO produced. The TAP uses the 24-byte header
//! (`virtio_net_hdr_v1_hash_tunnel`) so UDP-tunnel GSO (Linux 6.17+) is accepted too; a
//! VLAN tag the stack kept as metadata is put back from PACKET_AUXDATA.
//!
//! Engine path: `wire::parse::parse_frame`, `GsoParams::from_virtio` on the same header
//! bytes (explicit parameters for tunnels, which the engine's virtio module does not
//! decode), `gso::segment` with full checksums.
//!
//! Before comparing, the kernel's own output is checked (transport checksums verify;
//! UFO fragments reassemble), so the engine is never held to a broken reference.

#[path = "kernel/gso_corpus.rs"]
mod corpus;
mod kernel;

use corpus::{GsoCase, Kind};
use kernel::diff::{self, Tally};
use kernel::frames;
use kernel::netns::{veth_pair, Netns};
use kernel::sock::{PacketSocket, Received, Tap};
use kernel::vnet::{self, VnetHdr};
use offlab_engine::gso::{self, GsoKind, GsoOutput, GsoParams, L4Checksum};
use offlab_engine::virtio::{self, HeaderForm, HEADER_LEN_V1};
use offlab_engine::wire::layout::Layout;
use offlab_engine::wire::parse::parse_frame;
use std::time::Duration;

/// Quiet time after which all segments of one super-packet are taken to have arrived.
const QUIET: Duration = Duration::from_millis(150);

/// What the egress veth offers, and so what the kernel leaves in each segment.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Checksums {
    /// No tx checksum offload: the kernel completes every checksum in software. Compared
    /// with the engine's `L4Checksum::Full`.
    Software,
    /// tx checksum offload on: the kernel leaves the transport checksum partial
    /// (CHECKSUM_PARTIAL, seen as NEEDS_CSUM on the peer's PACKET_VNET_HDR socket).
    /// Compared with the engine's `L4Checksum::Partial` and its `PartialChecksum`.
    Offloaded,
}

/// One segment: its bytes and, when its transport checksum was left partial, where the
/// checksum starts and where its field is (virtio `csum_start`, `csum_offset`).
#[derive(Debug, PartialEq, Eq)]
struct Segment {
    frame: Vec<u8>,
    partial: Option<(u16, u16)>,
}

struct GsoLab {
    tap: Tap,
    capture: PacketSocket,
    checksums: Checksums,
    // Dropped after the sockets (fields drop in order): namespaces go last.
    _b: Netns,
    _a: Netns,
}

impl GsoLab {
    fn new(tag: &str, checksums: Checksums) -> GsoLab {
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
        let tx_csum = checksums == Checksums::Offloaded;
        a.ethtool_features(
            "ofl-a",
            &[
                ("tx", tx_csum),
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
            "tx-udp_tnl-segmentation",
        ] {
            assert!(
                !a.ethtool_feature_on("ofl-a", feature),
                "ofl-a still has {feature} on"
            );
        }
        assert_eq!(a.ethtool_feature_on("ofl-a", "tx-checksumming"), tx_csum);
        for dev in ["ofl-br", "ofl-tap", "ofl-a"] {
            a.ip(&["link", "set", dev, "up"]);
        }
        b.ip(&["link", "set", "ofl-b", "up"]);
        let capture = b
            .enter(|| PacketSocket::bind("ofl-b", tx_csum))
            .expect("bind capture");
        GsoLab {
            tap,
            capture,
            checksums,
            _b: b,
            _a: a,
        }
    }

    /// What leaves the kernel for one super-packet, in wire order.
    fn kernel_segments(&self, case: &GsoCase) -> Vec<Segment> {
        self.capture.drain().expect("drain capture");
        let mut write = case.vnet.encode(vnet::TUNNEL_LEN);
        write.extend_from_slice(&case.frame);
        if let Err(e) = self.tap.write(&write) {
            panic!("[{}] the kernel refused the super-packet: {e}", case.name);
        }
        let at = match self.checksums {
            Checksums::Software => 0,
            Checksums::Offloaded => vnet::BASE_LEN,
        };
        let ours = |r: &Received| r.bytes.get(at + 6..at + 12) == Some(&corpus::SRC_MAC[..]);
        let got = self
            .capture
            .collect(ours, QUIET, Duration::from_secs(5))
            .expect("capture");
        got.into_iter().map(|r| kernel_segment(&r, at)).collect()
    }
}

/// A captured frame with the VLAN tag put back, and its partial-checksum location (the
/// kernel's offsets are relative to the frame without the tag it holds as metadata).
fn kernel_segment(r: &Received, vnet_len: usize) -> Segment {
    let frame = r.wire_frame(vnet_len);
    if vnet_len == 0 {
        return Segment {
            frame,
            partial: None,
        };
    }
    let h = VnetHdr::decode(&r.bytes);
    let tag = if r.vlan.is_some() { 4 } else { 0 };
    let partial =
        (h.flags & vnet::F_NEEDS_CSUM != 0).then_some((h.csum_start + tag, h.csum_offset));
    Segment { frame, partial }
}

/// The engine's parameters for a case. Untunnelled: decoded from the very virtio header
/// bytes the kernel was given (`virtio::Header::decode` + `GsoParams::from_virtio`),
/// then cross-checked against the case. Tunnelled: the engine's virtio module has no
/// UDP-tunnel fields, so they are given explicitly.
fn engine_params(
    case: &GsoCase,
    layout: &Layout,
    checksums: Checksums,
) -> Result<GsoParams, String> {
    let checksum = match checksums {
        Checksums::Software => L4Checksum::Full,
        Checksums::Offloaded => L4Checksum::Partial,
    };
    let explicit = GsoParams {
        kind: match case.kind {
            Kind::Tcp => GsoKind::Tcp,
            Kind::Udp => GsoKind::Udp,
            Kind::UdpFragment => GsoKind::UdpFragment,
        },
        segment_size: case.segment_size,
        checksum,
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
        checksum,
        ..decoded
    };
    if decoded != explicit {
        return Err(format!(
            "from_virtio gave {decoded:?}, the case says {explicit:?}"
        ));
    }
    Ok(decoded)
}

fn engine_segments(case: &GsoCase, checksums: Checksums) -> Result<Vec<Segment>, String> {
    let layout = parse_frame(&case.frame).map_err(|e| format!("parse_frame: {e:?}"))?;
    let params = engine_params(case, &layout, checksums)?;
    let mut out = GsoOutput::new();
    gso::segment(&case.frame, &layout, &params, &mut out).map_err(|e| format!("segment: {e:?}"))?;
    Ok(out
        .iter()
        .map(|s| {
            let mut frame = s.header.to_vec();
            frame.extend_from_slice(s.payload_slice(&case.frame));
            let partial = s.partial_checksum.map(|p| (p.start, p.offset));
            Segment { frame, partial }
        })
        .collect())
}

/// The kernel's own output must be valid (transport checksums verify, inner and, when
/// asked for, outer), or the comparison would hold the engine to a broken reference.
/// Partial checksums are first finished the way a NIC would.
fn kernel_output_is_sound(case: &GsoCase, kernel: &[Segment]) -> Result<(), String> {
    let kernel = &completed(kernel);
    let inner_ip = case.inner_ip;
    if case.kind == Kind::UdpFragment {
        return match frames::reassembled_udp_ok(kernel, inner_ip) {
            true => Ok(()),
            false => Err(
                "kernel fragments do not reassemble to a datagram whose checksum verifies".into(),
            ),
        };
    }
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

/// Checks a named difference on (case, kernel frames, engine frames), checksums finished.
type Holds = fn(&GsoCase, &[Vec<u8>], &[Vec<u8>]) -> bool;

/// A case where the engine knowingly differs from this kernel, and a check that the
/// observed difference is exactly that.
struct Known {
    case: &'static str,
    why: &'static str,
    holds: Holds,
}

const KNOWN: &[Known] = &[Known {
    case: "udp4 UFO, fragment size not a multiple of 8",
    why: "UFO with a gso_size that is not a multiple of 8: the kernel cuts fragments of gso_size bytes while \
          the offset field counts 8-byte units, so its fragments do not reassemble; the engine rounds the \
          fragment size down to a multiple of 8",
    holds: |case, kernel, engine| {
        let data = |f: &Vec<u8>| f.len() - case.inner_ip - 20;
        !frames::reassembled_udp_ok(kernel, case.inner_ip)
            && frames::reassembled_udp_ok(engine, case.inner_ip)
            && engine.iter().rev().skip(1).all(|f| data(f) % 8 == 0)
    },
}];

/// Segment bytes with any partial transport checksum finished, as a NIC would.
fn completed(segments: &[Segment]) -> Vec<Vec<u8>> {
    let finish = |s: &Segment| {
        let mut frame = s.frame.clone();
        if let Some((start, offset)) = s.partial {
            frames::finish_partial(&mut frame, usize::from(start), usize::from(offset));
        }
        frame
    };
    segments.iter().map(finish).collect()
}

/// Compares one case; a difference is either named (`KNOWN`) or a failure.
fn compare(case: &GsoCase, checksums: Checksums, kernel: &[Segment], tally: &mut Tally) {
    tally.cases += 1;
    tally.packets_in += 1;
    let engine = match engine_segments(case, checksums) {
        Ok(segments) => segments,
        Err(e) => {
            return tally.fail(
                &case.name,
                format!("engine refused what the kernel segmented: {e}"),
            )
        }
    };
    if let Some(known) = KNOWN.iter().find(|k| k.case == case.name) {
        if (known.holds)(case, &completed(kernel), &completed(&engine)) {
            return tally.name(known.why, 1);
        }
    }
    if let Err(e) = kernel_output_is_sound(case, kernel) {
        return tally.fail(&case.name, e);
    }
    if kernel.len() != engine.len() {
        let sizes = |v: &[Segment]| v.iter().map(|s| s.frame.len()).collect::<Vec<_>>();
        let (k, e) = (sizes(kernel), sizes(&engine));
        return tally.fail(
            &case.name,
            format!(
                "kernel made {} segments {k:?}, engine {} {e:?}",
                k.len(),
                e.len()
            ),
        );
    }
    for (i, (k, e)) in kernel.iter().zip(&engine).enumerate() {
        tally.packets_compared += 1;
        if let Some(d) = diff::bytes(&k.frame, &e.frame) {
            tally.fail(&case.name, format!("segment {i}: {d}"));
        }
        if k.partial != e.partial {
            let (k, e) = (k.partial, e.partial);
            tally.fail(
                &case.name,
                format!("segment {i}: partial checksum (start, offset) kernel {k:?}, engine {e:?}"),
            );
        }
    }
}

fn run(test: &str, tag: &str, checksums: Checksums, cases: Vec<GsoCase>) {
    if kernel::skip_unless_root(test) {
        return;
    }
    let lab = GsoLab::new(tag, checksums);
    let mut tally = Tally::default();
    for case in &cases {
        let kernel = lab.kernel_segments(case);
        assert!(
            !kernel.is_empty(),
            "[{}] the kernel emitted nothing (path broken?)",
            case.name
        );
        compare(case, checksums, &kernel, &mut tally);
    }
    tally.finish(test);
}

#[test]
fn gso_tcp_matches_kernel() {
    run(
        "gso_tcp_matches_kernel",
        "gt",
        Checksums::Software,
        corpus::tcp_cases(),
    );
}

#[test]
fn gso_udp_matches_kernel() {
    run(
        "gso_udp_matches_kernel",
        "gu",
        Checksums::Software,
        corpus::udp_cases(),
    );
}

#[test]
fn gso_vxlan_matches_kernel() {
    run(
        "gso_vxlan_matches_kernel",
        "gv",
        Checksums::Software,
        corpus::vxlan_cases(),
    );
}

/// IPv6 extension headers the engine refuses with a typed reason: AH, which the kernel
/// drops too (`ipv6_gso_segment` has no AH handler: nothing leaves it), and a Routing
/// type whose final destination the engine cannot read, which the kernel segments with
/// the sender's pseudo-header seed (it never recomputes it) and the engine refuses rather
/// than guess.
#[test]
fn gso_ipv6_refusals_match_kernel() {
    let test = "gso_ipv6_refusals_match_kernel";
    if kernel::skip_unless_root(test) {
        return;
    }
    let lab = GsoLab::new("gr", Checksums::Software);
    for (case, reason, kernel_drops) in corpus::refused_v6_cases() {
        let kernel = lab.kernel_segments(&case);
        assert_eq!(
            kernel.is_empty(),
            kernel_drops,
            "[{}] the kernel {} (expected it to {})",
            case.name,
            if kernel.is_empty() { "emitted nothing" } else { "segmented it" },
            if kernel_drops { "drop it" } else { "segment it" }
        );
        let layout = parse_frame(&case.frame).expect("parses");
        let params = engine_params(&case, &layout, Checksums::Software).expect("params");
        let mut out = GsoOutput::new();
        let got = gso::segment(&case.frame, &layout, &params, &mut out);
        assert_eq!(got, Err(reason), "[{}] engine", case.name);
    }
    eprintln!("{test}: 2 cases, the engine refused both with their reasons");
}

/// The same corpora with tx checksum offload on the egress veth: segments keep a
/// partial transport checksum, compared with the engine's `L4Checksum::Partial`.
#[test]
fn gso_partial_checksums_match_kernel() {
    let mut cases = corpus::tcp_cases();
    cases.extend(corpus::udp_cases());
    cases.extend(corpus::vxlan_cases());
    run(
        "gso_partial_checksums_match_kernel",
        "gp",
        Checksums::Offloaded,
        cases,
    );
}
