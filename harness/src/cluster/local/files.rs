//! The files of a new local cluster's state directory: certificates,
//! kubeconfigs and component configuration, written with mode 0600.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use anyhow::{Context, Result};

use crate::cluster::client::kubeconfig_text;
use crate::cluster::kwok;
use crate::cluster::local::components::{
    APISERVER, CONTROLLER_MANAGER, JOBSET, KUEUE, KWOK, SCHEDULER,
};
use crate::cluster::local::flags;
use crate::cluster::local::identity::{AUDIT_POLICY, IDENTITIES};
use crate::cluster::local::kueue;
use crate::cluster::local::kwok_logs;
use crate::cluster::local::layout::{Layout, Ports};
use crate::cluster::local::realnode;
use crate::cluster::spec::ClusterSpec;
use crate::pki::{self as certs, Ca, CertPair};

fn write_private(path: &Path, contents: &str) -> Result<()> {
    std::fs::write(path, contents).with_context(|| format!("writing {}", path.display()))?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))?;
    Ok(())
}

fn write_pair(layout: &Layout, name: &str, pair: &CertPair) -> Result<()> {
    write_private(&layout.pki(&format!("{name}.crt")), &pair.cert_pem)?;
    write_private(&layout.pki(&format!("{name}.key")), &pair.key_pem)
}

/// Make a new cluster's state directory and its subdirectories, mode 0700.
pub fn make_dirs(l: &Layout) -> Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true).mode(0o700);
    for d in [
        l.root.clone(),
        l.root.join("pki"),
        l.root.join("logs"),
        l.root.join("kubeconfigs"),
        l.jobset_cert_dir(),
        l.kueue_cert_dir(),
    ] {
        builder
            .create(&d)
            .map_err(|e| crate::cluster::state::state_dir_error(&d, e))?;
    }
    std::fs::set_permissions(&l.root, std::fs::Permissions::from_mode(0o700))?;
    Ok(())
}

/// Write a new cluster's state directory: the CA and every certificate,
/// one kubeconfig per identity (and anonymous ones for the components'
/// health ports), the audit policy, and the JobSet controller's and
/// kwok's configuration.
pub fn write_files(
    l: &Layout,
    spec: &ClusterSpec,
    ports: &Ports,
    real_node: Option<&realnode::Placement>,
) -> Result<()> {
    let ca = Ca::generate(&spec.name)?;
    write_pair(l, "ca", &ca.pair)?;
    write_pair(
        l,
        "apiserver",
        &ca.serving(
            APISERVER,
            &[
                "kubernetes",
                "kubernetes.default",
                "kubernetes.default.svc",
                "kubernetes.default.svc.cluster.local",
                "10.96.0.1",
            ],
        )?,
    )?;
    write_pair(
        l,
        "controller-manager-serving",
        &ca.serving(CONTROLLER_MANAGER, &[])?,
    )?;
    write_pair(l, "scheduler-serving", &ca.serving(SCHEDULER, &[])?)?;
    let webhook = ca.serving(JOBSET, &[])?;
    write_private(&l.jobset_cert_dir().join("tls.crt"), &webhook.cert_pem)?;
    write_private(&l.jobset_cert_dir().join("tls.key"), &webhook.key_pem)?;
    if let Some(kueue) = &spec.kueue {
        let webhook = ca.serving(KUEUE, &[])?;
        write_private(&l.kueue_cert_dir().join("tls.crt"), &webhook.cert_pem)?;
        write_private(&l.kueue_cert_dir().join("tls.key"), &webhook.key_pem)?;
        for sub in [kueue::METRICS_CERT_DIR, kueue::VISIBILITY_CERT_DIR] {
            let dir = l.kueue_etc().join(sub);
            std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
            write_private(&dir.join("tls.crt"), &webhook.cert_pem)?;
            write_private(&dir.join("tls.key"), &webhook.key_pem)?;
        }
        write_private(&l.kueue_config(), &kueue::config(l, ports, kueue)?)?;
    }
    let (sa_key, sa_pub) = certs::service_account_keys()?;
    write_private(&l.pki("sa.key"), &sa_key)?;
    write_private(&l.pki("sa.pub"), &sa_pub)?;

    let server = ports.apiserver_url();
    let cluster_name = format!("harness-{}", spec.name);
    for (file, user, groups) in IDENTITIES {
        let pair = ca.client(user, groups)?;
        write_pair(l, &format!("client-{file}"), &pair)?;
        let text = kubeconfig_text(
            &cluster_name,
            &server,
            &l.ca_cert(),
            Some((
                user,
                &l.pki(&format!("client-{file}.crt")),
                &l.pki(&format!("client-{file}.key")),
            )),
        );
        let path = if *file == "admin" {
            l.admin_kubeconfig()
        } else {
            l.kubeconfig(file)
        };
        write_private(&path, &text)?;
    }
    // Anonymous kubeconfigs to probe the components' own /healthz.
    for (name, port) in [
        (CONTROLLER_MANAGER, ports.controller_manager),
        (SCHEDULER, ports.scheduler),
    ] {
        let text = kubeconfig_text(
            name,
            &format!("https://127.0.0.1:{port}"),
            &l.ca_cert(),
            None,
        );
        write_private(&l.kubeconfig(&format!("{name}-health")), &text)?;
    }
    write_private(&l.audit_policy(), AUDIT_POLICY)?;
    write_private(&l.jobset_config(), &flags::jobset_config(l, ports))?;
    write_pair(l, "kwok-serving", &ca.serving(KWOK, &[])?)?;
    // The API server's client certificate towards kubelets (kwok's server).
    write_pair(
        l,
        "apiserver-kubelet-client",
        &ca.client("kube-apiserver-kubelet-client", &[])?,
    )?;
    let log = l.kwok_log();
    if let Some(dir) = log.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    std::fs::write(
        &log,
        kwok_logs::initial_log(&log, time::OffsetDateTime::now_utc()),
    )
    .with_context(|| format!("writing {}", log.display()))?;
    let config = kwok::config(spec.kubelet)? + &kwok_logs::cluster_logs(&log);
    write_private(&l.kwok_config(), &config)?;
    if let Some(placement) = real_node {
        write_node_files(l, spec, ports, placement, &ca)?;
    }
    Ok(())
}

/// A real node's configuration files, and the kubelet's serving
/// certificate for the node's address (the API server reaches the kubelet
/// there for logs and exec, verifying it against the cluster CA).
fn write_node_files(
    l: &Layout,
    spec: &ClusterSpec,
    ports: &Ports,
    placement: &realnode::Placement,
    ca: &Ca,
) -> Result<()> {
    use realnode::NODE_NAME;
    let k8s = crate::k8s::K8sRelease::parse(&spec.k8s_minor)?;
    let d = l.node();
    std::fs::create_dir_all(d.cni_conf())
        .with_context(|| format!("creating {}", d.cni_conf().display()))?;
    write_pair(
        l,
        "kubelet-serving",
        &ca.serving(NODE_NAME, &[&placement.node_ip, NODE_NAME])?,
    )?;
    let image = realnode::image::image_name(k8s.version);
    write_private(
        &d.containerd_config(),
        &realnode::containerd_config(&d, &image),
    )?;
    write_private(
        &d.cni_conf().join("10-harness.conflist"),
        &realnode::cni_conflist(&d, &placement.pod_subnet),
    )?;
    write_private(
        &d.kubelet_config(),
        &realnode::kubelet_config(l, ports, &placement.pod_subnet),
    )
}
