//! The `harness` binary: the command line over the library.

mod cli;

fn main() {
    std::process::exit(cli::main());
}
