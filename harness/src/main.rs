fn main() {
    std::process::exit(harness::cli::main());
}
