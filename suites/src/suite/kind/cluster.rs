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
//! through `docker exec`; etcd's and kube-scheduler's metrics read inside
//! the control-plane node; a stopped kube-scheduler waited for and named
//! as restarted; a claim of the default class bound and mounted;
//! the Thor smoke as on an existing cluster; kwok's kubelet-like model
//! against a kind worker's kubelet (suite/kubelet/real.rs); the gang suite's cases of the
//! gang profile on kwok pools beside the kind nodes (gang.rs; the
//! cluster runs kwok for them); `down` leaves no container, volume or
//! state; and, in the first minor's lane, `bench thor --provider kind` on
//! fresh clusters (bench.rs) and `measure --provider kind`
//! (measure.rs).
//! Where no engine answers, the trials are listed as ignored with why.

use std::time::Duration;

use anyhow::{Context, Result, bail, ensure};
use harness::cluster::Cluster;
use harness::cluster::kind::commands::CRICTL_TIMEOUT;
use harness::k8s::K8sRelease;
use harness::poll::Poll;
use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, ListParams};
use libtest_mimic::Arguments;

use crate::runner::{Suite, Test};
use crate::suite::kind::fixtures::{KindFx, SHARED, exec, minors, shared};
use crate::suite::kind::gang::{self, KindCase};
use crate::suite::kind::workloads;

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

fn cpu_and_memory_per_component_of_the_node_containers(minor: &'static str) -> Result<()> {
    use harness::metrics::usage::UsageTracker;
    let fx = shared(minor)?;
    let mut t = UsageTracker::new(fx.cluster.processes());
    fx.rt.block_on(async {
        // Some API work between samples, so every component has run; a
        // sample per round, so one docker exec past its time (a loaded
        // machine: CI of aa174f3 read no kube-apiserver CPU) is one of
        // eleven.
        t.sample().await;
        let client = fx.cluster.client().await?;
        for _ in 0..10 {
            Api::<Node>::all(client.clone())
                .list(&ListParams::default())
                .await?;
            tokio::time::sleep(Duration::from_millis(300)).await;
            t.sample().await;
        }
        Ok::<_, anyhow::Error>(())
    })?;
    // The private engine of ci/ensure-docker.sh runs the nodes in this
    // machine's PID namespace: read from /proc, no docker exec per sample
    // (metrics::node_procs).
    let nodes = fx.cluster.state.nodes.len();
    ensure!(
        t.nodes_read_here() == nodes,
        "{} of {nodes} node containers read from this machine's /proc",
        t.nodes_read_here()
    );
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
        ensure!(
            u.samples >= 2,
            "{comp}: read in {} of 11 samples",
            u.samples
        );
        ensure!(u.cpu_s > 0.0, "{comp}: CPU {} s", u.cpu_s);
        ensure!(u.rss_peak_mib > 1.0, "{comp}: RSS {} MiB", u.rss_peak_mib);
    }
    Ok(())
}

/// The scheduler's, the controller manager's and the JobSet controller's
/// leases are held for 60 s (cluster/kind/patches.rs, and
/// install/release.rs `lasting_leader_election` for JobSet's
/// Configuration), not client-go's 15 s: what each holder wrote in its
/// Lease.
fn leader_leases_outlast_a_loaded_machine(minor: &'static str) -> Result<()> {
    use k8s_openapi::api::coordination::v1::Lease;
    let fx = shared(minor)?;
    let seconds = harness::cluster::kind::patches::LEASE_DURATION
        .trim_end_matches('s')
        .parse::<i32>()?;
    fx.rt.block_on(async {
        let client = fx.cluster.client().await?;
        let mut held = vec![];
        for (ns, name) in [
            ("kube-system", Some("kube-scheduler")),
            ("kube-system", Some("kube-controller-manager")),
            ("jobset-system", None),
        ] {
            let leases: Api<Lease> = Api::namespaced(client.clone(), ns);
            let list = leases.list(&ListParams::default()).await?.items;
            let lease = list
                .iter()
                .find(|l| name.is_none_or(|n| l.metadata.name.as_deref() == Some(n)))
                .with_context(|| format!("no lease {name:?} in {ns}"))?;
            let spec = lease.spec.clone().unwrap_or_default();
            held.push(format!(
                "{ns}/{}: {:?} s by {:?}",
                lease.metadata.name.clone().unwrap_or_default(),
                spec.lease_duration_seconds,
                spec.holder_identity
            ));
            ensure!(
                spec.lease_duration_seconds == Some(seconds),
                "{}",
                held.join("; ")
            );
        }
        println!("leases: {}", held.join("; "));
        Ok(())
    })
}

fn etcd_and_scheduler_metrics_from_inside_the_node(minor: &'static str) -> Result<()> {
    let fx = shared(minor)?;
    let (etcd, scheduler) = fx.rt.block_on(async {
        let e = fx.cluster.etcd_metrics().await?;
        let s = fx.cluster.scheduler_metrics().await?;
        Ok::<_, anyhow::Error>((e, s))
    })?;
    ensure!(
        etcd.contains("etcd_server_has_leader 1"),
        "etcd's metrics have no leader: {}",
        etcd.chars().take(300).collect::<String>()
    );
    let scheduler = scheduler.context("the kind provider gave no kube-scheduler metrics")?;
    ensure!(
        scheduler.contains("scheduler_schedule_attempts_total"),
        "kube-scheduler's metrics have no scheduler_schedule_attempts_total: {}",
        scheduler.chars().take(300).collect::<String>()
    );
    Ok(())
}

/// The node's kubelet restarts a stopped kube-scheduler: its metrics are
/// read once it answers again, and the provider's account of a failure
/// names the restart with the ended instance's log (kind/restarts.rs).
fn a_restarted_scheduler_is_waited_for_and_named(minor: &'static str) -> Result<()> {
    let fx = shared(minor)?;
    let cp = fx.cluster.state.control_plane.clone();
    let attempts = || -> Result<u32> {
        let out = exec(fx, &cp, &crictl("ps -a --name '^kube-scheduler$' -o json"))?;
        let v: serde_json::Value = serde_json::from_str(&out)?;
        Ok(v["containers"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|c| c["metadata"]["attempt"].as_u64())
            .max()
            .unwrap_or(0) as u32)
    };
    let started = |metrics: Option<String>| -> Result<f64> {
        let text = metrics.context("the kind provider gave no kube-scheduler metrics")?;
        text.lines()
            .find_map(|l| l.strip_prefix("process_start_time_seconds "))
            .and_then(|v| v.trim().parse().ok())
            .context("kube-scheduler's metrics have no process_start_time_seconds")
    };
    let first = started(fx.rt.block_on(fx.cluster.scheduler_metrics())?)?;
    let before = attempts()?;
    let id = exec(fx, &cp, &crictl("ps --name '^kube-scheduler$' -q"))?;
    let id = id.trim();
    ensure!(!id.is_empty(), "no running kube-scheduler in {cp}");
    exec(fx, &cp, &crictl(&format!("stop {id}")))?;
    // Read as soon as it is stopped: the read waits for the new process.
    let again = started(fx.rt.block_on(fx.cluster.scheduler_metrics())?)?;
    ensure!(
        again > first,
        "kube-scheduler's metrics came from a process started at {again}, not after the one started at {first}"
    );
    let after = attempts()?;
    ensure!(
        after == before + 1,
        "kube-scheduler's attempt went from {before} to {after}, not one up"
    );
    let told = fx
        .rt
        .block_on(fx.cluster.explain_failure())
        .context("a restarted kube-scheduler was not named")?;
    ensure!(
        told.contains(&format!(
            "kube-scheduler: restarted {after} time(s), running again"
        )) && told.contains("the instance that ended logged last:"),
        "the restart was told as: {told}"
    );
    Ok(())
}

fn down_leaves_nothing(minor: &'static str) -> Result<()> {
    let fx = shared(minor)?;
    let c = &fx.cluster;
    let kind_name = c.state.kind_cluster.clone();
    let root = c.root.clone();
    let docker = c.tools()?.docker;
    let docker_out = |args: &[&str]| -> Result<std::process::Output> {
        Ok(std::process::Command::new(&docker)
            .envs(harness::tools::engine::env())
            .args(args)
            .output()?)
    };
    let left = |args: &[&str]| -> Result<String> {
        let out = docker_out(args)?;
        ensure!(
            out.status.success(),
            "docker {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
    };
    // A kind node's /var is an anonymous volume: named by its id, not the
    // cluster. Read them from the nodes before `down`.
    let mut volumes = Vec::new();
    for node in &c.state.nodes {
        let mounts = left(&[
            "inspect",
            "--format",
            "{{range .Mounts}}{{if eq .Type \"volume\"}}{{.Name}} {{end}}{{end}}",
            node,
        ])?;
        volumes.extend(mounts.split_whitespace().map(str::to_string));
    }
    ensure!(
        !volumes.is_empty(),
        "the nodes {:?} mount no volume: nothing for the check to see",
        c.state.nodes
    );
    let on_network = c.state.images == "built";
    harness::cluster::kind::KindCluster::load(&c.state.name)?.down(false)?;
    let containers = left(&[
        "ps",
        "-a",
        "--filter",
        &format!("label=io.x-k8s.kind.cluster={kind_name}"),
        "--format",
        "{{.Names}}",
    ])?;
    ensure!(containers.is_empty(), "containers left: {containers}");
    let all = left(&["volume", "ls", "--format", "{{.Name}}"])?;
    let kept: Vec<&String> = volumes
        .iter()
        .filter(|v| all.lines().any(|l| l == v.as_str()))
        .collect();
    ensure!(kept.is_empty(), "the nodes' volumes left: {kept:?}");
    ensure!(!root.exists(), "{} is still there", root.display());
    // The built images' network: none of this cluster's containers on it,
    // and gone with the last harness kind cluster.
    if on_network {
        let inspect = docker_out(&[
            "network",
            "inspect",
            "--format",
            "{{range .Containers}}{{.Name}} {{end}}",
            harness::cluster::kind::BUILT_NETWORK,
        ])?;
        let on_it = String::from_utf8_lossy(&inspect.stdout).to_string();
        ensure!(
            !on_it.contains(&kind_name),
            "{kind_name}'s containers still on the network: {on_it}"
        );
        // Another lane's cluster may be starting: its `up` makes the
        // network before `kind create` makes its nodes (the CI of 8ad1e1f
        // looked in between). So a network with no kind cluster must go,
        // or gain a cluster's nodes, within the time a start takes.
        let network_without_cluster = || -> Result<bool> {
            let exists =
                docker_out(&["network", "inspect", harness::cluster::kind::BUILT_NETWORK])?
                    .status
                    .success();
            let others = left(&[
                "ps",
                "-a",
                "--filter",
                "label=io.x-k8s.kind.cluster",
                "--format",
                "{{.Names}}",
            ])?;
            Ok(exists && others.is_empty())
        };
        if network_without_cluster()? {
            fx.rt
                .block_on(
                    Poll::new(
                        format!(
                            "the network {} to go or gain a starting cluster's nodes (no kind cluster is left)",
                            harness::cluster::kind::BUILT_NETWORK
                        ),
                        Duration::from_secs(180),
                    )
                    .every(Duration::from_secs(2))
                    .until(|| async { Ok((!network_without_cluster()?).then_some(())) }),
                )?;
        }
    }
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
    if !answers {
        return Some(format!(
            "no Docker engine answers ({}): `bash ci/ensure-docker.sh` (as root on Debian) starts a private one the harness finds; elsewhere start Docker",
            harness::tools::engine::engine().how
        ));
    }
    inotify_lacks(harness::inotify::instances())
}

/// The kind suite's clusters (a two-node cluster per minor, and a fresh
/// one beside it for its bench and measure trials) run beside the local
/// suites' tests: about 2 × 2 × 44 + 8 × 24 ≈ 370 inotify instances at
/// the peak, more than the default limit of 128 holds; kind's known
/// issues advise [`harness::inotify::ADVISED`].
fn inotify_lacks(i: Option<harness::inotify::Instances>) -> Option<String> {
    use harness::inotify::{ADVISED, raise};
    let i = i?;
    (i.limit < ADVISED).then(|| {
        format!(
            "fs.inotify.max_user_instances is {}: the kind suite's clusters beside the local suites' need about {ADVISED} \
             (`{}`, kind's advice; `bash ci/ensure-docker.sh` raises it while its private engine runs)",
            i.limit,
            raise()
        )
    })
}

/// The lane of the trials that make kind clusters of their own.
const FRESH_LANE: &str = "kind-fresh";

/// A crictl command line in a kind node, with the harness's deadline for
/// the runtime.
fn crictl(args: &str) -> String {
    format!("crictl --timeout {CRICTL_TIMEOUT} {args}")
}

pub fn suite(_args: &Arguments) -> Suite {
    let lacking = lacks();
    let mut tests = Vec::new();
    let minors = minors();
    let gang_cases = gang::cases();
    for &minor in &minors {
        let lane: &'static str = Box::leak(format!("kind-{minor}").into_boxed_str());
        let m = minor.replace('.', "");
        type Trial = fn(&'static str) -> Result<()>;
        let trials: [(&str, Trial); 12] = [
            (
                "nodes_ready_with_the_profiles_gates",
                nodes_ready_with_the_profiles_gates,
            ),
            (
                "jobset_admitted_by_its_webhook_runs_to_completion",
                workloads::jobset_admitted_by_its_webhook_runs_to_completion,
            ),
            (
                "a_claim_of_the_default_class_is_bound_and_mounted",
                workloads::a_claim_of_the_default_class_is_bound_and_mounted,
            ),
            (
                "cert_manager_absence_is_reported",
                cert_manager_absence_is_reported,
            ),
            (
                "a_real_containers_exit_code_is_reported",
                workloads::a_real_containers_exit_code_is_reported,
            ),
            (
                "audit_events_come_from_the_hosts_log",
                audit_events_come_from_the_hosts_log,
            ),
            (
                "cpu_and_memory_per_component_of_the_node_containers",
                cpu_and_memory_per_component_of_the_node_containers,
            ),
            (
                "etcd_and_scheduler_metrics_from_inside_the_node",
                etcd_and_scheduler_metrics_from_inside_the_node,
            ),
            (
                "leader_leases_outlast_a_loaded_machine",
                leader_leases_outlast_a_loaded_machine,
            ),
            (
                "a_restarted_scheduler_is_waited_for_and_named",
                a_restarted_scheduler_is_waited_for_and_named,
            ),
            (
                "thor_smoke_on_the_kind_workers",
                workloads::thor_smoke_on_the_kind_workers,
            ),
            (
                "the_kubelet_like_model_against_a_kind_workers_kubelet",
                workloads::the_kubelet_like_model_against_a_kind_workers_kubelet,
            ),
        ];
        // One bench and one measure on fresh clusters (kind clusters of
        // their own), of the first minor only, in a lane of their own: they
        // cost as much as the rest, and beside the shared clusters' lanes
        // they do not lengthen the run's longest chain (measured: in the
        // 1.37 lane they made it 13 min 43 s of a 22 min run).
        let bench: Vec<(&str, Trial)> = match minor == minors[0] {
            true => vec![
                (
                    "bench_thor_on_fresh_kind_clusters",
                    crate::suite::kind::bench::bench_thor_on_fresh_kind_clusters,
                ),
                (
                    "measure_a_command_on_a_fresh_kind_cluster",
                    crate::suite::kind::measure::measure_a_command_on_a_fresh_kind_cluster,
                ),
                (
                    "rounds_as_an_indexed_job_on_kind",
                    crate::suite::kind::rounds::rounds_as_an_indexed_job_on_kind,
                ),
            ],
            false => Vec::new(),
        };
        let trial = |n: &str, f: Trial| {
            Test::new(format!("kind_{m}_{n}"), move || {
                crate::trial_result(f(minor))
            })
            .serial(lane)
            .heavy()
            .lacking(lacking.clone())
        };
        tests.extend(trials.into_iter().map(|(n, f)| trial(n, f)));
        // The gang cases on the same cluster, before it goes down.
        for (name, case) in &gang_cases {
            let t = format!("kind_{m}_gang_{}", name.replace('-', "_"));
            tests.push(match case {
                KindCase::Run(c) => {
                    let (n, c) = (name.clone(), c.clone());
                    Test::new(t, move || crate::trial_result(gang::run(minor, &n, &c)))
                        .serial(lane)
                        .heavy()
                        .lacking(lacking.clone())
                }
                KindCase::Elsewhere(why) => Test::new(t, || Ok(())).lacking(Some(why.clone())),
                KindCase::Broken(e) => {
                    let e = e.clone();
                    Test::new(t, move || Err(libtest_mimic::Failed::from(e)))
                }
            });
        }
        tests.push(trial("down_leaves_nothing", down_leaves_nothing).closes_lane());
        tests.extend(
            bench
                .into_iter()
                .map(|(n, f)| trial(n, f).serial(FRESH_LANE)),
        );
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
        gang::write_report().map_err(|e| format!("{e:#}"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use harness::inotify::Instances;

    #[test]
    fn the_default_inotify_limit_is_named_as_what_the_suite_lacks() {
        let low = inotify_lacks(Some(Instances {
            limit: 128,
            in_use: 0,
        }))
        .expect("128 is too few");
        assert!(
            low.contains("is 128") && low.contains("max_user_instances=512"),
            "{low}"
        );
        let raised = Instances {
            limit: 512,
            in_use: 300,
        };
        assert_eq!(inotify_lacks(Some(raised)), None);
        assert_eq!(inotify_lacks(None), None, "unknown is not a lack");
    }
}
