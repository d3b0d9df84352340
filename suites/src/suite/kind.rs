//! kind for real (`up --provider kind`): one cluster per Kubernetes minor
//! of the gang profile (kind-configs/gang-<minor>.yaml), shared by its
//! trials, on the Docker engine the harness finds (tools/engine.rs: as
//! root on Debian `ci/ensure-docker.sh` starts a private one). Where no
//! pinned `kindest/node` can be pulled the node image is built here
//! (tools/kindnode). The trials: nodes Ready with the profile's feature
//! gates and runtime config in the running API server's and scheduler's
//! flags and the kubelet's config; a JobSet admitted by its webhook and
//! run to completion; cert-manager's absence said (or a Certificate
//! issued where its images exist); a real container's exit code; audit
//! events from the host's audit log; CPU and RSS of every component read
//! through `docker exec`; `down` leaves no container, volume or state.
//! Where no engine answers, the trials are listed as ignored with why.

use std::collections::BTreeMap;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use anyhow::{Context, Result, bail, ensure};
use harness::cluster::Cluster;
use harness::cluster::kind::{KindCluster, KindImages};
use harness::k8s::K8sRelease;
use harness::poll::Poll;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{Api, DynamicObject, ListParams, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use libtest_mimic::Arguments;
use serde_json::json;

use crate::runner::{Suite, Test};

/// The minors the suite brings up: `$HARNESS_KIND_MINORS` (comma
/// separated), else every minor the harness runs.
fn minors() -> Vec<&'static str> {
    let all: Vec<&'static str> = harness::k8s::K8S_RELEASES.iter().map(|r| r.minor).collect();
    match std::env::var("HARNESS_KIND_MINORS") {
        Ok(v) if !v.trim().is_empty() => all
            .into_iter()
            .filter(|m| v.split(',').any(|w| w.trim() == *m))
            .collect(),
        _ => all,
    }
}

/// A shared kind cluster and the runtime its trials use.
struct KindFx {
    rt: tokio::runtime::Runtime,
    cluster: KindCluster,
}

type Cell = OnceLock<std::result::Result<KindFx, String>>;
static SHARED: Mutex<BTreeMap<&'static str, &'static Cell>> = Mutex::new(BTreeMap::new());

fn name(minor: &str) -> String {
    crate::unique_name(&format!("kind-{}", minor.replace('.', "")))
}

/// The cluster of `minor`, brought up on first use.
fn shared(minor: &'static str) -> Result<&'static KindFx> {
    let cell: &'static Cell = {
        let mut map = SHARED.lock().map_err(|e| anyhow::anyhow!("{e}"))?;
        map.entry(minor)
            .or_insert_with(|| Box::leak(Box::new(OnceLock::new())))
    };
    cell.get_or_init(|| start(minor).map_err(|e| format!("{e:#}")))
        .as_ref()
        .map_err(|e| anyhow::anyhow!("the kind {minor} cluster did not come up: {e}"))
}

fn start(minor: &str) -> Result<KindFx> {
    let rt = crate::runtime()?;
    let name = name(minor);
    crate::kind_started(&name);
    let opts = harness::lifecycle::KindUpOptions {
        spec: harness::cluster::kind::KindSpec {
            name: name.clone(),
            config: crate::repo_root().join(format!("kind-configs/gang-{minor}.yaml")),
            k8s_version: Some(minor.to_string()),
            wait: Duration::from_secs(300),
            images: KindImages::Auto,
        },
        kueue: false,
        timeout: Duration::from_secs(300),
    };
    let cluster = rt
        .block_on(harness::lifecycle::up_kind(&opts))
        .with_context(|| format!("harness up --provider kind --name {name}"))?;
    Ok(KindFx { rt, cluster })
}

/// `docker exec NODE sh -c SCRIPT`, its standard output.
fn exec(fx: &KindFx, node: &str, script: &str) -> Result<String> {
    let docker = fx.cluster.tools()?.docker;
    let out = std::process::Command::new(docker)
        .envs(harness::tools::engine::env())
        .args(["exec", node, "sh", "-c", script])
        .output()
        .context("docker exec")?;
    ensure!(
        out.status.success(),
        "docker exec {node} sh -c {script:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The command line of the process named `comm` in `node`.
fn cmdline(fx: &KindFx, node: &str, comm: &str) -> Result<String> {
    let text = exec(
        fx,
        node,
        &format!(
            "for p in /proc/[0-9]*; do if [ \"$(cat $p/comm 2>/dev/null)\" = {comm} ]; then tr '\\0' ' ' < $p/cmdline; echo; fi; done"
        ),
    )?;
    let line = text.lines().find(|l| !l.trim().is_empty());
    line.map(str::to_string)
        .with_context(|| format!("no {comm} process in {node}"))
}

fn nodes_ready_with_the_profiles_gates(minor: &'static str) -> Result<()> {
    let fx = shared(minor)?;
    let c = &fx.cluster;
    let release = K8sRelease::parse(minor)?;
    let profile = harness::cluster::kind::config::load_profile(&c.state.profile)?;
    let gates: Vec<(String, bool)> = profile.doc["featureGates"]
        .as_object()
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.clone(), v.as_bool().unwrap_or(false)))
                .collect()
        })
        .unwrap_or_default();
    ensure!(
        !gates.is_empty(),
        "the gang profile of {minor} names no feature gate"
    );
    let client = fx.rt.block_on(c.client())?;
    let nodes: Vec<Node> = fx
        .rt
        .block_on(Api::<Node>::all(client).list(&ListParams::default()))?
        .items;
    ensure!(
        nodes.len() == c.state.nodes.len() && nodes.len() >= 2,
        "{} nodes registered, {} containers",
        nodes.len(),
        c.state.nodes.len()
    );
    for n in &nodes {
        let ready = n
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"));
        let v = n
            .status
            .as_ref()
            .and_then(|s| s.node_info.as_ref())
            .map(|i| i.kubelet_version.clone())
            .unwrap_or_default();
        ensure!(ready, "node {:?} is not Ready", n.metadata.name);
        ensure!(
            v.trim_start_matches('v').starts_with(minor),
            "node {:?} runs kubelet {v}, not {minor}",
            n.metadata.name
        );
    }
    let cp = &c.state.control_plane;
    for comm in ["kube-apiserver", "kube-scheduler"] {
        let line = cmdline(fx, cp, comm)?;
        for (g, on) in &gates {
            ensure!(
                line.contains(&format!("{g}={on}")),
                "{comm} in {cp} runs without {g}={on}: {line}"
            );
        }
    }
    let api = cmdline(fx, cp, "kube-apiserver")?;
    for (rc, v) in release.gang_runtime_config() {
        ensure!(
            api.contains(&format!("{rc}={v}")),
            "kube-apiserver runs without --runtime-config {rc}={v}: {api}"
        );
    }
    for node in &c.state.nodes {
        let cfg = exec(fx, node, "cat /var/lib/kubelet/config.yaml")?;
        for (g, on) in &gates {
            ensure!(
                cfg.contains(&format!("{g}: {on}")),
                "the kubelet of {node} has no {g}: {on} in /var/lib/kubelet/config.yaml"
            );
        }
    }
    Ok(())
}

fn jobset_admitted_by_its_webhook_runs_to_completion(minor: &'static str) -> Result<()> {
    let fx = shared(minor)?;
    let image = agnhost(fx)?;
    fx.rt.block_on(async {
        let client = fx.cluster.client().await?;
        let gvk = GroupVersionKind::gvk("jobset.x-k8s.io", "v1alpha2", "JobSet");
        let ar = ApiResource::from_gvk(&gvk);
        let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), "default", &ar);
        // JobSet's validating webhook (not the CRD schema) refuses a
        // success policy naming a replicated job that does not exist
        // (pkg/webhooks/jobset_webhook.go).
        let mut bad = jobset("t-bad", &image);
        bad["spec"]["successPolicy"] = json!({"operator": "All", "targetReplicatedJobs": ["nope"]});
        let refused = api
            .create(&PostParams::default(), &serde_json::from_value(bad)?)
            .await;
        match refused {
            Ok(_) => bail!("a JobSet whose success policy names no replicated job was accepted"),
            Err(e) => ensure!(
                format!("{e}").contains("does not appear in .spec.ReplicatedJobs"),
                "refused, but not by JobSet's webhook: {e}"
            ),
        }
        api.create(
            &PostParams::default(),
            &serde_json::from_value(jobset("t-ok", &image))?,
        )
        .await
        .context("creating a JobSet")?;
        Poll::new("JobSet t-ok Completed", Duration::from_secs(180))
            .tolerate_errors()
            .until(|| async {
                let j = api.get("t-ok").await?;
                let conds = j.data["status"]["conditions"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default();
                if conds
                    .iter()
                    .any(|c| c["type"] == "Failed" && c["status"] == "True")
                {
                    bail!("JobSet t-ok failed: {conds:?}");
                }
                Ok(conds
                    .iter()
                    .any(|c| c["type"] == "Completed" && c["status"] == "True")
                    .then_some(()))
            })
            .await
    })
}

fn jobset(name: &str, image: &str) -> serde_json::Value {
    json!({
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"replicatedJobs": [{
            "name": "w",
            "replicas": 2,
            "template": {"spec": {
                "completions": 1, "parallelism": 1, "backoffLimit": 0,
                "template": {"spec": {
                    "restartPolicy": "Never",
                    "containers": [{
                        "name": "c", "image": image, "imagePullPolicy": "Never",
                        "args": ["entrypoint-tester", "done"],
                    }],
                }},
            }},
        }]},
    })
}

/// The agnhost image loaded into the nodes.
fn agnhost(fx: &KindFx) -> Result<String> {
    ensure!(
        fx.cluster.built(),
        "this trial runs agnhost from the image the harness loads into built nodes; the cluster's nodes were pulled"
    );
    Ok(harness::cluster::local::realnode::image::image_name(
        &fx.cluster.state.k8s_version,
    ))
}

fn cert_manager_absence_is_reported(minor: &'static str) -> Result<()> {
    let fx = shared(minor)?;
    match &fx.cluster.state.cert_manager_absent {
        Some(why) => {
            ensure!(
                why.contains("quay.io/jetstack/cert-manager-") && why.contains("cannot be pulled"),
                "the reason does not name the image that could not be had: {why}"
            );
            let client = fx.rt.block_on(fx.cluster.client())?;
            let crds = fx.rt.block_on(
                Api::<k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition>::all(client)
                    .get_opt("certificates.cert-manager.io"),
            )?;
            ensure!(
                crds.is_none(),
                "cert-manager's CRDs exist though it was reported absent"
            );
            Ok(())
        }
        None => bail!(
            "cert-manager is installed on {}: a Certificate check belongs here and is not written yet",
            fx.cluster.state.name
        ),
    }
}

fn a_real_containers_exit_code_is_reported(minor: &'static str) -> Result<()> {
    let fx = shared(minor)?;
    let image = agnhost(fx)?;
    fx.rt.block_on(async {
        let client = fx.cluster.client().await?;
        let jobs: Api<Job> = Api::namespaced(client.clone(), "default");
        let pods: Api<Pod> = Api::namespaced(client, "default");
        // agnhost's `fake-gitserver` is not asked for: an unknown
        // subcommand makes agnhost exit 1 — a real process's exit code.
        let job: Job = serde_json::from_value(json!({
            "metadata": {"name": "t-exit"},
            "spec": {"backoffLimit": 0, "template": {"spec": {
                "restartPolicy": "Never",
                "containers": [{"name": "c", "image": image, "imagePullPolicy": "Never",
                                "args": ["no-such-command"]}],
            }}},
        }))?;
        jobs.create(&PostParams::default(), &job).await?;
        let code = Poll::new("t-exit's container terminated", Duration::from_secs(120))
            .tolerate_errors()
            .until(|| async {
                let list = pods
                    .list(&ListParams::default().labels("job-name=t-exit"))
                    .await?;
                Ok(list.items.iter().find_map(|p| {
                    p.status
                        .as_ref()?
                        .container_statuses
                        .as_ref()?
                        .iter()
                        .find_map(|s| s.state.as_ref()?.terminated.as_ref().map(|t| t.exit_code))
                }))
            })
            .await?;
        ensure!(code != 0, "agnhost no-such-command exited 0");
        Ok(())
    })
}

fn audit_events_come_from_the_hosts_log(minor: &'static str) -> Result<()> {
    let fx = shared(minor)?;
    let (events, _) = fx.cluster.audit_events(0)?;
    let users: std::collections::BTreeSet<&str> =
        events.iter().map(|e| e.user.username.as_str()).collect();
    for who in [
        "kubernetes-admin",
        "system:kube-scheduler",
        "system:serviceaccount:kube-system:job-controller",
    ] {
        ensure!(
            users.contains(who),
            "no audit event by {who} in {} ({} events; users: {:?})",
            fx.cluster.state.audit_log.display(),
            events.len(),
            users.iter().take(20).collect::<Vec<_>>()
        );
    }
    ensure!(
        events
            .iter()
            .any(|e| e.user.username.starts_with("system:node:")),
        "no audit event by a kubelet"
    );
    Ok(())
}

fn cpu_and_memory_per_component_through_docker_exec(minor: &'static str) -> Result<()> {
    use harness::metrics::usage::UsageTracker;
    let fx = shared(minor)?;
    let mut t = UsageTracker::new(fx.cluster.processes());
    fx.rt.block_on(async {
        t.sample().await;
        // Some API work in between, so every component has run.
        let client = fx.cluster.client().await?;
        for _ in 0..10 {
            Api::<Node>::all(client.clone())
                .list(&ListParams::default())
                .await?;
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
        t.sample().await;
        Ok::<_, anyhow::Error>(())
    })?;
    let figures = t.figures();
    for comp in [
        "kube-apiserver",
        "etcd",
        "kube-controller-manager",
        "kube-scheduler",
        "kubelet",
        "containerd",
    ] {
        let u = figures
            .get(comp)
            .with_context(|| format!("no figures for {comp}: {:?}", figures.keys()))?;
        ensure!(u.cpu_s > 0.0, "{comp}: CPU {} s", u.cpu_s);
        ensure!(u.rss_peak_mib > 1.0, "{comp}: RSS {} MiB", u.rss_peak_mib);
    }
    Ok(())
}

/// The Thor smoke on the kind cluster, used as an existing cluster: HPCC's
/// pods (the real-node templates: agnhost in HPCC's pod specs) run as real
/// containers on the worker's kubelet, in baseline and JobSet modes.
fn thor_smoke_on_the_kind_workers(minor: &'static str) -> Result<()> {
    let fx = shared(minor)?;
    let c = &fx.cluster;
    agnhost(fx)?;
    let worker = c
        .state
        .nodes
        .iter()
        .find(|n| n.ends_with("-worker"))
        .context("the gang profile has a worker node")?;
    let r = crate::suite::thor_real::smoke_as_an_existing_cluster(
        &c.state.kubeconfig,
        &c.state.audit_log,
        &c.state.k8s_version,
        &[
            harness::workload::thor::Mode::Baseline,
            harness::workload::thor::Mode::Jobset,
        ],
        &format!("system:node:{worker}"),
    )?;
    ensure!(r.modes.len() == 2, "modes run: {:?}", r.modes.keys());
    Ok(())
}

fn down_leaves_nothing(minor: &'static str) -> Result<()> {
    let fx = shared(minor)?;
    let c = &fx.cluster;
    let kind_name = c.state.kind_cluster.clone();
    let root = c.root.clone();
    let docker = c.tools()?.docker;
    harness::cluster::kind::KindCluster::load(&c.state.name)?.down(false)?;
    let left = |args: &[&str]| -> Result<String> {
        let out = std::process::Command::new(&docker)
            .envs(harness::tools::engine::env())
            .args(args)
            .output()?;
        ensure!(
            out.status.success(),
            "docker {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
    };
    let containers = left(&[
        "ps",
        "-a",
        "--filter",
        &format!("label=io.x-k8s.kind.cluster={kind_name}"),
        "--format",
        "{{.Names}}",
    ])?;
    ensure!(containers.is_empty(), "containers left: {containers}");
    let volumes = left(&["volume", "ls", "--format", "{{.Name}}"])?;
    ensure!(
        !volumes.lines().any(|v| v.contains(&kind_name)),
        "volumes left: {volumes}"
    );
    ensure!(!root.exists(), "{} is still there", root.display());
    Ok(())
}

/// Why this machine cannot run the suite, if it cannot: no docker
/// client, or no engine answers.
fn lacks() -> Option<String> {
    let Ok(docker) = which::which("docker") else {
        return Some("no docker client on PATH: `bash ci/ensure-docker.sh` (as root on Debian) installs docker.io and starts a private engine the harness finds".to_string());
    };
    let answers = std::process::Command::new(docker)
        .envs(harness::tools::engine::env())
        .args(["info", "--format", "{{.ServerVersion}}"])
        .output()
        .is_ok_and(|o| o.status.success());
    (!answers).then(|| {
        format!(
            "no Docker engine answers ({}): `bash ci/ensure-docker.sh` (as root on Debian) starts a private one the harness finds; elsewhere start Docker",
            harness::tools::engine::engine().how
        )
    })
}

pub fn suite(_args: &Arguments) -> Suite {
    let lacking = lacks();
    let mut tests = Vec::new();
    let minors = minors();
    for &minor in &minors {
        let lane: &'static str = Box::leak(format!("kind-{minor}").into_boxed_str());
        let m = minor.replace('.', "");
        type Trial = fn(&'static str) -> Result<()>;
        let trials: [(&str, Trial); 8] = [
            (
                "nodes_ready_with_the_profiles_gates",
                nodes_ready_with_the_profiles_gates,
            ),
            (
                "jobset_admitted_by_its_webhook_runs_to_completion",
                jobset_admitted_by_its_webhook_runs_to_completion,
            ),
            (
                "cert_manager_absence_is_reported",
                cert_manager_absence_is_reported,
            ),
            (
                "a_real_containers_exit_code_is_reported",
                a_real_containers_exit_code_is_reported,
            ),
            (
                "audit_events_come_from_the_hosts_log",
                audit_events_come_from_the_hosts_log,
            ),
            (
                "cpu_and_memory_per_component_through_docker_exec",
                cpu_and_memory_per_component_through_docker_exec,
            ),
            (
                "thor_smoke_on_the_kind_workers",
                thor_smoke_on_the_kind_workers,
            ),
            ("down_leaves_nothing", down_leaves_nothing),
        ];
        for (n, f) in trials {
            tests.push(
                Test::new(format!("kind_{m}_{n}"), move || {
                    crate::trial_result(f(minor))
                })
                .serial(lane)
                .lacking(lacking.clone()),
            );
        }
    }
    Suite::new("kind", tests).after(move || {
        // A cluster whose `down` trial did not run (filtered, or failed
        // before it) is removed here.
        for minor in minors {
            let cell = SHARED.lock().ok().and_then(|m| m.get(minor).copied());
            if let Some(Ok(fx)) = cell.and_then(|c| c.get())
                && fx.cluster.root.exists()
            {
                let _ = harness::cluster::kind::abandon(&fx.cluster.state.name);
            }
        }
        Ok(())
    })
}
