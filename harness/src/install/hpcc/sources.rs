//! What HPCC needs from outside before any cluster is made: its chart
//! (`helm show chart`, which fetches a repository's index or an OCI or
//! URL chart) and its platform image (in the Docker engine, or pulled
//! now). Where either cannot be had — a machine that reaches no chart
//! repository or container registry — `up --hpcc` stops with exit 3
//! naming it, instead of creating a cluster and failing in `helm install`
//! or waiting for pods whose image never comes. Never a stand-in HPCC.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use anyhow::{Context, Result};
use serde_json::Value;

use crate::error::env_missing;
use crate::install::hpcc::helm::{ChartRef, chart_ref, find_helm};
use crate::install::hpcc::spec::HpccOptions;
use crate::tools::exec::{last_lines, output_with_timeout};

/// The chart's and the image's default registry repository (the chart's
/// `global.image.root`/`name` defaults, hpcc-systems/helm-chart
/// `helm/hpcc/values.yaml`).
const DEFAULT_ROOT: &str = "hpccsystems";
const DEFAULT_NAME: &str = "platform-core";

/// Ok when the chart can be read and the image `values` ask for is in
/// the engine or can be pulled with `docker` (the kind provider's
/// engine); exit 3 naming what cannot be had otherwise.
pub fn check(opts: &HpccOptions, values: &Value, docker: &Path) -> Result<String> {
    let chart = chart_ref(opts.mode, opts.chart.as_deref())?;
    let text = show_chart(&find_helm()?, &chart)?;
    let image = image_of(values, &app_version(&text)?);
    image_available(docker, &image)?;
    Ok(image)
}

fn show_chart(helm: &Path, chart: &ChartRef) -> Result<String> {
    let mut cmd = Command::new(helm);
    cmd.args(["show", "chart", &chart.chart]);
    if let Some(r) = &chart.repo {
        cmd.args(["--repo", r]);
    }
    if let Some(v) = &chart.version {
        cmd.args(["--version", v]);
    }
    let what = match (&chart.repo, &chart.version) {
        (Some(r), Some(v)) => format!("HPCC's chart {} {v} from {r}", chart.chart),
        _ => format!("the chart {}", chart.chart),
    };
    let out = output_with_timeout(&mut cmd, Duration::from_secs(60))
        .with_context(|| format!("helm show chart ({what})"))?;
    if !out.status.success() {
        return Err(env_missing(
            format!(
                "{what} cannot be fetched here: {}",
                last_lines(&out, 2).join(" ")
            ),
            "pass a chart this machine can read with --hpcc-chart (a directory or .tgz), or run where the chart repository answers; the harness installs no stand-in for HPCC",
        ));
    }
    String::from_utf8(out.stdout).context("helm show chart: not UTF-8")
}

/// `appVersion` of a Chart.yaml.
fn app_version(chart_yaml: &str) -> Result<String> {
    let docs = crate::yaml::documents(chart_yaml, "the chart's Chart.yaml")?;
    docs.first()
        .and_then(|d| d["appVersion"].as_str().map(str::to_string))
        .context("the chart's Chart.yaml has no appVersion (the platform image's default tag)")
}

/// The platform image the values ask for: `global.image` root/name and
/// version, each defaulting as the chart does.
fn image_of(values: &Value, app_version: &str) -> String {
    let img = &values["global"]["image"];
    let s = |k: &str, d: &str| img[k].as_str().unwrap_or(d).to_string();
    format!(
        "{}/{}:{}",
        s("root", DEFAULT_ROOT),
        s("name", DEFAULT_NAME),
        s("version", app_version)
    )
}

fn image_available(docker: &Path, image: &str) -> Result<()> {
    let run = |args: &[&str], secs| {
        output_with_timeout(
            Command::new(docker)
                .envs(crate::tools::engine::env())
                .args(args),
            Duration::from_secs(secs),
        )
    };
    if run(&["image", "inspect", image], 30).is_ok_and(|o| o.status.success()) {
        return Ok(());
    }
    let out = run(&["pull", image], 600).with_context(|| format!("docker pull {image}"))?;
    if out.status.success() {
        return Ok(());
    }
    Err(env_missing(
        format!(
            "HPCC's platform image {image} is not in the Docker engine and cannot be pulled: {}",
            last_lines(&out, 2).join(" ")
        ),
        "load it into the engine (`docker load`) or run where its registry answers; the harness installs no stand-in for HPCC",
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_image_defaults_as_the_chart_does() {
        let v = json!({"global": {}});
        assert_eq!(image_of(&v, "10.8.0"), "hpccsystems/platform-core:10.8.0");
        let v = json!({"global": {"image": {"root": "my.reg/h", "version": "10.8.2-rc1"}}});
        assert_eq!(image_of(&v, "10.8.0"), "my.reg/h/platform-core:10.8.2-rc1");
        assert_eq!(
            app_version("apiVersion: v2\nname: hpcc\nappVersion: 10.8.0\n").unwrap(),
            "10.8.0"
        );
        assert!(app_version("apiVersion: v2\nname: hpcc\n").is_err());
    }
}
