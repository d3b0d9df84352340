//! The command line: parse (clap), call the library, print, and exit with
//! the exit codes of the book (docs/src/troubleshooting.md). Not part of
//! the library: `main.rs` owns it.

mod answer;
mod args;
mod bench;
mod changes;
mod command;
mod errors;
mod here;
mod image;
mod interrupt;
mod measure;
mod on_cluster;
mod provider;
mod report;
mod status;
mod thor;
mod tools;
mod up;
mod validate;

pub use crate::cli::command::main;
