//! After a run: waiting until nothing the driver created is left in the
//! namespace, asking for one object per list and the server's count of
//! the rest.

use std::time::Duration;

use anyhow::Result;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::networking::v1::NetworkPolicy;
use kube::api::{Api, ListParams};

use crate::poll::Poll;
use crate::workload::thor::driver::env::ThorEnv;

/// Wait until nothing the driver created is left in the namespace: no
/// pods, Jobs, NetworkPolicies or JobSets (the setup's own objects stay).
pub async fn wait_all_gone(env: &ThorEnv, keep: &[String], timeout: Duration) -> Result<()> {
    let ns = env.namespace.as_str();
    let pods: Api<Pod> = Api::namespaced(env.admin.clone(), ns);
    let jobs: Api<Job> = Api::namespaced(env.admin.clone(), ns);
    let nps: Api<NetworkPolicy> = Api::namespaced(env.admin.clone(), ns);
    let jobsets: Api<kube::api::DynamicObject> =
        Api::namespaced_with(env.admin.clone(), ns, &crate::k8s::jobset::api_resource());
    Poll::new(format!("everything the driver made in {ns} gone"), timeout)
        .every(Duration::from_millis(500))
        .until_state(|| async {
            // One object per answer and the server's count of the rest, and
            // the pods first (they go last): the harness's own requests and
            // their cost to the API server stay small inside the window.
            let lp = ListParams::default().limit(1);
            let pods_left = listed(&pods.list_metadata(&lp).await?);
            if pods_left > 0 {
                return Ok(Err(format!("{pods_left} pods left")));
            }
            let jobs_left = listed(&jobs.list_metadata(&lp).await?);
            // No JobSet CRD (baseline clusters): no JobSets.
            let jobsets_left = jobsets.list_metadata(&lp).await.map_or(0, |l| listed(&l));
            // NetworkPolicies: the setup's own stay, so these are named.
            let nps_left = nps
                .list_metadata(&ListParams::default())
                .await?
                .items
                .into_iter()
                .filter_map(|o| o.metadata.name)
                .filter(|n| !keep.contains(n))
                .count();
            let left = [
                ("jobs", jobs_left),
                ("networkpolicies", nps_left as u64),
                ("jobsets", jobsets_left),
            ];
            Ok(if left.iter().all(|(_, n)| *n == 0) {
                Ok(())
            } else {
                Err(format!("left: {left:?}"))
            })
        })
        .await
}

/// How many objects a list holds: those in this page and the server's
/// count of the rest (set when the list was limited and not filtered).
fn listed<K: Clone>(l: &kube::api::ObjectList<K>) -> u64 {
    let rest = l.metadata.remaining_item_count.unwrap_or(0).max(0) as u64;
    l.items.len() as u64 + rest
}
