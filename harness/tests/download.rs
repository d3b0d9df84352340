//! The download source of the resolver, without internet: the download
//! mirror test server (tools/mirror.rs: a small loopback HTTP server, tokio) serves a
//! mirror layout built here (`HARNESS_DOWNLOAD_BASE`), from scripts that
//! print the expected version line and from the real kube-scheduler the
//! cache holds. Success, every refusal (checksum mismatch, missing
//! checksums, wrong version), every unavailability (404, truncated body,
//! stalled or silent server, no listener) and the CLI's `--source` modes,
//! with a fake Go toolchain that proves the build step was reached.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{assert_code, text};
use harness::error::{EXIT_ENV, exit_code};
use harness::k8s::K8sRelease;
use harness::tools::http::DownloadConfig;
use harness::tools::mirror::{Mirror, Reply, sha256_hex as sha, version_script as script};
use harness::tools::release::host_arch;
use harness::tools::verify::sha256_file;
use harness::tools::{Component, Resolver, Source, SourceMode};

fn arch() -> &'static str {
    host_arch().expect("the harness downloads for linux amd64 and arm64 only")
}

fn k8s() -> K8sRelease {
    K8sRelease::default_release()
}

/// `kubernetes/v1.37.1/bin/linux/<arch>/<name>`
fn kube_path(c: Component) -> String {
    format!(
        "kubernetes/v{}/bin/linux/{}/{}",
        c.version(k8s()),
        arch(),
        c.path_name()
    )
}

/// A resolver that sees nothing on the machine but `cache`, with short
/// time limits.
fn resolver(cache: &Path, base: &str, source: SourceMode) -> Resolver {
    Resolver {
        k8s: k8s(),
        cache_dir: cache.to_path_buf(),
        flags: BTreeMap::new(),
        env: BTreeMap::new(),
        path_var: None,
        source,
        download: DownloadConfig {
            base: Some(base.to_string()),
            connect_timeout: Duration::from_secs(1),
            idle_timeout: Duration::from_millis(800),
            min_rate: 50 * 1024 * 1024,
            slack: Duration::from_secs(5),
        },
        invalid_env: None,
    }
}

/// The files in `<cache>/bin` (temp files included).
fn bin_files(cache: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(cache.join("bin"))
        .map(|d| {
            d.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// Resolve `c`, expecting an error: its text, after checking exit 3 and
/// that nothing (not even a temp file) is left in the cache.
fn refused(r: &Resolver, c: Component) -> String {
    let err = r.resolve(c).expect_err("the download must fail");
    let t = format!("{err:#}");
    assert_eq!(exit_code(&err), EXIT_ENV, "{t}");
    assert_eq!(bin_files(&r.cache_dir), Vec::<String>::new(), "{t}");
    t
}

#[test]
fn a_verified_release_binary_is_installed_and_reported_as_downloaded() {
    let m = Mirror::start();
    let c = Component::KubeApiserver;
    let bin = script("Kubernetes v1.37.1");
    m.body(&kube_path(c), &bin);
    // Kubernetes' .sha256 files: bare hex, no newline.
    m.body(&format!("{}.sha256", kube_path(c)), sha(&bin).as_bytes());
    let tmp = tempfile::tempdir().unwrap();
    let r = resolver(tmp.path(), &m.base, SourceMode::Download);
    let got = r.resolve(c).unwrap();
    assert_eq!(got.source, Source::Downloaded);
    assert_eq!(got.version, "1.37.1");
    assert_eq!(got.path, r.cached_path(c));
    assert_eq!(std::fs::read(&got.path).unwrap(), bin);
    let mode = std::os::unix::fs::PermissionsExt::mode(
        &std::fs::metadata(&got.path).unwrap().permissions(),
    );
    assert_eq!(mode & 0o777, 0o755);
    assert_eq!(bin_files(tmp.path()), vec!["kube-apiserver-1.37.1"]);
    assert_eq!(
        m.hits(),
        vec![
            format!("/mirror/{}", kube_path(c)),
            format!("/mirror/{}.sha256", kube_path(c))
        ]
    );
    // Now it is in the cache: found there, the mirror not asked again.
    assert_eq!(r.resolve(c).unwrap().source, Source::Cache);
    assert_eq!(m.hits().len(), 2);
}

#[test]
fn the_real_kube_scheduler_from_the_mirror_passes_the_version_check() {
    // The binary the machine has (cache or PATH; resolved, downloaded or
    // built the usual way when it has none).
    let c = Component::KubeScheduler;
    let real = Resolver::from_env(k8s(), BTreeMap::new())
        .resolve(c)
        .expect("a real kube-scheduler v1.37.1");
    let bytes = std::fs::read(&real.path).unwrap();
    let digest = sha(&bytes);
    let m = Mirror::start();
    m.route(&kube_path(c), Reply::Body(Arc::new(bytes)));
    m.body(
        &format!("{}.sha256", kube_path(c)),
        format!("{digest}\n").as_bytes(),
    );
    let tmp = tempfile::tempdir().unwrap();
    let r = resolver(tmp.path(), &m.base, SourceMode::Download);
    let started = Instant::now();
    let got = r.resolve(c).unwrap();
    eprintln!(
        "downloaded the real kube-scheduler ({} bytes) from the test mirror in {:.2} s",
        real.path.metadata().unwrap().len(),
        started.elapsed().as_secs_f64()
    );
    assert_eq!(
        (got.source, got.version.as_str()),
        (Source::Downloaded, "1.37.1")
    );
    assert_eq!(sha256_file(&got.path).unwrap(), digest);
}

/// etcd-v3.6.16-linux-<arch>.tar.gz with the etcd script and a README.
fn etcd_tarball(etcd: &[u8]) -> Vec<u8> {
    let dir = format!("etcd-v3.6.16-linux-{}", arch());
    let gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    let mut b = tar::Builder::new(gz);
    for (name, data) in [("README.md", &b"etcd"[..]), ("etcd", etcd)] {
        let mut h = tar::Header::new_gnu();
        h.set_size(data.len() as u64);
        h.set_mode(0o755);
        h.set_cksum();
        b.append_data(&mut h, format!("{dir}/{name}"), data)
            .unwrap();
    }
    b.into_inner().unwrap().finish().unwrap()
}

#[test]
fn etcd_comes_out_of_its_tarball_checked_against_sha256sums() {
    let m = Mirror::start();
    let etcd = script("etcd Version: 3.6.16");
    let tarball = etcd_tarball(&etcd);
    let name = format!("etcd-v3.6.16-linux-{}.tar.gz", arch());
    m.body(&format!("etcd/v3.6.16/{name}"), &tarball);
    let other = "0".repeat(64);
    let sums = format!(
        "{other}  etcd-v3.6.16-darwin-arm64.zip\n{}  {name}\n",
        sha(&tarball)
    );
    m.body("etcd/v3.6.16/SHA256SUMS", sums.as_bytes());
    let tmp = tempfile::tempdir().unwrap();
    let r = resolver(tmp.path(), &m.base, SourceMode::Download);
    let got = r.resolve(Component::Etcd).unwrap();
    assert_eq!(
        (got.source, got.version.as_str()),
        (Source::Downloaded, "3.6.16")
    );
    assert_eq!(std::fs::read(&got.path).unwrap(), etcd);
    assert_eq!(bin_files(tmp.path()), vec!["etcd-3.6.16"]);

    // A SHA256SUMS without the tarball's line verifies nothing.
    let tmp = tempfile::tempdir().unwrap();
    m.body(
        "etcd/v3.6.16/SHA256SUMS",
        format!("{other}  etcd-v3.6.16-darwin-arm64.zip\n").as_bytes(),
    );
    let t = refused(
        &resolver(tmp.path(), &m.base, SourceMode::Download),
        Component::Etcd,
    );
    assert!(
        t.contains(&format!("no line for {name}")) && t.contains("never installed"),
        "{t}"
    );
}

#[test]
fn a_checksum_mismatch_deletes_the_download_and_names_both_digests() {
    let m = Mirror::start();
    let c = Component::KubeScheduler;
    let bin = script("Kubernetes v1.37.1");
    let wrong = sha(b"another file");
    m.body(&kube_path(c), &bin);
    m.body(&format!("{}.sha256", kube_path(c)), wrong.as_bytes());
    // Auto mode too: a mismatch is an error, never a reason to build.
    for mode in [SourceMode::Download, SourceMode::Auto] {
        let tmp = tempfile::tempdir().unwrap();
        let t = refused(&resolver(tmp.path(), &m.base, mode), c);
        assert!(t.contains("sha256 mismatch"), "{t}");
        assert!(t.contains(&sha(&bin)) && t.contains(&wrong), "{t}");
        assert!(t.contains("the download was deleted"), "{t}");
        assert!(!tmp.path().join("go").exists(), "a build was started: {t}");
    }
}

#[test]
fn kwok_from_a_mirror_must_match_the_pinned_digest() {
    let m = Mirror::start();
    let fake = script("kwok version v0.8.0");
    m.body(&format!("kwok/v0.8.0/kwok-linux-{}", arch()), &fake);
    let pinned = harness::tools::versions::kwok_release_sha256("0.8.0", arch()).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let t = refused(
        &resolver(tmp.path(), &m.base, SourceMode::Download),
        Component::Kwok,
    );
    assert!(t.contains(pinned) && t.contains(&sha(&fake)), "{t}");
    assert!(t.contains("pinned in harness/src/tools/versions.rs"), "{t}");
    // No checksum file was asked for: the pin is the only truth.
    assert_eq!(m.hits().len(), 1, "{:?}", m.hits());
}

#[test]
fn a_missing_artifact_is_exit_3_naming_the_url() {
    let m = Mirror::start();
    let tmp = tempfile::tempdir().unwrap();
    let c = Component::Kubectl;
    let t = refused(&resolver(tmp.path(), &m.base, SourceMode::Download), c);
    assert!(
        t.contains("HTTP 404 Not Found") && t.contains(&format!("{}/{}", m.base, kube_path(c))),
        "{t}"
    );
    assert!(t.contains("--source download (nothing is built)"), "{t}");
}

#[test]
fn a_mirror_without_checksum_files_installs_nothing() {
    let m = Mirror::start();
    let c = Component::HpccKubectl;
    m.body(&kube_path(c), &script("Client Version: v1.29.7"));
    assert_eq!(
        kube_path(c),
        format!("kubernetes/v1.29.7/bin/linux/{}/kubectl", arch())
    );
    for mode in [SourceMode::Download, SourceMode::Auto] {
        let tmp = tempfile::tempdir().unwrap();
        let t = refused(&resolver(tmp.path(), &m.base, mode), c);
        assert!(
            t.contains("cannot verify it")
                && t.contains(&format!("{}.sha256", kube_path(c)))
                && t.contains("HTTP 404")
                && t.contains("an unverified binary is never installed"),
            "{t}"
        );
    }
    // A checksum file that holds no digest (an HTML error page) is no better.
    m.body(&format!("{}.sha256", kube_path(c)), b"<html>moved</html>");
    let tmp = tempfile::tempdir().unwrap();
    let t = refused(&resolver(tmp.path(), &m.base, SourceMode::Download), c);
    assert!(t.contains("does not hold a SHA-256 digest"), "{t}");
}

#[test]
fn a_verified_binary_of_the_wrong_version_is_refused() {
    let m = Mirror::start();
    let c = Component::KubeControllerManager;
    let bin = script("Kubernetes v1.30.0");
    m.with_sidecar(&kube_path(c), &bin);
    let tmp = tempfile::tempdir().unwrap();
    let t = refused(&resolver(tmp.path(), &m.base, SourceMode::Download), c);
    assert!(t.contains("reports v1.30.0, not the pinned v1.37.1"), "{t}");
}

#[test]
fn a_truncated_body_is_an_error_and_nothing_is_installed() {
    let m = Mirror::start();
    let c = Component::KubeScheduler;
    let bin = script("Kubernetes v1.37.1");
    m.route(
        &kube_path(c),
        Reply::Truncated {
            body: bin.clone(),
            claimed: bin.len() + 1000,
        },
    );
    m.body(&format!("{}.sha256", kube_path(c)), sha(&bin).as_bytes());
    let tmp = tempfile::tempdir().unwrap();
    let t = refused(&resolver(tmp.path(), &m.base, SourceMode::Download), c);
    assert!(
        t.contains("truncated") && t.contains(&format!("of {} bytes", bin.len() + 1000)),
        "{t}"
    );
}

#[test]
fn slow_servers_hit_a_named_timeout() {
    let m = Mirror::start();
    let c = Component::KubeScheduler;
    let bin = script("Kubernetes v1.37.1");
    let tmp = tempfile::tempdir().unwrap();
    let r = resolver(tmp.path(), &m.base, SourceMode::Download);

    // Headers and 10 bytes, then silence: the idle timeout (0.8 s).
    m.route(
        &kube_path(c),
        Reply::Stall {
            body: bin.clone(),
            head: 10,
            stall: Duration::from_secs(20),
        },
    );
    let started = Instant::now();
    let t = refused(&r, c);
    assert!(started.elapsed() < Duration::from_secs(5), "{t}");
    assert!(
        t.contains("sent no data for 0.8 s (idle timeout) after 10 of"),
        "{t}"
    );

    // Never a response: connect + idle timeout.
    m.route(&kube_path(c), Reply::Silent(Duration::from_secs(20)));
    let started = Instant::now();
    let t = refused(&r, c);
    assert!(started.elapsed() < Duration::from_secs(5), "{t}");
    assert!(t.contains("sent no response within 1.8 s"), "{t}");

    // Bytes keep coming, too slowly for the size: the overall limit.
    let mut slow = r.clone();
    slow.download.slack = Duration::from_millis(600);
    slow.download.idle_timeout = Duration::from_secs(5);
    m.route(
        &kube_path(c),
        Reply::Trickle {
            body: bin,
            every: Duration::from_millis(100),
        },
    );
    let started = Instant::now();
    let t = refused(&slow, c);
    assert!(started.elapsed() < Duration::from_secs(5), "{t}");
    assert!(
        t.contains("did not finish within 0.6 s (overall time limit"),
        "{t}"
    );
}

#[test]
fn jobset_has_no_release_binary_to_download() {
    let m = Mirror::start();
    let tmp = tempfile::tempdir().unwrap();
    let t = refused(
        &resolver(tmp.path(), &m.base, SourceMode::Download),
        Component::Jobset,
    );
    assert!(t.contains("only as a container image"), "{t}");
    assert!(m.hits().is_empty());
}

// ---- the CLI: --source, HARNESS_SOURCE, and auto's fallback to a build ----

/// A Go toolchain that reports go1.26.8 and fails every other command,
/// naming itself: a build that reaches it got as far as Go. Every call is
/// logged to `<dir>/go-calls`.
fn fake_go(dir: &Path) -> PathBuf {
    let go = dir.join("fake-go");
    let log = dir.join("go-calls");
    std::fs::write(
        &go,
        format!(
            "#!/bin/sh\necho \"$*\" >> '{}'\nif [ \"$1 $2\" = 'env GOVERSION' ]; then echo go1.26.8; exit 0; fi\necho 'FAKE GO: the build step was reached' >&2\nexit 7\n",
            log.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&go, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    go
}

/// The harness binary in a clean environment: an empty cache, a fake Go,
/// no kube-scheduler on PATH.
fn harness(dir: &Path, base: &str, args: &[&str], extra: &[(&str, &str)]) -> (Output, Duration) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_harness"));
    cmd.env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("HOME", dir)
        .env("HARNESS_NO_PROGRESS", "1")
        .env("HARNESS_CACHE_DIR", dir.join("cache"))
        .env("HARNESS_GO", fake_go(dir))
        .env("HARNESS_DOWNLOAD_BASE", base)
        .args(args);
    for (k, v) in extra {
        cmd.env(k, v);
    }
    let started = Instant::now();
    let out = cmd.output().unwrap();
    (out, started.elapsed())
}

/// A mirror address nobody listens on.
fn dead_mirror() -> String {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    format!("http://127.0.0.1:{}/mirror", l.local_addr().unwrap().port())
}

/// The words of the output line that starts with `name`.
fn row<'a>(t: &'a str, name: &str) -> Vec<&'a str> {
    t.lines()
        .find(|l| l.starts_with(&format!("{name} ")))
        .unwrap_or_default()
        .split_whitespace()
        .collect()
}

fn go_calls(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("go-calls")).unwrap_or_default()
}

#[test]
fn auto_builds_when_the_mirror_is_unreachable_and_says_why() {
    let tmp = tempfile::tempdir().unwrap();
    let install: Vec<&str> = "tools install --source auto --only kube-scheduler"
        .split(' ')
        .collect();
    let (out, took) = harness(tmp.path(), &dead_mirror(), &install, &[]);
    let t = assert_code(&out, EXIT_ENV);
    eprintln!(
        "auto with an unreachable mirror: {:.2} s to the build step",
        took.as_secs_f64()
    );
    assert!(took < Duration::from_secs(10), "{t}");
    assert!(
        t.contains(
            "harness: kube-scheduler v1.37.1: could not download (cannot connect to 127.0.0.1:"
        ) && t.contains("): building from Go modules"),
        "{t}"
    );
    assert!(t.contains("FAKE GO: the build step was reached"), "{t}");
    assert!(go_calls(tmp.path()).contains("mod download"), "{t}");
}

#[test]
fn download_mode_never_builds_and_build_mode_never_downloads() {
    let tmp = tempfile::tempdir().unwrap();
    let only = ["tools", "install", "--only", "kube-scheduler"];
    let (out, took) = harness(
        tmp.path(),
        &dead_mirror(),
        &[&only[..], &["--source", "download"]].concat(),
        &[],
    );
    let t = assert_code(&out, EXIT_ENV);
    assert!(took < Duration::from_secs(10), "{t}");
    assert!(
        t.contains("--source download (nothing is built)") && t.contains("cannot connect"),
        "{t}"
    );
    assert_eq!(go_calls(tmp.path()), "", "{t}");
    // `up` takes --source too, and resolves before it starts anything.
    let up = ["up", "--name", "dl", "--source", "download"];
    let (out, _) = harness(tmp.path(), &dead_mirror(), &up, &[]);
    let t = assert_code(&out, EXIT_ENV);
    assert!(t.contains("--source download (nothing is built)"), "{t}");
    assert_eq!(go_calls(tmp.path()), "", "{t}");

    // HARNESS_SOURCE=build against a live mirror that has the binary.
    let m = Mirror::start();
    let bin = script("Kubernetes v1.37.1");
    m.with_sidecar(&kube_path(Component::KubeScheduler), &bin);
    let (out, _) = harness(tmp.path(), &m.base, &only, &[("HARNESS_SOURCE", "build")]);
    let t = assert_code(&out, EXIT_ENV);
    assert!(t.contains("FAKE GO: the build step was reached"), "{t}");
    assert!(
        m.hits().is_empty(),
        "build mode asked the mirror for {:?}",
        m.hits()
    );

    // The same mirror in auto mode: downloaded, said so, Go never asked to build.
    let fresh = tempfile::tempdir().unwrap();
    let (out, _) = harness(fresh.path(), &m.base, &only, &[]);
    let t = assert_code(&out, 0);
    assert!(
        t.contains("harness: kube-scheduler v1.37.1: downloaded http://127.0.0.1:"),
        "{t}"
    );
    assert_eq!(
        &row(&t, "kube-scheduler")[..3],
        ["kube-scheduler", "1.37.1", "downloaded"],
        "{t}"
    );
    assert!(!go_calls(fresh.path()).contains("build"), "{t}");
}

#[test]
fn an_unknown_source_is_a_usage_error() {
    let tmp = tempfile::tempdir().unwrap();
    let base = dead_mirror();
    let (out, _) = harness(
        tmp.path(),
        &base,
        &["tools", "list"],
        &[("HARNESS_SOURCE", "mirror")],
    );
    assert_code(&out, 2);
    let (out, _) = harness(tmp.path(), &base, &["up", "--source", "cache"], &[]);
    let t = assert_code(&out, 2);
    assert!(t.contains("\"cache\" is not a binary source"), "{t}");
    let (out, _) = harness(
        tmp.path(),
        "ftp://mirror",
        &["tools", "install", "--only", "etcd"],
        &[],
    );
    let t = assert_code(&out, 2);
    assert!(t.contains("HARNESS_DOWNLOAD_BASE=ftp://mirror"), "{t}");
    assert_eq!(go_calls(tmp.path()), "", "{}", text(&out));
}

#[test]
fn doctor_says_where_each_binary_would_come_from() {
    let m = Mirror::start();
    let c = Component::KubeScheduler;
    let bin = script("Kubernetes v1.37.1");
    m.body(&kube_path(c), &bin);
    let tmp = tempfile::tempdir().unwrap();
    let (out, _) = harness(tmp.path(), &m.base, &["doctor", "--format", "json"], &[]);
    let t = assert_code(&out, 0);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect(&t);
    let component = |name: &str| {
        v["tools"]["components"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["binary"] == name)
            .cloned()
            .unwrap()
    };
    let ks = component("kube-scheduler");
    assert_eq!(ks["way"], "download", "{ks}");
    assert_eq!(ks["download"]["size_bytes"], bin.len(), "{ks}");
    // The mirror has no apiserver: the fake Go (go1.26.8) would build it,
    // in the measured cold build time: 197 s (docs/src/binaries.md's table and
    // tools/doctor.rs; a literal, so that a change of either is seen).
    let api = component("kube-apiserver");
    assert_eq!(
        (api["way"].as_str(), api["estimate_s"].as_u64()),
        (Some("build"), Some(197)),
        "{api}"
    );
    assert!(
        api["detail"].as_str().unwrap().contains("HTTP 404"),
        "{api}"
    );
    assert_eq!(component("jobset-controller")["way"], "build");
    assert_eq!(v["tools"]["go"]["version"], "go1.26.8");
    assert_eq!(v["local_ready"], true);

    // No Go and no reachable mirror: exit 3, saying what to install.
    let (out, took) = harness(
        tmp.path(),
        &dead_mirror(),
        &["doctor"],
        &[("HARNESS_GO", "/nonexistent/go")],
    );
    let t = assert_code(&out, EXIT_ENV);
    assert!(took < Duration::from_secs(15), "{t}");
    assert_eq!(
        &row(&t, "kube-apiserver")[..3],
        ["kube-apiserver", "1.37.1", "MISSING"],
        "{t}"
    );
    assert!(
        t.contains("install Go ≥ 1.26") && t.contains("HARNESS_DOWNLOAD_BASE"),
        "{t}"
    );
    assert!(t.contains("release downloads from 127.0.0.1:"), "{t}");
}
