//! The `helm` side of the install: which chart, the command line, finding
//! the binary and running it with its output kept in a log.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use crate::error::{bad_input, env_missing};
use crate::install::hpcc::spec::{HpccMode, NAMESPACE, RELEASE};
use crate::tools::versions::{HELM_VERSION, HPCC_CHART_NAME, HPCC_CHART_REPO, HPCC_CHART_VERSION};

/// Which chart helm installs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChartRef {
    pub chart: String,
    /// `--repo` and `--version` for the released chart only.
    pub repo: Option<String>,
    pub version: Option<String>,
}

pub fn chart_ref(mode: HpccMode, chart: Option<&str>) -> Result<ChartRef> {
    match (mode, chart) {
        (HpccMode::Jobset, None) => Err(bad_input(
            "--hpcc jobset needs --hpcc-chart: the JobSet proof-of-concept chart (a chart \
             directory or .tgz, its https:// URL, oci://REGISTRY/CHART, or REPO/CHART of a \
             repository added with `helm repo add`); the released hpcc chart has no JobSet mode",
        )),
        (HpccMode::Baseline, None) => Ok(ChartRef {
            chart: HPCC_CHART_NAME.into(),
            repo: Some(HPCC_CHART_REPO.into()),
            version: Some(HPCC_CHART_VERSION.into()),
        }),
        (_, Some(c)) => {
            let c = c.trim();
            if c.is_empty() {
                return Err(bad_input("--hpcc-chart is empty"));
            }
            if c.starts_with("https://") || c.starts_with("http://") {
                // A packaged chart's URL: helm fetches it.
                return Ok(ChartRef {
                    chart: c.into(),
                    repo: None,
                    version: None,
                });
            }
            let p = Path::new(c);
            let looks_local =
                c.starts_with('.') || c.starts_with('/') || c.ends_with(".tgz") || p.exists();
            if looks_local {
                let abs = p.canonicalize().map_err(|e| {
                    bad_input(format!(
                        "--hpcc-chart {c}: no such chart directory or file ({e})"
                    ))
                })?;
                if abs.is_dir() && !abs.join("Chart.yaml").is_file() {
                    return Err(bad_input(format!(
                        "--hpcc-chart {c}: {} has no Chart.yaml",
                        abs.display()
                    )));
                }
                return Ok(ChartRef {
                    chart: abs.display().to_string(),
                    repo: None,
                    version: None,
                });
            }
            if !(c.starts_with("oci://") || c.split('/').count() == 2) {
                return Err(bad_input(format!(
                    "--hpcc-chart {c:?}: not a chart path, oci:// reference or REPO/CHART"
                )));
            }
            Ok(ChartRef {
                chart: c.into(),
                repo: None,
                version: None,
            })
        }
    }
}

/// The helm command line (after the binary).
pub fn helm_args(
    chart: &ChartRef,
    kubeconfig: &Path,
    values_file: &Path,
    mode: HpccMode,
) -> Vec<OsString> {
    let mut a: Vec<OsString> = ["upgrade", "--install", RELEASE]
        .into_iter()
        .map(OsString::from)
        .collect();
    a.push(chart.chart.clone().into());
    if let Some(r) = &chart.repo {
        a.extend(["--repo".into(), r.into()]);
    }
    if let Some(v) = &chart.version {
        a.extend(["--version".into(), v.into()]);
    }
    a.extend([
        "--kubeconfig".into(),
        kubeconfig.as_os_str().to_owned(),
        "--namespace".into(),
        NAMESPACE.into(),
        "-f".into(),
        values_file.as_os_str().to_owned(),
    ]);
    if mode == HpccMode::Jobset {
        a.extend(["--set".into(), "thor[0].jobset.enabled=true".into()]);
    }
    a
}

/// `helm` from `$HARNESS_HELM_BIN` or PATH.
pub fn find_helm() -> Result<PathBuf> {
    find_helm_from(
        std::env::var_os("HARNESS_HELM_BIN"),
        std::env::var_os("PATH"),
    )
}

/// `find_helm` with the environment passed in (tests).
pub fn find_helm_from(bin: Option<OsString>, path: Option<OsString>) -> Result<PathBuf> {
    if let Some(p) = bin {
        let p = PathBuf::from(p);
        if p.is_file() {
            return Ok(p);
        }
        return Err(env_missing(
            format!("HARNESS_HELM_BIN={} is not a file", p.display()),
            "point HARNESS_HELM_BIN at a helm binary, or unset it to use helm from PATH",
        ));
    }
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
    which::which_in("helm", path, cwd).map_err(|_| {
        env_missing(
            "helm is not on PATH (it installs the HPCC chart)",
            format!(
                "install helm (CI pins v{HELM_VERSION}): https://helm.sh/docs/intro/install/ \
                 — e.g. unpack https://get.helm.sh/helm-v{HELM_VERSION}-linux-amd64.tar.gz and put \
                 linux-amd64/helm on PATH — or set HARNESS_HELM_BIN"
            ),
        )
    })
}

/// Run helm; its output goes to `log` and the tail of it into the error.
pub(super) async fn run_helm(helm: &Path, args: &[OsString], log: &Path) -> Result<()> {
    let out = tokio::process::Command::new(helm)
        .args(args)
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .output()
        .await
        .with_context(|| format!("running {}", helm.display()))?;
    let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&out.stderr));
    std::fs::write(log, &text).with_context(|| format!("writing {}", log.display()))?;
    if !out.status.success() {
        let tail: Vec<&str> = text.lines().rev().take(20).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        bail!(
            "helm {} failed ({}); output in {}:\n  {}",
            args.iter()
                .map(|a| a.to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join(" "),
            out.status,
            log.display(),
            tail.join("\n  ")
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::exit_code;

    #[test]
    fn chart_references() {
        let e = chart_ref(HpccMode::Jobset, None).unwrap_err();
        assert_eq!(exit_code(&e), 2);
        assert!(e.to_string().contains("--hpcc-chart"), "{e}");
        let c = chart_ref(HpccMode::Baseline, None).unwrap();
        assert_eq!(c.chart, HPCC_CHART_NAME);
        assert_eq!(c.repo.as_deref(), Some(HPCC_CHART_REPO));
        assert_eq!(c.version.as_deref(), Some(HPCC_CHART_VERSION));
        let dir = tempfile::tempdir().unwrap();
        let e = chart_ref(HpccMode::Jobset, Some(dir.path().to_str().unwrap())).unwrap_err();
        assert!(e.to_string().contains("Chart.yaml"), "{e}");
        std::fs::write(dir.path().join("Chart.yaml"), "name: hpcc\n").unwrap();
        let c = chart_ref(HpccMode::Jobset, Some(dir.path().to_str().unwrap())).unwrap();
        assert_eq!(Path::new(&c.chart), dir.path().canonicalize().unwrap());
        assert_eq!((c.repo, c.version), (None, None));
        let e = chart_ref(HpccMode::Jobset, Some("./no/such/chart")).unwrap_err();
        assert_eq!(exit_code(&e), 2);
        let c = chart_ref(HpccMode::Jobset, Some("poc/hpcc")).unwrap();
        assert_eq!(c.chart, "poc/hpcc");
        assert!(chart_ref(HpccMode::Jobset, Some("a/b/c")).is_err());
        let url = "https://example.org/charts/hpcc-poc-10.8.0.tgz";
        assert_eq!(chart_ref(HpccMode::Jobset, Some(url)).unwrap().chart, url);
    }

    #[test]
    fn helm_command_line() {
        let c = chart_ref(HpccMode::Baseline, None).unwrap();
        let s = |a: Vec<OsString>| {
            a.iter()
                .map(|x| x.to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join(" ")
        };
        let b = s(helm_args(
            &c,
            Path::new("/k/kc"),
            Path::new("/s/v.yaml"),
            HpccMode::Baseline,
        ));
        assert_eq!(
            b,
            format!(
                "upgrade --install hpcc hpcc --repo {HPCC_CHART_REPO} --version {HPCC_CHART_VERSION} --kubeconfig /k/kc --namespace default -f /s/v.yaml"
            )
        );
        let poc = ChartRef {
            chart: "/charts/poc".into(),
            repo: None,
            version: None,
        };
        let j = s(helm_args(
            &poc,
            Path::new("/k/kc"),
            Path::new("/s/v.yaml"),
            HpccMode::Jobset,
        ));
        assert!(
            j.ends_with("-f /s/v.yaml --set thor[0].jobset.enabled=true"),
            "{j}"
        );
        assert!(!j.contains("--version"), "{j}");
    }

    #[test]
    fn missing_helm_says_how_to_install_it() {
        let empty = tempfile::tempdir().unwrap();
        let e = find_helm_from(None, Some(empty.path().as_os_str().to_owned())).unwrap_err();
        assert_eq!(exit_code(&e), 3);
        let msg = format!("{e:#}");
        assert!(msg.contains("helm is not on PATH"), "{msg}");
        assert!(msg.contains(HELM_VERSION), "{msg}");
        let e = find_helm_from(Some("/no/such/helm".into()), None).unwrap_err();
        assert_eq!(exit_code(&e), 3);
        // A helm on PATH is found.
        let bin = empty.path().join("helm");
        std::fs::write(&bin, "#!/bin/sh\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
        let found = find_helm_from(None, Some(empty.path().as_os_str().to_owned())).unwrap();
        assert_eq!(found, bin);
    }
}
