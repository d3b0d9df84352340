//! Container logs on fake nodes: kwok's server answers the kubelet's
//! `/containerLogs/{namespace}/{pod}/{container}` from a file named by a
//! ClusterLogs object (kwok pkg/kwok/server/debugging_logs.go; the kind
//! in pkg/apis/v1alpha1/cluster_logs_types.go), read from kwok's config
//! file like its Stages. The API server reaches kwok as it would a
//! kubelet: the node's InternalIP (kwok's `--node-ip`) and
//! `daemonEndpoints.kubeletEndpoint.Port` (kwok's `--node-port`, which
//! the node stages write), over TLS with a serving certificate of the
//! cluster's CA. So `kubectl logs` works on a local cluster, through the
//! same `pods/log` request as on a real one.

use std::path::Path;

/// The ClusterLogs object's name in kwok's config.
pub const CLUSTER_LOGS_NAME: &str = "harness-container-logs";

/// kwok's config document: every container of every pod logs `file`.
pub fn cluster_logs(file: &Path) -> String {
    format!(
        "---\n\
         # Ours: every container's log is {file} (kubectl logs, pods/log).\n\
         apiVersion: kwok.x-k8s.io/v1alpha1\n\
         kind: ClusterLogs\n\
         metadata:\n  name: {CLUSTER_LOGS_NAME}\n\
         spec:\n  logs:\n    - logsFile: {file}\n      follow: false\n",
        file = file.display()
    )
}

/// One line in the CRI log format the kubelet keeps and kwok parses:
/// `<RFC 3339 time> <stream> <F: full line> <text>`.
pub fn cri_line(at: time::OffsetDateTime, stream: &str, text: &str) -> String {
    let ts = at
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default();
    format!("{ts} {stream} F {text}\n")
}

/// What the log file holds when the cluster is made (at `at`): lines that
/// say where they come from (replace them, in the same format, to serve
/// other logs).
pub fn initial_log(file: &Path, at: time::OffsetDateTime) -> String {
    [
        "harness: this container runs on a kwok fake node; no process wrote this.".to_string(),
        format!(
            "harness: kwok serves {} as every container's log (ClusterLogs {CLUSTER_LOGS_NAME}).",
            file.display()
        ),
    ]
    .iter()
    .map(|t| cri_line(at, "stdout", t))
    .collect()
}

/// The text of a CRI log file's lines, as `kubectl logs` prints them.
pub fn texts(log: &str) -> String {
    log.lines()
        .filter_map(|l| l.splitn(4, ' ').nth(3))
        .map(|t| format!("{t}\n"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cluster_logs_document_names_the_file() {
        let f = Path::new("/state/c1/kwok-logs/container.log");
        let docs = crate::yaml::documents(&cluster_logs(f), "kwok.yaml").unwrap();
        assert_eq!(docs.len(), 1);
        assert_eq!(docs[0]["kind"], "ClusterLogs");
        assert_eq!(
            docs[0]["spec"]["logs"][0]["logsFile"],
            "/state/c1/kwok-logs/container.log"
        );
        let log = initial_log(f, time::OffsetDateTime::UNIX_EPOCH);
        assert!(log.starts_with("1970-01-01T00:00:00Z stdout F harness: "));
        assert!(texts(&log).contains(&format!("(ClusterLogs {CLUSTER_LOGS_NAME}).\n")));
        assert_eq!(texts(&log).lines().count(), 2);
    }
}
