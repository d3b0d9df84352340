//! The existing provider's `Cluster`: reached through a kubeconfig, never
//! started, stopped or reconfigured by the harness.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result};
use k8s_openapi::api::authentication::v1::SelfSubjectReview;
use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, ListParams, PostParams};

use crate::cluster::existing::labels::{KWOK_NODE_ANNOTATION, RUN_ID_LABEL};

pub use crate::cluster::client::client_for;
use crate::cluster::client::{client_get, ok_body};
use crate::cluster::existing::apf::{self, Attribution, Identity};
use crate::cluster::pool::NodePool;
use crate::cluster::provider::Cluster;
use crate::cluster::spec::{ComponentHealth, NodeSpec};
use crate::error::{bad_input, env_missing};

pub const PROVIDER: &str = "existing";

/// What the user tells the harness about a cluster it did not start.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExistingOptions {
    pub kubeconfig: PathBuf,
    /// The kubeconfig's context to use (its current one when None).
    pub context: Option<String>,
    /// The API server's audit log (JSON lines), readable from here.
    pub audit_log: Option<PathBuf>,
    /// etcd's Prometheus endpoint, e.g. https://10.0.0.5:2381/metrics.
    pub etcd_metrics_url: Option<String>,
    /// Client certificate and key for etcd's endpoint (PEM files).
    pub etcd_cert: Option<(PathBuf, PathBuf)>,
    /// CA bundle that signed etcd's serving certificate (PEM).
    pub etcd_ca: Option<PathBuf>,
    /// Where requests per client come from.
    pub attribution: Attribution,
    /// Identities followed by APF besides the run's own and the standard
    /// controllers (`--apf-identity`).
    pub apf_identities: Vec<Identity>,
}

impl ExistingOptions {
    /// Remove everything carrying `run_id` from this cluster (waiting up
    /// to 5 minutes for the namespaces to go).
    pub async fn remove_run(&self, run_id: &str) -> Result<()> {
        let client = client_for(&self.kubeconfig, self.context.as_deref()).await?;
        crate::cluster::existing::site::remove_run(&client, run_id, Duration::from_secs(300)).await
    }
}

/// A cluster reached through a kubeconfig.
pub struct ExistingCluster {
    pub opts: ExistingOptions,
    name: String,
    /// Who the kubeconfig's credentials are (SelfSubjectReview).
    pub user: String,
    /// The groups the server gives them.
    pub groups: Vec<String>,
    /// What the run's objects on this cluster carry (labels::RUN_ID_LABEL).
    pub run_id: String,
    client: kube::Client,
}

impl std::fmt::Debug for ExistingCluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExistingCluster")
            .field("name", &self.name)
            .field("user", &self.user)
            .field("opts", &self.opts)
            .finish_non_exhaustive()
    }
}

impl ExistingCluster {
    /// The cluster's node names: real ones, and kwok's (annotated
    /// kwok.x-k8s.io/node).
    pub async fn nodes_by_kind(&self) -> Result<(Vec<String>, Vec<String>)> {
        let nodes: Api<Node> = Api::all(self.client.clone());
        let (kwok, real): (Vec<_>, Vec<_>) = nodes
            .list_metadata(&ListParams::default())
            .await
            .context("listing nodes")?
            .items
            .into_iter()
            .partition(|n| {
                n.metadata
                    .annotations
                    .as_ref()
                    .is_some_and(|a| a.contains_key(KWOK_NODE_ANNOTATION))
            });
        let names = |v: Vec<kube::core::PartialObjectMeta<Node>>| {
            v.into_iter().filter_map(|n| n.metadata.name).collect()
        };
        Ok((names(real), names(kwok)))
    }

    /// Reach the cluster and learn who the credentials are. An unreachable
    /// server or credentials it refuses are the environment's (exit 3).
    pub async fn attach(opts: ExistingOptions) -> Result<ExistingCluster> {
        let client = client_for(&opts.kubeconfig, opts.context.as_deref()).await?;
        let reviews: Api<SelfSubjectReview> = Api::all(client.clone());
        let review = reviews
            .create(&PostParams::default(), &SelfSubjectReview::default())
            .await
            .map_err(|e| {
                env_missing(
                    format!(
                        "the cluster of --kubeconfig {} does not answer who its credentials are (SelfSubjectReview): {e}",
                        opts.kubeconfig.display()
                    ),
                    "check the server is reachable from here and the credentials are valid (`kubectl auth whoami` with the same kubeconfig)",
                )
            })?;
        let info = review.status.and_then(|s| s.user_info).unwrap_or_default();
        let user = info.username.unwrap_or_default();
        let groups = info.groups.unwrap_or_default();
        let name = format!(
            "{PROVIDER}:{}",
            opts.context.clone().unwrap_or_else(|| "current".into())
        );
        Ok(ExistingCluster {
            opts,
            name,
            user,
            groups,
            run_id: crate::cluster::existing::site::new_run_id(),
            client,
        })
    }

    /// With `--attribution apf`, the FlowSchemas that follow the run's own
    /// identities `run`, the harness and the controllers (apf::followed),
    /// planned from the cluster's own and carrying the run id; None with
    /// any other attribution.
    pub async fn apf_plan(&self, run: Vec<Identity>) -> Result<Option<apf::Plan>> {
        if self.opts.attribution != Attribution::Apf {
            return Ok(None);
        }
        let ids = apf::followed(&self.user, &self.groups, run, &self.opts.apf_identities);
        let plan = apf::plan(
            &apf::list(&self.client).await?,
            &ids,
            &self.harness_users(),
            &self.run_id,
        )?;
        Ok(Some(plan))
    }

    async fn etcd_get(&self, url: &str) -> Result<String> {
        let mut b = reqwest::Client::builder()
            .no_proxy()
            .timeout(Duration::from_secs(10));
        if let Some(ca) = &self.opts.etcd_ca {
            let pem = crate::input::bytes_flag("--etcd-ca", ca)?;
            for cert in reqwest::Certificate::from_pem_bundle(&pem)
                .with_context(|| format!("--etcd-ca {}: not PEM", ca.display()))?
            {
                b = b.add_root_certificate(cert);
            }
        }
        if let Some((crt, key)) = &self.opts.etcd_cert {
            let mut pem = crate::input::bytes_flag("--etcd-cert", crt)?;
            pem.extend(crate::input::bytes_flag("--etcd-key", key)?);
            b = b.identity(
                reqwest::Identity::from_pem(&pem).context("--etcd-cert/--etcd-key: not PEM")?,
            );
        }
        let resp = b
            .build()?
            .get(url)
            .send()
            .await
            .with_context(|| format!("GET {url}"))?;
        ok_body(resp, url).await
    }
}

impl Cluster for ExistingCluster {
    fn name(&self) -> &str {
        &self.name
    }

    fn kubeconfig(&self) -> &Path {
        &self.opts.kubeconfig
    }

    async fn client(&self) -> Result<kube::Client> {
        Ok(self.client.clone())
    }

    async fn etcd_metrics(&self) -> Result<String> {
        match &self.opts.etcd_metrics_url {
            Some(url) => self.etcd_get(url).await,
            None => Err(env_missing(
                "etcd's metrics: no --etcd-metrics-url given",
                "pass --etcd-metrics-url (and --etcd-cert/--etcd-key/--etcd-ca if it needs TLS)",
            )),
        }
    }

    fn measures_etcd(&self) -> bool {
        self.opts.etcd_metrics_url.is_some()
    }

    fn harness_users(&self) -> Vec<String> {
        vec![self.user.clone()]
    }

    fn audit_log(&self) -> Option<PathBuf> {
        self.opts.audit_log.clone()
    }

    async fn set_capacity(&self, _nodes: &NodeSpec) -> Result<()> {
        Err(bad_input(format!(
            "cluster {}: the harness does not change the nodes of a cluster it did not start",
            self.name
        )))
    }

    fn run_labels(&self) -> BTreeMap<String, String> {
        BTreeMap::from([
            (RUN_ID_LABEL.to_string(), self.run_id.clone()),
            (
                "app.kubernetes.io/managed-by".to_string(),
                "harness".to_string(),
            ),
        ])
    }

    /// Fake nodes, where kwok manages nodes on this cluster (some node
    /// carries its annotation): created by the harness, labelled with
    /// the run id, and run by the cluster's kwok. Real nodes are never
    /// added.
    async fn add_pool(&self, pool: &NodePool) -> Result<Vec<String>> {
        let (_, kwok) = self.nodes_by_kind().await?;
        if kwok.is_empty() {
            return Err(env_missing(
                format!(
                    "cluster {}: no kwok fake nodes, so the harness cannot add the {} pool nodes this workload asks for",
                    self.name, pool.count
                ),
                "run kwok against the cluster (nodes annotated kwok.x-k8s.io/node), or use the local provider",
            ));
        }
        let mut pool = pool.clone();
        pool.labels.extend(self.run_labels());
        crate::cluster::local::nodes::add_pool(self.client.clone(), &pool, || Ok(())).await
    }

    async fn remove_nodes(&self, names: &[String]) -> Result<()> {
        crate::cluster::local::nodes::remove(self.client.clone(), names).await
    }

    async fn health(&self) -> Vec<ComponentHealth> {
        let (healthy, health) = match client_get(&self.client, "/readyz").await {
            Ok(body) => (body.trim() == "ok", body.trim().to_string()),
            Err(e) => (false, format!("{e:#}")),
        };
        vec![ComponentHealth {
            component: "kube-apiserver".into(),
            pid: None,
            running: healthy,
            health,
            healthy,
        }]
    }

    fn down(self, _keep: bool) -> Result<()> {
        Err(refuse_down(&self.name))
    }
}

/// `down` of a cluster the harness did not start: refused (exit 2).
pub fn refuse_down(name: &str) -> anyhow::Error {
    bad_input(format!(
        "{name}: the harness never stops a cluster it did not start (it removes only what carries its run id, when its run ends)"
    ))
}
