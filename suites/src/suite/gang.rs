//! The gang-scheduling suite: every case in `suites/gang/` against a live
//! local cluster of each Kubernetes minor, with the case's profile (that
//! version's gang gates, or none). Trials are `gang::<case>::k8s-<minor>`;
//! reports go to `$HARNESS_GANG_OUT` or `target/gang-report/`. The runner
//! (clusters per minor and profile, `HARNESS_CLUSTER=existing:<kubeconfig>`,
//! reports) is `suites::case_suite`.

use harness::workload::gang::case::Profile;
use libtest_mimic::Arguments;

use crate::case_suite::{self, SuiteDef};
use crate::runner::Suite;

pub static DEF: SuiteDef = SuiteDef {
    name: "gang",
    dir: "suites/gang",
    profiles: &[Profile::Gang, Profile::GatesOff],
};

/// The gang suite.
pub fn suite(args: &Arguments) -> Suite {
    case_suite::suite(&DEF, args)
}
