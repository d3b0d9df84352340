//! `harness report …`: pages rendered from recorded result files (the
//! README's headline table; how long timed commands took; change points
//! over a series of results,
//! written as history.md, history.html and history.json), and `help-markdown`, the CLI reference page
//! rendered from these clap definitions. harness/tests/docs.rs checks that
//! every generated block committed in README.md and docs/src/ equals what
//! these commands print.

use std::fmt::Write as _;
use std::path::PathBuf;

use anyhow::Result;
use clap::{Args, Subcommand};
use harness::bench::core::history;
use harness::bench::thor::headline;
use harness::bench::thor::result::ModeResult;
use harness::output::{Out, check_out};

use crate::cli::changes::ChangesArgs;

/// The most rounds `report calibrate` draws at (each draw judges them
/// once per shift of the grid) and the most draws per metric and n.
const MAX_ROUNDS: usize = 50;
const MAX_TRIALS: usize = 10_000;

#[derive(Subcommand, Debug)]
pub enum ReportCommand {
    /// The headline table: each JobSet mode ÷ baseline from recorded
    /// baseline files (ratio of medians; ↑ ↓ ~ the verdict of the one
    /// comparison rule where both sides have repeated runs), one row per
    /// run set and mode.
    Headline {
        /// Recorded baseline files, e.g. baselines/local/1.37/smoke.json.
        #[arg(required_unless_present = "matrix", conflicts_with = "matrix")]
        files: Vec<PathBuf>,
        /// The files an answer matrix names (baselines/answer.yaml), in
        /// its order; the sets it names that are not recorded yet are
        /// listed after the table with the command that records them.
        #[arg(long, value_name = "FILE")]
        matrix: Option<PathBuf>,
    },
    /// The run-to-run spread behind the headline: each headline metric's
    /// median [min–max], coefficient of variation and compare band per
    /// recorded file and mode.
    Spread {
        /// Recorded baseline files, e.g. baselines/local/1.37/smoke.json.
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
    /// How often the comparison rule is wrong, and the smallest change it
    /// catches, per kind of metric and number of rounds: measured on the
    /// recorded rounds of baseline files (runs of one build, so a verdict
    /// between subsets of them is false; power from their values shifted).
    /// The book's calibration table.
    Calibrate {
        /// Recorded baseline files with their rounds' samples.
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Numbers of rounds to measure at, comma-separated.
        #[arg(long, value_delimiter = ',', default_value = "3,5,10")]
        rounds: Vec<usize>,
        /// Seeded draws per metric and number of rounds.
        #[arg(long, default_value_t = 200)]
        trials: usize,
        /// Numbers of runs the table of machines left out (each machine a
        /// baseline holds left out of it in turn, its run sets judged
        /// against the rest) measures at.
        #[arg(long, value_delimiter = ',', default_value = "1,3,5")]
        across_rounds: Vec<usize>,
        /// Run sets drawn per machine left out and number of runs (at one
        /// run: each of its runs, up to this many).
        #[arg(long, default_value_t = 40)]
        across_trials: usize,
    },
    /// Where each headline metric of each mode changes level over a series
    /// of `bench thor` results (one DIR each, oldest first).
    History(HistoryArgs),
    /// Join the shards of one run set (`bench thor`, `measure`, `bench
    /// gang` or `bench cron` with `--shard K/N` and one --seed, each shard's out dir) into the result,
    /// report, intervals and verdicts one run would give: refused when they
    /// are not shards of one run set (it says what differs); a round no
    /// shard brought is said, never dropped.
    Merge {
        /// The shards' out dirs (or their result.json), any order.
        #[arg(required = true, value_name = "DIR")]
        dirs: Vec<PathBuf>,
        /// Where the merged result.json and its reports go.
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
    },
    /// A round's out dir as a tar on stdout, for the caller that runs
    /// rounds on a cluster (`--on-cluster`: exec'd in the round's pod);
    /// exit 75 while the round still runs. --release lets the pod end.
    #[command(hide = true)]
    Pack {
        dir: PathBuf,
        #[arg(long)]
        release: bool,
    },
    /// Render a saved result again: the report.md of a `bench thor` or
    /// `measure` out dir, from its result.json (renderers only format, so
    /// the same result always gives the same report). Printed, or with
    /// --write every report file written beside the result.
    Render {
        /// Out dirs of `bench thor` or `measure` (or their result.json).
        #[arg(required = true, value_name = "DIR")]
        dirs: Vec<PathBuf>,
        /// Write report.md and junit.xml into each DIR
        /// instead of printing report.md.
        #[arg(long)]
        write: bool,
        /// Judge the saved runs again by today's rule first (the runs are
        /// kept; their ratios, intervals and verdicts are derived again);
        /// with --write the result file is written again too.
        #[arg(long)]
        rejudge: bool,
    },
    /// What one Kubernetes minor changes against another — the book's
    /// "what changes in 1.38" page: feature gates and API versions from
    /// the facts tables, every case of the recorded suite runs whose
    /// outcome differs (a pre-release held to the release before it), and
    /// the Thor smoke's JobSet ÷ baseline ratios of recorded baselines of
    /// both minors, with their intervals.
    Changes(ChangesArgs),
    /// How long timed commands took and where the time went (the README's
    /// and the quick start's tables): renders recorded timing files, or
    /// with --record reads timed logs (ci/timed.sh writes them: `# name:`,
    /// `# command:`, `# commit:`, `# date:`, `# machine:` header lines,
    /// the command's output, GNU time's report) into one.
    Timings(TimingsArgs),
}
#[derive(Args, Debug)]
pub struct TimingsArgs {
    /// Recorded timing files (harness.timings/v1) to render, e.g.
    /// docs/src/timings/fresh-machine.json; with --record, timed logs.
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// Read the FILEs as timed logs and write one recorded file here.
    #[arg(long, value_name = "OUT", requires = "title")]
    pub record: Option<PathBuf>,
    /// With --record: what was timed, the table's first line.
    #[arg(long, requires = "record")]
    pub title: Option<String>,
}
#[derive(Args, Debug)]
pub struct HistoryArgs {
    /// Result directories (or result.json files), in series order.
    #[arg(required = true, value_name = "DIR")]
    pub dirs: Vec<PathBuf>,
    /// Order the results by their `started` time instead of as given.
    #[arg(long)]
    pub by_started: bool,
    /// Where to write history.md, history.html and history.json (not a
    /// directory that holds the results: outputs never touch inputs).
    #[arg(long, default_value = "bench-out/history")]
    pub out: PathBuf,
}

pub fn run(c: &ReportCommand) -> Result<i32> {
    match c {
        ReportCommand::Headline {
            matrix: Some(m), ..
        } => headline_of_matrix(m),
        ReportCommand::Headline { files, .. } => {
            let paths: Vec<&std::path::Path> = files.iter().map(PathBuf::as_path).collect();
            let recorded = headline::load(&paths)?;
            print!("{}", headline::markdown(&recorded, &specs_of(&recorded)));
            Ok(0)
        }
        ReportCommand::Calibrate {
            files,
            rounds,
            trials,
            across_rounds,
            across_trials,
        } => calibrate(files, rounds, (*trials, *across_trials), across_rounds),
        ReportCommand::Spread { files } => {
            let paths: Vec<&std::path::Path> = files.iter().map(PathBuf::as_path).collect();
            let recorded = headline::load(&paths)?;
            print!(
                "{}",
                headline::spread_markdown(&recorded, &specs_of(&recorded))
            );
            Ok(0)
        }
        ReportCommand::Changes(a) => {
            print!("{}", crate::cli::changes::markdown(a)?);
            Ok(0)
        }
        ReportCommand::Timings(a) => timings(a),
        ReportCommand::Merge { dirs, out } => merge(dirs, out),
        ReportCommand::Pack { dir, release } => {
            match harness::bench::on_cluster::collect::pack(dir, *release)? {
                Ok(()) => Ok(0),
                Err(code) => Ok(code),
            }
        }
        ReportCommand::Render {
            dirs,
            write,
            rejudge,
        } => render(dirs, *write, *rejudge),
        ReportCommand::History(a) => history(a),
    }
}

/// `report headline --matrix`: the headline table of the files an answer
/// matrix names, read inside the repository.
fn headline_of_matrix(m: &std::path::Path) -> Result<i32> {
    let root = harness::paths::repo_root(&std::env::current_dir()?)
        .ok_or_else(|| harness::error::bad_input("report headline --matrix: run it inside the repository (its scenarios and baselines are read from there)"))?;
    let matrix = harness::bench::thor::answer::load(&root, m)?;
    print!(
        "{}",
        headline::matrix_markdown(&root, &matrix, harness::bench::recorded::specs_of)?
    );
    Ok(0)
}

/// `report calibrate`: the comparison rule's error rates and power per
/// number of rounds, then across machines and loads.
fn calibrate(
    files: &[PathBuf],
    rounds: &[usize],
    (trials, across_trials): (usize, usize),
    across_rounds: &[usize],
) -> Result<i32> {
    use harness::bench::core::{calibrate, calibrate_across};
    if rounds.iter().any(|n| !(2..=MAX_ROUNDS).contains(n))
        || across_rounds.iter().any(|n| !(1..=MAX_ROUNDS).contains(n))
        || !(1..=MAX_TRIALS).contains(&trials)
        || !(1..=MAX_TRIALS).contains(&across_trials)
    {
        return Err(harness::error::bad_input(format!(
            "report calibrate: --rounds are 2 to {MAX_ROUNDS} each, --across-rounds 1 to {MAX_ROUNDS}, --trials and --across-trials 1 to {MAX_TRIALS}"
        )));
    }
    let paths: Vec<&std::path::Path> = files.iter().map(PathBuf::as_path).collect();
    let named: Vec<(String, harness::bench::core::baseline::Baseline)> = headline::load(&paths)?
        .into_iter()
        .zip(files)
        .map(|(r, f)| (f.display().to_string(), r.baseline))
        .collect();
    let series = calibrate::series(&named, harness::bench::recorded::specs_of);
    let rows = calibrate::calibrate(&series, rounds, trials);
    print!("{}", calibrate::markdown(&rows, &series, rounds, trials));
    let rows = calibrate_across::calibrate(
        &named,
        harness::bench::recorded::specs_of,
        across_rounds,
        across_trials,
    );
    print!(
        "\n**On a machine the baseline has not seen** (`--compare` off the recording machine, each machine left out in turn):\n\n{}",
        calibrate_across::markdown(&rows, &named, across_trials, "`bench thor --record-band`")
    );
    Ok(0)
}

/// `report timings`: record timed logs into one file (and render it), or
/// render recorded timing files.
fn timings(a: &TimingsArgs) -> Result<i32> {
    use harness::timings;
    if let Some(out) = &a.record {
        let logs: Vec<&std::path::Path> = a.files.iter().map(PathBuf::as_path).collect();
        let inputs: Vec<(&str, &std::path::Path)> = logs.iter().map(|p| ("", *p)).collect();
        check_out("--record", out, Out::File, &inputs)?;
        let r = timings::record(a.title.as_deref().unwrap_or_default(), &logs)?;
        timings::write(out, &r)?;
        print!("{}", timings::markdown(&r));
        eprintln!("wrote {}", out.display());
    } else {
        for (i, f) in a.files.iter().enumerate() {
            if i > 0 {
                println!();
            }
            print!("{}", timings::markdown(&timings::load(f)?));
        }
    }
    Ok(0)
}

/// `report merge`: join the shards' out dirs into one run set's result
/// and reports in `out`.
fn merge(dirs: &[PathBuf], out: &std::path::Path) -> Result<i32> {
    let paths: Vec<&std::path::Path> = dirs.iter().map(PathBuf::as_path).collect();
    let inputs: Vec<(&str, &std::path::Path)> = paths.iter().map(|p| ("", *p)).collect();
    check_out("--out", out, Out::Dir, &inputs)?;
    let merged = harness::bench::merge::merge_dirs(&paths)?;
    for f in merged.write_all(out)? {
        eprintln!("wrote {}", f.display());
    }
    print!("{}", merged.markdown());
    Ok(0)
}

/// `report render`: each saved result's report again (rejudged first if
/// asked), printed or written beside it.
fn render(dirs: &[PathBuf], write: bool, rejudge: bool) -> Result<i32> {
    for d in dirs {
        let mut saved = harness::bench::saved::read(d, "report render")?;
        if rejudge {
            saved.rejudge()?;
        }
        if write {
            let files = match rejudge {
                true => saved.write_all(d)?,
                false => saved.write_reports(d)?,
            };
            for f in files {
                eprintln!("wrote {}", f.display());
            }
        } else {
            print!("{}", saved.markdown());
        }
    }
    Ok(0)
}

/// `report history`: the change points of each mode's headline metrics
/// over a series of results, printed and written to `--out`.
fn history(a: &HistoryArgs) -> Result<i32> {
    let inputs: Vec<(&str, &std::path::Path)> = a.dirs.iter().map(|p| ("", p.as_path())).collect();
    check_out("--out", &a.out, Out::Dir, &inputs)?;
    let entries = history::load::<ModeResult>(&a.dirs, a.by_started)?;
    let h = history::history(&entries);
    for x in &h.series {
        for c in &x.change_points {
            println!(
                "{} {}: change at {} ({}): {} → {} (p = {:.3})",
                x.mode,
                x.metric,
                c.index + 1,
                h.labels[c.index],
                c.before,
                c.after,
                c.p_value
            );
        }
    }
    if h.series.iter().all(|x| x.change_points.is_empty()) {
        println!("no change points in {} results", h.labels.len());
    }
    for f in history::write(&a.out, &h)? {
        println!("wrote {}", f.display());
    }
    Ok(0)
}

/// The metrics whose rows the recorded files' answer shows: their
/// workload's (`bench::recorded::specs_of`), the first file's.
fn specs_of(recorded: &[headline::Recorded]) -> Vec<harness::bench::core::metric::Spec> {
    recorded
        .first()
        .map(|r| harness::bench::recorded::specs_of(&r.baseline))
        .unwrap_or_default()
}

/// The CLI reference: every visible command's long help, as clap prints
/// it, one section per command (depth-first, in definition order).
pub fn help_markdown(root: &clap::Command) -> String {
    let mut root = root.clone().term_width(100);
    root.build();
    let mut out = String::from(
        "Every command and flag of `harness`, rendered from its clap definitions \
         (`harness help-markdown`); `harness <command> --help` prints the same.\n",
    );
    section(&mut out, &mut root, "harness");
    out
}

fn section(out: &mut String, cmd: &mut clap::Command, path: &str) {
    let help = cmd.render_long_help().to_string();
    let _ = write!(out, "\n## `{path}`\n\n```text\n{}\n```\n", help.trim_end());
    for sub in cmd.get_subcommands_mut() {
        if sub.is_hide_set() || sub.get_name() == "help" {
            continue;
        }
        let p = format!("{path} {}", sub.get_name());
        section(out, sub, &p);
    }
}
