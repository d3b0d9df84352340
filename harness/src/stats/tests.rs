use super::*;

#[test]
fn median_quantiles_and_spread_of_known_samples() {
    assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
    assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
    assert!(median(&[]).is_nan());
    let s = spread(&[10.0, 12.0, 14.0]);
    assert_eq!(
        (s.n, s.median, s.min, s.max, s.mean),
        (3, 12.0, 10.0, 14.0, 12.0)
    );
    // sd 2, mean 12
    assert!((s.cv_pct - 2.0 / 12.0 * 100.0).abs() < 1e-9, "{s:?}");
    assert_eq!(spread(&[5.0]).cv_pct, 0.0);
    assert_eq!(quantile_sorted(&[0.0, 10.0], 0.25), 2.5);
}

#[test]
fn a_resampled_median_is_the_sorted_picks_median_to_the_bit() {
    // Ties, ±0, infinities (x/0 ratios) and NaNs of either sign: every
    // order `total_cmp` gives.
    let pool = [
        1.0,
        2.0,
        2.0,
        0.1,
        -0.0,
        0.0,
        -3.5,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
        -f64::NAN,
        1e300,
    ];
    let mut draw = Prng::new(7);
    let mut buf = Vec::new();
    for n in 1..30 {
        for seed in 0..20 {
            let xs: Vec<f64> = (0..n).map(|_| pool[draw.below(pool.len())]).collect();
            let (mut a, mut b) = (Prng::new(seed), Prng::new(seed));
            let got = median_of_pick(&xs, &mut a, &mut buf);
            let mut picks: Vec<f64> = (0..n).map(|_| xs[b.below(n)]).collect();
            picks.sort_by(f64::total_cmp);
            let want = quantile_sorted(&picks, 0.5);
            assert_eq!(got.to_bits(), want.to_bits(), "{xs:?} seed {seed}");
        }
    }
}

#[test]
fn identical_samples_give_a_point_interval_and_no_difference() {
    let a = [1120.0; 6];
    let j = judge(&a, &a, true, Rule::COUNT).unwrap();
    assert_eq!(
        (j.ratio.ratio, j.ratio.ci_low, j.ratio.ci_high),
        (1.0, 1.0, 1.0)
    );
    assert_eq!(j.verdict, Direction::Same);
    assert_eq!(j.p_value, Some(1.0));
    let j = judge(&a, &a, false, Rule::COUNT).unwrap();
    assert_eq!(j.verdict, Direction::Same);
    // Zeros on both sides are the same, not NaN.
    let z = judge(&[0.0; 3], &[0.0; 3], true, Rule::COUNT).unwrap();
    assert_eq!((z.ratio.ratio, z.verdict), (1.0, Direction::Same));
}

#[test]
fn a_deterministic_count_that_moved_is_a_difference_either_way() {
    let a = [12.0; 3];
    let j = judge(&a, &[16.0; 3], true, Rule::COUNT).unwrap();
    assert_eq!(j.verdict, Direction::Higher);
    assert!((j.ratio.ratio - 16.0 / 12.0).abs() < 1e-12);
    let j = judge(&a, &[8.0; 3], true, Rule::COUNT).unwrap();
    assert_eq!(j.verdict, Direction::Lower);
    // …but not by less than the minimum effect: 1 % of a count.
    let j = judge(&[1000.0; 3], &[1010.0; 3], true, Rule::COUNT).unwrap();
    assert_eq!(j.verdict, Direction::Same);
}

#[test]
fn a_ten_percent_shift_with_small_noise_is_found_and_sized() {
    // 10 rounds, ±2 % noise on each side.
    let a = synthetic(1000.0, 0.02, 10, 1);
    let b: Vec<f64> = synthetic(1000.0, 0.02, 10, 2)
        .iter()
        .map(|x| x * 1.10)
        .collect();
    for paired in [true, false] {
        let j = judge(&a, &b, paired, Rule::COUNT).unwrap();
        assert_eq!(j.verdict, Direction::Higher, "{j:?}");
        assert!(j.ratio.ci_low > 1.03 && j.ratio.ci_high < 1.17, "{j:?}");
        assert!((j.ratio.ratio - 1.10).abs() < 0.04, "{j:?}");
        assert!(j.p_value.unwrap() < 0.01, "{j:?}");
        // The mirror image is lower.
        let j = judge(&b, &a, paired, Rule::COUNT).unwrap();
        assert_eq!(j.verdict, Direction::Lower, "{j:?}");
    }
    // The same shift under a 15 % minimum effect is not a difference.
    let rule = Rule {
        min_effect: 0.15,
        floor: 0.0,
    };
    assert_eq!(judge(&a, &b, true, rule).unwrap().verdict, Direction::Same);
    // Nor under a noise floor larger than the change (a latency of
    // ~1000 ms shifting 100 ms against a 1 s floor).
    assert_eq!(
        judge(&a, &b, true, Rule::latency(1000.0)).unwrap().verdict,
        Direction::Same
    );
}

#[test]
fn pure_noise_is_no_difference_in_most_trials() {
    // 200 trials of two sets of 10 runs from the same ±20 % noise:
    // a 95 % interval with a 2 % minimum effect should call few of
    // them a difference (measured: 8 of 200 unpaired, 14 of 200
    // paired — a percentile bootstrap over 10 rounds is somewhat
    // narrower than 95 %).
    let mut differences = 0;
    for t in 0..200u64 {
        let a = synthetic(500.0, 0.2, 10, 1000 + t);
        let b = synthetic(500.0, 0.2, 10, 5000 + t);
        let j = judge(&a, &b, false, Rule::COUNT).unwrap();
        if j.verdict != Direction::Same {
            differences += 1;
        }
    }
    assert!(differences <= 16, "{differences} of 200 false differences");
    // Paired, the same.
    let mut differences = 0;
    for t in 0..200u64 {
        let a = synthetic(500.0, 0.2, 10, 9000 + t);
        let b = synthetic(500.0, 0.2, 10, 13000 + t);
        if judge(&a, &b, true, Rule::COUNT).unwrap().verdict != Direction::Same {
            differences += 1;
        }
    }
    assert!(
        differences <= 16,
        "{differences} of 200 false differences (paired)"
    );
}

#[test]
fn pairing_removes_drift_shared_by_a_round() {
    // Each round's machine speed drifts ±30 %; B is 5 % above A in
    // every round. Unpaired the drift hides it, paired it does not.
    let drift = synthetic(1.0, 0.3, 8, 42);
    let a: Vec<f64> = drift.iter().map(|d| 100.0 * d).collect();
    let b: Vec<f64> = drift.iter().map(|d| 105.0 * d).collect();
    let p = judge(&a, &b, true, Rule::COUNT).unwrap();
    assert_eq!(p.verdict, Direction::Higher, "{p:?}");
    assert!((p.ratio.ci_low - 1.05).abs() < 1e-9 && (p.ratio.ci_high - 1.05).abs() < 1e-9);
    let u = judge(&a, &b, false, Rule::COUNT).unwrap();
    assert_eq!(u.verdict, Direction::Same, "{u:?}");
}

#[test]
fn the_interval_is_reproducible_and_the_order_shuffle_is_seeded() {
    let a = synthetic(10.0, 0.3, 7, 3);
    let b = synthetic(11.0, 0.3, 7, 4);
    assert_eq!(paired_ratio(&a, &b, 2000, 9), paired_ratio(&a, &b, 2000, 9));
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

#[test]
fn mann_whitney_matches_known_values() {
    // Fully separated 5 vs 5: U = 25, normal-approximation p ≈ 0.012.
    let a = [1.0, 2.0, 3.0, 4.0, 5.0];
    let b = [6.0, 7.0, 8.0, 9.0, 10.0];
    let m = mann_whitney(&a, &b).unwrap();
    assert_eq!(m.u, 25.0);
    assert!((m.p_value - 0.0122).abs() < 0.001, "{m:?}");
    // Interleaved: U = 15 of 25, p ≈ 0.68.
    let m = mann_whitney(&[1.0, 3.0, 5.0, 7.0, 9.0], &[2.0, 4.0, 6.0, 8.0, 10.0]).unwrap();
    assert!(m.p_value > 0.6, "{m:?}");
    assert!(mann_whitney(&[], &b).is_none());
    assert!((normal_cdf(1.959_964) - 0.975).abs() < 1e-6);
}

#[test]
fn too_few_or_mismatched_rounds_give_no_interval() {
    assert!(paired_ratio(&[1.0, 2.0], &[1.0], 10, 1).is_none());
    assert!(unpaired_ratio(&[], &[1.0], 10, 1).is_none());
    let r = paired_ratio(&[0.0], &[3.0], 10, 1).unwrap();
    assert!(r.ratio.is_infinite());
    assert_eq!(
        verdict(&r, 0.0, 3.0, Rule::COUNT),
        Direction::Higher,
        "from none to some is higher"
    );
    // …but one round is no interval: no verdict from it.
    let j = judge(&[100.0], &[300.0], true, Rule::COUNT).unwrap();
    assert_eq!((j.ratio.ratio, j.verdict), (3.0, Direction::Same));
    let j = judge(&[100.0; 2], &[300.0; 2], true, Rule::COUNT).unwrap();
    assert_eq!(j.verdict, Direction::Higher);
}

#[test]
fn a_ten_percent_shift_with_small_noise_is_found_with_three_rounds_too() {
    // Few rounds: the paired interval spans the per-round ratios, all
    // above 1 here, so the shift is still "higher".
    let a = synthetic(1000.0, 0.01, 3, 21);
    let b: Vec<f64> = synthetic(1000.0, 0.01, 3, 22)
        .iter()
        .map(|x| x * 1.10)
        .collect();
    let j = judge(&a, &b, true, Rule::COUNT).unwrap();
    assert_eq!(j.verdict, Direction::Higher, "{j:?}");
    assert!(j.ratio.ci_low > 1.05 && j.ratio.ci_high < 1.15, "{j:?}");
    // Pure latency noise of ±40 % around 40 ms: under the 50 ms floor,
    // never a difference, whatever the interval says.
    for t in 0..50 {
        let a = synthetic(40.0, 0.4, 5, 300 + t);
        let b = synthetic(40.0, 0.4, 5, 700 + t);
        let j = judge(&a, &b, true, Rule::latency(50.0)).unwrap();
        assert_eq!(j.verdict, Direction::Same, "{t}: {j:?}");
    }
}

#[test]
fn a_step_is_found_where_it_is_and_a_flat_noisy_series_has_none() {
    // 6 points at 1000, then 6 at 1150 (+15 %), ±3 % noise.
    let mut x = synthetic(1000.0, 0.03, 6, 31);
    x.extend(synthetic(1150.0, 0.03, 6, 32));
    let cps = change_points(&x, Rule::COUNT);
    assert_eq!(cps.len(), 1, "{cps:?}");
    assert_eq!(cps[0].index, 6);
    assert!(cps[0].p_value < 0.01, "{cps:?}");
    assert!(
        (cps[0].after / cps[0].before - 1.15).abs() < 0.05,
        "{cps:?}"
    );
    // Two steps up: both found. (An excursion that returns to its level
    // is CUSUM binary segmentation's blind spot: its whole-series split is
    // not extreme among permutations.)
    let mut y = synthetic(500.0, 0.02, 5, 41);
    y.extend(synthetic(600.0, 0.02, 5, 42));
    y.extend(synthetic(720.0, 0.02, 5, 43));
    let idx: Vec<usize> = change_points(&y, Rule::COUNT)
        .iter()
        .map(|c| c.index)
        .collect();
    assert_eq!(idx, [5, 10]);
    // Flat series with ±10 % noise: in 40 of them, at most a few false
    // change points (the test's level is 5 %).
    let flagged = (0..40)
        .filter(|t| !change_points(&synthetic(800.0, 0.1, 12, 900 + t), Rule::COUNT).is_empty())
        .count();
    assert!(
        flagged <= 4,
        "{flagged} of 40 flat series had a change point"
    );
    // A real step below the minimum effect is not a change point.
    let mut z = synthetic(1000.0, 0.001, 6, 51);
    z.extend(synthetic(1010.0, 0.001, 6, 52));
    assert!(change_points(&z, Rule::COUNT).is_empty());
    // Constant series, and series too short to split.
    assert!(change_points(&[5.0; 10], Rule::COUNT).is_empty());
    assert!(change_points(&[1.0, 9.0, 9.0], Rule::COUNT).is_empty());
}
