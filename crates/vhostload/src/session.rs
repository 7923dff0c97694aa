//! Connecting both guests for a workload: the sending guest must have negotiated the
//! offloads its frames use, the receiving guest's buffers follow its features.

use std::time::Duration;

use crate::frames::{Shape, SourceChecksum, Workload};
use crate::guest::{feature_names, Guest};
use crate::load::{Sink, Source};
use crate::wire::Ip;
use crate::{receive_buffer_len, BIG_BUFFER};

pub struct Setup<'a> {
    pub source: &'a str,
    pub sink: &'a str,
    pub workload: Workload,
    /// Feature bits each driver wants (it acknowledges those the device offers).
    pub source_features: u64,
    pub sink_features: u64,
    pub queue_size: u16,
    /// How long to keep trying to connect while the backend starts.
    pub connect_wait: Duration,
}

/// Connects both guests, lays out the source's frames and the sink's buffers.
pub fn connect(setup: &Setup) -> Result<(Source, Sink), String> {
    let w = &setup.workload;
    w.validate()?;
    if !setup.queue_size.is_power_of_two() || !(64..=1024).contains(&setup.queue_size) {
        return Err(format!("queue size {}: a power of two from 64 to 1024", setup.queue_size));
    }
    let frames_size = usize::from(w.flows) * usize::from(w.runs) * (w.run_len() + 4096 * 45);
    let source = Guest::connect(setup.source, setup.source_features, frames_size + (4 << 20),
                                setup.queue_size, setup.connect_wait).map_err(|e| e.to_string())?;
    check_source_features(&source, w)?;
    let sink = Guest::connect(setup.sink, setup.sink_features,
                              usize::from(setup.queue_size) * BIG_BUFFER + (4 << 20),
                              setup.queue_size, setup.connect_wait).map_err(|e| e.to_string())?;
    let tso = sink.has("guest_csum") && (sink.has("guest_tso4") || sink.has("guest_tso6"));
    let buffer = receive_buffer_len(sink.has("mrg_rxbuf"), tso, w.mtu);
    let source = Source::new(source, w).map_err(|e| e.to_string())?;
    let sink = Sink::new(sink, buffer).map_err(|e| e.to_string())?;
    Ok((source, sink))
}

/// The source's frames need the offloads they use: partial checksums need `csum`,
/// super-packets `host_tso4`/`host_tso6`.
pub fn check_source_features(guest: &Guest, w: &Workload) -> Result<(), String> {
    let needed: &[&str] = match (w.shape, w.checksum, w.ip) {
        (Shape::Tso, _, Ip::V4) => &["csum", "host_tso4"],
        (Shape::Tso, _, Ip::V6) => &["csum", "host_tso6"],
        (Shape::Mtu, SourceChecksum::Partial, _) => &["csum"],
        (Shape::Mtu, SourceChecksum::Full, _) => &[],
    };
    match needed.iter().find(|f| !guest.has(f)) {
        Some(missing) => Err(format!(
            "the sending guest did not negotiate {missing}, which its frames need (the backend offered: {})",
            feature_names(guest.offered).join(","))),
        None => Ok(()),
    }
}
