//! `harness doctor`, the tools part: for each binary, where it would come
//! from right now (found, cached, download, build) and about how long that
//! takes, and whether the Go toolchain can build. Nothing is installed.

use std::path::PathBuf;
use std::time::Duration;

use serde::Serialize;

use crate::k8s::K8sRelease;
use crate::tools::build::go_version;
use crate::tools::build_cost::cold_build_estimate;
use crate::tools::component::Component;
use crate::tools::exec::find_go;
use crate::tools::http::{ProbeError, block_on, client, probe};
use crate::tools::refused::refused_module;
use crate::tools::release::{artifact, host_arch};
use crate::tools::resolve::{Resolver, Source};
use crate::tools::source::SourceMode;
use crate::tools::versions::MIN_GO;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Way {
    /// Named by a flag or variable, or on PATH at the pinned version.
    Found,
    Cached,
    Download,
    Build,
    /// No way from here.
    Missing,
}

impl std::fmt::Display for Way {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Way::Found => "found",
            Way::Cached => "cached",
            Way::Download => "download",
            Way::Build => "build",
            Way::Missing => "MISSING",
        })
    }
}

/// Whether the release artifact answers from here.
#[derive(Debug, Clone, Serialize)]
pub struct DownloadCheck {
    /// None: there is no release artifact (`note` says why).
    pub url: Option<String>,
    /// The host answered (with the artifact or not).
    pub host_answered: bool,
    /// The artifact can be fetched.
    pub reachable: bool,
    pub size_bytes: Option<u64>,
    /// Why not, or what it is checked against.
    pub note: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct ComponentPlan {
    pub binary: &'static str,
    pub version: String,
    /// Part of what the local provider runs (`Component::CLUSTER`).
    pub needed_for_local: bool,
    pub way: Way,
    /// Where it is, when found or cached.
    pub path: Option<PathBuf>,
    pub download: DownloadCheck,
    /// Seconds it would take: 0 when on the machine, the measured cold
    /// build time for a build; None when unknown (downloads: the network's
    /// speed).
    pub estimate_s: Option<u64>,
    pub detail: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct GoToolchain {
    pub path: Option<PathBuf>,
    pub version: Option<String>,
    pub can_build: bool,
    pub note: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct ToolsReport {
    pub k8s_version: String,
    pub source: SourceMode,
    pub download_base: Option<String>,
    pub go: GoToolchain,
    pub components: Vec<ComponentPlan>,
}

impl ToolsReport {
    /// Every binary the local provider runs can be had.
    pub fn local_ready(&self) -> bool {
        self.components
            .iter()
            .filter(|c| c.needed_for_local)
            .all(|c| c.way != Way::Missing)
    }

    /// What to install or set, one line per problem (empty when ready).
    pub fn fixes(&self) -> Vec<String> {
        let missing: Vec<&ComponentPlan> = self
            .components
            .iter()
            .filter(|c| c.needed_for_local && c.way == Way::Missing)
            .collect();
        if missing.is_empty() {
            return vec![];
        }
        let names = missing
            .iter()
            .map(|c| format!("{} v{}", c.binary, c.version))
            .collect::<Vec<_>>()
            .join(", ");
        let mut out = vec![format!("cannot be had from here: {names}")];
        if self.source != SourceMode::Download && !self.go.can_build {
            out.push(format!(
                "install Go ≥ {}.{} (put `go` on PATH or set HARNESS_GO; ci/ensure-go.sh fetches one through the Go module proxy) so the harness can build them",
                MIN_GO.0, MIN_GO.1
            ));
        }
        if self.source != SourceMode::Build {
            out.push(
                "or let this machine reach the release hosts (dl.k8s.io, github.com), or set HARNESS_DOWNLOAD_BASE to a mirror with their layout".into(),
            );
        }
        if self.source == SourceMode::Download {
            out.push("or use --source auto to build what cannot be downloaded".into());
        }
        out.push(
            "or provide each binary yourself: --bin NAME=PATH, HARNESS_<NAME>_BIN, or PATH at the pinned version".into(),
        );
        out
    }
}

/// "4 min 33 s", "8 s".
pub fn human_duration(d: Duration) -> String {
    let s = d.as_secs();
    if s >= 60 {
        format!("{} min {} s", s / 60, s % 60)
    } else {
        format!("{s} s")
    }
}

fn go_toolchain() -> GoToolchain {
    let Some(go) = find_go() else {
        return GoToolchain {
            path: None,
            version: None,
            can_build: false,
            note: "no Go toolchain (`go` on PATH or HARNESS_GO)".into(),
        };
    };
    match go_version(&go) {
        Ok((major, minor, v)) => {
            let can_build = (major, minor) >= MIN_GO;
            GoToolchain {
                path: Some(go),
                note: if can_build {
                    format!("≥ {}.{}: can build", MIN_GO.0, MIN_GO.1)
                } else {
                    format!("older than {}.{}: cannot build", MIN_GO.0, MIN_GO.1)
                },
                version: Some(v),
                can_build,
            }
        }
        Err(e) => GoToolchain {
            note: format!("{} does not work: {e:#}", go.display()),
            path: Some(go),
            version: None,
            can_build: false,
        },
    }
}

/// Probe every artifact at once (a host that does not answer costs the
/// connect timeout once, not once per binary).
fn download_checks(r: &Resolver, components: &[Component]) -> Vec<DownloadCheck> {
    let unreachable = |url: Option<String>, note: String| DownloadCheck {
        url,
        host_answered: false,
        reachable: false,
        size_bytes: None,
        note,
    };
    let Some(arch) = host_arch() else {
        return components
            .iter()
            .map(|_| unreachable(None, "no release binary for this OS/architecture".into()))
            .collect();
    };
    let artifacts: Vec<_> = components
        .iter()
        .map(|c| artifact(*c, r.k8s, r.download.base.as_deref(), arch))
        .collect();
    if r.source == SourceMode::Build {
        return artifacts
            .into_iter()
            .map(|a| unreachable(a.ok().map(|a| a.url), "not tried: --source build".into()))
            .collect();
    }
    let probed = block_on(|| async {
        let client = match client(&r.download) {
            Ok(c) => c,
            Err(e) => return vec![Err(ProbeError::Unreachable(format!("{e:#}"))); artifacts.len()],
        };
        let probes = artifacts.iter().map(|a| {
            let client = &client;
            async move {
                match a {
                    Ok(a) => probe(client, a, &r.download).await,
                    Err(why) => Err(ProbeError::Answered(why.clone())),
                }
            }
        });
        futures::future::join_all(probes).await
    });
    let probed = probed
        .unwrap_or_else(|e| vec![Err(ProbeError::Unreachable(format!("{e:#}"))); artifacts.len()]);
    artifacts
        .into_iter()
        .zip(probed)
        .map(|(a, p)| match (a, p) {
            (Ok(a), Ok(size)) => DownloadCheck {
                url: Some(a.url.clone()),
                host_answered: true,
                reachable: true,
                size_bytes: size,
                note: format!("sha256 checked against {}", a.checksum.origin()),
            },
            (Ok(a), Err(ProbeError::Unreachable(why))) => {
                unreachable(Some(a.url), format!("not reachable from here: {why}"))
            }
            (Ok(a), Err(ProbeError::Answered(why))) => DownloadCheck {
                host_answered: true,
                ..unreachable(Some(a.url), why)
            },
            (Err(why), _) => unreachable(None, format!("no release binary: {why}")),
        })
        .collect()
}

/// Where each of `components` would come from right now.
pub fn diagnose(r: &Resolver, components: &[Component]) -> ToolsReport {
    let go = go_toolchain();
    let checks = download_checks(r, components);
    let plans = components
        .iter()
        .zip(checks)
        .map(|(&c, download)| {
            let version = c.version(r.k8s);
            let mut plan = ComponentPlan {
                binary: c.name(),
                version,
                needed_for_local: Component::CLUSTER.contains(&c),
                way: Way::Missing,
                path: None,
                download,
                estimate_s: None,
                detail: String::new(),
            };
            match r.find(c) {
                Ok(found) => {
                    plan.way = if found.source == Source::Cache {
                        Way::Cached
                    } else {
                        Way::Found
                    };
                    plan.estimate_s = Some(0);
                    plan.detail = format!(
                        "{} v{} ({})",
                        found.path.display(),
                        found.version,
                        found.source
                    );
                    plan.path = Some(found.path);
                }
                Err(_) => decide(r.source, r.k8s, &go, c, &mut plan),
            }
            plan
        })
        .collect();
    ToolsReport {
        k8s_version: r.k8s.version.to_string(),
        source: r.source,
        download_base: r.download.base.clone(),
        go,
        components: plans,
    }
}

/// Download or build, for a binary the machine does not have: neither
/// when the download cannot be had and the Go module proxy refuses a
/// module it imports (tools/refused.rs), whatever the toolchain.
fn decide(
    mode: SourceMode,
    k8s: K8sRelease,
    go: &GoToolchain,
    c: Component,
    plan: &mut ComponentPlan,
) {
    let dl = &plan.download;
    if mode != SourceMode::Build && dl.reachable {
        plan.way = Way::Download;
        let size = dl
            .size_bytes
            .map(|b| format!("{:.1} MB", b as f64 / 1e6))
            .unwrap_or_else(|| "size unknown".into());
        plan.detail = format!(
            "{size} from {} ({})",
            dl.url.as_deref().unwrap_or_default(),
            dl.note
        );
        return;
    }
    // The host's full answer is on its own line of the report.
    let why_not_download = match mode {
        SourceMode::Build => String::new(),
        _ if dl.url.is_none() || dl.host_answered => format!("{}; ", dl.note),
        _ => "download not reachable from here; ".into(),
    };
    if mode == SourceMode::Download {
        plan.detail = format!("{why_not_download}--source download does not build");
        return;
    }
    if let Some(m) = refused_module(k8s, c) {
        plan.detail = format!(
            "{why_not_download}build: the Go module proxy refuses {} {}, which it imports",
            m.module, m.version
        );
        return;
    }
    if !go.can_build {
        plan.detail = format!("{why_not_download}build: {}", go.note);
        return;
    }
    plan.way = Way::Build;
    let estimate = cold_build_estimate(c);
    plan.estimate_s = Some(estimate.as_secs());
    plan.detail = format!(
        "{why_not_download}build ≈ {} (estimate: the measured cold build in docs/src/binaries.md, 2 cores)",
        human_duration(estimate)
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(way: Way, needed: bool) -> ComponentPlan {
        ComponentPlan {
            binary: "etcd",
            version: "3.6.16".into(),
            needed_for_local: needed,
            way,
            path: None,
            download: DownloadCheck {
                url: Some("https://dl.k8s.io/x".into()),
                host_answered: false,
                reachable: false,
                size_bytes: None,
                note: "not reachable from here: no network".into(),
            },
            estimate_s: None,
            detail: String::new(),
        }
    }

    fn report(source: SourceMode, can_build: bool, plans: Vec<ComponentPlan>) -> ToolsReport {
        ToolsReport {
            k8s_version: "1.37.1".into(),
            source,
            download_base: None,
            go: GoToolchain {
                path: None,
                version: None,
                can_build,
                note: "no Go toolchain".into(),
            },
            components: plans,
        }
    }

    #[test]
    fn ready_means_every_local_binary_can_be_had() {
        let ok = report(
            SourceMode::Auto,
            true,
            vec![plan(Way::Cached, true), plan(Way::Missing, false)],
        );
        assert!(ok.local_ready());
        assert!(ok.fixes().is_empty());
        let bad = report(SourceMode::Auto, false, vec![plan(Way::Missing, true)]);
        assert!(!bad.local_ready());
        let fixes = bad.fixes().join("\n");
        assert!(
            fixes.contains("etcd v3.6.16") && fixes.contains("install Go ≥ 1.26"),
            "{fixes}"
        );
        assert!(fixes.contains("HARNESS_DOWNLOAD_BASE"), "{fixes}");
    }

    #[test]
    fn without_network_auto_plans_a_build_with_the_measured_estimate() {
        let go = GoToolchain {
            path: None,
            version: Some("go1.26.8".into()),
            can_build: true,
            note: "≥ 1.26: can build".into(),
        };
        let mut p = plan(Way::Missing, true);
        let k8s = K8sRelease::default_release();
        decide(SourceMode::Auto, k8s, &go, Component::KubeApiserver, &mut p);
        assert_eq!(p.way, Way::Build);
        assert_eq!(p.estimate_s, Some(197));
        assert!(
            p.detail.contains("not reachable from here") && p.detail.contains("3 min 17 s"),
            "{}",
            p.detail
        );
        let mut p = plan(Way::Missing, true);
        decide(SourceMode::Download, k8s, &go, Component::Etcd, &mut p);
        assert_eq!(p.way, Way::Missing);
        let mut p = plan(Way::Missing, true);
        p.download.reachable = true;
        p.download.size_bytes = Some(80_916_642);
        decide(SourceMode::Auto, k8s, &go, Component::KubeScheduler, &mut p);
        assert_eq!(p.way, Way::Download);
        assert!(p.detail.starts_with("80.9 MB"), "{}", p.detail);
        let mut p = plan(Way::Missing, true);
        decide(SourceMode::Auto, k8s, &go, Component::HpccKubectl, &mut p);
        assert_eq!(p.estimate_s, Some(53));
        // 1.38's kubelet imports a module the proxy refuses: no build.
        let mut p = plan(Way::Missing, false);
        let pre = K8sRelease::parse("1.38").unwrap();
        decide(SourceMode::Auto, pre, &go, Component::Kubelet, &mut p);
        assert_eq!((p.way, p.estimate_s), (Way::Missing, None));
        assert!(
            p.detail
                .contains("refuses sigs.k8s.io/iptables-wrappers v1.0.0"),
            "{}",
            p.detail
        );
    }

    #[test]
    fn durations_read_like_the_readme() {
        assert_eq!(human_duration(Duration::from_secs(273)), "4 min 33 s");
        assert_eq!(human_duration(Duration::from_secs(8)), "8 s");
    }
}
