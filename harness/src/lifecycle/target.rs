//! Where a run set's runs go, from its provider (one value,
//! `cluster::Provider`): a fresh cluster per run on the local provider
//! and on kind — down after a run that went well, kept with its state and
//! logs after one that did not — or the existing cluster the set attached
//! to once, where what a run made is removed after it whatever happened.
//! `bench thor` and `measure` take this one path for every provider; what
//! a workload puts in a run's place (identities, namespaces) is theirs.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result};

use crate::cluster::existing::ExistingCluster;
use crate::cluster::kind::KindSpec;
use crate::cluster::{AnyCluster, Cluster, ClusterSpec, ExistingTarget, KindChoice, Provider};
use crate::k8s::K8sRelease;
use crate::tools::Component;

/// How long a fresh cluster may take to be ready.
const LOCAL_START: Duration = Duration::from_secs(180);
const KIND_START: Duration = Duration::from_secs(300);

/// Where a run set's runs go.
pub enum Target {
    /// A fresh cluster of this provider per run, named `prefix-…`.
    Fresh {
        provider: Provider,
        bins: BTreeMap<Component, PathBuf>,
        prefix: String,
    },
    /// The existing cluster, attached once.
    Attached {
        cluster: Box<AnyCluster>,
        target: ExistingTarget,
    },
}

/// One run's cluster.
pub enum OnCluster<'a> {
    Fresh(Box<AnyCluster>),
    Attached(&'a AnyCluster, &'a ExistingTarget),
}

impl Target {
    /// The target of `provider`: an existing cluster is attached to now
    /// (its run id set); others start a cluster per run.
    pub async fn new(
        provider: &Provider,
        bins: BTreeMap<Component, PathBuf>,
        prefix: &str,
    ) -> Result<Target> {
        Ok(match provider {
            Provider::Existing(t) => {
                let mut c = ExistingCluster::attach(t.cluster.clone()).await?;
                c.run_id = t.run_id.clone();
                Target::Attached {
                    cluster: Box::new(AnyCluster::Existing(c)),
                    target: t.clone(),
                }
            }
            other => Target::Fresh {
                provider: other.clone(),
                bins,
                prefix: prefix.to_string(),
            },
        })
    }

    /// The attached cluster (None when each run starts its own).
    pub fn attached(&self) -> Option<(&ExistingCluster, &ExistingTarget)> {
        match self {
            Target::Attached { cluster, target } => existing_of(cluster).map(|c| (c, target)),
            Target::Fresh { .. } => None,
        }
    }

    /// The provider's name.
    pub fn provider_name(&self) -> &'static str {
        match self {
            Target::Fresh { provider, .. } => provider.name(),
            Target::Attached { .. } => crate::cluster::existing::PROVIDER,
        }
    }

    /// The cluster of run `run` (a name part, e.g. "jobset-0"): a fresh one
    /// of `spec` (on kind, of `kind_profile`'s config when given, else the
    /// provider's), or the attached one.
    pub async fn cluster(
        &self,
        spec: &ClusterSpec,
        run: &str,
        kind_profile: Option<&str>,
    ) -> Result<OnCluster<'_>> {
        match self {
            Target::Attached { cluster, target } => Ok(OnCluster::Attached(cluster, target)),
            Target::Fresh {
                provider,
                bins,
                prefix,
            } => {
                let name = format!("{prefix}-{run}");
                let c = start(provider, spec, bins, &name, kind_profile).await?;
                Ok(OnCluster::Fresh(Box::new(c)))
            }
        }
    }

    /// Remove what the run set left (after Ctrl-C or a failure): its
    /// fresh clusters (a `kind create` cut short has node containers and
    /// no state yet: abandoned by kind name), or on an existing cluster
    /// everything carrying the run id.
    pub async fn tear_down(&self) -> Result<()> {
        match self {
            Target::Attached { target, .. } => target.cluster.remove_run(&target.run_id).await,
            Target::Fresh {
                provider, prefix, ..
            } => tear_down_fresh(provider, prefix),
        }
    }
}

/// After Ctrl-C, before a target was made or when only its name is known:
/// what `Target::tear_down` does, from the provider and the clusters'
/// name prefix.
pub async fn tear_down(provider: &Provider, prefix: &str) -> Result<()> {
    match provider {
        Provider::Existing(t) => t.cluster.remove_run(&t.run_id).await,
        other => tear_down_fresh(other, prefix),
    }
}

/// After Ctrl-C during the start of cluster `name`: stop whatever the
/// dropped start had started and remove its state (kind: delete the kind
/// cluster by name, half-made too).
pub fn tear_down_named(provider: &Provider, name: &str) -> Result<()> {
    match provider {
        Provider::Kind(_) => crate::cluster::kind::abandon(name),
        Provider::Local { .. } => crate::lifecycle::up::abandon_local(name),
        Provider::Existing(_) => Ok(()),
    }
}

fn tear_down_fresh(provider: &Provider, prefix: &str) -> Result<()> {
    match provider {
        Provider::Kind(_) => {
            for name in crate::cluster::state::list_clusters()?
                .into_iter()
                .filter(|n| n.starts_with(prefix))
            {
                crate::cluster::kind::abandon(&name)?;
            }
            Ok(())
        }
        Provider::Local { .. } => crate::lifecycle::up::down_all(prefix),
        // An existing cluster's runs are removed by run id (tear_down).
        Provider::Existing(_) => Ok(()),
    }
}

/// The attached cluster of an `AnyCluster` that holds one.
fn existing_of(cluster: &AnyCluster) -> Option<&ExistingCluster> {
    match cluster {
        AnyCluster::Existing(c) => Some(c),
        AnyCluster::Local(_) => None,
        AnyCluster::Kind(_) => None,
    }
}

/// A fresh cluster called `name` of `provider` (local or kind).
pub async fn start(
    provider: &Provider,
    spec: &ClusterSpec,
    bins: &BTreeMap<Component, PathBuf>,
    name: &str,
    kind_profile: Option<&str>,
) -> Result<AnyCluster> {
    match provider {
        Provider::Local { real_node } => {
            let mut spec = spec.clone();
            spec.name = name.to_string();
            spec.real_node |= *real_node;
            let c = crate::lifecycle::up::up(&crate::lifecycle::up::UpOptions {
                spec,
                bins: bins.clone(),
                timeout: LOCAL_START,
            })
            .await?;
            Ok(AnyCluster::Local(c))
        }
        Provider::Kind(choice) => {
            let config = kind_config(choice, kind_profile, &spec.k8s_minor)?;
            let c = crate::lifecycle::up::up_kind(&crate::lifecycle::up::KindUpOptions {
                spec: KindSpec {
                    name: name.to_string(),
                    config,
                    k8s_version: Some(spec.k8s_minor.clone()),
                    wait: KIND_START,
                    images: choice.images,
                },
                kueue: spec.kueue.is_some(),
                kwok: choice.kwok,
                timeout: KIND_START,
            })
            .await?;
            Ok(AnyCluster::Kind(c))
        }
        Provider::Existing(_) => Err(crate::error::bad_input(
            "an existing cluster is attached to (Target::new), never started",
        )),
    }
}

/// What a run set asks of its provider, checked before anything starts:
/// on kind, the config of each profile its runs use (`kind_profiles`;
/// None: the choice's own) found and valid for `minor`; on an existing
/// cluster, nothing it cannot give (`not_on_existing`: why a run set
/// cannot run there, e.g. it creates cluster-wide queues).
pub fn preflight(
    provider: &Provider,
    kind_profiles: &[Option<&str>],
    minor: &str,
    not_on_existing: Option<String>,
) -> Result<()> {
    match provider {
        Provider::Existing(_) => match not_on_existing {
            Some(why) => Err(crate::error::bad_input(why)),
            None => Ok(()),
        },
        Provider::Kind(choice) => {
            for profile in kind_profiles {
                crate::lifecycle::up::validate_kind_config(&kind_config(choice, *profile, minor)?)?;
            }
            Ok(())
        }
        Provider::Local { .. } => Ok(()),
    }
}

/// The kind config of a cluster: the given one, or `profile`'s (else the
/// choice's) of the repository's kind-configs/ for `minor`.
pub fn kind_config(choice: &KindChoice, profile: Option<&str>, minor: &str) -> Result<PathBuf> {
    if let Some(c) = &choice.config {
        return Ok(c.clone());
    }
    let root = choice.root.as_deref().ok_or_else(|| {
        crate::error::bad_input(
            "--provider kind without --config reads kind-configs/: run from inside the repository",
        )
    })?;
    let minor = K8sRelease::parse(minor)?.minor;
    crate::cluster::kind::config::default_config(root, profile.unwrap_or(&choice.profile), minor)
}

impl<'a> OnCluster<'a> {
    /// The cluster.
    pub fn get(&self) -> &AnyCluster {
        match self {
            OnCluster::Fresh(c) => c,
            OnCluster::Attached(c, _) => c,
        }
    }

    /// The existing cluster the run set attached to (None: a fresh one).
    pub fn attached(&self) -> Option<(&ExistingCluster, &ExistingTarget)> {
        match self {
            OnCluster::Attached(c, t) => existing_of(c).map(|c| (c, *t)),
            OnCluster::Fresh(_) => None,
        }
    }

    /// The cluster as one a run puts a namespace of its own on, reached by
    /// its kubeconfig (and audit log): the attached existing cluster, or a
    /// fresh kind cluster (a new run id; its nodes run the node image of
    /// their release). None for the local provider, whose runs use its
    /// own namespace and the users its CA certified.
    pub fn as_existing(&self) -> Option<ExistingTarget> {
        match (self, self.get()) {
            (OnCluster::Attached(_, t), _) => Some((*t).clone()),
            (OnCluster::Fresh(_), AnyCluster::Kind(c)) => Some(ExistingTarget {
                cluster: crate::cluster::existing::ExistingOptions {
                    kubeconfig: c.state.kubeconfig.clone(),
                    audit_log: Some(c.state.audit_log.clone()),
                    ..Default::default()
                },
                run_id: crate::cluster::existing::site::new_run_id(),
                yes: true,
                node_image: crate::cluster::local::realnode::image::image_name(
                    &c.state.k8s_version,
                ),
            }),
            (OnCluster::Fresh(_), AnyCluster::Local(_)) => None,
            (OnCluster::Fresh(_), AnyCluster::Existing(_)) => None,
        }
    }

    /// After the run (`r`, `what` naming it): a fresh cluster down when it
    /// went well, stopped but kept when not (its state and logs; the error
    /// says where); on the existing cluster everything of the run id
    /// removed either way.
    pub async fn finish<T>(self, r: Result<T>, what: &str) -> Result<T> {
        match self {
            OnCluster::Fresh(c) => end_of_run(*c, r, what),
            OnCluster::Attached(_, t) => {
                let cleaned = t.cluster.remove_run(&t.run_id).await;
                match (r, cleaned) {
                    (Ok(v), Ok(())) => Ok(v),
                    (Ok(_), Err(c)) => {
                        Err(c.context(format!("removing run {} from the cluster", t.run_id)))
                    }
                    (Err(e), Ok(())) => Err(e.context(format!(
                        "{what} (everything of run {} was removed)",
                        t.run_id
                    ))),
                    (Err(e), Err(c)) => Err(e.context(format!(
                        "{what}; removing run {} failed too: {c:#}",
                        t.run_id
                    ))),
                }
            }
        }
    }
}

/// A fresh cluster after its run: down when it went well; on failure kept
/// (its logs say why) and the error says where.
fn end_of_run<T>(cluster: AnyCluster, r: Result<T>, what: &str) -> Result<T> {
    match r {
        Ok(v) => {
            cluster.down(false)?;
            Ok(v)
        }
        Err(e) => {
            let name = cluster.name().to_string();
            let dir = cluster
                .state_dir()
                .map_or_else(String::new, |d| d.display().to_string());
            let down = cluster.down(true);
            let e = e.context(format!(
                "{what} on cluster {name} (its state and logs are kept in {dir}; `harness down --name {name}` removes them)"
            ));
            Err(match down {
                Ok(()) => e,
                Err(d) => e.context(format!("stopping the cluster failed too: {d:#}")),
            })
        }
    }
}

/// A private directory for the identities' kubeconfigs (tokens): removed
/// when dropped.
pub fn token_dir() -> Result<tempfile::TempDir> {
    tempfile::Builder::new()
        .prefix("harness-tokens-")
        .tempdir()
        .context("a directory for the run's ServiceAccount kubeconfigs")
}

/// Client names that differ from run to run made alike, so that rounds
/// and modes line up by client: a kind cluster's node names carry the
/// cluster's name, and a run's ServiceAccounts its namespace (`ns`).
pub fn same_clients(cluster: &AnyCluster, ns: Option<&str>) -> impl Fn(&str) -> String + use<> {
    let prefix = match cluster {
        AnyCluster::Kind(c) => Some(format!("{}-", c.state.kind_cluster)),
        AnyCluster::Local(_) => None,
        AnyCluster::Existing(_) => None,
    };
    let account = ns.map(|ns| format!("system:serviceaccount:{ns}:"));
    move |c: &str| {
        let mut c = c.to_string();
        if let Some(a) = &account {
            c = c.replace(a.as_str(), "system:serviceaccount:<run>:");
        }
        if let Some(p) = &prefix {
            c = c.replace(p.as_str(), "<kind>-");
        }
        c
    }
}
