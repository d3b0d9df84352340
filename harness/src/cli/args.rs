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
