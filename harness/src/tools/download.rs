//! The download source of the resolver: a component's official release
//! artifact (tools/release.rs), fetched into a temp file beside its cache
//! entry, checked against the published (or pinned) SHA-256, unpacked when
//! it is a tarball, asked for its version, and only then renamed into
//! place. Any mismatch deletes the file; nothing unverified is installed.

use std::fs::{self, File};
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use sha2::{Digest, Sha256};

use crate::error::env_missing;
use crate::k8s::K8sRelease;
use crate::progress::Step;
use crate::tools::component::Component;
use crate::tools::exec::probe_version;
use crate::tools::http::{DownloadConfig, FailureKind, block_on, body, client, get, text};
use crate::tools::release::{Artifact, Checksum, Packaging, artifact, host_arch};
use crate::tools::verify::{extract_member, hex, parse_sidecar, parse_sums};

#[derive(Debug)]
pub struct Failure {
    pub kind: FailureKind,
    /// One line: why.
    pub reason: String,
    /// The error to report (exit 3), with what to do about it.
    pub error: anyhow::Error,
}

impl Failure {
    /// `--source auto` may build instead.
    pub fn falls_back(&self) -> bool {
        self.kind != FailureKind::Refused
    }

    fn new(kind: FailureKind, label: &str, url: Option<&str>, reason: String) -> Failure {
        let from = url.map(|u| format!(" from {u}")).unwrap_or_default();
        let (what, fix) = match kind {
            FailureKind::NoArtifact => (
                format!("{label} cannot be downloaded: {reason}"),
                "use --source auto or --source build (HARNESS_SOURCE) to build it from Go modules"
                    .to_string(),
            ),
            FailureKind::Unavailable => (
                format!("{label} could not be downloaded{from}: {reason}"),
                "check that this machine reaches the release host (through HTTPS_PROXY if it needs \
                 one), or set HARNESS_DOWNLOAD_BASE to a mirror with the release layout (README, \
                 \"How binaries are found or built\"), or use --source build to build it from Go modules"
                    .to_string(),
            ),
            FailureKind::Refused => (
                format!("{label}{from} was refused: {reason}"),
                "nothing was installed and the download was deleted; check the mirror or the \
                 network path (a proxy rewriting downloads?), or use --source build to build it \
                 from Go modules"
                    .to_string(),
            ),
        };
        Failure {
            kind,
            reason,
            error: env_missing(what, fix),
        }
    }
}

/// A binary installed from its release artifact.
#[derive(Debug, Clone)]
pub struct Downloaded {
    pub path: PathBuf,
    pub url: String,
    pub sha256: String,
    /// Where the expected digest came from.
    pub checked_against: String,
    pub bytes: u64,
}

/// The digest `checksum` says the artifact must have.
async fn expected_digest(
    client: &reqwest::Client,
    checksum: &Checksum,
    host: &str,
    cfg: &DownloadConfig,
) -> Result<String, String> {
    let cannot = |url: &str, why: String| {
        format!(
            "cannot verify it: the checksum {url}: {why}; an unverified binary is never installed"
        )
    };
    match checksum {
        Checksum::Pinned { hex } => Ok(hex.to_string()),
        Checksum::Sidecar { url } => {
            let t = text(client, url, host, cfg)
                .await
                .map_err(|(_, why)| cannot(url, why))?;
            parse_sidecar(&t).map_err(|e| cannot(url, format!("{e:#}")))
        }
        Checksum::Sums { url, name } => {
            let t = text(client, url, host, cfg)
                .await
                .map_err(|(_, why)| cannot(url, why))?;
            parse_sums(&t, name).map_err(|e| cannot(url, format!("{e:#}")))
        }
    }
}

/// Fetch, verify, unpack and version-check `art` for `c`, then rename it to
/// `target`. Temp files live beside `target` and vanish on every error.
async fn fetch_verify_install(
    c: Component,
    wanted: &str,
    art: &Artifact,
    target: &Path,
    cfg: &DownloadConfig,
) -> Result<Downloaded, (FailureKind, String)> {
    let refused = |e: anyhow::Error| (FailureKind::Refused, format!("{e:#}"));
    let dir = target.parent().expect("a cache path has a parent");
    let host = art.host().to_string();
    let client = client(cfg).map_err(refused)?;
    let temp = |what: &str| {
        tempfile::Builder::new()
            .prefix(&format!(".{}-{wanted}.", c.name()))
            .suffix(what)
            .tempfile_in(dir)
            .with_context(|| format!("creating a temp file in {}", dir.display()))
    };
    let mut download = temp(".download").map_err(refused)?;
    let resp = get(&client, &art.url, &host, cfg).await?;
    // The host answered with the artifact: from here on it is a step.
    let step = Step::start(format!(
        "downloading {} v{wanted} from {}",
        c.name(),
        art.url
    ));
    let result: Result<Downloaded, (FailureKind, String)> = async {
    let mut hasher = Sha256::new();
    let file = download.as_file_mut();
    let bytes = body(
        resp,
        &host,
        cfg,
        |b| {
            hasher.update(b);
            file.write_all(b).context("writing the download")
        },
        Some(&step),
    )
    .await?;
    file.flush()
        .context("writing the download")
        .map_err(refused)?;
    let actual = hex(&hasher.finalize());
    let expected = expected_digest(&client, &art.checksum, &host, cfg)
        .await
        .map_err(|why| (FailureKind::Refused, why))?;
    if actual != expected {
        let shown = download.path().display().to_string();
        download
            .close()
            .with_context(|| format!("deleting {shown}"))
            .map_err(refused)?;
        return Err((
            FailureKind::Refused,
            format!(
                "sha256 mismatch: the {bytes} bytes received hash to {actual}, {} says {expected}; the download was deleted",
                art.checksum.origin()
            ),
        ));
    }
    let exe = match &art.packaging {
        Packaging::Raw => download.into_temp_path(),
        Packaging::TarGz { member } => {
            let mut exe = temp(".extract").map_err(refused)?;
            extract_member(download.path(), member, exe.as_file_mut()).map_err(refused)?;
            exe.into_temp_path()
        }
    };
    fs::set_permissions(&exe, fs::Permissions::from_mode(0o755))
        .with_context(|| format!("making {} executable", exe.display()))
        .map_err(refused)?;
    match probe_version(c, &exe) {
        Ok(v) if v == wanted => {}
        Ok(v) => {
            return Err((
                FailureKind::Refused,
                format!("the verified binary reports v{v}, not the pinned v{wanted}"),
            ));
        }
        Err(e) => return Err((FailureKind::Refused, format!("its version check: {e:#}"))),
    }
    exe.persist(target)
        .with_context(|| format!("renaming the download to {}", target.display()))
        .map_err(refused)?;
    Ok(Downloaded {
        path: target.to_path_buf(),
        url: art.url.clone(),
        sha256: actual,
        checked_against: art.checksum.origin(),
        bytes,
    })
    }
    .await;
    match &result {
        Ok(d) => step.done(&format!(
            "{:.1} MB, sha256 {}… verified",
            d.bytes as f64 / 1e6,
            &d.sha256[..12]
        )),
        Err(_) => step.done("failed"),
    };
    result
}

/// Download `c` at its pinned version into the cache
/// (`<cache>/bin/<name>-<version>`) and return where it is.
pub fn download(
    c: Component,
    k8s: K8sRelease,
    cache_dir: &Path,
    cfg: &DownloadConfig,
) -> Result<Downloaded, Failure> {
    let wanted = c.version(k8s);
    let label = format!("{} v{wanted}", c.name());
    let no_artifact = |why: String| Failure::new(FailureKind::NoArtifact, &label, None, why);
    let arch = host_arch().ok_or_else(|| {
        no_artifact(format!(
            "there are no release binaries for {}/{}",
            std::env::consts::OS,
            std::env::consts::ARCH
        ))
    })?;
    let art = artifact(c, k8s, cfg.base.as_deref(), arch).map_err(no_artifact)?;
    let failed = |kind, reason: String| Failure::new(kind, &label, Some(&art.url), reason);
    let local = |e: anyhow::Error| failed(FailureKind::Refused, format!("{e:#}"));

    let target = c.cached_path(cache_dir, k8s);
    let dir = target.parent().expect("a cache path has a parent");
    fs::create_dir_all(dir)
        .with_context(|| format!("creating {}", dir.display()))
        .map_err(local)?;
    // One download per binary at a time, across harness processes.
    let locks = cache_dir.join("locks");
    fs::create_dir_all(&locks)
        .with_context(|| format!("creating {}", locks.display()))
        .map_err(local)?;
    let lock_path = locks.join(format!("{}-{wanted}.download.lock", c.name()));
    let lock = File::create(&lock_path)
        .with_context(|| format!("creating {}", lock_path.display()))
        .map_err(local)?;
    if lock.try_lock().is_err() {
        let wait = Step::start(format!(
            "waiting for another harness process downloading {label}"
        ));
        lock.lock()
            .with_context(|| format!("locking {}", lock_path.display()))
            .map_err(local)?;
        wait.done("done");
    }
    if target.exists() && probe_version(c, &target).is_ok_and(|v| v == wanted) {
        return Ok(Downloaded {
            path: target.clone(),
            url: art.url.clone(),
            sha256: crate::tools::verify::sha256_file(&target).map_err(local)?,
            checked_against: "(installed meanwhile by another harness process)".into(),
            bytes: fs::metadata(&target).map(|m| m.len()).unwrap_or_default(),
        });
    }

    block_on(|| fetch_verify_install(c, &wanted, &art, &target, cfg))
        .map_err(local)?
        .map_err(|(kind, reason)| failed(kind, reason))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    #[test]
    fn failures_say_whether_auto_may_build_instead() {
        let f = Failure::new(
            FailureKind::Unavailable,
            "etcd v3.6.16",
            Some("https://x/etcd.tar.gz"),
            "no network".into(),
        );
        assert!(f.falls_back());
        assert_eq!(crate::error::exit_code(&f.error), crate::error::EXIT_ENV);
        assert!(f.error.to_string().contains("HARNESS_DOWNLOAD_BASE"));
        let f = Failure::new(FailureKind::Refused, "etcd v3.6.16", None, "bad".into());
        assert!(!f.falls_back());
        assert!(Failure::new(FailureKind::NoArtifact, "x", None, "y".into()).falls_back());
    }

    #[test]
    fn no_network_fails_within_the_connect_timeout() {
        // A port nobody listens on: refused at once, named as such.
        let port = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().port()
        };
        let cfg = DownloadConfig::with_base(Some(&format!("http://127.0.0.1:{port}"))).unwrap();
        let tmp = tempfile::tempdir().unwrap();
        let started = Instant::now();
        let f = download(
            Component::KubeScheduler,
            K8sRelease::default_release(),
            tmp.path(),
            &cfg,
        )
        .unwrap_err();
        assert!(started.elapsed() < Duration::from_secs(3));
        assert_eq!(f.kind, FailureKind::Unavailable);
        assert!(
            f.reason.contains("cannot connect to 127.0.0.1"),
            "{}",
            f.reason
        );
        assert!(
            !Component::KubeScheduler
                .cached_path(tmp.path(), K8sRelease::default_release())
                .exists()
        );
    }
}
