//! Scenario files (suites/thor/*.yaml): what a Thor benchmark runs.

use std::path::Path;
use std::time::Duration;

use anyhow::Result;
use serde::Deserialize;

use crate::error::bad_input;
use crate::workload::thor::template::Mode;
use crate::yaml::Seg;

fn path(keys: &[&str]) -> Vec<Seg> {
    keys.iter().map(|k| Seg::Key(k.to_string())).collect()
}

#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ThorScenario {
    pub name: String,
    pub description: Option<String>,
    pub thor: ThorShape,
    /// Thor instances run in total.
    pub instances: u32,
    /// How long each instance's graph runs, e.g. "5s".
    pub graph_duration: String,
    pub modes: Vec<String>,
    pub cluster: ScenarioCluster,
}

#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ThorShape {
    #[serde(default = "default_thor_name")]
    pub name: String,
    pub num_workers: u32,
    #[serde(default = "one")]
    pub num_workers_per_pod: u32,
    /// Instances that run at once.
    pub max_graphs: u32,
}

fn default_thor_name() -> String {
    "thor".into()
}

fn one() -> u32 {
    1
}

#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ScenarioCluster {
    pub k8s_minor: String,
    pub nodes: u32,
    pub node_cpu: String,
    pub node_memory: String,
    #[serde(default = "default_pods")]
    pub node_pods: u32,
}

fn default_pods() -> u32 {
    110
}

/// "250ms", "5s", "2m", "1h" → Duration.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let (num, unit) = s
        .find(|c: char| !c.is_ascii_digit())
        .map(|i| s.split_at(i))
        .ok_or_else(|| format!("{s:?} has no unit (ms, s, m, h)"))?;
    let n: u64 = num
        .parse()
        .map_err(|_| format!("{s:?} does not start with a whole number"))?;
    let ms = match unit {
        "ms" => n,
        "s" => n * 1000,
        "m" => n * 60_000,
        "h" => n * 3_600_000,
        other => return Err(format!("{s:?}: unknown unit {other:?} (ms, s, m, h)")),
    };
    Ok(Duration::from_millis(ms))
}

/// 37 for "1.37"; 0 when unreadable.
fn minor_number(minor: &str) -> u32 {
    minor
        .split('.')
        .nth(1)
        .and_then(|m| m.parse().ok())
        .unwrap_or(0)
}

impl ThorScenario {
    /// Semantic problems as (field path, message).
    pub fn problems(&self) -> Vec<(Vec<Seg>, String)> {
        let mut out = Vec::new();
        let t = &self.thor;
        if t.num_workers == 0 {
            out.push((path(&["thor", "numWorkers"]), "must be at least 1".into()));
        }
        if t.num_workers_per_pod == 0 {
            out.push((
                path(&["thor", "numWorkersPerPod"]),
                "must be at least 1".into(),
            ));
        } else if t.num_workers > 0 && !t.num_workers.is_multiple_of(t.num_workers_per_pod) {
            out.push((
                path(&["thor", "numWorkersPerPod"]),
                format!(
                    "{} does not divide numWorkers {}",
                    t.num_workers_per_pod, t.num_workers
                ),
            ));
        }
        if t.max_graphs == 0 {
            out.push((path(&["thor", "maxGraphs"]), "must be at least 1".into()));
        }
        if self.instances == 0 {
            out.push((path(&["instances"]), "must be at least 1".into()));
        }
        if let Err(e) = parse_duration(&self.graph_duration) {
            out.push((path(&["graphDuration"]), e));
        }
        if self.modes.is_empty() {
            out.push((path(&["modes"]), "name at least one mode".into()));
        }
        let minor = crate::k8s::facts::for_minor(&self.cluster.k8s_minor);
        if minor.is_none() {
            out.push((
                path(&["cluster", "k8sMinor"]),
                format!(
                    "unknown Kubernetes minor {:?}; known: {}",
                    self.cluster.k8s_minor,
                    crate::k8s::facts::minors().join(", ")
                ),
            ));
        }
        for (i, m) in self.modes.iter().enumerate() {
            match Mode::parse(m) {
                None => out.push((
                    vec![Seg::Key("modes".into()), Seg::Index(i)],
                    format!("unknown mode {m:?}; one of baseline, jobset, jobset-gang"),
                )),
                Some(Mode::JobsetGang) if minor_number(&self.cluster.k8s_minor) < 36 => out.push((
                    vec![Seg::Key("modes".into()), Seg::Index(i)],
                    "jobset-gang needs Kubernetes 1.36 or later (PodGroup API)".into(),
                )),
                _ => {}
            }
        }
        if self.cluster.nodes == 0 {
            out.push((path(&["cluster", "nodes"]), "must be at least 1".into()));
        }
        out
    }
}

/// Read, decode and check a scenario file; every problem is bad input at
/// file:line:column.
pub fn load(path: &Path) -> Result<ThorScenario> {
    let text =
        std::fs::read_to_string(path).map_err(|e| bad_input(format!("{}: {e}", path.display())))?;
    let docs = crate::yaml::parse(&text).map_err(|e| {
        bad_input(format!(
            "{}:{}:{}: {}",
            path.display(),
            e.pos.line,
            e.pos.column,
            e.message
        ))
    })?;
    let doc = docs
        .first()
        .ok_or_else(|| bad_input(format!("{}: empty scenario", path.display())))?;
    let ctx = crate::schema::typed::Ctx {
        file: &path.display().to_string(),
        root: &doc.root,
        base: vec![],
    };
    let (s, mut findings) =
        crate::schema::typed::decode::<ThorScenario>(&ctx, &doc.root.to_json(), "Thor scenario");
    if let Some(s) = &s {
        findings.extend(s.problems().into_iter().map(|(p, m)| ctx.finding(&p, m)));
    }
    if let Some(f) = findings.first() {
        return Err(bad_input(format!("invalid scenario: {f}")));
    }
    s.ok_or_else(|| bad_input(format!("{}: not a Thor scenario", path.display())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("5s").unwrap(), Duration::from_secs(5));
        assert_eq!(parse_duration("250ms").unwrap(), Duration::from_millis(250));
        assert_eq!(parse_duration("2m").unwrap(), Duration::from_secs(120));
        assert!(parse_duration("5").is_err());
        assert!(parse_duration("s").is_err());
        assert!(parse_duration("5 parsecs").is_err());
    }
}
