//! The table's hash index against a model: after any sequence of opens and closes every
//! held flow is found in its own slot and no other flow is found.

use super::builder::Pkt;
use crate::gro::coalesce::Run;
use crate::gro::facts::classify;
use crate::gro::table::{Table, HEADER_CAP};
use crate::wire::parse::ParseOptions;
use proptest::prelude::*;

proptest! {
    #[test]
    fn index_finds_exactly_the_held_flows(ops in prop::collection::vec((0u16..40, any::<bool>()), 1..300)) {
        // A small index (8 slots, 16 entries) so probe chains wrap and shift.
        let mut table = Table::new(8, 4, Run::blank());
        let frames: Vec<Vec<u8>> = (0..40).map(|p| Pkt { sport: p, ..Pkt::tcp4(0, 10) }.build()).collect();
        let facts: Vec<_> = frames
            .iter()
            .map(|f| classify(f, true, HEADER_CAP, &ParseOptions::DEFAULT).expect("classifies"))
            .collect();
        let mut held: Vec<Option<u32>> = vec![None; 40];
        for (flow, open) in ops {
            let i = usize::from(flow);
            let f = &facts[i];
            match (open, held[i]) {
                (true, None) if !table.is_full() => {
                    let run = Run::open(f, 0);
                    held[i] = table.open(f.shape, f.hash, &frames[i][..f.headers_len], run, 0);
                    prop_assert!(held[i].is_some());
                }
                (false, Some(slot)) => {
                    table.close(slot);
                    held[i] = None;
                }
                _ => {}
            }
            for (j, slot) in held.iter().enumerate() {
                let fj = &facts[j];
                prop_assert_eq!(table.find(&fj.shape, fj.hash, &frames[j]), *slot, "flow {}", j);
            }
            prop_assert_eq!(table.len(), held.iter().filter(|s| s.is_some()).count());
        }
    }
}
