//! The API calls kwok makes per pod under each kubelet model (the table
//! manifests/kwok/README.md documents): what the stage documents of
//! kwok.rs do to one pod, counted, for the kubelet suites to check against
//! the audit log.

use std::collections::BTreeMap;

use crate::cluster::spec::KubeletModel;

/// What happens to a pod, for the per-pod counts below.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PodEnd {
    /// A Job's pod runs to completion and is deleted afterwards (a
    /// terminal pod: the API server removes it at once, no kubelet call).
    Completes,
    /// Deleted while all its containers run.
    DeletedRunning,
    /// Deleted after its main containers exited, its sidecar still
    /// running (kwok-minimal has no sidecar: the pod has completed).
    DeletedSidecarRunning,
}

impl PodEnd {
    pub const ALL: [PodEnd; 3] = [
        PodEnd::Completes,
        PodEnd::DeletedRunning,
        PodEnd::DeletedSidecarRunning,
    ];

    /// The name manifests/kwok/README.md's table uses.
    pub fn name(self) -> &'static str {
        match self {
            PodEnd::Completes => "completes",
            PodEnd::DeletedRunning => "deleted-running",
            PodEnd::DeletedSidecarRunning => "deleted-sidecar-running",
        }
    }
}

/// The event reasons the kubelet-like stages emit, in the kubelet's order.
pub const EVENT_REASONS: &[&str] = &["Pulled", "Created", "Started", "Killing"];

/// The most containers whose events the kubelet-like stages emit one by
/// one (a Stage's steps are fixed: one Stage per container count).
pub const MAX_CONTAINERS_WITH_EVENTS: u32 = 4;

/// kwok's API requests for one pod (audit log, user kwok-controller).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PodCalls {
    /// PATCH pods/status.
    pub status_patches: u32,
    /// POST events, by reason (every reason of EVENT_REASONS present).
    pub events: BTreeMap<String, u32>,
    /// DELETE pods.
    pub deletes: u32,
}

impl PodCalls {
    pub fn event_count(&self, reason: &str) -> u32 {
        self.events.get(reason).copied().unwrap_or(0)
    }

    /// Every request counted.
    pub fn total(&self) -> u32 {
        self.status_patches + self.events.values().sum::<u32>() + self.deletes
    }
}

/// The fewest and the most requests a pod may see: equal for kubelet-like
/// (our stages are exact); a range for kwok-minimal, whose pod-delete
/// Stage deletes again on every update of a terminating pod.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallRange {
    pub fewest: PodCalls,
    pub most: PodCalls,
}

impl CallRange {
    fn exact(calls: PodCalls) -> CallRange {
        CallRange {
            fewest: calls.clone(),
            most: calls,
        }
    }

    /// Whether `c` is within the range, count by count.
    pub fn contains(&self, c: &PodCalls) -> bool {
        let within = |lo: u32, v: u32, hi: u32| lo <= v && v <= hi;
        within(
            self.fewest.status_patches,
            c.status_patches,
            self.most.status_patches,
        ) && within(self.fewest.deletes, c.deletes, self.most.deletes)
            && c.events.keys().all(|r| EVENT_REASONS.contains(&r.as_str()))
            && EVENT_REASONS.iter().all(|r| {
                within(
                    self.fewest.event_count(r),
                    c.event_count(r),
                    self.most.event_count(r),
                )
            })
    }

    /// The counts as manifests/kwok/README.md's table shows them: PATCH
    /// pods/status, the EVENT_REASONS, DELETE pods ("a–b" for a range).
    pub fn cells(&self) -> Vec<String> {
        let cell = |lo: u32, hi: u32| {
            if lo == hi {
                lo.to_string()
            } else {
                format!("{lo}–{hi}")
            }
        };
        let mut out = vec![cell(self.fewest.status_patches, self.most.status_patches)];
        for r in EVENT_REASONS {
            out.push(cell(self.fewest.event_count(r), self.most.event_count(r)));
        }
        out.push(cell(self.fewest.deletes, self.most.deletes));
        out
    }
}

pub(crate) fn no_calls() -> PodCalls {
    PodCalls {
        events: EVENT_REASONS.iter().map(|r| (r.to_string(), 0)).collect(),
        ..PodCalls::default()
    }
}

/// kwok's requests for a pod of `containers` containers (`sidecar`: one of
/// them exits `SIDECAR_EXIT_DELAY` after the others) that ends as `end`:
/// the table manifests/kwok/README.md documents and suites/tests/kubelet.rs
/// measures.
pub fn expected_calls(
    model: KubeletModel,
    containers: u32,
    sidecar: bool,
    end: PodEnd,
) -> CallRange {
    match model {
        KubeletModel::KwokMinimal => kwok_minimal_calls(end),
        KubeletModel::KubeletLike => CallRange::exact(kubelet_like_calls(containers, sidecar, end)),
    }
}

/// kwok's own stages, as measured (suites/tests/kubelet.rs): pod-ready's
/// and pod-complete's PATCHes; pod-delete's DELETE for every update kwok
/// sees of a pod being deleted. A terminal pod gets one (answered 404: the
/// API server removes it at once, after the update that marks it deleted);
/// a running Job pod 2–3 measured — the garbage collector's deletion, the
/// Job controller's finalizer removal, kwok's own grace-0 DELETE — so 1–4.
fn kwok_minimal_calls(end: PodEnd) -> CallRange {
    let mut calls = no_calls();
    match end {
        PodEnd::Completes | PodEnd::DeletedSidecarRunning => {
            calls.status_patches = 2;
            calls.deletes = 1;
            CallRange::exact(calls)
        }
        PodEnd::DeletedRunning => {
            calls.status_patches = 1;
            calls.deletes = 1;
            let mut most = calls.clone();
            most.deletes = 4;
            CallRange {
                fewest: calls,
                most,
            }
        }
    }
}

/// Our stages, along the pod's path through them (manifests/kwok/README.md).
fn kubelet_like_calls(containers: u32, sidecar: bool, end: PodEnd) -> PodCalls {
    let mut calls = no_calls();
    let sidecar = sidecar && containers > 1;
    let with_events = containers.min(MAX_CONTAINERS_WITH_EVENTS);
    // pod-accept, pod-sandbox; pod-start-N with Pulled, Created, Started
    // each.
    calls.status_patches = 3;
    for r in ["Pulled", "Created", "Started"] {
        calls.events.insert(r.to_string(), with_events);
    }
    // pod-kill-N (Killing × N running), pod-finish, pod-remove.
    fn kill(running: u32, calls: &mut PodCalls) {
        let killing = running.min(MAX_CONTAINERS_WITH_EVENTS);
        calls.events.insert("Killing".into(), killing);
        calls.status_patches += 2;
        calls.deletes = 1;
    }
    match (end, sidecar) {
        // pod-main-exit, pod-sidecar-exit, pod-finish.
        (PodEnd::Completes, true) => calls.status_patches += 3,
        // pod-main-exit, pod-finish.
        (PodEnd::Completes, false) | (PodEnd::DeletedSidecarRunning, false) => {
            calls.status_patches += 2
        }
        (PodEnd::DeletedRunning, _) => kill(containers, &mut calls),
        // pod-main-exit, then the sidecar is killed.
        (PodEnd::DeletedSidecarRunning, true) => {
            calls.status_patches += 1;
            kill(1, &mut calls);
        }
    }
    calls
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_readme_documents_the_table() {
        let readme = include_str!("../../../../manifests/kwok/README.md");
        for model in KubeletModel::ALL {
            for end in PodEnd::ALL {
                let cells = expected_calls(model, 2, true, end).cells();
                let row = format!("| {model} | {} | {} |", end.name(), cells.join(" | "));
                assert!(readme.contains(&row), "README lacks the row\n{row}");
            }
        }
    }

    #[test]
    fn kwok_minimal_makes_fewer_calls_than_kubelet_like() {
        for end in PodEnd::ALL {
            let min = expected_calls(KubeletModel::KwokMinimal, 2, true, end);
            let like = expected_calls(KubeletModel::KubeletLike, 2, true, end);
            assert!(min.contains(&min.most) && like.contains(&like.fewest));
            assert!(
                min.most.total() < like.fewest.total(),
                "{end:?}: {min:?} vs {like:?}"
            );
        }
        // A completed 2-container pod: the research note's count and the
        // sandbox update a real kubelet 1.37.1 made (suites/src/suite/kubelet/real.rs).
        let like = expected_calls(KubeletModel::KubeletLike, 2, true, PodEnd::Completes);
        assert_eq!(like.cells(), ["6", "2", "2", "2", "0", "0"]);
        let mut more = like.fewest.clone();
        more.status_patches += 1;
        assert!(!like.contains(&more));
    }
}
