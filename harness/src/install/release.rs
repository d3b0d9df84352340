//! Components installed from their published release manifests (kind
//! clusters, where controllers run as pods): `kubectl apply --server-side`
//! of the pinned release URL, fetched at run time, then readiness — the
//! controller Deployments Available and the webhooks answering a server-side
//! dry-run of a probe object.

use std::path::Path;
use std::time::Duration;

use crate::poll::Poll;
use anyhow::{Context, Result};
use k8s_openapi::api::apps::v1::Deployment;
use kube::api::{Api, DynamicObject, PostParams};
use kube::core::GroupVersionKind;
use serde_json::Value;

use std::collections::BTreeMap;

use anyhow::bail;

use crate::cluster::provider::Cluster;
use crate::install::apply::apply_all;
use crate::install::busy::{kubectl_busy, while_busy};
use crate::k8s::K8sRelease;
use crate::tools::command::{self, Cmd};
use crate::tools::modules::module_dir;
use crate::tools::{Component, Resolver};

/// A controller installed on kind from its pinned release manifest, or,
/// where the node images are built here (no registry), from its Go module:
/// the controller built into an image loaded into every node, and the
/// module's own kustomization (`config/default`) with that image.
pub struct Release {
    /// For messages: "JobSet".
    pub component: &'static str,
    pub namespace: &'static str,
    pub deployments: &'static [&'static str],
    pub url: fn() -> String,
    /// The controller binary (tools/component.rs), whose module holds the
    /// kustomization.
    pub controller: Component,
    /// What the kustomization's objects need for the binary built here,
    /// beyond upstream's image (`install_built`).
    pub for_built: fn(&mut [Value]) -> Result<()>,
}

impl Release {
    pub async fn install(&self, kubectl: &Path, kubeconfig: &Path) -> Result<()> {
        apply_url(kubectl, kubeconfig, &(self.url)()).await
    }

    /// Install from the module with the controller built here: its image
    /// loaded into the nodes of `cluster`, its kustomization rendered by
    /// `kubectl`, its leader election given the control plane's `lease`.
    pub async fn install_built(
        &self,
        cluster: &impl Cluster,
        kubectl: &Path,
        k8s: K8sRelease,
        lease: Lease,
    ) -> Result<()> {
        let c = self.controller;
        let spec = load_built_image(cluster, c, k8s).await?;
        let src = c.go_source(k8s);
        let dir = module_dir(src.module, &src.module_version)?;
        let mut objects = kustomize(kubectl, &dir.join("config/default"), self.component).await?;
        lasting_leader_election(&mut objects, lease)?;
        prompt_readiness(&mut objects);
        crate::install::webhook_cert::seed(&mut objects, &dir)
            .with_context(|| format!("{}'s webhook certificate", self.component))?;
        (self.for_built)(&mut objects)
            .with_context(|| format!("{}'s kustomization ({})", self.component, dir.display()))?;
        let replaced = use_image(&mut objects, &spec.name);
        if replaced == 0 {
            bail!(
                "{}'s kustomization ({}) has no Deployment container to run {}",
                self.component,
                dir.display(),
                spec.name
            );
        }
        let client = cluster.client().await?;
        apply_all(&client, &objects)
            .await
            .with_context(|| format!("applying {} from {}", self.component, dir.display()))
    }

    /// Its Deployments Available (the webhooks are probed by the caller,
    /// as for a local controller).
    pub async fn wait_available(
        &self,
        client: &kube::Client,
        timeout: Duration,
        alive: impl FnMut() -> Result<()> + Send,
    ) -> Result<()> {
        wait_ready(
            client,
            self.component,
            self.namespace,
            self.deployments,
            None,
            timeout,
            alive,
        )
        .await
    }
}

/// A control plane's leader-election lease: how long its scheduler and
/// controller manager hold their leases and may keep failing to renew
/// them. lifecycle passes the kind control plane's (cluster/kind/patches.rs
/// `LEASE_DURATION`, `RENEW_DEADLINE`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lease {
    /// `leaseDuration`, e.g. "60s".
    pub duration: &'static str,
    /// `renewDeadline`, e.g. "45s".
    pub renew_deadline: &'static str,
}

/// Give a controller's leader election the control plane's `lease`: each
/// ConfigMap value that is a controller Configuration electing a leader
/// (JobSet's and Kueue's `controller_manager_config.yaml`) gets them,
/// unless it sets its own; written back as JSON, which their YAML
/// decoders read (sigs.k8s.io/yaml). controller-runtime's manager exits
/// when it cannot renew its lease within 10 s (its default), and its
/// webhook with it: in the CI of 89adb26 HPCC's `kubectl replace` of a
/// JobSet on a loaded kind cluster was refused by JobSet's webhook. The
/// renewals still come every retry period (2 s), as before. Returns how
/// many Configurations were changed.
pub fn lasting_leader_election(objects: &mut [Value], lease: Lease) -> Result<usize> {
    let mut changed = 0;
    for o in objects.iter_mut().filter(|o| o["kind"] == "ConfigMap") {
        let Some(data) = o.get_mut("data").and_then(Value::as_object_mut) else {
            continue;
        };
        for (key, text) in data.iter_mut() {
            let Some(t) = text.as_str().filter(|t| t.contains("leaderElection")) else {
                continue;
            };
            let mut docs = crate::yaml::documents(t, key)?;
            let [cfg] = docs.as_mut_slice() else {
                continue;
            };
            let le = &mut cfg["leaderElection"];
            if le["leaderElect"] != Value::Bool(true)
                || le.get("leaseDuration").is_some()
                || le.get("renewDeadline").is_some()
            {
                continue;
            }
            le["leaseDuration"] = lease.duration.into();
            le["renewDeadline"] = lease.renew_deadline.into();
            *text = serde_json::to_string_pretty(cfg)?.into();
            changed += 1;
        }
    }
    Ok(changed)
}

/// `kubectl kustomize DIR` (a kustomization of a module in the Go module
/// cache): its objects.
pub async fn kustomize(kubectl: &Path, dir: &Path, component: &str) -> Result<Vec<Value>> {
    let out = command::run(&Cmd::new(kubectl, &["kustomize", &dir.to_string_lossy()]))
        .await
        .with_context(|| format!("{component}'s kustomization in {}", dir.display()))?;
    let text = String::from_utf8(out.stdout).context("kustomize's output is not UTF-8")?;
    crate::yaml::documents(&text, "kubectl kustomize output")
}

/// Build the image of `c` (tools/kindnode/images.rs `harness_image`) and
/// load it into every node of `cluster` (`Cluster::load_image_archive`,
/// the archive written to the cluster's state directory meanwhile); its
/// spec.
pub async fn load_built_image(
    cluster: &impl Cluster,
    c: Component,
    k8s: K8sRelease,
) -> Result<crate::tools::oci::ImageSpec> {
    let resolver = Resolver::from_env(k8s, BTreeMap::new());
    let bin = tokio::task::spawn_blocking(move || resolver.resolve(c))
        .await
        .context("resolving the binary panicked")??
        .path;
    let spec = crate::tools::kindnode::images::harness_image(c, k8s, &bin);
    let archive =
        crate::cluster::state::cluster_dir(cluster.name()).join(format!("{}.oci.tar", c.name()));
    let (s, a) = (spec.clone(), archive.clone());
    tokio::task::spawn_blocking(move || crate::tools::oci::write_archive(&s, &a))
        .await
        .context("writing the image panicked")??;
    let loaded = cluster.load_image_archive(&archive, None).await;
    let _ = std::fs::remove_file(&archive);
    loaded?;
    Ok(spec)
}

/// Every Deployment container's readiness probe starts at once and repeats
/// every second; how many probes were changed. JobSet's and Kueue's
/// manifests (`config/components/manager/manager.yaml`) probe `/readyz`
/// after 5 s and then every 10 s: on kind their controllers were serving
/// 2 s after their containers started (certificates generated, webhooks
/// up) and Ready 12 s after (measured 2026-11-29), and their webhooks'
/// Service has no endpoint until then. Only when the kubelet looks
/// changes: a probe is the kubelet's own GET of the container, and reaches
/// the API server only when the pod's Ready condition changes — once, as
/// before — so nothing a benchmark measures moves.
pub fn prompt_readiness(objects: &mut [Value]) -> usize {
    let mut n = 0;
    for o in objects.iter_mut().filter(|o| o["kind"] == "Deployment") {
        if let Some(cs) = o["spec"]["template"]["spec"]["containers"].as_array_mut() {
            for probe in cs.iter_mut().filter_map(|c| c.get_mut("readinessProbe")) {
                probe["initialDelaySeconds"] = Value::from(0);
                probe["periodSeconds"] = Value::from(1);
                n += 1;
            }
        }
    }
    n
}

/// Every Deployment's containers run `image`, never pulled; how many.
pub fn use_image(objects: &mut [Value], image: &str) -> usize {
    let mut n = 0;
    for o in objects.iter_mut().filter(|o| o["kind"] == "Deployment") {
        if let Some(cs) = o["spec"]["template"]["spec"]["containers"].as_array_mut() {
            for c in cs {
                c["image"] = Value::String(image.to_string());
                c["imagePullPolicy"] = Value::String("Never".into());
                n += 1;
            }
        }
    }
    n
}

/// Apply a release manifest from `url` with kubectl (which fetches it),
/// again while the API server says it is too busy (`install::busy`).
pub async fn apply_url(kubectl: &Path, kubeconfig: &Path, url: &str) -> Result<()> {
    let cmd = apply_url_command(kubectl, kubeconfig, url);
    while_busy(format!("applying {url}"))
        .until_state(|| async {
            let out = command::output(&cmd).await?;
            let stderr = String::from_utf8_lossy(&out.stderr).to_string();
            if !out.status.success() && kubectl_busy(&stderr) {
                tracing::warn!("applying {url}: the API server is busy; asking again");
                return Ok(Err(stderr.trim().to_string()));
            }
            command::check(&cmd, out).with_context(|| format!("applying {url}"))?;
            Ok(Ok(()))
        })
        .await
}

/// Server-side apply of a release manifest fetched by kubectl.
fn apply_url_command(kubectl: &Path, kubeconfig: &Path, url: &str) -> Cmd {
    Cmd::new(
        kubectl,
        &[
            "--kubeconfig",
            &kubeconfig.to_string_lossy(),
            "apply",
            "--server-side",
            "--force-conflicts",
            "-f",
            url,
        ],
    )
}

fn available(d: &Deployment) -> bool {
    let want = d.spec.replicas.unwrap_or(1);
    let status = d.status.as_ref();
    let ready = status.and_then(|s| s.ready_replicas).unwrap_or(0);
    let cond = status
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| {
            cs.iter().any(|c| {
                c.type_.as_deref() == Some("Available") && c.status.as_deref() == Some("True")
            })
        });
    cond && ready >= want
}

/// Server-side dry-run create of `obj`: passes when every admission
/// webhook on its path answers and accepts it.
pub async fn dry_run_create(client: &kube::Client, obj: &Value) -> Result<()> {
    let api_version = obj["apiVersion"]
        .as_str()
        .context("probe without apiVersion")?;
    let kind = obj["kind"].as_str().context("probe without kind")?;
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    let gvk = GroupVersionKind::gvk(group, version, kind);
    let (ar, caps) = kube::discovery::pinned_kind(client, &gvk)
        .await
        .with_context(|| format!("the API server does not serve {api_version} {kind} yet"))?;
    let api: Api<DynamicObject> = match obj["metadata"]["namespace"].as_str() {
        Some(ns) if caps.scope == kube::discovery::Scope::Namespaced => {
            Api::namespaced_with(client.clone(), ns, &ar)
        }
        _ => Api::all_with(client.clone(), &ar),
    };
    let probe: DynamicObject = serde_json::from_value(obj.clone())?;
    let pp = PostParams {
        dry_run: true,
        ..Default::default()
    };
    api.create(&pp, &probe)
        .await
        .with_context(|| format!("dry-run create of {kind} {}", obj["metadata"]["name"]))?;
    Ok(())
}

/// Wait until the Deployments `names` in `namespace` are Available and
/// `probe` (if any) is accepted; `alive` fails early when the cluster
/// itself broke.
pub async fn wait_ready(
    client: &kube::Client,
    component: &str,
    namespace: &str,
    names: &[&str],
    probe: Option<&Value>,
    timeout: Duration,
    alive: impl FnMut() -> Result<()> + Send,
) -> Result<()> {
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), namespace);
    Poll::new(format!("{component} ready"), timeout)
        .every(Duration::from_secs(1))
        .alive(alive)
        .until_state(|| async {
            let mut waiting = Vec::new();
            for n in names {
                match deployments.get_opt(n).await {
                    Ok(Some(d)) if available(&d) => {}
                    Ok(Some(_)) => waiting.push(format!("{namespace}/{n} not Available")),
                    Ok(None) => waiting.push(format!("{namespace}/{n} does not exist")),
                    Err(e) => waiting.push(format!("{namespace}/{n}: {e}")),
                }
            }
            if !waiting.is_empty() {
                return Ok(Err(waiting.join(", ")));
            }
            Ok(match probe {
                None => Ok(()),
                Some(p) => dry_run_create(client, p)
                    .await
                    .map_err(|e| format!("{e:#}")),
            })
        })
        .await
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::install::release::{
        Lease, apply_url_command, lasting_leader_election, prompt_readiness,
    };

    #[test]
    fn readiness_probes_start_at_once_and_repeat_every_second() {
        let mut objects = vec![
            serde_json::json!({"kind": "Deployment", "spec": {"template": {"spec": {"containers": [
                {"name": "manager", "readinessProbe": {"httpGet": {"path": "/readyz", "port": 8081},
                 "initialDelaySeconds": 5, "periodSeconds": 10},
                 "livenessProbe": {"initialDelaySeconds": 15, "periodSeconds": 20}},
                {"name": "sidecar"}
            ]}}}}),
            serde_json::json!({"kind": "Service", "spec": {"readinessProbe": {"periodSeconds": 10}}}),
        ];
        assert_eq!(prompt_readiness(&mut objects), 1);
        let c = &objects[0]["spec"]["template"]["spec"]["containers"];
        assert_eq!(c[0]["readinessProbe"]["initialDelaySeconds"], 0);
        assert_eq!(c[0]["readinessProbe"]["periodSeconds"], 1);
        assert_eq!(c[0]["readinessProbe"]["httpGet"]["path"], "/readyz");
        // The liveness probe, a container without a probe and other kinds
        // are left as they were.
        assert_eq!(c[0]["livenessProbe"]["periodSeconds"], 20);
        assert!(c[1].get("readinessProbe").is_none());
        assert_eq!(objects[1]["spec"]["readinessProbe"]["periodSeconds"], 10);
    }

    #[test]
    fn an_electing_controllers_configuration_gets_the_kind_lease() {
        let cfg = "apiVersion: config.example/v1\nkind: Configuration\nleaderElection:\n  leaderElect: true\nhealth:\n  healthProbeBindAddress: :8081\n";
        let own =
            "kind: Configuration\nleaderElection:\n  leaderElect: true\n  leaseDuration: 20s\n";
        let mut objects = vec![
            json!({"kind": "ConfigMap", "data": {"controller_manager_config.yaml": cfg}}),
            json!({"kind": "ConfigMap", "data": {"c.yaml": own, "other": "x: 1"}}),
            json!({"kind": "Deployment", "data": {"c.yaml": cfg}}),
        ];
        let lease = Lease {
            duration: "60s",
            renew_deadline: "45s",
        };
        assert_eq!(lasting_leader_election(&mut objects, lease).unwrap(), 1);
        let text = objects[0]["data"]["controller_manager_config.yaml"]
            .as_str()
            .unwrap();
        let back = &crate::yaml::documents(text, "t").unwrap()[0];
        assert_eq!(back["leaderElection"]["leaseDuration"], "60s");
        assert_eq!(back["leaderElection"]["renewDeadline"], "45s");
        assert_eq!(back["leaderElection"]["leaderElect"], true);
        assert_eq!(back["health"]["healthProbeBindAddress"], ":8081");
        // Its own lease, other values and other kinds are left alone.
        assert_eq!(objects[1]["data"]["c.yaml"], own);
        assert_eq!(objects[2]["data"]["c.yaml"], cfg);
    }

    #[test]
    fn a_release_manifest_is_applied_server_side_from_its_url() {
        let a = apply_url_command(
            std::path::Path::new("/x/kubectl"),
            std::path::Path::new("/k"),
            "https://x/m.yaml",
        );
        assert_eq!(
            a.display(),
            "kubectl --kubeconfig /k apply --server-side --force-conflicts -f https://x/m.yaml"
        );
    }
}
