//! The rounds' image pushed to a real registry: the CNCF distribution
//! registry (built from its module, `Component::Registry`) on loopback,
//! `harness image build --push` through the binary as a user runs it. The
//! registry serves back the manifest the archive holds, byte for byte
//! (its digest), and every blob it names; a second push sends nothing the
//! registry has (its blobs are there, only the manifest is put); a push to
//! a port where no registry listens is an error that says so (exit 3).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use harness::tools::Component;
use libtest_mimic::Arguments;

use crate::builds::default_cluster_and;
use crate::runner::{Suite, Test};

/// A registry process on a loopback port, stopped when dropped.
struct Registry {
    child: std::process::Child,
    port: u16,
    _dir: tempfile::TempDir,
}

impl Drop for Registry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start_registry() -> Result<Registry> {
    let k8s = harness::k8s::K8sRelease::default_release();
    let bin = harness::tools::Resolver::from_env(k8s, Default::default())
        .resolve(Component::Registry)?
        .path;
    let port = std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port();
    let dir = tempfile::tempdir()?;
    let config = dir.path().join("config.yml");
    std::fs::write(
        &config,
        format!(
            "version: 0.1\nstorage:\n  filesystem:\n    rootdirectory: {}\nhttp:\n  addr: 127.0.0.1:{port}\nlog:\n  level: warn\n",
            dir.path().join("data").display()
        ),
    )?;
    let child = std::process::Command::new(&bin)
        .args(["serve", &config.display().to_string()])
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(dir.path().join("log"))?)
        .spawn()
        .with_context(|| format!("starting {}", bin.display()))?;
    let r = Registry {
        child,
        port,
        _dir: dir,
    };
    let until = Instant::now() + Duration::from_secs(30);
    while !get(port, "HEAD", "/v2/").is_ok_and(|(s, _, _)| s == 200) {
        ensure!(
            Instant::now() < until,
            "the registry did not answer on {port} in 30 s"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    Ok(r)
}

/// One HTTP/1.0 request to the registry: status, headers, body.
fn get(port: u16, method: &str, path: &str) -> Result<(u16, String, Vec<u8>)> {
    let mut s = TcpStream::connect(("127.0.0.1", port))?;
    write!(
        s,
        "{method} {path} HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\nAccept: application/vnd.oci.image.manifest.v1+json\r\n\r\n"
    )?;
    let mut raw = Vec::new();
    s.read_to_end(&mut raw)?;
    let end = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .context("no end of headers")?;
    let head = String::from_utf8_lossy(&raw[..end]).into_owned();
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .context("no status")?;
    Ok((status, head, raw[end + 4..].to_vec()))
}

fn an_image_pushed_to_a_real_registry_reads_back_whole() -> Result<()> {
    let harness = crate::harness_cli().map_err(anyhow::Error::msg)?;
    let reg = start_registry()?;
    let to = format!("127.0.0.1:{}/harness-rounds", reg.port);
    let push = || -> Result<(String, String)> {
        let o = std::process::Command::new(&harness)
            .args(["image", "build", "--push", &to])
            .env("HARNESS_NO_PROGRESS", "1")
            .current_dir(crate::repo_root())
            .output()?;
        let err = String::from_utf8_lossy(&o.stderr).into_owned();
        ensure!(
            o.status.success(),
            "image build --push: {}\n{err}",
            o.status
        );
        Ok((String::from_utf8_lossy(&o.stdout).trim().to_string(), err))
    };
    let (pushed, log) = push()?;
    eprintln!("{log}");
    let tag = pushed
        .strip_prefix(&format!("{to}:"))
        .with_context(|| format!("printed {pushed:?}, not {to}:TAG"))?;
    ensure!(log.contains("2 blobs sent"), "first push:\n{log}");
    // The archive's manifest, as the registry serves it.
    let archive = harness::paths::cache_dir()
        .join("images")
        .join(format!("harness-rounds-{tag}.tar"));
    let index = read_member(&archive, "index.json")?;
    let index: serde_json::Value = serde_json::from_slice(&index)?;
    let digest = index["manifests"][0]["digest"]
        .as_str()
        .context("index digest")?
        .to_string();
    let (status, head, body) = get(
        reg.port,
        "GET",
        &format!("/v2/harness-rounds/manifests/{tag}"),
    )?;
    ensure!(status == 200, "manifest: {status}\n{head}");
    let served = format!("sha256:{}", harness::tools::oci::sha256_hex(&body));
    ensure!(
        served == digest,
        "served manifest {served}, archive's {digest}"
    );
    let manifest: serde_json::Value = serde_json::from_slice(&body)?;
    let mut blobs: Vec<&str> = manifest["layers"]
        .as_array()
        .context("layers")?
        .iter()
        .filter_map(|l| l["digest"].as_str())
        .collect();
    blobs.extend(manifest["config"]["digest"].as_str());
    ensure!(blobs.len() == 2, "{manifest}");
    for b in &blobs {
        let (status, head, _) = get(reg.port, "HEAD", &format!("/v2/harness-rounds/blobs/{b}"))?;
        ensure!(status == 200, "blob {b}: {status}\n{head}");
    }
    // Again: nothing the registry has is sent.
    let (_, log) = push()?;
    ensure!(
        log.contains("0 blobs sent (0 MB), 2 there already"),
        "second push:\n{log}"
    );
    // No registry there: said, exit 3.
    drop(reg);
    let o = std::process::Command::new(&harness)
        .args(["image", "build", "--push", &to])
        .current_dir(crate::repo_root())
        .output()?;
    let err = String::from_utf8_lossy(&o.stderr);
    ensure!(
        o.status.code() == Some(3) && err.contains("is a registry serving at"),
        "a push with no registry: {}\n{err}",
        o.status
    );
    Ok(())
}

/// One member of a tar archive.
fn read_member(archive: &std::path::Path, name: &str) -> Result<Vec<u8>> {
    let o = std::process::Command::new("tar")
        .args(["-xOf", &archive.display().to_string(), name])
        .output()?;
    if !o.status.success() {
        bail!("tar -xOf {} {name}: {}", archive.display(), o.status);
    }
    Ok(o.stdout)
}

pub fn suite(_args: &Arguments) -> Suite {
    let k8s = harness::k8s::K8sRelease::default_release();
    Suite::new(
        "image",
        vec![
            Test::of(
                "an_image_pushed_to_a_real_registry_reads_back_whole",
                an_image_pushed_to_a_real_registry_reads_back_whole,
            )
            .needs(default_cluster_and(&[Component::HpccKubectl]))
            .needs([(k8s, Component::Registry)]),
        ],
    )
}
