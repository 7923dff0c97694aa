//! The virtio-net header (virtio 1.x §5.1.6): what a guest or the kernel's TAP says
//! about a frame's checksum and segmentation offloads.
//!
//! Three forms: the 12-byte v1 header (with `num_buffers`), the 10-byte legacy header
//! TAP uses by default, and the 24-byte UDP-tunnel form (virtio 1.4; see [`TunnelGso`]). Fields are little-endian (virtio 1.0 "modern"; TAP with
//! `TUNSETVNETLE` or on a little-endian host). A decoded [`Header`] is untrusted until
//! [`Header::validate`] has checked it against the frame it came with.

mod error;
mod fields;
mod header;
mod tunnel;
mod validate;

pub use error::VirtioError;
pub use fields::{ignore_driver_data_valid, Flags, GsoKind, GsoType};
pub use header::{Header, HeaderForm, HEADER_LEN_LEGACY, HEADER_LEN_V1};
pub use tunnel::{TunnelGso, HEADER_LEN_TUNNEL};
pub use validate::{ChecksumState, GsoRequest, ValidatedOffload};

#[cfg(test)]
#[path = "virtio/tests.rs"]
mod tests;
