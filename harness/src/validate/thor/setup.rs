//! What a Thor scenario sets up once (the chart's policies, service
//! accounts, ConfigMaps, claims) and eclccserver's compile Job, rendered
//! and checked, and what every pod names in them; and each identity's
//! Role against what its driver uses.

use std::collections::BTreeSet;

use serde_json::Value;

use crate::schema::Finding;
use crate::schema::k8s;
use crate::validate::thor::shape::{
    AGENT_POD_SUFFIX, THOR_NAME, ThorReport, at, check_pod_basics, compile_pod, ctx, expect,
    leftover, names_of, params, pod_templates, str_of, template_root, whole_file,
};
use crate::workload::thor::template::{self as tpl, Creator, ECLCCSERVER_API_USE};
use crate::workload::thor::{self, Mode, Template, ThorParams};
use crate::yaml::{self, Seg};

/// The setup and compile templates, and that every mode's pods find the
/// ServiceAccounts, ConfigMaps and claims they name in the setup.
pub fn check_setup() -> ThorReport {
    check_setup_of(&tpl::setup(), tpl::compile_job())
}

/// `check_setup` of the given setup and compile templates.
pub fn check_setup_of(setup: &[Template], compile: Template) -> ThorReport {
    let mut report = ThorReport::default();
    let p = params(2, 1, 1, THOR_NAME);
    let mut jobs: Vec<(Template, ThorParams)> = setup.iter().map(|t| (*t, p.clone())).collect();
    for k in 1..=4 {
        let job_name = format!("eclcc-myeclccserver-{AGENT_POD_SUFFIX}-{k}");
        jobs.push((
            compile,
            ThorParams {
                job_name,
                ..p.clone()
            },
        ));
    }
    for mode in Mode::ALL {
        let ts = thor::templates_for(mode, 37);
        jobs.extend(ts.into_iter().map(|t| (t, p.clone())));
    }
    let (mut objects, mut needs) = (BTreeSet::new(), Vec::new());
    for (t, p) in &jobs {
        let (root, docs) = match (template_root(t), thor::render(t, p)) {
            (Ok(root), Ok(docs)) => (root, docs),
            (r, d) => {
                report.findings.extend(r.err());
                let e = d.err().map(|e| whole_file(t, format!("{e:#}")));
                report.findings.extend(e);
                continue;
            }
        };
        let ours = matches!(t.created_by, Creator::Harness | Creator::EclccServer);
        report.renderings += usize::from(ours);
        for (i, doc) in docs.iter().enumerate() {
            let ctx = ctx(t, &root, i);
            let mut f = vec![];
            if ours {
                report.documents += 1;
                f.extend(k8s::check_document(&ctx, doc));
                let left = leftover(doc).map(|s| format!("a placeholder is left: {s:?}"));
                f.extend(left.map(|msg| ctx.finding(&[], msg)));
            }
            if t.created_by == Creator::Harness {
                let name = str_of(&doc["metadata"]["name"]).to_string();
                objects.insert((str_of(&doc["kind"]).to_string(), name));
            }
            for (k, text) in doc["data"].as_object().into_iter().flatten() {
                if let Err(e) = yaml::parse(str_of(text)) {
                    let path = [Seg::Key("data".into()), Seg::Key(k.clone())];
                    f.push(ctx.finding(&path, format!("embedded {k} is not YAML: {}", e.message)));
                }
            }
            for (path, pod) in pod_templates(doc) {
                let spec = &pod["spec"];
                let sa = str_of(&spec["serviceAccountName"]).to_string();
                needs.push((*t, "ServiceAccount", sa));
                for v in spec["volumes"].as_array().into_iter().flatten() {
                    let cm = v["configMap"]["name"].as_str();
                    needs.extend(cm.map(|n| (*t, "ConfigMap", n.to_string())));
                    let claim = v["persistentVolumeClaim"]["claimName"].as_str();
                    needs.extend(claim.map(|n| (*t, "PersistentVolumeClaim", n.to_string())));
                }
                if t.created_by != Creator::EclccServer {
                    continue;
                }
                f.extend(check_pod_basics(&ctx, &path, pod));
                if pod["metadata"]["labels"].as_object().map(|l| l.len()) != Some(8) {
                    f.push(ctx.finding(&path, "a compile pod carries the chart's 8 labels"));
                }
                if let Some((rel, msg)) = expect(pod, &compile_pod(p), &mut vec![]) {
                    let full = [path.clone(), rel].concat();
                    f.push(ctx.finding(&full, format!("the compile pod {msg}")));
                }
            }
            report.findings.extend(f);
        }
    }
    if !objects.contains(&("NetworkPolicy".into(), "default-deny-all-but-dns".into())) {
        let msg = "the setup needs the chart's default-deny-all-but-dns policy".into();
        report
            .findings
            .extend(setup.first().map(|t| whole_file(t, msg)));
    }
    for (t, kind, name) in needs {
        if !objects.contains(&(kind.to_string(), name.clone())) {
            let msg = format!("its pods need {kind} {name:?}, which the setup does not create");
            report.findings.push(whole_file(&t, msg));
        }
    }
    report.findings.sort();
    report.findings.dedup();
    report
}

/// The Role of `mode` must grant exactly what the driver uses.
pub fn check_rbac(mode: Mode) -> Vec<Finding> {
    check_rbac_template(mode, &thor::rbac(mode))
}

pub fn check_rbac_template(mode: Mode, t: &Template) -> Vec<Finding> {
    let uses = thor::api_usage(mode);
    let rules = uses.iter().map(|u| (u.group, u.resource, u.verbs));
    check_role(t, rules.collect(), mode.name(), thor::THOR_AGENT_USER)
}

/// The eclccserver identity's Role must grant exactly what its driver uses.
pub fn check_eclccserver_rbac(t: &Template) -> Vec<Finding> {
    check_role(
        t,
        ECLCCSERVER_API_USE.to_vec(),
        "eclccserver",
        tpl::ECLCCSERVER_USER,
    )
}

type Rule<'a> = (&'a str, &'a str, &'a [&'a str]);
type Grant = (String, String, String);

fn grants(g: &str, r: &str, verbs: &[&str]) -> Vec<Grant> {
    let grant = |v: &&str| (g.to_string(), r.to_string(), v.to_string());
    verbs.iter().map(grant).collect()
}

fn strs(v: &Value) -> Vec<&str> {
    v.as_array().into_iter().flatten().map(str_of).collect()
}

/// `t`'s Role grants exactly `used` and its RoleBinding binds `user`.
fn check_role(t: &Template, used: Vec<Rule<'_>>, who: &str, user: &str) -> Vec<Finding> {
    let (root, docs) = match (
        template_root(t),
        thor::render(t, &params(2, 1, 1, THOR_NAME)),
    ) {
        (Ok(root), Ok(docs)) => (root, docs),
        (r, d) => {
            let e = d.err().map(|e| whole_file(t, format!("{e:#}")));
            return r.err().into_iter().chain(e).collect();
        }
    };
    let used: BTreeSet<Grant> = used
        .into_iter()
        .flat_map(|(g, r, vs)| grants(g, r, vs))
        .collect();
    let mut out = Vec::new();
    let (mut granted, mut role_at) = (BTreeSet::new(), None);
    for (i, doc) in docs.iter().enumerate() {
        out.extend(k8s::check_document(&ctx(t, &root, i), doc));
        let bound = names_of(&doc["subjects"]);
        if doc["kind"] == "RoleBinding" && bound != [user] {
            let msg = format!("the RoleBinding binds {bound:?}, the {who} driver is user {user:?}");
            out.push(ctx(t, &root, i).finding(&at("subjects"), msg));
        }
        if doc["kind"] != "Role" {
            continue;
        }
        role_at = Some(i);
        for rule in doc["rules"].as_array().into_iter().flatten() {
            for g in strs(&rule["apiGroups"]) {
                for r in strs(&rule["resources"]) {
                    granted.extend(grants(g, r, &strs(&rule["verbs"])));
                }
            }
        }
    }
    let Some(i) = role_at else {
        return vec![whole_file(t, format!("no Role for the {who} driver"))];
    };
    let ctx = ctx(t, &root, i);
    let show = |g: &str, r: &str| {
        if g.is_empty() {
            r.to_string()
        } else {
            format!("{r}.{g}")
        }
    };
    for (g, r, v) in used.difference(&granted) {
        let what = show(g, r);
        let msg = format!("the {who} driver uses {v} on {what} but the Role does not grant it");
        out.push(ctx.finding(&at("rules"), msg));
    }
    for (g, r, v) in granted.difference(&used) {
        let what = show(g, r);
        let msg = format!("the Role grants {v} on {what}, which the {who} driver never uses");
        out.push(ctx.finding(&at("rules"), msg));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn leak(s: String) -> &'static str {
        Box::leak(s.into_boxed_str())
    }

    fn messages(r: &ThorReport) -> String {
        let ms: Vec<&str> = r.findings.iter().map(|f| f.message.as_str()).collect();
        ms.join("\n")
    }

    #[test]
    fn pods_need_what_the_setup_creates() {
        assert_eq!(messages(&check_setup()), "");
        let no_claims: Vec<Template> = tpl::setup()
            .into_iter()
            .filter(|t| !t.path.ends_with("pvcs.yaml"))
            .collect();
        let r = check_setup_of(&no_claims, tpl::compile_job());
        let m = messages(&r);
        assert!(
            m.contains("need PersistentVolumeClaim \"hpcc-debug-pvc\""),
            "{m}"
        );
        let c = tpl::compile_job();
        let grace = leak(c.text.replace(
            "      restartPolicy: Never",
            "      restartPolicy: Never\n      terminationGracePeriodSeconds: 5",
        ));
        let m = messages(&check_setup_of(
            &tpl::setup(),
            Template { text: grace, ..c },
        ));
        assert!(m.contains("the compile pod is 5"), "{m}");
    }

    #[test]
    fn eclccserver_role_is_what_its_driver_uses() {
        let real = tpl::eclccserver_rbac();
        assert_eq!(check_eclccserver_rbac(&real), vec![]);
        let text = leak(real.text.replace("\"delete\", \"watch\"", "\"delete\""));
        let f = check_eclccserver_rbac(&Template { text, ..real });
        assert_eq!(f.len(), 1, "{f:#?}");
        assert!(
            f[0].message.contains("uses watch on jobs.batch"),
            "{}",
            f[0]
        );
        let subject = "    kind: User\n    name: eclccserver";
        let text = leak(
            real.text
                .replace(subject, "    kind: User\n    name: thor-agent"),
        );
        let f = check_eclccserver_rbac(&Template { text, ..real });
        assert!(
            f.len() == 1 && f[0].message.contains("binds [\"thor-agent\"]"),
            "{f:#?}"
        );
    }
}
