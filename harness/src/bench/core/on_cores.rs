//! Work that is the same whatever order it runs in, spread over the
//! machine's cores: `report calibrate`'s seeded draws, whose every
//! metric and number of rounds has its own seed, so the table is the
//! same on one core or many (the book's calibration table is generated
//! by it, and `cargo test` checks that page: on one core it took the
//! docs test 78 s of its 85 here).

/// `f` of each item, in the items' order, computed on up to
/// `available_parallelism` threads (item k on thread k mod threads).
pub fn map<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(items.len())
        .max(1);
    if threads == 1 {
        return items.iter().map(f).collect();
    }
    let f = &f;
    let parts: Vec<Vec<(usize, R)>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                scope.spawn(move || {
                    items
                        .iter()
                        .enumerate()
                        .skip(t)
                        .step_by(threads)
                        .map(|(k, x)| (k, f(x)))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect()
    });
    let mut out: Vec<(usize, R)> = parts.into_iter().flatten().collect();
    out.sort_unstable_by_key(|(k, _)| *k);
    out.into_iter().map(|(_, r)| r).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_come_in_the_items_order() {
        let items: Vec<u64> = (0..101).collect();
        let got = map(&items, |x| x * x);
        assert_eq!(got, items.iter().map(|x| x * x).collect::<Vec<_>>());
        assert!(map(&[] as &[u64], |x| *x).is_empty());
        assert_eq!(map(&[3u8], |x| *x + 1), [4]);
    }
}
