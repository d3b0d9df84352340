//! The kubeadm patches every kind cluster the harness makes gets, so
//! that a loaded machine makes it slowly rather than not at all: leader
//! election the scheduler and the controller manager can keep
//! ([`LEASE_DURATION`]), and kubeadm's waits doubled ([`KUBEADM_WAITS`]).
//! A profile whose own patches set either keeps its own.

use serde_json::Value;

/// How long the scheduler and the controller manager of a kind cluster
/// hold their leases and may keep failing to renew them: `--leader-elect-
/// lease-duration` and `--leader-elect-renew-deadline` (defaults 15 s and
/// 10 s). Either component exits when it cannot renew within the
/// deadline (client-go tools/leaderelection `LeaderElector.renew`), and
/// on a loaded 2-core machine an API server slower than 10 s for a moment
/// restarted kube-scheduler under the test command (CI of 73a7210: its
/// port refused). The renewals come as often as before: one every
/// `--leader-elect-retry-period` (2 s, left alone), whatever the deadline
/// (`renew` polls every RetryPeriod), so the lease requests a window
/// counts do not change. A single control-plane node has no other
/// candidate that a longer lease would keep waiting.
pub const LEASE_DURATION: &str = "60s";
pub const RENEW_DEADLINE: &str = "45s";

/// kubeadm's waits while kind makes a node (kubeadm v1beta4 `Timeouts`,
/// cmd/kubeadm/app/apis/kubeadm/v1beta4/types.go), with their defaults in
/// seconds: which of `kubeadm init` (I) and `kubeadm join` (J) reads each.
/// On the 2-core machine, three kind clusters made at once beside the
/// contention suite's control planes took twice their usual time (the
/// profiles' clusters 8 min 16 s against 3 min 36 s – 4 min 20 s), and a
/// fresh cluster's `kubeadm init` failed twice, after about 3 min each
/// (CI of 6d0ae74).
pub const KUBEADM_WAITS: &[(&str, u64, &str)] = &[
    ("controlPlaneComponentHealthCheck", 240, "IJ"),
    ("kubeletHealthCheck", 240, "IJ"),
    ("kubernetesAPICall", 60, "IJ"),
    ("etcdAPICall", 120, "IJ"),
    ("tlsBootstrap", 300, "J"),
    ("discovery", 300, "J"),
];

/// How many times kubeadm's default each wait of [`KUBEADM_WAITS`] is in
/// a cluster the harness makes: the loaded machine's slowdown measured
/// above. A slow start is a slow start, not a failure; the waits end as
/// soon as what they wait for is there, so an idle machine makes its
/// clusters as fast as before. A profile that cannot come up takes that
/// much longer to fail (8 min for a control plane that never gets
/// healthy, against 4).
pub const KUBEADM_WAIT_FACTOR: u64 = 2;

/// The kubeadm patches of [`KUBEADM_WAITS`] × [`KUBEADM_WAIT_FACTOR`],
/// one for `InitConfiguration` and one for `JoinConfiguration`.
pub fn kubeadm_waits() -> Vec<String> {
    [("InitConfiguration", 'I'), ("JoinConfiguration", 'J')]
        .iter()
        .map(|(kind, which)| {
            let mut patch =
                format!("kind: {kind}\napiVersion: kubeadm.k8s.io/v1beta4\ntimeouts:\n");
            for (field, default_s, read_by) in KUBEADM_WAITS {
                if read_by.contains(*which) {
                    patch.push_str(&format!(
                        "  {field}: {}s\n",
                        default_s * KUBEADM_WAIT_FACTOR
                    ));
                }
            }
            patch
        })
        .collect()
}

/// Whether any of `doc`'s kubeadm patches mentions `word`.
fn sets(doc: &Value, word: &str) -> bool {
    doc["kubeadmConfigPatches"].as_array().is_some_and(|ps| {
        ps.iter()
            .any(|p| p.as_str().is_some_and(|t| t.contains(word)))
    })
}

/// Append `patches` to `doc`'s kubeadm patches.
pub fn add(doc: &mut Value, patches: impl IntoIterator<Item = String>) {
    let patches = patches.into_iter().map(Value::String);
    match doc
        .get_mut("kubeadmConfigPatches")
        .and_then(Value::as_array_mut)
    {
        Some(list) => list.extend(patches),
        None => doc["kubeadmConfigPatches"] = Value::Array(patches.collect()),
    }
}

/// Add the patches to a kind config `doc`: the waits unless its patches
/// set `timeouts`, the leader election unless they set a `leader-elect`
/// flag.
pub fn outlast_a_loaded_machine(doc: &mut Value) {
    if !sets(doc, "timeouts") {
        add(doc, kubeadm_waits());
    }
    if !sets(doc, "leader-elect") {
        let args = format!(
            "  extraArgs:\n    - name: leader-elect-lease-duration\n      value: \"{LEASE_DURATION}\"\n    - name: leader-elect-renew-deadline\n      value: \"{RENEW_DEADLINE}\"\n"
        );
        add(
            doc,
            [format!(
                "kind: ClusterConfiguration\napiVersion: kubeadm.k8s.io/v1beta4\ncontrollerManager:\n{args}scheduler:\n{args}"
            )],
        );
    }
}
