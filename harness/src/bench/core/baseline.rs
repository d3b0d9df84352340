//! Stored results (baselines/<provider>/<k8s-minor>/<scenario>.json) and
//! their schema. A baseline of schema v2 keeps every run's value of each
//! metric (`samples`); `compare` judges a new run against them by the
//! one rule of `crate::stats`, with a band from their measured spread.
//! Schema v1 files kept one value and a hand-set tolerance per metric;
//! they are still read, and judged (and reported) as single-value
//! baselines.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::bench::core::metric::{MetricKind, Views, value_of};
use crate::bench::core::result::Results;
use crate::bench::core::result::Run;
use crate::yaml::Seg;

fn k(s: &str) -> Seg {
    Seg::Key(s.to_string())
}

/// The schema `--record` writes: samples per metric.
pub const SCHEMA: &str = "harness.baseline/v2";
/// Single values with hand-set tolerances (read, not written).
pub const SCHEMA_V1: &str = "harness.baseline/v1";
pub const PROVIDERS: &[&str] = &["local", "kind", "existing"];
/// The units a baseline's metrics may have: those of the metrics every
/// run has that baselines keep (bench::core::figures), each once.
pub fn units() -> Vec<&'static str> {
    let mut u: Vec<&'static str> = crate::bench::core::figures::common()
        .specs()
        .filter(|s| s.views.has(crate::bench::core::metric::Views::KEPT))
        .map(|s| s.unit)
        .collect();
    u.sort_unstable();
    u.dedup();
    u
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Baseline {
    pub schema: String,
    pub provider: String,
    pub k8s_minor: String,
    /// Path of the scenario file, relative to the repository root.
    pub scenario: String,
    /// RFC 3339 time of recording.
    pub recorded: String,
    pub harness_version: String,
    /// mode → metric name → metric
    pub modes: BTreeMap<String, BTreeMap<String, Metric>>,
    /// What the cluster let the run measure (existing clusters:
    /// probe::Capabilities::comparable); a run with another set is not
    /// compared with this baseline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capabilities: Option<String>,
    /// The machine the runs were recorded on: latencies and CPU are
    /// judged only on one alike (`gate::machine_gate`). Absent in
    /// files recorded before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine: Option<crate::machine::Machine>,
    /// The disk the runs' etcd wrote to (`disk::of`): latencies are
    /// judged only on a run whose disk is alike. Absent in files recorded
    /// before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disk: Option<crate::bench::core::disk::Disk>,
    /// Runs of the scenario under other conditions than the recorded
    /// runs' (another machine, CPU hogs beside it), in the order their
    /// values were appended to each metric's `across`
    /// (`bench::core::across`). Absent in files without them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub across: Vec<crate::bench::core::condition::Condition>,
    /// The speed probe's median over the recorded runs, Msteps/s
    /// (`machine::Speed`): a machine of the baseline's class counts as
    /// its machine only near this speed (`verdict::place`). Absent in
    /// files recorded before it was measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speed: Option<f64>,
}

/// Err (bad input) when `r` was measured with other capabilities than
/// `b` was recorded with: their figures are not the same quantities.
pub fn same_capabilities<R: Run>(b: &Baseline, r: &Results<R>, path: &Path) -> Result<()> {
    let run = r.capabilities.as_ref().map(|c| c.comparable());
    if b.capabilities != run {
        let say = |c: &Option<String>| {
            c.clone()
                .unwrap_or_else(|| "a cluster the harness started".into())
        };
        return Err(crate::error::bad_input(format!(
            "{}: recorded on {}; this run measured {}: not comparable (record a baseline for this cluster with --record)",
            path.display(),
            say(&b.capabilities),
            say(&run)
        )));
    }
    Ok(())
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Metric {
    /// The median of `samples` (v2), or the one recorded value (v1).
    pub value: f64,
    pub unit: String,
    pub kind: MetricKind,
    /// v1 only: the hand-set tolerance.
    #[serde(default, skip_serializing_if = "Tolerance::is_empty")]
    pub tolerance: Tolerance,
    /// v2: every recorded run's value, in run order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub samples: Vec<f64>,
    /// Its value in each run of the baseline's `across` conditions, in
    /// their order: the band across machines and loads.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub across: Vec<f64>,
}

/// How far a new value may move before it counts as a change (v1).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Tolerance {
    /// |new − old| / old allowed (counts, bytes), e.g. 0.05.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub relative: Option<f64>,
    /// [low, high] bounds of new / old (latencies), e.g. [0.66, 1.5].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ratio: Option<[f64; 2]>,
    /// Absolute noise, in the metric's unit (e.g. 50 ms for API latency,
    /// 1000 ms for pod start-up): a value at or under it, or a change no
    /// larger than it, is noise whatever the ratio. Server-side latencies
    /// come from histogram buckets (…, 25, 50, 100, 200 ms); a p99 near an
    /// edge moves by a bucket width when a handful of requests are slow,
    /// so a ratio alone would call that a regression.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub floor: Option<f64>,
}

impl Tolerance {
    pub fn is_empty(&self) -> bool {
        self.relative.is_none() && self.ratio.is_none() && self.floor.is_none()
    }
}

/// Whether baseline `b` may hold `mode`: the rule of the workload that
/// recorded it (`bench::recorded::known_mode`), for the core knows no
/// workload's modes.
pub type KnownMode = fn(&Baseline, &str) -> bool;

/// Any mode: the core's own checks only.
pub fn any_mode(_: &Baseline, _: &str) -> bool {
    true
}

impl Baseline {
    /// A v1 file: one value per metric, hand-set tolerances.
    pub fn single_value(&self) -> bool {
        self.schema == SCHEMA_V1
    }

    /// Semantic problems as (field path, message), a mode `known` does
    /// not take among them. Schema and types are the decoder's job.
    pub fn problems(&self, known: KnownMode) -> Vec<(Vec<Seg>, String)> {
        let mut out = Vec::new();
        self.header_problems(&mut out);
        let v2 = self.schema == SCHEMA;
        for (mode, metrics) in &self.modes {
            if !known(self, mode) {
                out.push((vec![k("modes"), k(mode)], format!("unknown mode {mode:?}")));
            }
            if metrics.is_empty() {
                out.push((vec![k("modes"), k(mode)], "no metrics".into()));
            }
            for (name, m) in metrics {
                self.metric_problems(mode, name, m, v2, &mut out);
            }
        }
        out
    }

    /// The schema, provider and Kubernetes minor known, and some mode
    /// recorded.
    fn header_problems(&self, out: &mut Vec<(Vec<Seg>, String)>) {
        if self.schema != SCHEMA && self.schema != SCHEMA_V1 {
            out.push((
                vec![k("schema")],
                format!(
                    "expected {SCHEMA:?} (or the older {SCHEMA_V1:?}), found {:?}",
                    self.schema
                ),
            ));
        }
        if !PROVIDERS.contains(&self.provider.as_str()) {
            out.push((
                vec![k("provider")],
                format!("{:?} is not one of {}", self.provider, PROVIDERS.join(", ")),
            ));
        }
        if crate::k8s::facts::for_minor(&self.k8s_minor).is_none() {
            out.push((
                vec![k("k8sMinor")],
                format!("unknown Kubernetes minor {:?}", self.k8s_minor),
            ));
        }
        if self.modes.is_empty() {
            out.push((vec![k("modes")], "no modes recorded".into()));
        }
    }

    /// One metric's value and unit, then its samples (v2) or its
    /// tolerance (v1).
    fn metric_problems(
        &self,
        mode: &str,
        name: &str,
        m: &Metric,
        v2: bool,
        out: &mut Vec<(Vec<Seg>, String)>,
    ) {
        let at = |rest: &[&str]| metric_path(mode, name, rest);
        if !m.value.is_finite() || m.value < 0.0 {
            out.push((
                at(&["value"]),
                format!("{} is not a finite, non-negative number", m.value),
            ));
        }
        let units = units();
        if !units.contains(&m.unit.as_str()) {
            out.push((
                at(&["unit"]),
                format!("unknown unit {:?}; one of {}", m.unit, units.join(", ")),
            ));
        }
        if v2 {
            self.sample_problems(mode, name, m, out);
        } else {
            tolerance_problems(mode, name, m, out);
        }
    }

    /// A v2 metric's samples and its values across conditions, which the
    /// baseline's conditions must name runs for.
    fn sample_problems(
        &self,
        mode: &str,
        name: &str,
        m: &Metric,
        out: &mut Vec<(Vec<Seg>, String)>,
    ) {
        let at = |rest: &[&str]| metric_path(mode, name, rest);
        if m.samples.is_empty() {
            out.push((at(&["samples"]), "no samples recorded".into()));
        }
        if let Some(x) = m.samples.iter().find(|x| !x.is_finite() || **x < 0.0) {
            out.push((
                at(&["samples"]),
                format!("{x} is not a finite, non-negative number"),
            ));
        }
        if let Some(x) = m.across.iter().find(|x| !x.is_finite() || **x < 0.0) {
            out.push((
                at(&["across"]),
                format!("{x} is not a finite, non-negative number"),
            ));
        }
        if !m.across.is_empty() && self.across.is_empty() {
            out.push((
                at(&["across"]),
                "values across conditions, but the baseline names no condition (its `across`)"
                    .into(),
            ));
        }
        let runs: usize = self.across.iter().filter_map(|c| c.runs.get(mode)).sum();
        if m.across.len() > runs {
            out.push((
                at(&["across"]),
                format!(
                    "{} values across conditions, more than the {runs} runs its conditions name for {mode}",
                    m.across.len()
                ),
            ));
        }
    }
}

/// The field path of metric `name` of `mode`, then `rest`.
fn metric_path(mode: &str, name: &str, rest: &[&str]) -> Vec<Seg> {
    let mut v = vec![k("modes"), k(mode), k(name)];
    v.extend(rest.iter().map(|r| k(r)));
    v
}

/// A v1 metric's hand-set tolerance: relative for counts, a ratio band
/// for latencies, and a non-negative floor.
fn tolerance_problems(mode: &str, name: &str, m: &Metric, out: &mut Vec<(Vec<Seg>, String)>) {
    let at = |rest: &[&str]| metric_path(mode, name, rest);
    let t = &m.tolerance;
    match m.kind {
        MetricKind::Count | MetricKind::Bytes | MetricKind::Exact => match t.relative {
            Some(r) if r > 0.0 && r <= 1.0 => {}
            Some(r) => out.push((
                at(&["tolerance", "relative"]),
                format!("{r} is not in (0, 1]"),
            )),
            None => out.push((
                at(&["tolerance"]),
                "a count needs a relative tolerance (e.g. relative: 0.05)".into(),
            )),
        },
        MetricKind::Latency => match t.ratio {
            Some([lo, hi]) if lo > 0.0 && lo < 1.0 && hi > 1.0 && hi.is_finite() => {}
            Some([lo, hi]) => out.push((
                at(&["tolerance", "ratio"]),
                format!("[{lo}, {hi}] must satisfy 0 < low < 1 < high"),
            )),
            None => out.push((
                at(&["tolerance"]),
                "a latency needs a ratio band (e.g. ratio: [0.66, 1.5])".into(),
            )),
        },
    }
    if let Some(f) = t.floor
        && !(f.is_finite() && f >= 0.0)
    {
        out.push((
            at(&["tolerance", "floor"]),
            format!("{f} is not a non-negative number"),
        ));
    }
}

use std::path::{Path, PathBuf};

use anyhow::Result;

use crate::error::bad_input;
use crate::schema::Finding;
use crate::schema::typed::{Ctx, decode};

/// "1.37" for "1.37.1".
fn minor_of_version(v: &str) -> String {
    v.rsplit_once('.').map_or(v, |(minor, _)| minor).to_string()
}

/// `baselines/<provider>/<k8s minor>/<scenario>.json`
pub fn path_for<R: Run>(root: &Path, r: &Results<R>) -> PathBuf {
    let profile = r.model.get(PROFILE_KEY).map_or("default", String::as_str);
    let real = r.model.get(KUBELET_KEY).is_some_and(|k| k == REAL_KUBELET);
    file_for(
        root,
        &r.provider,
        &r.k8s_version,
        &r.scenario,
        profile,
        real,
    )
}

/// The baseline file of a run set: its provider, Kubernetes version,
/// scenario, control-plane profile and whether its pods ran on real
/// nodes. The one place `--record`, `--compare` and the answer matrix
/// take it from. On kind every node is real: there is no run of fake
/// ones to tell it from, so no `.real-node` variant.
pub fn file_for(
    root: &Path,
    provider: &str,
    version: &str,
    scenario: &str,
    profile: &str,
    real_node: bool,
) -> PathBuf {
    let real = real_node && provider != "kind";
    path_of(root, provider, version, scenario, &variant(profile, real))
}

/// Where a Result records its kubelets (a kwok model's, or real ones).
pub const KUBELET_KEY: &str = "kubelet";
pub const REAL_KUBELET: &str = "real";

/// A profile's baseline variant: runs on real nodes are compared only with
/// runs on real nodes (`<scenario>[.<profile>].real-node.json`; on kind,
/// where every node is real, `path_for` asks for no variant).
pub fn variant(profile: &str, real_node: bool) -> String {
    match (profile, real_node) {
        (p, false) => p.to_string(),
        ("default", true) => "real-node".to_string(),
        (p, true) => format!("{p}.real-node"),
    }
}

/// Where a Result records its control-plane profile (cluster::profile's
/// label) among the model's keys.
pub const PROFILE_KEY: &str = "control_plane.profile";

/// The baseline of `scenario` on `provider` and Kubernetes `version`
/// (a minor or a patch version) with the control-plane `profile`: the
/// default profile's is `<scenario>.json`, any other's
/// `<scenario>.<profile>.json` (a baseline is only compared with runs of
/// its own profile). The scenario name is a DNS label and a profile label
/// is `[a-z+]`, so the path stays inside `baselines/`.
pub fn path_of(
    root: &Path,
    provider: &str,
    version: &str,
    scenario: &str,
    profile: &str,
) -> PathBuf {
    let minor = if version.matches('.').count() >= 2 {
        minor_of_version(version)
    } else {
        version.to_string()
    };
    root.join("baselines")
        .join(provider)
        .join(minor)
        .join(match profile {
            "default" => format!("{scenario}.json"),
            p => format!("{scenario}.{p}.json"),
        })
}

/// Decode and check one baseline document: the schema, then `problems`
/// (its modes by `known`), at file:line:column. The rules `harness
/// validate` and `load_with` share.
pub fn check(
    ctx: &Ctx<'_>,
    v: &serde_json::Value,
    known: KnownMode,
) -> (Option<Baseline>, Vec<Finding>) {
    let (b, mut f) = decode::<Baseline>(ctx, v, "baseline");
    if let Some(b) = &b {
        f.extend(
            b.problems(known)
                .into_iter()
                .map(|(p, m)| ctx.finding(&p, m)),
        );
    }
    (b, f)
}

/// Load a baseline with the core's checks, any mode taken
/// (`load_with` and `bench::recorded::load` check its modes too).
pub fn load(path: &Path) -> Result<Baseline> {
    load_with(path, any_mode)
}

/// Load and check a baseline, its modes by `known`; a broken file is a
/// usage error naming it at file:line:column.
pub fn load_with(path: &Path, known: KnownMode) -> Result<Baseline> {
    if !path.exists() {
        return Err(bad_input(format!(
            "baseline {}: no such file (record one with --record)",
            path.display()
        )));
    }
    let file = path.display().to_string();
    let text = crate::input::read(path)?;
    // A byte-order mark is no part of JSON; `validate` reads past it too.
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    // JSON first: serde_json says exactly what is wrong with a truncated
    // or hand-broken file.
    if let Err(e) = serde_json::from_str::<serde::de::IgnoredAny>(text) {
        let msg = e.to_string();
        let msg = msg
            .rsplit_once(" at line ")
            .map_or(msg.as_str(), |(m, _)| m);
        return Err(bad_input(format!(
            "baseline {}: {msg}",
            crate::input::json_at(std::path::Path::new(&file), &e)
        )));
    }
    let mut found = None;
    let (_, findings) = crate::schema::check_yaml(&file, text, |ctx, v| {
        let (b, f) = check(ctx, v, known);
        found = found.take().or(b);
        f
    });
    if let Some(f) = findings.first() {
        return Err(bad_input(format!("baseline {f}")));
    }
    found.ok_or_else(|| bad_input(format!("baseline {file}: no baseline in it")))
}

/// A v2 baseline of `r`: every metric with each run's value (a run
/// without an object kind counts it 0), its median as `value`.
pub fn from_result<R: Run>(r: &Results<R>, scenario_file: &str) -> Baseline {
    let declared = R::metrics();
    let kept: Vec<_> = declared
        .iter()
        .filter(|m| m.spec.views.has(Views::KEPT))
        .collect();
    let modes = r
        .modes
        .iter()
        .map(|(mode, s)| {
            let runs = s.runs();
            let mut metrics: BTreeMap<String, Metric> = BTreeMap::new();
            for run in runs {
                for m in &kept {
                    for (name, _) in m.values(run) {
                        metrics.entry(name).or_insert(Metric {
                            value: 0.0,
                            unit: m.spec.unit.into(),
                            kind: m.spec.kind.stored(),
                            tolerance: Tolerance::default(),
                            samples: Vec::new(),
                            across: Vec::new(),
                        });
                    }
                }
            }
            for (name, m) in metrics.iter_mut() {
                m.samples = runs
                    .iter()
                    .filter_map(|run| value_of(&declared, run, name))
                    .collect();
                m.value = crate::stats::median(&m.samples);
            }
            metrics.retain(|_, m| !m.samples.is_empty());
            (mode.clone(), metrics)
        })
        .collect();
    Baseline {
        schema: SCHEMA.into(),
        provider: r.provider.clone(),
        k8s_minor: minor_of_version(&r.k8s_version),
        scenario: scenario_file.into(),
        recorded: r.started.clone(),
        harness_version: r.harness_version.clone(),
        modes,
        capabilities: r.capabilities.as_ref().map(|c| c.comparable()),
        machine: r.machine.clone(),
        disk: crate::bench::core::disk::of(r),
        across: Vec::new(),
        speed: r.speed(),
    }
}

/// Write a baseline atomically (temp file + rename).
pub fn record<R: Run>(path: &Path, r: &Results<R>, scenario_file: &str) -> Result<()> {
    let b = from_result(r, scenario_file);
    crate::output::write_atomic(path, serde_json::to_string_pretty(&b)? + "\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn real_node_runs_have_baselines_of_their_own() {
        let at = |p, real| path_of(Path::new("/r"), "local", "1.37.1", "s", &variant(p, real));
        assert_eq!(
            at("default", false),
            Path::new("/r/baselines/local/1.37/s.json")
        );
        assert_eq!(
            at("default", true),
            Path::new("/r/baselines/local/1.37/s.real-node.json")
        );
        assert_eq!(
            at("tuned", true),
            Path::new("/r/baselines/local/1.37/s.tuned.real-node.json")
        );
        // A kind run's nodes are all real: its baseline has no variant.
        let mut r = crate::bench::thor::result::sample_result(100, 10.0);
        r.provider = "kind".into();
        r.k8s_version = "1.37.1".into();
        r.scenario = "s".into();
        r.model.insert(KUBELET_KEY.into(), REAL_KUBELET.into());
        assert_eq!(
            path_for(Path::new("/r"), &r),
            Path::new("/r/baselines/kind/1.37/s.json")
        );
        r.provider = "local".into();
        assert_eq!(
            path_for(Path::new("/r"), &r),
            Path::new("/r/baselines/local/1.37/s.real-node.json")
        );
    }

    #[test]
    fn runs_with_other_capabilities_are_not_compared() {
        let r = crate::bench::thor::result::sample_result(100, 10.0);
        let mut b = from_result(&r, "suites/thor/smoke.yaml");
        let p = Path::new("baselines/existing/1.37/smoke.json");
        assert!(same_capabilities(&b, &r, p).is_ok());
        let mut other = r.clone();
        other.capabilities = Some(Default::default());
        let e = same_capabilities(&b, &other, p).unwrap_err();
        assert_eq!(crate::error::exit_code(&e), 2);
        assert!(format!("{e}").contains("not comparable"), "{e}");
        b.capabilities = Some(crate::cluster::needs::Capabilities::default().comparable());
        assert!(same_capabilities(&b, &other, p).is_ok());
    }
    use crate::bench::thor::result::sample_result as result;

    #[test]
    fn a_corrupt_baseline_is_a_usage_error_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("smoke.json");
        std::fs::write(&path, "{\"schema\": \"harness.baseline/v1\", \"modes\": ").unwrap();
        let e = load(&path).unwrap_err();
        assert_eq!(crate::error::exit_code(&e), crate::error::EXIT_USAGE);
        assert!(
            format!("{e:#}").contains(&path.display().to_string()),
            "{e:#}"
        );
        let e = load(&dir.path().join("missing.json")).unwrap_err();
        assert_eq!(crate::error::exit_code(&e), crate::error::EXIT_USAGE);
        // Valid JSON, insane content.
        let mut b = from_result(&result(300, 2000.0), "s.yaml");
        b.modes
            .get_mut("baseline")
            .unwrap()
            .get_mut("api_requests_total")
            .unwrap()
            .samples
            .clear();
        std::fs::write(&path, serde_json::to_string(&b).unwrap()).unwrap();
        let e = load(&path).unwrap_err();
        assert!(format!("{e:#}").contains("no samples recorded"), "{e:#}");
    }

    #[test]
    fn record_writes_atomically_where_compare_looks() {
        let dir = tempfile::tempdir().unwrap();
        let r = result(300, 2000.0);
        let path = path_for(dir.path(), &r);
        assert!(
            path.ends_with("baselines/local/1.37/smoke.json"),
            "{}",
            path.display()
        );
        record(&path, &r, "suites/thor/smoke.yaml").unwrap();
        let b = load(&path).unwrap();
        // Inline, not a `use`: the verdicts lie above the baseline.
        assert!(
            crate::bench::core::verdict::compare::compare(&b, &r)
                .iter()
                .all(|v| v.pass())
        );
        let leftovers: Vec<_> = std::fs::read_dir(path.parent().unwrap()).unwrap().collect();
        assert_eq!(leftovers.len(), 1, "temp files left: {leftovers:?}");
    }
}
