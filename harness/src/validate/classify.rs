//! What a file is, by where it lives in the repository (and, outside the
//! repository's layout, by what it says).

/// What a file is, by where it lives (and, outside the repo layout, by
/// what it says).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    KindConfig,
    ThorTemplate,
    /// Values for the HPCC chart (manifests/hpcc/values/).
    HpccValues,
    GangCase,
    Manifest,
    ThorScenario,
    Baseline,
    /// The answer matrix (baselines/answer.yaml): the run sets the
    /// headline is rendered from.
    AnswerMatrix,
}

pub(super) fn classify(rel: &str, text: &str) -> Option<FileKind> {
    let is_yaml = rel.ends_with(".yaml") || rel.ends_with(".yml");
    if rel.starts_with("baselines/") {
        return match () {
            _ if rel.ends_with(".json") => Some(FileKind::Baseline),
            _ if is_yaml => Some(FileKind::AnswerMatrix),
            _ => None,
        };
    }
    // Kueue's performance runner's generator configs: the runner's own
    // format, read by it (`measure --kueue-perf`), no Kubernetes object.
    if !is_yaml || rel.starts_with("suites/measure/kueue-perf/") {
        return None;
    }
    if rel.starts_with("kind-configs/") || text.contains("kind.x-k8s.io/") {
        Some(FileKind::KindConfig)
    } else if rel.starts_with("manifests/hpcc/values/") {
        Some(FileKind::HpccValues)
    } else if rel.starts_with("manifests/hpcc/") {
        Some(FileKind::ThorTemplate)
    } else if rel.starts_with("suites/thor/") {
        Some(FileKind::ThorScenario)
    } else if ["suites/gang/", "suites/kueue/", "suites/batch/"]
        .iter()
        .any(|d| rel.starts_with(d))
    {
        Some(FileKind::GangCase)
    } else {
        Some(FileKind::Manifest)
    }
}
