//! The runs of one `bench thor`, whatever the provider: the scenario's
//! modes in rounds (`bench::core::rounds`), each run's progress line, and
//! the Result they fill (`Progress`), with the scenario's shape and model.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::Result;

use crate::bench::core::baseline;
use crate::bench::core::result::now;
use crate::bench::core::result::{ShardOf, Statistics};
use crate::bench::core::rounds::{self, Progress, announce};
use crate::bench::core::shard::Shard;
use crate::bench::thor::result::{ModeResult, RESULT_SCHEMA, ThorResult, ThorShape};
use crate::metrics::timeline::Timeline;
use crate::progress::Step;
use crate::workload::thor::Mode;
use crate::workload::thor::scenario::ThorScenario;

/// What the runs are and where they go.
pub struct Plan<'a> {
    pub scenario_file: &'a Path,
    pub modes: &'a [Mode],
    pub repeat: u32,
    /// `--seed`; None: one from the clock (printed, kept in the Result).
    pub seed: Option<u64>,
    /// `--shard K/N`: only this slice of the rounds.
    pub shard: Option<Shard>,
    pub out: Option<&'a Path>,
}

/// The Result being filled, run by run.
pub struct Runs {
    pub progress: Progress<ModeResult>,
    /// Each round this run set (or shard) runs, by its 0-based index in
    /// the whole: every mode once, in the order they run.
    pub rounds: Vec<(usize, Vec<Mode>)>,
    repeat: u32,
}

impl Runs {
    /// No run yet: the scenario, where it runs (`provider`, the server's
    /// `k8s_version`, what an existing cluster offered) and the order,
    /// printed with the seed that replays it.
    pub fn start(
        plan: &Plan,
        s: &ThorScenario,
        provider: &str,
        k8s_version: &str,
        capabilities: Option<crate::cluster::needs::Capabilities>,
    ) -> Runs {
        let seed = plan.seed.unwrap_or_else(crate::stats::clock_seed);
        let rounds = rounds::plan(plan.modes, plan.repeat, seed, plan.shard);
        let mine: Vec<Vec<Mode>> = rounds.iter().map(|(_, r)| r.clone()).collect();
        announce(&names(&mine), seed);
        let result = ThorResult {
            schema: RESULT_SCHEMA.into(),
            scenario: s.name.clone(),
            scenario_file: plan.scenario_file.display().to_string(),
            provider: provider.into(),
            k8s_version: k8s_version.into(),
            harness_version: env!("CARGO_PKG_VERSION").into(),
            started: now(),
            shape: ThorShape {
                num_workers: s.thor.num_workers,
                num_workers_per_pod: s.thor.num_workers_per_pod,
                max_graphs: s.thor.max_graphs,
                graph_duration: s.graph_duration.clone(),
            },
            model: model_of(s),
            modes: BTreeMap::new(),
            harness_peak_rss_kib: 0,
            capabilities,
            timelines: Vec::new(),
            statistics: Some(statistics(
                &mine,
                seed,
                plan.modes,
                plan.shard.map(|sh| ShardOf {
                    k: sh.k,
                    n: sh.n,
                    first: rounds.first().map_or(0, |r| r.0),
                    of: plan.repeat.max(1) as usize,
                }),
            )),
            machine: crate::machine::Machine::this(),
        };
        Runs {
            progress: Progress::new(result, plan.out),
            rounds,
            repeat: plan.repeat,
        }
    }

    /// Every run in order: (round, mode).
    pub fn order(&self) -> Vec<(u32, Mode)> {
        self.rounds
            .iter()
            .flat_map(|(rep, order)| order.iter().map(move |&m| (*rep as u32, m)))
            .collect()
    }

    /// The progress line of one run; `where_` says where it runs.
    pub fn step(&self, s: &ThorScenario, mode: Mode, rep: u32, where_: &str) -> Step {
        Step::start(format!(
            "{} workunits × Thor {} ({} workers, {} at a time) in {} mode{}{where_}",
            s.workunits,
            s.name,
            s.thor.num_workers,
            s.thor.max_graphs,
            mode.name(),
            if self.repeat > 1 {
                format!(", round {}/{}", rep + 1, self.repeat)
            } else {
                String::new()
            }
        ))
    }

    /// A finished run: its figures into its mode's summary (every ratio
    /// recomputed), its timeline beside them, and the Result so far saved.
    pub fn add(
        &mut self,
        step: Step,
        mode: Mode,
        rep: u32,
        r: ModeResult,
        timeline: Timeline,
    ) -> Result<()> {
        step.done(&format!(
            "{} API requests, {} etcd writes",
            r.run.window.api_requests_total, r.run.window.etcd_writes_total
        ));
        self.progress.add(mode.name(), rep as usize, r, timeline)
    }

    /// The Result so far.
    pub fn result(&mut self) -> &mut ThorResult {
        &mut self.progress.result
    }
}

/// The rounds' modes by name.
fn names(rounds: &[Vec<Mode>]) -> Vec<Vec<String>> {
    rounds
        .iter()
        .map(|r| r.iter().map(|m| m.name().to_string()).collect())
        .collect()
}

fn statistics(
    rounds: &[Vec<Mode>],
    seed: u64,
    modes: &[Mode],
    shard: Option<ShardOf>,
) -> Statistics {
    let reference = match modes.contains(&Mode::Baseline) {
        true => Mode::Baseline.name().to_string(),
        false => modes
            .iter()
            .min()
            .map_or(String::new(), |m| m.name().to_string()),
    };
    Statistics {
        shard,
        ..Statistics::new(seed, names(rounds), reference)
    }
}

/// How the scenario models HPCC and the nodes, for the Result.
pub fn model_of(s: &ThorScenario) -> BTreeMap<String, String> {
    let control_plane = s.cluster.control_plane.describe().into_iter();
    let mut model = BTreeMap::from([
        ("kubectl".to_string(), s.kubectl.version.clone()),
        (
            "kubectl_discovery_cache".to_string(),
            format!("{:?}", s.kubectl.discovery_cache).to_lowercase(),
        ),
        (
            baseline::KUBELET_KEY.to_string(),
            match s.cluster.real_node {
                true => baseline::REAL_KUBELET.to_string(),
                false => s.kubelet.name().to_string(),
            },
        ),
        (
            "jobset_dns_hostnames".to_string(),
            s.jobset.enable_dns_hostnames.to_string(),
        ),
        ("compile_jobs".to_string(), s.compile.enabled.to_string()),
        ("linger_period".to_string(), s.thor.linger_period.clone()),
        ("workunits".to_string(), s.workunits.to_string()),
        (
            "graphs_per_workunit".to_string(),
            s.graphs_per_workunit.to_string(),
        ),
    ]);
    model.extend(control_plane.map(|(k, v)| (format!("control_plane.{k}"), v)));
    model
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::core::rounds::schedule;

    #[test]
    fn every_round_runs_every_mode_once_in_a_replayable_order() {
        let modes = [Mode::Baseline, Mode::Jobset, Mode::JobsetGang];
        let rounds = schedule(&modes, 10, 7);
        assert_eq!(rounds.len(), 10);
        for r in &rounds {
            let mut sorted = r.clone();
            sorted.sort();
            assert_eq!(sorted, modes);
        }
        // Interleaved: not one order ten times.
        assert!(rounds.iter().any(|r| r != &rounds[0]), "{rounds:?}");
        assert_eq!(schedule(&modes, 10, 7), rounds);
        assert_ne!(schedule(&modes, 10, 8), rounds);
        assert_eq!(schedule(&modes, 0, 7).len(), 1);
        let st = statistics(&rounds, 7, &modes, None);
        assert_eq!(st.reference, "baseline");
        assert_eq!(st.rounds[0].len(), 3);
        assert_eq!(
            statistics(&rounds, 7, &[Mode::JobsetGang, Mode::Jobset], None).reference,
            "jobset"
        );
    }
}
