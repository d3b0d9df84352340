//! Verdicts against a stored baseline, each file one idea:
//! `model` (a verdict and its typed reason), `place` (the baseline's own
//! machine or another), `scale` (the one per-second conversion), `band`
//! (stored runs grouped by machine, the pooled spread), `judge` (one
//! judge per way a metric is judged), `compare` (the walk over baseline
//! × run), `confirm` (a second run for a one-round gate) and `words`
//! (everything said; nothing reads it back).

pub mod band;
pub mod compare;
pub mod confirm;
pub mod judge;
pub mod model;
pub mod place;
pub mod scale;
pub mod words;
