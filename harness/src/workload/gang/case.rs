//! Gang cases as data: `suites/gang/<case>.yaml`. A case applies objects,
//! acts on them (patch, suspend, resume, delete, add nodes, complete pods)
//! and checks what the server did, with expectations keyed by Kubernetes
//! minor ("1.36", "1.37"). A version with no expectation is an error here,
//! never a skip. See suites/gang/README.md for the format.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::k8s::{K8S_PRERELEASES, K8S_RELEASES, K8sRelease};

/// The minors every case must answer for: the released ones.
pub fn minors() -> Vec<&'static str> {
    let mut m: Vec<_> = K8S_RELEASES.iter().map(|r| r.minor).collect();
    m.sort();
    m
}

/// The minors a case answers for: every released one, plus each
/// pre-release minor it gives a behaviour for.
pub fn minors_of(case: &Case) -> Vec<&'static str> {
    let mut m = minors();
    m.extend(
        K8S_PRERELEASES
            .iter()
            .map(|r| r.minor)
            .filter(|p| case.behaviour.contains_key(*p)),
    );
    m.sort();
    m
}

/// Which cluster a case needs.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum Profile {
    /// The version's gang feature gates and runtime-config on.
    #[default]
    Gang,
    /// No gang gates, no scheduling.k8s.io runtime-config.
    GatesOff,
    /// Kueue (the Kueue suite's clusters), no gang gates.
    Kueue,
    /// Kueue and the version's gang gates: does anything gate twice?
    KueueGang,
}

impl Profile {
    pub fn name(self) -> &'static str {
        match self {
            Profile::Gang => "gang",
            Profile::GatesOff => "gates-off",
            Profile::Kueue => "kueue",
            Profile::KueueGang => "kueue-gang",
        }
    }

    /// Whether the profile's clusters serve the gang APIs.
    pub fn gang(self) -> bool {
        matches!(self, Profile::Gang | Profile::KueueGang)
    }

    /// Whether the profile's clusters run Kueue.
    pub fn kueue(self) -> bool {
        matches!(self, Profile::Kueue | Profile::KueueGang)
    }

    /// The profile of a cluster that serves (or not) the gang APIs and
    /// Kueue.
    pub fn of(gang: bool, kueue: bool) -> Profile {
        match (gang, kueue) {
            (true, false) => Profile::Gang,
            (false, false) => Profile::GatesOff,
            (false, true) => Profile::Kueue,
            (true, true) => Profile::KueueGang,
        }
    }
}

/// Fake nodes reserved for one case (labelled and tainted for it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pool {
    pub nodes: u32,
    /// Pods each node has room for (its `pods` capacity).
    pub pods: u32,
}

impl Default for Pool {
    fn default() -> Self {
        Pool {
            nodes: 2,
            pods: 110,
        }
    }
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Case {
    /// One line: what the case shows.
    pub description: String,
    #[serde(default)]
    pub profile: Profile,
    #[serde(default)]
    pub pool: Pool,
    /// Per minor: the behaviour this case pins down, in words (the
    /// matrix shows it beside what was observed).
    pub behaviour: BTreeMap<String, String>,
    #[serde(default)]
    pub steps: Vec<Step>,
    /// A benchmark instead of steps.
    #[serde(default)]
    pub benchmark: Option<Benchmark>,
}

impl Case {
    /// The minor whose entries (behaviour, expectations, results, `only`)
    /// a trial on `release` follows, and whether they are borrowed. A
    /// pre-release minor the case says nothing of is held to the release
    /// before it: its trial says whether that behaviour still holds,
    /// which is what a reader of the next release wants to know.
    pub fn rules_for(&self, release: K8sRelease) -> (&'static str, bool) {
        if self.behaviour.contains_key(release.minor) || !release.is_prerelease() {
            return (release.minor, false);
        }
        match release.previous() {
            Some(p) => (p.minor, true),
            None => (release.minor, false),
        }
    }
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Benchmark {
    /// Gang sizes (pods per gang).
    pub sizes: Vec<u32>,
    /// Repeats per size.
    pub repeats: u32,
    /// Per-gang timeout in seconds.
    #[serde(default = "default_bench_timeout")]
    pub timeout: f64,
}

fn default_bench_timeout() -> f64 {
    300.0
}

#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Step {
    /// Shown in failures and in the report.
    #[serde(default)]
    pub name: Option<String>,
    /// Run only on these minors.
    #[serde(default)]
    pub only: Option<Vec<String>>,
    /// Objects to create or update (server-side apply, strict field
    /// validation): one object or a list.
    #[serde(default)]
    pub apply: Option<Value>,
    #[serde(default)]
    pub patch: Option<PatchStep>,
    /// A Job to suspend / resume.
    #[serde(default)]
    pub suspend: Option<String>,
    #[serde(default)]
    pub resume: Option<String>,
    #[serde(default)]
    pub delete: Option<ObjRef>,
    /// More fake nodes for the case's pool.
    #[serde(default)]
    pub add_nodes: Option<Pool>,
    /// A Job whose bound pods finish (reported Succeeded, as a kubelet would).
    #[serde(default)]
    pub complete: Option<String>,
    /// Checks per minor, polled until they hold.
    #[serde(default)]
    pub expect: Option<BTreeMap<String, Vec<Check>>>,
    /// For an action: accepted (the default) or rejected, per minor.
    #[serde(default)]
    pub result: Option<BTreeMap<String, Outcome>>,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PatchStep {
    pub kind: String,
    pub name: String,
    #[serde(default)]
    pub api_version: Option<String>,
    /// A JSON merge patch.
    pub merge: Value,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ObjRef {
    pub kind: String,
    pub name: String,
    #[serde(default)]
    pub api_version: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Outcome {
    Accepted,
    Rejected(Rejection),
}

#[derive(Debug, Clone, PartialEq, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Rejection {
    /// HTTP code, e.g. 403 or 422.
    #[serde(default)]
    pub code: Option<u16>,
    /// Status reason, e.g. Forbidden, Invalid.
    #[serde(default)]
    pub reason: Option<String>,
    /// A matcher on the message.
    #[serde(default)]
    pub message: Option<Value>,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Check {
    pub kind: String,
    /// Defaults per kind and minor (Workload and PodGroup: the version's
    /// scheduling.k8s.io version).
    #[serde(default)]
    pub api_version: Option<String>,
    /// Only the object of this name.
    #[serde(default)]
    pub name: Option<String>,
    /// Which objects of the kind count (path → matcher).
    #[serde(default, rename = "where")]
    pub filter: BTreeMap<String, Value>,
    /// How many objects must match `where`: a number or {$min, $max}.
    /// Default: at least one.
    #[serde(default)]
    pub count: Option<Value>,
    /// What every matched object must look like (path → matcher).
    #[serde(default)]
    pub fields: BTreeMap<String, Value>,
    /// Variables from the first matched object (by name): var → path.
    #[serde(default)]
    pub capture: BTreeMap<String, String>,
    /// false: the server must not serve this kind at all.
    #[serde(default)]
    pub served: Option<bool>,
    /// Seconds to wait for the check to hold (default 30).
    #[serde(default)]
    pub within: Option<f64>,
    /// Seconds the check must keep holding once it holds (default 0).
    #[serde(default)]
    pub hold: Option<f64>,
}

/// What a step does to the cluster: one action per step (the validator
/// rejects more), each run by its own executor in `steps.rs`.
#[derive(Debug, Clone, Copy)]
pub enum Action<'a> {
    /// Server-side apply, strict field validation: one object or a list.
    Apply(&'a Value),
    /// A JSON merge patch of one object.
    Patch(&'a PatchStep),
    /// A Job's `spec.suspend` set to true / false.
    Suspend(&'a str),
    Resume(&'a str),
    /// Delete with background propagation, as kubectl does.
    Delete(&'a ObjRef),
    /// More nodes in the trial's pool.
    AddNodes(Pool),
    /// A Job's bound pods report Succeeded.
    Complete(&'a str),
}

impl Action<'_> {
    /// The keyword of the case format.
    pub fn keyword(&self) -> &'static str {
        match self {
            Action::Apply(_) => "apply",
            Action::Patch(_) => "patch",
            Action::Suspend(_) => "suspend",
            Action::Resume(_) => "resume",
            Action::Delete(_) => "delete",
            Action::AddNodes(_) => "addNodes",
            Action::Complete(_) => "complete",
        }
    }

    /// Whether the server's answer to it can be expected (`result`).
    pub fn has_result(&self) -> bool {
        !matches!(self, Action::AddNodes(_) | Action::Complete(_))
    }
}

impl Step {
    /// Every action the step names (the validator allows at most one).
    pub fn actions(&self) -> Vec<Action<'_>> {
        let mut a = Vec::new();
        if let Some(v) = &self.apply {
            a.push(Action::Apply(v));
        }
        if let Some(p) = &self.patch {
            a.push(Action::Patch(p));
        }
        if let Some(n) = &self.suspend {
            a.push(Action::Suspend(n));
        }
        if let Some(n) = &self.resume {
            a.push(Action::Resume(n));
        }
        if let Some(d) = &self.delete {
            a.push(Action::Delete(d));
        }
        if let Some(p) = self.add_nodes {
            a.push(Action::AddNodes(p));
        }
        if let Some(n) = &self.complete {
            a.push(Action::Complete(n));
        }
        a
    }

    /// The step's action, None for a pure `expect` step.
    pub fn action(&self) -> Option<Action<'_>> {
        self.actions().into_iter().next()
    }

    pub fn runs_on(&self, minor: &str) -> bool {
        self.only
            .as_ref()
            .is_none_or(|o| o.iter().any(|m| m == minor))
    }

    /// A label for reports: its name or its action.
    pub fn label(&self, index: usize) -> String {
        self.name.clone().unwrap_or_else(|| match self.action() {
            None => format!("step {} (expect)", index + 1),
            Some(a) => format!("step {} ({})", index + 1, a.keyword()),
        })
    }
}

/// Parse a case file's text (one YAML document). Shape errors carry the
/// field path.
pub fn parse(text: &str, origin: &str) -> Result<Case> {
    let docs = crate::yaml::parse(text).map_err(|e| {
        anyhow::anyhow!(
            "{origin}:{}:{}: YAML: {}",
            e.pos.line,
            e.pos.column,
            e.message
        )
    })?;
    let [doc] = docs.as_slice() else {
        anyhow::bail!(
            "{origin}: a case file holds exactly one YAML document, found {}",
            docs.len()
        );
    };
    if let Some(p) = doc.problems.first() {
        anyhow::bail!(
            "{origin}:{}:{}: YAML: {}",
            p.pos.line,
            p.pos.column,
            p.message
        );
    }
    serde_path_to_error::deserialize(doc.root.to_json())
        .map_err(|e| anyhow::anyhow!("{origin}: {}: {}", e.path(), e.inner()))
}

/// The case name of a file: its stem.
pub fn case_name(path: &Path) -> String {
    path.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Every `*.yaml` in `dir`, sorted, as (name, path).
pub fn discover(dir: &Path) -> Result<Vec<(String, std::path::PathBuf)>> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).with_context(|| format!("listing {}", dir.display()))? {
        let path = e?.path();
        if path.extension().is_some_and(|x| x == "yaml") {
            out.push((case_name(&path), path));
        }
    }
    out.sort();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::gang::rules::validate;

    const GOOD: &str = r#"
description: eligible Job
behaviour: {"1.36": gang, "1.37": basic}
steps:
  - apply: {apiVersion: batch/v1, kind: Job, metadata: {name: j}, spec: {}}
  - expect:
      "1.36": [{kind: Workload, capture: {wl: metadata.name}}]
      "1.37": [{kind: Workload, capture: {wl: metadata.name}}]
  - patch: {kind: Job, name: j, merge: {spec: {parallelism: 2}}}
    result:
      "1.36": {rejected: {code: 403, reason: Forbidden, message: {$contains: parallelism}}}
      "1.37": accepted
  - only: ["1.37"]
    expect:
      "1.37": [{kind: PodGroup, fields: {spec.workloadRef.workloadName: "${wl}"}}]
"#;

    fn problems(text: &str) -> Vec<String> {
        validate(&parse(text, "t.yaml").unwrap())
            .iter()
            .map(|p| p.to_string())
            .collect()
    }

    #[test]
    fn a_prerelease_minor_follows_its_own_entries_or_the_release_before() {
        let c = parse(GOOD, "t.yaml").unwrap();
        let r38 = K8sRelease::parse("1.38").unwrap();
        assert_eq!(c.rules_for(r38), ("1.37", true));
        assert_eq!(
            c.rules_for(K8sRelease::parse("1.36").unwrap()),
            ("1.36", false)
        );
        // With its own 1.38 behaviour, the case must answer for 1.38 in
        // every step, and then follows it.
        let own = GOOD.replace(r#""1.37": basic}"#, r#""1.37": basic, "1.38": basic}"#);
        let c = parse(&own, "t.yaml").unwrap();
        assert_eq!(c.rules_for(r38), ("1.38", false));
        assert_eq!(minors_of(&c), ["1.36", "1.37", "1.38"]);
        let p = problems(&own);
        assert!(
            p.iter().any(|p| p.contains("no entry for Kubernetes 1.38")),
            "{p:?}"
        );
        assert!(problems(GOOD).is_empty());
    }

    #[test]
    fn a_good_case_parses_and_validates() {
        let c = parse(GOOD, "t.yaml").unwrap();
        assert_eq!(c.steps.len(), 4);
        assert_eq!(c.profile, Profile::Gang);
        assert_eq!(c.pool, Pool::default());
        assert_eq!(c.steps[2].action().map(|a| a.keyword()), Some("patch"));
        assert!(matches!(
            c.steps[2].result.as_ref().unwrap()["1.36"],
            Outcome::Rejected(_)
        ));
        assert_eq!(
            c.steps[2].result.as_ref().unwrap()["1.37"],
            Outcome::Accepted
        );
        assert!(c.steps[3].runs_on("1.37") && !c.steps[3].runs_on("1.36"));
        assert_eq!(problems(GOOD), Vec::<String>::new());
    }

    #[test]
    fn a_missing_version_is_an_error_not_a_skip() {
        let text = GOOD.replace(
            r#"      "1.37": [{kind: Workload, capture: {wl: metadata.name}}]"#,
            "",
        );
        let p = problems(&text);
        assert!(
            p.iter()
                .any(|p| p.starts_with("steps[1].expect: no entry for Kubernetes 1.37")),
            "{p:?}"
        );
        // And ${wl} is then not defined for later steps.
        assert!(
            p.iter().any(|p| p.contains("${wl} is not defined")),
            "{p:?}"
        );
        let text = GOOD.replace(
            r#"behaviour: {"1.36": gang, "1.37": basic}"#,
            r#"behaviour: {"1.36": gang}"#,
        );
        assert!(
            problems(&text)
                .iter()
                .any(|p| p.starts_with("behaviour: no entry for Kubernetes 1.37"))
        );
    }

    #[test]
    fn wrong_keys_and_shapes_are_reported_with_their_path() {
        let p = problems(&GOOD.replace(
            r#""1.37": accepted"#,
            r#""1.37": accepted
      "1.38": accepted"#,
        ));
        assert!(
            p.iter()
                .any(|p| p.starts_with("steps[2].result.1.38: unknown Kubernetes minor")),
            "{p:?}"
        );
        let p = problems(&GOOD.replace(
            r#"  - only: ["1.37"]
    expect:
      "1.37""#,
            r#"  - only: ["1.37"]
    expect:
      "1.36": [{kind: Pod}]
      "1.37""#,
        ));
        assert!(
            p.iter()
                .any(|p| p.contains("steps[3].expect.1.36: this step does not run on 1.36")),
            "{p:?}"
        );
        let p = problems(&GOOD.replace("{$contains: parallelism}", "{$contain: parallelism}"));
        assert!(
            p.iter().any(|p| p.contains("unknown matcher \"$contain\"")),
            "{p:?}"
        );
        let p = problems(&GOOD.replace("- apply: {apiVersion: batch/v1, kind: Job, metadata: {name: j}, spec: {}}",
            "- apply: {apiVersion: batch/v1, kind: Job, metadata: {name: j, namespace: x}, spec: {}}\n    suspend: j"));
        assert!(
            p.iter()
                .any(|p| p.contains("one action per step, found apply, suspend")),
            "{p:?}"
        );
        assert!(
            p.iter()
                .any(|p| p.contains("apply.metadata.namespace: the runner sets the namespace")),
            "{p:?}"
        );
        let p = problems(&GOOD.replace(
            "[{kind: Workload, capture: {wl: metadata.name}}]\n      \"1.37\"",
            "[{kind: Workload, count: -1}]\n      \"1.37\"",
        ));
        assert!(
            p.iter().any(|p| p.contains("a count is a whole number")),
            "{p:?}"
        );
    }

    #[test]
    fn unknown_fields_and_bad_yaml_fail_to_parse() {
        let e = parse(&GOOD.replace("description:", "descripton:"), "t.yaml")
            .unwrap_err()
            .to_string();
        assert!(e.contains("t.yaml") && e.contains("descripton"), "{e}");
        let e = parse("description: [", "t.yaml").unwrap_err().to_string();
        assert!(e.starts_with("t.yaml:1:"), "{e}");
        let e = parse(
            &GOOD.replace("kind: PodGroup,", "kind: PodGroup, wher: {},"),
            "t.yaml",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("wher"), "{e}");
    }

    #[test]
    fn the_repository_cases_validate() {
        for suite in ["gang", "kueue", "batch"] {
            let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../suites")
                .join(suite);
            let cases = discover(&dir).unwrap();
            assert!(!cases.is_empty(), "no cases in {}", dir.display());
            for (_, path) in cases {
                let c = crate::workload::gang::rules::load(&path).unwrap();
                assert_eq!(
                    c.profile.kueue(),
                    suite == "kueue",
                    "{}: a Kueue profile belongs in suites/kueue",
                    path.display()
                );
            }
        }
    }
}
