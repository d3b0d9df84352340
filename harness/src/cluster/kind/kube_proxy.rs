//! Waiting until every node's kube-proxy has written the Service rules
//! once. A pod started on a node before that dials a Service's virtual IP
//! with nothing to translate it: the connection's first packet goes out
//! unchanged, its conntrack entry keeps the retries on the same path after
//! the rules appear, and the dial times out. On kind (2026-11-29) the JobSet
//! controller, scheduled to a worker whose kube-proxy started 5 s after it,
//! lost 30 s so — "dial tcp 10.96.0.1:443: i/o timeout" in "unable to setup
//! jobset reconciler indexes", its container exited and was started again —
//! and `up` waited 29–33 s for it instead of 11.
//!
//! kube-proxy says so itself: its health server (`:10256/healthz`, read
//! through the API server's node proxy) reports, per IP family, when the
//! proxier last wrote its rules, and lists no family until the first write
//! (k8s.io/kubernetes `pkg/proxy/healthcheck/proxy_health.go`,
//! `ProxyHealthServer.Updated` and `Health`: "healthy while it's starting
//! up", so `healthy` alone does not tell).

use std::time::Duration;

use anyhow::Result;
use serde_json::Value;

use crate::cluster::client::client_get_bytes;
use crate::poll::Poll;

/// kube-proxy's health server port (its `healthzBindAddress` default).
pub const HEALTHZ_PORT: u16 = 10256;

/// Whether kube-proxy's `/healthz` answer says its rules were written at
/// least once (some IP family has a `lastUpdated`); Err: what it says
/// instead.
pub fn synced(body: &[u8]) -> std::result::Result<(), String> {
    let v: Value = serde_json::from_slice(body).map_err(|e| {
        format!(
            "not kube-proxy's health answer ({e}): {}",
            String::from_utf8_lossy(body)
                .chars()
                .take(200)
                .collect::<String>()
        )
    })?;
    let written = v["status"].as_object().is_some_and(|families| {
        families
            .values()
            .any(|f| f["lastUpdated"].as_str().is_some_and(|t| !t.is_empty()))
    });
    if written {
        Ok(())
    } else {
        Err("its rules are not written yet".into())
    }
}

/// Wait until the kube-proxy of every node of `nodes` has written its
/// rules once.
pub async fn wait_synced(
    client: &kube::Client,
    nodes: &[String],
    timeout: Duration,
    alive: impl FnMut() -> Result<()> + Send,
) -> Result<()> {
    Poll::new(format!("kube-proxy on {} node(s)", nodes.len()), timeout)
        .every(Duration::from_millis(250))
        .alive(alive)
        .until_state(|| async {
            for n in nodes {
                let path = format!("/api/v1/nodes/{n}:{HEALTHZ_PORT}/proxy/healthz");
                let state = match client_get_bytes(client, &path).await {
                    Ok(body) => synced(&body),
                    Err(e) => Err(format!("{e:#}")),
                };
                if let Err(why) = state {
                    return Ok(Err(format!("kube-proxy on {n}: {why}")));
                }
            }
            Ok(Ok(()))
        })
        .await
}

#[cfg(test)]
mod tests {
    use crate::cluster::kind::kube_proxy::synced;

    #[test]
    fn rules_written_once_is_what_counts() {
        // What kube-proxy v1.37.1 answered on a kind worker once synced.
        let done = br#"{"lastUpdated":"2026-11-29T09:21:55.8Z","currentTime":"2026-11-29T09:21:55.8Z","nodeEligible":true,"healthy":true,"status":{"IPv4":{"lastUpdated":"2026-11-29T09:21:42.9Z","healthy":true}}}"#;
        assert_eq!(synced(done), Ok(()));
        // Starting up: healthy, but no family has written its rules.
        let starting = br#"{"lastUpdated":"0001-01-01T00:00:00Z","currentTime":"2026-11-29T09:21:12.9Z","nodeEligible":true,"healthy":true,"status":{}}"#;
        assert!(synced(starting).is_err());
        let none = br#"{"healthy":true}"#;
        assert!(synced(none).is_err());
        // An error page from the node proxy is said, not parsed into a yes.
        let err = synced(b"Error trying to reach service: dial tcp 172.20.0.2:10256: connect: connection refused").unwrap_err();
        assert!(err.contains("connection refused"), "{err}");
    }
}
