//! Gang scheduling cases: data files that apply objects, act on them and
//! check, per Kubernetes minor, what the Job controller and the scheduler
//! really did — and the gang placement latency measurement.
//!
//! `case` (the format), `rules` (its validation), `matcher` (paths, matchers,
//! `${vars}`), `trial` (namespace, node pool, kinds), `steps` (one
//! executor per action), `expect` (polled checks with diffs), `run` (a
//! trial start to finish), `latency` (gangs of N, timed), `report` (the
//! behaviour matrix, JUnit, JSON), `changes` (one minor against the next).

pub mod case;
pub mod changes;
pub mod expect;
pub mod latency;
pub mod matcher;
pub mod report;
pub mod rules;
pub mod run;
pub mod steps;
pub mod trial;
