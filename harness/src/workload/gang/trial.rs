//! One trial of a gang case: its own namespace and node pool on any
//! cluster that can add nodes, the kinds it resolves through discovery,
//! its variables, and cleanup. The steps run in `steps.rs`, the checks in
//! `expect.rs`.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use anyhow::{Context, Result, anyhow};
use k8s_openapi::api::core::v1::{Namespace, Pod};
use kube::api::{Api, DeleteParams, DynamicObject, ListParams, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use kube::discovery::{ApiCapabilities, Scope};
use serde_json::{Value, json};

use crate::cluster::pool::{POD_COMPLETE_DELAY, POD_COMPLETE_JITTER};
use crate::cluster::{Cluster, NodePool};
use crate::k8s::K8sRelease;
use crate::poll::Poll;
use crate::workload::gang::case::Pool;

/// The API version of Kueue's kinds in cases (Kueue v0.19 serves v1beta2
/// and stores it).
pub const KUEUE_API_VERSION: &str = "kueue.x-k8s.io/v1beta2";

/// The label and taint key that reserve pool nodes for one trial.
pub const POOL_KEY: &str = "harness.gang/pool";
/// Field manager of everything the runner applies.
pub const FIELD_MANAGER: &str = "harness-gang";
/// How long a case's pods run unless their template says otherwise: longer
/// than any case, so they finish only when a step completes them.
pub const DEFAULT_POD_RUNTIME: &str = "3600s";

/// A trial's context: the cluster, a client, its namespace and pool,
/// variables, resolved kinds.
pub struct Trial<'c, C: Cluster> {
    pub cluster: &'c C,
    pub client: kube::Client,
    pub release: K8sRelease,
    /// The minor whose entries the steps follow (`Case::rules_for`): the
    /// release's own, or the one before a pre-release minor's.
    pub rules: &'static str,
    pub ns: String,
    pub vars: BTreeMap<String, String>,
    pub observations: Vec<String>,
    kinds: HashMap<(String, String), Option<(ApiResource, ApiCapabilities)>>,
    pool_nodes: Vec<String>,
    /// Cluster-scoped objects the steps applied (Kueue's ClusterQueues,
    /// ResourceFlavors…), deleted last at cleanup.
    cluster_objects: Vec<(String, Api<DynamicObject>, String)>,
}

impl<'c, C: Cluster> Trial<'c, C> {
    /// A namespace of its own (named `ns`) and the pool's variables.
    pub async fn start(cluster: &'c C, release: K8sRelease, ns: &str) -> Result<Trial<'c, C>> {
        let client = cluster.client().await?;
        let namespaces: Api<Namespace> = Api::all(client.clone());
        let obj: Namespace = serde_json::from_value(
            json!({"metadata": {"name": ns, "labels": cluster.run_labels()}}),
        )?;
        namespaces
            .create(&PostParams::default(), &obj)
            .await
            .with_context(|| format!("creating namespace {ns}"))?;
        let vars = BTreeMap::from([
            ("ns".to_string(), ns.to_string()),
            ("pool".to_string(), ns.to_string()),
            ("minor".to_string(), release.minor.to_string()),
        ]);
        Ok(Trial {
            cluster,
            client,
            release,
            rules: release.minor,
            ns: ns.to_string(),
            vars,
            observations: Vec::new(),
            kinds: HashMap::new(),
            pool_nodes: Vec::new(),
            cluster_objects: Vec::new(),
        })
    }

    /// Pool nodes: nodes labelled and tainted for this trial only, from
    /// the cluster's provider.
    pub async fn add_nodes(&mut self, pool: Pool) -> Result<()> {
        let spec = NodePool {
            prefix: self.ns.clone(),
            first: self.pool_nodes.len(),
            count: pool.nodes as usize,
            cpu: "64".into(),
            memory: "256Gi".into(),
            pods: pool.pods,
            key: POOL_KEY.into(),
            value: self.ns.clone(),
            labels: self.cluster.run_labels(),
        };
        let names = self.cluster.add_pool(&spec).await?;
        self.pool_nodes.extend(names);
        Ok(())
    }

    /// Delete the namespace, wait for its pods to go, delete the
    /// cluster-scoped objects the steps applied (newest first, each waited
    /// for: a ClusterQueue keeps its finalizer until its workloads are
    /// gone), delete the pool. Every part is tried whatever failed before;
    /// the errors are reported together.
    pub async fn cleanup(&self) -> Result<()> {
        let mut errors: Vec<String> = Vec::new();
        let namespaces: Api<Namespace> = Api::all(self.client.clone());
        let gone = match namespaces
            .delete(&self.ns, &DeleteParams::background())
            .await
        {
            Ok(_) => {
                let pods: Api<Pod> = Api::namespaced(self.client.clone(), &self.ns);
                let what = format!("pods of namespace {}", self.ns);
                wait_pods_gone(
                    &pods,
                    &ListParams::default(),
                    Duration::from_secs(120),
                    &what,
                )
                .await
            }
            Err(e) => Err(anyhow!(e).context(format!("deleting namespace {}", self.ns))),
        };
        if let Err(e) = gone {
            errors.push(format!("{e:#}"));
        }
        for (kind, api, name) in self.cluster_objects.iter().rev() {
            let deleted = async {
                match api.delete(name, &DeleteParams::background()).await {
                    Ok(_) => {}
                    Err(kube::Error::Api(e)) if e.code == 404 => return Ok(()),
                    Err(e) => return Err(anyhow!(e).context(format!("deleting {kind} {name}"))),
                }
                Poll::new(format!("{kind} {name} gone"), Duration::from_secs(60))
                    .until(|| async { Ok(api.get_opt(name).await?.is_none().then_some(())) })
                    .await
            };
            if let Err(e) = deleted.await {
                errors.push(format!("{e:#}"));
            }
        }
        if let Err(e) = self.cluster.remove_nodes(&self.pool_nodes).await {
            errors.push(format!("{e:#}"));
        }
        match errors.is_empty() {
            true => Ok(()),
            false => Err(anyhow!(errors.join("; "))),
        }
    }

    /// Remember a cluster-scoped object the steps applied.
    pub(super) fn applied_cluster_object(
        &mut self,
        kind: &str,
        api: &Api<DynamicObject>,
        name: &str,
    ) {
        if !self
            .cluster_objects
            .iter()
            .any(|(k, _, n)| k == kind && n == name)
        {
            self.cluster_objects
                .push((kind.to_string(), api.clone(), name.to_string()));
        }
    }

    /// The API version a kind defaults to on this minor.
    pub(super) fn default_api_version(&self, kind: &str) -> Option<String> {
        Some(match kind {
            "Workload" | "PodGroup" => self.release.gang_api_version().to_string(),
            "Job" => "batch/v1".into(),
            "Pod" | "Event" | "Node" | "Namespace" => "v1".into(),
            "JobSet" => format!(
                "{}/{}",
                crate::k8s::jobset::GROUP,
                crate::k8s::jobset::VERSION
            ),
            // Kueue's kinds ("Workload" stays the gang API's: Kueue's
            // Workload needs its apiVersion).
            "ResourceFlavor" | "ClusterQueue" | "LocalQueue" | "WorkloadPriorityClass" => {
                KUEUE_API_VERSION.into()
            }
            _ => return None,
        })
    }

    /// Resolve a kind through discovery; None when the server does not
    /// serve it.
    pub(super) async fn resolve(
        &mut self,
        api_version: Option<&str>,
        kind: &str,
    ) -> Result<Option<(ApiResource, ApiCapabilities)>> {
        let av = match api_version {
            Some(a) => a.to_string(),
            None => self
                .default_api_version(kind)
                .ok_or_else(|| anyhow!("kind {kind}: give its apiVersion"))?,
        };
        let key = (av.clone(), kind.to_string());
        if let Some(r) = self.kinds.get(&key) {
            return Ok(r.clone());
        }
        let (group, version) = match av.split_once('/') {
            Some((g, v)) => (g.to_string(), v.to_string()),
            None => (String::new(), av.clone()),
        };
        let gvk = GroupVersionKind::gvk(&group, &version, kind);
        let r = match kube::discovery::pinned_kind(&self.client, &gvk).await {
            Ok(r) => Some(r),
            Err(kube::Error::Api(s)) if s.code == 404 => None,
            Err(kube::Error::Discovery(_)) => None,
            Err(e) => return Err(e).with_context(|| format!("discovering {av} {kind}")),
        };
        self.kinds.insert(key, r.clone());
        Ok(r)
    }

    pub(super) async fn api(
        &mut self,
        api_version: Option<&str>,
        kind: &str,
    ) -> Result<Api<DynamicObject>> {
        Ok(self.api_scoped(api_version, kind).await?.0)
    }

    /// The kind's Api, and whether it is cluster-scoped.
    pub(super) async fn api_scoped(
        &mut self,
        api_version: Option<&str>,
        kind: &str,
    ) -> Result<(Api<DynamicObject>, bool)> {
        let (ar, caps) = self.resolve(api_version, kind).await?.ok_or_else(|| {
            anyhow!(
                "the server does not serve {} {kind}",
                api_version
                    .map(str::to_string)
                    .or_else(|| self.default_api_version(kind))
                    .unwrap_or_default()
            )
        })?;
        Ok(match caps.scope {
            Scope::Namespaced => (
                Api::namespaced_with(self.client.clone(), &self.ns, &ar),
                false,
            ),
            Scope::Cluster => (Api::all_with(self.client.clone(), &ar), true),
        })
    }

    pub(super) fn observe(&mut self, label: &str, what: String) {
        self.observations.push(if label.is_empty() {
            what
        } else {
            format!("{label}: {what}")
        });
    }
}

/// Put a case's pods on its pool and keep them running until completed:
/// node selector, toleration and kwok's run-time annotations on every pod
/// template (Job, CronJob, Deployment, JobSet replicated Jobs) or bare Pod.
pub fn inject(obj: &mut Value, ns: &str) {
    let kind = obj["kind"].as_str().unwrap_or_default().to_string();
    let templates: Vec<&mut Value> = match kind.as_str() {
        "Pod" => vec![obj],
        "Job" | "Deployment" => obj.pointer_mut("/spec/template").into_iter().collect(),
        "CronJob" => obj
            .pointer_mut("/spec/jobTemplate/spec/template")
            .into_iter()
            .collect(),
        "JobSet" => match obj.pointer_mut("/spec/replicatedJobs") {
            Some(Value::Array(rjs)) => rjs
                .iter_mut()
                .filter_map(|rj| rj.pointer_mut("/template/spec/template"))
                .collect(),
            _ => Vec::new(),
        },
        _ => Vec::new(),
    };
    for t in templates {
        let Some(t) = t.as_object_mut() else { continue };
        let meta = t.entry("metadata").or_insert_with(|| json!({}));
        if let Some(meta) = meta.as_object_mut() {
            let ann = meta.entry("annotations").or_insert_with(|| json!({}));
            if let Some(ann) = ann.as_object_mut() {
                for key in [POD_COMPLETE_DELAY, POD_COMPLETE_JITTER] {
                    ann.entry(key).or_insert_with(|| json!(DEFAULT_POD_RUNTIME));
                }
            }
        }
        let spec = t.entry("spec").or_insert_with(|| json!({}));
        if let Some(spec) = spec.as_object_mut() {
            if let Some(sel) = spec
                .entry("nodeSelector")
                .or_insert_with(|| json!({}))
                .as_object_mut()
            {
                sel.insert(POOL_KEY.into(), json!(ns));
            }
            if let Some(tol) = spec
                .entry("tolerations")
                .or_insert_with(|| json!([]))
                .as_array_mut()
            {
                tol.push(json!({"key": POOL_KEY, "operator": "Equal", "value": ns, "effect": "NoSchedule"}));
            }
        }
    }
    if let Some(m) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        m.insert("namespace".into(), json!(ns));
    }
}

/// Wait until no pod matches `lp` (deleted pods linger until kwok and the
/// garbage collector are done with them).
pub async fn wait_pods_gone(
    pods: &Api<Pod>,
    lp: &ListParams,
    timeout: Duration,
    what: &str,
) -> Result<()> {
    Poll::new(format!("{what} gone"), timeout)
        .until(|| async {
            let left = pods.list(&lp.clone().limit(1)).await?.items.len();
            Ok((left == 0).then_some(()))
        })
        .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inject_reaches_every_pod_template() {
        let mut js = json!({"kind": "JobSet", "metadata": {"name": "t"}, "spec": {"replicatedJobs": [
            {"name": "a", "template": {"spec": {"template": {"spec": {"containers": []}}}}},
            {"name": "b", "template": {"spec": {"template": {"metadata": {"annotations": {
                POD_COMPLETE_DELAY: "5s"}}, "spec": {"nodeSelector": {"x": "y"}}}}}}]}});
        inject(&mut js, "t1");
        assert_eq!(js["metadata"]["namespace"], "t1");
        for i in 0..2 {
            let t = &js["spec"]["replicatedJobs"][i]["template"]["spec"]["template"];
            assert_eq!(t["spec"]["nodeSelector"][POOL_KEY], "t1");
            assert_eq!(t["spec"]["tolerations"][0]["value"], "t1");
        }
        let b = &js["spec"]["replicatedJobs"][1]["template"]["spec"]["template"];
        assert_eq!(
            b["metadata"]["annotations"][POD_COMPLETE_DELAY], "5s",
            "kept"
        );
        assert_eq!(
            b["metadata"]["annotations"][POD_COMPLETE_JITTER],
            DEFAULT_POD_RUNTIME
        );
        assert_eq!(b["spec"]["nodeSelector"]["x"], "y");
        let mut cj = json!({"kind": "CronJob", "metadata": {"name": "c"}, "spec": {"jobTemplate": {"spec": {"template": {"spec": {}}}}}});
        inject(&mut cj, "t1");
        let t = &cj["spec"]["jobTemplate"]["spec"]["template"];
        assert_eq!(t["spec"]["nodeSelector"][POOL_KEY], "t1");
        assert_eq!(
            t["metadata"]["annotations"][POD_COMPLETE_DELAY],
            DEFAULT_POD_RUNTIME
        );
        let mut wl = json!({"kind": "Workload", "metadata": {"name": "w"}, "spec": {}});
        inject(&mut wl, "t1");
        assert_eq!(
            wl,
            json!({"kind": "Workload", "metadata": {"name": "w", "namespace": "t1"}, "spec": {}})
        );
    }
}
