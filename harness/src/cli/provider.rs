//! `--provider` and its flags, shared by `up`, `bench thor` and `measure`
//! and parsed once into the library's `cluster::Provider`: a flag of one
//! provider given with another is refused naming it, and what a provider
//! cannot do is refused by the provider's own answer
//! (`Provider::refuses`).

use std::path::PathBuf;

use anyhow::Result;
use clap::{Args, ValueEnum};
use harness::cluster::{ExistingTarget, KindChoice, Provider};
use harness::error::bad_input;

use crate::cli::args::ExistingArgs;

/// `--provider`.
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProviderName {
    /// Control-plane processes on this machine, kwok's fake nodes.
    Local,
    /// kind: node containers in Docker, from a kind config (kind-configs/).
    Kind,
    /// The cluster of --kubeconfig, which the harness never starts or
    /// stops: each run in a namespace of its own, removed after.
    Existing,
}

/// Where a command's clusters come from.
#[derive(Args, Debug, Clone)]
pub struct ProviderArgs {
    #[arg(long, value_enum, default_value = "local")]
    pub provider: ProviderName,
    /// local: one real node (`real-node-0`) beside the fake ones — the
    /// cluster's kubelet with containerd and runc, built from Go modules,
    /// running real containers of a local image (agnhost; pods name it
    /// with imagePullPolicy: Never). Needs root, and one per machine.
    /// existing: Thor's pods on the cluster's own nodes.
    #[arg(long)]
    pub real_node: bool,
    #[command(flatten)]
    pub kind: KindArgs,
    #[command(flatten)]
    pub existing: ExistingArgs,
    /// existing: go on on a cluster that runs other workloads (their CPU,
    /// memory and etcd writes share the window).
    #[arg(long)]
    pub yes: bool,
}

/// The kind provider's flags.
#[derive(Args, Debug, Clone, Default)]
pub struct KindArgs {
    /// kind: the cluster config [default: kind-configs/<kind-profile>-<minor>.yaml].
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// kind: the profile the default config is chosen by (baseline,
    /// jobset, gang) [default: baseline; `bench thor` picks each mode's].
    #[arg(long)]
    pub kind_profile: Option<String>,
    /// kind: where the node and controller images come from: pulled (the
    /// profile's pinned kindest/node digest and the release images),
    /// built (here, from Go modules and Debian packages: no registry
    /// needed; `tools install --kind` builds ahead) or auto (pulled when
    /// the pinned node image is in the engine or can be pulled, else
    /// built).
    #[arg(long, value_enum)]
    pub kind_images: Option<harness::cluster::kind::KindImages>,
    /// kind: also run kwok in the cluster (kube-system/kwok-controller,
    /// from its module's kustomization), so workloads can add fake node
    /// pools beside the real nodes, as on the local provider (the gang
    /// cases do). The local provider always runs kwok.
    #[arg(long)]
    pub kwok: bool,
}

impl KindArgs {
    fn any(&self) -> bool {
        self.config.is_some()
            || self.kind_profile.is_some()
            || self.kind_images.is_some()
            || self.kwok
    }
}

impl ProviderArgs {
    /// The provider, every flag checked against it; `node_image` is the
    /// image Thor's containers run on an existing cluster's real nodes.
    pub fn provider(&self, node_image: &str) -> Result<Provider> {
        let mut provider = self.shape()?;
        match &mut provider {
            Provider::Existing(t) => {
                t.cluster = self.existing.options()?;
                t.run_id = harness::cluster::existing::site::new_run_id();
                t.node_image = node_image.to_string();
            }
            Provider::Local { .. } | Provider::Kind(_) => {}
        }
        Ok(provider)
    }

    /// The provider the flags name, every flag checked against it, before
    /// anything is read (an existing cluster's kubeconfig is not): what a
    /// command refuses of it is said before a missing file is.
    pub fn shape(&self) -> Result<Provider> {
        if self.provider != ProviderName::Kind && self.kind.any() {
            return Err(bad_input(
                "--config, --kind-profile, --kind-images and --kwok are for --provider kind",
            ));
        }
        if self.provider != ProviderName::Existing && (self.existing.any() || self.yes) {
            return Err(bad_input(
                "--kubeconfig, --context, --audit-log, --etcd-*, --attribution, --apf-identity and --yes are for --provider existing",
            ));
        }
        let provider = match self.provider {
            ProviderName::Local => Provider::Local {
                real_node: self.real_node,
            },
            ProviderName::Kind => Provider::Kind(KindChoice {
                profile: self
                    .kind
                    .kind_profile
                    .clone()
                    .unwrap_or_else(|| "baseline".into()),
                config: self.kind.config.clone(),
                images: self.kind.kind_images.unwrap_or_default(),
                kwok: self.kind.kwok,
                root: harness::paths::repo_root(&std::env::current_dir()?),
            }),
            ProviderName::Existing => Provider::Existing(ExistingTarget {
                cluster: Default::default(),
                run_id: String::new(),
                yes: self.yes,
                node_image: String::new(),
            }),
        };
        if self.real_node {
            provider.check(harness::cluster::Ask::RealNode, "--real-node")?;
        }
        Ok(provider)
    }
}
