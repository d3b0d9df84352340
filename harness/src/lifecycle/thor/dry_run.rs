//! `bench thor --provider existing --dry-run`: the probe (read-only, as a
//! real run does it first), then, per mode, every object the run would
//! create — as the harness, and as HPCC's Thor agent for one instance —
//! and the API calls each identity would make, with the requests HPCC's
//! kubectl costs per call on this very server (workload::thor::kubectl's
//! model, priced against the server's live discovery). Nothing is
//! created: the only requests are reads and access reviews.

use std::fmt::Write as _;

use anyhow::Result;
use serde_json::Value;

use crate::cluster::ExistingTarget;
use crate::cluster::existing::ExistingCluster;
use crate::cluster::provider::Cluster;
use crate::cluster::run_id::namespace_object;
use crate::lifecycle::thor::existing::{self, namespace_of};
use crate::workload::thor::Mode;
use crate::workload::thor::discovery::{Discovery, DiscoveryCache};
use crate::workload::thor::kubectl::Call;
use crate::workload::thor::mode_plan::{kubectl_model, plan};
use crate::workload::thor::scenario::ThorScenario;
use crate::workload::thor::setup_objects::setup_objects;
use crate::workload::thor::site::{ECLCC_SA, KUBELET_SA, THOR_SA, kubelet_rbac};
use crate::workload::thor::template::{self, render};

/// One object with who creates it.
struct Created {
    who: String,
    doc: Value,
}

fn key(doc: &Value) -> String {
    format!(
        "{} {}",
        doc["kind"].as_str().unwrap_or("?"),
        doc["metadata"]["name"].as_str().unwrap_or("?")
    )
}

/// The plan of a dry run, as text: YAML documents (JSON is YAML) with
/// comments, then the calls.
pub async fn dry_run(target: &ExistingTarget, s: &ThorScenario, modes: &[Mode]) -> Result<String> {
    let mut cluster = ExistingCluster::attach(target.cluster.clone()).await?;
    cluster.run_id = target.run_id.clone();
    let caps = existing::prepare(&cluster, target, s, modes).await?;
    let admin = cluster.client().await?;
    let served = Discovery::read(&admin).await?;
    let model = kubectl_model(s)?;
    let minor = caps.server_release()?.minor_number();
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# harness bench thor --dry-run: run {} on {} as {} ({}); nothing was created.",
        target.run_id,
        cluster.opts.kubeconfig.display(),
        cluster.user,
        caps.server_version
    );
    for &mode in modes {
        let ns = namespace_of(&target.run_id, mode, 0)?;
        let (created, per_instance, job) =
            mode_objects(&cluster, target, s, mode, minor, &ns).await?;
        let _ = writeln!(
            out,
            "#\n# ===== mode {} in namespace {ns}: {} objects by the harness ({}), {} per Thor instance by HPCC's Thor agent",
            mode.name(),
            created.len() - per_instance,
            cluster.user,
            per_instance
        );
        for c in &created {
            let _ = writeln!(
                out,
                "---\n# {} creates {}\n{}",
                c.who,
                key(&c.doc),
                serde_json::to_string_pretty(&c.doc)?
            );
        }
        priced_calls(&mut out, &model, &served, mode, &ns, &job);
    }
    Ok(out)
}

/// What the harness and HPCC's Thor agent would create for one `mode` in
/// namespace `ns` (its objects, each with who creates it), how many of
/// them each Thor instance makes, and the first instance's job name.
async fn mode_objects(
    cluster: &ExistingCluster,
    target: &ExistingTarget,
    s: &ThorScenario,
    mode: Mode,
    minor: u32,
    ns: &str,
) -> Result<(Vec<Created>, usize, String)> {
    let ns = ns.to_string();
    let sa = |n: &str| format!("system:serviceaccount:{ns}:{n}");
    let mut plan = plan(s, mode)?;
    plan.namespace = ns.clone();
    // On real nodes: no fake kubelet, and the pods run the node image
    // (kept off kwok's nodes, if the cluster has any, when it runs).
    let real = s.cluster.real_node;
    plan.real_pods = real.then(|| crate::workload::thor::realpods::RealPods {
        image: target.node_image.clone(),
        nodes: Vec::new(),
    });
    let mut created: Vec<Created> = Vec::new();
    let mut by = |who: &str, docs: Vec<Value>| {
        created.extend(docs.into_iter().map(|doc| Created {
            who: who.to_string(),
            doc,
        }))
    };
    by(&cluster.user, vec![namespace_object(&ns, &target.run_id)]);
    by(
        &cluster.user,
        [THOR_SA, ECLCC_SA, KUBELET_SA]
            .iter()
            // The fake kubelets' identity only where kwok ends pods.
            .filter(|n| !real || **n != KUBELET_SA)
            .map(|n| {
                serde_json::json!({"apiVersion": "v1", "kind": "ServiceAccount",
                    "metadata": {"name": n, "namespace": ns}})
            })
            .collect(),
    );
    if !real {
        by(&cluster.user, kubelet_rbac(&ns));
    }
    let sas = (THOR_SA.to_string(), ECLCC_SA.to_string());
    by(&cluster.user, setup_objects(&plan, Some(&sas))?);
    if let Some(apf) = existing::apf_plan(cluster, &ns).await? {
        by(
            &cluster.user,
            apf.schemas
                .iter()
                .map(serde_json::to_value)
                .collect::<Result<_, _>>()?,
        );
    }
    let params = plan.params(0);
    let mut per_instance = Vec::new();
    for t in template::templates_for(mode, minor) {
        per_instance.extend(render(&t, &params)?);
    }
    plan.adapt_pods(&mut per_instance);
    let n = per_instance.len();
    by(&sa(THOR_SA), per_instance);
    Ok((created, n, params.job_name))
}

/// The API calls of `mode`: one create per object, a TokenRequest per
/// ServiceAccount, then HPCC's kubectl per call, priced on this server.
fn priced_calls(
    out: &mut String,
    model: &crate::workload::thor::kubectl::KubectlModel,
    served: &Discovery,
    mode: Mode,
    ns: &str,
    job: &str,
) {
    let cache = model.cache();
    let _ = writeln!(
        out,
        "---\n# API calls of mode {}: the harness makes one create per object above it, plus a TokenRequest per ServiceAccount; then HPCC's kubectl {} ({}) per call, priced on this server:",
        mode.name(),
        model.version(),
        match cache {
            DiscoveryCache::None => "no writable discovery cache",
            DiscoveryCache::Warm => "warm discovery cache",
        }
    );
    let job = job.to_string();
    let calls = [
        ("each object of an instance", Call::Replace),
        (
            "each poll of an instance's state",
            match mode {
                Mode::Baseline => Call::GetJob {
                    name: job.clone(),
                    jsonpath: "{.status}".into(),
                },
                _ => Call::GetJobSet {
                    name: job.clone(),
                    jsonpath: "{.status}".into(),
                },
            },
        ),
        (
            "each poll of its pods",
            Call::ListPods {
                selector: format!("job-name={job}"),
                jsonpath: "{.items}".into(),
            },
        ),
        (
            "each object removed",
            Call::Delete {
                resource: match mode {
                    Mode::Baseline => "job".into(),
                    _ => "jobset".into(),
                },
                name: job.clone(),
            },
        ),
    ];
    for (when, call) in calls {
        let e = model.expected_requests(&call, ns, served);
        let _ = writeln!(
            out,
            "#   {when}: kubectl {} → {} requests",
            call.args().join(" "),
            e.total()
        );
    }
}
