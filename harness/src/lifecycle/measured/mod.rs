//! Where a measured workload (`harness measure`) acts on its cluster, per
//! provider: the identity it runs as on a fresh cluster (`identity`: the
//! local provider's certified user, or a kind cluster's ServiceAccount)
//! and, on an existing cluster, a namespace of its own per run with a
//! ServiceAccount admin there only (`existing`).

pub mod existing;
pub mod identity;
