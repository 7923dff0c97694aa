//! The header every datagram carries: a magic, a sequence number and whether it was sent
//! in the measured window. Parsing is total: a short or foreign datagram is a typed
//! refusal, counted by the receiver, never a panic.

pub const MAGIC: u32 = 0x6f66_6c75; // "oflu"
pub const HEADER_LEN: usize = 13;
/// The smallest payload that carries the header (seed 000's 18 B "UDP 60" does).
pub const MIN_PAYLOAD: usize = HEADER_LEN;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    pub seq: u64,
    pub measured: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// Fewer bytes than a header.
    Short,
    /// Not one of ours (another sender on the port, or damaged).
    Magic,
}

impl Header {
    pub fn write(&self, out: &mut [u8]) {
        out[..4].copy_from_slice(&MAGIC.to_be_bytes());
        out[4..12].copy_from_slice(&self.seq.to_be_bytes());
        out[12] = u8::from(self.measured);
    }

    pub fn parse(bytes: &[u8]) -> Result<Header, Refusal> {
        if bytes.len() < HEADER_LEN {
            return Err(Refusal::Short);
        }
        if bytes[..4] != MAGIC.to_be_bytes() {
            return Err(Refusal::Magic);
        }
        let mut seq = [0u8; 8];
        seq.copy_from_slice(&bytes[4..12]);
        Ok(Header { seq: u64::from_be_bytes(seq), measured: bytes[12] == 1 })
    }
}

/// Split a buffer the kernel coalesced (UDP_GRO) into its datagrams: every `segment`
/// bytes, the last one possibly shorter. `segment` 0 means one datagram.
pub fn segments(buffer: &[u8], segment: usize) -> impl Iterator<Item = &[u8]> {
    let size = if segment == 0 { buffer.len().max(1) } else { segment };
    buffer.chunks(size)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_header_round_trips_and_foreign_bytes_are_refused() {
        let mut buf = [0u8; 32];
        Header { seq: 0x0102_0304_0506_0708, measured: true }.write(&mut buf);
        assert_eq!(Header::parse(&buf), Ok(Header { seq: 0x0102_0304_0506_0708, measured: true }));
        assert_eq!(Header::parse(&buf[..12]), Err(Refusal::Short));
        buf[0] ^= 0xff;
        assert_eq!(Header::parse(&buf), Err(Refusal::Magic));
        assert_eq!(Header::parse(&[]), Err(Refusal::Short));
    }

    #[test]
    fn a_coalesced_buffer_splits_into_its_datagrams() {
        let buf = vec![0u8; 3 * 1472 + 100];
        let sizes: Vec<usize> = segments(&buf, 1472).map(<[u8]>::len).collect();
        assert_eq!(sizes, vec![1472, 1472, 1472, 100]);
        assert_eq!(segments(&buf[..18], 0).count(), 1);
    }
}
