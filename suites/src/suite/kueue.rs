//! The Kueue suite: every case in `suites/kueue/` against a live local
//! cluster of each Kubernetes minor running Kueue (`KUEUE_VERSION`, its
//! controller a local process), with the case's profile (`kueue`: no gang
//! gates; `kueue-gang`: that version's gang gates too). Kueue's
//! `waitForPodsReady` is on with a 20 s timeout
//! (`case_suite::KUEUE_PODS_READY_TIMEOUT_S`). Trials are
//! `kueue::<case>::k8s-<minor>`; reports go to `$HARNESS_KUEUE_OUT` or
//! `target/kueue-report/`.

use harness::workload::gang::case::Profile;
use libtest_mimic::Arguments;

use crate::case_suite::{self, SuiteDef};
use crate::runner::Suite;

static DEF: SuiteDef = SuiteDef {
    name: "kueue",
    dir: "suites/kueue",
    profiles: &[Profile::Kueue, Profile::KueueGang],
};

/// The kueue suite.
pub fn suite(args: &Arguments) -> Suite {
    case_suite::suite(&DEF, args)
}
