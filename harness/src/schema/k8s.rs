//! Kubernetes documents: decode each into its typed model (k8s-openapi
//! for built-in kinds, ours for the rest), then check names and labels.

use k8s_openapi::Resource;
use serde_json::Value;

use crate::k8s::names;
use crate::schema::finding::Finding;
use crate::schema::models;
use crate::schema::typed::{Ctx, decode};
use crate::yaml::Seg;

fn key(k: &str) -> Seg {
    Seg::Key(k.to_string())
}

/// Decode with a k8s-openapi type, if (apiVersion, kind) is one of them.
fn builtin(ctx: &Ctx<'_>, v: &Value, api_version: &str, kind: &str) -> Option<Vec<Finding>> {
    macro_rules! try_types {
        ($($t:ty),* $(,)?) => {
            $(
                if api_version == <$t as Resource>::API_VERSION && kind == <$t as Resource>::KIND {
                    let what = format!("{api_version} {kind}");
                    return Some(decode::<$t>(ctx, v, &what).1);
                }
            )*
        };
    }
    use k8s_openapi::api::{
        admissionregistration::v1 as adm, apps::v1 as apps, batch::v1 as batch, core::v1 as core,
    };
    use k8s_openapi::api::{
        networking::v1 as net, rbac::v1 as rbac, scheduling::v1 as sched,
        scheduling::v1beta1 as sched_b,
    };
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1 as ext;
    try_types!(
        batch::Job,
        batch::CronJob,
        core::Pod,
        core::ConfigMap,
        core::Secret,
        core::Service,
        core::ServiceAccount,
        core::Namespace,
        core::Node,
        core::PersistentVolumeClaim,
        net::NetworkPolicy,
        rbac::Role,
        rbac::RoleBinding,
        rbac::ClusterRole,
        rbac::ClusterRoleBinding,
        apps::Deployment,
        apps::StatefulSet,
        apps::DaemonSet,
        sched::PriorityClass,
        ext::CustomResourceDefinition,
        adm::MutatingWebhookConfiguration,
        adm::ValidatingWebhookConfiguration,
        sched_b::Workload,
        sched_b::PodGroup,
    );
    None
}

/// Check one document already known to be a mapping.
pub fn check_document(ctx: &Ctx<'_>, v: &Value) -> Vec<Finding> {
    let api_version = v["apiVersion"].as_str().unwrap_or_default();
    let kind = v["kind"].as_str().unwrap_or_default();
    if api_version.is_empty() || kind.is_empty() {
        return vec![ctx.finding(
            &[],
            "a Kubernetes document needs string fields apiVersion and kind",
        )];
    }
    let mut findings = if let Some(f) = builtin(ctx, v, api_version, kind) {
        f
    } else {
        match (api_version, kind) {
            ("jobset.x-k8s.io/v1alpha2", "JobSet") => {
                let (js, mut f) =
                    decode::<models::JobSet>(ctx, v, "jobset.x-k8s.io/v1alpha2 JobSet");
                if let Some(js) = js {
                    f.extend(check_jobset(ctx, &js));
                }
                f
            }
            ("scheduling.k8s.io/v1alpha2", "Workload") => {
                let (w, mut f) = decode::<models::WorkloadV1alpha2>(
                    ctx,
                    v,
                    "scheduling.k8s.io/v1alpha2 Workload",
                );
                if let Some(w) = w {
                    f.extend(check_workload(ctx, &w));
                }
                f
            }
            ("scheduling.k8s.io/v1alpha2", "PodGroup") => {
                let (pg, mut f) = decode::<models::PodGroupV1alpha2>(
                    ctx,
                    v,
                    "scheduling.k8s.io/v1alpha2 PodGroup",
                );
                if let Some(pg) = pg
                    && let Some(g) = &pg.spec.scheduling_policy.gang
                    && g.min_count < 1
                {
                    f.push(ctx.finding(
                        &[
                            key("spec"),
                            key("schedulingPolicy"),
                            key("gang"),
                            key("minCount"),
                        ],
                        format!("gang minCount must be at least 1, is {}", g.min_count),
                    ));
                }
                f
            }
            ("kwok.x-k8s.io/v1alpha1", "Stage") => {
                let (st, mut f) =
                    decode::<models::KwokStage>(ctx, v, "kwok.x-k8s.io/v1alpha1 Stage");
                if let Some(st) = st
                    && st.spec.next.is_none()
                    && st.spec.steps.is_empty()
                {
                    f.push(ctx.finding(&[key("spec")], "a Stage needs `next` or `steps`"));
                }
                f
            }
            ("audit.k8s.io/v1", "Policy") => {
                let (p, mut f) = decode::<models::AuditPolicy>(ctx, v, "audit.k8s.io/v1 Policy");
                if let Some(p) = p {
                    f.extend(check_audit_policy(ctx, &p));
                }
                f
            }
            _ => {
                return vec![ctx.finding(
                    &[key("kind")],
                    format!("no model for {api_version} {kind}: the validator cannot check it"),
                )];
            }
        }
    };
    findings.extend(check_metadata(ctx, v, kind));
    findings
}

/// Kinds whose names become DNS labels (≤ 63) or label values.
const LABEL_NAMED: &[&str] = &["Namespace", "Service", "Job", "JobSet", "CronJob"];
const RBAC_KINDS: &[&str] = &["Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding"];

pub fn check_metadata(ctx: &Ctx<'_>, v: &Value, kind: &str) -> Vec<Finding> {
    let mut out = Vec::new();
    let meta = &v["metadata"];
    match meta["name"].as_str() {
        Some(name) => {
            let check = if LABEL_NAMED.contains(&kind) {
                names::dns1123_label(name)
            } else if RBAC_KINDS.contains(&kind) {
                if name.is_empty() || name.contains('/') || name.contains('%') {
                    Err(format!("{name:?} is not a valid {kind} name"))
                } else {
                    Ok(())
                }
            } else {
                names::dns1123_subdomain(name)
            };
            if let Err(e) = check {
                out.push(ctx.finding(&[key("metadata"), key("name")], e));
            }
        }
        None => {
            if meta["generateName"].as_str().is_none() && kind != "Policy" {
                out.push(ctx.finding(&[key("metadata")], "metadata.name is missing"));
            }
        }
    }
    out.extend(check_labels(ctx, meta, &[key("metadata")]));
    out
}

/// Label keys and values under `meta.labels`.
pub fn check_labels(ctx: &Ctx<'_>, meta: &Value, at: &[Seg]) -> Vec<Finding> {
    let mut out = Vec::new();
    if let Some(labels) = meta["labels"].as_object() {
        for (k, val) in labels {
            let mut path = at.to_vec();
            path.extend([key("labels"), key(k)]);
            if let Err(e) = names::label_key(k) {
                out.push(ctx.finding(&path, e));
            }
            match val.as_str() {
                Some(s) => {
                    if let Err(e) = names::label_value(s) {
                        out.push(ctx.finding(&path, e));
                    }
                }
                None => out.push(ctx.finding(&path, "a label value must be a string")),
            }
        }
    }
    out
}

pub fn check_jobset(ctx: &Ctx<'_>, js: &models::JobSet) -> Vec<Finding> {
    let mut out = Vec::new();
    let name = js.metadata.name.clone().unwrap_or_default();
    let mut seen = std::collections::BTreeSet::new();
    for (i, rj) in js.spec.replicated_jobs.iter().enumerate() {
        let at = [
            key("spec"),
            key("replicatedJobs"),
            Seg::Index(i),
            key("name"),
        ];
        if let Err(e) = names::dns1123_label(&rj.name) {
            out.push(ctx.finding(&at, e));
        }
        if !seen.insert(rj.name.clone()) {
            out.push(ctx.finding(
                &at,
                format!("replicatedJob name {:?} is used twice", rj.name),
            ));
        }
        // The controller names child Jobs <jobset>-<replicatedJob>-<index>;
        // a Job name is also a label value, so at most 63 characters.
        let replicas = rj.replicas.unwrap_or(1).max(1);
        let job = format!("{name}-{}-{}", rj.name, replicas - 1);
        if let Err(e) = names::dns1123_label(&job) {
            out.push(ctx.finding(&at, format!("child Job name {job:?} would be invalid: {e}")));
        }
    }
    if let Some(sp) = &js.spec.success_policy {
        if !matches!(sp.operator.as_str(), "All" | "Any") {
            out.push(ctx.finding(
                &[key("spec"), key("successPolicy"), key("operator")],
                format!("operator {:?} is not All or Any", sp.operator),
            ));
        }
        for (i, t) in sp.target_replicated_jobs.iter().flatten().enumerate() {
            if !seen.contains(t) {
                out.push(ctx.finding(
                    &[
                        key("spec"),
                        key("successPolicy"),
                        key("targetReplicatedJobs"),
                        Seg::Index(i),
                    ],
                    format!("{t:?} is not a replicatedJob of this JobSet"),
                ));
            }
        }
    }
    out
}

pub fn check_workload(ctx: &Ctx<'_>, w: &models::WorkloadV1alpha2) -> Vec<Finding> {
    let mut out = Vec::new();
    let templates = &w.spec.pod_group_templates;
    if templates.is_empty() || templates.len() > 8 {
        out.push(ctx.finding(
            &[key("spec"), key("podGroupTemplates")],
            format!(
                "a Workload has 1–8 podGroupTemplates, this one {}",
                templates.len()
            ),
        ));
    }
    for (i, t) in templates.iter().enumerate() {
        if let Some(g) = &t.scheduling_policy.gang
            && g.min_count < 1
        {
            out.push(ctx.finding(
                &[
                    key("spec"),
                    key("podGroupTemplates"),
                    Seg::Index(i),
                    key("schedulingPolicy"),
                    key("gang"),
                    key("minCount"),
                ],
                format!("gang minCount must be at least 1, is {}", g.min_count),
            ));
        }
        if t.scheduling_policy.gang.is_some() == t.scheduling_policy.basic.is_some() {
            out.push(ctx.finding(
                &[
                    key("spec"),
                    key("podGroupTemplates"),
                    Seg::Index(i),
                    key("schedulingPolicy"),
                ],
                "set exactly one of basic and gang",
            ));
        }
    }
    out
}

pub fn check_audit_policy(ctx: &Ctx<'_>, p: &models::AuditPolicy) -> Vec<Finding> {
    let mut out = Vec::new();
    let stage_check = |stages: &Option<Vec<String>>, at: Vec<Seg>, out: &mut Vec<Finding>| {
        for (i, s) in stages.iter().flatten().enumerate() {
            if !models::AUDIT_STAGES.contains(&s.as_str()) {
                let mut path = at.clone();
                path.push(Seg::Index(i));
                out.push(ctx.finding(
                    &path,
                    format!(
                        "unknown audit stage {s:?}; one of {}",
                        models::AUDIT_STAGES.join(", ")
                    ),
                ));
            }
        }
    };
    stage_check(&p.omit_stages, vec![key("omitStages")], &mut out);
    if p.rules.is_empty() {
        out.push(ctx.finding(&[key("rules")], "an audit policy needs at least one rule"));
    }
    for (i, r) in p.rules.iter().enumerate() {
        if !models::AUDIT_LEVELS.contains(&r.level.as_str()) {
            out.push(ctx.finding(
                &[key("rules"), Seg::Index(i), key("level")],
                format!(
                    "unknown audit level {:?}; one of {}",
                    r.level,
                    models::AUDIT_LEVELS.join(", ")
                ),
            ));
        }
        stage_check(
            &r.omit_stages,
            vec![key("rules"), Seg::Index(i), key("omitStages")],
            &mut out,
        );
    }
    out
}
