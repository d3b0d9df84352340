//! Benchmark: `up` from a warm binary cache to a ready cluster, and `down`,
//! repeated; prints median, min and max. Figures, not assertions.
//!
//!     cargo bench -p harness --bench lifecycle [-- RUNS]

use std::time::{Duration, Instant};

use harness::cluster::{Cluster, ClusterSpec, NodeSpec};
use harness::k8s::K8sRelease;
use harness::lifecycle::{self, UpOptions};

fn stats(label: &str, mut xs: Vec<Duration>) {
    xs.sort();
    let secs = |d: Duration| d.as_secs_f64();
    println!(
        "{label:<6} median {:>6.2} s   min {:>6.2} s   max {:>6.2} s   (n={})",
        secs(xs[xs.len() / 2]),
        secs(xs[0]),
        secs(xs[xs.len() - 1]),
        xs.len()
    );
}

fn main() -> anyhow::Result<()> {
    let runs: usize = std::env::args()
        .skip(1)
        .find(|a| !a.starts_with('-'))
        .and_then(|a| a.parse().ok())
        .unwrap_or(5);
    let state = tempfile::tempdir()?;
    // SAFETY: set before any other thread exists.
    unsafe { std::env::set_var("HARNESS_STATE_DIR", state.path()) };
    unsafe { std::env::set_var("HARNESS_NO_PROGRESS", "1") };
    let rt = tokio::runtime::Runtime::new()?;
    let k8s = K8sRelease::default_release();
    let spec = |name: String| ClusterSpec::new(name, k8s.minor);
    let t = Instant::now();
    rt.block_on(lifecycle::resolve_tools(
        &spec("resolve".into()),
        Default::default(),
    ))?;
    println!(
        "tool resolution (warm cache): {:.2} s",
        t.elapsed().as_secs_f64()
    );
    let (mut ups, mut downs) = (Vec::new(), Vec::new());
    for i in 0..runs {
        let opts = UpOptions {
            spec: spec(format!("bench-{i}")),
            bins: Default::default(),
            timeout: Duration::from_secs(120),
        };
        let t = Instant::now();
        let cluster = rt.block_on(lifecycle::up(&opts))?;
        ups.push(t.elapsed());
        let t = Instant::now();
        cluster.down(false)?;
        downs.push(t.elapsed());
        println!(
            "run {i}: up {:.2} s, down {:.2} s",
            ups[i].as_secs_f64(),
            downs[i].as_secs_f64()
        );
    }
    println!(
        "Kubernetes v{} local cluster, {} kwok nodes, {runs} runs:",
        k8s.version,
        NodeSpec::default().count
    );
    stats("up", ups);
    stats("down", downs);
    Ok(())
}
