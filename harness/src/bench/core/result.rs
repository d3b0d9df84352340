//! The Result of any benchmark (the contract of the book's
//! docs/src/reports.md): where and what ran, each mode's runs with their typical run, spreads, statistics and
//! ratios to the reference mode, and how the runs were ordered. One value
//! per run set; renderers and the baseline policy read it, never the
//! orchestrator. The JSON keys are documented in docs/src/reports.md and
//! are added, never renamed.
//!
//! What a workload brings to it is a [`Run`]: the type of its runs'
//! figures, its metrics (declared once: `bench::core::metric`), how its
//! runs combine, and what only it adds to a report. The core — rounds,
//! summaries, ratios, baselines, compare, history and the renderers — is
//! written once against it.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use std::fmt::Debug;

use serde::de::DeserializeOwned;

use crate::bench::core::figures::RunFigures;
use crate::bench::core::metric::{self, Metric, Spec, Views, spec_of};
use crate::bench::core::verdict::model::Verdict;
use crate::metrics::timeline::Timeline;
use crate::stats;

/// The runs of one workload.
pub trait Run:
    Clone + Default + PartialEq + Debug + Serialize + DeserializeOwned + Send + Sync + 'static
{
    /// What the workload's result says about its whole run set besides
    /// the core's fields (what it was asked to run: how many, how much at
    /// a time…), flattened into the result's JSON.
    type Shape: Clone + Default + PartialEq + Debug + Serialize + DeserializeOwned + Send + Sync;

    /// The result's `schema`.
    const SCHEMA: &'static str;

    /// The benchmark's name in titles.
    const TITLE: &'static str;

    /// What must stay in its recorded range against a baseline, in words
    /// (compare.md's rule): the counts the workload's scenario fixes, its
    /// `Kind::Fixed` metrics.
    const IN_RANGE: &'static str = "pods, containers and objects";

    /// The command that judges a change on this machine alone, against
    /// the reference run round by round beside it (compare-summary.md's
    /// "what gives a verdict here").
    const HERE: &'static str = "an interleaved A/B of the two builds on this machine (`harness measure --variant a='…' --variant b='…' --repeat 3`)";

    /// The metrics that total clients' API requests: a regression of one
    /// is explained by the clients that grew most (compare-summary.md).
    const REQUEST_TOTALS: &'static [&'static str] =
        &[crate::bench::core::figures::API_REQUESTS.key];

    /// Whose the machine's kubectl processes are, in report.html's chart
    /// of their memory ("{} memory").
    const KUBECTL: &'static str = "kubectl";

    /// report.md's note on a run whose requests were counted client-side
    /// (`--attribution client`): whose they are.
    const COUNTED_CLIENT_SIDE: &'static str = "Requests are the workload's own identities' only, counted client-side (--attribution client): the rows of everyone else read 0.";

    /// Its metrics, in the order reports show them.
    fn metrics() -> Vec<Metric<Self>>;

    /// The figures every run has.
    fn figures(&self) -> &RunFigures;

    fn figures_mut(&mut self) -> &mut RunFigures;

    /// The typical run of `runs` (not empty): every field combined
    /// (`metrics::combine::typical!`).
    fn typical(runs: &[&Self]) -> Self;

    /// report.html's heading (the title, unless the workload says more).
    fn html_heading() -> String {
        Self::TITLE.to_string()
    }

    /// report.md's first lines.
    fn heading(_r: &Results<Self>) -> String {
        "### Figures\n\n".to_string()
    }

    /// The first cell of report.md's figures table ("per run of 4
    /// instances").
    fn per_run(_r: &Results<Self>) -> String {
        "per run".to_string()
    }

    /// Sections after the rounds table (what only the workload saw of
    /// its runs).
    fn after_rounds(_r: &Results<Self>) -> String {
        String::new()
    }

    /// Sections after the requests-by-client table (the workload's own
    /// clients' requests).
    fn after_clients(_r: &Results<Self>) -> String {
        String::new()
    }

    /// Verdicts of the run set on its own, beside those against a
    /// baseline (what the workload expects of every run).
    fn own_verdicts(_r: &Results<Self>) -> Vec<Verdict> {
        Vec::new()
    }

    /// Whether `mode` is one of this workload's modes, as a baseline it
    /// recorded names them: any, unless the workload says (a workload
    /// whose modes are what its user named them takes any).
    fn known_mode(_mode: &str) -> bool {
        true
    }

    /// A result's group of bars in report.html.
    fn chart_group(r: &Results<Self>) -> String {
        r.scenario.clone()
    }

    /// JUnit: the suite's name and each case's class name.
    fn junit_names(r: &Results<Self>) -> (String, String) {
        (
            format!("harness {}", r.scenario),
            format!("bench.{}", r.scenario),
        )
    }
}

/// No shape beyond the core's.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct NoShape {}

/// The specs of `R`'s metrics, in declaration order.
pub fn specs<R: Run>() -> Vec<Spec> {
    R::metrics().into_iter().map(|m| m.spec).collect()
}

/// One mode's runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(bound = "R: Run")]
pub struct ModeSummary<R: Run> {
    /// The mode as one run: its runs combined field by field
    /// (`Run::typical`).
    pub result: R,
    pub repeats: Vec<R>,
    /// (max − min) / mean × 100 over repeats, per headline metric.
    pub spread_pct: BTreeMap<String, f64>,
    /// Per judged metric over the repeats: n, median, min, max, mean,
    /// coefficient of variation.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub stats: BTreeMap<String, stats::Spread>,
    /// Per judged metric, this mode ÷ the reference mode ([`Statistics`]):
    /// the ratio with its 95 % interval and the verdict (the reference
    /// mode itself has none). Metrics whose reference median is 0 are left
    /// out.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub vs_reference: BTreeMap<String, stats::Judged>,
}

impl<R: Run> ModeSummary<R> {
    /// The mode's runs: its repeats, or the one result of a run saved
    /// before repeats were kept.
    pub fn runs(&self) -> &[R] {
        if self.repeats.is_empty() {
            std::slice::from_ref(&self.result)
        } else {
            &self.repeats
        }
    }
}

/// Every run of a benchmark.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(bound = "R: Run")]
pub struct Results<R: Run> {
    pub schema: String,
    pub scenario: String,
    #[serde(default)]
    pub scenario_file: String,
    pub provider: String,
    pub k8s_version: String,
    pub harness_version: String,
    pub started: String,
    /// What only this workload's results say of the whole run set.
    #[serde(flatten)]
    pub shape: R::Shape,
    /// How the run modelled what it ran (the workload's client versions
    /// and caches, the kubelet model…; the control-plane profile).
    #[serde(default)]
    pub model: BTreeMap<String, String>,
    pub modes: BTreeMap<String, ModeSummary<R>>,
    /// The harness process's own peak resident memory (VmHWM), in KiB;
    /// the control-plane processes are not included.
    #[serde(default)]
    pub harness_peak_rss_kib: u64,
    /// What the cluster offered, probed before the run (existing clusters
    /// only): results with different sets are not compared.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capabilities: Option<crate::cluster::needs::Capabilities>,
    /// Each run's metrics over time as (mode, repeat, timeline): written
    /// beside result.json as timeline.json and timeline.csv, drawn in
    /// report.html; not part of result.json (they are long).
    #[serde(skip)]
    pub timelines: Vec<(String, usize, Timeline)>,
    /// How the runs were ordered and compared (`--repeat`, `--seed`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub statistics: Option<Statistics>,
    /// The machine the runs were measured on (`crate::machine`): a
    /// baseline keeps it, and latencies are judged only on one alike.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine: Option<crate::machine::Machine>,
}

/// How the modes' runs were ordered and how their ratios were computed:
/// enough to replay the run set (`--seed`) and to read the intervals.
///
/// Read back, its counts are checked before anything uses them
/// ([`Statistics::check`]): a block whose numbers do not fit together is
/// refused by the deserializer, naming the field.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(remote = "Self")]
pub struct Statistics {
    /// The seed of the run order.
    pub seed: u64,
    /// The modes in the order they ran, one list per round (each round's
    /// runs on fresh clusters).
    pub rounds: Vec<Vec<String>>,
    /// The mode every other is divided by.
    pub reference: String,
    /// The interval's method, named.
    pub method: String,
    /// Results judged before 2026-11-29 by a percentile bootstrap: its
    /// resamples and seed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resamples: Option<usize>,
    pub confidence: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bootstrap_seed: Option<u64>,
    /// The minimum effects: relative for counts, relative + absolute floor
    /// for latencies and times, per metric family.
    pub rule: String,
    /// A shard's place in its run set (`--shard K/N`): `rounds` are then
    /// its own, the rounds `first` … of the set's `of`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<ShardOf>,
    /// A merged run set's shards (`report merge`): where each ran.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub merged: Vec<MergedShard>,
    /// Rounds of the run set no shard brought (`report merge`), 0-based:
    /// said in the report, never dropped silently.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lost_rounds: Vec<usize>,
}

impl Serialize for Statistics {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        Statistics::serialize(self, s)
    }
}

impl<'de> Deserialize<'de> for Statistics {
    /// Read, then [`Statistics::check`]ed: a claim that does not fit is an
    /// error naming its field (the reader adds the file and position).
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Statistics, D::Error> {
        let st = Statistics::deserialize(d)?;
        st.check().map_err(serde::de::Error::custom)?;
        Ok(st)
    }
}

/// The most rounds a result may say its run set has (`statistics.rounds`,
/// a shard's `of`): each round runs every mode on fresh clusters, so a real
/// run set stays far below; a larger claim is a damaged file, and the
/// reports would otherwise allocate and walk what it claims.
pub const MAX_SET_ROUNDS: usize = 100_000;

impl Statistics {
    /// The rounds of the whole run set: a shard's `of`; else its own rounds
    /// and those no shard brought (a merged set); none when the numbers
    /// overflow.
    pub fn set_rounds(&self) -> Option<usize> {
        match &self.shard {
            Some(sh) => Some(sh.of),
            None => self.rounds.len().checked_add(self.lost_rounds.len()),
        }
    }

    /// Every count the block claims, against the others and the lists it
    /// indexes: at most [`MAX_SET_ROUNDS`] rounds; a shard's 1 ≤ k ≤ n ≤
    /// `of` and `first` + its rounds ≤ `of`; a merged set's rounds (each
    /// shard's and those lost) within the set and each shard's k ≥ 1; the
    /// confidence between 0 and 1. The error names the field.
    pub fn check(&self) -> Result<(), String> {
        let rounds = self.rounds.len();
        if rounds > MAX_SET_ROUNDS {
            return Err(format!(
                "statistics.rounds: {rounds} rounds, more than a run set has (at most {MAX_SET_ROUNDS})"
            ));
        }
        if !(self.confidence > 0.0 && self.confidence < 1.0) {
            return Err(format!(
                "statistics.confidence: {}, not a confidence (between 0 and 1)",
                self.confidence
            ));
        }
        if let Some(sh) = &self.shard {
            if sh.n == 0 {
                return Err("statistics.shard.n: 0 shards (n is at least 1)".into());
            }
            if sh.k == 0 || sh.k > sh.n {
                return Err(format!(
                    "statistics.shard.k: shard {} of {} (k is 1 to n)",
                    sh.k, sh.n
                ));
            }
            if sh.of > MAX_SET_ROUNDS {
                return Err(format!(
                    "statistics.shard.of: a run set of {} rounds (at most {MAX_SET_ROUNDS})",
                    sh.of
                ));
            }
            if sh.n as usize > sh.of {
                return Err(format!(
                    "statistics.shard.n: {} shards of {} rounds (statistics.shard.of) leave some empty",
                    sh.n, sh.of
                ));
            }
            match sh.first.checked_add(rounds) {
                Some(end) if end <= sh.of => {}
                _ => {
                    return Err(format!(
                        "statistics.shard.first: rounds from {} on, {rounds} of them (statistics.rounds), do not fit a run set of {} (statistics.shard.of)",
                        sh.first, sh.of
                    ));
                }
            }
        }
        let set = self
            .set_rounds()
            .filter(|n| *n <= MAX_SET_ROUNDS)
            .ok_or_else(|| {
                format!(
                    "statistics.lost_rounds: {} rounds lost beside {rounds} run, more than a run set has (at most {MAX_SET_ROUNDS})",
                    self.lost_rounds.len()
                )
            })?;
        if let Some((i, r)) = self
            .lost_rounds
            .iter()
            .enumerate()
            .find(|(_, r)| **r >= set)
        {
            return Err(format!(
                "statistics.lost_rounds[{i}]: round {r} (0-based) of a run set of {set} rounds"
            ));
        }
        for (i, m) in self.merged.iter().enumerate() {
            if m.k == 0 {
                return Err(format!(
                    "statistics.merged[{i}].k: shard 0 (shards are counted from 1)"
                ));
            }
            if m.rounds.len() > set {
                return Err(format!(
                    "statistics.merged[{i}].rounds: {} rounds of a run set of {set}",
                    m.rounds.len()
                ));
            }
            if let Some((j, r)) = m.rounds.iter().enumerate().find(|(_, r)| **r >= set) {
                return Err(format!(
                    "statistics.merged[{i}].rounds[{j}]: round {r} (0-based) of a run set of {set} rounds"
                ));
            }
        }
        Ok(())
    }
}

/// A shard's place in its run set.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShardOf {
    pub k: u32,
    pub n: u32,
    /// The 0-based index of its first round in the set.
    pub first: usize,
    /// The set's rounds.
    pub of: usize,
}

/// One shard of a merged run set.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MergedShard {
    pub k: u32,
    /// Its rounds, 0-based, in the set.
    pub rounds: Vec<usize>,
    pub started: String,
    /// The machine it ran on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine: Option<crate::machine::Machine>,
    /// Where it was read from.
    pub from: String,
}

impl MergedShard {
    /// The shard `sh` of a merged set: its rounds in the set, read from
    /// `from`.
    pub fn of(
        sh: &ShardOf,
        started: String,
        machine: Option<crate::machine::Machine>,
        from: String,
    ) -> MergedShard {
        MergedShard {
            k: sh.k,
            rounds: crate::bench::core::shard::Shard { k: sh.k, n: sh.n }
                .rounds(sh.of)
                .collect(),
            started,
            machine,
            from,
        }
    }
}

impl Statistics {
    /// The statistics block of runs ordered as `rounds` from `seed`,
    /// divided by `reference`.
    pub fn new(seed: u64, rounds: Vec<Vec<String>>, reference: String) -> Statistics {
        Statistics {
            seed,
            rounds,
            reference,
            method: METHOD.into(),
            resamples: None,
            confidence: stats::CONFIDENCE,
            bootstrap_seed: None,
            rule: RULE_TEXT.into(),
            shard: None,
            merged: Vec::new(),
            lost_rounds: Vec::new(),
        }
    }
}

/// The method the `statistics` block names.
pub const METHOD: &str = "Student t on the per-round log ratios, paired by round (on the differences where a value is 0; rounds assumed independent, their log ratios roughly normal); verdict lower/higher only when the 95 % interval excludes 1 and the effect exceeds the metric's minimum";
/// The minimum effects, as the report states them.
pub const RULE_TEXT: &str = "counts and bytes: 2 %; latencies, times and CPU: 5 % and a noise floor (API p99 50 ms, SLO-class p99 250 ms, pod and instance start-up 1000 ms, wall 5 s, kube-apiserver + etcd CPU 2 s, kube-controller-manager's client-side throttling 1 s)";

/// The comparison rule of metric `name` of runs of type `R` (a count's
/// where no declaration names it).
pub fn rule_of<R: Run>(metrics: &[Metric<R>], name: &str) -> stats::Rule {
    spec_of(metrics.iter().map(|m| &m.spec), name).map_or(stats::Rule::COUNT, |s| s.rule())
}

/// Each judged metric's values over `runs`, in run order (a run without
/// the metric contributes nothing).
pub fn samples<R: Run>(metrics: &[Metric<R>], runs: &[R]) -> BTreeMap<String, Vec<f64>> {
    let mut out: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for r in runs {
        for (k, v) in metric::values_in(metrics, r, Views::JUDGED) {
            out.entry(k).or_default().push(v);
        }
    }
    out
}

/// The typical run of `runs`: the run itself when alone; an empty run
/// when there is none (a result saved before repeats were kept has
/// none to combine).
pub fn typical<R: Run>(runs: &[R]) -> R {
    match runs {
        [] => R::default(),
        [one] => one.clone(),
        _ => R::typical(&runs.iter().collect::<Vec<_>>()),
    }
}

/// A mode's summary over its repeats: the typical run, each headline
/// metric's spread ((max − min) / mean), and the per-metric statistics
/// the intervals and verdicts come from.
pub fn summarize<R: Run>(runs: Vec<R>) -> ModeSummary<R> {
    let metrics = R::metrics();
    let result = typical(&runs);
    let mut columns: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for r in &runs {
        for (k, v) in metric::values_in(&metrics, r, Views::HEADLINE) {
            columns.entry(k).or_default().push(v);
        }
    }
    let spread_pct = columns
        .into_iter()
        .map(|(name, vals)| {
            let mean = vals.iter().sum::<f64>() / vals.len() as f64;
            let (lo, hi) = vals
                .iter()
                .fold((f64::MAX, f64::MIN), |(a, b), v| (a.min(*v), b.max(*v)));
            let pct = if mean > 0.0 {
                (hi - lo) / mean * 100.0
            } else {
                0.0
            };
            (name, pct)
        })
        .collect();
    let stats = samples(&metrics, &runs)
        .into_iter()
        .map(|(k, v)| (k, stats::spread(&v)))
        .filter(|(_, s)| s.n > 0)
        .collect();
    ModeSummary {
        result,
        repeats: runs,
        spread_pct,
        stats,
        vs_reference: BTreeMap::new(),
    }
}

impl<R: Run> Results<R> {
    /// The speed probe's median over every run (`machine::Speed`, this
    /// probe's version only); None where no run measured it.
    pub fn speed(&self) -> Option<f64> {
        crate::machine::Speed::median_of(
            self.modes
                .values()
                .flat_map(|s| s.runs().iter().filter_map(|x| x.figures().window.speed)),
        )
    }

    /// A run set of `R` about to run here: no run yet, this harness's
    /// version, started now, on this machine, ordered as `statistics`
    /// says. A caller sets what else it knows (`model`, `capabilities`…)
    /// with `..` over it.
    pub fn begin(
        scenario: &str,
        provider: &str,
        k8s_version: String,
        shape: R::Shape,
        statistics: Statistics,
    ) -> Results<R> {
        Results {
            schema: R::SCHEMA.into(),
            scenario: scenario.into(),
            scenario_file: String::new(),
            provider: provider.into(),
            k8s_version,
            harness_version: env!("CARGO_PKG_VERSION").into(),
            started: now(),
            shape,
            model: BTreeMap::new(),
            modes: BTreeMap::new(),
            harness_peak_rss_kib: 0,
            capabilities: None,
            timelines: Vec::new(),
            statistics: Some(statistics),
            machine: crate::machine::Machine::this(),
        }
    }

    /// The result a run set saved: `p/result.json` for a directory, else
    /// the file `p`. A missing or broken file is bad input naming it and
    /// `what` asked for it.
    pub fn read(p: &std::path::Path, what: &str) -> anyhow::Result<Results<R>> {
        let file = if p.is_dir() || p.extension().is_none_or(|x| x != "json") {
            p.join("result.json")
        } else {
            p.to_path_buf()
        };
        if !file.is_file() {
            return Err(crate::error::bad_input(format!(
                "{what}: {}: no such result file (a directory a benchmark's --out wrote, or its result.json)",
                file.display()
            )));
        }
        let text = crate::input::read(&file)?;
        serde_json::from_str(&text).map_err(|e| {
            crate::error::bad_input(format!(
                "{what}: {}: not a result of this benchmark ({}): {e}",
                crate::input::json_at(&file, &e),
                R::SCHEMA
            ))
        })
    }

    /// The mode the others are divided by: baseline when it ran, else
    /// the one `statistics` names, else the first.
    pub fn reference_mode(&self) -> Option<&str> {
        if self.modes.contains_key("baseline") {
            Some("baseline")
        } else if let Some(r) = self
            .statistics
            .as_ref()
            .map(|s| s.reference.as_str())
            .filter(|r| self.modes.contains_key(*r))
        {
            Some(r)
        } else {
            self.modes.keys().next().map(String::as_str)
        }
    }

    /// Fill every mode's `vs_reference` by the one rule (paired by round
    /// when both ran the same rounds).
    pub fn judge_modes(&mut self) {
        let Some(reference) = self.reference_mode().map(str::to_string) else {
            return;
        };
        let metrics = R::metrics();
        let Some(base) = self.modes.get(&reference).map(|m| &m.repeats) else {
            return;
        };
        // A result saved before repeats were kept has no runs to judge
        // again: the ratios it was saved with stay.
        if base.is_empty() {
            return;
        }
        let base = samples(&metrics, base);
        for (mode, sum) in self.modes.iter_mut() {
            if *mode == reference {
                sum.vs_reference.clear();
                continue;
            }
            if sum.repeats.is_empty() {
                continue;
            }
            sum.vs_reference.clear();
            for (metric, b) in samples(&metrics, &sum.repeats) {
                let Some(a) = base.get(&metric) else { continue };
                // 0 → 0 says nothing; 0 → x is a cost that appeared.
                if a.iter().chain(&b).all(|x| *x == 0.0) {
                    continue;
                }
                let paired = a.len() == b.len();
                if let Some(j) = stats::judge(a, &b, paired, rule_of(&metrics, &metric)) {
                    sum.vs_reference.insert(metric, j);
                }
            }
        }
    }

    /// Add run `r` of `mode`: its mode's summary and every ratio
    /// recomputed.
    pub fn add_run(&mut self, mode: &str, r: R) {
        let mut runs = self
            .modes
            .remove(mode)
            .map(|s| s.repeats)
            .unwrap_or_default();
        runs.push(r);
        self.modes.insert(mode.to_string(), summarize(runs));
        self.judge_modes();
        self.harness_peak_rss_kib = peak_rss_kib();
    }
}

/// The time a Result starts at: now, RFC 3339.
pub fn now() -> String {
    time::OffsetDateTime::now_utc()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}

/// This process's peak resident set size (VmHWM) in KiB.
pub fn peak_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse().ok()))
        })
        .unwrap_or(0)
}
