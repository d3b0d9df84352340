//! The one per-second conversion. A metric the clock drives (lease
//! renewals, their watch events) grows with the window it was counted
//! in, so it is compared per second of that window everywhere: each
//! run's value divided by that run's `wall_s`, recorded beside it in the
//! same order — the run's, the recorded runs', and the runs of the other
//! machines — and its floor divided by the recorded windows' median.

use crate::bench::core::baseline::{Baseline, Metric};
use crate::bench::core::figures::WALL;
use crate::bench::core::metric::Drive;
use crate::bench::core::verdict::model::Unjudgeable;
use crate::stats;

/// How a metric's values are compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scale {
    /// As counted in a run.
    Run,
    /// Per second of the run's window.
    PerSecond,
}

/// `values` per second of their windows `walls`; None where the two do
/// not line up (other counts, or a window of 0 s).
pub fn per_second(values: &[f64], walls: &[f64]) -> Option<Vec<f64>> {
    (values.len() == walls.len() && walls.iter().all(|w| *w > 0.0))
        .then(|| values.iter().zip(walls).map(|(v, w)| v / w).collect())
}

impl Scale {
    pub fn of(drive: Drive) -> Scale {
        match drive {
            Drive::Clock(_) => Scale::PerSecond,
            Drive::Workload | Drive::Pace(_) => Scale::Run,
        }
    }

    pub fn per_second(self) -> bool {
        self == Scale::PerSecond
    }

    /// A run set's values, each (value, its window's length), in this
    /// scale.
    pub fn run(self, cur: &[(f64, f64)]) -> Vec<f64> {
        cur.iter()
            .map(|(x, w)| match self {
                Scale::Run => *x,
                Scale::PerSecond => x / w.max(1e-9),
            })
            .collect()
    }

    /// Metric `m` of `mode` in baseline `b` in this scale: its recorded
    /// runs' values and its runs' on other machines and loads.
    pub fn stored(
        self,
        b: &Baseline,
        mode: &str,
        m: &Metric,
    ) -> Result<(Vec<f64>, Vec<f64>), Unjudgeable> {
        if self == Scale::Run {
            return Ok((m.samples.clone(), m.across.clone()));
        }
        let walls = b.modes.get(mode).and_then(|ms| ms.get(WALL.key));
        let recorded = walls
            .and_then(|w| per_second(&m.samples, &w.samples))
            .ok_or(Unjudgeable::NoWindows)?;
        let across = if m.across.is_empty() {
            Vec::new()
        } else {
            walls
                .and_then(|w| per_second(&m.across, &w.across))
                .ok_or(Unjudgeable::UnalignedWindows)?
        };
        Ok((recorded, across))
    }

    /// A floor (in the metric's unit a run) in this scale: divided by the
    /// median of the recorded runs' windows of `mode`.
    pub fn floor(self, floor: f64, b: &Baseline, mode: &str) -> f64 {
        match self {
            Scale::Run => floor,
            Scale::PerSecond => {
                let wall = b
                    .modes
                    .get(mode)
                    .and_then(|ms| ms.get(WALL.key))
                    .map_or(1.0, |w| stats::median(&w.samples));
                floor / wall.max(1e-9)
            }
        }
    }

    /// The unit in this scale ("requests" → "requests/s").
    pub fn unit(self, unit: &str) -> String {
        match self {
            Scale::Run => unit.to_string(),
            Scale::PerSecond => format!("{unit}/s"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_clocked_count_is_put_per_second_of_its_window() {
        assert_eq!(
            per_second(&[10.0, 22.0], &[10.0, 11.0]),
            Some(vec![1.0, 2.0])
        );
        assert_eq!(per_second(&[10.0], &[10.0, 11.0]), None);
        assert_eq!(per_second(&[10.0], &[0.0]), None);
        assert_eq!(
            Scale::PerSecond.run(&[(10.0, 10.0), (22.0, 11.0)]),
            vec![1.0, 2.0]
        );
        assert_eq!(Scale::Run.run(&[(10.0, 10.0)]), vec![10.0]);
        assert_eq!(Scale::PerSecond.unit("events"), "events/s");
    }
}
