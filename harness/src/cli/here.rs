//! `bench thor --compare --here`: the run set and the baseline's own
//! versions (the scenario file as it is: no --bin, no --set), run round
//! by round on this machine in alternating order, judged against each
//! other (`harness::bench::core::here`) beside the stored baseline's
//! comparison — the verdict that holds where the stored one could not
//! judge (another machine: its allowance too wide).

use std::path::Path;

use anyhow::Result;
use harness::bench::core::here;
use harness::bench::core::report::files;
use harness::bench::core::result::summarize;
use harness::bench::thor::result::ThorResult;
use harness::bench::thor::{self, ThorBenchOptions};
use harness::error::bad_input;

use crate::cli::interrupt::{Made, or_tear_down};

/// What `--here` was asked for: rounds of each side, and what this build
/// changes (`--bin` and `--set`, as given).
pub struct Ask {
    pub rounds: u32,
    pub changed: Vec<String>,
}

/// Rounds each side needs for a paired interval.
pub const MIN_ROUNDS: u32 = 3;

/// What `--here` refuses: too few rounds, or any of `besides` (a flag's
/// name and whether it was given).
pub fn check(ask: &Ask, besides: &[(&str, bool)]) -> Result<()> {
    if ask.rounds < MIN_ROUNDS {
        return Err(bad_input(format!(
            "--here runs --repeat rounds of each side, paired: {MIN_ROUNDS} or more give an interval (asked: {})",
            ask.rounds
        )));
    }
    let given: Vec<&str> = besides
        .iter()
        .filter(|(_, g)| *g)
        .map(|(f, _)| *f)
        .collect();
    if !given.is_empty() {
        return Err(bad_input(format!(
            "--here runs both sides now, whole: drop {}",
            given.join(", ")
        )));
    }
    Ok(())
}

/// What the two sides differ by, in words.
fn what(ask: &Ask) -> String {
    if ask.changed.is_empty() {
        return "the scenario as given against the same versions (no --bin, no --set): an A/A, how this machine agrees with itself".into();
    }
    format!(
        "this build ({}) against the baseline's versions (the scenario file as it is, this harness {})",
        ask.changed.join(", "),
        env!("CARGO_PKG_VERSION")
    )
}

/// The runs of every round of one side, as one run set.
fn joined(mut rounds: Vec<ThorResult>) -> Option<ThorResult> {
    let rest: Vec<ThorResult> = rounds.split_off(1.min(rounds.len()));
    let mut first = rounds.pop()?;
    for (mode, s) in first.modes.iter_mut() {
        let mut runs = s.runs().to_vec();
        for r in &rest {
            if let Some(o) = r.modes.get(mode) {
                runs.extend(o.runs().iter().cloned());
            }
        }
        *s = summarize(runs);
    }
    Some(first)
}

/// Run both sides, `ask.rounds` rounds each, from `side(reference?,
/// round)`'s options; judge them; write here.md and each side's run set
/// under `out`. Ok(Err(code)) when interrupted.
pub async fn run(
    ask: &Ask,
    side: &dyn Fn(bool, u32) -> Result<ThorBenchOptions>,
    out: &Path,
    seed: u64,
) -> Result<std::result::Result<(ThorResult, here::Here), i32>> {
    let (mut reference, mut this) = (Vec::new(), Vec::new());
    let mut order = harness::stats::Prng::new(seed);
    for round in 0..ask.rounds {
        let reference_first = order.next_u64().is_multiple_of(2);
        for is_reference in [reference_first, !reference_first] {
            let opts = side(is_reference, round)?;
            eprintln!(
                "harness: --here round {}/{}: {}",
                round + 1,
                ask.rounds,
                if is_reference {
                    "the baseline's versions"
                } else {
                    "this build"
                }
            );
            let made = Made::Prefixed(&opts.cluster_prefix);
            let r = match or_tear_down(thor::bench_thor(&opts), &opts.provider, made).await? {
                Ok(r) => r,
                Err(code) => return Ok(Err(code)),
            };
            if is_reference {
                reference.push(r);
            } else {
                this.push(r);
            }
        }
    }
    let (Some(a), Some(b)) = (joined(reference), joined(this)) else {
        return Err(bad_input("--here ran no round"));
    };
    for (dir, r) in [("here-baseline-versions", &a), ("here-this-build", &b)] {
        files::write_all(r, &out.join(dir))?;
    }
    let h = here::judge(&a, &b);
    let md = here::markdown(&h, &what(ask));
    harness::output::write_atomic(&out.join("here.md"), md.clone())?;
    eprint!("{md}");
    Ok(Ok((b, h)))
}
