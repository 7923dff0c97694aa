//! offlab-engine: network offloads done in software.
//!
//! Pure packet code: no I/O, no allocation in the steady state, no panic on any input.
//! Malformed input comes back as a typed error whose `reason()` is a stable string a
//! forwarder can count drops by.
//!
//! - [`wire`]: typed zero-copy views of Ethernet, 802.1Q, IPv4, IPv6 (extension
//!   headers), TCP, UDP, VXLAN, Geneve and GRE, and [`wire::parse_frame`], which walks a
//!   frame into a [`wire::Layout`] (header offsets, protocols, tunnel layering).
//! - [`checksum`]: the Internet checksum from small parts (partial sums, combine,
//!   pseudo-headers, RFC 1624 incremental update) with AVX2 / AVX-512 kernels chosen at
//!   run time.
//! - [`virtio`]: the virtio-net header (v1 and legacy forms) and its strict validation
//!   against the frame it came with.
//! - `gso` and `gro`: segmentation and receive coalescing built on the above.
//!
//! ```
//! use offlab_engine::{checksum, virtio, wire};
//!
//! // An Ethernet + IPv4 + UDP frame carrying "hi".
//! let mut frame = vec![0u8; 44];
//! frame[12..14].copy_from_slice(&[0x08, 0x00]);
//! frame[14..34].copy_from_slice(&[
//!     0x45, 0, 0, 30, 0, 1, 0x40, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2,
//! ]);
//! frame[34..44].copy_from_slice(&[0x30, 0x39, 0x00, 0x35, 0, 10, 0, 0, b'h', b'i']);
//! wire::Ipv4Packet::new_checked(&mut frame[14..]).unwrap().fill_checksum();
//!
//! let layout = wire::parse_frame(&frame).unwrap();
//! assert_eq!(layout.ip.l4, wire::L4Proto::Udp);
//! assert_eq!(&frame[layout.payload()], b"hi");
//! assert_eq!(checksum::of(&frame[14..34]), 0); // a correct header sums to zero
//!
//! let header = virtio::Header::needs_csum(&layout).unwrap();
//! let offload = header.validate(&frame, Some(&layout)).unwrap();
//! assert_eq!(offload.checksum, virtio::ChecksumState::Partial { start: 34, offset: 6 });
//! ```
#![forbid(unsafe_op_in_unsafe_fn)]

pub mod chain;
pub mod checksum;
pub mod wire;
pub mod gro;
pub mod gso;
pub mod virtio;
