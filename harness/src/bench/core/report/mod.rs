//! The renderings of a Result: report.md (`markdown`, with the rounds
//! table of `repeats` and the cost sections of `cost`), report.html and
//! JUnit (`markdown` too: the page leads with the same tables), the files
//! a run set writes (`files`), and a `--compare`'s Markdown and JUnit
//! (`compare`). Renderers never recompute: they only format.

pub mod compare;
pub mod cost;
pub mod files;
pub mod markdown;
pub mod repeats;
