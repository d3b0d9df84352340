//! A real node (`up --real-node`): the cluster's own kubelet with
//! containerd and runc runs real containers of the local agnhost image.
//! Jobs succeed and fail by their containers' exit codes as the kubelet
//! reports them (with its own identity, in the audit log), their logs come
//! from the container runtime through the API server, and `down` leaves no
//! shim, container, mount, interface or log link behind. One real node per
//! machine: the trials run one after the other (lane "realnode"), each on
//! its own cluster.

use std::time::Duration;

use crate::builds::{Need, default_cluster_and};
use crate::runner::{Suite, Test};
use crate::{Fixture, namespace, test_spec, unique_name};
use anyhow::{Context, Result, bail, ensure};
use harness::cluster::Cluster;
use harness::cluster::local::realnode::{self, BRIDGE, NODE_NAME, NODE_USER};
use harness::poll::Poll;
use harness::tools::Component;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams, LogParams, PostParams};
use libtest_mimic::Arguments;
use serde_json::json;

const NS: &str = "t-real";
const LANE: &str = "realnode";

/// A cluster with a real node, stopped when dropped (whatever the trial
/// did).
struct RealCluster(Option<Fixture>);

impl RealCluster {
    fn start(prefix: &str) -> Result<RealCluster> {
        let mut spec = test_spec(&unique_name(prefix));
        spec.real_node = true;
        Ok(RealCluster(Some(Fixture::start(spec)?)))
    }
    fn fx(&self) -> &Fixture {
        self.0.as_ref().expect("a started cluster")
    }
    /// Stop it now; Err if `down` failed.
    fn stop(mut self) -> Result<Fixture> {
        let fx = self.0.take().expect("a started cluster");
        fx.stop()?;
        Ok(fx)
    }
}

impl Drop for RealCluster {
    fn drop(&mut self) {
        if let Some(fx) = self.0.take() {
            let _ = fx.stop();
        }
    }
}

/// A Job of `completions` pods on the real node running agnhost `args`.
fn job(name: &str, completions: i32, args: &[&str], image: &str) -> Result<Job> {
    Ok(serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {
            "completions": completions,
            "parallelism": completions,
            "backoffLimit": 0,
            "template": {"spec": {
                "restartPolicy": "Never",
                "nodeSelector": {"kubernetes.io/hostname": NODE_NAME},
                "containers": [{
                    "name": "work",
                    "image": image,
                    "imagePullPolicy": "Never",
                    "args": args,
                    "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}},
                }],
            }},
        },
    }))?)
}

/// The Job's condition that came true: "Complete" or "Failed".
async fn wait_job(jobs: &Api<Job>, name: &str) -> Result<String> {
    Poll::new(format!("Job {name} finished"), Duration::from_secs(120))
        .tolerate_errors()
        .until(|| async {
            let j = jobs.get(name).await?;
            let conds = j.status.and_then(|s| s.conditions).unwrap_or_default();
            Ok(conds
                .into_iter()
                .find(|c| (c.type_ == "Complete" || c.type_ == "Failed") && c.status == "True")
                .map(|c| c.type_))
        })
        .await
}

/// The exit codes the kubelet reported for the Job's containers.
async fn exit_codes(pods: &Api<Pod>, job: &str) -> Result<Vec<i32>> {
    let list = pods
        .list(&ListParams::default().labels(&format!("job-name={job}")))
        .await?;
    let mut codes = vec![];
    for p in list.items {
        let statuses = p
            .status
            .and_then(|s| s.container_statuses)
            .unwrap_or_default();
        for s in statuses {
            match s.state.and_then(|st| st.terminated) {
                Some(t) => codes.push(t.exit_code),
                None => bail!("a container of {job} has not terminated"),
            }
        }
    }
    Ok(codes)
}

fn jobs_run_real_containers_and_the_kubelet_reports_them() -> Result<()> {
    let rc = RealCluster::start("t-real")?;
    let fx = rc.fx();
    let image = realnode::image::image_name(fx.cluster.state.k8s_version.as_str());
    let (_, before) = fx.cluster.audit_events(0)?;
    fx.rt.block_on(async {
        let client = namespace(&fx.cluster, NS).await?;
        let jobs: Api<Job> = Api::namespaced(client.clone(), NS);
        let pods: Api<Pod> = Api::namespaced(client, NS);
        let pp = PostParams::default();
        jobs.create(
            &pp,
            &job("says", 2, &["entrypoint-tester", "from", "runc"], &image)?,
        )
        .await?;
        // agnhost exits 1 on a command it does not know (cli.Run).
        jobs.create(&pp, &job("fails", 1, &["no-such-command"], &image)?)
            .await?;
        let said = wait_job(&jobs, "says").await?;
        ensure!(said == "Complete", "Job says ended {said}");
        ensure!(
            exit_codes(&pods, "says").await? == vec![0, 0],
            "exit codes of says"
        );
        let failed = wait_job(&jobs, "fails").await?;
        ensure!(failed == "Failed", "Job fails ended {failed}");
        let codes = exit_codes(&pods, "fails").await?;
        ensure!(codes == vec![1], "exit codes of fails: {codes:?}");
        // The container's own output, from containerd's log file through
        // the kubelet's server and the API server.
        let first = pods
            .list(&ListParams::default().labels("job-name=says"))
            .await?
            .items
            .into_iter()
            .next()
            .context("a pod of says")?;
        let name = first.metadata.name.clone().unwrap_or_default();
        let log = pods.logs(&name, &LogParams::default()).await?;
        ensure!(
            log.trim() == "[/agnhost entrypoint-tester from runc]",
            "pod {name} logged {log:?}"
        );
        let ip = first.status.and_then(|s| s.pod_ip).unwrap_or_default();
        let subnet = &fx
            .cluster
            .state
            .real_node
            .as_ref()
            .context("placement")?
            .pod_subnet;
        let prefix = subnet.trim_end_matches("0/24");
        ensure!(ip.starts_with(prefix), "pod IP {ip} outside {subnet}");
        Ok::<_, anyhow::Error>(())
    })?;
    // The pods' status came from the kubelet, under its node identity.
    let (events, _) = fx.cluster.audit_events(before)?;
    let reports = events
        .iter()
        .filter(|e| {
            e.stage == "ResponseComplete"
                && e.user.username == NODE_USER
                && e.object_ref.as_ref().is_some_and(|o| {
                    o.resource == "pods" && o.subresource == "status" && o.namespace == NS
                })
        })
        .count();
    ensure!(
        reports >= 3,
        "{reports} pod status writes by {NODE_USER} for 3 pods"
    );
    let mut by_request = std::collections::BTreeMap::<String, u32>::new();
    for e in events.iter().filter(|e| {
        e.stage == "ResponseComplete"
            && e.user.username == NODE_USER
            && e.object_ref.as_ref().is_some_and(|o| o.namespace == NS)
    }) {
        let o = e.object_ref.as_ref().expect("filtered on it");
        let sub = if o.subresource.is_empty() {
            String::new()
        } else {
            format!("/{}", o.subresource)
        };
        *by_request
            .entry(format!("{} {}{sub}", e.verb, o.resource))
            .or_default() += 1;
    }
    eprintln!("3 pods ran real containers; {NODE_USER}'s requests in {NS}: {by_request:?}");
    rc.stop()?;
    Ok(())
}

/// What a real node leaves on the machine: processes whose command line
/// names the cluster's directory, mounts under it, the bridge, log links
/// into it.
fn leftovers(dir: &std::path::Path) -> Vec<String> {
    let d = dir.display().to_string();
    let mut out = vec![];
    for (pid, argv) in realnode::cleanup::processes() {
        if argv.iter().any(|a| a.contains(&d)) {
            out.push(format!("process {pid}: {}", argv.join(" ")));
        }
    }
    let info = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    out.extend(
        info.lines()
            .filter_map(|l| l.split_whitespace().nth(4))
            .filter(|m| m.starts_with(&d))
            .map(|m| format!("mount {m}")),
    );
    if std::path::Path::new("/sys/class/net").join(BRIDGE).exists() {
        out.push(format!("interface {BRIDGE}"));
    }
    if let Ok(links) = std::fs::read_dir("/var/log/containers") {
        for l in links.flatten() {
            if std::fs::read_link(l.path()).is_ok_and(|t| t.starts_with(dir)) {
                out.push(format!("log link {}", l.path().display()));
            }
        }
    }
    out
}

fn down_leaves_no_container_mount_or_interface() -> Result<()> {
    // The host forwards no packets before (as a fresh machine may not): the
    // bridge plugin turns forwarding on for the pod below, and down must
    // turn it off again. The machine's own setting is put back after.
    let forward = std::path::Path::new("/proc/sys/net/ipv4/ip_forward");
    let machines = std::fs::read_to_string(forward)?;
    std::fs::write(forward, "0\n")?;
    let r = down_leaves_the_host_as_it_was(forward);
    std::fs::write(forward, &machines)?;
    r
}

fn down_leaves_the_host_as_it_was(forward: &std::path::Path) -> Result<()> {
    let rc = RealCluster::start("t-real-down")?;
    let fx = rc.fx();
    let dir = fx.cluster.layout.root.clone();
    let image = realnode::image::image_name(fx.cluster.state.k8s_version.as_str());
    fx.rt.block_on(async {
        let client = namespace(&fx.cluster, NS).await?;
        let pods: Api<Pod> = Api::namespaced(client, NS);
        let pod: Pod = serde_json::from_value(json!({
            "metadata": {"name": "stays"},
            "spec": {
                "nodeSelector": {"kubernetes.io/hostname": NODE_NAME},
                "containers": [{"name": "c", "image": image,
                    "imagePullPolicy": "Never", "args": ["pause"]}],
            },
        }))?;
        pods.create(&PostParams::default(), &pod).await?;
        Poll::new("pod stays Running", Duration::from_secs(90))
            .tolerate_errors()
            .until(|| async {
                let p = pods.get("stays").await?;
                Ok((p.status.and_then(|s| s.phase).as_deref() == Some("Running")).then_some(()))
            })
            .await
    })?;
    let running = leftovers(&dir);
    ensure!(
        running.iter().any(|l| l.contains("containerd-shim"))
            && running.iter().any(|l| l.starts_with("mount")),
        "a running pod should show a shim and mounts: {running:?}"
    );
    let forwarding = std::fs::read_to_string(forward)?;
    rc.stop()?;
    let left = leftovers(&dir);
    ensure!(left.is_empty(), "down left: {left:#?}");
    let after = std::fs::read_to_string(forward)?;
    ensure!(
        after.trim() == "0",
        "net.ipv4.ip_forward was 0 before up, {} with a pod running, {} after down",
        forwarding.trim(),
        after.trim()
    );
    ensure!(!dir.exists(), "down left {}", dir.display());
    eprintln!(
        "while running: {} processes and mounts of the node; after down: none",
        running.len()
    );
    Ok(())
}

/// kwok's kubelet-like model against the real kubelet (kubelet/real.rs).
fn the_kubelet_like_model_against_the_real_kubelet() -> Result<()> {
    use crate::suite::kubelet::real::{RealKubelet, model_against_the_real_kubelet};
    let rc = RealCluster::start("t-real-model")?;
    let fx = rc.fx();
    model_against_the_real_kubelet(&RealKubelet {
        rt: &fx.rt,
        cluster: &fx.cluster,
        node: NODE_NAME,
        image: realnode::image::image_name(&fx.cluster.state.k8s_version),
        k8s_version: &fx.cluster.state.k8s_version,
    })?;
    rc.stop()?;
    Ok(())
}

/// The Thor smoke on real nodes (thor/real.rs).
fn thor_smoke_on_the_real_node() -> Result<()> {
    crate::suite::thor::real::smoke_on_the_real_node()
}

fn thor_smoke_on_an_existing_clusters_real_node() -> Result<()> {
    let rc = RealCluster::start("t-real-exist")?;
    crate::suite::thor::real::smoke_on_an_existing_clusters_real_node(&rc.fx().cluster)?;
    rc.stop()?;
    Ok(())
}

/// What this machine lacks to run a real node: root (containerd and runc
/// mount, make namespaces and cgroups; `up --real-node` refuses without).
fn lacks() -> Option<String> {
    // SAFETY: geteuid has no preconditions.
    (unsafe { libc::geteuid() } != 0).then(|| {
        "needs root: a real node's containerd and runc mount file systems and make namespaces; run as root for this suite".to_string()
    })
}

/// A real node's binaries beside the cluster's; the Thor smokes fork
/// HPCC's kubectl.
fn needs() -> Vec<Need> {
    let mut extra = Component::NODE.to_vec();
    extra.push(Component::HpccKubectl);
    default_cluster_and(&extra)
}

pub fn suite(_args: &Arguments) -> Suite {
    Suite::new(
        "realnode",
        vec![
            Test::of(
                "jobs_run_real_containers_and_the_kubelet_reports_them",
                jobs_run_real_containers_and_the_kubelet_reports_them,
            )
            .serial(LANE)
            .needs(needs())
            .lacking(lacks()),
            Test::of(
                "the_kubelet_like_model_against_the_real_kubelet",
                the_kubelet_like_model_against_the_real_kubelet,
            )
            .serial(LANE)
            .needs(needs())
            .lacking(lacks()),
            Test::of("thor_smoke_on_the_real_node", thor_smoke_on_the_real_node)
                .serial(LANE)
                .needs(needs())
                .lacking(lacks()),
            Test::of(
                "thor_smoke_on_an_existing_clusters_real_node",
                thor_smoke_on_an_existing_clusters_real_node,
            )
            .serial(LANE)
            .needs(needs())
            .lacking(lacks()),
            Test::of(
                "down_leaves_no_container_mount_or_interface",
                down_leaves_no_container_mount_or_interface,
            )
            .serial(LANE)
            .needs(needs())
            .lacking(lacks()),
        ],
    )
}
