//! Drivers that put the same Kubernetes API traffic on a cluster as HPCC's
//! thoragent and Thor manager do, under the Thor agent identity: every
//! call a forked `kubectl` (as HPCC's jcontainerized does, so discovery is
//! included), objects applied with `kubectl replace --force -f -`, polls
//! with HPCC's 100 ms → 12.8 s doubling backoff.
//!
//! What the harness itself does (its pod watch, its end-of-run checks,
//! reporting the manager's exit as the kubelet would) uses the admin
//! identity, which measurement counts apart.

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams, Patch, PatchParams};
use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;

use crate::metrics::pods::PodTracker;
use crate::poll::Poll;
use crate::workload::thor::template::{Mode, ThorParams, render, templates_for};

pub const INSTANCE_LABEL: &str = "hpcc.thor/instance";
pub const ROLE_LABEL: &str = "hpcc.thor/role";
/// kwok keeps Thor pods Running this long; the graph's end is driven by
/// the driver, not by kwok.
pub const POD_RUNTIME: &str = "24h";

/// What a driver needs from its surroundings.
pub struct ThorEnv {
    /// The harness's own client (admin): setup, watches, checks.
    pub admin: kube::Client,
    /// The Thor agent identity's kubeconfig, for kubectl.
    pub agent_kubeconfig: PathBuf,
    pub kubectl: PathBuf,
    /// kubectl's discovery cache (warm after the first call, as in a
    /// long-running thoragent container).
    pub kubectl_cache: PathBuf,
    pub namespace: String,
    pub tracker: Arc<PodTracker>,
    /// Longest wait for any one step.
    pub step_timeout: Duration,
    /// The cluster's Kubernetes minor (37 for 1.37): picks the gang templates.
    pub k8s_minor: u32,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct InstanceResult {
    pub job_name: String,
    pub wall_ms: f64,
    /// First pod of the instance created → last pod Running.
    pub start_ms: Option<f64>,
}

impl ThorEnv {
    /// Run kubectl as the Thor agent; stdin is fed `input` when given.
    async fn kubectl(&self, args: &[&str], input: Option<&str>) -> Result<String> {
        let mut cmd = tokio::process::Command::new(&self.kubectl);
        cmd.env("KUBECONFIG", &self.agent_kubeconfig)
            .arg("--cache-dir")
            .arg(&self.kubectl_cache)
            .arg("--namespace")
            .arg(&self.namespace)
            .args(args)
            .stdin(if input.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let mut child = cmd
            .spawn()
            .with_context(|| format!("starting {}", self.kubectl.display()))?;
        if let (Some(text), Some(mut stdin)) = (input, child.stdin.take()) {
            stdin.write_all(text.as_bytes()).await?;
        }
        let out = child.wait_with_output().await?;
        if !out.status.success() {
            bail!(
                "kubectl {} failed: {}",
                args.join(" "),
                String::from_utf8_lossy(&out.stderr).trim()
            );
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// `kubectl get pods --selector SEL`: have the selected pods a node?
    async fn pods_bound(&self, selector: &str) -> Result<bool> {
        let nodes = self
            .kubectl(
                &[
                    "get",
                    "pods",
                    "--selector",
                    selector,
                    "-o",
                    "jsonpath={.items[*].spec.nodeName}",
                ],
                None,
            )
            .await?;
        Ok(!nodes.trim().is_empty())
    }

    async fn replace_force(&self, doc: &Value) -> Result<()> {
        let text = serde_json::to_string(doc)?;
        self.kubectl(&["replace", "--force", "-f", "-"], Some(&text))
            .await
            .map(|_| ())
    }

    /// HPCC's polling: 100 ms, doubling, capped at 12.8 s, until `check`
    /// yields a value.
    async fn poll<T, F, Fut>(&self, what: &str, check: F) -> Result<T>
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Result<Option<T>>>,
    {
        Poll::new(what, self.step_timeout)
            .backoff(Duration::from_millis(100), Duration::from_millis(12_800))
            .until(check)
            .await
    }

    /// The manager process exits: report its pod Succeeded, as the kubelet
    /// would (kwok keeps Thor pods running until told).
    async fn manager_exits(&self, job_name: &str) -> Result<()> {
        let pods: Api<Pod> = Api::namespaced(self.admin.clone(), &self.namespace);
        let sel = format!("{INSTANCE_LABEL}={job_name},{ROLE_LABEL}=manager");
        let list = pods.list(&ListParams::default().labels(&sel)).await?;
        if list.items.is_empty() {
            bail!("no manager pod for {job_name}");
        }
        for p in list.items {
            let name = p.metadata.name.unwrap_or_default();
            let patch = json!({"status": {"phase": "Succeeded"}});
            pods.patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
                .with_context(|| format!("marking manager pod {name} Succeeded"))?;
        }
        Ok(())
    }
}

fn job_condition(v: &Value) -> Option<String> {
    v.as_array()?
        .iter()
        .find(|c| {
            c["status"] == "True"
                && matches!(
                    c["type"].as_str(),
                    Some("Complete" | "SuccessCriteriaMet" | "Failed" | "FailureTarget")
                )
        })
        .and_then(|c| c["type"].as_str().map(str::to_string))
}

/// One Thor instance, start to finish.
pub async fn run_instance(
    env: &ThorEnv,
    mode: Mode,
    p: &ThorParams,
    graph: Duration,
) -> Result<InstanceResult> {
    let started = Instant::now();
    let job = p.job_name.clone();
    let docs: Vec<Value> = templates_for(mode, env.k8s_minor)
        .iter()
        .map(|t| render(t, p))
        .collect::<Result<Vec<_>>>()?
        .into_iter()
        .flatten()
        .collect();
    let worker_pods = p.worker_pods()? as usize;
    match mode {
        Mode::Baseline => {
            let [mgr_np, mgr_job, wrk_np, wrk_job] = docs.as_slice() else {
                bail!(
                    "baseline templates render {} documents, expected 4",
                    docs.len()
                );
            };
            let mgr = mgr_job["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            // thoragent: manager NetworkPolicy and Job, then poll until scheduled.
            env.replace_force(mgr_np).await?;
            env.replace_force(mgr_job).await?;
            let sel = format!("job-name={mgr}");
            env.poll(&format!("manager Job {mgr} scheduled"), || async {
                let active = env
                    .kubectl(
                        &["get", "jobs", &mgr, "-o", "jsonpath={.status.active}"],
                        None,
                    )
                    .await?;
                if active.trim() != "1" {
                    return Ok(None);
                }
                Ok(env.pods_bound(&sel).await?.then_some(()))
            })
            .await?;
            // The manager: worker NetworkPolicy and Job, wait for workers,
            // run the graph, delete the workers, exit.
            env.replace_force(wrk_np).await?;
            env.replace_force(wrk_job).await?;
            env.tracker
                .wait_running(INSTANCE_LABEL, &job, 1 + worker_pods, env.step_timeout)
                .await?;
            tokio::time::sleep(graph).await;
            let wrk = wrk_job["metadata"]["name"].as_str().unwrap_or_default();
            let wnp = wrk_np["metadata"]["name"].as_str().unwrap_or_default();
            env.kubectl(&["delete", "job", wrk], None).await?;
            env.kubectl(&["delete", "networkpolicy", wnp], None).await?;
            env.manager_exits(&job).await?;
            // thoragent: the manager Job's outcome, then its deletion.
            let outcome = env
                .poll(&format!("manager Job {mgr} finished"), || async {
                    let conds = env
                        .kubectl(
                            &["get", "jobs", &mgr, "-o", "jsonpath={.status.conditions}"],
                            None,
                        )
                        .await?;
                    let v: Value = serde_json::from_str(conds.trim()).unwrap_or(Value::Null);
                    Ok(job_condition(&v))
                })
                .await?;
            if outcome.starts_with("Fail") {
                bail!("manager Job {mgr} ended {outcome}");
            }
            let mnp = mgr_np["metadata"]["name"].as_str().unwrap_or_default();
            env.kubectl(&["delete", "job", &mgr], None).await?;
            env.kubectl(&["delete", "networkpolicy", mnp], None).await?;
        }
        Mode::Jobset | Mode::JobsetGang => {
            // Gang mode: the bring-your-own Workload and PodGroup first.
            let (gang, js) = match (mode, docs.as_slice()) {
                (Mode::Jobset, [js]) => (&[][..], js),
                (Mode::JobsetGang, [_, _, js]) => (&docs[..2], js),
                _ => bail!("{} templates render {} documents", mode.name(), docs.len()),
            };
            for obj in gang {
                env.replace_force(obj).await?;
            }
            let name = js["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            env.replace_force(js).await?;
            let sel = format!("{INSTANCE_LABEL}={job},{ROLE_LABEL}=manager");
            env.poll(&format!("JobSet {name} manager scheduled"), || async {
                Ok(env.pods_bound(&sel).await?.then_some(()))
            })
            .await?;
            env.tracker
                .wait_running(INSTANCE_LABEL, &job, 1 + worker_pods, env.step_timeout)
                .await?;
            tokio::time::sleep(graph).await;
            env.manager_exits(&job).await?;
            let state = env
                .poll(&format!("JobSet {name} finished"), || async {
                    let state = env
                        .kubectl(
                            &[
                                "get",
                                "jobsets.jobset.x-k8s.io",
                                &name,
                                "-o",
                                "jsonpath={.status.terminalState}",
                            ],
                            None,
                        )
                        .await?;
                    let state = state.trim().to_string();
                    Ok((!state.is_empty()).then_some(state))
                })
                .await?;
            if state != "Completed" {
                bail!("JobSet {name} ended {state}");
            }
            env.kubectl(&["delete", "jobsets.jobset.x-k8s.io", &name], None)
                .await?;
            for obj in gang.iter().rev() {
                let kind = match obj["kind"].as_str() {
                    Some("Workload") => "workloads.scheduling.k8s.io",
                    Some("PodGroup") => "podgroups.scheduling.k8s.io",
                    other => bail!("unexpected gang object {other:?}"),
                };
                let obj_name = obj["metadata"]["name"].as_str().unwrap_or_default();
                env.kubectl(&["delete", kind, obj_name], None).await?;
            }
        }
    }
    let pods = env.tracker.matching(INSTANCE_LABEL, &job);
    Ok(InstanceResult {
        job_name: job,
        wall_ms: started.elapsed().as_secs_f64() * 1000.0,
        start_ms: crate::metrics::pods::group_start_ms(&pods),
    })
}

/// Run `instances` instances, at most `max_graphs` at once.
pub async fn run_instances(
    env: &ThorEnv,
    mode: Mode,
    params: impl Fn(u32) -> ThorParams,
    instances: u32,
    max_graphs: u32,
    graph: Duration,
) -> Result<Vec<InstanceResult>> {
    let results: Vec<Result<InstanceResult>> = futures::stream::iter(1..=instances)
        .map(|i| {
            let p = params(i);
            async move {
                run_instance(env, mode, &p, graph)
                    .await
                    .with_context(|| format!("Thor instance {}", p.job_name))
            }
        })
        .buffer_unordered(max_graphs.max(1) as usize)
        .collect()
        .await;
    results.into_iter().collect()
}

/// Wait until nothing the driver created is left in the namespace: no
/// pods, Jobs, NetworkPolicies or JobSets.
pub async fn wait_all_gone(env: &ThorEnv, timeout: Duration) -> Result<()> {
    use k8s_openapi::api::batch::v1::Job;
    use k8s_openapi::api::networking::v1::NetworkPolicy;
    let ns = env.namespace.as_str();
    let pods: Api<Pod> = Api::namespaced(env.admin.clone(), ns);
    let jobs: Api<Job> = Api::namespaced(env.admin.clone(), ns);
    let nps: Api<NetworkPolicy> = Api::namespaced(env.admin.clone(), ns);
    let jobsets: Api<kube::api::DynamicObject> =
        Api::namespaced_with(env.admin.clone(), ns, &crate::k8s::jobset::api_resource());
    Poll::new(format!("everything the driver made in {ns} gone"), timeout)
        .every(Duration::from_millis(250))
        .until_state(|| async {
            let lp = ListParams::default();
            let left = [
                ("pods", pods.list_metadata(&lp).await?.items.len()),
                ("jobs", jobs.list_metadata(&lp).await?.items.len()),
                ("networkpolicies", nps.list_metadata(&lp).await?.items.len()),
                (
                    "jobsets",
                    jobsets
                        .list_metadata(&lp)
                        .await
                        .map(|l| l.items.len())
                        .unwrap_or(0),
                ),
            ];
            Ok(if left.iter().all(|(_, n)| *n == 0) {
                Ok(())
            } else {
                Err(format!("left: {left:?}"))
            })
        })
        .await
}
