//! What a run needs against what the probe found (cluster::existing::
//! probe): each missing piece with how to provide it, the table a run
//! prints before it starts, and the refusal (exit 3, nothing created)
//! when anything is missing.

use std::fmt::Write as _;

use anyhow::Result;

use crate::cluster::existing::cluster::ExistingCluster;
use crate::cluster::existing::probe::{self, Capabilities, Needs};

/// One thing missing and how to provide it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Missing {
    pub what: String,
    pub fix: String,
}

/// `require`, then refuse a cluster that runs other workloads unless the
/// user said `--yes`: `busy(n)` says why n pods of others matter to this
/// run (None: they do not).
pub async fn require_run(
    cluster: &ExistingCluster,
    target: &crate::cluster::ExistingTarget,
    needs: &Needs,
    namespace: &str,
    busy: Option<&dyn Fn(u64) -> String>,
) -> Result<Capabilities> {
    let caps = require(cluster, needs, namespace).await?;
    if let Some(why) = busy
        && caps.other_pods > 0
        && !target.yes
    {
        return Err(crate::error::bad_input(why(caps.other_pods as u64)));
    }
    Ok(caps)
}

/// Probe `cluster` for `needs` (access checked in `namespace`), print the
/// table to stderr, and refuse (exit 3, naming each missing piece and its
/// fix) when anything is missing — before the run creates anything.
pub async fn require(
    cluster: &ExistingCluster,
    needs: &Needs,
    namespace: &str,
) -> Result<Capabilities> {
    let caps = probe::probe(cluster, needs, namespace).await?;
    eprintln!(
        "harness: cluster {} as {}:\n{}",
        cluster.opts.kubeconfig.display(),
        caps.user,
        table(&caps, needs)
    );
    let missing = missing(&caps, needs);
    if missing.is_empty() {
        return Ok(caps);
    }
    let list = |f: fn(&Missing) -> &str| {
        missing
            .iter()
            .map(|m| format!("  - {}", f(m)))
            .collect::<Vec<_>>()
            .join("\n")
    };
    Err(crate::error::env_missing(
        format!(
            "the cluster lacks what this run needs (nothing was created):\n{}",
            list(|m| &m.what)
        ),
        format!("\n{}", list(|m| &m.fix)),
    ))
}

/// What `needs` asks that `caps` lacks, each with how to provide it.
pub fn missing(caps: &Capabilities, needs: &Needs) -> Vec<Missing> {
    let mut out = Vec::new();
    let denied: Vec<&String> = caps
        .access
        .iter()
        .filter(|(_, ok)| !**ok)
        .map(|(k, _)| k)
        .collect();
    if !denied.is_empty() {
        out.push(Missing {
            what: format!(
                "{} may not: {}",
                caps.user,
                denied
                    .iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join("; ")
            ),
            fix: "use credentials bound to a ClusterRole granting these (e.g. cluster-admin on a test cluster)".into(),
        });
    }
    let mut need = |cond: bool, what: &str, fix: &str| {
        if cond {
            out.push(Missing {
                what: what.into(),
                fix: fix.into(),
            });
        }
    };
    need(
        needs.jobset && caps.jobset_versions.is_empty(),
        "the JobSet API (jobset.x-k8s.io) is not served",
        "install the JobSet controller and its CRD (kubernetes-sigs/jobset releases), or run the baseline mode only (--modes baseline)",
    );
    need(
        needs.gang_apis && caps.gang_versions.is_empty(),
        "no gang-scheduling API (scheduling.k8s.io Workload/PodGroup) is served",
        "enable the release's gang feature gates and runtime-config on the API server and scheduler (`harness up --gang` shows them), or leave out jobset-gang",
    );
    need(
        needs.kwok_nodes && caps.kwok_nodes == 0,
        "no kwok fake nodes (nodes annotated kwok.x-k8s.io/node): the harness ends Thor's pods as a kubelet would, which only kwok's nodes let it do",
        "run kwok against the cluster with fake nodes, or run on the cluster's real nodes (--real-node)",
    );
    need(
        needs.real_nodes && caps.nodes <= caps.kwok_nodes,
        "no real nodes (every node is one of kwok's): Thor's containers would have nowhere to run",
        "join a node that runs a kubelet, or run on kwok's fake nodes (without --real-node)",
    );
    need(
        needs.default_storage_class && caps.default_storage_class.is_none(),
        "no default StorageClass: HPCC's storage claims would stay Pending",
        "mark one StorageClass default (annotation storageclass.kubernetes.io/is-default-class=true)",
    );
    need(
        needs.audit_log && caps.audit_log != Some(true),
        "the API server's audit log is not readable from here: requests per client come from it",
        "pass --audit-log PATH (a self-managed cluster's log at Metadata level, as manifests/audit-policy.yaml)",
    );
    need(
        needs.apf && caps.apiservers > 1,
        &format!(
            "the cluster runs {} API servers and /metrics answers from one of them: per-FlowSchema counts would miss the others' requests",
            caps.apiservers
        ),
        "use --attribution audit with the servers' audit logs, or a cluster with one API server",
    );
    need(
        caps.etcd_metrics == Some(false),
        "--etcd-metrics-url was given but does not answer",
        "check the URL and --etcd-cert/--etcd-key/--etcd-ca, or leave it out (etcd figures are then not measured)",
    );
    out
}

/// The probe as a table: what was found, and whether this run needs it.
pub fn table(caps: &Capabilities, needs: &Needs) -> String {
    let mut s = String::new();
    let yes = |b: bool| if b { "yes" } else { "NO" };
    let versions = |v: &[String]| match v.is_empty() {
        true => "not served".to_string(),
        false => v.join(", "),
    };
    let _ = writeln!(
        s,
        "| capability | found | this run needs it |\n|---|---|---|"
    );
    let mut row = |what: &str, found: String, needed: bool| {
        let _ = writeln!(
            s,
            "| {what} | {found} | {} |",
            if needed { "yes" } else { "—" }
        );
    };
    row("server version", caps.server_version.clone(), false);
    row("credentials", caps.user.clone(), true);
    for (label, ok) in &caps.access {
        row(&format!("may {label}"), yes(*ok).into(), true);
    }
    row("JobSet API", versions(&caps.jobset_versions), needs.jobset);
    row("gang APIs", versions(&caps.gang_versions), needs.gang_apis);
    row("Kueue API", versions(&caps.kueue_versions), false);
    row(
        "nodes (kwok fake)",
        format!(
            "{} ({}), {} pods allocatable",
            caps.nodes, caps.kwok_nodes, caps.allocatable_pods
        ),
        needs.kwok_nodes || needs.real_nodes,
    );
    row(
        "default StorageClass",
        caps.default_storage_class
            .clone()
            .unwrap_or_else(|| "none".into()),
        needs.default_storage_class,
    );
    row(
        "pods of other workloads",
        caps.other_pods.to_string(),
        false,
    );
    let asked = |v: Option<bool>, how: &str| match v {
        None => format!("not asked ({how})"),
        Some(b) => yes(b).to_string(),
    };
    row(
        "etcd metrics",
        asked(caps.etcd_metrics, "--etcd-metrics-url"),
        false,
    );
    row(
        "audit log readable",
        asked(caps.audit_log, "--audit-log"),
        needs.audit_log,
    );
    row(
        "API servers (identity leases)",
        match caps.apiservers {
            0 => "unknown".into(),
            n => n.to_string(),
        },
        needs.apf,
    );
    row(
        "requests per client from",
        match (needs.apf, needs.audit_log) {
            (true, _) => "APF FlowSchema counts (--attribution apf)".into(),
            (false, true) => "the audit log".into(),
            (false, false) => "HPCC's kubectl, client-side (--attribution client)".into(),
        },
        true,
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::existing::probe::sample;

    #[test]
    fn missing_names_each_lack_and_its_fix() {
        let needs = Needs {
            jobset: true,
            gang_apis: true,
            kwok_nodes: true,
            default_storage_class: true,
            audit_log: true,
            ..Default::default()
        };
        let m = missing(&sample(), &needs);
        let whats: Vec<&str> = m.iter().map(|x| x.what.as_str()).collect();
        assert_eq!(m.len(), 2, "{whats:?}");
        assert!(
            whats[0].contains("alice may not: get /metrics"),
            "{whats:?}"
        );
        assert!(whats[1].contains("gang-scheduling API"), "{whats:?}");
        assert!(m.iter().all(|x| !x.fix.is_empty()));
        let mut bare = sample();
        bare.access.clear();
        bare.kwok_nodes = 0;
        bare.default_storage_class = None;
        bare.audit_log = None;
        bare.jobset_versions.clear();
        bare.etcd_metrics = Some(false);
        assert_eq!(missing(&bare, &needs).len(), 6);
        assert!(
            missing(&bare, &Needs::default()).len() == 1,
            "etcd asked for and dead"
        );
    }

    #[test]
    fn a_real_node_run_needs_a_node_that_is_not_kwoks() {
        let needs = Needs {
            real_nodes: true,
            ..Default::default()
        };
        let mut c = sample();
        c.nodes = 3;
        c.kwok_nodes = 3;
        let no_real = |c: &Capabilities| {
            missing(c, &needs)
                .iter()
                .filter(|m| m.what.contains("no real nodes"))
                .count()
        };
        assert_eq!(no_real(&c), 1);
        c.nodes = 4;
        assert_eq!(no_real(&c), 0);
    }

    #[test]
    fn the_table_marks_what_this_run_needs() {
        let t = table(
            &sample(),
            &Needs {
                audit_log: true,
                ..Default::default()
            },
        );
        assert!(t.contains("| may get /metrics | NO | yes |"), "{t}");
        assert!(t.contains("| audit log readable | yes | yes |"), "{t}");
        assert!(
            t.contains("| etcd metrics | not asked (--etcd-metrics-url) | — |"),
            "{t}"
        );
        assert!(t.contains("| gang APIs | not served | — |"), "{t}");
    }
}
