//! Control-plane profiles: how hard the control plane's own clients may
//! push and how much the API server lets in at once. `default` is a stock
//! cluster — no flag is passed, every component keeps its upstream default;
//! `tuned` is what Kubernetes' own large-cluster validation runs (the
//! 5000-node scalability configuration in kubernetes/perf-tests'
//! release validation reports: CONTROLLER_MANAGER_TEST_ARGS
//! `--kube-api-qps=100 --kube-api-burst=100`, SCHEDULER_TEST_ARGS
//! `--kube-api-qps=100`, APISERVER_TEST_ARGS `--max-requests-inflight=3000
//! --max-mutating-requests-inflight=1000`). Explicit overrides win over
//! either profile.
//!
//! The stock values, read from the 1.37.1 and JobSet v0.12.0 sources:
//! kube-controller-manager 20 QPS / burst 30 (k8s.io/controller-manager
//! options/generic.go, the ClientConnection defaults) and 5 concurrent Job
//! syncs (cmd/kube-controller-manager/app/options/jobcontroller.go);
//! kube-scheduler 50 / 100 (cmd/kube-scheduler/app/options/deprecated.go);
//! the JobSet controller 500 / 500 (jobset main.go's kube-api-qps/-burst
//! flags); kube-apiserver 400 read-only and 200 mutating requests inflight
//! (k8s.io/apiserver pkg/server/config.go NewConfig), which with API
//! Priority and Fairness on are together its total concurrency.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// A named starting point.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Profile {
    #[default]
    Default,
    Tuned,
}

impl Profile {
    pub fn name(self) -> &'static str {
        match self {
            Profile::Default => "default",
            Profile::Tuned => "tuned",
        }
    }

    pub fn parse(s: &str) -> Option<Profile> {
        match s {
            "default" => Some(Profile::Default),
            "tuned" => Some(Profile::Tuned),
            _ => None,
        }
    }
}

/// A scenario's or `harness up`'s control plane: a profile and overrides.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ControlPlane {
    #[serde(default)]
    pub profile: Profile,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kcm_qps: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kcm_burst: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub concurrent_job_syncs: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheduler_qps: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheduler_burst: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jobset_qps: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jobset_burst: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_requests_inflight: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_mutating_requests_inflight: Option<u32>,
}

/// Every setting, resolved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Settings {
    pub kcm_qps: u32,
    pub kcm_burst: u32,
    pub concurrent_job_syncs: u32,
    pub scheduler_qps: u32,
    pub scheduler_burst: u32,
    pub jobset_qps: u32,
    pub jobset_burst: u32,
    pub max_requests_inflight: u32,
    pub max_mutating_requests_inflight: u32,
}

/// What every component does when given no flag.
pub const STOCK: Settings = Settings {
    kcm_qps: 20,
    kcm_burst: 30,
    concurrent_job_syncs: 5,
    scheduler_qps: 50,
    scheduler_burst: 100,
    jobset_qps: 500,
    jobset_burst: 500,
    max_requests_inflight: 400,
    max_mutating_requests_inflight: 200,
};

/// The 5000-node validation configuration (the module's header). Job
/// syncs and the JobSet controller keep their stock values: that
/// configuration does not change the one and does not run the other
/// (whose 500 QPS is already above every other client's).
pub const TUNED: Settings = Settings {
    kcm_qps: 100,
    kcm_burst: 100,
    scheduler_qps: 100,
    scheduler_burst: 100,
    max_requests_inflight: 3000,
    max_mutating_requests_inflight: 1000,
    ..STOCK
};

impl ControlPlane {
    /// The profile's limits, no override.
    pub fn of(profile: Profile) -> ControlPlane {
        ControlPlane {
            profile,
            ..Default::default()
        }
    }

    pub fn tuned() -> ControlPlane {
        ControlPlane {
            profile: Profile::Tuned,
            ..Default::default()
        }
    }

    /// The profile's values with the overrides applied.
    pub fn settings(&self) -> Settings {
        let base = match self.profile {
            Profile::Default => STOCK,
            Profile::Tuned => TUNED,
        };
        let or = |o: Option<u32>, d: u32| o.unwrap_or(d);
        Settings {
            kcm_qps: or(self.kcm_qps, base.kcm_qps),
            kcm_burst: or(self.kcm_burst, base.kcm_burst),
            concurrent_job_syncs: or(self.concurrent_job_syncs, base.concurrent_job_syncs),
            scheduler_qps: or(self.scheduler_qps, base.scheduler_qps),
            scheduler_burst: or(self.scheduler_burst, base.scheduler_burst),
            jobset_qps: or(self.jobset_qps, base.jobset_qps),
            jobset_burst: or(self.jobset_burst, base.jobset_burst),
            max_requests_inflight: or(self.max_requests_inflight, base.max_requests_inflight),
            max_mutating_requests_inflight: or(
                self.max_mutating_requests_inflight,
                base.max_mutating_requests_inflight,
            ),
        }
    }

    /// "default", "tuned", or either with "+overrides" when any is set:
    /// what results and baselines are keyed by.
    pub fn label(&self) -> String {
        let plain = ControlPlane {
            profile: self.profile,
            ..Default::default()
        };
        match *self == plain {
            true => self.profile.name().to_string(),
            false => format!("{}+overrides", self.profile.name()),
        }
    }

    /// Every resolved value by name, for results and reports.
    pub fn describe(&self) -> BTreeMap<String, String> {
        let s = self.settings();
        [
            ("profile", self.label()),
            ("kcm_qps", s.kcm_qps.to_string()),
            ("kcm_burst", s.kcm_burst.to_string()),
            ("concurrent_job_syncs", s.concurrent_job_syncs.to_string()),
            ("scheduler_qps", s.scheduler_qps.to_string()),
            ("scheduler_burst", s.scheduler_burst.to_string()),
            ("jobset_qps", s.jobset_qps.to_string()),
            ("jobset_burst", s.jobset_burst.to_string()),
            ("max_requests_inflight", s.max_requests_inflight.to_string()),
            (
                "max_mutating_requests_inflight",
                s.max_mutating_requests_inflight.to_string(),
            ),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect()
    }
}

/// `--flag=value` for each (flag, value, stock) whose value is not stock:
/// a stock cluster gets no flag at all.
pub fn flags(pairs: &[(&str, u32, u32)]) -> Vec<String> {
    pairs
        .iter()
        .filter(|(_, v, stock)| v != stock)
        .map(|(f, v, _)| format!("--{f}={v}"))
        .collect()
}

impl Settings {
    pub fn apiserver_flags(&self) -> Vec<String> {
        flags(&[
            (
                "max-requests-inflight",
                self.max_requests_inflight,
                STOCK.max_requests_inflight,
            ),
            (
                "max-mutating-requests-inflight",
                self.max_mutating_requests_inflight,
                STOCK.max_mutating_requests_inflight,
            ),
        ])
    }

    pub fn controller_manager_flags(&self) -> Vec<String> {
        flags(&[
            ("kube-api-qps", self.kcm_qps, STOCK.kcm_qps),
            ("kube-api-burst", self.kcm_burst, STOCK.kcm_burst),
            (
                "concurrent-job-syncs",
                self.concurrent_job_syncs,
                STOCK.concurrent_job_syncs,
            ),
        ])
    }

    /// kube-scheduler's client flags (deprecated there but honoured when,
    /// as here, no --config file is given).
    pub fn scheduler_flags(&self) -> Vec<String> {
        flags(&[
            ("kube-api-qps", self.scheduler_qps, STOCK.scheduler_qps),
            (
                "kube-api-burst",
                self.scheduler_burst,
                STOCK.scheduler_burst,
            ),
        ])
    }

    pub fn jobset_flags(&self) -> Vec<String> {
        flags(&[
            ("kube-api-qps", self.jobset_qps, STOCK.jobset_qps),
            ("kube-api-burst", self.jobset_burst, STOCK.jobset_burst),
        ])
    }
}

#[cfg(test)]
mod tests {
    use crate::cluster::profile::{ControlPlane, Profile, STOCK};

    #[test]
    fn default_passes_no_flag_tuned_the_validation_values() {
        let d = ControlPlane::default().settings();
        assert_eq!(d, STOCK);
        assert!(d.apiserver_flags().is_empty() && d.controller_manager_flags().is_empty());
        assert!(d.scheduler_flags().is_empty() && d.jobset_flags().is_empty());
        let t = ControlPlane::tuned().settings();
        assert_eq!(
            t.controller_manager_flags(),
            ["--kube-api-qps=100", "--kube-api-burst=100"]
        );
        assert_eq!(
            t.apiserver_flags(),
            [
                "--max-requests-inflight=3000",
                "--max-mutating-requests-inflight=1000"
            ]
        );
        assert_eq!(t.scheduler_flags(), ["--kube-api-qps=100"]);
        assert!(t.jobset_flags().is_empty());
    }

    #[test]
    fn overrides_win_and_show_in_the_label() {
        let c = ControlPlane {
            profile: Profile::Tuned,
            concurrent_job_syncs: Some(50),
            kcm_qps: Some(400),
            ..Default::default()
        };
        let s = c.settings();
        assert_eq!(
            (s.kcm_qps, s.kcm_burst, s.concurrent_job_syncs),
            (400, 100, 50)
        );
        assert_eq!(c.label(), "tuned+overrides");
        assert_eq!(ControlPlane::tuned().label(), "tuned");
        assert_eq!(c.describe()["concurrent_job_syncs"], "50");
        let parsed: ControlPlane =
            serde_json::from_str(r#"{"profile":"tuned","kcmQps":300}"#).unwrap();
        assert_eq!(parsed.settings().kcm_qps, 300);
        assert!(serde_json::from_str::<ControlPlane>(r#"{"kcmQPS":1}"#).is_err());
    }
}
