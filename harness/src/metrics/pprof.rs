//! Control-plane profiles on request (`bench thor --profile cpu,heap`):
//! Go's pprof endpoints of kube-apiserver (`/debug/pprof/*`, served while
//! `--profiling` is on, read with the admin identity) and etcd (its client
//! URL, with `--enable-pprof`): a CPU profile over N seconds from shortly
//! after a mode's window opens, then a heap profile, saved as
//! `<mode>-<run>-<component>-<kind>.pb.gz` for `go tool pprof`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result};

use crate::cluster::provider::Cluster;
use crate::error::bad_input;

/// The components profiled.
pub const COMPONENTS: &[&str] = &["kube-apiserver", "etcd"];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Cpu,
    Heap,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Cpu => "cpu",
            Kind::Heap => "heap",
        }
    }
}

/// What to profile and for how long.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    pub kinds: Vec<Kind>,
    /// Length of the CPU profile.
    pub seconds: u32,
    /// Where the files go.
    pub dir: PathBuf,
}

/// `cpu,heap` → kinds; anything else is a usage error naming it.
pub fn parse_kinds(list: &str) -> Result<Vec<Kind>> {
    let mut kinds = Vec::new();
    for k in list.split(',').map(str::trim).filter(|k| !k.is_empty()) {
        let kind = match k {
            "cpu" => Kind::Cpu,
            "heap" => Kind::Heap,
            other => {
                return Err(bad_input(format!(
                    "--profile: unknown profile {other:?}; cpu, heap or both (cpu,heap)"
                )));
            }
        };
        if !kinds.contains(&kind) {
            kinds.push(kind);
        }
    }
    if kinds.is_empty() {
        return Err(bad_input("--profile: name cpu, heap or both"));
    }
    Ok(kinds)
}

/// The pprof path of a kind.
pub fn endpoint(kind: Kind, seconds: u32) -> String {
    match kind {
        Kind::Cpu => format!("/debug/pprof/profile?seconds={seconds}"),
        Kind::Heap => "/debug/pprof/heap".into(),
    }
}

/// `<prefix>-<component>-<kind>.pb.gz`
pub fn file_name(prefix: &str, component: &str, kind: Kind) -> String {
    format!("{prefix}-{component}-{}.pb.gz", kind.name())
}

/// After `delay`, take the requested profiles of every component (CPU
/// profiles of all components at once); the files written. `prefix`
/// names the run (mode and repeat).
pub async fn collect(
    cluster: &impl Cluster,
    req: &Request,
    prefix: &str,
    delay: Duration,
) -> Result<Vec<PathBuf>> {
    std::fs::create_dir_all(&req.dir).with_context(|| format!("creating {}", req.dir.display()))?;
    tokio::time::sleep(delay).await;
    let mut written = Vec::new();
    for &kind in &req.kinds {
        let path = endpoint(kind, req.seconds);
        let fetches = COMPONENTS.iter().map(|c| {
            let path = path.clone();
            async move {
                let body = cluster
                    .debug_get(c, &path)
                    .await
                    .with_context(|| format!("{} profile of {c}", kind.name()))?;
                Ok::<_, anyhow::Error>((c, body))
            }
        });
        for r in futures::future::join_all(fetches).await {
            let (c, body) = r?;
            let file = req.dir.join(file_name(prefix, c, kind));
            write(&file, &body)?;
            written.push(file);
        }
    }
    Ok(written)
}

fn write(file: &Path, body: &[u8]) -> Result<()> {
    crate::output::write_atomic(file, body)
}

#[cfg(test)]
mod tests {
    use crate::metrics::pprof::{Kind, endpoint, file_name, parse_kinds};

    #[test]
    fn kinds_endpoints_and_names() {
        assert_eq!(parse_kinds("cpu,heap").unwrap(), [Kind::Cpu, Kind::Heap]);
        assert_eq!(parse_kinds(" heap ,heap").unwrap(), [Kind::Heap]);
        let e = parse_kinds("cpu,goroutine").unwrap_err();
        assert!(format!("{e:#}").contains("\"goroutine\""));
        assert!(parse_kinds(",").is_err());
        assert_eq!(endpoint(Kind::Cpu, 20), "/debug/pprof/profile?seconds=20");
        assert_eq!(endpoint(Kind::Heap, 20), "/debug/pprof/heap");
        assert_eq!(
            file_name("jobset-0", "etcd", Kind::Cpu),
            "jobset-0-etcd-cpu.pb.gz"
        );
    }
}
