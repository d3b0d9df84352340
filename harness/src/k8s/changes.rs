//! What one minor changes against another in the facts tables
//! (harness/data/k8s/, generated from the releases' sources): feature
//! gates added, removed or moved in stage or default, and API
//! group/versions served or no longer served. A part of the book's
//! "what changes in 1.38" page (`harness report changes`).

use anyhow::Result;

use crate::error::bad_input;
use crate::k8s::facts::{Facts, Gate, for_minor};
use crate::k8s::release::K8sRelease;

/// One gate whose existence, stage or default differs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GateChange {
    pub name: String,
    pub from: Option<Gate>,
    pub to: Option<Gate>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FactsChanges {
    pub from: String,
    pub to: String,
    pub gates: Vec<GateChange>,
    pub apis_added: Vec<String>,
    pub apis_removed: Vec<String>,
}

fn facts(minor: &str) -> Result<&'static Facts> {
    for_minor(minor).ok_or_else(|| {
        bad_input(format!(
            "no facts table for Kubernetes {minor} (harness/data/k8s/ has {})",
            crate::k8s::facts::minors().join(", ")
        ))
    })
}

/// The differences from `from`'s table to `to`'s.
pub fn between(from: &str, to: &str) -> Result<FactsChanges> {
    let (a, b) = (facts(from)?, facts(to)?);
    let mut names: Vec<&String> = a
        .feature_gates
        .keys()
        .chain(b.feature_gates.keys())
        .collect();
    names.sort();
    names.dedup();
    let gates = names
        .into_iter()
        .filter_map(|n| {
            let (x, y) = (a.gate(n).cloned(), b.gate(n).cloned());
            (x != y).then(|| GateChange {
                name: n.clone(),
                from: x,
                to: y,
            })
        })
        .collect();
    let only = |l: &Facts, r: &Facts| -> Vec<String> {
        l.api_versions
            .iter()
            .filter(|v| !r.api_versions.contains(v))
            .cloned()
            .collect()
    };
    Ok(FactsChanges {
        from: a.kubernetes_version.clone(),
        to: b.kubernetes_version.clone(),
        gates,
        apis_added: only(b, a),
        apis_removed: only(a, b),
    })
}

/// Gates that belong to gang scheduling and its Job integration: the
/// ones the harness's gang profiles turn on, and the Workload API's and
/// PodGroups' own (KEP-4671 and the KEPs built on it).
fn is_gang_gate(name: &str, releases: &[K8sRelease]) -> bool {
    name.starts_with("Workload")
        || name.ends_with("Workload")
        || name.contains("WorkloadScheduling")
        || name.contains("WorkloadAware")
        || name.contains("PodGroup")
        || releases
            .iter()
            .any(|r| r.job_gang_feature_gates().contains_key(name))
}

fn gate_text(g: &Option<Gate>) -> String {
    match g {
        None => "— (no such gate)".into(),
        Some(g) => format!(
            "{} ({})",
            g.stage.as_deref().unwrap_or("?").to_lowercase(),
            match g.default {
                Some(true) => "on by default",
                Some(false) => "off by default",
                None => "default unknown",
            }
        ),
    }
}

/// The gate and API tables in Markdown (gang scheduling's gates first).
pub fn markdown(c: &FactsChanges, releases: &[K8sRelease]) -> String {
    let mut out = String::new();
    let (gang, other): (Vec<&GateChange>, Vec<&GateChange>) = c
        .gates
        .iter()
        .partition(|g| is_gang_gate(&g.name, releases));
    for (title, rows) in [("Gang scheduling gates", gang), ("Other gates", other)] {
        out.push_str(&format!("### {title} ({} changed)\n\n", rows.len()));
        if rows.is_empty() {
            out.push_str("None changed.\n\n");
            continue;
        }
        out.push_str(&format!(
            "| gate | v{} | v{} |\n|---|---|---|\n",
            c.from, c.to
        ));
        for g in rows {
            out.push_str(&format!(
                "| {} | {} | {} |\n",
                g.name,
                gate_text(&g.from),
                gate_text(&g.to)
            ));
        }
        out.push('\n');
    }
    out.push_str("### API group/versions\n\n");
    let list = |v: &[String]| {
        if v.is_empty() {
            "none".to_string()
        } else {
            v.iter()
                .map(|x| format!("`{x}`"))
                .collect::<Vec<_>>()
                .join(", ")
        }
    };
    out.push_str(&format!(
        "- served by v{} and not v{}: {}\n- no longer served: {}\n\n",
        c.to,
        c.from,
        list(&c.apis_added),
        list(&c.apis_removed)
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tables_of_137_and_138_differ_where_the_sources_do() {
        let c = between("1.37", "1.38").unwrap();
        assert_eq!(
            (c.from.as_str(), c.to.as_str()),
            ("1.37.1", "1.38.0-beta.0")
        );
        let cpg = c
            .gates
            .iter()
            .find(|g| g.name == "CompositePodGroup")
            .unwrap();
        assert_eq!(cpg.from.as_ref().unwrap().stage.as_deref(), Some("ALPHA"));
        assert_eq!(cpg.to.as_ref().unwrap().stage.as_deref(), Some("BETA"));
        // Unchanged gates are not listed.
        assert!(!c.gates.iter().any(|g| g.name == "GenericWorkload"));
        assert!(
            c.apis_added
                .contains(&"authorization.k8s.io/v1alpha1".to_string())
        );
        let md = markdown(&c, crate::k8s::release::K8S_RELEASES);
        let gang = md.split("### Other gates").next().unwrap();
        assert!(
            gang.contains("| CompositePodGroup | alpha (off by default) | beta (off by default) |"),
            "{md}"
        );
        assert!(!gang.contains("NodeSwap"), "{gang}");
        assert!(
            md.contains("| NodeSwap | ga (on by default) | — (no such gate) |"),
            "{md}"
        );
        assert!(!gang.contains("KubeAPIServerWorkloadsTrust"), "{gang}");
        let e = between("1.37", "1.99").unwrap_err();
        assert_eq!(crate::error::exit_code(&e), 2);
    }
}
