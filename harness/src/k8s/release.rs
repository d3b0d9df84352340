//! The Kubernetes releases the harness runs — one pinned patch release per
//! minor — and the facts that differ between them (gang feature gates, the
//! Workload/PodGroup API version). The pins of every other component are in
//! tools/versions.rs.
//!
//! Why these patch releases: they were the newest whose module zips the
//! Go module proxy served when pinned (v1.36.5 has no checksum-database
//! entry). k8s.io/kubernetes v1.37.2 is served since, with its whole
//! module graph (checked 2026-11-29); moving 1.37 to it rebuilds every
//! 1.37 binary and the kind node image and re-records the 1.37 baselines.
//!
//! A pre-release minor (`K8S_PRERELEASES`: 1.38 as v1.38.0-beta.0) is
//! known — `--k8s-version 1.38` builds and runs it (but its kubelet and
//! kube-proxy, which import a module the Go module proxy refuses:
//! tools/refused.rs), `harness validate` checks against its facts — but
//! no default run includes it: the suites
//! add it when `HARNESS_PRERELEASE_MINORS` names it (`releases_to_run`).
//! Moving it to its release is one line: its entry goes from
//! `K8S_PRERELEASES` to `K8S_RELEASES` with the released version.

use std::collections::BTreeMap;

use anyhow::Result;

use crate::error::bad_input;

/// A Kubernetes minor release the harness can run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct K8sRelease {
    /// "1.37"
    pub minor: &'static str,
    /// "1.37.1" (no leading v)
    pub version: &'static str,
}

pub const K8S_RELEASES: &[K8sRelease] = &[
    K8sRelease {
        minor: "1.37",
        version: "1.37.1",
    },
    K8sRelease {
        minor: "1.36",
        version: "1.36.4",
    },
];

/// Minors not yet released, pinned to a pre-release build: known to
/// `parse`, run only when asked for.
pub const K8S_PRERELEASES: &[K8sRelease] = &[K8sRelease {
    minor: "1.38",
    version: "1.38.0-beta.0",
}];

/// The environment variable naming the pre-release minors a run adds
/// (comma separated, e.g. "1.38").
pub const PRERELEASE_MINORS_ENV: &str = "HARNESS_PRERELEASE_MINORS";

pub const DEFAULT_K8S_MINOR: &str = "1.37";

/// The releases a suite or benchmark keyed by version runs, oldest
/// first: every release, plus the pre-release minors
/// `HARNESS_PRERELEASE_MINORS` names. A name there that is no
/// pre-release minor is an error (exit 2), not ignored.
pub fn releases_to_run() -> Result<Vec<K8sRelease>> {
    let asked = std::env::var(PRERELEASE_MINORS_ENV).unwrap_or_default();
    releases_with(&asked)
}

/// The environment variable naming the released minors the test suites
/// run (comma separated, e.g. "1.37,1.36"); unset or empty: the default
/// minor alone. CI (`.ci/run`) names every release.
pub const MINORS_ENV: &str = "HARNESS_MINORS";

/// The releases the test suites run, oldest first: the released minors
/// `HARNESS_MINORS` names (the default minor when it names none), plus
/// the pre-release minors `HARNESS_PRERELEASE_MINORS` names. The minor
/// before the default runs the same cases against the same expectations
/// keyed by version, and building its binaries from Go modules costs a
/// fresh machine about 13 min of build time: the README's test command
/// leaves it to those who ask (and to CI). A name that is no released
/// minor is an error (exit 2), not ignored. `releases_to_run` (every
/// release) stays what `harness bench gang` runs by default.
pub fn releases_for_suites() -> Result<Vec<K8sRelease>> {
    let minors = std::env::var(MINORS_ENV).unwrap_or_default();
    let pre = std::env::var(PRERELEASE_MINORS_ENV).unwrap_or_default();
    suites_releases_with(&minors, &pre)
}

fn suites_releases_with(minors: &str, prerelease: &str) -> Result<Vec<K8sRelease>> {
    let mut out = named(
        MINORS_ENV,
        minors,
        K8S_RELEASES,
        &format!(
            "released minor (released: {{}}; a pre-release minor goes in {PRERELEASE_MINORS_ENV})"
        ),
    )?;
    if out.is_empty() {
        out.push(K8sRelease::default_release());
    }
    for r in releases_with(prerelease)? {
        if r.is_prerelease() && !out.contains(&r) {
            out.push(r);
        }
    }
    out.sort();
    Ok(out)
}

fn releases_with(asked: &str) -> Result<Vec<K8sRelease>> {
    let mut out = K8S_RELEASES.to_vec();
    for r in named(
        PRERELEASE_MINORS_ENV,
        asked,
        K8S_PRERELEASES,
        "pre-release minor (known: {})",
    )? {
        if !out.contains(&r) {
            out.push(r);
        }
    }
    out.sort();
    Ok(out)
}

/// The releases of `table` that `value` (environment variable `var`'s,
/// comma separated minors, "v" allowed) names, each once, in its order.
/// A name not in `table` is an error (exit 2) saying it is no `what`
/// (its "{}" replaced by the table's minors).
fn named(var: &str, value: &str, table: &[K8sRelease], what: &str) -> Result<Vec<K8sRelease>> {
    let mut out: Vec<K8sRelease> = Vec::new();
    for m in value.split(',').map(str::trim).filter(|m| !m.is_empty()) {
        let Some(r) = table.iter().find(|r| r.minor == m.trim_start_matches('v')) else {
            let minors: Vec<&str> = table.iter().map(|r| r.minor).collect();
            return Err(bad_input(format!(
                "{var}={value:?}: {m:?} is no {}",
                what.replace("{}", &minors.join(", "))
            )));
        };
        if !out.contains(r) {
            out.push(*r);
        }
    }
    Ok(out)
}

impl K8sRelease {
    /// Accepts "1.37", "v1.37", "1.37.1" or "v1.37.1". A patch version must
    /// be the pinned one: the harness builds and tests exactly one patch
    /// release per minor.
    pub fn parse(s: &str) -> Result<K8sRelease> {
        let s = s.trim().trim_start_matches('v');
        let known = || {
            K8S_RELEASES
                .iter()
                .map(|r| format!("{} ({})", r.minor, r.version))
                .chain(
                    K8S_PRERELEASES
                        .iter()
                        .map(|r| format!("{} ({}, a pre-release)", r.minor, r.version)),
                )
                .collect::<Vec<_>>()
                .join(", ")
        };
        for r in K8S_RELEASES.iter().chain(K8S_PRERELEASES) {
            if s == r.minor || s == r.version {
                return Ok(*r);
            }
        }
        Err(bad_input(format!(
            "unsupported Kubernetes version {s:?}: this harness runs {}",
            known()
        )))
    }

    /// Whether this is a pre-release minor (not yet released upstream).
    pub fn is_prerelease(&self) -> bool {
        K8S_PRERELEASES.contains(self)
    }

    /// The release before this one among those the harness knows (1.37
    /// for 1.38): what a pre-release minor is compared with.
    pub fn previous(&self) -> Option<K8sRelease> {
        K8S_RELEASES
            .iter()
            .chain(K8S_PRERELEASES)
            .filter(|r| r.minor_number() < self.minor_number())
            .max()
            .copied()
    }

    pub fn default_release() -> K8sRelease {
        // The table holds the default; a missing entry is a programming error.
        K8S_RELEASES
            .iter()
            .copied()
            .find(|r| r.minor == DEFAULT_K8S_MINOR)
            .expect("DEFAULT_K8S_MINOR is in K8S_RELEASES")
    }

    /// (major, minor) as numbers, for version-keyed behaviour.
    pub fn minor_number(&self) -> u32 {
        self.minor
            .split('.')
            .nth(1)
            .and_then(|m| m.parse().ok())
            .expect("K8S_RELEASES minors are of the form 1.N")
    }

    /// The feature gates that turn on gang scheduling (the Workload and
    /// PodGroup APIs and the scheduler's all-or-nothing placement) in this
    /// release, for every component. From shared/notes/gang-scheduling.md,
    /// checked against the real servers by the Thor gang benchmark.
    pub fn gang_feature_gates(&self) -> BTreeMap<String, bool> {
        let names: &[&str] = match self.minor_number() {
            36 => &["GenericWorkload", "GangScheduling"],
            _ => &["GenericWorkload"],
        };
        names.iter().map(|n| (n.to_string(), true)).collect()
    }

    /// Gang scheduling plus the Job controller's integration (KEP-5547):
    /// the Job controller creates a Workload and a PodGroup for eligible
    /// Jobs. The gang suite's clusters run with these.
    pub fn job_gang_feature_gates(&self) -> BTreeMap<String, bool> {
        let mut g = self.gang_feature_gates();
        g.insert("WorkloadWithJob".to_string(), true);
        g
    }

    /// The API version serving Workload and PodGroup in this release.
    pub fn gang_api_version(&self) -> &'static str {
        match self.minor_number() {
            36 => "scheduling.k8s.io/v1alpha2",
            _ => "scheduling.k8s.io/v1beta1",
        }
    }

    pub fn gang_runtime_config(&self) -> BTreeMap<String, String> {
        BTreeMap::from([(self.gang_api_version().to_string(), "true".to_string())])
    }

    /// The version of the k8s.io staging modules (v0.Y.Z for v1.Y.Z).
    pub fn staging_version(&self) -> String {
        format!("v0.{}", self.version.trim_start_matches("1."))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_accepts_minor_and_pinned_patch() {
        assert_eq!(K8sRelease::parse("1.37").unwrap().version, "1.37.1");
        assert_eq!(K8sRelease::parse("v1.36").unwrap().version, "1.36.4");
        assert_eq!(K8sRelease::parse("1.36.4").unwrap().minor, "1.36");
        let e = K8sRelease::parse("1.30").unwrap_err();
        assert_eq!(crate::error::exit_code(&e), 2);
        assert!(e.to_string().contains("1.37 (1.37.1)"), "{e}");
        assert!(K8sRelease::parse("1.37.2").is_err());
    }

    #[test]
    fn the_suites_run_the_default_minor_unless_told_which() {
        let minors = |m: &str, p: &str| -> Vec<&str> {
            suites_releases_with(m, p)
                .unwrap()
                .iter()
                .map(|r| r.minor)
                .collect()
        };
        assert_eq!(minors("", ""), [DEFAULT_K8S_MINOR]);
        assert_eq!(minors(" , ", ""), [DEFAULT_K8S_MINOR]);
        assert_eq!(minors("1.37,1.36", ""), ["1.36", "1.37"]);
        assert_eq!(minors("v1.36", ""), ["1.36"]);
        assert_eq!(minors("1.36,1.36", "1.38"), ["1.36", "1.38"]);
        assert_eq!(minors("", "1.38"), ["1.37", "1.38"]);
        for (m, p, says) in [
            ("1.38", "", "\"1.38\" is no released minor"),
            ("1.30", "", "released: 1.37, 1.36"),
            ("", "1.36", "1.36"),
        ] {
            let e = suites_releases_with(m, p).unwrap_err();
            assert_eq!(crate::error::exit_code(&e), 2);
            assert!(e.to_string().contains(says), "{e}");
        }
    }

    #[test]
    fn a_prerelease_minor_is_known_and_run_only_when_asked_for() {
        let r = K8sRelease::parse("1.38").unwrap();
        assert_eq!(r.version, "1.38.0-beta.0");
        assert!(r.is_prerelease());
        assert!(!K8sRelease::default_release().is_prerelease());
        assert_eq!(r.previous().unwrap().minor, "1.37");
        assert_eq!(r.staging_version(), "v0.38.0-beta.0");
        assert_eq!(K8sRelease::parse("v1.38.0-beta.0").unwrap(), r);
        let e = K8sRelease::parse("1.39").unwrap_err();
        assert!(
            e.to_string()
                .contains("1.38 (1.38.0-beta.0, a pre-release)"),
            "{e}"
        );
        let minors = |asked: &str| {
            releases_with(asked)
                .unwrap()
                .iter()
                .map(|r| r.minor)
                .collect::<Vec<_>>()
        };
        assert_eq!(minors(""), ["1.36", "1.37"]);
        assert_eq!(minors("1.38"), ["1.36", "1.37", "1.38"]);
        assert_eq!(minors(" 1.38, 1.38 "), ["1.36", "1.37", "1.38"]);
        let e = releases_with("1.37").unwrap_err();
        assert_eq!(crate::error::exit_code(&e), 2);
        assert!(e.to_string().contains("is no pre-release minor"), "{e}");
    }

    #[test]
    fn derived_versions() {
        let r = K8sRelease::parse("1.37").unwrap();
        assert_eq!(r.minor_number(), 37);
        assert_eq!(r.staging_version(), "v0.37.1");
        assert_eq!(K8sRelease::default_release().minor, DEFAULT_K8S_MINOR);
        let g = K8sRelease::parse("1.36").unwrap().job_gang_feature_gates();
        assert_eq!(
            g.keys().collect::<Vec<_>>(),
            ["GangScheduling", "GenericWorkload", "WorkloadWithJob"]
        );
    }

    #[test]
    fn job_gang_gates_exist_in_each_release() {
        // Every gate named here is a real gate of that release (the facts
        // tables are generated from the releases' sources).
        for r in K8S_RELEASES.iter().chain(K8S_PRERELEASES) {
            let facts = super::super::facts::for_minor(r.minor).unwrap();
            for g in r.job_gang_feature_gates().keys() {
                assert!(facts.gate(g).is_some(), "{} has no gate {g}", r.minor);
            }
            assert!(
                facts.has_runtime_config_key(r.gang_api_version()),
                "{}",
                r.minor
            );
        }
    }
}
