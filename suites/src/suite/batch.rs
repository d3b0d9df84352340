//! The batch-primitives suite: every case in `suites/batch/` — one-off
//! Jobs, Jobs that fail (backoffLimit, podFailurePolicy), CronJob
//! concurrency policies and history, a ResourceQuota on Jobs — against a
//! live local cluster of each Kubernetes minor (no gang gates, no Kueue).
//! Each trial also reports the API requests its primitive cost, by client,
//! from the audit log. Trials are `batch::<case>::k8s-<minor>`; reports go
//! to `$HARNESS_BATCH_OUT` or `target/batch-report/`.

use harness::workload::gang::case::Profile;
use libtest_mimic::Arguments;

use crate::case_suite::{self, SuiteDef};
use crate::runner::Suite;

static DEF: SuiteDef = SuiteDef {
    name: "batch",
    dir: "suites/batch",
    profiles: &[Profile::GatesOff],
};

/// The batch suite.
pub fn suite(args: &Arguments) -> Suite {
    case_suite::suite(&DEF, args)
}
