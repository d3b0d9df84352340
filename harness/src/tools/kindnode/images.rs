//! The container images a kind node built here carries, each written as an
//! OCI archive (tools/oci.rs) from its Go build: the ones kubeadm runs,
//! under the names `kubeadm config images list` prints, and the ones the
//! harness installs (JobSet, Kueue, agnhost) under names of its own.
//!
//! etcd and CoreDNS are built at the harness's pins, which differ from
//! kubeadm's: they are named with their real versions and the kind config
//! tells kubeadm those tags (`etcd.local.imageTag`, `dns.imageTag`). The
//! pod sandbox ("pause") is agnhost's `pause` — the program the real node
//! runs as its sandbox — under the pause name kubeadm lists, which the
//! node's containerd is told (`sandbox_image`).

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use crate::k8s::K8sRelease;
use crate::tools::component::Component;
use crate::tools::oci::ImageSpec;
use crate::tools::versions::{COREDNS_VERSION, ETCD_VERSION};

const PATH_ENV: &str = "PATH=/usr/local/bin:/usr/local/sbin:/usr/bin:/usr/sbin:/bin:/sbin";
const BUILT_HERE: &str = "harness.built-here";
/// distroless's nonroot user and group.
const NONROOT: &str = "65532:65532";

/// The etcd tag the node's kubeadm is told.
pub fn etcd_tag() -> String {
    format!("{ETCD_VERSION}-0")
}

/// The CoreDNS tag the node's kubeadm is told.
pub fn dns_tag() -> String {
    format!("v{COREDNS_VERSION}")
}

/// What kubeadm lists, by role.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KubeadmImages {
    /// (component, reference), for kube-apiserver, kube-controller-manager,
    /// kube-scheduler and kube-proxy.
    pub kubernetes: Vec<(Component, String)>,
    /// "registry.k8s.io/etcd" (no tag).
    pub etcd_repo: String,
    /// "registry.k8s.io/coredns/coredns" (no tag).
    pub coredns_repo: String,
    /// "registry.k8s.io/pause:3.10.1".
    pub pause: String,
}

fn split_tag(reference: &str) -> (&str, &str) {
    match reference.rsplit_once(':') {
        Some((repo, tag)) if !tag.contains('/') => (repo, tag),
        _ => (reference, ""),
    }
}

/// Read `kubeadm config images list --kubernetes-version vX` output.
pub fn parse_kubeadm_list(text: &str, k8s: K8sRelease) -> Result<KubeadmImages> {
    let mut kubernetes = Vec::new();
    let (mut etcd, mut coredns, mut pause) = (None, None, None);
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let (repo, tag) = split_tag(line);
        let base = repo.rsplit('/').next().unwrap_or(repo);
        match base {
            "kube-apiserver" | "kube-controller-manager" | "kube-scheduler" | "kube-proxy" => {
                let c = Component::from_name(base).context("a Kubernetes component")?;
                if tag != format!("v{}", k8s.version) {
                    bail!(
                        "kubeadm lists {line} for Kubernetes v{}: not the version built here",
                        k8s.version
                    );
                }
                kubernetes.push((c, line.to_string()));
            }
            "etcd" => etcd = Some(repo.to_string()),
            "coredns" => coredns = Some(repo.to_string()),
            "pause" => pause = Some(line.to_string()),
            _ => bail!("kubeadm lists {line}, an image the harness does not build"),
        }
    }
    match (etcd, coredns, pause) {
        (Some(etcd_repo), Some(coredns_repo), Some(pause)) if kubernetes.len() == 4 => {
            Ok(KubeadmImages {
                kubernetes,
                etcd_repo,
                coredns_repo,
                pause,
            })
        }
        _ => bail!("kubeadm's image list lacks one of the seven images it always names:\n{text}"),
    }
}

fn label(c: Component, k8s: K8sRelease) -> (String, String) {
    let s = c.go_source(k8s);
    (
        BUILT_HERE.to_string(),
        format!("{} from {}@{}", c.name(), s.module, s.module_version),
    )
}

fn binary_image(
    name: String,
    c: Component,
    bin: &Path,
    k8s: K8sRelease,
    at: &str,
    entrypoint: Vec<String>,
) -> ImageSpec {
    ImageSpec {
        name,
        files: vec![(at.to_string(), bin.to_path_buf(), 0o755)],
        entrypoint,
        env: vec![PATH_ENV.to_string()],
        labels: vec![label(c, k8s)],
        ..Default::default()
    }
}

/// The images kubeadm runs, from these binaries; kube-proxy on `rootfs`
/// (it runs iptables, nft and conntrack).
pub fn kubeadm_images(
    list: &KubeadmImages,
    k8s: K8sRelease,
    bin: &dyn Fn(Component) -> Result<PathBuf>,
    rootfs: &Path,
) -> Result<Vec<ImageSpec>> {
    let mut out = Vec::new();
    for (c, reference) in &list.kubernetes {
        let at = format!("usr/local/bin/{}", c.name());
        let mut spec = binary_image(reference.clone(), *c, &bin(*c)?, k8s, &at, vec![]);
        if *c == Component::KubeProxy {
            spec.base_layer = Some(rootfs.to_path_buf());
        }
        out.push(spec);
    }
    out.push(binary_image(
        format!("{}:{}", list.etcd_repo, etcd_tag()),
        Component::Etcd,
        &bin(Component::Etcd)?,
        k8s,
        "usr/local/bin/etcd",
        vec![],
    ));
    // kubeadm's CoreDNS Deployment gives only args: the image's entrypoint
    // is the program, as upstream's image has it.
    out.push(binary_image(
        format!("{}:{}", list.coredns_repo, dns_tag()),
        Component::Coredns,
        &bin(Component::Coredns)?,
        k8s,
        "coredns",
        vec!["/coredns".into()],
    ));
    let mut pause = binary_image(
        list.pause.clone(),
        Component::Agnhost,
        &bin(Component::Agnhost)?,
        k8s,
        "agnhost",
        vec!["/agnhost".into()],
    );
    pause.cmd = vec!["pause".into()];
    out.push(pause);
    Ok(out)
}

/// The agnhost image's name (a real node's and kind nodes' built here);
/// its tag is the Kubernetes release whose agnhost it holds.
pub fn agnhost_name(k8s_version: &str) -> String {
    format!("harness.local/agnhost:v{k8s_version}")
}

/// The images the harness installs on a kind cluster it built: the JobSet
/// and Kueue controllers (entrypoint `/manager` and user 65532, as
/// upstream's distroless `static:nonroot` images: their Deployments ask
/// for runAsNonRoot), agnhost (what Thor's containers run on real
/// nodes) and kwok (`up --provider kind --kwok`).
pub fn harness_image(c: Component, k8s: K8sRelease, bin: &Path) -> ImageSpec {
    let v = c.version(k8s);
    match c {
        Component::Agnhost => {
            let mut s = binary_image(
                agnhost_name(&v),
                c,
                bin,
                k8s,
                "agnhost",
                vec!["/agnhost".into()],
            );
            s.cmd = vec!["pause".into()];
            s
        }
        // kwok's Deployment (its module's kustomize/kwok) gives arguments
        // only; it reads its config from /root/.kwok, so it runs as root.
        Component::Kwok => binary_image(
            format!("harness.local/kwok:v{v}"),
            c,
            bin,
            k8s,
            "kwok",
            vec!["/kwok".into()],
        ),
        _ => {
            let mut s = binary_image(
                format!("harness.local/{}:v{v}", c.name()),
                c,
                bin,
                k8s,
                "manager",
                vec!["/manager".into()],
            );
            s.user = Some(NONROOT.to_string());
            s
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIST: &str = "registry.k8s.io/kube-apiserver:v1.37.1\nregistry.k8s.io/kube-controller-manager:v1.37.1\nregistry.k8s.io/kube-scheduler:v1.37.1\nregistry.k8s.io/kube-proxy:v1.37.1\nregistry.k8s.io/coredns/coredns:v1.13.1\nregistry.k8s.io/pause:3.10.1\nregistry.k8s.io/etcd:3.7.0-0\n";

    #[test]
    fn kubeadms_list_is_read_by_role() {
        let k = K8sRelease::parse("1.37").unwrap();
        let l = parse_kubeadm_list(LIST, k).unwrap();
        assert_eq!(l.kubernetes.len(), 4);
        assert_eq!(l.etcd_repo, "registry.k8s.io/etcd");
        assert_eq!(l.coredns_repo, "registry.k8s.io/coredns/coredns");
        assert_eq!(l.pause, "registry.k8s.io/pause:3.10.1");
        // Another release's list, or an image nobody builds, is an error.
        assert!(parse_kubeadm_list(LIST, K8sRelease::parse("1.36").unwrap()).is_err());
        let extra = format!("{LIST}registry.k8s.io/kindnetd:v1\n");
        assert!(parse_kubeadm_list(&extra, k).is_err());
        assert!(
            parse_kubeadm_list(&LIST.replace("registry.k8s.io/pause:3.10.1\n", ""), k).is_err()
        );
    }

    #[test]
    fn images_carry_their_binary_where_kubeadm_runs_it() {
        let k = K8sRelease::parse("1.37").unwrap();
        let l = parse_kubeadm_list(LIST, k).unwrap();
        let bin = |c: Component| Ok(PathBuf::from(format!("/cache/{}", c.name())));
        let specs = kubeadm_images(&l, k, &bin, Path::new("/cache/rootfs.tar")).unwrap();
        let by_name = |n: &str| specs.iter().find(|s| s.name == n).unwrap();
        let api = by_name("registry.k8s.io/kube-apiserver:v1.37.1");
        assert_eq!(api.files[0].0, "usr/local/bin/kube-apiserver");
        assert!(api.base_layer.is_none());
        let proxy = by_name("registry.k8s.io/kube-proxy:v1.37.1");
        assert_eq!(
            proxy.base_layer.as_deref(),
            Some(Path::new("/cache/rootfs.tar"))
        );
        let etcd = by_name(&format!("registry.k8s.io/etcd:{ETCD_VERSION}-0"));
        assert_eq!(etcd.files[0].1, PathBuf::from("/cache/etcd"));
        let dns = by_name(&format!(
            "registry.k8s.io/coredns/coredns:v{COREDNS_VERSION}"
        ));
        assert_eq!(dns.entrypoint, ["/coredns"]);
        let pause = by_name("registry.k8s.io/pause:3.10.1");
        assert_eq!(
            (pause.entrypoint.as_slice(), pause.cmd.as_slice()),
            (&["/agnhost".to_string()][..], &["pause".to_string()][..])
        );
        assert_eq!(specs.len(), 7);
        assert!(
            specs
                .iter()
                .all(|s| s.labels.iter().any(|(k, _)| k == BUILT_HERE))
        );
    }
}
