//! Every Kubernetes call HPCC makes is a forked `kubectl`
//! (system/jlib/jcontainerized.cpp `runKubectlCommand`): this runs the
//! modelled kubectl as one of HPCC's identities and records each call by
//! kind, so the requests the server logs can be checked against what the
//! call list predicts (`workload::thor::kubectl`).

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Mutex;

use anyhow::{Context, Result, bail};
use serde::Serialize;
use tokio::io::AsyncWriteExt;

use crate::workload::thor::kubectl::{Call, KubectlModel};

/// Which HPCC process identity made a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Who {
    /// thoragent and the Thor manager (ServiceAccount hpcc-thoragent).
    ThorAgent,
    /// eclccserver, launching compile Jobs (ServiceAccount hpcc-agent).
    Eclccserver,
}

/// The calls made, in order, and — when counted client-side — the
/// requests each identity's kubectl sent.
#[derive(Debug, Default)]
pub struct CallLog {
    calls: Mutex<Vec<(Who, Call)>>,
    requests: Mutex<std::collections::BTreeMap<Who, u64>>,
}

/// The requests one kubectl run sent, from its `-v=6` log: client-go's
/// transport/round_trippers.go (`debuggingRoundTripper.RoundTrip`) logs
/// one line per round trip — up to client-go 1.32 (HPCC's kubectl 1.29.7)
/// `VERB URL STATUS in N milliseconds`, since 1.33 the structured
/// `"Response" verb="VERB" url="URL" status=…`. Requests the discovery
/// cache answered are not sent and not counted.
pub fn sent_requests(stderr: &str) -> u64 {
    stderr
        .lines()
        .filter(|l| l.contains("round_trippers.go"))
        .filter(|l| {
            let msg = l.split("] ").nth(1).unwrap_or_default();
            let mut words = msg.split(' ');
            let plain = matches!(
                words.next(),
                Some("GET" | "POST" | "PUT" | "PATCH" | "DELETE" | "HEAD")
            ) && words.next().is_some_and(|u| u.starts_with("http"));
            plain || (msg.starts_with("\"Response\" ") && msg.contains(" verb=\""))
        })
        .count() as u64
}

/// `stderr` without the `-v=6` request log (for error messages).
fn without_request_log(stderr: &str) -> String {
    stderr
        .lines()
        .filter(|l| !l.starts_with('I') || !l.contains(".go:"))
        .collect::<Vec<_>>()
        .join("\n")
}

impl CallLog {
    pub fn record(&self, who: Who, call: Call) {
        if let Ok(mut c) = self.calls.lock() {
            c.push((who, call));
        }
    }

    /// Requests `who`'s kubectl sent (client-side counting only).
    pub fn requests(&self, who: Who) -> u64 {
        self.requests
            .lock()
            .map(|r| r.get(&who).copied().unwrap_or(0))
            .unwrap_or(0)
    }

    fn add_requests(&self, who: Who, n: u64) {
        if let Ok(mut r) = self.requests.lock() {
            *r.entry(who).or_default() += n;
        }
    }

    pub fn calls(&self) -> Vec<(Who, Call)> {
        self.calls.lock().map(|c| c.clone()).unwrap_or_default()
    }

    /// How many calls of each kind `who` made.
    pub fn count(&self, who: Who) -> std::collections::BTreeMap<String, u64> {
        let mut out = std::collections::BTreeMap::new();
        for (w, c) in self.calls() {
            if w == who {
                *out.entry(c.kind().to_string()).or_default() += 1;
            }
        }
        out
    }
}

/// One HPCC identity's kubectl.
pub struct Kubectl {
    pub who: Who,
    pub model: KubectlModel,
    pub binary: PathBuf,
    pub kubeconfig: PathBuf,
    /// Where this identity's discovery cache lives (warm), or the place a
    /// cache cannot be written (HPCC's read-only filesystem).
    pub cache_root: PathBuf,
    pub namespace: String,
    /// Run with `-v=6` and count the requests each call sends (where the
    /// server's audit log and APF are both out of reach).
    pub count_requests: bool,
}

impl Kubectl {
    /// Run `call` (plus `extra` arguments; stdin fed `input` when given)
    /// and record it; its stdout.
    pub async fn call(
        &self,
        log: &CallLog,
        call: Call,
        extra: &[&str],
        input: Option<&str>,
    ) -> Result<String> {
        let mut args = call.args();
        args.extend(extra.iter().map(|a| a.to_string()));
        let mut cmd = self.model.command(&self.binary, &self.cache_root)?;
        if self.count_requests {
            cmd.arg("-v=6");
        }
        cmd.env("KUBECONFIG", &self.kubeconfig)
            .arg("--namespace")
            .arg(&self.namespace)
            .args(&args)
            .stdin(if input.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        log.record(self.who, call);
        let mut child = cmd
            .spawn()
            .with_context(|| format!("starting {}", self.binary.display()))?;
        if let (Some(text), Some(mut stdin)) = (input, child.stdin.take()) {
            stdin.write_all(text.as_bytes()).await?;
        }
        let out = child.wait_with_output().await?;
        let stderr = String::from_utf8_lossy(&out.stderr);
        if self.count_requests {
            log.add_requests(self.who, sent_requests(&stderr));
        }
        if !out.status.success() {
            let stderr = match self.count_requests {
                true => without_request_log(&stderr),
                false => stderr.into_owned(),
            };
            bail!("kubectl {} failed: {}", args.join(" "), stderr.trim());
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// `kubectl get <resource> NAME -o jsonpath=PATH` (Job or JobSet).
    pub async fn get(
        &self,
        log: &CallLog,
        jobset: bool,
        name: &str,
        jsonpath: &str,
    ) -> Result<String> {
        let (name, jsonpath) = (name.to_string(), jsonpath.to_string());
        let call = if jobset {
            Call::GetJobSet { name, jsonpath }
        } else {
            Call::GetJob { name, jsonpath }
        };
        self.call(log, call, &[], None).await
    }

    /// `kubectl get pods --selector SEL -o jsonpath=PATH`.
    pub async fn list_pods(&self, log: &CallLog, selector: &str, jsonpath: &str) -> Result<String> {
        let call = Call::ListPods {
            selector: selector.to_string(),
            jsonpath: jsonpath.to_string(),
        };
        self.call(log, call, &[], None).await
    }

    /// `kubectl replace --force -f -` of one object (jcontainerized.cpp
    /// `applyYaml`).
    pub async fn replace(&self, log: &CallLog, doc: &serde_json::Value) -> Result<()> {
        let text = serde_json::to_string(doc)?;
        self.call(log, Call::Replace, &[], Some(&text))
            .await
            .map(|_| ())
    }

    /// `kubectl delete <type>/<name> [--grace-period=N]`
    /// (jcontainerized.cpp `deleteResource`; the post-job script adds the
    /// grace period).
    pub async fn delete(
        &self,
        log: &CallLog,
        resource: &str,
        name: &str,
        grace: Option<u32>,
    ) -> Result<()> {
        let call = Call::Delete {
            resource: resource.to_string(),
            name: name.to_string(),
        };
        let grace = grace.map(|g| format!("--grace-period={g}"));
        let extra: Vec<&str> = grace.iter().map(String::as_str).collect();
        self.call(log, call, &extra, None).await.map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn requests_are_counted_from_the_round_trip_log_only() {
        let log = "I1123 22:28:33.910129    6913 loader.go:395] Config loaded from file:  /k\n\
I1123 22:28:33.919003    6913 round_trippers.go:553] GET https://127.0.0.1:41081/api?timeout=32s 200 OK in 6 milliseconds\n\
I1123 22:28:33.920817    6913 round_trippers.go:553] GET https://127.0.0.1:41081/apis?timeout=32s 200 OK in 0 milliseconds\n\
I1123 22:28:34.000001    6913 round_trippers.go:553] PUT https://127.0.0.1:41081/apis/batch/v1/namespaces/n/jobs/j 409 Conflict in 3 milliseconds\n\
I1123 22:28:34.000002    6913 round_trippers.go:553] DELETE https://127.0.0.1:41081/apis/batch/v1/namespaces/n/jobs/j 200 OK in 3 milliseconds\n\
Error from server (NotFound): jobs.batch \"x\" not found\n";
        assert_eq!(super::sent_requests(log), 4);
        // client-go ≥ 1.33 (kubectl 1.37.1, as captured).
        let structured = "I1123 22:45:16.207700   19971 round_trippers.go:632] \"Response\" verb=\"GET\" url=\"https://127.0.0.1:38507/api?timeout=32s\" status=\"200 OK\" milliseconds=3\n\
I1123 22:45:16.209676   19971 round_trippers.go:632] \"Response\" verb=\"GET\" url=\"https://127.0.0.1:38507/apis?timeout=32s\" status=\"200 OK\" milliseconds=0\n\
I1123 22:45:16.209000   19971 round_trippers.go:527] \"Request\" verb=\"GET\" url=\"https://127.0.0.1:38507/apis?timeout=32s\"\n";
        assert_eq!(super::sent_requests(structured), 2);
        assert_eq!(
            super::without_request_log(log),
            "Error from server (NotFound): jobs.batch \"x\" not found"
        );
    }
}
