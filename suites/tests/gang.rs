//! The gang-scheduling suite: every case in `suites/gang/` against a live
//! local cluster of each Kubernetes minor, with the case's profile (that
//! version's gang gates, or none). Trials are `gang::<case>::k8s-<minor>`;
//! reports go to `$HARNESS_GANG_OUT` or `target/gang-report/`. The runner
//! (clusters per minor and profile, `HARNESS_CLUSTER=existing:<kubeconfig>`,
//! reports) is `suites::case_suite`.

use harness::workload::gang::case::Profile;
use suites::case_suite::{SuiteDef, main as run};

fn main() {
    run(&SuiteDef {
        name: "gang",
        dir: "suites/gang",
        profiles: &[Profile::Gang, Profile::GatesOff],
    })
}
