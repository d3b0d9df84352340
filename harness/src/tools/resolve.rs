//! Finding each binary, in the order a user expects:
//! explicit flag → environment variable → PATH → the harness cache →
//! the official release artifact (verified) → build from Go modules.
//! Which of the last two may run is the source mode (`--source`,
//! `HARNESS_SOURCE`). Every candidate is checked by reading its version.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use serde::Serialize;

use crate::error::{bad_input, env_missing};
use crate::k8s::K8sRelease;
use crate::progress::say;
use crate::tools::build_cost::{cold_build_estimate, longest_chain_first};
use crate::tools::component::Component;
use crate::tools::download::download;
use crate::tools::exec::probe_version;
use crate::tools::http::DownloadConfig;
use crate::tools::refused::refused_module;
use crate::tools::side_by_side::{self, BUILDS_AT_ONCE, Job};
use crate::tools::source::{SourceMode, process_source};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Source {
    Flag,
    Env,
    Path,
    Cache,
    Downloaded,
    Built,
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Source::Flag => "flag",
            Source::Env => "env",
            Source::Path => "PATH",
            Source::Cache => "cache",
            Source::Downloaded => "downloaded",
            Source::Built => "built",
        })
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Resolved {
    pub component: &'static str,
    pub path: PathBuf,
    /// The version the binary reports.
    pub version: String,
    /// The pinned version.
    pub wanted: String,
    pub source: Source,
    /// Candidates passed over on the way, and why.
    pub skipped: Vec<String>,
}

/// Where binaries are looked for. Built from the process environment by
/// `Resolver::from_env`; tests build it by hand.
#[derive(Debug, Clone)]
pub struct Resolver {
    pub k8s: K8sRelease,
    pub cache_dir: PathBuf,
    /// `--bin NAME=PATH` given on the command line.
    pub flags: BTreeMap<Component, PathBuf>,
    /// The values of the `HARNESS_*_BIN` variables.
    pub env: BTreeMap<Component, PathBuf>,
    /// The PATH to search (None: do not search PATH).
    pub path_var: Option<OsString>,
    /// Where a binary found nowhere above comes from.
    pub source: SourceMode,
    /// The release hosts (or mirror) and time limits of downloads.
    pub download: DownloadConfig,
    /// An unusable `HARNESS_SOURCE` or `HARNESS_DOWNLOAD_BASE`: resolving
    /// fails with it (exit 2) rather than guessing.
    pub invalid_env: Option<String>,
}

impl Resolver {
    pub fn from_env(k8s: K8sRelease, flags: BTreeMap<Component, PathBuf>) -> Resolver {
        let env = Component::ALL
            .into_iter()
            .filter_map(|c| {
                std::env::var_os(c.env_var())
                    .filter(|v| !v.is_empty())
                    .map(|v| (c, PathBuf::from(v)))
            })
            .collect();
        let mut invalid_env = None;
        let source = process_source().unwrap_or_else(|e| {
            invalid_env = Some(format!("{e:#}"));
            SourceMode::Auto
        });
        let download = DownloadConfig::from_env().unwrap_or_else(|e| {
            invalid_env = Some(format!("{e:#}"));
            DownloadConfig::default()
        });
        Resolver {
            k8s,
            cache_dir: crate::paths::cache_dir(),
            flags,
            env,
            path_var: std::env::var_os("PATH"),
            source,
            download,
            invalid_env,
        }
    }

    /// `<cache>/bin/<name>-<version>`
    pub fn cached_path(&self, c: Component) -> PathBuf {
        c.cached_path(&self.cache_dir, self.k8s)
    }

    /// Resolve without building. Err carries what was tried and why each
    /// candidate was passed over.
    pub fn find(&self, c: Component) -> std::result::Result<Resolved, Vec<String>> {
        let wanted = c.version(self.k8s);
        let mut skipped = Vec::new();
        let explicit = [
            (self.flags.get(&c), Source::Flag, "--bin".to_string()),
            (self.env.get(&c), Source::Env, c.env_var()),
        ];
        for (path, source, origin) in explicit {
            let Some(path) = path else { continue };
            // An explicit choice is honoured even at another version (a
            // custom build), but it must exist and answer.
            match probe_version(c, path) {
                Ok(version) => {
                    if version != wanted {
                        skipped.push(format!(
                            "{origin} names {} at v{version}, not the pinned v{wanted} (used anyway)",
                            path.display()
                        ));
                    }
                    return Ok(Resolved {
                        component: c.name(),
                        path: path.clone(),
                        version,
                        wanted,
                        source,
                        skipped,
                    });
                }
                Err(e) => {
                    skipped.push(format!("{origin}={}: {e:#}", path.display()));
                    return Err(skipped);
                }
            }
        }
        if let Some(path_var) = &self.path_var
            && let Ok(path) = which::which_in(c.path_name(), Some(path_var), "/")
        {
            match probe_version(c, &path) {
                Ok(v) if v == wanted => {
                    return Ok(Resolved {
                        component: c.name(),
                        path,
                        version: v,
                        wanted,
                        source: Source::Path,
                        skipped,
                    });
                }
                Ok(v) => skipped.push(format!(
                    "PATH has {} at v{v}, not the pinned v{wanted}",
                    path.display()
                )),
                Err(e) => skipped.push(format!("PATH has {}: {e:#}", path.display())),
            }
        }
        let cached = self.cached_path(c);
        if cached.exists() {
            match probe_version(c, &cached) {
                Ok(v) if v == wanted => {
                    return Ok(Resolved {
                        component: c.name(),
                        path: cached,
                        version: v,
                        wanted,
                        source: Source::Cache,
                        skipped,
                    });
                }
                Ok(v) => skipped.push(format!(
                    "cache has {} at v{v}, not v{wanted}",
                    cached.display()
                )),
                Err(e) => skipped.push(format!("cache has {}: {e:#}", cached.display())),
            }
        } else {
            skipped.push(format!("not in the cache ({})", cached.display()));
        }
        Err(skipped)
    }

    /// Resolve, downloading or building (per the source mode) what
    /// nothing on the machine has.
    pub fn resolve(&self, c: Component) -> Result<Resolved> {
        self.check_env()?;
        match self.find(c) {
            Ok(r) => Ok(r),
            Err(skipped) => {
                self.may_obtain(c, &skipped)?;
                self.obtain_resolved(c, skipped)
            }
        }
    }

    /// An unusable `HARNESS_SOURCE` or `HARNESS_DOWNLOAD_BASE` fails
    /// resolving before anything runs.
    fn check_env(&self) -> Result<()> {
        match &self.invalid_env {
            Some(problem) => Err(bad_input(problem.clone())),
            None => Ok(()),
        }
    }

    /// Whether `c`, found nowhere (`skipped` says where not), may be
    /// downloaded or built: not when it was named explicitly.
    fn may_obtain(&self, c: Component, skipped: &[String]) -> Result<()> {
        let explicit = self.flags.contains_key(&c) || self.env.contains_key(&c);
        if !explicit {
            return Ok(());
        }
        Err(env_missing(
            format!(
                "{} named explicitly cannot be used: {}",
                c.name(),
                skipped.join("; ")
            ),
            format!(
                "point {} (or --bin {}=PATH) at a working {} v{}, or unset it to let the harness build one",
                c.env_var(),
                c.name(),
                c.name(),
                c.version(self.k8s)
            ),
        ))
    }

    /// Download or build `c` and check what came.
    fn obtain_resolved(&self, c: Component, mut skipped: Vec<String>) -> Result<Resolved> {
        let (path, source) = self.obtain(c, &mut skipped)?;
        let version = probe_version(c, &path)
            .with_context(|| format!("checking the new {}", path.display()))?;
        Ok(Resolved {
            component: c.name(),
            path,
            version,
            wanted: c.version(self.k8s),
            source,
            skipped,
        })
    }

    /// `obtain_resolved`, and a line saying which it was and how long it
    /// took.
    fn obtain_saying(&self, c: Component, skipped: Vec<String>) -> Result<Resolved> {
        let started = Instant::now();
        let r = self.obtain_resolved(c, skipped)?;
        let verb = match r.source {
            Source::Built => "built",
            _ => "downloaded",
        };
        say(&format!(
            "harness: {verb} {} in {:.0} s",
            label(c, self.k8s),
            started.elapsed().as_secs_f64()
        ));
        Ok(r)
    }

    /// Download or build `c` into the cache, as the source mode says. In
    /// auto mode one line says which it used and why.
    fn obtain(&self, c: Component, skipped: &mut Vec<String>) -> Result<(PathBuf, Source)> {
        let label = label(c, self.k8s);
        let build = |skipped: &[String]| {
            crate::tools::build::build(self.k8s, &self.cache_dir, c, skipped)
                .map(|p| (p, Source::Built))
        };
        if self.source == SourceMode::Build {
            return build(skipped);
        }
        match download(c, self.k8s, &self.cache_dir, &self.download) {
            Ok(d) => {
                if self.source == SourceMode::Auto {
                    say(&format!(
                        "harness: {label}: downloaded {} (sha256 checked against {})",
                        d.url, d.checked_against
                    ));
                }
                Ok((d.path, Source::Downloaded))
            }
            Err(f) if self.source == SourceMode::Download => {
                Err(f.error.context("--source download (nothing is built)"))
            }
            Err(f) if f.falls_back() => {
                say(&format!(
                    "harness: {label}: could not download ({}): building from Go modules",
                    f.reason
                ));
                skipped.push(format!("download: {}", f.reason));
                build(skipped)
            }
            Err(f) => Err(f.error),
        }
    }

    /// Resolve what every local cluster runs (`Component::CLUSTER`) and
    /// the optional components this one also runs (`extra`: Kueue).
    pub fn resolve_all(&self, extra: &[Component]) -> Result<Tools> {
        let wanted: Vec<Component> = Component::CLUSTER
            .into_iter()
            .chain(extra.iter().copied())
            .collect();
        let resolved = self.resolve_many(&wanted)?;
        let bins = wanted
            .into_iter()
            .zip(resolved)
            .map(|(c, (r, _))| (c, r))
            .collect();
        Ok(Tools {
            k8s: Some(self.k8s),
            bins,
        })
    }

    /// Resolve each of `wanted` (in its order, each with how long it
    /// took). What the machine has is found first, one after the other
    /// (a version probe each); what it lacks is then downloaded or built
    /// side by side (`side_by_side`: [`BUILDS_AT_ONCE`] at a time, one per
    /// chain of Go source trees, `GoSource::chain`, the longest first:
    /// `longest_chain_first`). A binary named explicitly that does not work
    /// fails before anything is built, and so does one the Go module proxy
    /// will not let the harness build (tools/refused.rs) when no download
    /// gives it: it is obtained first, alone, as a download may still have
    /// it; side by side, its failure would wait for the builds started
    /// beside it.
    pub fn resolve_many(&self, wanted: &[Component]) -> Result<Vec<(Resolved, Duration)>> {
        self.check_env()?;
        let t0 = Instant::now();
        let mut found: Vec<Option<(Resolved, Duration)>> = Vec::new();
        let mut missing = Vec::new();
        for (i, &c) in wanted.iter().enumerate() {
            let started = Instant::now();
            match self.find(c) {
                Ok(r) => found.push(Some((r, started.elapsed()))),
                Err(skipped) => {
                    self.may_obtain(c, &skipped)?;
                    found.push(None);
                    missing.push((i, c, skipped));
                }
            }
        }
        let (first, mut missing): (Vec<_>, Vec<_>) = missing
            .into_iter()
            .partition(|&(_, c, _)| refused_module(self.k8s, c).is_some());
        let mut obtained = Vec::new();
        for (i, c, skipped) in first {
            let started = Instant::now();
            let r = self.obtain_saying(c, skipped)?;
            obtained.push((i, (r, started.elapsed())));
        }
        longest_chain_first(
            &mut missing,
            |&(_, c, _)| c.go_source(self.k8s).chain(),
            |&(_, c, _)| cold_build_estimate(c),
        );
        let jobs: Vec<Job> = missing
            .iter()
            .map(|&(_, c, _)| Job {
                name: label(c, self.k8s),
                tree: c.go_source(self.k8s).chain(),
            })
            .collect();
        let side_by_side = side_by_side::run(&jobs, BUILDS_AT_ONCE, |j| {
            let (_, c, skipped) = &missing[j];
            self.obtain_saying(*c, skipped.clone())
        })?;
        obtained.extend(missing.iter().map(|&(i, _, _)| i).zip(side_by_side));
        if !obtained.is_empty() {
            let got: Vec<(Resolved, Duration)> = obtained.iter().map(|(_, g)| g.clone()).collect();
            say(&format!(
                "harness: {}",
                obtained_line(wanted.len(), &got, t0.elapsed())
            ));
        }
        for (i, got) in obtained {
            found[i] = Some(got);
        }
        Ok(found
            .into_iter()
            .map(|f| f.expect("each was found or obtained"))
            .collect())
    }
}

/// "kubelet v1.38.0-beta.0": a binary at the version `k8s` pins.
fn label(c: Component, k8s: K8sRelease) -> String {
    format!("{} v{}", c.name(), c.version(k8s))
}

/// `7 binaries resolved in 412 s (3 built, 1 downloaded, 3 at hand;
/// builds side by side, 2 at a time)`: the wall time of resolving them
/// all, every download and build within it.
fn obtained_line(total: usize, obtained: &[(Resolved, Duration)], wall: Duration) -> String {
    let built = obtained
        .iter()
        .filter(|(r, _)| r.source == Source::Built)
        .count();
    let downloaded = obtained.len() - built;
    format!(
        "{total} binaries resolved in {:.0} s ({built} built, {downloaded} downloaded, {} at hand; builds side by side, {BUILDS_AT_ONCE} at a time)",
        wall.as_secs_f64(),
        total - obtained.len()
    )
}

/// The resolved binaries of one Kubernetes release.
#[derive(Debug, Clone, Default)]
pub struct Tools {
    pub k8s: Option<K8sRelease>,
    pub bins: BTreeMap<Component, Resolved>,
}

impl Tools {
    pub fn path(&self, c: Component) -> Result<&Path> {
        self.bins
            .get(&c)
            .map(|r| r.path.as_path())
            .with_context(|| format!("{} was not resolved", c.name()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    /// An executable that prints what a real kube-scheduler prints for
    /// --version: enough to exercise the resolution order.
    fn fake(dir: &Path, name: &str, version_line: &str) -> PathBuf {
        std::fs::create_dir_all(dir).unwrap();
        let path = dir.join(name);
        std::fs::write(&path, format!("#!/bin/sh\necho '{version_line}'\n")).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path
    }

    fn resolver(root: &Path) -> Resolver {
        Resolver {
            k8s: K8sRelease::parse("1.37").unwrap(),
            cache_dir: root.join("cache"),
            flags: BTreeMap::new(),
            env: BTreeMap::new(),
            path_var: Some(root.join("path").into_os_string()),
            source: SourceMode::Build,
            download: DownloadConfig::default(),
            invalid_env: None,
        }
    }

    const C: Component = Component::KubeScheduler;

    #[test]
    fn order_is_flag_env_path_cache() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        let mut r = resolver(root);
        // Only the cache has it.
        let cached = r.cached_path(C);
        fake(
            cached.parent().unwrap(),
            cached.file_name().unwrap().to_str().unwrap(),
            "Kubernetes v1.37.1",
        );
        let found = r.find(C).unwrap();
        assert_eq!(
            (found.source, found.version.as_str()),
            (Source::Cache, "1.37.1")
        );
        // PATH wins over the cache when its version is the pinned one.
        let on_path = fake(&root.join("path"), "kube-scheduler", "Kubernetes v1.37.1");
        let found = r.find(C).unwrap();
        assert_eq!((found.source, &found.path), (Source::Path, &on_path));
        // The env var wins over PATH.
        let from_env = fake(&root.join("env"), "kube-scheduler", "Kubernetes v1.37.1");
        r.env.insert(C, from_env.clone());
        assert_eq!(r.find(C).unwrap().source, Source::Env);
        // The flag wins over everything.
        let from_flag = fake(&root.join("flag"), "kube-scheduler", "Kubernetes v1.37.1");
        r.flags.insert(C, from_flag.clone());
        let found = r.find(C).unwrap();
        assert_eq!((found.source, found.path), (Source::Flag, from_flag));
    }

    #[test]
    fn wrong_versions_on_path_and_in_cache_are_passed_over() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        let r = resolver(root);
        fake(&root.join("path"), "kube-scheduler", "Kubernetes v1.30.0");
        let skipped = r.find(C).unwrap_err();
        assert!(
            skipped[0].contains("v1.30.0, not the pinned v1.37.1"),
            "{skipped:?}"
        );
        assert!(skipped[1].contains("not in the cache"), "{skipped:?}");
        let cached = r.cached_path(C);
        fake(
            cached.parent().unwrap(),
            cached.file_name().unwrap().to_str().unwrap(),
            "garbage",
        );
        let skipped = r.find(C).unwrap_err();
        assert!(skipped[1].contains("printed no version"), "{skipped:?}");
    }

    #[test]
    fn hpcc_kubectl_takes_only_a_kubectl_1_29_7_from_path() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        let r = resolver(root);
        let h = Component::HpccKubectl;
        fake(&root.join("path"), "kubectl", "Client Version: v1.37.1");
        let skipped = r.find(h).unwrap_err();
        assert!(
            skipped[0].contains("v1.37.1, not the pinned v1.29.7"),
            "{skipped:?}"
        );
        // The cluster's own kubectl is happy with the 1.37.1 on PATH.
        assert_eq!(r.find(Component::Kubectl).unwrap().source, Source::Path);
        let on_path = fake(&root.join("path"), "kubectl", "Client Version: v1.29.7");
        let found = r.find(h).unwrap();
        assert_eq!((found.source, &found.path), (Source::Path, &on_path));
        assert_eq!(found.version, "1.29.7");
    }

    #[test]
    fn explicit_binary_at_another_version_is_used_with_a_note() {
        let tmp = tempfile::tempdir().unwrap();
        let mut r = resolver(tmp.path());
        r.env
            .insert(C, fake(&tmp.path().join("e"), "ks", "Kubernetes v1.38.0"));
        let found = r.find(C).unwrap();
        assert_eq!(found.version, "1.38.0");
        assert!(found.skipped[0].contains("used anyway"));
    }

    #[test]
    fn a_broken_explicit_binary_is_an_environment_error() {
        let tmp = tempfile::tempdir().unwrap();
        let mut r = resolver(tmp.path());
        r.flags.insert(C, tmp.path().join("does-not-exist"));
        let err = r.resolve(C).unwrap_err();
        assert_eq!(crate::error::exit_code(&err), crate::error::EXIT_ENV);
        let text = format!("{err:#}");
        assert!(text.contains("HARNESS_KUBE_SCHEDULER_BIN"), "{text}");
        assert!(text.contains("no such file"), "{text}");
    }

    /// Put a fake of `c` at its cached path, answering `version_line`.
    fn cache(r: &Resolver, c: Component, version_line: &str) {
        let cached = r.cached_path(c);
        fake(
            cached.parent().unwrap(),
            cached.file_name().unwrap().to_str().unwrap(),
            version_line,
        );
    }

    #[test]
    fn the_biggest_build_goes_first_kube_apiserver_of_a_cluster() {
        let mut order = Component::CLUSTER.to_vec();
        order.sort_by_key(|&c| std::cmp::Reverse(cold_build_estimate(c)));
        let names: Vec<&str> = order.iter().map(|c| c.name()).collect();
        assert_eq!(
            names,
            [
                "kube-apiserver",
                "kube-controller-manager",
                "jobset-controller",
                "kwok",
                "etcd",
                "kubectl",
                "kube-scheduler"
            ]
        );
    }

    #[test]
    fn what_is_at_hand_resolves_without_building_in_the_order_asked() {
        let tmp = tempfile::tempdir().unwrap();
        let r = resolver(tmp.path());
        cache(&r, Component::Etcd, "etcd Version: 3.6.16");
        cache(&r, C, "Kubernetes v1.37.1");
        let got = r.resolve_many(&[C, Component::Etcd]).unwrap();
        let found: Vec<(&str, Source)> = got.iter().map(|(x, _)| (x.component, x.source)).collect();
        assert_eq!(
            found,
            [("kube-scheduler", Source::Cache), ("etcd", Source::Cache)]
        );
        assert!(!tmp.path().join("cache/go").exists(), "a build was started");
    }

    #[test]
    fn a_broken_explicit_binary_fails_before_any_build_starts() {
        let tmp = tempfile::tempdir().unwrap();
        let mut r = resolver(tmp.path());
        // Everything else is missing and would be built (source: build).
        r.flags.insert(C, tmp.path().join("does-not-exist"));
        let err = r.resolve_many(&Component::CLUSTER).unwrap_err();
        assert_eq!(crate::error::exit_code(&err), crate::error::EXIT_ENV);
        assert!(format!("{err:#}").contains("kube-scheduler named explicitly"));
        assert!(!tmp.path().join("cache/go").exists(), "a build was started");
        assert!(
            !tmp.path().join("cache/logs").exists(),
            "a build was started"
        );
    }

    #[test]
    fn a_binary_the_proxy_will_not_let_us_build_fails_before_any_build_starts() {
        let tmp = tempfile::tempdir().unwrap();
        let mut r = resolver(tmp.path());
        r.k8s = K8sRelease::parse("1.38").unwrap();
        // kube-apiserver comes first and is missing too: it is not built.
        let err = r
            .resolve_many(&[Component::KubeApiserver, Component::Kubelet])
            .unwrap_err();
        assert_eq!(crate::error::exit_code(&err), crate::error::EXIT_ENV);
        let text = format!("{err:#}");
        assert!(
            text.starts_with("kubelet v1.38.0-beta.0 cannot be built here")
                && text.contains("sigs.k8s.io/iptables-wrappers v1.0.0"),
            "{text}"
        );
        assert!(!tmp.path().join("cache/go").exists(), "a build was started");
        assert!(
            !tmp.path().join("cache/logs").exists(),
            "a build was started"
        );
    }

    #[test]
    fn a_failure_to_obtain_is_named_and_nothing_is_half_resolved() {
        let tmp = tempfile::tempdir().unwrap();
        let mut r = resolver(tmp.path());
        r.source = SourceMode::Download;
        cache(&r, Component::Etcd, "etcd Version: 3.6.16");
        // JobSet has no release binary: its job fails, named.
        let err = r
            .resolve_many(&[Component::Etcd, Component::Jobset])
            .unwrap_err();
        let text = format!("{err:#}");
        assert!(
            text.starts_with("jobset-controller v0.12.0 failed: --source download"),
            "{text}"
        );
        assert_eq!(crate::error::exit_code(&err), crate::error::EXIT_ENV);
    }

    #[test]
    fn the_summary_line_counts_builds_downloads_and_what_was_at_hand() {
        let one = |source| {
            let r = Resolved {
                component: "x",
                path: PathBuf::from("/x"),
                version: "1".into(),
                wanted: "1".into(),
                source,
                skipped: Vec::new(),
            };
            (r, Duration::from_secs(1))
        };
        let obtained = [
            one(Source::Built),
            one(Source::Built),
            one(Source::Downloaded),
        ];
        assert_eq!(
            obtained_line(7, &obtained, Duration::from_millis(411_600)),
            "7 binaries resolved in 412 s (2 built, 1 downloaded, 4 at hand; builds side by side, 2 at a time)"
        );
    }

    #[test]
    fn an_unusable_source_setting_is_bad_input_before_anything_runs() {
        let tmp = tempfile::tempdir().unwrap();
        let mut r = resolver(tmp.path());
        r.invalid_env = Some("HARNESS_SOURCE=mirror: not a binary source".into());
        let err = r.resolve(C).unwrap_err();
        assert_eq!(crate::error::exit_code(&err), crate::error::EXIT_USAGE);
        assert!(err.to_string().contains("HARNESS_SOURCE=mirror"), "{err}");
    }

    #[test]
    fn download_mode_fails_with_exit_3_and_never_builds() {
        let tmp = tempfile::tempdir().unwrap();
        let mut r = resolver(tmp.path());
        r.source = SourceMode::Download;
        // JobSet has no release binary: download mode cannot have it.
        let err = r.resolve(Component::Jobset).unwrap_err();
        assert_eq!(crate::error::exit_code(&err), crate::error::EXIT_ENV);
        let text = format!("{err:#}");
        assert!(
            text.contains("--source download (nothing is built): jobset-controller v0.12.0 cannot be downloaded")
                && text.contains("container image"),
            "{text}"
        );
        assert!(!tmp.path().join("cache/go").exists(), "a build was started");
    }

    #[test]
    fn a_version_is_asked_once_until_the_binary_changes() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("etcd");
        let asked = tmp.path().join("asked");
        let write = |v: &str| {
            std::fs::write(
                &path,
                format!(
                    "#!/bin/sh\necho x >> {}\necho 'etcd Version: {v}'\n",
                    asked.display()
                ),
            )
            .unwrap();
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        };
        let times = || {
            std::fs::read_to_string(&asked)
                .unwrap_or_default()
                .lines()
                .count()
        };
        write("3.6.16");
        assert_eq!(probe_version(Component::Etcd, &path).unwrap(), "3.6.16");
        assert_eq!(probe_version(Component::Etcd, &path).unwrap(), "3.6.16");
        assert_eq!(times(), 1, "the second ask was answered from the cache");
        // Replaced in place (same size, a new file; past the file system's
        // clock tick): asked again.
        std::thread::sleep(std::time::Duration::from_millis(30));
        std::fs::remove_file(&path).unwrap();
        write("3.6.17");
        assert_eq!(probe_version(Component::Etcd, &path).unwrap(), "3.6.17");
        assert_eq!(times(), 2);
    }

    #[test]
    fn a_failing_version_command_is_reported() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("etcd");
        std::fs::write(&path, "#!/bin/sh\necho boom >&2\nexit 3\n").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        let err = probe_version(Component::Etcd, &path).unwrap_err();
        assert!(format!("{err:#}").contains("boom"), "{err:#}");
    }
}
