//! Counters: what came in, what was merged, why runs ended and why packets were refused.

use super::reason::Reason;

/// Why a held run was delivered.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlushCause {
    /// [`super::Gro::flush`].
    Explicit,
    /// [`super::Gro::flush_older_than`].
    Aged,
    /// A packet ended the run (PSH, FIN, a short segment, a cap) or could not join it.
    Rule(Reason),
    /// The table was full and this was its oldest flow.
    Evicted,
}

/// Counters kept by [`super::Gro`]. All monotonic.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroStats {
    /// Frames offered to `push`.
    pub packets_in: u64,
    /// Frames appended to an existing run.
    pub merged: u64,
    /// Runs started (a frame kept as the head of a new run).
    pub flows_opened: u64,
    /// Merged packets emitted (each counts once, whatever its segment count).
    pub emitted: u64,
    /// Segments inside the emitted packets.
    pub emitted_segments: u64,
    /// Runs delivered by [`super::Gro::flush`].
    pub flushed_explicit: u64,
    /// Runs delivered by [`super::Gro::flush_older_than`].
    pub flushed_aged: u64,
    /// Runs delivered to make room in a full table.
    pub flushed_evicted: u64,
    /// Runs delivered because a packet ended them, by rule (see [`Reason`]).
    pub ended: [u64; Reason::COUNT],
    /// Frames handed back unmerged, by rule.
    pub refused: [u64; Reason::COUNT],
}

impl Default for GroStats {
    fn default() -> Self {
        GroStats {
            packets_in: 0,
            merged: 0,
            flows_opened: 0,
            emitted: 0,
            emitted_segments: 0,
            flushed_explicit: 0,
            flushed_aged: 0,
            flushed_evicted: 0,
            ended: [0; Reason::COUNT],
            refused: [0; Reason::COUNT],
        }
    }
}

impl GroStats {
    /// Frames refused for `reason`.
    pub fn refused(&self, reason: Reason) -> u64 {
        self.refused[reason.index()]
    }

    /// Runs ended by `reason`.
    pub fn ended(&self, reason: Reason) -> u64 {
        self.ended[reason.index()]
    }

    /// Total frames refused, whatever the reason.
    pub fn refused_total(&self) -> u64 {
        self.refused.iter().sum()
    }

    /// `(name, count)` of every non-zero refusal counter.
    pub fn refusals(&self) -> impl Iterator<Item = (&'static str, u64)> + '_ {
        Reason::ALL
            .iter()
            .map(|r| (r.name(), self.refused[r.index()]))
            .filter(|&(_, n)| n > 0)
    }

    /// `(name, count)` of every non-zero run-ending counter.
    pub fn endings(&self) -> impl Iterator<Item = (&'static str, u64)> + '_ {
        Reason::ALL
            .iter()
            .map(|r| (r.name(), self.ended[r.index()]))
            .filter(|&(_, n)| n > 0)
    }

    pub(crate) fn count_flush(&mut self, cause: FlushCause, segments: u16) {
        self.emitted += 1;
        self.emitted_segments += u64::from(segments);
        match cause {
            FlushCause::Explicit => self.flushed_explicit += 1,
            FlushCause::Aged => self.flushed_aged += 1,
            FlushCause::Evicted => self.flushed_evicted += 1,
            FlushCause::Rule(reason) => self.ended[reason.index()] += 1,
        }
    }

    pub(crate) fn count_refusal(&mut self, reason: Reason) {
        self.refused[reason.index()] += 1;
    }
}
