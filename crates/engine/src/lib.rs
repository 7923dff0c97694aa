//! offlab-engine: network offloads done in software.
//!
//! Pure packet code: no I/O, no allocation in the steady state, no panic on any input.
#![forbid(unsafe_op_in_unsafe_fn)]
