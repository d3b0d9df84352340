//! Renderings of a measurement: result.json (the MeasureResult), and the
//! Thor benchmark's report.md, junit.xml, report.html and timelines of
//! its figures, report.md led by what only a measured workload has (each
//! run's exit code, wall time, output, and the harness's overhead).
//! Renderers only format.

use std::fmt::Write;
use std::path::{Path, PathBuf};

use anyhow::Result;

use crate::bench::core::report::{files, markdown as figures};
use crate::bench::measure::result::MeasureResult;

/// result.json, as each run finishes.
pub fn save_progress(r: &MeasureResult, out: &Path) -> Result<()> {
    crate::output::write_atomic(
        &out.join("result.json"),
        serde_json::to_string_pretty(r)? + "\n",
    )?;
    crate::bench::core::report::cost::write_timelines(&r.figures, out)
}

/// Every file: result.json, report.md, junit.xml, report.html, the
/// timelines.
pub fn write_all(r: &MeasureResult, out: &Path) -> Result<Vec<PathBuf>> {
    let mut written = files::write_all(&r.figures, out)?;
    // The figures' own JSON is inside ours.
    save_progress(r, out)?;
    crate::output::write_atomic(&out.join("report.md"), markdown(r))?;
    written.retain(|p| !p.ends_with("result.json"));
    written.insert(0, out.join("result.json"));
    Ok(written)
}

/// The workload part, then the figures (as `bench thor` shows them).
pub fn markdown(r: &MeasureResult) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "## harness measure: {} — Kubernetes v{} ({})\n",
        r.name, r.figures.k8s_version, r.figures.provider
    );
    for (name, what) in &r.variants {
        let _ = writeln!(s, "- **{name}**: `{what}`");
    }
    s.push_str("\n| variant | round | exit | wall (s) | output | harness requests | workload requests | harness / workload requests | harness CPU (s) | workload + control-plane CPU (s) | harness / them CPU |\n|---|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|\n");
    for run in &r.runs {
        let o = &run.overhead;
        let _ = writeln!(
            s,
            "| {} | {} | {}{} | {:.1} | {}/ | {} | {} | {:.1} % | {:.2} | {:.2} | {:.1} % |",
            run.variant,
            run.round + 1,
            run.exit_code,
            if run.timed_out { " (timed out)" } else { "" },
            run.wall_s,
            run.output,
            o.harness_requests,
            o.workload_requests,
            o.requests_pct,
            o.harness_cpu_s,
            o.workload_cpu_s + o.control_plane_cpu_s,
            o.cpu_pct,
        );
    }
    for run in r.runs.iter().filter(|r| !r.settled.is_empty()) {
        let _ = writeln!(
            s,
            "\n{} round {}: the window closed when {}.",
            run.variant,
            run.round + 1,
            run.settled.join(", ")
        );
    }
    for run in r.busy_starts() {
        let _ = writeln!(
            s,
            "\n**{} round {}: the cluster did not go quiet** in {:.0} s before the window opened: what its controllers still did at start-up is counted as the workload's. Its figures are not comparable with a quiet start's.",
            run.variant,
            run.round + 1,
            run.quiet_wait.map_or(0.0, |q| q.waited_s)
        );
    }
    // The workload's identity as each provider names it (target.rs,
    // existing.rs).
    let who = match r.figures.provider.as_str() {
        "local" => "`workload`",
        "existing" => {
            "`system:serviceaccount:<run>:harness-workload` (admin of the run's namespace only)"
        }
        _ => "`system:serviceaccount:harness-measure:harness-workload`",
    };
    let _ = write!(
        s,
        "\nClients are named by user and user agent; {who} is the identity the command's KUBECONFIG (and `--apply`) uses, the harness's own requests are counted apart. The `workload` row of CPU and memory is the command and everything it ran.\n\n"
    );
    s.push_str(&kueue_runner(r));
    s.push_str(&figures::markdown(&r.figures));
    s
}

/// Kueue's performance runner's own figures, per run and workload class.
fn kueue_runner(r: &MeasureResult) -> String {
    let mut s = String::new();
    if r.kueue_runner.is_empty() {
        return s;
    }
    s.push_str("### Kueue's performance runner, its own figures (summary.yaml)\n\n| variant | round | workload class | workloads | evictions | mean time to admission (ms) | mean time to finish (ms) |\n|---|---:|---|---:|---:|---:|---:|\n");
    for f in &r.kueue_runner {
        for (class, c) in &f.workload_classes {
            let _ = writeln!(
                s,
                "| {} | {} | {class} | {} | {} | {} | {} |",
                f.variant,
                f.round + 1,
                c.count,
                c.total_evictions,
                c.average_time_to_admission_ms,
                c.average_time_to_finish_ms
            );
        }
    }
    s.push_str("\nThe runner times each Workload from the first event its own watch saw of it to the events that show it admitted and finished; the harness's window runs from before the runner starts until the cluster has settled after it exits (its start-up, queue set-up and clean-up included).\n\n");
    s
}
