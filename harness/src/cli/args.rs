//! Parsing the values of flags that are more than one value: feature gates,
//! runtime-config and `--bin NAME=PATH`.

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::Result;
use clap::ValueEnum;
use harness::cluster::profile::Profile;
use harness::error::bad_input;
use harness::tools::Component;

/// Output format of `tools list` and `status`.
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Text,
    Json,
}

/// "A=true,B=false" → map. Values must be true or false.
pub fn parse_gates(s: &str) -> Result<BTreeMap<String, bool>> {
    let mut out = BTreeMap::new();
    for item in s.split(',').map(str::trim).filter(|i| !i.is_empty()) {
        let (k, v) = item.split_once('=').ok_or_else(|| {
            bad_input(format!("--feature-gates: {item:?} is not NAME=true|false"))
        })?;
        let v = match v.trim() {
            "true" => true,
            "false" => false,
            other => {
                return Err(bad_input(format!(
                    "--feature-gates: {k}={other}: the value must be true or false"
                )));
            }
        };
        if k.trim().is_empty() || !k.trim().chars().all(|c| c.is_ascii_alphanumeric()) {
            return Err(bad_input(format!(
                "--feature-gates: {k:?} is not a feature gate name"
            )));
        }
        out.insert(k.trim().to_string(), v);
    }
    Ok(out)
}

/// "group/version=true,api/all=false" → map.
pub fn parse_runtime_config(s: &str) -> Result<BTreeMap<String, String>> {
    let mut out = BTreeMap::new();
    for item in s.split(',').map(str::trim).filter(|i| !i.is_empty()) {
        let (k, v) = item.split_once('=').ok_or_else(|| {
            bad_input(format!(
                "--runtime-config: {item:?} is not GROUP/VERSION=true|false"
            ))
        })?;
        if !matches!(v, "true" | "false") || k.is_empty() || k.contains(char::is_whitespace) {
            return Err(bad_input(format!(
                "--runtime-config: {item:?} is not GROUP/VERSION=true|false"
            )));
        }
        out.insert(k.to_string(), v.to_string());
    }
    Ok(out)
}

pub fn parse_bins(items: &[String]) -> Result<BTreeMap<Component, PathBuf>> {
    let mut out = BTreeMap::new();
    for item in items {
        let (name, path) = item
            .split_once('=')
            .ok_or_else(|| bad_input(format!("--bin {item:?}: expected NAME=PATH")))?;
        let c = Component::from_name(name).ok_or_else(|| {
            bad_input(format!(
                "--bin {name}: unknown binary; one of {}",
                Component::ALL.map(|c| c.name()).join(", ")
            ))
        })?;
        out.insert(c, PathBuf::from(path));
    }
    Ok(out)
}

/// A cluster the harness did not start (`--provider existing`).
#[derive(clap::Args, Debug, Clone, Default)]
pub struct ExistingArgs {
    /// The existing cluster's kubeconfig (`--provider existing`).
    #[arg(long)]
    pub kubeconfig: Option<PathBuf>,
    /// The kubeconfig's context (default: its current one).
    #[arg(long)]
    pub context: Option<String>,
    /// The API server's audit log, readable from here (JSON lines at
    /// Metadata level): requests per client come from it.
    #[arg(long)]
    pub audit_log: Option<PathBuf>,
    /// etcd's metrics endpoint (etcd figures are "not measured" without).
    #[arg(long)]
    pub etcd_metrics_url: Option<String>,
    /// Client certificate, key and CA for --etcd-metrics-url (PEM).
    #[arg(long)]
    pub etcd_cert: Option<PathBuf>,
    #[arg(long)]
    pub etcd_key: Option<PathBuf>,
    #[arg(long)]
    pub etcd_ca: Option<PathBuf>,
    /// Where requests per client come from: `audit` (the audit log,
    /// --audit-log), `apf` (the API server's per-FlowSchema counts, one
    /// FlowSchema added per followed identity for the run; checked
    /// against the audit log when that is given too) or `client` (only
    /// HPCC's identities, counted from their kubectl's -v=6 log).
    #[arg(long, value_name = "audit|apf|client", default_value = "audit")]
    pub attribution: String,
    /// One more identity to follow with --attribution apf:
    /// user:NAME[;groups=G1,G2], sa:NAMESPACE/NAME or group:NAME
    /// (repeatable).
    #[arg(long = "apf-identity", value_name = "SPEC")]
    pub apf_identities: Vec<String>,
}

impl ExistingArgs {
    /// The options, or a usage error naming the flag that is missing or
    /// does not belong.
    pub fn options(&self) -> Result<harness::cluster::existing::ExistingOptions> {
        let kubeconfig = self.kubeconfig.clone().ok_or_else(|| {
            bad_input("--provider existing needs --kubeconfig FILE (the cluster to run on)")
        })?;
        let etcd_cert = match (&self.etcd_cert, &self.etcd_key) {
            (Some(c), Some(k)) => Some((c.clone(), k.clone())),
            (None, None) => None,
            _ => return Err(bad_input("--etcd-cert and --etcd-key go together")),
        };
        if self.etcd_metrics_url.is_none() && (etcd_cert.is_some() || self.etcd_ca.is_some()) {
            return Err(bad_input(
                "--etcd-cert/--etcd-key/--etcd-ca need --etcd-metrics-url",
            ));
        }
        use harness::cluster::existing::apf::{Attribution, Identity};
        let attribution = Attribution::parse(&self.attribution)?;
        if attribution != Attribution::Apf && !self.apf_identities.is_empty() {
            return Err(bad_input("--apf-identity needs --attribution apf"));
        }
        let apf_identities = self
            .apf_identities
            .iter()
            .map(|s| Identity::parse(s))
            .collect::<Result<Vec<_>>>()?;
        // The flags agree; now every file they name is read (the growing
        // audit log only opened) through the bounded reader: a FIFO or a
        // device is refused naming its flag before any request is made.
        harness::cluster::client::read_kubeconfig("--kubeconfig", &kubeconfig)?;
        for (flag, path) in [
            ("--etcd-cert", self.etcd_cert.as_ref()),
            ("--etcd-key", self.etcd_key.as_ref()),
            ("--etcd-ca", self.etcd_ca.as_ref()),
        ] {
            if let Some(p) = path {
                harness::input::bytes_flag(flag, p)?;
            }
        }
        if let Some(log) = &self.audit_log
            && std::fs::metadata(log).is_ok()
        {
            harness::input::open_stream("--audit-log", log)?;
        }
        Ok(harness::cluster::existing::ExistingOptions {
            attribution,
            apf_identities,
            kubeconfig,
            context: self.context.clone(),
            audit_log: self.audit_log.clone(),
            etcd_metrics_url: self.etcd_metrics_url.clone(),
            etcd_cert,
            etcd_ca: self.etcd_ca.clone(),
        })
    }

    /// Whether any of the existing-cluster flags was given.
    pub fn any(&self) -> bool {
        self.kubeconfig.is_some()
            || self.context.is_some()
            || self.audit_log.is_some()
            || self.etcd_metrics_url.is_some()
            || self.etcd_cert.is_some()
            || self.etcd_key.is_some()
            || self.etcd_ca.is_some()
            || self.attribution != "audit"
            || !self.apf_identities.is_empty()
    }
}

/// `--shard K/N`.
pub fn parse_shard(s: &str) -> Result<harness::bench::core::shard::Shard, String> {
    harness::bench::core::shard::Shard::parse(s).map_err(|e| format!("{e:#}"))
}

/// `--control-plane`: a control-plane profile name.
pub fn parse_profile(s: &str) -> Result<Profile, String> {
    Profile::parse(s).ok_or_else(|| format!("unknown profile {s:?}: default or tuned"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gates_parse_and_reject() {
        let g = parse_gates("GenericWorkload=true, WorkloadWithJob=false").unwrap();
        assert!(g["GenericWorkload"]);
        assert!(!g["WorkloadWithJob"]);
        assert!(parse_gates("").unwrap().is_empty());
        for bad in ["A", "A=yes", "=true", "A-B=true"] {
            let e = parse_gates(bad).unwrap_err();
            assert_eq!(harness::error::exit_code(&e), 2, "{bad}");
        }
    }

    #[test]
    fn runtime_config_parses() {
        let rc = parse_runtime_config("scheduling.k8s.io/v1alpha2=true").unwrap();
        assert_eq!(rc["scheduling.k8s.io/v1alpha2"], "true");
        assert!(parse_runtime_config("scheduling.k8s.io/v1alpha2").is_err());
        assert!(parse_runtime_config("a=maybe").is_err());
    }

    #[test]
    fn bins_parse() {
        let b = parse_bins(&["etcd=/opt/etcd".into()]).unwrap();
        assert_eq!(b[&Component::Etcd], PathBuf::from("/opt/etcd"));
        assert!(parse_bins(&["nope=/x".into()]).is_err());
        assert!(parse_bins(&["etcd".into()]).is_err());
    }
}
