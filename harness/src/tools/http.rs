//! HTTP for the download source: one client, time limits that make "no
//! network" cost seconds (connect timeout 3 s, an idle timeout per read,
//! a body budget proportionate to its size), failures classified and said
//! in words, and a way to run it all from synchronous code.

use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};

use crate::progress::Step;
use crate::tools::release::Artifact;

/// Where downloads come from and how long they may take.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DownloadConfig {
    /// `HARNESS_DOWNLOAD_BASE`: a mirror of the release hosts' layout
    /// (tools/release.rs), replacing every host.
    pub base: Option<String>,
    /// DNS, TCP and TLS together.
    pub connect_timeout: Duration,
    /// The longest wait for the response headers or for any next bytes.
    pub idle_timeout: Duration,
    /// The slowest transfer the body budget allows, in bytes per second.
    pub min_rate: u64,
    /// Added to every body budget.
    pub slack: Duration,
}

impl Default for DownloadConfig {
    fn default() -> DownloadConfig {
        DownloadConfig {
            base: None,
            connect_timeout: Duration::from_secs(3),
            idle_timeout: Duration::from_secs(20),
            // Slower than this, a build from the Go module cache is faster.
            min_rate: 512 * 1024,
            slack: Duration::from_secs(30),
        }
    }
}

impl DownloadConfig {
    /// The defaults with `HARNESS_DOWNLOAD_BASE`, which must be an http(s)
    /// URL (bad input, exit 2, otherwise).
    pub fn from_env() -> Result<DownloadConfig> {
        let base = std::env::var("HARNESS_DOWNLOAD_BASE").ok();
        DownloadConfig::with_base(base.as_deref())
    }

    pub fn with_base(base: Option<&str>) -> Result<DownloadConfig> {
        let base = base.map(str::trim).filter(|b| !b.is_empty());
        if let Some(b) = base
            && !(b.starts_with("http://") || b.starts_with("https://"))
        {
            return Err(crate::error::bad_input(format!(
                "HARNESS_DOWNLOAD_BASE={b}: not an http:// or https:// URL"
            )));
        }
        Ok(DownloadConfig {
            base: base.map(|b| b.trim_end_matches('/').to_string()),
            ..DownloadConfig::default()
        })
    }

    /// How long a body of `len` bytes may take (unknown length: 15 min).
    pub fn budget(&self, len: Option<u64>) -> Duration {
        match len {
            Some(len) => self.slack + Duration::from_secs_f64(len as f64 / self.min_rate as f64),
            None => Duration::from_secs(15 * 60),
        }
    }
}

/// Why a download did not happen, and whether `--source auto` may build
/// instead.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailureKind {
    /// There is no release artifact for this component or machine.
    NoArtifact,
    /// The artifact could not be had: no network, a host or mirror that
    /// does not answer or lacks it, a timeout, a broken transfer.
    Unavailable,
    /// The artifact arrived and was refused (checksum missing or wrong, a
    /// bad tarball, the wrong version), or the cache cannot be written:
    /// an error in every mode, never a reason to install something else.
    Refused,
}

/// Run async code to completion from synchronous code, wherever that is
/// (a plain thread, a blocking-pool thread, a test): on a thread of its own
/// with a current-thread runtime.
pub fn block_on<T, F>(make: impl FnOnce() -> F + Send) -> Result<T>
where
    F: std::future::Future<Output = T>,
    T: Send,
{
    std::thread::scope(|s| {
        s.spawn(|| -> Result<T> {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .context("starting the runtime for a download")?;
            Ok(rt.block_on(make()))
        })
        .join()
        .map_err(|_| anyhow!("the download thread panicked"))?
    })
}

/// The HTTP client of every download.
pub fn client(cfg: &DownloadConfig) -> Result<reqwest::Client> {
    crate::init_crypto();
    reqwest::Client::builder()
        .connect_timeout(cfg.connect_timeout)
        .user_agent(concat!("harness/", env!("CARGO_PKG_VERSION")))
        .build()
        .context("building the download HTTP client")
}

/// The error and its causes on one line.
pub fn chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut parts = vec![e.to_string()];
    let mut cur = e.source();
    while let Some(c) = cur {
        let s = c.to_string();
        if !parts.iter().any(|p| p.contains(&s)) {
            parts.push(s);
        }
        cur = c.source();
    }
    parts.join(": ")
}

/// Why a request got no response, in words: no network, a timeout (named),
/// a refused connection.
fn transport_reason(host: &str, e: &reqwest::Error, cfg: &DownloadConfig) -> String {
    let text = chain(e);
    let lower = text.to_ascii_lowercase();
    // The innermost cause says it best ("Connection refused (os error 111)").
    let mut root: &(dyn std::error::Error + 'static) = e;
    while let Some(next) = root.source() {
        root = next;
    }
    if lower.contains("dns error") || lower.contains("failed to lookup address") {
        format!("no network: {host} cannot be resolved ({root})")
    } else if e.is_timeout() || lower.contains("timed out") {
        format!(
            "{host} did not answer within {} s (connect timeout)",
            cfg.connect_timeout.as_secs_f64()
        )
    } else if e.is_connect() {
        format!("cannot connect to {host}: {root}")
    } else {
        text
    }
}

/// A response with a 2xx status, or why not (kind, reason).
pub async fn get(
    client: &reqwest::Client,
    url: &str,
    host: &str,
    cfg: &DownloadConfig,
) -> Result<reqwest::Response, (FailureKind, String)> {
    let wait = cfg.connect_timeout + cfg.idle_timeout;
    match tokio::time::timeout(wait, client.get(url).send()).await {
        Err(_) => Err((
            FailureKind::Unavailable,
            format!(
                "{host} sent no response within {} s (connect + idle timeout)",
                wait.as_secs_f64()
            ),
        )),
        Ok(Err(e)) => Err((FailureKind::Unavailable, transport_reason(host, &e, cfg))),
        Ok(Ok(resp)) if !resp.status().is_success() => Err((
            FailureKind::Unavailable,
            format!("{host} answered HTTP {} for {url}", resp.status()),
        )),
        Ok(Ok(resp)) => Ok(resp),
    }
}

/// Stream a response body into `sink`, within the idle timeout per read and
/// the size's budget overall. Returns the bytes received.
pub async fn body(
    mut resp: reqwest::Response,
    host: &str,
    cfg: &DownloadConfig,
    mut sink: impl FnMut(&[u8]) -> Result<()>,
    step: Option<&Step>,
) -> Result<u64, (FailureKind, String)> {
    let len = resp.content_length();
    let of = len.map(|l| format!(" of {l}")).unwrap_or_default();
    let budget = cfg.budget(len);
    let deadline = Instant::now() + budget;
    let mut got: u64 = 0;
    let mut shown = Instant::now();
    loop {
        let remaining = deadline.saturating_duration_since(Instant::now());
        let wait = remaining.min(cfg.idle_timeout);
        let over = || {
            format!(
                "the download did not finish within {:.1} s (overall time limit for{of} bytes at ≥ {} KiB/s): {got}{of} bytes received",
                budget.as_secs_f64(),
                cfg.min_rate / 1024
            )
        };
        if wait.is_zero() {
            return Err((FailureKind::Unavailable, over()));
        }
        match tokio::time::timeout(wait, resp.chunk()).await {
            Err(_) if wait < cfg.idle_timeout => return Err((FailureKind::Unavailable, over())),
            Err(_) => {
                return Err((
                    FailureKind::Unavailable,
                    format!(
                        "{host} sent no data for {:.1} s (idle timeout) after {got}{of} bytes",
                        cfg.idle_timeout.as_secs_f64()
                    ),
                ));
            }
            Ok(Err(e)) => {
                let truncated = if len.is_some() { " (truncated)" } else { "" };
                return Err((
                    FailureKind::Unavailable,
                    format!(
                        "the transfer broke after {got}{of} bytes{truncated}: {}",
                        chain(&e)
                    ),
                ));
            }
            Ok(Ok(None)) => break,
            Ok(Ok(Some(bytes))) => {
                got += bytes.len() as u64;
                sink(&bytes).map_err(|e| (FailureKind::Refused, format!("{e:#}")))?;
                if let Some(step) = step
                    && shown.elapsed() > Duration::from_millis(250)
                {
                    shown = Instant::now();
                    step.update(&format!("{:.1}{} MB", got as f64 / 1e6, mb(len)));
                }
            }
        }
    }
    match len {
        Some(len) if got != len => Err((
            FailureKind::Unavailable,
            format!("the body ended after {got} of {len} bytes (truncated)"),
        )),
        _ => Ok(got),
    }
}

fn mb(len: Option<u64>) -> String {
    len.map(|l| format!(" / {:.1}", l as f64 / 1e6))
        .unwrap_or_default()
}

/// A small text file (a checksum), at most 1 MiB.
pub async fn text(
    client: &reqwest::Client,
    url: &str,
    host: &str,
    cfg: &DownloadConfig,
) -> Result<String, (FailureKind, String)> {
    let resp = get(client, url, host, cfg).await?;
    let mut buf = Vec::new();
    body(
        resp,
        host,
        cfg,
        |b| {
            buf.extend_from_slice(b);
            if buf.len() > 1 << 20 {
                bail!("{url} is larger than 1 MiB: not a checksum file");
            }
            Ok(())
        },
        None,
    )
    .await?;
    Ok(String::from_utf8_lossy(&buf).into_owned())
}

/// Why a probe found no artifact.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProbeError {
    /// The host did not answer (no network, refused, timed out).
    Unreachable(String),
    /// The host answered without the artifact (an HTTP error status).
    Answered(String),
}

/// Whether `art` can be fetched from here, and its size when the host says:
/// one ranged GET, within the connect timeout plus two seconds.
pub async fn probe(
    client: &reqwest::Client,
    art: &Artifact,
    cfg: &DownloadConfig,
) -> Result<Option<u64>, ProbeError> {
    let host = art.host();
    let req = client
        .get(&art.url)
        .header(reqwest::header::RANGE, "bytes=0-0")
        .send();
    let wait = cfg.connect_timeout + Duration::from_secs(2);
    let resp = match tokio::time::timeout(wait, req).await {
        Err(_) => {
            return Err(ProbeError::Unreachable(format!(
                "{host} did not answer within {:.0} s",
                wait.as_secs_f64()
            )));
        }
        Ok(Err(e)) => return Err(ProbeError::Unreachable(transport_reason(host, &e, cfg))),
        Ok(Ok(r)) => r,
    };
    let status = resp.status();
    if status == reqwest::StatusCode::PARTIAL_CONTENT {
        let total = resp
            .headers()
            .get(reqwest::header::CONTENT_RANGE)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.rsplit('/').next())
            .and_then(|v| v.parse().ok());
        return Ok(total);
    }
    if status.is_success() {
        return Ok(resp.content_length());
    }
    Err(ProbeError::Answered(format!(
        "GET {}: HTTP {status}",
        art.url
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_body_budget_grows_with_the_size() {
        let cfg = DownloadConfig::default();
        assert_eq!(cfg.connect_timeout, Duration::from_secs(3));
        assert_eq!(cfg.budget(Some(0)), Duration::from_secs(30));
        // 120 MB (kube-apiserver) at 512 KiB/s: about 4 min more.
        let big = cfg.budget(Some(120_000_000)).as_secs();
        assert!((250..290).contains(&big), "{big}");
        assert_eq!(cfg.budget(None), Duration::from_secs(900));
    }

    #[test]
    fn the_mirror_must_be_an_http_url() {
        let cfg = DownloadConfig::with_base(Some("http://127.0.0.1:8080/m/")).unwrap();
        assert_eq!(cfg.base.as_deref(), Some("http://127.0.0.1:8080/m"));
        assert_eq!(DownloadConfig::with_base(Some("")).unwrap().base, None);
        let e = DownloadConfig::with_base(Some("/srv/mirror")).unwrap_err();
        assert_eq!(crate::error::exit_code(&e), crate::error::EXIT_USAGE);
        assert!(e.to_string().contains("HARNESS_DOWNLOAD_BASE=/srv/mirror"));
    }
}
