//! `harness measure --provider kind` on a fresh kind cluster of its own
//! (the baseline profile): a command that creates a Job of a real
//! container, measured as on the local provider — its requests under the
//! workload's ServiceAccount, the Job controller's pod and the scheduler's
//! binding, a real kubelet's status writes under a name that carries no
//! cluster, CPU read through `docker exec` — and the cluster gone after.

use std::time::Duration;

use anyhow::{Result, ensure};
use harness::bench::measure::workload::{Variant, Workload};
use harness::bench::measure::{MeasureOptions, measure};
use harness::cluster::ClusterSpec;
use harness::cluster::kind::KindImages;
use harness::cluster::{KindChoice, Provider};
use harness::k8s::K8sRelease;

const WORKLOAD: &str = "system:serviceaccount:harness-measure:harness-workload (kubectl)";

pub fn measure_a_command_on_a_fresh_kind_cluster(minor: &'static str) -> Result<()> {
    let release = K8sRelease::parse(minor)?;
    let out = tempfile::tempdir()?;
    let image = harness::tools::kindnode::images::agnhost_name(release.version);
    let argv =
        format!("kubectl create job hello --image={image} -- /agnhost entrypoint-tester done");
    let prefix = crate::unique_name("t-kmeasure");
    let opts = MeasureOptions {
        name: "kind-job".into(),
        variants: vec![Variant {
            name: "job".into(),
            workload: Workload::Command(vec!["sh".into(), "-c".into(), argv]),
        }],
        repeat: 1,
        seed: Some(7),
        shard: None,
        spec: ClusterSpec::new("measure", minor),
        provider: Provider::Kind(KindChoice {
            profile: "baseline".into(),
            config: Some(crate::repo_root().join(format!("kind-configs/baseline-{minor}.yaml"))),
            images: KindImages::Auto,
            kwok: false,
            root: Some(crate::repo_root()),
        }),
        bins: Default::default(),
        cluster_prefix: prefix.clone(),
        out: out.path().to_path_buf(),
        timeout: Duration::from_secs(180),
        scrape: false,
        settle: true,
        allow_failed: false,
    };
    let r = crate::runtime()?.block_on(measure(&opts))?;
    let run = &r.runs[0];
    ensure!(run.exit_code == 0, "the command exited {}", run.exit_code);
    ensure!(
        run.settled
            .iter()
            .any(|s| s.starts_with("Job default/hello Complete")),
        "the window closed before the Job completed: {:?}",
        run.settled
    );
    let m = &r.figures.modes["job"].result;
    let by = &m.window.api_requests_by_client_request;
    let n = |client: &str, req: &str| by.get(client).and_then(|m| m.get(req)).copied();
    ensure!(
        n(WORKLOAD, "create jobs") == Some(1),
        "the workload's requests: {:?}",
        by.get(WORKLOAD)
    );
    ensure!(
        n(
            "system:serviceaccount:kube-system:job-controller (kube-controller-manager)",
            "create pods"
        ) == Some(1),
        "the Job controller's pod: {:?}",
        by.keys().collect::<Vec<_>>()
    );
    let kubelet = by
        .keys()
        .find(|c| c.starts_with("system:node:<kind>-"))
        .cloned();
    ensure!(
        kubelet.is_some(),
        "no kubelet named without its cluster among {:?}",
        by.keys().collect::<Vec<_>>()
    );
    ensure!(m.pods_created == 1, "pods created {}", m.pods_created);
    let api = m.window.resources.get("kube-apiserver");
    ensure!(
        api.is_some_and(|u| u.cpu_s > 0.0),
        "kube-apiserver's CPU in the node container: {api:?}"
    );
    ensure!(
        r.figures.provider == "kind",
        "provider {}",
        r.figures.provider
    );
    let left: Vec<String> = harness::cluster::state::list_clusters()?
        .into_iter()
        .filter(|c| c.starts_with(&prefix))
        .collect();
    ensure!(left.is_empty(), "clusters left: {left:?}");
    Ok(())
}
