//! Counters per direction, and their JSON form.

use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use std::time::Instant;

/// What happened to the frames of one direction (ingress port → egress port).
#[derive(Debug, Default, Clone)]
pub struct Counters {
    pub rx_packets: u64,
    pub rx_bytes: u64,
    pub tx_packets: u64,
    pub tx_bytes: u64,
    /// Super-packets (vnet gso type ≠ NONE) received.
    pub rx_super_packets: u64,
    /// Super-packets sent on unchanged (pass-through).
    pub passed_super_packets: u64,
    /// Super-packets the engine segmented, and the segments that came out.
    pub segmented_super_packets: u64,
    pub segments: u64,
    /// Frames the engine coalesced, and the super-packets it made of them.
    pub merged_packets: u64,
    pub merged_super_packets: u64,
    /// Frames whose partial checksum the forwarder completed in software.
    pub checksums_completed: u64,
    /// Frames that are not IP (ARP, …), forwarded without parsing further.
    pub non_ip_frames: u64,
    /// Frames longer than their IP packet (beyond Ethernet padding), sent without the
    /// bytes past its end, as the kernel trims them on receive.
    pub trimmed_frames: u64,
    /// Bytes the forwarder copied in userspace (vhost-user ports: out of the guest's
    /// transmit buffers, into its receive buffers), virtio-net headers included.
    pub copied_bytes: u64,
    /// Drops by category ("virtio", "parse", "egress", …) and reason.
    pub drops: BTreeMap<(&'static str, &'static str), u64>,
    /// Frames the GRO engine refused to hold, by reason (they were still forwarded).
    pub gro_refusals: BTreeMap<&'static str, u64>,
}

impl Counters {
    pub fn received(&mut self, frame_bytes: usize) {
        self.rx_packets += 1;
        self.rx_bytes += frame_bytes as u64;
    }

    pub fn sent(&mut self, frame_bytes: usize) {
        self.tx_packets += 1;
        self.tx_bytes += frame_bytes as u64;
    }

    pub fn drop(&mut self, category: &'static str, reason: &'static str) {
        *self.drops.entry((category, reason)).or_default() += 1;
    }

    pub fn gro_refused(&mut self, reason: &'static str) {
        *self.gro_refusals.entry(reason).or_default() += 1;
    }

    pub fn dropped(&self) -> u64 {
        self.drops.values().sum()
    }

    pub fn to_json(&self) -> Value {
        let mut drops = Map::new();
        for ((category, reason), count) in &self.drops {
            let entry = drops
                .entry(category.to_string())
                .or_insert_with(|| json!({}));
            entry[*reason] = json!(count);
        }
        json!({
            "rx_packets": self.rx_packets,
            "rx_bytes": self.rx_bytes,
            "tx_packets": self.tx_packets,
            "tx_bytes": self.tx_bytes,
            "rx_super_packets": self.rx_super_packets,
            "passed_super_packets": self.passed_super_packets,
            "segmented_super_packets": self.segmented_super_packets,
            "segments": self.segments,
            "merged_packets": self.merged_packets,
            "merged_super_packets": self.merged_super_packets,
            "checksums_completed": self.checksums_completed,
            "non_ip_frames": self.non_ip_frames,
            "trimmed_frames": self.trimmed_frames,
            "copied_bytes": self.copied_bytes,
            "dropped": self.dropped(),
            "drops": drops,
            "gro_refusals": self.gro_refusals,
        })
    }
}

/// Everything `--stats-file`, SIGUSR1 and exit report.
pub struct Report<'a> {
    pub mode: &'a str,
    pub ports: [&'a str; 2],
    pub started: Instant,
    pub directions: [&'a Counters; 2],
    /// Each port's own state, where it has one (vhost-user: connection, features).
    pub port_states: [Option<Value>; 2],
}

impl Report<'_> {
    pub fn to_json(&self, event: &str) -> Value {
        json!({
            "event": event,
            "mode": self.mode,
            "ports": self.ports,
            "elapsed_s": self.started.elapsed().as_secs_f64(),
            "directions": {
                format!("{} -> {}", self.ports[0], self.ports[1]): self.directions[0].to_json(),
                format!("{} -> {}", self.ports[1], self.ports[0]): self.directions[1].to_json(),
            },
            "port_states": {
                self.ports[0]: self.port_states[0],
                self.ports[1]: self.port_states[1],
            },
        })
    }
}

/// Prints one JSON object as a line and flushes, so a reading process sees it at once
/// (any thread: the stdout lock keeps lines whole).
pub fn emit(value: &Value) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    // A closed stdout must not stop the forwarder; the stats file still has the data.
    let _ = writeln!(out, "{value}").and_then(|_| out.flush());
}

/// Writes `value` to `path` atomically (a reader never sees half a file).
pub fn write_file(path: &std::path::Path, value: &Value) -> std::io::Result<()> {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, format!("{value:#}\n"))?;
    std::fs::rename(&tmp, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drops_are_grouped_by_category() {
        let mut c = Counters::default();
        c.drop("virtio", "bad gso size");
        c.drop("virtio", "bad gso size");
        c.drop("parse", "truncated");
        let v = c.to_json();
        assert_eq!(v["drops"]["virtio"]["bad gso size"], 2);
        assert_eq!(v["drops"]["parse"]["truncated"], 1);
        assert_eq!(v["dropped"], 3);
    }
}
