//! Where a Thor run acts on each provider's cluster: its place and site
//! (`place`: the local provider's namespace and certificate users, or a
//! namespace of the run's with ServiceAccounts), the existing provider's
//! probe, site and survey (`existing`), and `--dry-run` on an existing
//! cluster (`dry_run`).

pub mod dry_run;
pub mod existing;
pub mod place;
