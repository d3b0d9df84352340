//! The order of repeated runs: interleaved rounds shuffled from a seed,
//! and the small seeded generator every seeded choice of the harness uses.

/// The run order of repeated, interleaved runs: `repeat` rounds (at least
/// one), each every item once in an order shuffled from `seed` — so slow
/// drift of a shared machine falls on every item alike, and the same seed
/// replays the same order.
pub fn interleaved<T: Clone>(items: &[T], repeat: u32, seed: u64) -> Vec<Vec<T>> {
    let mut rng = Prng::new(seed);
    (0..repeat.max(1))
        .map(|_| {
            let mut order = items.to_vec();
            rng.shuffle(&mut order);
            order
        })
        .collect()
}

/// A run-order seed from the clock, the same for the whole process
/// (printed, and kept in the result, so the order can be replayed).
pub fn clock_seed() -> u64 {
    static CLOCK: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *CLOCK.get_or_init(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64 % 1_000_000_000)
    })
}

/// A small deterministic generator (SplitMix64): reproducible intervals
/// and run orders without a dependency.
#[derive(Debug, Clone)]
pub struct Prng(u64);

impl Prng {
    pub fn new(seed: u64) -> Self {
        Prng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in 0..n (n > 0), without modulo bias worth speaking of
    /// for the small n used here (Lemire's multiply-shift).
    pub fn below(&mut self, n: usize) -> usize {
        ((self.next_u64() as u128 * n as u128) >> 64) as usize
    }

    /// Fisher–Yates.
    pub fn shuffle<T>(&mut self, v: &mut [T]) {
        for i in (1..v.len()).rev() {
            let j = self.below(i + 1);
            v.swap(i, j);
        }
    }
}

/// Samples around `center` with a relative noise of ±`noise`, from a
/// seeded generator: the synthetic runs of the tests here and of the
/// callers' tests.
#[cfg(test)]
pub fn synthetic(center: f64, noise: f64, n: usize, seed: u64) -> Vec<f64> {
    let mut rng = Prng::new(seed);
    (0..n)
        .map(|_| {
            let u = rng.next_u64() as f64 / u64::MAX as f64; // [0, 1]
            center * (1.0 + noise * (2.0 * u - 1.0))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_and_the_order_shuffle_are_seeded() {
        assert_eq!(synthetic(10.0, 0.3, 7, 3), synthetic(10.0, 0.3, 7, 3));
        assert_ne!(synthetic(10.0, 0.3, 7, 3), synthetic(10.0, 0.3, 7, 4));
        let mut x: Vec<u32> = (0..10).collect();
        let mut y = x.clone();
        Prng::new(5).shuffle(&mut x);
        Prng::new(5).shuffle(&mut y);
        assert_eq!(x, y);
        let mut z: Vec<u32> = (0..10).collect();
        Prng::new(6).shuffle(&mut z);
        assert_ne!(x, z);
        let mut sorted_x = x.clone();
        sorted_x.sort();
        assert_eq!(sorted_x, (0..10).collect::<Vec<_>>());
    }
}
