//! The typed model of the HPCC chart values the harness uses (also what
//! `harness validate` decodes `manifests/hpcc/values/*.yaml` into: a key
//! outside it is reported there), and the rendering of the effective
//! values: ours, the user's, then numWorkers and the JobSet switch.

use std::path::Path;

use anyhow::{Context, Result};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::error::bad_input;
use crate::install::hpcc::spec::{HpccMode, KIND_VALUES, KIND_VALUES_PATH};
use crate::yaml::Seg;

const SMOKE_SCENARIO: &str = include_str!("../../../../suites/thor/smoke.yaml");

#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
pub struct HpccValues {
    pub global: Option<HpccGlobal>,
    pub storage: Option<HpccStorage>,
    pub dali: Option<Vec<HpccDali>>,
    pub sasha: Option<HpccSasha>,
    pub roxie: Option<Vec<HpccRoxie>>,
    pub eclagent: Option<Vec<HpccEclAgent>>,
    pub eclccserver: Option<Vec<HpccEclccServer>>,
    pub esp: Option<Vec<HpccEsp>>,
    pub thor: Option<Vec<HpccThor>>,
}

#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct HpccGlobal {
    pub omit_resources: Option<bool>,
    pub image: Option<HpccImage>,
}

#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct HpccImage {
    pub version: Option<String>,
    pub root: Option<String>,
    pub name: Option<String>,
    pub pull_policy: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
pub struct HpccStorage {
    pub planes: Vec<HpccPlane>,
}

#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct HpccPlane {
    pub name: String,
    pub category: String,
    pub prefix: String,
    pub storage_class: Option<String>,
    pub storage_size: Option<String>,
    pub storage_mode: Option<String>,
    pub pvc: Option<String>,
    pub host_path: Option<String>,
    pub force_permissions: Option<bool>,
    pub disabled: Option<bool>,
}

#[derive(Debug, Clone, Deserialize, PartialEq)]
pub struct HpccDali {
    pub name: String,
    pub auth: Option<String>,
    pub disabled: Option<bool>,
}

#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
pub struct HpccSasha {
    pub disabled: Option<bool>,
}

#[derive(Debug, Clone, Deserialize, PartialEq)]
pub struct HpccRoxie {
    pub name: String,
    pub prefix: Option<String>,
    pub disabled: Option<bool>,
}

#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct HpccEclAgent {
    pub name: String,
    pub replicas: Option<u32>,
    pub max_active: Option<u32>,
    pub prefix: Option<String>,
    #[serde(rename = "type")]
    pub type_: Option<String>,
    pub use_child_processes: Option<bool>,
    pub disabled: Option<bool>,
}

#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct HpccEclccServer {
    pub name: String,
    pub replicas: Option<u32>,
    pub max_active: Option<u32>,
    pub use_child_processes: Option<bool>,
    pub disabled: Option<bool>,
}

#[derive(Debug, Clone, Deserialize, PartialEq)]
pub struct HpccEsp {
    pub name: String,
    pub application: String,
    pub auth: Option<String>,
    pub replicas: Option<u32>,
    pub service: Option<HpccEspService>,
    pub disabled: Option<bool>,
}

#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct HpccEspService {
    pub port: Option<u16>,
    pub service_port: Option<u16>,
    pub visibility: Option<String>,
}

#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct HpccThor {
    pub name: String,
    pub prefix: Option<String>,
    pub num_workers: u32,
    pub num_workers_per_pod: Option<u32>,
    pub max_jobs: u32,
    pub max_graphs: u32,
    pub jobset: Option<HpccThorJobset>,
    pub disabled: Option<bool>,
}

#[derive(Debug, Clone, Deserialize, PartialEq)]
pub struct HpccThorJobset {
    pub enabled: bool,
}

/// Plane categories the chart accepts (values.schema.json).
pub const PLANE_CATEGORIES: &[&str] = &[
    "data", "lz", "dali", "sasha", "dll", "spill", "temp", "git", "remote", "debug",
];
/// Access modes a plane's PVC may ask for.
pub const STORAGE_MODES: &[&str] = &["ReadWriteOnce", "ReadWriteOncePod", "ReadWriteMany"];
/// Service visibilities of the chart's default `global.visibilities`.
pub const VISIBILITIES: &[&str] = &["cluster", "local", "global"];

pub(super) fn on(disabled: Option<bool>) -> bool {
    !disabled.unwrap_or(false)
}

impl HpccValues {
    pub fn thors(&self) -> Vec<&HpccThor> {
        self.thor
            .iter()
            .flatten()
            .filter(|t| on(t.disabled))
            .collect()
    }

    /// The Deployments the chart makes for the enabled components the
    /// harness waits for, by component.
    pub fn deployments(&self) -> Vec<(String, &'static str)> {
        let mut out = Vec::new();
        for d in self.dali.iter().flatten().filter(|d| on(d.disabled)) {
            out.push((d.name.clone(), "dali"));
        }
        for e in self.esp.iter().flatten().filter(|e| on(e.disabled)) {
            out.push((e.name.clone(), "esp"));
        }
        for e in self.eclccserver.iter().flatten().filter(|e| on(e.disabled)) {
            out.push((e.name.clone(), "eclccserver"));
        }
        for e in self.eclagent.iter().flatten().filter(|e| on(e.disabled)) {
            out.push((e.name.clone(), "eclagent"));
        }
        for t in self.thors() {
            out.push((format!("{}-eclagent", t.name), "thor eclagent"));
            out.push((format!("{}-thoragent", t.name), "thoragent"));
        }
        out
    }

    /// Semantic problems as (field path, message).
    pub fn problems(&self) -> Vec<(Vec<Seg>, String)> {
        let mut out = Vec::new();
        let planes: Vec<&HpccPlane> = self.storage.iter().flat_map(|s| s.planes.iter()).collect();
        plane_problems(&planes, &mut out);
        self.engine_plane_problems(&planes, &mut out);
        self.thor_problems(&mut out);
        self.esp_problems(&mut out);
        for (name, component) in self.deployments() {
            if let Err(e) = crate::k8s::names::dns1123_label(&name) {
                out.push((vec![], format!("{component} Deployment name {name:?}: {e}")));
            }
        }
        out
    }

    /// The dali, dll and data planes Thor and the ECL agents need, when
    /// storage is given and an engine is enabled.
    fn engine_plane_problems(&self, planes: &[&HpccPlane], out: &mut Vec<(Vec<Seg>, String)>) {
        let has_engine =
            !self.thors().is_empty() || self.eclagent.iter().flatten().any(|e| on(e.disabled));
        if self.storage.is_some() && has_engine {
            for cat in ["dali", "dll", "data"] {
                if !planes.iter().any(|p| p.category == cat && on(p.disabled)) {
                    out.push((
                        vec![key("storage"), key("planes")],
                        format!("no enabled {cat:?} plane: Thor and the ECL agents need dali, dll and data planes"),
                    ));
                }
            }
        }
    }

    /// Exactly one enabled Thor, and each Thor's worker, job and graph
    /// counts.
    fn thor_problems(&self, out: &mut Vec<(Vec<Seg>, String)>) {
        match &self.thor {
            None => out.push((
                vec![],
                "no thor: the harness drives exactly one Thor".into(),
            )),
            Some(list) => {
                let enabled = list.iter().filter(|t| on(t.disabled)).count();
                if enabled != 1 {
                    out.push((
                        vec![key("thor")],
                        format!("{enabled} enabled Thor clusters; the harness drives exactly one"),
                    ));
                }
            }
        }
        for (i, t) in self.thor.iter().flatten().enumerate() {
            let at = |f: &str| vec![key("thor"), Seg::Index(i), key(f)];
            if t.num_workers == 0 {
                out.push((
                    at("numWorkers"),
                    "numWorkers must be at least 1, is 0".into(),
                ));
            }
            match t.num_workers_per_pod {
                Some(0) => out.push((at("numWorkersPerPod"), "must be at least 1, is 0".into())),
                Some(n) if t.num_workers > 0 && !t.num_workers.is_multiple_of(n) => out.push((
                    at("numWorkersPerPod"),
                    format!("{n} does not divide numWorkers {}", t.num_workers),
                )),
                _ => {}
            }
            if t.max_jobs == 0 {
                out.push((at("maxJobs"), "maxJobs must be at least 1, is 0".into()));
            }
            if t.max_graphs == 0 {
                out.push((at("maxGraphs"), "maxGraphs must be at least 1, is 0".into()));
            }
        }
    }

    /// Each ESP's service visibility, and an enabled eclwatch ESP when
    /// ESPs are given.
    fn esp_problems(&self, out: &mut Vec<(Vec<Seg>, String)>) {
        for (i, e) in self.esp.iter().flatten().enumerate() {
            if let Some(v) = e.service.as_ref().and_then(|s| s.visibility.as_ref())
                && !VISIBILITIES.contains(&v.as_str())
            {
                out.push((
                    vec![key("esp"), Seg::Index(i), key("service"), key("visibility")],
                    format!(
                        "unknown visibility {v:?}; one of {}",
                        VISIBILITIES.join(", ")
                    ),
                ));
            }
        }
        if self.esp.is_some()
            && !self
                .esp
                .iter()
                .flatten()
                .any(|e| e.application == "eclwatch" && on(e.disabled))
        {
            out.push((
                vec![key("esp")],
                "no enabled ESP with application eclwatch: the ECL suite submits through it".into(),
            ));
        }
    }
}

/// A key segment of a field path.
fn key(s: &str) -> Seg {
    Seg::Key(s.to_string())
}

/// Each storage plane's name (used once), category, access mode, pvc or
/// hostPath, and absolute prefix.
fn plane_problems(planes: &[&HpccPlane], out: &mut Vec<(Vec<Seg>, String)>) {
    let mut seen = std::collections::BTreeSet::new();
    for (i, p) in planes.iter().enumerate() {
        let at = |f: &str| vec![key("storage"), key("planes"), Seg::Index(i), key(f)];
        if !seen.insert(p.name.as_str()) {
            out.push((at("name"), format!("plane name {:?} is used twice", p.name)));
        }
        if !PLANE_CATEGORIES.contains(&p.category.as_str()) {
            out.push((
                at("category"),
                format!(
                    "unknown plane category {:?}; one of {}",
                    p.category,
                    PLANE_CATEGORIES.join(", ")
                ),
            ));
        }
        if let Some(m) = &p.storage_mode
            && !STORAGE_MODES.contains(&m.as_str())
        {
            out.push((
                at("storageMode"),
                format!(
                    "unknown access mode {m:?}; one of {}",
                    STORAGE_MODES.join(", ")
                ),
            ));
        }
        if p.pvc.is_some() && p.host_path.is_some() {
            out.push((
                at("hostPath"),
                "a plane has a pvc or a hostPath, not both".into(),
            ));
        }
        if !p.prefix.starts_with('/') {
            out.push((
                at("prefix"),
                format!("{:?} is not an absolute path", p.prefix),
            ));
        }
    }
}

/// Helm's merge of a values file over another: maps merge key by key,
/// anything else (lists included) replaces, and `null` deletes the key.
pub fn merge_values(base: &mut Value, over: &Value) {
    match (base, over) {
        (Value::Object(b), Value::Object(o)) => {
            for (k, v) in o {
                if v.is_null() {
                    b.remove(k);
                } else if let Some(existing) = b.get_mut(k)
                    && existing.is_object()
                    && v.is_object()
                {
                    merge_values(existing, v);
                } else {
                    b.insert(k.clone(), v.clone());
                }
            }
        }
        (b, o) => *b = o.clone(),
    }
}

/// Thor's numWorkers when --hpcc-workers is not given and the user's values
/// set none: suites/thor/smoke.yaml's.
pub fn default_workers() -> Result<u32> {
    let s: crate::workload::thor::scenario::ThorScenario =
        serde_saphyr::from_str(SMOKE_SCENARIO)
            .context("suites/thor/smoke.yaml (embedded) is not a Thor scenario")?;
    Ok(s.thor.num_workers)
}

fn parse_values(text: &str, origin: &str) -> Result<Value> {
    let v: Value = serde_saphyr::from_str(text)
        .map_err(|e| bad_input(format!("{origin}: not a YAML values file: {e}")))?;
    match v {
        Value::Null => Ok(json!({})),
        Value::Object(_) => Ok(v),
        _ => Err(bad_input(format!(
            "{origin}: a values file must be a mapping"
        ))),
    }
}

/// The effective values: ours, the user's file (path, text), then
/// numWorkers and the JobSet switch. Returns the values and numWorkers.
pub fn render_values(
    mode: HpccMode,
    user: Option<(&Path, &str)>,
    workers: Option<u32>,
) -> Result<(Value, u32)> {
    let mut v = parse_values(KIND_VALUES, KIND_VALUES_PATH)?;
    let mut user_workers = None;
    if let Some((path, text)) = user {
        let origin = path.display().to_string();
        let u = parse_values(text, &origin)?;
        if let Some(n) = u.pointer("/thor/0/numWorkers") {
            user_workers = Some(n.as_u64().and_then(|n| u32::try_from(n).ok()).ok_or_else(
                || {
                    bad_input(format!(
                        "{origin}: thor[0].numWorkers {n} is not a whole number"
                    ))
                },
            )?);
        }
        merge_values(&mut v, &u);
    }
    let n = match (workers, user_workers) {
        (Some(n), _) | (None, Some(n)) => n,
        (None, None) => default_workers()?,
    };
    if n == 0 {
        return Err(bad_input("Thor numWorkers must be at least 1, is 0"));
    }
    let thors = v
        .get_mut("thor")
        .and_then(Value::as_array_mut)
        .ok_or_else(|| bad_input("the effective values have no thor list"))?;
    if thors.len() != 1 {
        return Err(bad_input(format!(
            "the effective values define {} Thor clusters; the harness drives exactly one",
            thors.len()
        )));
    }
    let thor = thors[0]
        .as_object_mut()
        .ok_or_else(|| bad_input("thor[0] is not a mapping"))?;
    thor.insert("numWorkers".into(), json!(n));
    match mode {
        HpccMode::Jobset => {
            let js = thor.entry("jobset").or_insert_with(|| json!({}));
            if !js.is_object() {
                *js = json!({});
            }
            js["enabled"] = json!(true);
        }
        HpccMode::Baseline => {
            // A user file cannot turn JobSet on behind the mode's back.
            if thor.get("jobset").and_then(|j| j.get("enabled")) == Some(&json!(true)) {
                return Err(bad_input(
                    "thor[0].jobset.enabled is true in --hpcc-values but the mode is baseline; use --hpcc jobset",
                ));
            }
        }
    }
    // The keys we rely on must still make sense after the user's merge.
    let typed: HpccValues = serde_json::from_value(v.clone()).map_err(|e| {
        bad_input(format!(
            "the effective HPCC values do not fit the chart: {e}"
        ))
    })?;
    let problems: Vec<String> = typed
        .problems()
        .into_iter()
        .map(|(path, msg)| format!("{}: {msg}", crate::yaml::path_string(&path)))
        .collect();
    if !problems.is_empty() {
        return Err(bad_input(format!(
            "the effective HPCC values ({KIND_VALUES_PATH} + --hpcc-values + numWorkers) are not usable:\n  {}",
            problems.join("\n  ")
        )));
    }
    Ok((v, n))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::exit_code;

    fn planes(v: &Value) -> Vec<(String, String)> {
        v["storage"]["planes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| {
                (
                    p["category"].as_str().unwrap().to_string(),
                    p["storageMode"].as_str().unwrap_or("").to_string(),
                )
            })
            .collect()
    }

    #[test]
    fn baseline_values_carry_what_kind_needs() {
        let (v, n) = render_values(HpccMode::Baseline, None, None).unwrap();
        // numWorkers defaults to suites/thor/smoke.yaml's (2).
        assert_eq!(n, 2);
        assert_eq!(n, default_workers().unwrap());
        assert_eq!(v["thor"].as_array().unwrap().len(), 1);
        assert_eq!(v["thor"][0]["numWorkers"], json!(2));
        assert!(v["thor"][0].get("jobset").is_none(), "{}", v["thor"][0]);
        let p = planes(&v);
        for cat in ["dali", "dll", "data", "lz", "debug"] {
            assert!(p.iter().any(|(c, _)| c == cat), "no {cat} plane in {p:?}");
        }
        assert!(p.iter().all(|(_, m)| m == "ReadWriteOnce"), "{p:?}");
        assert_eq!(v["global"]["omitResources"], json!(true));
        assert_eq!(v["roxie"], json!([]));
        assert_eq!(v["sasha"]["disabled"], json!(true));
        let esp = v["esp"].as_array().unwrap();
        assert_eq!(esp.len(), 1);
        assert_eq!(esp[0]["application"], "eclwatch");
        assert_eq!(esp[0]["service"]["visibility"], "cluster");
        assert_eq!(esp[0]["service"]["servicePort"], json!(8010));
        // What is written for helm reads back the same (empty strings stay strings).
        let text = serde_saphyr::to_string(&v).unwrap();
        let back: Value = serde_saphyr::from_str(&text).unwrap();
        assert_eq!(back, v, "{text}");
        assert_eq!(back["storage"]["planes"][0]["storageClass"], json!(""));
    }

    #[test]
    fn jobset_mode_sets_the_flag_and_only_it() {
        let (b, _) = render_values(HpccMode::Baseline, None, Some(4)).unwrap();
        let (j, n) = render_values(HpccMode::Jobset, None, Some(4)).unwrap();
        assert_eq!(n, 4);
        assert_eq!(j["thor"][0]["jobset"]["enabled"], json!(true));
        assert_eq!(j["thor"][0]["numWorkers"], json!(4));
        let mut j2 = j.clone();
        j2["thor"][0].as_object_mut().unwrap().remove("jobset");
        assert_eq!(
            b, j2,
            "jobset mode must differ from baseline only in the flag"
        );
    }

    #[test]
    fn user_values_merge_like_helm() {
        let user = "global:\n  image:\n    version: 10.8.0-rc4\nesp:\n  - name: ew\n    application: eclwatch\n    service: {servicePort: 8011, visibility: local}\nsasha: null\nthor:\n  - name: big\n    numWorkers: 3\n    maxJobs: 1\n    maxGraphs: 1\n";
        let (v, n) =
            render_values(HpccMode::Baseline, Some((Path::new("u.yaml"), user)), None).unwrap();
        // Maps merge: ours and theirs side by side.
        assert_eq!(v["global"]["image"]["version"], "10.8.0-rc4");
        assert_eq!(v["global"]["image"]["pullPolicy"], "IfNotPresent");
        assert_eq!(v["global"]["omitResources"], json!(true));
        // Lists replace.
        assert_eq!(v["esp"].as_array().unwrap().len(), 1);
        assert_eq!(v["esp"][0]["name"], "ew");
        assert_eq!(v["thor"][0]["name"], "big");
        assert!(v["thor"][0].get("prefix").is_none());
        // null deletes.
        assert!(v.get("sasha").is_none());
        // The user's numWorkers is used without --hpcc-workers ...
        assert_eq!(n, 3);
        // ... and the flag wins over it.
        let (v, n) = render_values(
            HpccMode::Baseline,
            Some((Path::new("u.yaml"), user)),
            Some(5),
        )
        .unwrap();
        assert_eq!((n, v["thor"][0]["numWorkers"].clone()), (5, json!(5)));
    }

    #[test]
    fn unusable_values_are_bad_input() {
        let e = render_values(HpccMode::Baseline, None, Some(0)).unwrap_err();
        assert_eq!(exit_code(&e), 2);
        assert!(e.to_string().contains("at least 1"), "{e}");
        let two = "thor:\n  - {name: a, numWorkers: 1, maxJobs: 1, maxGraphs: 1}\n  - {name: b, numWorkers: 1, maxJobs: 1, maxGraphs: 1}\n";
        let e = render_values(HpccMode::Baseline, Some((Path::new("two.yaml"), two)), None)
            .unwrap_err();
        assert_eq!(exit_code(&e), 2);
        assert!(e.to_string().contains("exactly one"), "{e}");
        let sneaky = "thor:\n  - {name: t, numWorkers: 1, maxJobs: 1, maxGraphs: 1, jobset: {enabled: true}}\n";
        let e = render_values(
            HpccMode::Baseline,
            Some((Path::new("s.yaml"), sneaky)),
            None,
        )
        .unwrap_err();
        assert!(e.to_string().contains("--hpcc jobset"), "{e}");
        let e = render_values(
            HpccMode::Baseline,
            Some((Path::new("bad.yaml"), "a: [")),
            None,
        )
        .unwrap_err();
        assert_eq!(exit_code(&e), 2);
        assert!(e.to_string().contains("bad.yaml"), "{e}");
        // A merge that drops the dll plane is caught before helm runs.
        let no_dll = "storage:\n  planes:\n    - {name: dali, category: dali, prefix: /d}\n    - {name: data, category: data, prefix: /x}\n";
        let e = render_values(
            HpccMode::Baseline,
            Some((Path::new("p.yaml"), no_dll)),
            None,
        )
        .unwrap_err();
        assert!(e.to_string().contains("\"dll\""), "{e}");
    }

    #[test]
    fn deployments_waited_for() {
        let (v, _) = render_values(HpccMode::Baseline, None, None).unwrap();
        let typed: HpccValues = serde_json::from_value(v).unwrap();
        let names: Vec<String> = typed.deployments().into_iter().map(|(n, _)| n).collect();
        assert_eq!(
            names,
            [
                "mydali",
                "eclwatch",
                "myeclccserver",
                "hthor",
                "thor-eclagent",
                "thor-thoragent"
            ]
        );
    }
}
