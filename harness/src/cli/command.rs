//! The top-level command: clap's parser over every subcommand, and its
//! dispatch to each subcommand's module, mapping errors to the book's (docs/src/troubleshooting.md)
//! exit codes.

use anyhow::Result;

use crate::cli::bench;
use crate::cli::image;
use crate::cli::measure;
use crate::cli::report;
use crate::cli::status;
use crate::cli::tools;
use crate::cli::up;
use crate::cli::validate;
use clap::{Parser, Subcommand};

use harness::error;

#[derive(Parser, Debug)]
#[command(
    name = "harness",
    version,
    about = "End-to-end test and benchmark harness for batch workloads on Kubernetes"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Find or build the binaries a cluster needs.
    #[command(subcommand)]
    Tools(tools::ToolsCommand),
    /// Bring a cluster up and print how to use it.
    Up(Box<up::UpArgs>),
    /// Stop a cluster and remove its state.
    Down(up::DownArgs),
    /// List clusters and the health of each component.
    Status(status::StatusArgs),
    /// Check configs, manifests, suite cases and baselines offline.
    Validate(validate::ValidateArgs),
    /// Benchmarks.
    #[command(subcommand)]
    Bench(bench::BenchCommand),
    /// Measure any workload — a command, a folder of manifests, A/B
    /// variants — in the benchmark's measurement window on fresh clusters.
    Measure(Box<measure::MeasureArgs>),
    /// Where each binary would come from right now, and what the kind provider would find.
    Doctor(tools::DoctorArgs),
    /// Pages rendered from recorded results (the README's headline table).
    #[command(subcommand)]
    Report(report::ReportCommand),
    /// The image rounds run in on a cluster.
    #[command(subcommand)]
    Image(image::ImageCommand),
    /// The CLI reference page (docs/src/cli.md) in Markdown.
    #[command(hide = true)]
    HelpMarkdown,
}

/// Warnings, less kube-rs's per-attempt connection errors while a
/// component is starting (readiness polling reports those itself).
pub const DEFAULT_LOG_FILTER: &str = "warn,kube_client::client::builder=off";

/// Entry point of the binary: returns the process exit code.
pub fn main() -> i32 {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() { error::EXIT_USAGE } else { 0 };
        }
    };
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("HARNESS_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(DEFAULT_LOG_FILTER)),
        )
        .with_writer(std::io::stderr)
        .init();
    harness::init_crypto();
    // A bad limit is refused once, up front (not ignored, not blamed on
    // the first file read).
    if let Err(e) = harness::input::max_bytes() {
        return crate::cli::errors::report(&e);
    }
    let rt = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: starting the async runtime: {e}");
            return error::EXIT_FAILED;
        }
    };
    match rt.block_on(run(cli)) {
        Ok(code) => code,
        Err(e) => crate::cli::errors::report(&e),
    }
}

async fn run(cli: Cli) -> Result<i32> {
    match cli.command {
        Command::Tools(c) => tools::run(c).await,
        Command::Up(args) => up::up(*args).await,
        Command::Down(args) => up::down(&args),
        Command::Status(args) => status::status(&args).await,
        Command::Validate(args) => validate::validate(&args),
        Command::Bench(c) => bench::run(c).await,
        Command::Doctor(args) => tools::doctor(&args).await,
        Command::Measure(args) => measure::measure(&args).await,
        Command::Report(c) => report::run(&c),
        Command::Image(c) => image::run(&c).await,
        Command::HelpMarkdown => {
            print!(
                "{}",
                report::help_markdown(&<Cli as clap::CommandFactory>::command())
            );
            Ok(0)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_command_parses_its_help() {
        for cmd in [
            vec!["harness", "tools", "install", "--help"],
            vec!["harness", "up", "--help"],
            vec!["harness", "bench", "thor", "--help"],
            vec!["harness", "bench", "gang", "--help"],
            vec!["harness", "validate", "--help"],
            vec!["harness", "measure", "--help"],
        ] {
            let e = Cli::try_parse_from(&cmd).unwrap_err();
            assert_eq!(e.kind(), clap::error::ErrorKind::DisplayHelp, "{cmd:?}");
        }
        assert!(Cli::try_parse_from(["harness", "frobnicate"]).is_err());
    }
}

#[cfg(test)]
mod up_tests {
    use crate::cli::command::{Cli, Command};
    use crate::cli::provider::ProviderName;
    use crate::cli::up::up;
    use clap::Parser;
    use std::path::Path;

    #[test]
    fn cli_parses_up_flags() {
        let cli = Cli::try_parse_from([
            "harness",
            "up",
            "--name",
            "g",
            "--k8s-version",
            "1.36",
            "--nodes",
            "2",
            "--node-cpu",
            "4",
            "--feature-gates",
            "GenericWorkload=true",
        ])
        .unwrap();
        match cli.command {
            Command::Up(a) => {
                assert_eq!(a.name, "g");
                assert_eq!(a.nodes, 2);
                assert_eq!(a.tools.k8s_version(), "1.36");
                assert_eq!(a.target.provider, ProviderName::Local);
            }
            other => panic!("parsed as {other:?}"),
        }
    }

    #[test]
    fn kind_flags_parse() {
        let cli = Cli::try_parse_from([
            "harness",
            "up",
            "--provider",
            "kind",
            "--name",
            "e2e",
            "--config",
            "kind-configs/gang-1.37.yaml",
            "--kueue",
        ])
        .unwrap();
        match cli.command {
            Command::Up(a) => {
                assert_eq!(a.target.provider, ProviderName::Kind);
                assert_eq!(
                    a.target.kind.config.as_deref(),
                    Some(Path::new("kind-configs/gang-1.37.yaml"))
                );
                assert!(a.kueue.kueue);
                assert_eq!(a.target.kind.kind_profile, None);
                assert_eq!(a.tools.k8s_version, None);
                assert_eq!(a.tools.k8s_version(), "1.37");
            }
            other => panic!("parsed as {other:?}"),
        }
    }

    #[test]
    fn hpcc_flags_parse_and_depend_on_hpcc() {
        let cli = Cli::try_parse_from([
            "harness",
            "up",
            "--name",
            "e2e",
            "--hpcc",
            "jobset",
            "--hpcc-chart",
            "./poc",
            "--hpcc-values",
            "v.yaml",
            "--hpcc-workers",
            "4",
            "--keep",
        ])
        .unwrap();
        let Command::Up(a) = cli.command else {
            panic!("not up")
        };
        assert_eq!(a.hpcc.hpcc, Some(harness::install::hpcc::HpccMode::Jobset));
        assert_eq!(a.hpcc.hpcc_chart.as_deref(), Some("./poc"));
        assert_eq!(a.hpcc.hpcc_workers, Some(4));
        assert_eq!(a.hpcc.hpcc_timeout, 900);
        assert!(a.hpcc.keep);
        for bad in [
            vec!["harness", "up", "--hpcc-chart", "./poc"],
            vec!["harness", "up", "--hpcc-workers", "2"],
            vec!["harness", "up", "--hpcc", "baseline", "--hpcc-workers", "0"],
            vec!["harness", "up", "--hpcc", "roxie"],
        ] {
            let e = Cli::try_parse_from(&bad).unwrap_err();
            assert!(e.use_stderr(), "{bad:?} parsed");
        }
    }

    /// Issue 30: every `up` flag is checked by one preflight, each bad one
    /// named with what is wrong.
    #[test]
    fn up_preflight_checks_every_flag() {
        let parse = |extra: &[&str]| {
            let mut argv = vec!["harness", "up", "--k8s-version", "1.36"];
            argv.extend(extra);
            match Cli::try_parse_from(&argv).unwrap().command {
                Command::Up(a) => a,
                other => panic!("parsed as {other:?}"),
            }
        };
        crate::cli::up::preflight(&parse(&[
            "--feature-gates",
            "GenericWorkload=true,WorkloadWithJob=false",
            "--runtime-config",
            "scheduling.k8s.io/v1=true",
            "--node-cpu",
            "500m",
        ]))
        .unwrap();
        for (extra, says) in [
            (
                &["--node-cpu", "banana"][..],
                "--node-cpu: \"banana\" is not a Kubernetes quantity",
            ),
            (
                &["--node-memory", "lots"],
                "--node-memory: \"lots\" is not a Kubernetes quantity",
            ),
            (
                &["--node-cpu", "0"],
                "--node-cpu: \"0\" is not more than zero",
            ),
            (
                &["--node-memory=-1Gi"],
                "--node-memory: \"-1Gi\" is not more than zero",
            ),
            (
                &["--feature-gates", "Bogus=true"],
                "--feature-gates: \"Bogus\" is not a feature gate of Kubernetes 1.36",
            ),
            (
                &["--feature-gates", "genericworkload=true"],
                "(similar: GenericWorkload)",
            ),
            (
                &["--runtime-config", "nope.k8s.io/v1=true"],
                "--runtime-config: API \"nope.k8s.io/v1\" does not exist",
            ),
            (&["--timeout", "0"], "--timeout 0: must be at least 1"),
            (&["--nodes", "0"], "--nodes 0: must be at least 1"),
            (&["--node-pods", "0"], "--node-pods 0: must be at least 1"),
            (
                &["--hpcc-timeout", "0"],
                "--hpcc-timeout 0: must be at least 1",
            ),
            (&["--name", "Bad_Name"], "invalid cluster name"),
            (&["--bin", "nope=/x"], "--bin nope: unknown binary"),
        ] {
            let e = crate::cli::up::preflight(&parse(extra)).unwrap_err();
            assert_eq!(harness::error::exit_code(&e), 2, "{extra:?}");
            assert!(e.to_string().contains(says), "{extra:?}: {e}");
        }
    }

    #[test]
    fn hpcc_on_the_local_provider_is_refused_before_anything_starts() {
        let cli = Cli::try_parse_from(["harness", "up", "--name", "never", "--hpcc", "baseline"])
            .unwrap();
        let Command::Up(a) = cli.command else {
            panic!("not up")
        };
        let rt = tokio::runtime::Runtime::new().unwrap();
        let e = rt.block_on(up(*a)).unwrap_err();
        assert_eq!(harness::error::exit_code(&e), 2);
        assert!(e.to_string().contains("--provider kind"), "{e}");
        assert!(
            !harness::cluster::state::cluster_dir("never")
                .join("state.json")
                .exists()
        );
    }
}
