//! A run's id and the names that carry it, as plain data: the id itself
//! (`new_run_id`), the label everything a run creates on a cluster it did
//! not start carries (`RUN_ID_LABEL`), and the namespace of one run of a
//! mode or variant (`run_namespace`, `namespace_object`). The existing
//! provider creates and removes what carries it (cluster::existing::site);
//! a workload names its run's namespace here without naming the provider.

use anyhow::Result;

/// The label everything the harness creates on a cluster it did not start
/// carries (namespaces, pool nodes, FlowSchemas): the run's id (cleanup
/// finds what is left by it).
pub const RUN_ID_LABEL: &str = "harness.batch.dev/run-id";

/// A run id: short, lower-case, unique enough on one cluster (time, and
/// the process id plus a count of the ids this process made, in base 36:
/// two runs started in the same millisecond by one process differ).
pub fn new_run_id() -> String {
    static MADE: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0);
    let n = MADE.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    format!(
        "{}{}",
        base36(t % 36u64.pow(6)),
        base36((u64::from(std::process::id()) + n * 37) % 1296)
    )
}

fn base36(mut n: u64) -> String {
    let digits = b"0123456789abcdefghijklmnopqrstuvwxyz";
    let mut out = Vec::new();
    loop {
        out.push(digits[(n % 36) as usize]);
        n /= 36;
        if n == 0 {
            break;
        }
    }
    out.reverse();
    String::from_utf8(out).unwrap_or_default()
}

/// Namespace `name` carrying the run id.
pub fn namespace_object(name: &str, run_id: &str) -> serde_json::Value {
    serde_json::json!({
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {
            "name": name,
            "labels": {
                RUN_ID_LABEL: run_id,
                "app.kubernetes.io/managed-by": "harness",
            },
        },
    })
}

/// The namespace of one run of `what` (a mode, a variant) in round
/// `round`: it carries the run id; a DNS label (at most 63 characters).
pub fn run_namespace(run_id: &str, what: &str, round: u32) -> Result<String> {
    let ns = format!("harness-{run_id}-{what}-{round}");
    match ns.len() <= 63 {
        true => Ok(ns),
        false => Err(crate::error::bad_input(format!(
            "the name {what:?} makes the run's namespace {ns:?} longer than 63 characters: use a shorter name"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_ids_are_short_lowercase_and_differ_over_time() {
        let a = new_run_id();
        assert!(a.len() <= 8 && !a.is_empty(), "{a}");
        assert!(
            a.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit()),
            "{a}"
        );
        let ids: std::collections::HashSet<String> = (0..100).map(|_| new_run_id()).collect();
        assert_eq!(ids.len(), 100, "ids made at once repeat");
        assert_eq!(base36(0), "0");
        assert_eq!(base36(35), "z");
        assert_eq!(base36(36), "10");
    }
}
