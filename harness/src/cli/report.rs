//! `harness report history DIR…`: change points in a series of Thor
//! results, written as history.md, history.html and history.json.

use std::path::PathBuf;

use anyhow::Result;
use clap::{Args, Subcommand};
use harness::bench::thor::history;

#[derive(Subcommand, Debug)]
pub enum ReportCommand {
    /// Where each headline metric of each mode changes level over a series
    /// of `bench thor` results (one DIR each, oldest first).
    History(HistoryArgs),
}

#[derive(Args, Debug)]
pub struct HistoryArgs {
    /// Result directories (or result.json files), in series order.
    #[arg(required = true, value_name = "DIR")]
    pub dirs: Vec<PathBuf>,
    /// Order the results by their `started` time instead of as given.
    #[arg(long)]
    pub by_started: bool,
    /// Where to write history.md, history.html and history.json.
    #[arg(long, default_value = ".")]
    pub out: PathBuf,
}

pub fn run(c: ReportCommand) -> Result<i32> {
    match c {
        ReportCommand::History(a) => {
            let entries = history::load(&a.dirs, a.by_started)?;
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
    }
}
