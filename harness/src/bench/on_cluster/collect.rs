//! Bringing a pod's out dir back. A round's pod, its shard done, writes
//! its exit code into its out dir and holds it (`--hold`); the caller
//! execs the harness inside the pod to pack the dir as a tar on stdout
//! (`harness report pack DIR`), unpacks it here, then execs it once more
//! to release the pod (`--release`), which then ends with the shard's
//! exit code. An exec stream has no size cap; container logs are rotated
//! by the kubelet at 10 MiB, so they could cut an out dir.

use std::path::Path;

use anyhow::{Context, Result};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, AttachParams};
use tokio::io::AsyncReadExt;

use crate::bench::on_cluster::image::HARNESS;
use crate::bench::on_cluster::job::OUT;

/// What a pod's out dir said when asked.
pub enum Asked {
    /// Its shard is still running.
    NotYet,
    /// Packed: the tar of its out dir.
    Packed(Vec<u8>),
}

/// The exit code `harness report pack` gives while the shard runs.
pub const NOT_YET: i32 = 75;

/// Exec `command` in pod `name`; its stdout and exit code.
async fn exec(pods: &Api<Pod>, name: &str, command: Vec<String>) -> Result<(Vec<u8>, i32)> {
    let mut p = pods
        .exec(
            name,
            command.clone(),
            &AttachParams::default()
                .stdout(true)
                .stderr(true)
                .stdin(false),
        )
        .await
        .with_context(|| format!("exec {command:?} in pod {name}"))?;
    let mut stdout = p.stdout().context("the exec's stdout")?;
    let mut stderr = p.stderr().context("the exec's stderr")?;
    let status = p.take_status().context("the exec's status")?;
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let (a, b) = tokio::join!(stdout.read_to_end(&mut out), stderr.read_to_end(&mut err));
    a.context("reading the exec's stdout")?;
    b.context("reading the exec's stderr")?;
    let status = status.await;
    let code = match &status {
        Some(s) if s.status.as_deref() == Some("Success") => 0,
        Some(s) => s
            .details
            .as_ref()
            .and_then(|d| d.causes.as_ref())
            .and_then(|c| {
                c.iter()
                    .find(|c| c.reason.as_deref() == Some("ExitCode"))
                    .and_then(|c| c.message.as_deref()?.parse().ok())
            })
            .unwrap_or(1),
        None => 1,
    };
    if code != 0 && code != NOT_YET {
        anyhow::bail!(
            "{command:?} in pod {name} exited {code}: {}",
            String::from_utf8_lossy(&err).trim()
        );
    }
    p.join().await.ok();
    Ok((out, code))
}

/// Ask pod `name` for its out dir.
pub async fn ask(pods: &Api<Pod>, name: &str) -> Result<Asked> {
    let (out, code) = exec(
        pods,
        name,
        vec![HARNESS.into(), "report".into(), "pack".into(), OUT.into()],
    )
    .await?;
    Ok(match code {
        NOT_YET => Asked::NotYet,
        _ => Asked::Packed(out),
    })
}

/// Let pod `name` end.
pub async fn release(pods: &Api<Pod>, name: &str) -> Result<()> {
    exec(
        pods,
        name,
        vec![
            HARNESS.into(),
            "report".into(),
            "pack".into(),
            "--release".into(),
            OUT.into(),
        ],
    )
    .await
    .map(|_| ())
}

/// Unpack a packed out dir into `dir`.
pub fn unpack(tar: &[u8], dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    tar::Archive::new(tar)
        .unpack(dir)
        .with_context(|| format!("unpacking a shard's out dir into {}", dir.display()))
}

/// The file a pod's harness writes its shard's exit code to, and the one
/// that releases it.
pub const EXIT_FILE: &str = ".exit";
pub const RELEASED: &str = ".collected";

/// `harness report pack DIR`: Err(NOT_YET) while the shard runs (no exit
/// file yet), else the tar of DIR (its exit file too) on stdout;
/// `release`: mark DIR collected.
pub fn pack(dir: &Path, release: bool) -> Result<std::result::Result<(), i32>> {
    if release {
        std::fs::write(dir.join(RELEASED), b"")
            .with_context(|| format!("marking {} collected", dir.display()))?;
        return Ok(Ok(()));
    }
    if !dir.join(EXIT_FILE).is_file() {
        return Ok(Err(NOT_YET));
    }
    let mut tar = tar::Builder::new(std::io::stdout().lock());
    tar.append_dir_all(".", dir)
        .with_context(|| format!("packing {}", dir.display()))?;
    tar.finish().context("writing the tar to stdout")?;
    Ok(Ok(()))
}

/// The pod's side (`--hold SECONDS`): the shard done with `code`, say so
/// in its out dir and wait until the caller has collected it (or the
/// hold ran out), then end with that code.
pub fn hold(dir: &Path, code: i32, hold_s: u64) -> Result<i32> {
    std::fs::create_dir_all(dir)?;
    std::fs::write(dir.join(EXIT_FILE), code.to_string())
        .with_context(|| format!("writing {}", dir.join(EXIT_FILE).display()))?;
    eprintln!(
        "harness: shard done (exit {code}); holding {} until it is collected (at most {hold_s} s)",
        dir.display()
    );
    let until = std::time::Instant::now() + std::time::Duration::from_secs(hold_s);
    while std::time::Instant::now() < until && !dir.join(RELEASED).exists() {
        std::thread::sleep(std::time::Duration::from_millis(500));
    }
    Ok(code)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_out_dir_is_not_packed_before_its_exit_file_and_unpacks_whole() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        std::fs::create_dir_all(out.join("runs")).unwrap();
        std::fs::write(out.join("result.json"), "{}").unwrap();
        assert_eq!(pack(&out, false).unwrap(), Err(NOT_YET));
        // The pod's side: done, then released by the caller.
        let held = std::thread::spawn({
            let out = out.clone();
            move || hold(&out, 1, 30).unwrap()
        });
        while !out.join(EXIT_FILE).exists() {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let mut tar = tar::Builder::new(Vec::new());
        tar.append_dir_all(".", &out).unwrap();
        let bytes = tar.into_inner().unwrap();
        let back = dir.path().join("back");
        unpack(&bytes, &back).unwrap();
        assert_eq!(std::fs::read_to_string(back.join(EXIT_FILE)).unwrap(), "1");
        assert!(back.join("result.json").is_file() && back.join("runs").is_dir());
        assert_eq!(pack(&out, true).unwrap(), Ok(()));
        assert_eq!(
            held.join().unwrap(),
            1,
            "the pod ends with its shard's code"
        );
    }
}
