//! The batch-primitives suite: every case in `suites/batch/` — one-off
//! Jobs, Jobs that fail (backoffLimit, podFailurePolicy), CronJob
//! concurrency policies and history, a ResourceQuota on Jobs — against a
//! live local cluster of each Kubernetes minor (no gang gates, no Kueue).
//! Each trial also reports the API requests its primitive cost, by client,
//! from the audit log. Trials are `batch::<case>::k8s-<minor>`; reports go
//! to `$HARNESS_BATCH_OUT` or `target/batch-report/`.

use harness::workload::gang::case::Profile;
use suites::case_suite::{SuiteDef, main as run};

fn main() {
    run(&SuiteDef {
        name: "batch",
        dir: "suites/batch",
        profiles: &[Profile::GatesOff],
    })
}
