//! The Thor suite: the smoke scenario, both modes, on fresh local
//! clusters (`smoke`), and the smoke on real nodes (`real`, run by the
//! realnode and kind suites).

pub mod real;
pub mod smoke;

pub use crate::suite::thor::smoke::suite;
