//! Running one gang case against a live cluster: its own namespace, its own
//! pool of fake nodes, the steps in order, every expectation polled until
//! it holds (or fails with a diff of expected vs observed fields).

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use k8s_openapi::api::core::v1::{Namespace, Node, Pod, Taint};
use kube::api::{Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use kube::discovery::{ApiCapabilities, Scope};
use serde::Serialize;
use serde_json::{Value, json};

use super::case::{Case, Check, Outcome, Pool, Profile, Step};
use super::matcher::{describe, lookup, matches, parse_path, scalar_text, subst_str, substitute};
use crate::cluster::NodeSpec;
use crate::cluster::local::kwok;
use crate::k8s::K8sRelease;

/// The label and taint key that reserve pool nodes for one trial.
pub const POOL_KEY: &str = "harness.gang/pool";
/// Field manager of everything the runner applies.
pub const FIELD_MANAGER: &str = "harness-gang";
/// How long a case's pods run unless their template says otherwise: longer
/// than any case, so they finish only when a step completes them.
pub const DEFAULT_POD_RUNTIME: &str = "3600s";
const DEFAULT_WITHIN: f64 = 30.0;

/// What one trial did and saw.
#[derive(Debug, Clone, Serialize)]
pub struct TrialReport {
    pub case: String,
    pub description: String,
    pub minor: String,
    pub k8s_version: String,
    pub profile: Profile,
    pub passed: bool,
    /// The first failure, with its diff.
    pub failure: Option<String>,
    /// The behaviour the case pins down for this minor.
    pub behaviour: String,
    /// Per step: what the server did.
    pub observations: Vec<String>,
    pub wall_s: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bench: Option<super::bench::BenchReport>,
}

/// A trial's context: client, namespace, variables, resolved kinds.
pub struct Trial {
    pub client: kube::Client,
    pub release: K8sRelease,
    pub ns: String,
    pub vars: BTreeMap<String, String>,
    pub observations: Vec<String>,
    kinds: HashMap<(String, String), Option<(ApiResource, ApiCapabilities)>>,
    pool_nodes: Vec<String>,
}

impl Trial {
    /// A namespace of its own (named `ns`) and the pool's variables.
    pub async fn start(client: kube::Client, release: K8sRelease, ns: &str) -> Result<Trial> {
        let namespaces: Api<Namespace> = Api::all(client.clone());
        let obj: Namespace = serde_json::from_value(json!({"metadata": {"name": ns}}))?;
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
            client,
            release,
            ns: ns.to_string(),
            vars,
            observations: Vec::new(),
            kinds: HashMap::new(),
            pool_nodes: Vec::new(),
        })
    }

    /// Pool nodes: fake nodes labelled and tainted for this trial only.
    pub async fn add_nodes(&mut self, pool: Pool) -> Result<()> {
        let nodes: Api<Node> = Api::all(self.client.clone());
        let spec = NodeSpec {
            count: pool.nodes as usize,
            cpu: "64".into(),
            memory: "256Gi".into(),
            pods: pool.pods,
        };
        let mut names = Vec::new();
        for _ in 0..pool.nodes {
            let i = self.pool_nodes.len();
            let mut node = kwok::node(i, &spec);
            let name = format!("{}-{i}", self.ns);
            node.metadata.name = Some(name.clone());
            let labels = node.metadata.labels.get_or_insert_default();
            // Not `type=kwok`: set_capacity owns those.
            labels.remove("type");
            labels.insert("kubernetes.io/hostname".into(), name.clone());
            labels.insert(POOL_KEY.into(), self.ns.clone());
            node.spec.get_or_insert_default().taints = Some(vec![Taint {
                key: POOL_KEY.into(),
                value: Some(self.ns.clone()),
                effect: "NoSchedule".into(),
                ..Default::default()
            }]);
            nodes
                .create(&PostParams::default(), &node)
                .await
                .with_context(|| format!("creating pool node {name}"))?;
            self.pool_nodes.push(name.clone());
            names.push(name);
        }
        // Schedulable once kwok reports them Ready.
        let deadline = Instant::now() + Duration::from_secs(60);
        for name in &names {
            loop {
                let n = nodes
                    .get(name)
                    .await
                    .with_context(|| format!("reading node {name}"))?;
                let ready = n
                    .status
                    .and_then(|s| s.conditions)
                    .unwrap_or_default()
                    .iter()
                    .any(|c| c.type_ == "Ready" && c.status == "True");
                if ready {
                    break;
                }
                if Instant::now() > deadline {
                    bail!("pool node {name} not Ready within 60 s (is kwok running?)");
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
        Ok(())
    }

    /// Delete the namespace, wait for its pods to go, delete the pool.
    pub async fn cleanup(&self) -> Result<()> {
        let namespaces: Api<Namespace> = Api::all(self.client.clone());
        namespaces
            .delete(&self.ns, &DeleteParams::background())
            .await
            .with_context(|| format!("deleting namespace {}", self.ns))?;
        let pods: Api<Pod> = Api::namespaced(self.client.clone(), &self.ns);
        let what = format!("pods of namespace {}", self.ns);
        wait_pods_gone(
            &pods,
            &ListParams::default(),
            Duration::from_secs(120),
            &what,
        )
        .await?;
        let nodes: Api<Node> = Api::all(self.client.clone());
        for n in &self.pool_nodes {
            nodes
                .delete(n, &DeleteParams::default())
                .await
                .with_context(|| format!("deleting pool node {n}"))?;
        }
        Ok(())
    }

    /// The API version a kind defaults to on this minor.
    fn default_api_version(&self, kind: &str) -> Option<String> {
        Some(match kind {
            "Workload" | "PodGroup" => self.release.gang_api_version().to_string(),
            "Job" => "batch/v1".into(),
            "Pod" | "Event" | "Node" | "Namespace" => "v1".into(),
            "JobSet" => format!(
                "{}/{}",
                crate::k8s::jobset::GROUP,
                crate::k8s::jobset::VERSION
            ),
            _ => return None,
        })
    }

    /// Resolve a kind through discovery; None when the server does not
    /// serve it.
    async fn resolve(
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

    async fn api(&mut self, api_version: Option<&str>, kind: &str) -> Result<Api<DynamicObject>> {
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
            Scope::Namespaced => Api::namespaced_with(self.client.clone(), &self.ns, &ar),
            Scope::Cluster => Api::all_with(self.client.clone(), &ar),
        })
    }

    /// Run every step of `case` that runs on this minor.
    pub async fn run_steps(&mut self, case: &Case) -> Result<()> {
        for (i, step) in case.steps.iter().enumerate() {
            if !step.runs_on(self.release.minor) {
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
        let minor = self.release.minor;
        let expected = step.result.as_ref().and_then(|r| r.get(minor)).cloned();
        let label = step.name.clone().unwrap_or_default();
        if let Some(v) = &step.apply {
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
                let api = self.api(obj["apiVersion"].as_str(), &kind).await?;
                let pp = PatchParams::apply(FIELD_MANAGER).validation_strict();
                let r = api.patch(&name, &pp, &Patch::Apply(&obj)).await.map(|_| ());
                let seen = outcome(expected.as_ref(), r, &format!("apply {kind} {name}"))?;
                self.observe(&label, seen);
            }
        }
        if let Some(p) = &step.patch {
            let name = subst_str(&p.name, &self.vars)?;
            let merge = substitute(&p.merge, &self.vars)?;
            let api = self.api(p.api_version.as_deref(), &p.kind).await?;
            let pp = PatchParams::default().validation_strict();
            let r = api
                .patch(&name, &pp, &Patch::Merge(&merge))
                .await
                .map(|_| ());
            let seen = outcome(
                expected.as_ref(),
                r,
                &format!("patch {} {name} {merge}", p.kind),
            )?;
            self.observe(&label, seen);
        }
        for (name, suspend) in [(&step.suspend, true), (&step.resume, false)] {
            if let Some(n) = name {
                let n = subst_str(n, &self.vars)?;
                let api = self.api(None, "Job").await?;
                let merge = json!({"spec": {"suspend": suspend}});
                let r = api
                    .patch(&n, &PatchParams::default(), &Patch::Merge(&merge))
                    .await
                    .map(|_| ());
                let what = if suspend { "suspend" } else { "resume" };
                let seen = outcome(expected.as_ref(), r, &format!("{what} Job {n}"))?;
                self.observe(&label, seen);
            }
        }
        if let Some(d) = &step.delete {
            let name = subst_str(&d.name, &self.vars)?;
            let api = self.api(d.api_version.as_deref(), &d.kind).await?;
            // What `kubectl delete` does: dependents go in the background
            // (the API's default for Jobs would orphan the pods).
            let r = api
                .delete(&name, &DeleteParams::background())
                .await
                .map(|_| ());
            let seen = outcome(expected.as_ref(), r, &format!("delete {} {name}", d.kind))?;
            self.observe(&label, seen);
        }
        if let Some(pool) = step.add_nodes {
            self.add_nodes(pool).await?;
            self.observe(
                &label,
                format!(
                    "added {} node(s) with room for {} pods each",
                    pool.nodes, pool.pods
                ),
            );
        }
        if let Some(job) = &step.complete {
            let job = subst_str(job, &self.vars)?;
            let n = complete_job_pods(&self.client, &self.ns, &job).await?;
            self.observe(
                &label,
                format!("{n} pod(s) of Job {job} reported Succeeded"),
            );
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

    fn observe(&mut self, label: &str, what: String) {
        self.observations.push(if label.is_empty() {
            what
        } else {
            format!("{label}: {what}")
        });
    }

    /// Poll a check until it holds (then for `hold` seconds more).
    async fn expect(&mut self, c: &Check) -> Result<String> {
        let within = Duration::from_secs_f64(c.within.unwrap_or(DEFAULT_WITHIN));
        let hold = Duration::from_secs_f64(c.hold.unwrap_or(0.0));
        let start = Instant::now();
        let mut held_since: Option<Instant> = None;
        loop {
            let ev = self.evaluate(c).await?;
            match (ev.ok, held_since) {
                (true, None) => held_since = Some(Instant::now()),
                (false, Some(since)) => bail!(
                    "held for {:.1} s of the required {:.1} s, then:\n{}",
                    since.elapsed().as_secs_f64(),
                    hold.as_secs_f64(),
                    ev.diff
                ),
                _ => {}
            }
            if let Some(since) = held_since
                && since.elapsed() >= hold
            {
                for (var, v) in ev.captures {
                    self.vars.insert(var, v);
                }
                return Ok(ev.summary);
            }
            if held_since.is_none() && start.elapsed() > within {
                bail!("not met within {:.0} s:\n{}", within.as_secs_f64(), ev.diff);
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    async fn evaluate(&mut self, c: &Check) -> Result<Eval> {
        let served = self
            .resolve(c.api_version.as_deref(), &c.kind)
            .await?
            .is_some();
        if c.served == Some(false) || !served {
            let want = c.served.unwrap_or(true);
            let av = c
                .api_version
                .clone()
                .or_else(|| self.default_api_version(&c.kind))
                .unwrap_or_default();
            return Ok(Eval {
                ok: served == want,
                summary: format!("{av} {} {}served", c.kind, if served { "" } else { "not " }),
                diff: format!(
                    "  {av} {}: expected {}served, observed {}served",
                    c.kind,
                    if want { "" } else { "not " },
                    if served { "" } else { "not " }
                ),
                captures: BTreeMap::new(),
            });
        }
        let api = self.api(c.api_version.as_deref(), &c.kind).await?;
        let objs: Vec<Value> = api
            .list(&ListParams::default())
            .await
            .with_context(|| format!("listing {}", c.kind))?
            .items
            .into_iter()
            .map(serde_json::to_value)
            .collect::<std::result::Result<_, _>>()?;
        judge(c, objs, &self.vars)
    }
}

/// Judge a check against the listed objects of its kind: which match, is
/// the count right, does every matched object have the fields (a diff of
/// expected vs observed when not), and what to capture.
pub fn judge(c: &Check, mut objs: Vec<Value>, vars: &BTreeMap<String, String>) -> Result<Eval> {
    objs.sort_by_key(|o| {
        o["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    });
    let name = c.name.as_ref().map(|n| subst_str(n, vars)).transpose()?;
    let mut filter = Vec::new();
    for (path, m) in &c.filter {
        filter.push((parse_path(path)?, substitute(m, vars)?));
    }
    let mut matched = Vec::new();
    for o in objs {
        if name
            .as_ref()
            .is_some_and(|n| o["metadata"]["name"].as_str() != Some(n))
        {
            continue;
        }
        let mut keep = true;
        for (p, m) in &filter {
            keep &= matches(m, lookup(&o, p))?;
        }
        if keep {
            matched.push(o);
        }
    }
    let mut diff = String::new();
    let n = matched.len() as u64;
    let count_ok = match &c.count {
        None => n >= 1,
        Some(Value::Number(x)) => Some(n) == x.as_u64(),
        Some(Value::Object(o)) => {
            o.get("$min").and_then(Value::as_u64).is_none_or(|m| n >= m)
                && o.get("$max").and_then(Value::as_u64).is_none_or(|m| n <= m)
        }
        Some(other) => bail!("bad count {other}"),
    };
    let what = match (&name, c.filter.is_empty()) {
        (Some(n), _) => format!("{} {n}", c.kind),
        (None, true) => format!("{} objects", c.kind),
        (None, false) => format!(
            "{} objects where {}",
            c.kind,
            c.filter
                .iter()
                .map(|(p, m)| format!("{p} {}", describe(m)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    if !count_ok {
        diff.push_str(&format!(
            "  count of {what}: expected {}, observed {n}{}\n",
            c.count
                .as_ref()
                .map(describe)
                .unwrap_or_else(|| "at least 1".into()),
            names_of(&matched)
        ));
    }
    let mut fields = Vec::new();
    for (path, m) in &c.fields {
        fields.push((path.as_str(), parse_path(path)?, substitute(m, vars)?));
    }
    for o in &matched {
        let mut lines = Vec::new();
        for (text, p, m) in &fields {
            let got = lookup(o, p);
            if !matches(m, got)? {
                lines.push(format!(
                    "    - {text}: expected {}, observed {}",
                    describe(m),
                    got.map(|g| g.to_string())
                        .unwrap_or_else(|| "(absent)".into())
                ));
            }
        }
        if !lines.is_empty() {
            diff.push_str(&format!(
                "  {} {}:\n{}\n",
                c.kind,
                o["metadata"]["name"].as_str().unwrap_or("?"),
                lines.join("\n")
            ));
        }
    }
    let mut captures = BTreeMap::new();
    if let Some(first) = matched.first() {
        for (var, path) in &c.capture {
            let v = lookup(first, &parse_path(path)?).ok_or_else(|| {
                anyhow!(
                    "capture {var}: {path} is absent on {}",
                    first["metadata"]["name"]
                )
            })?;
            captures.insert(var.clone(), scalar_text(v));
        }
    }
    let mut summary = format!("{what}: {n}{}", names_of(&matched));
    if !captures.is_empty() {
        summary.push_str(&format!(
            " [{}]",
            captures
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    Ok(Eval {
        ok: diff.is_empty(),
        summary,
        diff: diff.trim_end().to_string(),
        captures,
    })
}

pub struct Eval {
    pub ok: bool,
    pub summary: String,
    pub diff: String,
    pub captures: BTreeMap<String, String>,
}

fn names_of(objs: &[Value]) -> String {
    if objs.is_empty() {
        return String::new();
    }
    let names: Vec<&str> = objs
        .iter()
        .take(3)
        .filter_map(|o| o["metadata"]["name"].as_str())
        .collect();
    let more = if objs.len() > 3 {
        format!(", … {} more", objs.len() - 3)
    } else {
        String::new()
    };
    format!(" ({}{more})", names.join(", "))
}

/// Compare what the server did with the expected outcome; the observation
/// on a match, an error on a mismatch.
pub fn outcome(
    expected: Option<&Outcome>,
    got: std::result::Result<(), kube::Error>,
    what: &str,
) -> Result<String> {
    let expected = expected.cloned().unwrap_or(Outcome::Accepted);
    match (expected, got) {
        (Outcome::Accepted, Ok(())) => Ok(format!("{what}: accepted")),
        (Outcome::Accepted, Err(kube::Error::Api(s))) => bail!(
            "{what}: expected the server to accept it; it rejected it: {} {}: {}",
            s.code,
            s.reason,
            s.message
        ),
        (Outcome::Rejected(r), Ok(())) => bail!(
            "{what}: expected the server to reject it ({}); it accepted it",
            rejection_text(&r)
        ),
        (Outcome::Rejected(r), Err(kube::Error::Api(s))) => {
            let mut bad = Vec::new();
            if r.code.is_some_and(|c| c != s.code) {
                bad.push(format!(
                    "code: expected {}, observed {}",
                    r.code.unwrap_or_default(),
                    s.code
                ));
            }
            if r.reason.as_ref().is_some_and(|x| *x != s.reason) {
                bad.push(format!(
                    "reason: expected {:?}, observed {:?}",
                    r.reason.clone().unwrap_or_default(),
                    s.reason
                ));
            }
            if let Some(m) = &r.message
                && !matches(m, Some(&Value::String(s.message.clone())))?
            {
                bad.push(format!(
                    "message: expected {}, observed {:?}",
                    describe(m),
                    s.message
                ));
            }
            if bad.is_empty() {
                Ok(format!(
                    "{what}: rejected, {} {}: {}",
                    s.code, s.reason, s.message
                ))
            } else {
                bail!(
                    "{what}: rejected, but not as expected:\n  {}",
                    bad.join("\n  ")
                )
            }
        }
        // Not an answer of the API server (connection, TLS, decoding).
        (_, Err(e)) => Err(e).with_context(|| what.to_string()),
    }
}

fn rejection_text(r: &super::case::Rejection) -> String {
    let mut parts = Vec::new();
    if let Some(c) = r.code {
        parts.push(c.to_string());
    }
    if let Some(x) = &r.reason {
        parts.push(x.clone());
    }
    if let Some(m) = &r.message {
        parts.push(format!("message {}", describe(m)));
    }
    parts.join(" ")
}

/// Put a case's pods on its pool and keep them running until completed:
/// node selector, toleration and kwok's run-time annotations on every pod
/// template (Job, JobSet replicated Jobs) or bare Pod.
pub fn inject(obj: &mut Value, ns: &str) {
    let kind = obj["kind"].as_str().unwrap_or_default().to_string();
    let templates: Vec<&mut Value> = match kind.as_str() {
        "Pod" => vec![obj],
        "Job" => obj.pointer_mut("/spec/template").into_iter().collect(),
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
                for key in [kwok::POD_COMPLETE_DELAY, kwok::POD_COMPLETE_JITTER] {
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
    let deadline = Instant::now() + timeout;
    while !pods.list(&lp.clone().limit(1)).await?.items.is_empty() {
        if Instant::now() > deadline {
            bail!("{what} still there after {} s", timeout.as_secs());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Ok(())
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

/// Run a case's steps as one trial; never panics, always cleans up.
pub async fn run_case(
    client: kube::Client,
    release: K8sRelease,
    name: &str,
    case: &Case,
    ns: &str,
    sched: Option<&crate::cluster::local::LocalCluster>,
) -> TrialReport {
    let started = Instant::now();
    let mut report = TrialReport {
        case: name.to_string(),
        description: case.description.clone(),
        minor: release.minor.to_string(),
        k8s_version: release.version.to_string(),
        profile: case.profile,
        passed: false,
        failure: None,
        behaviour: case
            .behaviour
            .get(release.minor)
            .cloned()
            .unwrap_or_default(),
        observations: Vec::new(),
        wall_s: 0.0,
        bench: None,
    };
    let mut trial = match Trial::start(client, release, ns).await {
        Ok(t) => t,
        Err(e) => {
            report.failure = Some(format!("{e:#}"));
            return report;
        }
    };
    let body = async {
        trial.add_nodes(case.pool).await?;
        if let Some(b) = &case.benchmark {
            report.bench = Some(super::bench::run(&mut trial, b, sched).await?);
            Ok(())
        } else {
            trial.run_steps(case).await
        }
    }
    .await;
    let cleanup = trial.cleanup().await;
    report.observations = std::mem::take(&mut trial.observations);
    match (body, cleanup) {
        (Ok(()), Ok(())) => report.passed = true,
        (Err(e), _) => report.failure = Some(format!("{e:#}")),
        (Ok(()), Err(e)) => report.failure = Some(format!("cleaning up: {e:#}")),
    }
    report.wall_s = started.elapsed().as_secs_f64();
    report
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inject_reaches_every_pod_template() {
        let mut js = json!({"kind": "JobSet", "metadata": {"name": "t"}, "spec": {"replicatedJobs": [
            {"name": "a", "template": {"spec": {"template": {"spec": {"containers": []}}}}},
            {"name": "b", "template": {"spec": {"template": {"metadata": {"annotations": {
                kwok::POD_COMPLETE_DELAY: "5s"}}, "spec": {"nodeSelector": {"x": "y"}}}}}}]}});
        inject(&mut js, "t1");
        assert_eq!(js["metadata"]["namespace"], "t1");
        for i in 0..2 {
            let t = &js["spec"]["replicatedJobs"][i]["template"]["spec"]["template"];
            assert_eq!(t["spec"]["nodeSelector"][POOL_KEY], "t1");
            assert_eq!(t["spec"]["tolerations"][0]["value"], "t1");
        }
        let b = &js["spec"]["replicatedJobs"][1]["template"]["spec"]["template"];
        assert_eq!(
            b["metadata"]["annotations"][kwok::POD_COMPLETE_DELAY],
            "5s",
            "kept"
        );
        assert_eq!(
            b["metadata"]["annotations"][kwok::POD_COMPLETE_JITTER],
            DEFAULT_POD_RUNTIME
        );
        assert_eq!(b["spec"]["nodeSelector"]["x"], "y");
        let mut wl = json!({"kind": "Workload", "metadata": {"name": "w"}, "spec": {}});
        inject(&mut wl, "t1");
        assert_eq!(
            wl,
            json!({"kind": "Workload", "metadata": {"name": "w", "namespace": "t1"}, "spec": {}})
        );
    }

    fn check(yaml: &str) -> Check {
        serde_json::from_value(crate::yaml::parse(yaml).unwrap()[0].root.to_json()).unwrap()
    }

    fn pg(name: &str, min: u32, scheduled: &str) -> Value {
        json!({"metadata": {"name": name, "ownerReferences": [{"kind": "Job", "name": "train", "controller": true}]},
               "spec": {"schedulingPolicy": {"gang": {"minCount": min}}},
               "status": {"conditions": [{"type": "PodGroupScheduled", "status": scheduled}]}})
    }

    #[test]
    fn judge_matches_counts_and_captures() {
        let vars = BTreeMap::from([("job".to_string(), "train".to_string())]);
        let c = check(
            "kind: PodGroup\nwhere: {\"status.conditions[type=PodGroupScheduled].status\": \"True\"}\ncount: 1\nfields:\n  metadata.ownerReferences[kind=Job].name: ${job}\n  spec.schedulingPolicy.gang.minCount: 4\ncapture: {winner: metadata.name}\n",
        );
        let e = judge(&c, vec![pg("b", 4, "True"), pg("a", 4, "False")], &vars).unwrap();
        assert!(e.ok, "{}", e.diff);
        assert_eq!(e.captures["winner"], "b");
        assert!(e.summary.contains(": 1 (b)"), "{}", e.summary);
    }

    #[test]
    fn a_mismatch_is_a_diff_of_expected_and_observed_fields() {
        let c = check(
            "kind: PodGroup\nfields:\n  spec.schedulingPolicy.gang.minCount: 4\n  spec.workloadRef.workloadName: {$prefix: train-}\n",
        );
        let e = judge(
            &c,
            vec![pg("a", 3, "True"), pg("b", 4, "True")],
            &BTreeMap::new(),
        )
        .unwrap();
        assert!(!e.ok);
        assert!(
            e.diff.contains(
                "PodGroup a:\n    - spec.schedulingPolicy.gang.minCount: expected 4, observed 3"
            ),
            "{}",
            e.diff
        );
        assert!(
            e.diff.contains(
                "- spec.workloadRef.workloadName: expected $prefix \"train-\", observed (absent)"
            ),
            "{}",
            e.diff
        );
        assert!(e.diff.contains("PodGroup b:"), "b lacks workloadRef too");
        // Count mismatches name what was found.
        let c = check("kind: PodGroup\ncount: 0\n");
        let e = judge(&c, vec![pg("a", 3, "True")], &BTreeMap::new()).unwrap();
        assert!(!e.ok);
        assert!(
            e.diff
                .contains("count of PodGroup objects: expected 0, observed 1 (a)"),
            "{}",
            e.diff
        );
        // Default: at least one.
        let c = check("kind: Workload\n");
        assert!(!judge(&c, vec![], &BTreeMap::new()).unwrap().ok);
    }

    fn api_err(code: u16, reason: &str, message: &str) -> kube::Error {
        kube::Error::Api(Box::new(kube::core::Status {
            code,
            reason: reason.into(),
            message: message.into(),
            ..Default::default()
        }))
    }

    #[test]
    fn outcomes_compare_code_reason_and_message() {
        let rej = Outcome::Rejected(super::super::case::Rejection {
            code: Some(403),
            reason: Some("Forbidden".into()),
            message: Some(json!({"$contains": "cannot change parallelism"})),
        });
        let seen = outcome(
            Some(&rej),
            Err(api_err(
                403,
                "Forbidden",
                "x: cannot change parallelism for y",
            )),
            "patch",
        )
        .unwrap();
        assert!(seen.contains("rejected, 403 Forbidden"), "{seen}");
        let e = outcome(Some(&rej), Ok(()), "patch")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("expected the server to reject") && e.contains("403 Forbidden"),
            "{e}"
        );
        let e = outcome(
            Some(&rej),
            Err(api_err(422, "Invalid", "minCount")),
            "patch",
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("code: expected 403, observed 422")
                && e.contains("reason")
                && e.contains("message"),
            "{e}"
        );
        let e = outcome(None, Err(api_err(422, "Invalid", "nope")), "apply")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("expected the server to accept it") && e.contains("nope"),
            "{e}"
        );
        assert_eq!(outcome(None, Ok(()), "apply").unwrap(), "apply: accepted");
    }
}
