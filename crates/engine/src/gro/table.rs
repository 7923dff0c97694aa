//! The bounded flow table: fixed slots allocated once, an open-addressing hash index
//! (linear probing, backward-shift deletion, no tombstones), and a list of slots in the
//! order their runs opened, for evicting the oldest and flushing by age.
//!
//! Every slot holds its run's head header (copied once, up to [`HEADER_CAP`] bytes),
//! the run state and the caller ids of its packets; payload bytes stay with the caller.

use super::coalesce::Run;
use super::facts::Facts;
use super::flow::{self, Shape};
use super::kind::{HEADER_CAP, NOT_PLAIN};

const NIL: u32 = u32::MAX;
const EMPTY: u64 = 0;

/// One held flow.
pub(crate) struct Slot {
    pub shape: Shape,
    /// Which `plain::Plain` kind (its `OUTER`) the shape is, or `kind::NOT_PLAIN`;
    /// kept so the fast path's lookup tests one word instead of the shape.
    pub plain: usize,
    pub hash: u64,
    pub header: [u8; HEADER_CAP],
    pub run: Run,
    older: u32,
    newer: u32,
}

pub(crate) struct Table {
    slots: Vec<Slot>,
    /// `segment_cap` ids per slot.
    ids: Vec<u64>,
    segment_cap: usize,
    free: Vec<u32>,
    /// Entry = (hash's high 32 bits << 32) | (slot + 1); 0 = empty.
    index: Vec<u64>,
    mask: usize,
    oldest: u32,
    newest: u32,
    /// The slot a frame last joined after finding it through the index, and that
    /// frame's flow hash: the first guess for the next frame (`Table::recent`).
    recent: (u64, u32),
}

impl Table {
    /// A table of `max_flows` slots (at least one), each holding up to `segment_cap` ids.
    pub fn new(max_flows: usize, segment_cap: usize, blank: Run) -> Table {
        let max_flows = max_flows.clamp(1, u32::MAX as usize / 4);
        let index_len = (max_flows * 2).next_power_of_two();
        let blank_slot = || Slot {
            shape: blank_shape(),
            plain: NOT_PLAIN,
            hash: 0,
            header: [0; HEADER_CAP],
            run: blank,
            older: NIL,
            newer: NIL,
        };
        Table {
            slots: (0..max_flows).map(|_| blank_slot()).collect(),
            ids: vec![0; max_flows * segment_cap],
            segment_cap,
            free: (0..max_flows as u32).rev().collect(),
            index: vec![EMPTY; index_len],
            mask: index_len - 1,
            oldest: NIL,
            newest: NIL,
            recent: (0, NIL),
        }
    }

    pub fn is_full(&self) -> bool {
        self.free.is_empty()
    }

    /// Runs held.
    pub fn len(&self) -> usize {
        self.slots.len() - self.free.len()
    }

    /// The slot holding the flow of `frame`, if any.
    #[inline(always)]
    pub fn find(&self, shape: &Shape, hash: u64, frame: &[u8]) -> Option<u32> {
        self.find_by(hash, |s| {
            s.shape == *shape && flow::same_flow(shape, frame, &s.header)
        })
    }

    /// The slot whose index entry carries `hash`'s tag (its high 32 bits) and whose flow
    /// `same` accepts, if any. `same` must compare the flow itself: the full hash is
    /// not compared first, as every caller's test (or the header compare after it)
    /// does that work anyway and a tag collision costs only one more compare.
    #[inline(always)]
    pub fn find_by(&self, hash: u64, same: impl Fn(&Slot) -> bool) -> Option<u32> {
        let tag = hash >> 32;
        let mut pos = hash as usize & self.mask;
        for _ in 0..self.index.len() {
            let entry = self.index[pos];
            if entry == EMPTY {
                return None;
            }
            if entry >> 32 == tag {
                let slot = (entry & 0xffff_ffff) as u32 - 1;
                let s = &self.slots[slot as usize];
                if same(s) {
                    return Some(slot);
                }
            }
            pos = (pos + 1) & self.mask;
        }
        None
    }

    /// The slot `remember` last noted under `hash`, if it is still held. A train of one
    /// flow's segments (a TSO burst, an elephant flow on its receive queue) then skips
    /// the index; interleaved flows pay a compare. Whoever takes the guess must still
    /// compare the flow: another flow may have the same hash.
    #[inline(always)]
    pub fn recent(&self, hash: u64) -> Option<u32> {
        let (recent_hash, slot) = self.recent;
        if recent_hash != hash {
            return None;
        }
        (slot != NIL).then_some(slot)
    }

    /// Notes that a frame with `hash` joined the run in `slot`.
    #[inline(always)]
    pub fn remember(&mut self, hash: u64, slot: u32) {
        self.recent = (hash, slot);
    }

    /// Takes a free slot for a new run of the frame `facts` describe, opened at `now`,
    /// whose head header is `header` (at most `HEADER_CAP` bytes) and whose first
    /// packet is `id`. `None` when full.
    #[inline(always)]
    pub fn open(&mut self, facts: &Facts, header: &[u8], now: u64, id: u64) -> Option<u32> {
        let slot = self.free.pop()?;
        let hash = facts.hash;
        let s = &mut self.slots[slot as usize];
        s.plain = facts.plain;
        s.shape = facts.shape;
        s.hash = hash;
        s.header[..header.len()].copy_from_slice(header);
        // Written in place from the facts: a run built first and copied in cost an
        // open 26 instructions for the copy alone.
        s.run = Run::open(facts, now);
        self.ids[slot as usize * self.segment_cap] = id;
        self.link_newest(slot);
        self.index_insert(hash, slot);
        Some(slot)
    }

    /// Records `id` as the next packet of `slot` (the run's segment count already
    /// includes it and is within the cap).
    #[inline(always)]
    pub fn push_id(&mut self, slot: u32, id: u64) {
        let n = self.slots[slot as usize].run.segments;
        self.set_id(slot, n, id);
    }

    /// `push_id` for a caller that holds the run's segment count `n` (with the new
    /// packet) already: no second look at the slot.
    #[inline(always)]
    pub fn set_id(&mut self, slot: u32, n: u16, id: u64) {
        let at = (slot as usize * self.segment_cap + usize::from(n)).wrapping_sub(1);
        if let Some(cell) = self.ids.get_mut(at) {
            *cell = id;
        }
    }

    pub fn slot(&self, slot: u32) -> &Slot {
        &self.slots[slot as usize]
    }

    pub fn slot_mut(&mut self, slot: u32) -> &mut Slot {
        &mut self.slots[slot as usize]
    }

    /// The slot's header (mutable, for finalizing) and its packets' ids.
    #[inline]
    pub fn parts_of(&mut self, slot: u32) -> (&mut Slot, &[u64]) {
        let s = &mut self.slots[slot as usize];
        let n = usize::from(s.run.segments).min(self.segment_cap);
        let start = slot as usize * self.segment_cap;
        (s, &self.ids[start..start + n])
    }

    /// Frees `slot` (after its run was delivered).
    pub fn close(&mut self, slot: u32) {
        if self.recent.1 == slot {
            self.recent.1 = NIL;
        }
        let hash = self.slots[slot as usize].hash;
        self.index_remove(hash, slot);
        self.unlink(slot);
        self.free.push(slot);
    }

    /// Whether freeing every slot with `close_all` costs less than closing each held
    /// one: once the table holds a sixteenth as many runs as its index has entries,
    /// rewriting the index beats removing the entries one by one.
    pub fn closes_in_bulk(&self) -> bool {
        self.len() * 16 >= self.index.len()
    }

    /// Frees every slot (after every held run was delivered): the index emptied in one
    /// pass, the free list and the age list as `new` leaves them.
    pub fn close_all(&mut self) {
        self.index.fill(EMPTY);
        // The held slots go back on the free list (walking the age list), not every
        // slot: a flush of 8 runs from a 64-slot table pushed 64 entries (~3
        // instructions per packet at 8 flows).
        let mut slot = self.oldest;
        while slot != NIL {
            self.free.push(slot);
            slot = self.slots[slot as usize].newer;
        }
        self.oldest = NIL;
        self.newest = NIL;
        self.recent.1 = NIL;
    }

    /// The slot whose run opened first.
    pub fn oldest(&self) -> Option<u32> {
        (self.oldest != NIL).then_some(self.oldest)
    }

    fn link_newest(&mut self, slot: u32) {
        let newest = self.newest;
        {
            let s = &mut self.slots[slot as usize];
            s.older = newest;
            s.newer = NIL;
        }
        if newest == NIL {
            self.oldest = slot;
        } else {
            self.slots[newest as usize].newer = slot;
        }
        self.newest = slot;
    }

    fn unlink(&mut self, slot: u32) {
        let (older, newer) = {
            let s = &self.slots[slot as usize];
            (s.older, s.newer)
        };
        match older {
            NIL => self.oldest = newer,
            o => self.slots[o as usize].newer = newer,
        }
        match newer {
            NIL => self.newest = older,
            n => self.slots[n as usize].older = older,
        }
    }

    fn index_insert(&mut self, hash: u64, slot: u32) {
        let mut pos = hash as usize & self.mask;
        // The index has twice as many entries as slots, so an empty one exists.
        for _ in 0..self.index.len() {
            if self.index[pos] == EMPTY {
                self.index[pos] = (hash >> 32) << 32 | (u64::from(slot) + 1);
                return;
            }
            pos = (pos + 1) & self.mask;
        }
    }

    fn index_remove(&mut self, hash: u64, slot: u32) {
        let wanted = (hash >> 32) << 32 | (u64::from(slot) + 1);
        let mut pos = hash as usize & self.mask;
        let mut found = None;
        for _ in 0..self.index.len() {
            match self.index[pos] {
                EMPTY => break,
                e if e == wanted => {
                    found = Some(pos);
                    break;
                }
                _ => pos = (pos + 1) & self.mask,
            }
        }
        let Some(mut hole) = found else { return };
        // Backward-shift: move later entries of the probe chain into the hole when
        // their home position does not lie cyclically in (hole, current].
        let mut pos = (hole + 1) & self.mask;
        for _ in 0..self.index.len() {
            let entry = self.index[pos];
            if entry == EMPTY {
                break;
            }
            let slot = ((entry & 0xffff_ffff) - 1) as usize;
            let home = self.slots[slot].hash as usize & self.mask;
            let distance_home = pos.wrapping_sub(home) & self.mask;
            let distance_hole = pos.wrapping_sub(hole) & self.mask;
            if distance_home >= distance_hole {
                self.index[hole] = entry;
                hole = pos;
            }
            pos = (pos + 1) & self.mask;
        }
        self.index[hole] = EMPTY;
    }
}

fn blank_shape() -> Shape {
    Shape {
        l2_len: 0,
        tunnel: None,
        ip_offset: 0,
        ip_header_len: 0,
        ip_v6: false,
        transport: flow::Transport::Tcp,
    }
}

/// Iterates over held slots from the oldest run to the newest.
pub(crate) struct AgeCursor(u32);

impl AgeCursor {
    pub fn start(table: &Table) -> Self {
        AgeCursor(table.oldest)
    }

    /// The current slot and advances, or `None` at the end.
    pub fn next(&mut self, table: &Table) -> Option<u32> {
        let current = self.0;
        if current == NIL {
            return None;
        }
        self.0 = table.slots[current as usize].newer;
        Some(current)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_per_flow_fits_1_kib_with_default_caps() {
        // Slot + 64 ids + two index entries: 1024 flows stay within 1 MiB.
        let per_flow = core::mem::size_of::<Slot>() + 64 * 8 + 2 * 8;
        assert!(per_flow <= 1024, "{per_flow} bytes per flow");
    }
}
