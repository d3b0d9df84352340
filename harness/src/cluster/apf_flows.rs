//! Which API Priority and Fairness FlowSchemas count whose requests: what
//! a measurement window reads APF's per-schema counts with
//! (metrics::apf), set up by whoever added the schemas — today the
//! existing provider, one copy per followed identity
//! (cluster::existing::apf). Plain data, so that measuring names no
//! provider.

use std::collections::{BTreeMap, BTreeSet};

/// Which FlowSchemas count whose requests: set up before a window opens.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ApfFlows {
    /// The harness's FlowSchema name → identity label (a username as the
    /// audit log spells it, or "group:NAME").
    pub by_schema: BTreeMap<String, String>,
    /// Labels of the harness's own identities (set apart, as the audit
    /// attribution does).
    pub harness: BTreeSet<String>,
    /// Followed identities APF cannot tell apart: the mandatory `exempt`
    /// schema (the only one allowed precedence 1, so none can go before
    /// it) takes every request of system:masters members. When the
    /// harness is among them, that schema's requests are all set apart
    /// as the harness's.
    pub exempt: BTreeSet<String>,
}

/// The mandatory schema of precedence 1 (k8s.io/api flowcontrol
/// `FlowSchemaNameExempt`).
pub const EXEMPT_SCHEMA: &str = "exempt";

impl ApfFlows {
    /// Whether the harness's own credentials are APF-exempt.
    pub fn harness_exempt(&self) -> bool {
        self.harness.iter().any(|h| self.exempt.contains(h))
    }
}
