//! What `harness measure` measures: a command (run as given, or through
//! `sh -c` for a variant's one-string form) or a folder of manifests
//! (`--apply DIR`), and the `--variant NAME=…` spellings of either.

use std::path::PathBuf;

use anyhow::Result;
use serde::{Deserialize, Serialize};

use crate::error::bad_input;

/// One workload.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Workload {
    /// A program and its arguments, run as given (no shell).
    Command(Vec<String>),
    /// A folder of manifests applied as the workload's identity, then
    /// waited for (bench::measure::apply).
    Apply(PathBuf),
    /// Kueue's scheduling-performance runner with this generator config
    /// (bench::measure::kueue_perf); the cluster runs Kueue.
    KueuePerf(PathBuf),
}

impl Workload {
    /// How the report names it.
    pub fn describe(&self) -> String {
        match self {
            Workload::Command(argv) => argv
                .iter()
                .map(|a| match a.contains(char::is_whitespace) || a.is_empty() {
                    true => format!("'{a}'"),
                    false => a.clone(),
                })
                .collect::<Vec<_>>()
                .join(" "),
            Workload::Apply(dir) => format!("--apply {}", dir.display()),
            Workload::KueuePerf(config) => format!("--kueue-perf {}", config.display()),
        }
    }
}

/// A named workload (`--variant NAME=…`, or the one workload, named
/// after `--name`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Variant {
    pub name: String,
    pub workload: Workload,
}

/// A variant's name: a DNS label (it names clusters, files and report
/// columns).
pub fn check_name(flag: &str, name: &str) -> Result<()> {
    match crate::cluster::state::is_name(name) {
        true => Ok(()),
        false => Err(bad_input(format!(
            "{flag} {name:?}: a name is 1–40 lower-case letters, digits and inner '-'"
        ))),
    }
}

/// `NAME=COMMAND` (run with `sh -c COMMAND`) or `NAME=@DIR` (applied as
/// `--apply DIR`).
pub fn parse_variant(s: &str) -> Result<Variant> {
    let (name, rest) = s.split_once('=').ok_or_else(|| {
        bad_input(format!(
            "--variant {s:?}: expected NAME='COMMAND' or NAME=@DIR"
        ))
    })?;
    check_name("--variant", name)?;
    let workload = match rest.strip_prefix('@') {
        Some(dir) if !dir.trim().is_empty() => Workload::Apply(PathBuf::from(dir)),
        Some(_) => {
            return Err(bad_input(format!(
                "--variant {name}=@: the folder to apply is missing"
            )));
        }
        None if rest.trim().is_empty() => {
            return Err(bad_input(format!(
                "--variant {name}=: the command is empty"
            )));
        }
        None => Workload::Command(vec!["sh".into(), "-c".into(), rest.to_string()]),
    };
    Ok(Variant {
        name: name.to_string(),
        workload,
    })
}

/// Every variant given, checked: at least two, names distinct.
pub fn parse_variants(items: &[String]) -> Result<Vec<Variant>> {
    let vs = items
        .iter()
        .map(|s| parse_variant(s))
        .collect::<Result<Vec<_>>>()?;
    if vs.len() == 1 {
        return Err(bad_input(
            "--variant: give two or more (an A/B compares them); one workload goes after `--` or in --apply",
        ));
    }
    for (i, v) in vs.iter().enumerate() {
        if vs[..i].iter().any(|w| w.name == v.name) {
            return Err(bad_input(format!("--variant {}: named twice", v.name)));
        }
    }
    Ok(vs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variants_parse_commands_and_folders() {
        let v = parse_variant("one=kubectl create job a --image=x").unwrap();
        assert_eq!(v.name, "one");
        assert_eq!(
            v.workload,
            Workload::Command(vec![
                "sh".into(),
                "-c".into(),
                "kubectl create job a --image=x".into()
            ])
        );
        // '=' inside the command stays in the command.
        let v = parse_variant("b=echo a=b").unwrap();
        assert_eq!(v.workload.describe(), "sh -c 'echo a=b'");
        let v = parse_variant("dir=@suites/measure/manifests").unwrap();
        assert_eq!(
            v.workload,
            Workload::Apply("suites/measure/manifests".into())
        );
        for bad in [
            "noequals",
            "=cmd",
            "Upper=cmd",
            "a b=cmd",
            "x=",
            "x=@",
            "-x=cmd",
        ] {
            let e = parse_variant(bad).unwrap_err();
            assert_eq!(crate::error::exit_code(&e), 2, "{bad}");
        }
        let two = parse_variants(&["a=true".into(), "b=false".into()]).unwrap();
        assert_eq!(two.len(), 2);
        assert!(parse_variants(&["a=true".into()]).is_err());
        let e = parse_variants(&["a=true".into(), "a=false".into()]).unwrap_err();
        assert!(format!("{e:#}").contains("named twice"));
    }
}
