//! Kueue as a local process: its command line and its Configuration.
//!
//! The Configuration starts from the one Kueue's own manifests deploy
//! (`config/components/manager/controller_manager_config.yaml` in the
//! sigs.k8s.io/kueue module, read from the Go module cache), so client
//! QPS/burst and controller concurrency are a real install's. The harness
//! changes only what a process on loopback needs or what the cluster spec
//! asks for:
//! - every listener on 127.0.0.1 at a port of its own (webhooks with our
//!   serving certificate, health, metrics, the visibility server);
//! - `internalCertManagement` off (the webhooks' CA is the cluster's) and
//!   leader election off (one replica, as `harness up` runs every
//!   controller);
//! - `integrations.frameworks`: `batch/job` and `jobset.x-k8s.io/jobset`,
//!   the two kinds the harness runs (the other frameworks' webhooks stay
//!   registered and answer as no-ops, as in a release install);
//! - `waitForPodsReady` from the spec (when it gives none, Kueue's own
//!   default applies: on, 30-minute timeout, as in a release install).
//!
//! One thing cannot be configured: with `internalCertManagement` off,
//! Kueue's `main` (cmd/kueue/main.go) reads its metrics serving
//! certificate from the fixed directory `/etc/kueue/metrics/certs` and
//! exits when it is missing. Kueue's own cert rotator is no way out: its
//! certificates name `<service>.<namespace>.svc`, which the API server
//! cannot reach on loopback. So the process runs in a private mount
//! namespace (`unshare --user --map-root-user --mount`) whose /etc is a
//! read-only overlay of the cluster's `kueue-etc` directory (holding that
//! certificate) over the real /etc: nothing on the machine changes, and
//! the PID the harness records is Kueue's own (each step `exec`s).

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

use crate::cluster::controllers::KUEUE_NAMESPACE;
use crate::cluster::local::layout::{Layout, Ports};
use crate::cluster::spec::KueueSpec;
use crate::tools::modules::{module_dir, read_module_file};
use crate::tools::versions::KUEUE_VERSION;

/// The frameworks the harness enables.
pub const FRAMEWORKS: &[&str] = &["batch/job", "jobset.x-k8s.io/jobset"];

const UPSTREAM_CONFIG: &str = "config/components/manager/controller_manager_config.yaml";

fn p(path: std::path::PathBuf) -> String {
    path.display().to_string()
}

/// The controller's command line (the log level of Kueue's manager.yaml).
/// The component's name: its kubeconfig, its log and its process name.
pub const NAME: &str = "kueue-controller";

pub fn args(l: &Layout) -> Vec<String> {
    vec![
        format!("--kubeconfig={}", p(l.kubeconfig(NAME))),
        format!("--config={}", p(l.kueue_config())),
        "--zap-log-level=2".into(),
    ]
}

/// Where, under the overlay directory, Kueue looks for its metrics
/// certificate (`/etc/kueue/metrics/certs` in cmd/kueue/main.go).
pub const METRICS_CERT_DIR: &str = "kueue/metrics/certs";
/// Where, under the overlay directory, the visibility server looks for its
/// certificate (tools/component.rs moves it there at build time).
pub use crate::tools::component::KUEUE_VISIBILITY_CERT_DIR as VISIBILITY_CERT_DIR;

/// The command line that runs `bin args` with `etc_dir` laid over /etc.
pub fn in_etc_overlay(
    etc_dir: &std::path::Path,
    bin: &std::path::Path,
    args: &[String],
) -> (std::path::PathBuf, Vec<String>) {
    let mut argv: Vec<String> = [
        "--user",
        "--map-root-user",
        "--mount",
        "--",
        "/bin/sh",
        "-c",
        "d=$1; shift; mount -t overlay harness-etc -o \"lowerdir=$d:/etc\" /etc && exec \"$@\"",
        NAME,
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    argv.push(p(etc_dir.to_path_buf()));
    argv.push(p(bin.to_path_buf()));
    argv.extend(args.iter().cloned());
    (std::path::PathBuf::from("unshare"), argv)
}

/// Whether this machine lets the harness make the mount namespace Kueue
/// runs in, with `etc_dir` laid over /etc (unprivileged overlayfs needs
/// Linux ≥ 5.11): an error saying what to change (exit 3) when it does not.
pub fn check_namespaces(etc_dir: &std::path::Path) -> Result<()> {
    let (bin, argv) = in_etc_overlay(etc_dir, std::path::Path::new("true"), &[]);
    let probe = std::process::Command::new(bin)
        .args(argv)
        .stdin(std::process::Stdio::null())
        .output();
    let why = match probe {
        Ok(o) if o.status.success() => return Ok(()),
        Ok(o) => String::from_utf8_lossy(&o.stderr).trim().to_string(),
        Err(e) => format!("cannot run unshare (util-linux): {e}"),
    };
    Err(crate::error::env_missing(
        format!(
            "Kueue v{KUEUE_VERSION} needs a private mount namespace on the local provider \
             (it reads its metrics certificate from /etc/kueue/metrics/certs), and \
             `unshare --user --map-root-user --mount` with an overlay on /etc failed: {why}"
        ),
        "allow unprivileged user namespaces (e.g. sysctl kernel.apparmor_restrict_unprivileged_userns=0 \
         on Ubuntu ≥ 23.10, kernel.unprivileged_userns_clone=1 on older Debian) on Linux ≥ 5.11, \
         or run --kueue on --provider kind",
    ))
}

/// The Configuration file for a local Kueue, from the module's own.
pub fn config(l: &Layout, ports: &Ports, spec: &KueueSpec) -> Result<String> {
    let dir = module_dir("sigs.k8s.io/kueue", &format!("v{KUEUE_VERSION}"))?;
    let text = read_module_file(&dir, UPSTREAM_CONFIG)?;
    let upstream: Value = serde_saphyr::from_str(&text)
        .with_context(|| format!("parsing {}/{UPSTREAM_CONFIG}", dir.display()))?;
    let cfg = localize(upstream, l, ports, spec)
        .with_context(|| format!("adapting {}/{UPSTREAM_CONFIG}", dir.display()))?;
    let body = serde_saphyr::to_string(&cfg).context("writing Kueue's Configuration")?;
    Ok(format!(
        "# Generated by the harness from sigs.k8s.io/kueue@v{KUEUE_VERSION}/{UPSTREAM_CONFIG}.\n{body}"
    ))
}

/// The upstream Configuration with the local changes (see the module doc).
pub fn localize(mut cfg: Value, l: &Layout, ports: &Ports, spec: &KueueSpec) -> Result<Value> {
    if cfg["kind"] != "Configuration" {
        bail!("not a Kueue Configuration (kind {})", cfg["kind"]);
    }
    let certs = p(l.kueue_cert_dir());
    let obj = cfg.as_object_mut().context("a mapping")?;
    obj.insert("namespace".into(), json!(KUEUE_NAMESPACE));
    obj.insert(
        "health".into(),
        json!({"healthProbeBindAddress": format!("127.0.0.1:{}", ports.kueue_health)}),
    );
    let mut metrics = obj.get("metrics").cloned().unwrap_or_else(|| json!({}));
    metrics["bindAddress"] = json!(format!("127.0.0.1:{}", ports.kueue_metrics));
    obj.insert("metrics".into(), metrics);
    obj.insert(
        "webhook".into(),
        json!({"host": "127.0.0.1", "port": ports.kueue_webhook, "certDir": certs}),
    );
    obj.insert("leaderElection".into(), json!({"leaderElect": false}));
    obj.insert("internalCertManagement".into(), json!({"enable": false}));
    obj.insert(
        "visibilityServer".into(),
        json!({"bindAddress": "127.0.0.1", "bindPort": ports.kueue_visibility}),
    );
    let mut integrations = obj
        .get("integrations")
        .cloned()
        .unwrap_or_else(|| json!({}));
    integrations["frameworks"] = json!(FRAMEWORKS);
    obj.insert("integrations".into(), integrations);
    match spec.pods_ready_timeout_s {
        Some(t) => {
            obj.insert(
                "waitForPodsReady".into(),
                json!({"timeout": format!("{t}s"), "blockAdmission": spec.block_admission}),
            );
        }
        None => {
            obj.remove("waitForPodsReady");
        }
    }
    Ok(cfg)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ports() -> Ports {
        Ports::from_list(&[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15])
    }

    #[test]
    fn localize_keeps_upstream_tuning_and_moves_listeners_to_loopback() {
        let upstream = json!({
            "apiVersion": "config.kueue.x-k8s.io/v1beta2", "kind": "Configuration",
            "health": {"healthProbeBindAddress": ":8081"},
            "metrics": {"bindAddress": ":8443"},
            "webhook": {"port": 9443},
            "leaderElection": {"leaderElect": true, "resourceName": "x"},
            "clientConnection": {"qps": 300, "burst": 500},
            "integrations": {"frameworks": ["batch/job", "pod", "ray.io/rayjob"]},
        });
        let l = Layout::new("/s");
        let spec = KueueSpec {
            pods_ready_timeout_s: Some(20),
            block_admission: true,
        };
        let c = localize(upstream.clone(), &l, &ports(), &spec).unwrap();
        assert_eq!(c["clientConnection"], json!({"qps": 300, "burst": 500}));
        assert_eq!(c["namespace"], KUEUE_NAMESPACE);
        assert_eq!(c["health"]["healthProbeBindAddress"], "127.0.0.1:11");
        assert_eq!(c["metrics"]["bindAddress"], "127.0.0.1:12");
        assert_eq!(
            c["webhook"],
            json!({"host": "127.0.0.1", "port": 10, "certDir": "/s/kueue-certs"})
        );
        assert_eq!(c["visibilityServer"]["bindPort"], 13);
        assert_eq!(c["leaderElection"]["leaderElect"], false);
        assert_eq!(c["internalCertManagement"]["enable"], false);
        assert_eq!(
            c["integrations"]["frameworks"],
            json!(["batch/job", "jobset.x-k8s.io/jobset"])
        );
        assert_eq!(
            c["waitForPodsReady"],
            json!({"timeout": "20s", "blockAdmission": true})
        );
        let off = localize(upstream, &l, &ports(), &KueueSpec::default()).unwrap();
        assert!(off.get("waitForPodsReady").is_none());
        assert!(localize(json!({"kind": "Pod"}), &l, &ports(), &KueueSpec::default()).is_err());
    }

    #[test]
    fn the_overlay_command_execs_kueue_itself() {
        let (bin, argv) = in_etc_overlay(
            std::path::Path::new("/s/kueue-etc"),
            std::path::Path::new("/c/kueue-controller-0.19.2"),
            &["--config=/s/k.yaml".to_string()],
        );
        assert_eq!(bin, std::path::PathBuf::from("unshare"));
        assert_eq!(
            argv[..6],
            [
                "--user",
                "--map-root-user",
                "--mount",
                "--",
                "/bin/sh",
                "-c"
            ]
        );
        let script = &argv[6];
        assert!(script.contains("lowerdir=$d:/etc") && script.contains("exec \"$@\""));
        assert_eq!(
            &argv[7..],
            [
                "kueue-controller",
                "/s/kueue-etc",
                "/c/kueue-controller-0.19.2",
                "--config=/s/k.yaml"
            ]
        );
    }

    #[test]
    fn args_name_the_kubeconfig_and_config() {
        let a = args(&Layout::new("/s"));
        assert!(a.contains(&"--config=/s/kueue-config.yaml".to_string()));
        assert!(
            a.iter()
                .any(|x| x.starts_with("--kubeconfig=") && x.contains("kueue"))
        );
    }
}
