//! The steps of a gang case, in order: one executor per action (apply,
//! patch, suspend/resume, delete, add nodes, complete), each comparing the
//! server's answer with the step's expected result, then the step's checks.

use anyhow::{Context, Result, anyhow, bail};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams};
use serde_json::{Value, json};

use crate::cluster::Cluster;
use crate::workload::gang::case::{Action, Case, ObjRef, Outcome, PatchStep, Step};
use crate::workload::gang::expect::outcome;
use crate::workload::gang::matcher::{subst_str, substitute};
use crate::workload::gang::trial::{FIELD_MANAGER, Trial, inject};

impl<C: Cluster> Trial<'_, C> {
    /// Run every step of `case` that runs on this minor.
    pub async fn run_steps(&mut self, case: &Case) -> Result<()> {
        for (i, step) in case.steps.iter().enumerate() {
            if !step.runs_on(self.rules) {
                continue;
            }
            let label = step.label(i);
            self.run_step(step)
                .await
                .with_context(|| format!("{label} on Kubernetes {}", self.release.version))?;
        }
        Ok(())
    }

    async fn run_step(&mut self, step: &Step) -> Result<()> {
        let minor = self.rules;
        let expected = step.result.as_ref().and_then(|r| r.get(minor)).cloned();
        let label = step.name.clone().unwrap_or_default();
        match step.action() {
            None => {}
            Some(Action::Apply(v)) => self.apply(v, expected.as_ref(), &label).await?,
            Some(Action::Patch(p)) => self.patch(p, expected.as_ref(), &label).await?,
            Some(Action::Suspend(job)) => {
                self.suspend(job, true, expected.as_ref(), &label).await?
            }
            Some(Action::Resume(job)) => {
                self.suspend(job, false, expected.as_ref(), &label).await?
            }
            Some(Action::Delete(d)) => self.delete(d, expected.as_ref(), &label).await?,
            Some(Action::AddNodes(pool)) => {
                self.add_nodes(pool).await?;
                self.observe(
                    &label,
                    format!(
                        "added {} node(s) with room for {} pods each",
                        pool.nodes, pool.pods
                    ),
                );
            }
            Some(Action::Complete(job)) => {
                let job = subst_str(job, &self.vars)?;
                let n = complete_job_pods(&self.client, &self.ns, &job).await?;
                self.observe(
                    &label,
                    format!("{n} pod(s) of Job {job} reported Succeeded"),
                );
            }
        }
        if let Some(e) = &step.expect {
            let checks = e.get(minor).ok_or_else(|| {
                anyhow!("no expectation for {minor} (the case validator should have said so)")
            })?;
            for (i, c) in checks.iter().enumerate() {
                let seen = self
                    .expect(c)
                    .await
                    .with_context(|| format!("check {} ({})", i + 1, c.kind))?;
                self.observe(&label, seen);
            }
        }
        Ok(())
    }

    async fn apply(&mut self, v: &Value, expected: Option<&Outcome>, label: &str) -> Result<()> {
        let objs: Vec<Value> = match substitute(v, &self.vars)? {
            Value::Array(a) => a,
            o => vec![o],
        };
        for mut obj in objs {
            inject(&mut obj, &self.ns);
            let kind = obj["kind"].as_str().unwrap_or_default().to_string();
            let name = obj["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            let (api, cluster_scoped) = self.api_scoped(obj["apiVersion"].as_str(), &kind).await?;
            if cluster_scoped {
                // Named per trial by the case (`${ns}`); labelled with the
                // run id where the cluster has one; deleted at cleanup.
                if let Some(m) = obj["metadata"].as_object_mut() {
                    m.remove("namespace");
                    let labels = m.entry("labels").or_insert_with(|| json!({}));
                    if let Some(l) = labels.as_object_mut() {
                        for (k, v) in self.cluster.run_labels() {
                            l.insert(k, json!(v));
                        }
                    }
                }
            }
            let pp = PatchParams::apply(FIELD_MANAGER).validation_strict();
            let r = api.patch(&name, &pp, &Patch::Apply(&obj)).await.map(|_| ());
            if cluster_scoped && r.is_ok() {
                self.applied_cluster_object(&kind, &api, &name);
            }
            let seen = outcome(expected, r, &format!("apply {kind} {name}"))?;
            self.observe(label, seen);
        }
        Ok(())
    }

    async fn patch(
        &mut self,
        p: &PatchStep,
        expected: Option<&Outcome>,
        label: &str,
    ) -> Result<()> {
        let name = subst_str(&p.name, &self.vars)?;
        let merge = substitute(&p.merge, &self.vars)?;
        let api = self.api(p.api_version.as_deref(), &p.kind).await?;
        let pp = PatchParams::default().validation_strict();
        let r = api
            .patch(&name, &pp, &Patch::Merge(&merge))
            .await
            .map(|_| ());
        let seen = outcome(expected, r, &format!("patch {} {name} {merge}", p.kind))?;
        self.observe(label, seen);
        Ok(())
    }

    async fn suspend(
        &mut self,
        job: &str,
        suspend: bool,
        expected: Option<&Outcome>,
        label: &str,
    ) -> Result<()> {
        let n = subst_str(job, &self.vars)?;
        let api = self.api(None, "Job").await?;
        let merge = json!({"spec": {"suspend": suspend}});
        let r = api
            .patch(&n, &PatchParams::default(), &Patch::Merge(&merge))
            .await
            .map(|_| ());
        let what = if suspend { "suspend" } else { "resume" };
        let seen = outcome(expected, r, &format!("{what} Job {n}"))?;
        self.observe(label, seen);
        Ok(())
    }

    async fn delete(&mut self, d: &ObjRef, expected: Option<&Outcome>, label: &str) -> Result<()> {
        let name = subst_str(&d.name, &self.vars)?;
        let api = self.api(d.api_version.as_deref(), &d.kind).await?;
        // What `kubectl delete` does: dependents go in the background (the
        // API's default for Jobs would orphan the pods).
        let r = api
            .delete(&name, &DeleteParams::background())
            .await
            .map(|_| ());
        let seen = outcome(expected, r, &format!("delete {} {name}", d.kind))?;
        self.observe(label, seen);
        Ok(())
    }
}

/// Report a Job's bound, unfinished pods Succeeded (what the kubelet does
/// when a container exits 0). Returns how many.
pub async fn complete_job_pods(client: &kube::Client, ns: &str, job: &str) -> Result<usize> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    let list = pods
        .list(&ListParams::default().labels(&format!("batch.kubernetes.io/job-name={job}")))
        .await
        .with_context(|| format!("listing pods of Job {job}"))?;
    let mut n = 0;
    for p in list.items {
        let bound = p.spec.as_ref().is_some_and(|s| s.node_name.is_some());
        let phase = p
            .status
            .as_ref()
            .and_then(|s| s.phase.clone())
            .unwrap_or_default();
        if !bound || phase == "Succeeded" || phase == "Failed" {
            continue;
        }
        let name = p.metadata.name.clone().unwrap_or_default();
        let patch = json!({"status": {"phase": "Succeeded"}});
        pods.patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .with_context(|| format!("marking pod {name} Succeeded"))?;
        n += 1;
    }
    if n == 0 {
        bail!("Job {job} has no bound, running pods to complete");
    }
    Ok(n)
}
