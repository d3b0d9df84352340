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

/// The calls made, in order.
#[derive(Debug, Default)]
pub struct CallLog {
    calls: Mutex<Vec<(Who, Call)>>,
}

impl CallLog {
    pub fn record(&self, who: Who, call: Call) {
        if let Ok(mut c) = self.calls.lock() {
            c.push((who, call));
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
        if !out.status.success() {
            bail!(
                "kubectl {} failed: {}",
                args.join(" "),
                String::from_utf8_lossy(&out.stderr).trim()
            );
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
