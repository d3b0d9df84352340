//! How processes end on the cluster's nodes (the mechanism; when they
//! end is driver::kubelet's):
//! - on kwok's nodes (`Exits::Kwok`) nothing runs: a pod's end is a status
//!   PATCH to Succeeded or Failed made with the fake kubelets' own
//!   identity (kwok's), so the cluster's totals count it as kubelet
//!   traffic, as a real node's would be;
//! - on real nodes (`Exits::Real`) the containers run agnhost's netexec
//!   (workload::thor::realpods): each container is told to exit with
//!   HPCC's exit code, and the real kubelet reports what it sees.

use std::time::Duration;

use anyhow::{Context, Result, bail};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams, Patch, PatchParams};
use serde_json::json;

use crate::poll::Poll;
use crate::workload::thor::realpods::{ExitPort, exit_ports};

/// Pods listed per page: an instance of 1024 workers is not held in
/// memory whole, however many instances end at once.
const PAGE: u32 = 200;
/// How long a container that runs may take to answer (netexec starts
/// listening a moment after its process starts).
const ANSWER: Duration = Duration::from_secs(10);

/// How processes end on the cluster's nodes.
#[derive(Clone)]
pub enum Exits {
    /// kwok's fake nodes: a client with their identity patches pod status.
    Kwok(kube::Client),
    /// Real nodes: containers are told to exit.
    Real(RealExits),
}

/// How the driver reaches a real pod's containers.
#[derive(Clone)]
pub enum Reach {
    /// Straight to the pod's IP with this HTTP client (the harness's
    /// machine is on the pod network: its own real node).
    PodIp(reqwest::Client),
    /// Through the API server's pod proxy (`pods/proxy`), where the pod
    /// network is out of reach: the harness's own requests, which the
    /// report counts under the harness's identity.
    ApiProxy,
}

/// Real nodes' exits: the harness's client (lists pods, proxies) and the
/// way to the containers.
#[derive(Clone)]
pub struct RealExits {
    pub admin: kube::Client,
    pub reach: Reach,
}

/// The running pods matching a selector, a page at a time; pods being
/// deleted are left out (their containers get SIGTERM from the kubelet).
struct RunningPods<'a> {
    pods: &'a Api<Pod>,
    sel: &'a str,
    /// The continue token of the next page; None once the last was read.
    next: Option<String>,
    started: bool,
}

impl<'a> RunningPods<'a> {
    fn new(pods: &'a Api<Pod>, sel: &'a str) -> Self {
        RunningPods {
            pods,
            sel,
            next: None,
            started: false,
        }
    }

    async fn page(&mut self) -> Result<Option<Vec<Pod>>> {
        if self.started && self.next.is_none() {
            return Ok(None);
        }
        self.started = true;
        let mut lp = ListParams::default()
            .labels(self.sel)
            .fields("status.phase=Running")
            .limit(PAGE);
        if let Some(token) = &self.next {
            lp = lp.continue_token(token);
        }
        let page = self
            .pods
            .list(&lp)
            .await
            .with_context(|| format!("listing pods {}", self.sel))?;
        self.next = page.metadata.continue_.filter(|t| !t.is_empty());
        Ok(Some(
            page.items
                .into_iter()
                .filter(|p| p.metadata.deletion_timestamp.is_none())
                .collect(),
        ))
    }
}

/// Report every running pod matching `sel` ended in `phase` (Succeeded or
/// Failed), as `kubelet` (a client with the fake kubelets' identity).
async fn patch_phase(kubelet: &kube::Client, ns: &str, sel: &str, phase: &str) -> Result<()> {
    let pods: Api<Pod> = Api::namespaced(kubelet.clone(), ns);
    let patch = json!({"status": {"phase": phase}});
    let mut running = RunningPods::new(&pods, sel);
    while let Some(page) = running.page().await? {
        for p in page {
            let name = p.metadata.name.unwrap_or_default();
            match pods
                .patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
            {
                Ok(_) => {}
                // Deleted meanwhile (the worker Job went first): nothing to end.
                Err(kube::Error::Api(e)) if e.code == 404 || e.code == 409 => {}
                Err(e) => return Err(e).with_context(|| format!("ending pod {name}")),
            }
        }
    }
    Ok(())
}

/// Which containers of a real pod to tell.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Which {
    Main,
    Sidecar,
}

impl RealExits {
    /// Tell the running `which` containers of every running pod matching
    /// `sel` to exit with `code`.
    async fn tell(&self, ns: &str, sel: &str, which: Which, code: u8) -> Result<()> {
        let pods: Api<Pod> = Api::namespaced(self.admin.clone(), ns);
        let mut running = RunningPods::new(&pods, sel);
        while let Some(page) = running.page().await? {
            for p in page {
                let name = p.metadata.name.clone().unwrap_or_default();
                let ip = p.status.as_ref().and_then(|s| s.pod_ip.clone());
                let targets = exit_ports(&p)
                    .into_iter()
                    .filter(|c| c.running && c.sidecar == (which == Which::Sidecar));
                for c in targets {
                    self.exit(ns, &name, ip.as_deref(), &c, code).await?;
                }
            }
        }
        Ok(())
    }

    /// Tell one container to exit; a container that refuses the
    /// connection is asked again until `ANSWER` runs out.
    async fn exit(
        &self,
        ns: &str,
        pod: &str,
        ip: Option<&str>,
        c: &ExitPort,
        code: u8,
    ) -> Result<()> {
        let what = format!(
            "container {} of pod {ns}/{pod} (port {})",
            c.container, c.port
        );
        Poll::new(format!("{what} told to exit"), ANSWER)
            .every(Duration::from_millis(200))
            .until_state(|| async {
                match &self.reach {
                    Reach::PodIp(http) => {
                        let Some(ip) = ip else {
                            bail!("pod {ns}/{pod} runs without an IP");
                        };
                        let url = format!("http://{ip}:{}/exit?code={code}", c.port);
                        match http.get(&url).send().await {
                            Ok(_) => Ok(Ok(())),
                            Err(e) if e.is_connect() => Ok(Err(format!("{url}: {e}"))),
                            // The process exits before it answers: the
                            // connection closes under the request.
                            Err(_) => Ok(Ok(())),
                        }
                    }
                    Reach::ApiProxy => {
                        let path = format!(
                            "/api/v1/namespaces/{ns}/pods/{pod}:{}/proxy/exit?code={code}",
                            c.port
                        );
                        let req = http::Request::get(&path).body(Vec::new())?;
                        match self.admin.request_text(req).await {
                            Ok(_) => Ok(Ok(())),
                            Err(kube::Error::Api(e)) if e.code == 404 => Ok(Ok(())),
                            Err(kube::Error::Api(e))
                                if e.message.contains("connection refused") =>
                            {
                                Ok(Err(format!("{path}: {}", e.message)))
                            }
                            // The proxy's own error when the process exits
                            // before it answers (502/503 from the server).
                            Err(kube::Error::Api(e)) if e.code >= 500 => Ok(Ok(())),
                            Err(e) => Err(e).with_context(|| format!("GET {path}")),
                        }
                    }
                }
            })
            .await
    }
}

fn exit_code(ok: bool) -> u8 {
    if ok { 0 } else { 1 }
}

impl Exits {
    /// The main processes of the pods matching `sel` in `ns` exit now
    /// (`ok`: with code 0, else 1). On kwok's nodes nothing runs: nothing
    /// happens until `end`.
    pub async fn exit_mains(&self, ns: &str, sel: &str, ok: bool) -> Result<()> {
        match self {
            Exits::Kwok(_) => Ok(()),
            Exits::Real(r) => r.tell(ns, sel, Which::Main, exit_code(ok)).await,
        }
    }

    /// The pods matching `sel` in `ns` end now: their postrun sidecars
    /// exit (real nodes), or the fake kubelet reports them Succeeded
    /// (`ok`) or Failed.
    pub async fn end(&self, ns: &str, sel: &str, ok: bool) -> Result<()> {
        match self {
            Exits::Kwok(kubelet) => {
                let phase = if ok { "Succeeded" } else { "Failed" };
                patch_phase(kubelet, ns, sel, phase).await
            }
            Exits::Real(r) => r.tell(ns, sel, Which::Sidecar, 0).await,
        }
    }
}
