//! What HPCC's chart installs once per release in a mode's namespace
//! (service accounts, ConfigMaps, storage claims, NetworkPolicies) and
//! both identities' RBAC, as documents: bound to the templates'
//! certificate users, or to ServiceAccounts where a run has its own
//! namespace.

use anyhow::Result;
use serde_json::Value;

use crate::workload::thor::driver::env::Plan;
use crate::workload::thor::template::{self, Template, ThorParams, render};

fn render_all(ts: &[Template], p: &ThorParams) -> Result<Vec<Value>> {
    Ok(ts
        .iter()
        .map(|t| render(t, p))
        .collect::<Result<Vec<_>>>()?
        .into_iter()
        .flatten()
        .collect())
}

/// RoleBindings of `docs` bound to ServiceAccount `sa` in `namespace`.
fn bind_to_service_account(docs: &mut [Value], sa: &str, namespace: &str) {
    for d in docs.iter_mut().filter(|d| d["kind"] == "RoleBinding") {
        d["subjects"] = serde_json::json!([
            {"kind": "ServiceAccount", "name": sa, "namespace": namespace}
        ]);
    }
}

/// HPCC's once-per-release objects and both identities' RBAC for `plan`'s
/// namespace, the RoleBindings bound to `service_accounts` (thor, eclcc)
/// when given.
pub fn setup_objects(
    plan: &Plan,
    service_accounts: Option<&(String, String)>,
) -> Result<Vec<Value>> {
    let p = plan.params(0);
    let mut docs = Vec::new();
    docs.extend(render_all(&template::setup(), &p)?);
    let mut thor = render(&template::rbac(plan.mode), &p)?;
    let mut eclcc = render(&template::eclccserver_rbac(), &p)?;
    if let Some((t, e)) = service_accounts {
        bind_to_service_account(&mut thor, t, &plan.namespace);
        bind_to_service_account(&mut eclcc, e, &plan.namespace);
    }
    docs.extend(thor);
    docs.extend(eclcc);
    Ok(docs)
}
