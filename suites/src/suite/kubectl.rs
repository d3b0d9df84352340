//! The cost model of one forked kubectl (`harness::workload::thor::kubectl`)
//! checked against a live 1.37 server: for HPCC's kubectl 1.29.7 without a
//! writable cache, the cluster's own kubectl cold and warm, and HPCC's
//! kubectl with a warm cache (what a writable HOME would save), each call
//! kind HPCC makes is run as the `thor-agent` identity and its audit events
//! are counted (by identity and user agent, deduplicated by auditID) and
//! compared with what the model predicts from the server's discovery.
//! Prints the measured table at the end.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use crate::builds::default_cluster_and;
use crate::runner::{Suite, Test};
use crate::{Fixture, trial_result};
use anyhow::{Context, Result, bail, ensure};
use harness::cluster::Cluster;
use harness::k8s::K8sRelease;
use harness::tools::{Component, Resolver};
use harness::workload::thor::discovery::{Discovery, DiscoveryCache};
use harness::workload::thor::driver::calls::{CallLog, Kubectl, Who};
use harness::workload::thor::kubectl::{Call, KubectlModel, Part};
use harness::workload::thor::{self, Mode, THOR_AGENT_USER, ThorParams};
use kube::api::{Api, DynamicObject, PostParams};
use libtest_mimic::Arguments;
use serde_json::{Value, json};

const NS: &str = "kubectl-calls";

struct Setup {
    fx: Fixture,
    discovery: Discovery,
    /// kubectl version → binary.
    bins: BTreeMap<String, PathBuf>,
    cache_root: tempfile::TempDir,
}

static SETUP: OnceLock<std::result::Result<Setup, String>> = OnceLock::new();
static ROWS: Mutex<Vec<Row>> = Mutex::new(Vec::new());

struct Row {
    call: &'static str,
    kubectl: String,
    cache: &'static str,
    /// (discovery, openapi, own) measured.
    measured: (u32, u32, u32),
    predicted: (u32, u32, u32),
}

fn setup() -> std::result::Result<&'static Setup, String> {
    SETUP
        .get_or_init(|| start().map_err(|e| format!("{e:#}")))
        .as_ref()
        .map_err(Clone::clone)
}

fn start() -> Result<Setup> {
    let k8s = K8sRelease::default_release();
    let resolver = Resolver::from_env(k8s, Default::default());
    let mut bins = BTreeMap::new();
    for c in [Component::HpccKubectl, Component::Kubectl] {
        let r = resolver.resolve(c)?;
        bins.insert(r.version.clone(), r.path);
    }
    let fx = Fixture::start(crate::test_spec(&crate::unique_name("t-kubectl")))?;
    let discovery = fx.rt.block_on(async {
        let admin = crate::namespace(&fx.cluster, NS).await?;
        let params = ThorParams {
            thor_name: "thor".into(),
            job_name: "thor-kubectl-1".into(),
            num_workers: 1,
            num_workers_per_pod: 1,
            job_version: "10.8.0".into(),
            pod_runtime: "1s".into(),
            namespace: NS.into(),
            dns_hostnames: false,
        };
        let mut rbac = Vec::new();
        for mode in [Mode::Baseline, Mode::Jobset] {
            rbac.extend(thor::render(&thor::rbac(mode), &params)?);
        }
        harness::install::apply::apply_all(&admin, &rbac)
            .await
            .context("applying the Thor agent's RBAC")?;
        Discovery::read(&admin).await
    })?;
    Ok(Setup {
        fx,
        discovery,
        bins,
        cache_root: tempfile::tempdir()?,
    })
}

fn job(name: &str) -> Value {
    json!({
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": name, "namespace": NS},
        "spec": {"suspend": true, "template": {"spec": {
            "restartPolicy": "Never",
            "containers": [{"name": "c", "image": "registry.invalid/thor:none"}]
        }}}
    })
}

fn jobset(name: &str) -> Value {
    json!({
        "apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
        "metadata": {"name": name, "namespace": NS},
        "spec": {"suspend": true, "replicatedJobs": [{"name": "manager", "replicas": 1,
            "template": {"spec": {"template": {"spec": {
                "restartPolicy": "Never",
                "containers": [{"name": "c", "image": "registry.invalid/thor:none"}]
            }}}}}]}
    })
}

/// Create `doc` as the harness (admin), not as the identity measured.
async fn create(s: &Setup, doc: Value) -> Result<()> {
    let admin = s.fx.cluster.client().await?;
    let obj: DynamicObject = serde_json::from_value(doc)?;
    let (group, version) = match obj.types.as_ref().map(|t| t.api_version.as_str()) {
        Some("batch/v1") => ("batch", "v1"),
        _ => ("jobset.x-k8s.io", "v1alpha2"),
    };
    let kind = obj
        .types
        .as_ref()
        .map(|t| t.kind.clone())
        .unwrap_or_default();
    let gvk = kube::api::GroupVersionKind::gvk(group, version, &kind);
    let ar = kube::api::ApiResource::from_gvk(&gvk);
    let api: Api<DynamicObject> = Api::namespaced_with(admin, NS, &ar);
    api.create(&PostParams::default(), &obj)
        .await
        .with_context(|| format!("creating {kind} {:?}", obj.metadata.name))?;
    Ok(())
}

/// The call of `kind` for configuration `tag`, with its stdin, after
/// creating what it needs; `prime` names the twin call that warms a cache.
async fn prepare(s: &Setup, kind: &str, tag: &str, prime: bool) -> Result<(Call, Option<Value>)> {
    let p = if prime { "p" } else { "m" };
    Ok(match kind {
        "replace" => (Call::Replace, Some(job(&format!("r{p}-{tag}")))),
        "replace-jobset" => (Call::Replace, Some(jobset(&format!("q{p}-{tag}")))),
        "get-job" => {
            let name = format!("g{p}-{tag}");
            create(s, job(&name)).await?;
            let jsonpath = "{.status.active}".into();
            (Call::GetJob { name, jsonpath }, None)
        }
        "list-pods" => {
            let selector = format!("job-name=g{p}-{tag}");
            let jsonpath = "{.items[*].spec.nodeName}".into();
            (Call::ListPods { selector, jsonpath }, None)
        }
        "delete" => {
            let name = format!("d{p}-{tag}");
            create(s, job(&name)).await?;
            (
                Call::Delete {
                    resource: "job".into(),
                    name,
                },
                None,
            )
        }
        "delete-jobset" => {
            let name = format!("e{p}-{tag}");
            create(s, jobset(&name)).await?;
            let resource = "jobsets.jobset.x-k8s.io".into();
            (Call::Delete { resource, name }, None)
        }
        "get-jobset" => {
            let name = format!("s{p}-{tag}");
            create(s, jobset(&name)).await?;
            let jsonpath = "{.status.conditions}".into();
            (Call::GetJobSet { name, jsonpath }, None)
        }
        other => bail!("no call kind {other}"),
    })
}

/// Run one call as the Thor agent, through the drivers' own runner
/// (`driver::calls::Kubectl`); it must succeed.
async fn run(s: &Setup, model: &KubectlModel, call: &Call, input: Option<&Value>) -> Result<()> {
    let kubectl = Kubectl {
        who: Who::ThorAgent,
        model: model.clone(),
        binary: s.bins[model.version()].clone(),
        kubeconfig: s.fx.cluster.kubeconfig_of(THOR_AGENT_USER),
        cache_root: s.cache_root.path().join(model.version()),
        namespace: NS.to_string(),
        count_requests: false,
    };
    let text = input.map(serde_json::to_string).transpose()?;
    kubectl
        .call(&CallLog::default(), call.clone(), &[], text.as_deref())
        .await
        .with_context(|| format!("kubectl {}", model.version()))?;
    Ok(())
}

/// Complete audit events (raw JSON) from byte `offset` of the log, and
/// the offset after them. Raw, because the request URI is what tells
/// discovery from OpenAPI from the object's own requests.
fn audit_since(log: &std::path::Path, offset: u64) -> Result<(Vec<Value>, u64)> {
    use std::io::{BufRead, Seek};
    let mut f = std::fs::File::open(log).with_context(|| format!("opening {}", log.display()))?;
    f.seek(std::io::SeekFrom::Start(offset))?;
    let (mut out, mut at) = (Vec::new(), offset);
    for line in std::io::BufReader::new(f).split(b'\n') {
        let line = line?;
        let Ok(event) = serde_json::from_slice::<Value>(&line) else {
            break; // a line still being written
        };
        at += line.len() as u64 + 1;
        out.push(event);
    }
    Ok((out, at))
}

/// The request URIs of this kubectl's calls since `offset`, by auditID, once
/// the log has been quiet for half a second (the last event of a request
/// can land after kubectl exited).
async fn events_since(s: &Setup, offset: u64, version: &str) -> Result<BTreeMap<String, String>> {
    let agent = format!("kubectl/v{version} ");
    let log = s.fx.cluster.layout.audit_log();
    let mut seen = BTreeMap::new();
    let (mut at, mut quiet_since) = (offset, Instant::now());
    let deadline = Instant::now() + Duration::from_secs(15);
    while quiet_since.elapsed() < Duration::from_millis(500) {
        ensure!(Instant::now() < deadline, "the audit log did not settle");
        tokio::time::sleep(Duration::from_millis(100)).await;
        let (events, next) = audit_since(&log, at)?;
        at = next;
        for e in events {
            let user = e["user"]["username"].as_str().unwrap_or_default();
            let ua = e["userAgent"].as_str().unwrap_or_default();
            if user == THOR_AGENT_USER && ua.starts_with(&agent) {
                let id = e["auditID"].as_str().unwrap_or_default().to_string();
                let uri = format!(
                    "{} {}",
                    e["verb"].as_str().unwrap_or_default(),
                    e["requestURI"].as_str().unwrap_or_default()
                );
                if seen.insert(id, uri).is_none() {
                    quiet_since = Instant::now();
                }
            }
        }
    }
    Ok(seen)
}

fn count(events: &BTreeMap<String, String>) -> (u32, u32, u32) {
    let uri = |e: &String| {
        e.split_once(' ')
            .map_or(String::new(), |(_, u)| u.to_string())
    };
    let n = |part| {
        events
            .values()
            .filter(|e| Part::of(&uri(e)) == part)
            .count() as u32
    };
    (n(Part::Discovery), n(Part::OpenApi), n(Part::Own))
}

fn measure(s: &Setup, version: &str, cache: DiscoveryCache, kind: &'static str) -> Result<()> {
    let model = KubectlModel::new(version, cache)?;
    let tag = format!("{}-{}", version.replace('.', ""), cache.name());
    let root = s.cache_root.path().join(version);
    s.fx.rt.block_on(async {
        if cache == DiscoveryCache::Warm {
            let (call, input) = prepare(s, kind, &tag, true).await?;
            run(s, &model, &call, input.as_ref()).await?;
            let discovery = model.cache_dir(&root).join("discovery");
            ensure!(
                discovery.is_dir(),
                "priming left no {}",
                discovery.display()
            );
        }
        let (call, input) = prepare(s, kind, &tag, false).await?;
        let offset = s.fx.cluster.audit_end()?;
        run(s, &model, &call, input.as_ref()).await?;
        let events = events_since(s, offset, version).await?;
        let measured = count(&events);
        let expected = model.expected_requests(&call, NS, &s.discovery);
        if let Ok(mut rows) = ROWS.lock() {
            rows.push(Row {
                call: kind,
                kubectl: version.into(),
                cache: cache.name(),
                measured,
                predicted: expected.split(),
            });
        }
        if cache == DiscoveryCache::None {
            // kubectl honoured KUBECACHEDIR: nothing fell back to $HOME/.kube/cache.
            let home: Vec<_> = std::fs::read_dir(root.join("home"))?.collect();
            ensure!(home.is_empty(), "kubectl wrote into HOME: {home:?}");
        }
        ensure!(
            measured == expected.split(),
            "kubectl {version} {} {kind}: measured (discovery, openapi, own) {measured:?}, \
             model {:?}\n  requests: {:?}\n  model: {:#?}",
            cache.name(),
            expected.split(),
            events.values().collect::<Vec<_>>(),
            expected.terms
        );
        Ok(())
    })
}

fn print_table(d: &Discovery) {
    let Ok(mut rows) = ROWS.lock() else { return };
    rows.sort_by(|a, b| (a.call, &a.kubectl, a.cache).cmp(&(b.call, &b.kubectl, b.cache)));
    println!(
        "\nkubectl calls against this server ({} group-versions at /api + /apis, aggregated {:?}), \
         as {THOR_AGENT_USER} in namespace {NS}:",
        d.legacy_group_versions(),
        d.aggregated
    );
    println!("| call | kubectl | cache | total | discovery | openapi | own | model |");
    println!("|---|---|---|---:|---:|---:|---:|---|");
    for r in rows.iter() {
        let (d, o, own) = r.measured;
        let verdict = if r.measured == r.predicted {
            "=".to_string()
        } else {
            format!("{:?}", r.predicted)
        };
        println!(
            "| {} | {} | {} | {} | {d} | {o} | {own} | {verdict} |",
            r.call,
            r.kubectl,
            r.cache,
            d + o + own
        );
    }
}

/// The kubectl per-call suite, on a cluster of its own.
pub fn suite(_: &Arguments) -> Suite {
    let hpcc = harness::tools::versions::HPCC_KUBECTL_VERSION;
    let own = K8sRelease::default_release().version;
    // HPCC's case, the cluster's own kubectl cold and warm, and what a
    // writable cache would do for HPCC's kubectl.
    let configs = [
        (hpcc, DiscoveryCache::None),
        (own, DiscoveryCache::None),
        (own, DiscoveryCache::Warm),
        (hpcc, DiscoveryCache::Warm),
    ];
    let mut tests = Vec::new();
    let kinds = [
        "replace",
        "replace-jobset",
        "get-job",
        "list-pods",
        "delete",
        "get-jobset",
        "delete-jobset",
    ];
    for kind in kinds {
        for (version, cache) in configs {
            let name = format!("{kind}::kubectl-{version}::{}", cache.name());
            // One call at a time: their audit events are told apart by
            // user and user agent only.
            tests.push(
                Test::new(name, move || {
                    let s = setup()?;
                    trial_result(measure(s, version, cache, kind))
                })
                .serial("kubectl")
                .needs(default_cluster_and(&[Component::HpccKubectl])),
            );
        }
    }
    Suite::new("kubectl", tests).after(|| {
        if let Some(Ok(s)) = SETUP.get() {
            print_table(&s.discovery);
            s.fx.stop()
                .map_err(|e| format!("tearing down the kubectl suite's cluster: {e:#}"))?;
        }
        Ok(())
    })
}
