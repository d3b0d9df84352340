//! The one percentile type: p50, p90, p99 and max of a set of samples,
//! from an hdrhistogram (pod and instance timings) or from Prometheus
//! histogram deltas (server-side latencies).

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Percentiles {
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub max: f64,
}

/// Samples are recorded at 1 ms resolution, from 1 ms to one hour.
const MAX_MS: u64 = 3_600_000;

impl Percentiles {
    /// Percentiles of samples given in milliseconds (zeros when empty).
    pub fn of_ms(values_ms: &[f64]) -> Percentiles {
        let mut h = match Histogram::<u64>::new_with_bounds(1, MAX_MS, 3) {
            Ok(h) => h,
            Err(_) => return Percentiles::default(),
        };
        for v in values_ms {
            let _ = h.record((v.round() as u64).clamp(1, MAX_MS));
        }
        if h.is_empty() {
            return Percentiles::default();
        }
        Percentiles {
            p50: h.value_at_quantile(0.5) as f64,
            p90: h.value_at_quantile(0.9) as f64,
            p99: h.value_at_quantile(0.99) as f64,
            max: h.max() as f64,
        }
    }

    /// Every figure multiplied by `f` (seconds → ms: 1000; ms → s: 0.001).
    pub fn scaled(self, f: f64) -> Percentiles {
        Percentiles {
            p50: self.p50 * f,
            p90: self.p90 * f,
            p99: self.p99 * f,
            max: self.max * f,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_from_samples_and_scaling() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        let p = Percentiles::of_ms(&v);
        assert_eq!((p.p50, p.p90, p.p99, p.max), (50.0, 90.0, 99.0, 100.0));
        let s = p.scaled(0.001);
        assert_eq!((s.p50, s.max), (0.05, 0.1));
        assert_eq!(Percentiles::of_ms(&[]), Percentiles::default());
    }
}
