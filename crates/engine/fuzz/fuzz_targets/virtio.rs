//! `Header::decode`/`validate` never panic on any header and frame; whatever validates
//! names offsets inside the frame, and encoding round-trips.
#![no_main]

use libfuzzer_sys::fuzz_target;
use offlab_engine::virtio::{ChecksumState, Header, HeaderForm};

fuzz_target!(|input: &[u8]| {
    let Some((form_byte, rest)) = input.split_first() else {
        return;
    };
    let form = if form_byte & 1 == 0 {
        HeaderForm::V1
    } else {
        HeaderForm::Legacy
    };
    let Ok(header) = Header::decode(rest, form) else {
        assert!(rest.len() < form.header_len());
        return;
    };
    let mut bytes = [0u8; 12];
    assert_eq!(header.encode(form, &mut bytes), Ok(form.header_len()));
    assert_eq!(&bytes[..form.header_len()], &rest[..form.header_len()]);

    let frame = &rest[form.header_len()..];
    let Ok(offload) = header.validate(frame, None) else {
        return;
    };
    if let ChecksumState::Partial { start, offset } = offload.checksum {
        assert!(start + offset + 2 <= frame.len());
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
