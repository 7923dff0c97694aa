//! The table's hash index against a model: after any sequence of opens, closes and
//! bulk closes every held flow is found in its own slot and no other flow is found, and
//! the slot `Table::recent` remembers is always its flow's held one.

use super::builder::Pkt;
use super::Harness;
use crate::gro::{GroConfig, Held};
use crate::gro::coalesce::Run;
use crate::gro::facts::classify;
use crate::gro::kind::HEADER_CAP;
use crate::gro::table::Table;
use crate::wire::parse::ParseOptions;
use proptest::prelude::*;

proptest! {
    #[test]
    fn index_finds_exactly_the_held_flows(ops in prop::collection::vec((0u16..40, 0u8..8), 1..300)) {
        // A small index (8 slots, 16 entries) so probe chains wrap and shift.
        let mut table = Table::new(8, 4, Run::blank());
        let frames: Vec<Vec<u8>> = (0..40).map(|p| Pkt { sport: p, ..Pkt::tcp4(0, 10) }.build()).collect();
        let facts: Vec<_> = frames
            .iter()
            .map(|f| classify(f, true, HEADER_CAP, &ParseOptions::DEFAULT).expect("classifies"))
            .collect();
        let mut held: Vec<Option<u32>> = vec![None; 40];
        for (flow, op) in ops {
            let i = usize::from(flow);
            let f = &facts[i];
            // 0..=3 open (0 and 1 also remember the flow, as a join through the index
            // does), 4..=6 close, 7 close every slot (a flush in bulk).
            if op == 7 {
                table.close_all();
                held.iter_mut().for_each(|slot| *slot = None);
            }
            match (op < 4, held[i]) {
                (true, None) if !table.is_full() => {
                    held[i] = table.open(f, &frames[i][..f.headers_len], 0, 0);
                    prop_assert!(held[i].is_some());
                    if op < 2 {
                        table.remember(f.hash, held[i].unwrap());
                    }
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
                if let Some(recent) = table.recent(fj.hash) {
                    prop_assert_eq!(Some(recent), *slot, "recent slot of flow {}", j);
                }
            }
            prop_assert_eq!(table.len(), held.iter().filter(|s| s.is_some()).count());
        }
    }
}

/// A flush of a table holding many runs frees its slots in bulk (`Table::close_all`);
/// one holding few closes them one by one. Either way the runs come out oldest first,
/// and the table then serves new runs of the same flows.
#[test]
fn flush_delivers_oldest_first_and_leaves_the_table_usable_in_bulk_or_not() {
    for flows in [1u16, 10] {
        // 16 slots, a 32-entry index: 10 held runs close in bulk, 1 does not.
        let mut h = Harness::with(GroConfig { max_flows: 16, ..GroConfig::default() });
        for round in 0..2u32 {
            for segment in 0..2u32 {
                for f in 0..flows {
                    let seq = 1000 + (round * 2 + segment) * 100;
                    let held = h.push(&Pkt { sport: 3000 + f, ..Pkt::tcp4(seq, 100) });
                    let expected = if segment == 0 { Held::NewFlow } else { Held::Merged };
                    assert_eq!(held, Ok(expected), "flows {flows} round {round} flow {f}");
                }
            }
            h.flush();
            assert_eq!(h.gro.table.len(), 0);
        }
        assert_eq!(h.segments(), vec![2; usize::from(flows) * 2]);
        let ports: Vec<u16> = h.out.iter().map(|o| u16::from_be_bytes([o.header[34], o.header[35]])).collect();
        let once: Vec<u16> = (0..flows).map(|f| 3000 + f).collect();
        assert_eq!(ports, [once.clone(), once].concat(), "oldest first, each round");
    }
}
