//! The provider a command runs on, as one value parsed once from the
//! command line (`--provider …` and its flags): where each cluster comes
//! from. Starting or attaching it gives a running cluster behind the one
//! trait (`lifecycle::start`); what a provider cannot do is an explicit
//! answer ([`Provider::refuses`]), never a silent default.

use std::path::PathBuf;

use crate::cluster::existing::ExistingOptions;
use crate::cluster::kind::KindImages;

/// Where a command's clusters come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Provider {
    /// Control-plane processes on this machine and kwok's fake nodes;
    /// `real_node`: one real node beside them (root, one per machine).
    Local { real_node: bool },
    /// kind: node containers in Docker, from a kind config.
    Kind(KindChoice),
    /// A cluster the harness did not start: attached to, never started or
    /// stopped; every run in a namespace of its own carrying the run id.
    Existing(ExistingTarget),
}

/// A kind cluster's config and where its images come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KindChoice {
    /// The profile whose kind-configs/ file a cluster is made from
    /// (baseline, jobset, gang), unless `config` names one.
    pub profile: String,
    pub config: Option<PathBuf>,
    pub images: KindImages,
    /// Also run kwok in the cluster (fake node pools beside the real).
    pub kwok: bool,
    /// The repository whose kind-configs/ hold the profiles' configs
    /// (None outside it: then `config` must be given).
    pub root: Option<PathBuf>,
}

/// A cluster the harness did not start, and the run on it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExistingTarget {
    pub cluster: ExistingOptions,
    /// Every namespace (and FlowSchema) the run creates carries it.
    pub run_id: String,
    /// Go on on a cluster that runs other workloads.
    pub yes: bool,
    /// The image Thor's containers run on real nodes (agnhost, pullable by
    /// the cluster's nodes).
    pub node_image: String,
}

/// What a command may ask of its provider that not every provider does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ask {
    /// Start a cluster (`up`).
    Start,
    /// A real node beside the fake ones (`--real-node`).
    RealNode,
    /// Binaries of the harness's choosing (`--bin`).
    Binaries,
    /// pprof profiles of the control plane (`--profile`).
    Profiles,
    /// A control-plane profile of the harness's (`--control-plane`).
    ControlPlane,
    /// Fake nodes of the harness's count and size (`--nodes`, `--node-*`).
    FakeNodes,
    /// The kubelets' traffic model (`--kubelet`).
    KubeletModel,
    /// Feature gates and runtime-config of the harness's (`--feature-gates`,
    /// `--runtime-config`).
    Gates,
    /// Kueue's own options (`--kueue-pods-ready-timeout`).
    KueueOptions,
}

impl Provider {
    /// Its name, as results, baselines and state files say it.
    pub fn name(&self) -> &'static str {
        match self {
            Provider::Local { .. } => crate::cluster::local::PROVIDER,
            Provider::Kind(_) => crate::cluster::kind::PROVIDER,
            Provider::Existing(_) => crate::cluster::existing::PROVIDER,
        }
    }

    /// Whether it starts (and stops) its clusters.
    pub fn starts_clusters(&self) -> bool {
        !matches!(self, Provider::Existing(_))
    }

    /// Why this provider cannot do `ask` (the flag's name goes in front);
    /// None when it can.
    pub fn refuses(&self, ask: Ask) -> Option<&'static str> {
        use Ask::*;
        match (self, ask) {
            (Provider::Local { .. }, _) => None,
            (Provider::Kind(_), RealNode) => Some("kind nodes are real nodes already"),
            (Provider::Kind(_), Binaries) => Some("a kind cluster runs its node image's binaries"),
            (Provider::Kind(_), Profiles) => {
                Some("the control plane's pprof endpoints are read on the local provider only")
            }
            (Provider::Kind(_), ControlPlane) => Some(
                "the kind provider does not apply control-plane profiles (its components' flags come from the kind config's kubeadm patches)",
            ),
            (Provider::Kind(_), FakeNodes) => Some("a kind cluster's nodes are its config's"),
            (Provider::Kind(_), KubeletModel) => Some("kind nodes run real kubelets"),
            (Provider::Kind(_), Gates) => {
                Some("with kind they come from the kind config (the gang profiles set them)")
            }
            (Provider::Kind(_), KueueOptions) => {
                Some("on kind, Kueue runs with its release manifest's Configuration")
            }
            (Provider::Kind(_), Start) => None,
            (Provider::Existing(_), Start) => {
                Some("the harness never starts or stops a cluster it did not start")
            }
            (Provider::Existing(_), RealNode) => None,
            (Provider::Existing(_), _) => {
                Some("the harness does not reconfigure a cluster it did not start")
            }
        }
    }

    /// Err (bad input) naming `flag` when this provider refuses `ask`.
    pub fn check(&self, ask: Ask, flag: &str) -> anyhow::Result<()> {
        match self.refuses(ask) {
            None => Ok(()),
            Some(why) => Err(crate::error::bad_input(format!(
                "{flag}: {why} (--provider {})",
                self.name()
            ))),
        }
    }

    /// The existing cluster's target, when it is one.
    pub fn existing(&self) -> Option<&ExistingTarget> {
        match self {
            Provider::Existing(t) => Some(t),
            _ => None,
        }
    }

    /// Whether Thor's pods run on real nodes: kind's always, the local
    /// provider's with its real node, an existing cluster's when asked.
    pub fn real_nodes(&self, asked: bool) -> bool {
        match self {
            Provider::Local { real_node } => *real_node || asked,
            Provider::Kind(_) => true,
            Provider::Existing(_) => asked,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_a_provider_cannot_do_is_said_not_defaulted() {
        let kind = Provider::Kind(KindChoice {
            profile: "baseline".into(),
            config: None,
            images: KindImages::default(),
            kwok: false,
            root: None,
        });
        let e = kind.check(Ask::RealNode, "--real-node").unwrap_err();
        assert_eq!(crate::error::exit_code(&e), crate::error::EXIT_USAGE);
        assert!(
            format!("{e}")
                .contains("--real-node: kind nodes are real nodes already (--provider kind)")
        );
        assert!(kind.check(Ask::Start, "up").is_ok());
        let local = Provider::Local { real_node: false };
        for ask in [
            Ask::Start,
            Ask::RealNode,
            Ask::Binaries,
            Ask::Profiles,
            Ask::Gates,
        ] {
            assert_eq!(local.refuses(ask), None);
        }
        let existing = Provider::Existing(ExistingTarget {
            cluster: ExistingOptions::default(),
            run_id: "r1".into(),
            yes: false,
            node_image: String::new(),
        });
        assert!(existing.refuses(Ask::Start).is_some());
        assert!(existing.refuses(Ask::FakeNodes).is_some());
        assert!(!existing.starts_clusters() && local.starts_clusters());
        assert_eq!(
            [local.name(), kind.name(), existing.name()],
            ["local", "kind", "existing"]
        );
    }
}
