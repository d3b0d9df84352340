//! Command lines of the control-plane components. Pure functions of the
//! layout, ports, version and spec, so they are unit-tested without
//! starting anything.

use std::collections::BTreeMap;

use crate::cluster::kwok::KWOK_NODE_ANNOTATION;
use crate::cluster::local::layout::{Layout, Ports};
use crate::k8s::K8sRelease;

/// "A=true,B=false" from a gate map (sorted, so command lines are stable).
pub fn join_gates(gates: &BTreeMap<String, bool>) -> String {
    gates
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",")
}

pub fn join_runtime_config(rc: &BTreeMap<String, String>) -> String {
    rc.iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",")
}

fn p(path: std::path::PathBuf) -> String {
    path.display().to_string()
}

pub fn etcd(l: &Layout, ports: &Ports) -> Vec<String> {
    let client = ports.etcd_url();
    let peer = format!("http://127.0.0.1:{}", ports.etcd_peer);
    vec![
        "--name=harness".into(),
        format!("--data-dir={}", p(l.etcd_data())),
        format!("--listen-client-urls={client}"),
        format!("--advertise-client-urls={client}"),
        format!("--listen-peer-urls={peer}"),
        format!("--initial-advertise-peer-urls={peer}"),
        format!("--initial-cluster=harness={peer}"),
        "--initial-cluster-state=new".into(),
        // 8 GiB: large benchmarks must not hit the 2 GiB default quota.
        "--quota-backend-bytes=8589934592".into(),
        "--log-level=warn".into(),
        // /debug/pprof on the client URL, for `bench thor --profile`.
        "--enable-pprof".into(),
        // fsync stays on: etcd's disk latency is part of what is measured.
    ]
}

#[derive(Debug, Clone, Default)]
pub struct Gates {
    pub feature_gates: BTreeMap<String, bool>,
    pub runtime_config: BTreeMap<String, String>,
}

pub fn apiserver(_k8s: K8sRelease, l: &Layout, ports: &Ports, g: &Gates) -> Vec<String> {
    let mut args = vec![
        format!("--etcd-servers={}", ports.etcd_url()),
        "--bind-address=127.0.0.1".into(),
        "--advertise-address=127.0.0.1".into(),
        // The default reconciler refuses a loopback advertise address; there
        // is no in-cluster client of the `kubernetes` Service here anyway.
        "--endpoint-reconciler-type=none".into(),
        format!("--secure-port={}", ports.apiserver),
        format!("--tls-cert-file={}", p(l.pki("apiserver.crt"))),
        format!("--tls-private-key-file={}", p(l.pki("apiserver.key"))),
        format!("--client-ca-file={}", p(l.ca_cert())),
        "--service-account-issuer=https://kubernetes.default.svc.cluster.local".into(),
        format!("--service-account-key-file={}", p(l.pki("sa.pub"))),
        format!("--service-account-signing-key-file={}", p(l.pki("sa.key"))),
        "--service-cluster-ip-range=10.96.0.0/16".into(),
        "--authorization-mode=Node,RBAC".into(),
        "--allow-privileged=true".into(),
        format!("--audit-policy-file={}", p(l.audit_policy())),
        format!("--audit-log-path={}", p(l.audit_log())),
        "--audit-log-format=json".into(),
        // One file for the whole run: rotation would split attribution.
        "--audit-log-maxsize=0".into(),
        // Go's pprof endpoints (the upstream default): `bench thor
        // --profile` reads them; nothing else does.
        "--profiling=true".into(),
        // Kubelets are kwok's server (`kubectl logs`): the node's
        // InternalIP, its serving certificate from our CA.
        format!("--kubelet-certificate-authority={}", p(l.ca_cert())),
        format!(
            "--kubelet-client-certificate={}",
            p(l.pki("apiserver-kubelet-client.crt"))
        ),
        format!(
            "--kubelet-client-key={}",
            p(l.pki("apiserver-kubelet-client.key"))
        ),
        "--kubelet-preferred-address-types=InternalIP".into(),
        "--v=1".into(),
    ];
    push_gates(&mut args, g);
    if !g.runtime_config.is_empty() {
        args.push(format!(
            "--runtime-config={}",
            join_runtime_config(&g.runtime_config)
        ));
    }
    args
}

fn push_gates(args: &mut Vec<String>, g: &Gates) {
    if !g.feature_gates.is_empty() {
        args.push(format!("--feature-gates={}", join_gates(&g.feature_gates)));
    }
}

/// Flags shared by the controller-manager and the scheduler: identity,
/// loopback serving with our certificate, no leader election.
fn component_base(l: &Layout, identity: &str, port: u16, serving: &str) -> Vec<String> {
    let kc = p(l.kubeconfig(identity));
    vec![
        format!("--kubeconfig={kc}"),
        format!("--authentication-kubeconfig={kc}"),
        format!("--authorization-kubeconfig={kc}"),
        "--bind-address=127.0.0.1".into(),
        format!("--secure-port={port}"),
        format!("--tls-cert-file={}", p(l.pki(&format!("{serving}.crt")))),
        format!(
            "--tls-private-key-file={}",
            p(l.pki(&format!("{serving}.key")))
        ),
        "--leader-elect=false".into(),
        "--v=1".into(),
    ]
}

pub fn controller_manager(_k8s: K8sRelease, l: &Layout, ports: &Ports, g: &Gates) -> Vec<String> {
    let mut args = component_base(
        l,
        "kube-controller-manager",
        ports.controller_manager,
        "controller-manager-serving",
    );
    args.extend([
        // Every controller acts as its own service account, so the audit
        // log attributes requests to job-controller, replicaset-controller…
        "--use-service-account-credentials=true".into(),
        format!("--service-account-private-key-file={}", p(l.pki("sa.key"))),
        format!("--root-ca-file={}", p(l.ca_cert())),
        format!("--cluster-signing-cert-file={}", p(l.ca_cert())),
        format!("--cluster-signing-key-file={}", p(l.pki("ca.key"))),
        "--service-cluster-ip-range=10.96.0.0/16".into(),
        // Storage: the controller manager's own hostPath provisioner (real
        // Kubernetes code, for single-machine clusters) serves the default
        // StorageClass `install::storage` creates, so PVCs — HPCC's planes —
        // bind here as a cloud's would. Its volumes live under /tmp.
        "--enable-hostpath-provisioner=true".into(),
        // /metrics without asking the API server (a SubjectAccessReview per
        // scrape would be the controller manager's request inside every
        // measurement window): the harness reads its client-side
        // throttling there (metrics::throttle). It listens on loopback
        // only.
        "--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics".into(),
    ]);
    push_gates(&mut args, g);
    args
}

pub fn scheduler(_k8s: K8sRelease, l: &Layout, ports: &Ports, g: &Gates) -> Vec<String> {
    let mut args = component_base(l, "kube-scheduler", ports.scheduler, "scheduler-serving");
    push_gates(&mut args, g);
    args
}

pub fn jobset(l: &Layout, ports: &Ports) -> Vec<String> {
    vec![
        format!("--kubeconfig={}", p(l.kubeconfig("jobset-controller"))),
        format!("--config={}", p(l.jobset_config())),
        format!("--metrics-bind-address=127.0.0.1:{}", ports.jobset_metrics),
        format!(
            "--health-probe-bind-address=127.0.0.1:{}",
            ports.jobset_health
        ),
        "--leader-elect=false".into(),
        "--zap-log-level=info".into(),
    ]
}

/// The JobSet controller's Configuration file: webhooks on loopback with
/// our certificate, its own certificate rotation off.
pub fn jobset_config(l: &Layout, ports: &Ports) -> String {
    let certs = p(l.jobset_cert_dir());
    format!(
        "# Generated by the harness for a local JobSet controller.\n\
         apiVersion: config.jobset.x-k8s.io/v1alpha1\n\
         kind: Configuration\n\
         leaderElection:\n  leaderElect: false\n\
         internalCertManagement:\n  enable: false\n\
         webhook:\n  host: 127.0.0.1\n  port: {}\n  certDir: {certs}\n\
         metrics:\n  bindAddress: 127.0.0.1:{}\n  certDir: {certs}\n\
         health:\n  healthProbeBindAddress: 127.0.0.1:{}\n",
        ports.jobset_webhook, ports.jobset_metrics, ports.jobset_health
    )
}

pub fn kwok(l: &Layout, ports: &Ports) -> Vec<String> {
    vec![
        format!("--kubeconfig={}", p(l.kubeconfig("kwok"))),
        format!("--config={}", p(l.kwok_config())),
        "--manage-all-nodes=false".into(),
        format!("--manage-nodes-with-annotation-selector={KWOK_NODE_ANNOTATION}=fake"),
        "--node-ip=127.0.0.1".into(),
        format!("--server-address=127.0.0.1:{}", ports.kwok),
        // The port the node stages write as the kubelet's endpoint.
        format!("--node-port={}", ports.kwok),
        format!("--tls-cert-file={}", p(l.pki("kwok-serving.crt"))),
        format!("--tls-private-key-file={}", p(l.pki("kwok-serving.key"))),
        "--node-lease-duration-seconds=40".into(),
        "--cidr=10.0.0.1/16".into(),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture() -> (Layout, Ports) {
        (
            Layout::new("/state/c1"),
            Ports::from_list(&[
                2379, 2380, 6443, 10257, 10259, 9443, 8081, 8443, 10247, 9444, 8082, 8444, 8083,
                10250, 10248,
            ]),
        )
    }

    fn has(args: &[String], flag: &str) -> bool {
        args.iter().any(|a| a == flag)
    }

    #[test]
    fn apiserver_flags_for_each_version() {
        let (l, ports) = fixture();
        for minor in ["1.36", "1.37"] {
            let k8s = K8sRelease::parse(minor).unwrap();
            let mut g = Gates::default();
            g.feature_gates.insert("GenericWorkload".into(), true);
            g.feature_gates.insert("A".into(), false);
            g.runtime_config
                .insert("scheduling.k8s.io/v1beta1".into(), "true".into());
            let args = apiserver(k8s, &l, &ports, &g);
            assert!(has(&args, "--etcd-servers=http://127.0.0.1:2379"));
            assert!(has(&args, "--bind-address=127.0.0.1"));
            assert!(has(&args, "--secure-port=6443"));
            assert!(has(&args, "--authorization-mode=Node,RBAC"));
            assert!(has(&args, "--client-ca-file=/state/c1/pki/ca.crt"));
            assert!(has(&args, "--audit-log-path=/state/c1/audit.log"));
            assert!(has(
                &args,
                "--audit-policy-file=/state/c1/audit-policy.yaml"
            ));
            assert!(has(&args, "--feature-gates=A=false,GenericWorkload=true"));
            assert!(has(
                &args,
                "--runtime-config=scheduling.k8s.io/v1beta1=true"
            ));
            let no_gates = apiserver(k8s, &l, &ports, &Gates::default());
            assert!(!no_gates.iter().any(|a| a.starts_with("--feature-gates")));
            assert!(!no_gates.iter().any(|a| a.starts_with("--runtime-config")));
        }
    }

    #[test]
    fn controllers_act_under_their_own_identities() {
        let (l, ports) = fixture();
        let k8s = K8sRelease::default_release();
        let kcm = controller_manager(k8s, &l, &ports, &Gates::default());
        assert!(has(&kcm, "--use-service-account-credentials=true"));
        assert!(has(&kcm, "--leader-elect=false"));
        assert!(has(&kcm, "--secure-port=10257"));
        assert!(has(
            &kcm,
            "--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics"
        ));
        assert!(has(
            &kcm,
            "--kubeconfig=/state/c1/kubeconfigs/kube-controller-manager.kubeconfig"
        ));
        let s = scheduler(k8s, &l, &ports, &Gates::default());
        assert!(has(&s, "--secure-port=10259"));
        assert!(has(&s, "--bind-address=127.0.0.1"));
        assert!(has(
            &s,
            "--kubeconfig=/state/c1/kubeconfigs/kube-scheduler.kubeconfig"
        ));
    }

    #[test]
    fn etcd_keeps_fsync_and_uses_loopback() {
        let (l, ports) = fixture();
        let args = etcd(&l, &ports);
        assert!(!args.iter().any(|a| a.contains("unsafe-no-fsync")));
        assert!(has(&args, "--listen-client-urls=http://127.0.0.1:2379"));
        assert!(has(&args, "--listen-peer-urls=http://127.0.0.1:2380"));
        assert!(has(&args, "--data-dir=/state/c1/etcd"));
    }

    #[test]
    fn jobset_and_kwok_bind_loopback_ports() {
        let (l, ports) = fixture();
        let cfg = jobset_config(&l, &ports);
        assert!(cfg.contains("enable: false"));
        assert!(cfg.contains("port: 9443"));
        assert!(cfg.contains("host: 127.0.0.1"));
        let j = jobset(&l, &ports);
        assert!(has(&j, "--health-probe-bind-address=127.0.0.1:8081"));
        assert!(has(&j, "--metrics-bind-address=127.0.0.1:8443"));
        let k = kwok(&l, &ports);
        assert!(has(&k, "--server-address=127.0.0.1:10247"));
        assert!(has(
            &k,
            "--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake"
        ));
    }
}
