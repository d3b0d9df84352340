//! `harness validate`: offline checks of kind-configs/, manifests/,
//! suites/ and baselines/ with the harness's typed models — no cluster, no
//! binaries, no network.
//!
//! `run` walks the paths, `classify` tells what each file is, `check`
//! checks it; `report` renders the result.

pub mod check;
pub mod classify;
pub mod hpcc;
pub mod report;
pub mod run;
pub mod thor;

pub use crate::schema::Finding;
pub use crate::validate::check::{check_text, scenario_in_repo};
pub use crate::validate::classify::FileKind;
pub use crate::validate::report::{FileResult, Report};
pub use crate::validate::run::{REPO_DIRS, run};
