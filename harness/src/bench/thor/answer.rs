//! The answer as data: the matrix file (`baselines/answer.yaml`) that
//! names the run sets the README's headline is rendered from — scenarios
//! × Kubernetes minors × providers (a real node or not) × rounds. Each
//! set is one `bench thor` run set recorded as one baseline file, so the
//! file says both what to run (`harness bench answer`) and what the
//! headline shows (`harness report headline --matrix`).

use std::path::{Path, PathBuf};

use anyhow::Result;
use serde::Deserialize;

use crate::bench::core::baseline;
use crate::error::bad_input;
use crate::schema::finding::Finding;
use crate::schema::typed::{Ctx, decode};
use crate::yaml::Seg;

/// The fewest rounds a set may ask for: the headline's interval is a
/// Student t over the rounds' ratios, and below 3 rounds it says next to
/// nothing (docs/src/baselines.md).
pub const MIN_ROUNDS: u32 = 3;

/// Providers a set may run on: the answer is recorded on fresh clusters
/// the harness makes (an existing cluster's baseline is its owner's).
pub const PROVIDERS: &[&str] = &["local", "kind"];

/// The most sets a matrix may stand for (the product of each entry's
/// axes, summed over the entries). The repository's matrix names a few;
/// each set is a run set of rounds on fresh clusters, so a thousand is
/// already more than one machine records in a month, and the bound is
/// checked before any entry is expanded (a small file whose lists
/// multiply into millions is refused at once).
pub const MAX_SETS: usize = 1000;

/// One value or several (a matrix axis).
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(untagged)]
pub enum Axis<T> {
    One(T),
    Many(Vec<T>),
}

impl<T: Clone> Axis<T> {
    /// How many values, without copying them.
    fn len(&self) -> usize {
        match self {
            Axis::One(_) => 1,
            Axis::Many(v) => v.len(),
        }
    }

    fn values(&self) -> Vec<T> {
        match self {
            Axis::One(v) => vec![v.clone()],
            Axis::Many(v) => v.clone(),
        }
    }
}

/// One entry of `sets:` as written: each axis one value or a list, the
/// entry standing for every combination.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Entry {
    /// A scenario of suites/thor/ by name (`smoke` → suites/thor/smoke.yaml).
    pub scenario: Axis<String>,
    /// `local` or `kind`.
    #[serde(default = "local")]
    pub provider: Axis<String>,
    /// Kubernetes minors (`"1.37"`); default: the scenario's cluster.k8sMinor.
    #[serde(default)]
    pub k8s_minor: Option<Axis<String>>,
    /// Thor's pods on a real node (the local provider's; `--real-node`).
    #[serde(default)]
    pub real_node: bool,
    /// Rounds, each every mode once on fresh clusters.
    pub repeat: u32,
    /// The run order's seed (the recorded one, to replay it); default: the
    /// clock's, printed by the run.
    #[serde(default)]
    pub seed: Option<u64>,
}

fn local() -> Axis<String> {
    Axis::One("local".into())
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Matrix {
    pub sets: Vec<Entry>,
}

/// One run set of the matrix: one baseline file.
#[derive(Debug, Clone, PartialEq)]
pub struct Set {
    pub scenario: String,
    pub provider: String,
    /// None: the scenario's own minor.
    pub k8s_minor: Option<String>,
    pub real_node: bool,
    pub repeat: u32,
    pub seed: Option<u64>,
    /// Where in the file it was written (`sets[2]`), for messages.
    pub at: usize,
}

impl Set {
    /// suites/thor/<scenario>.yaml under `root`.
    pub fn scenario_file(&self, root: &Path) -> PathBuf {
        root.join("suites/thor")
            .join(format!("{}.yaml", self.scenario))
    }

    /// The scenario's minor unless the set names one.
    pub fn minor(&self, root: &Path) -> Result<String> {
        match &self.k8s_minor {
            Some(m) => Ok(m.clone()),
            None => Ok(
                crate::workload::thor::scenario::load(&self.scenario_file(root))?
                    .cluster
                    .k8s_minor,
            ),
        }
    }

    /// The baseline file the set records (`bench thor --record` writes
    /// it there: baseline::file_for, with the scenario's control-plane
    /// profile and the real node).
    pub fn baseline_path(&self, root: &Path) -> Result<PathBuf> {
        let sc = crate::workload::thor::scenario::load(&self.scenario_file(root))?;
        let minor = self.k8s_minor.clone().unwrap_or(sc.cluster.k8s_minor);
        Ok(baseline::file_for(
            root,
            &self.provider,
            &minor,
            &self.scenario,
            &sc.cluster.control_plane.label(),
            self.real_node || sc.cluster.real_node,
        ))
    }

    /// Whether its baseline file is recorded: a regular file there (one
    /// that is not: false). Anything else at its path (a directory, a
    /// FIFO, a device) is an error naming it, not "not recorded yet".
    pub fn recorded(&self, root: &Path) -> Result<bool> {
        let path = self.baseline_path(root)?;
        match std::fs::metadata(&path) {
            Ok(m) if m.is_file() => Ok(true),
            Ok(_) => Err(bad_input(format!(
                "{}: the baseline file of set {:?} is not a regular file (a directory, FIFO or device): remove it or record the set",
                path.display(),
                self.name(root)
            ))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(bad_input(format!(
                "{}: the baseline file of set {:?} cannot be read: {e}",
                path.display(),
                self.name(root)
            ))),
        }
    }

    /// How the set is named in messages and `--only`: "smoke local 1.36",
    /// "smoke local 1.37 real-node", "smoke kind 1.37".
    pub fn name(&self, root: &Path) -> String {
        let minor = self
            .minor(root)
            .unwrap_or_else(|_| "(scenario unreadable)".into());
        let mut s = format!("{} {} {minor}", self.scenario, self.provider);
        if self.real_node {
            s.push_str(" real-node");
        }
        s
    }
}

impl Matrix {
    /// Every set, each entry's axes expanded, in the file's order.
    pub fn sets(&self) -> Vec<Set> {
        let mut out = Vec::new();
        for (at, e) in self.sets.iter().enumerate() {
            let minors: Vec<Option<String>> = match &e.k8s_minor {
                None => vec![None],
                Some(a) => a.values().into_iter().map(Some).collect(),
            };
            for scenario in e.scenario.values() {
                for provider in e.provider.values() {
                    for minor in &minors {
                        out.push(Set {
                            scenario: scenario.clone(),
                            provider: provider.clone(),
                            k8s_minor: minor.clone(),
                            real_node: e.real_node,
                            repeat: e.repeat,
                            seed: e.seed,
                            at,
                        });
                    }
                }
            }
        }
        out
    }

    /// What is wrong beyond types, as (path, message): an unknown
    /// scenario, provider or minor, too few rounds, a real node elsewhere
    /// than the local provider, two sets that would record one file.
    pub fn problems(&self, root: &Path) -> Vec<(Vec<Seg>, String)> {
        let k =
            |i: usize, f: &str| vec![Seg::Key("sets".into()), Seg::Index(i), Seg::Key(f.into())];
        let mut out = Vec::new();
        if self.sets.is_empty() {
            out.push((
                vec![Seg::Key("sets".into())],
                "no sets: name at least one".into(),
            ));
        }
        // Empty axes and the product's bound first, from the lists'
        // lengths alone: nothing below expands a matrix that is refused.
        let mut total: usize = 0;
        for (i, e) in self.sets.iter().enumerate() {
            let mut product: usize = 1;
            for (field, n) in [
                ("scenario", e.scenario.len()),
                ("provider", e.provider.len()),
                ("k8sMinor", e.k8s_minor.as_ref().map_or(1, Axis::len)),
            ] {
                if n == 0 {
                    out.push((
                        k(i, field),
                        format!("an empty list stands for no set: give at least one {field}"),
                    ));
                }
                product = product.saturating_mul(n);
            }
            total = total.saturating_add(product);
        }
        if total > MAX_SETS {
            out.push((
                vec![Seg::Key("sets".into())],
                format!(
                    "the entries' lists multiply into {total} sets, more than {MAX_SETS} (answer::MAX_SETS): name fewer"
                ),
            ));
        }
        if !out.is_empty() {
            return out;
        }
        for (i, e) in self.sets.iter().enumerate() {
            if e.repeat < MIN_ROUNDS {
                out.push((
                    k(i, "repeat"),
                    format!(
                        "{} rounds: the headline's interval needs at least {MIN_ROUNDS}",
                        e.repeat
                    ),
                ));
            }
            for p in e.provider.values() {
                if !PROVIDERS.contains(&p.as_str()) {
                    out.push((
                        k(i, "provider"),
                        format!("{p:?} is not one of {}", PROVIDERS.join(", ")),
                    ));
                } else if e.real_node && p != "local" {
                    out.push((
                        k(i, "realNode"),
                        format!("a real node is the local provider's (on {p} every node is real)"),
                    ));
                }
            }
            for m in e.k8s_minor.iter().flat_map(Axis::values) {
                if crate::k8s::facts::for_minor(&m).is_none() {
                    out.push((
                        k(i, "k8sMinor"),
                        format!(
                            "unknown Kubernetes minor {m:?}; one of {}",
                            crate::k8s::facts::minors().join(", ")
                        ),
                    ));
                }
            }
            for s in e.scenario.values() {
                let ok = !s.is_empty()
                    && s.chars()
                        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
                    && root.join("suites/thor").join(format!("{s}.yaml")).is_file();
                if !ok {
                    out.push((
                        k(i, "scenario"),
                        format!("{s:?}: no scenario suites/thor/{s}.yaml"),
                    ));
                }
            }
        }
        if out.is_empty() {
            let mut seen: Vec<(PathBuf, usize)> = Vec::new();
            for s in self.sets() {
                let Ok(path) = s.baseline_path(root) else {
                    continue;
                };
                if let Some((_, first)) = seen.iter().find(|(p, _)| *p == path) {
                    out.push((
                        vec![Seg::Key("sets".into()), Seg::Index(s.at)],
                        format!(
                            "{} is recorded by sets[{first}] too: one set per baseline file",
                            path.strip_prefix(root).unwrap_or(&path).display()
                        ),
                    ));
                } else {
                    seen.push((path, s.at));
                }
            }
        }
        out
    }
}

/// Decode and check one matrix document (`harness validate` and `load`).
pub fn check(ctx: &Ctx<'_>, v: &serde_json::Value, root: &Path) -> (Option<Matrix>, Vec<Finding>) {
    let (m, mut f) = decode::<Matrix>(ctx, v, "answer matrix");
    if let Some(m) = &m {
        f.extend(
            m.problems(root)
                .into_iter()
                .map(|(p, msg)| ctx.finding(&p, msg)),
        );
    }
    (m, f)
}

/// Read the matrix file; the first finding (file:line:column) is the
/// error, bad input.
pub fn load(root: &Path, path: &Path) -> Result<Matrix> {
    let file = path.display().to_string();
    let text = crate::input::read(path)?;
    let mut matrix = None;
    let mut seen = 0;
    let (_, mut findings) = crate::schema::check_yaml(&file, &text, |ctx, v| {
        seen += 1;
        let (m, mut f) = check(ctx, v, root);
        if seen > 1 {
            f.insert(0, ctx.finding(&[], "a matrix is one YAML document"));
        }
        matrix = matrix.take().or(m);
        f
    });
    if matrix.is_none() && findings.is_empty() {
        findings.push(Finding {
            file: file.clone(),
            line: 1,
            column: 1,
            path: "(file)".into(),
            message: "no document: the file is empty or only comments".into(),
        });
    }
    match (findings.first(), matrix) {
        (None, Some(m)) => Ok(m),
        (Some(f), _) => Err(bad_input(format!("invalid answer matrix: {f}"))),
        (None, None) => unreachable!("no matrix is a finding"),
    }
}

/// The sets `--only` picks: a set whose name contains every word of one
/// of the patterns ("smoke kind", "1.36"); all without patterns. A pattern
/// that picks nothing is bad input naming the sets there are.
pub fn select(root: &Path, sets: Vec<Set>, only: &[String]) -> Result<Vec<Set>> {
    if only.is_empty() {
        return Ok(sets);
    }
    if let Some(p) = only.iter().find(|p| p.trim().is_empty()) {
        return Err(bad_input(format!(
            "--only {p:?}: an empty pattern picks nothing; give a set's name or words of it (\"smoke kind\", \"1.36\")"
        )));
    }
    let names: Vec<String> = sets.iter().map(|s| s.name(root)).collect();
    // A pattern that is a set's whole name picks that set alone; else
    // every set that has each of its words.
    let picks = |pattern: &str, name: &str| {
        if names.iter().any(|n| n == pattern) {
            name == pattern
        } else {
            pattern
                .split_whitespace()
                .all(|w| name.split(' ').any(|p| p == w))
        }
    };
    for pattern in only {
        if !names.iter().any(|n| picks(pattern, n)) {
            return Err(bad_input(format!(
                "--only {pattern:?} picks no set; the sets: {}",
                names.join("; ")
            )));
        }
    }
    Ok(sets
        .into_iter()
        .zip(&names)
        .filter(|(_, n)| only.iter().any(|p| picks(p, n)))
        .map(|(s, _)| s)
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn root() -> PathBuf {
        crate::paths::repo_root(Path::new(env!("CARGO_MANIFEST_DIR"))).expect("repo root")
    }

    fn parse(text: &str) -> (Option<Matrix>, Vec<Finding>) {
        let mut out = (None, Vec::new());
        let (_, f) = crate::schema::check_yaml("m.yaml", text, |ctx, v| {
            let (m, f) = check(ctx, v, &root());
            out.0 = m;
            f
        });
        out.1 = f;
        out
    }

    #[test]
    fn axes_expand_and_each_set_names_its_baseline_file() {
        let (m, f) = parse(
            "sets:\n- scenario: smoke\n  k8sMinor: [\"1.36\", \"1.37\"]\n  repeat: 3\n- scenario: smoke\n  provider: kind\n  repeat: 3\n- scenario: smoke\n  realNode: true\n  repeat: 3\n- scenario: large\n  repeat: 3\n",
        );
        assert!(f.is_empty(), "{f:?}");
        let sets = m.unwrap().sets();
        let r = root();
        let files: Vec<String> = sets
            .iter()
            .map(|s| {
                s.baseline_path(&r)
                    .unwrap()
                    .strip_prefix(&r)
                    .unwrap()
                    .display()
                    .to_string()
            })
            .collect();
        assert_eq!(
            files,
            [
                "baselines/local/1.36/smoke.json",
                "baselines/local/1.37/smoke.json",
                "baselines/kind/1.37/smoke.json",
                "baselines/local/1.37/smoke.real-node.json",
                "baselines/local/1.37/large.tuned.json",
            ]
        );
        assert_eq!(sets[0].name(&r), "smoke local 1.36");
        assert_eq!(sets[3].name(&r), "smoke local 1.37 real-node");
        let kind = select(&r, sets.clone(), &["smoke kind".into()]).unwrap();
        assert_eq!(kind.len(), 1);
        assert_eq!(kind[0].provider, "kind");
        assert_eq!(select(&r, sets.clone(), &["1.36".into()]).unwrap().len(), 1);
        // A whole name picks that set, not the real node's beside it.
        assert_eq!(
            select(&r, sets.clone(), &["smoke local 1.37".into()])
                .unwrap()
                .len(),
            1
        );
        assert_eq!(
            select(&r, sets.clone(), &["smoke 1.37".into()])
                .unwrap()
                .len(),
            3
        );
        let e = select(&r, sets, &["xlarge".into()]).unwrap_err();
        assert_eq!(crate::error::exit_code(&e), crate::error::EXIT_USAGE);
        assert!(format!("{e:#}").contains("smoke kind 1.37"), "{e:#}");
    }

    #[test]
    fn bad_sets_are_named_where_they_are_written() {
        let (_, f) = parse(
            "sets:\n- scenario: smoke\n  repeat: 2\n- scenario: nope\n  repeat: 3\n- scenario: smoke\n  provider: kind\n  realNode: true\n  repeat: 3\n- scenario: smoke\n  k8sMinor: \"1.20\"\n  repeat: 3\n- scenario: smoke\n  provider: existing\n  repeat: 3\n",
        );
        let at: Vec<(usize, &str)> = f.iter().map(|f| (f.line, f.path.as_str())).collect();
        assert_eq!(
            at,
            [
                (3, "sets[0].repeat"),
                (4, "sets[1].scenario"),
                (8, "sets[2].realNode"),
                (11, "sets[3].k8sMinor"),
                (14, "sets[4].provider"),
            ],
            "{f:#?}"
        );
        // Two sets that record one file.
        let (_, f) = parse(
            "sets:\n- scenario: smoke\n  repeat: 3\n- scenario: smoke\n  k8sMinor: \"1.37\"\n  repeat: 5\n",
        );
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(
            f[0].message.contains("recorded by sets[0] too"),
            "{}",
            f[0].message
        );
        // Unknown fields and an empty list.
        let (_, f) = parse("sets:\n- scenario: smoke\n  repeat: 3\n  rounds: 3\n");
        assert!(f[0].message.contains("unknown field `rounds`"), "{f:?}");
        assert_eq!(f[0].path, "sets[0].rounds");
        let (_, f) = parse("sets: []\n");
        assert_eq!(f[0].path, "sets");
        // An empty axis is no set, named where it is written.
        let (_, f) = parse("sets:\n- scenario: smoke\n  repeat: 3\n- scenario: []\n  repeat: 3\n");
        assert_eq!(
            (f[0].line, f[0].path.as_str()),
            (4, "sets[1].scenario"),
            "{f:?}"
        );
        // Lists that multiply past the bound are refused before expanding.
        let minors: Vec<String> = (0..40).map(|i| format!("\"1.{i}\"")).collect();
        let text = format!(
            "sets:\n- scenario: [{}]\n  provider: [{}]\n  k8sMinor: [{}]\n  repeat: 3\n",
            vec!["smoke"; 40].join(", "),
            vec!["local"; 40].join(", "),
            minors.join(", ")
        );
        let (_, f) = parse(&text);
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(f[0].message.contains("64000 sets"), "{}", f[0].message);
    }

    #[test]
    fn a_blank_pattern_picks_nothing() {
        let r = root();
        let (m, _) = parse("sets:\n- scenario: smoke\n  repeat: 3\n");
        for p in ["", "  "] {
            let e = select(&r, m.clone().unwrap().sets(), &[p.into()]).unwrap_err();
            assert_eq!(crate::error::exit_code(&e), crate::error::EXIT_USAGE);
        }
    }

    #[test]
    fn the_repositorys_matrix_is_valid() {
        let r = root();
        let m = load(&r, &r.join("baselines/answer.yaml")).unwrap();
        assert!(m.sets().len() >= 4);
    }
}
