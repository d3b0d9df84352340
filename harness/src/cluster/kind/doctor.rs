//! What the kind provider needs on this machine, as it would find it
//! (`harness doctor`'s kind section): docker and the engine that answers,
//! kind at the pinned release or newer, kubectl, helm for HPCC, and
//! debootstrap for node images built here. Each program is asked for its
//! version, at most 10 s.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Result;

use crate::cluster::kind::commands::{install_hint, parse_kind_version};
use crate::tools::command::{Cmd, output, tail};
use crate::tools::versions::KIND_VERSION;

/// One program the kind provider runs.
#[derive(Debug, serde::Serialize)]
pub struct ProgramCheck {
    pub program: &'static str,
    pub path: Option<PathBuf>,
    pub ok: bool,
    pub detail: String,
}

/// Run `program args` for at most 10 s: its status and output, or why not.
async fn ask(program: &std::path::Path, args: &[&str]) -> Result<std::process::Output> {
    let cmd = Cmd::new(program, args);
    tokio::time::timeout(Duration::from_secs(10), output(&cmd))
        .await
        .map_err(|_| anyhow::anyhow!("`{}` did not finish within 10 s", cmd.display()))?
}

/// docker (and which engine answers), kind (at the pinned release or
/// newer), kubectl, helm (HPCC only: `helm` is where HPCC's installer
/// finds it, None when it does not) and for node images built here
/// debootstrap: what the kind provider needs, as it would find it (PATH,
/// then the harness's own kind and kubectl).
pub async fn checks(helm: Option<PathBuf>) -> Vec<ProgramCheck> {
    let mut out = Vec::new();
    let search = crate::cluster::kind::commands::KindEnv::from_process().search_path;
    let cwd = std::env::current_dir().unwrap_or_else(|_| "/".into());
    for program in ["docker", "kind", "kubectl", "helm", "debootstrap"] {
        let path = if program == "helm" {
            helm.clone()
        } else {
            which::which_in(program, Some(&search), &cwd).ok()
        };
        if program == "debootstrap" {
            out.push(ProgramCheck {
                program,
                ok: path.is_some(),
                detail: match &path {
                    Some(_) => "builds the node images' Debian root filesystem (--kind-images built)".into(),
                    None => "missing: node images cannot be built here (--kind-images built); apt-get install debootstrap, or ci/ensure-docker.sh as root".into(),
                },
                path,
            });
            continue;
        }
        let Some(path) = path else {
            out.push(ProgramCheck {
                program,
                path: None,
                ok: false,
                detail: format!("not on PATH: install {}", install_hint(program)),
            });
            continue;
        };
        let args: &[&str] = match program {
            "docker" => &["info", "--format", "{{.ServerVersion}}"],
            "kind" => &["version"],
            "kubectl" => &["version", "--client"],
            _ => &["version", "--short"],
        };
        let (ok, detail) = match ask(&path, args).await {
            Err(e) => (false, format!("{e:#}")),
            Ok(o) if !o.status.success() => (
                false,
                format!(
                    "`{program} {}` failed ({}){}:\n{}",
                    args.join(" "),
                    o.status,
                    if program == "docker" {
                        format!(
                            "; engine tried: {}; as root on Debian `bash ci/ensure-docker.sh` starts a private one the harness finds",
                            crate::tools::engine::engine().how
                        )
                    } else {
                        String::new()
                    },
                    tail(&o, 4)
                ),
            ),
            Ok(o) => {
                let text = String::from_utf8_lossy(&o.stdout);
                let first = text.lines().next().unwrap_or_default().trim().to_string();
                match program {
                    "docker" => {
                        let e = crate::tools::engine::engine();
                        (
                            true,
                            format!(
                                "engine: {}{} answers (server {first})",
                                e.how,
                                e.host
                                    .as_deref()
                                    .map(|h| format!(" at {h}"))
                                    .unwrap_or_default()
                            ),
                        )
                    }
                    "kind" => {
                        let want = parse_kind_version(&format!("v{KIND_VERSION}"));
                        match parse_kind_version(&first) {
                            Some(v) if Some(v) >= want => (true, first),
                            _ => (
                                false,
                                format!(
                                    "{first:?}: older than v{KIND_VERSION} or unreadable; install {}",
                                    install_hint("kind")
                                ),
                            ),
                        }
                    }
                    _ => (true, first),
                }
            }
        };
        out.push(ProgramCheck {
            program,
            path: Some(path),
            ok,
            detail,
        });
    }
    out
}
