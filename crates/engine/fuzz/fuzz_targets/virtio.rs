//! `Header::decode`/`validate` never panic on any header and frame, in all three forms
//! (v1, legacy, and the 24-byte UDP-tunnel form); whatever validates names offsets
//! inside the frame and a checksum start after the L2/IP headers, a driver's header
//! never comes out as validated, and encoding round-trips.
#![no_main]

use libfuzzer_sys::fuzz_target;
use offlab_engine::virtio::{ChecksumState, Header, HeaderForm};

fuzz_target!(|input: &[u8]| {
    let Some((form_byte, rest)) = input.split_first() else {
        return;
    };
    let form = match form_byte % 3 {
        0 => HeaderForm::V1,
        1 => HeaderForm::Legacy,
        _ => HeaderForm::V1Tunnel,
    };
    let header = match Header::decode(rest, form) {
        Ok(header) => header,
        // Only the tunnel form has fields that can contradict each other.
        Err(_) if form == HeaderForm::V1Tunnel => return,
        Err(_) => {
            assert!(rest.len() < form.header_len());
            return;
        }
    };
    let mut bytes = [0u8; 24];
    assert_eq!(header.encode(form, &mut bytes), Ok(form.header_len()));
    if form == HeaderForm::V1Tunnel {
        // Bytes 12..20 are the hash report fields, which the engine neither reads nor
        // writes (zero on encode); the tunnel offsets (20..24) mean something only with
        // tunnel GSO, as csum_start does only with NEEDS_CSUM.
        assert_eq!(&bytes[..12], &rest[..12]);
        if header.tunnel.is_some() {
            assert_eq!(&bytes[20..24], &rest[20..24]);
        }
    } else {
        assert_eq!(&bytes[..form.header_len()], &rest[..form.header_len()]);
    }

    let frame = &rest[form.header_len()..];
    if let Ok(from_driver) = header.from_driver().validate(frame, None) {
        assert_ne!(from_driver.checksum, ChecksumState::Valid);
    }
    let Ok(offload) = header.validate(frame, None) else {
        return;
    };
    if let ChecksumState::Partial { start, offset } = offload.checksum {
        assert!(start + offset + 2 <= frame.len());
        // Linux's floor; with a layout, at or after the outermost transport header.
        assert!(start >= 20);
        if let Some(layout) = &offload.layout {
            let outermost = layout.tunnel.as_ref().map_or(layout.ip.l4_offset, |t| t.outer.l4_offset);
            assert!(start >= outermost);
        }
    }
    if let Some(tunnel) = header.tunnel {
        let layout = offload.layout.expect("tunnel gso needs a layout");
        assert!(layout.tunnel.is_some());
        assert!(usize::from(tunnel.inner_nh) < layout.frame_end());
        assert!(usize::from(tunnel.outer_th) < usize::from(tunnel.inner_nh));
    }
    if let Some(gso) = offload.gso {
        let layout = offload.layout.expect("gso needs a layout");
        assert_eq!(gso.headers_len, layout.headers_len());
        assert!(gso.headers_len <= layout.frame_end());
        assert!(gso.gso_size > 0);
        let payload = layout.payload().len();
        // The segments cover the payload exactly: none empty, none missing.
        let size = usize::from(gso.gso_size);
        assert!(gso.segments >= 2);
        assert!((gso.segments - 1) * size < payload && payload <= gso.segments * size);
        assert!(gso.headers_len + size <= 65535);
        // The same header validates the same way against the parsed layout.
        assert_eq!(header.validate(frame, Some(&layout)), Ok(offload));
        assert_eq!(header.validate_parsed(frame, &layout), Ok((offload.gso, offload.checksum)));
    }
});
