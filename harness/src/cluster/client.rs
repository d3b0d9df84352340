//! Talking to a cluster's servers: kube clients from kubeconfig files,
//! raw GETs through a client (metrics, health), plain HTTP GETs of
//! loopback endpoints (etcd, kwok, controllers' health ports), and the
//! kubeconfig text the providers write.

use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result, bail};

/// A kubeconfig that references the certificate files by absolute path.
pub fn kubeconfig_text(
    cluster: &str,
    server: &str,
    ca: &Path,
    user: Option<(&str, &Path, &Path)>,
) -> String {
    let mut s = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: {cluster}\n  cluster:\n    server: {server}\n    certificate-authority: {}\n",
        ca.display()
    );
    let user_name = user.map(|u| u.0).unwrap_or("anonymous");
    match user {
        Some((name, crt, key)) => s.push_str(&format!(
            "users:\n- name: {name}\n  user:\n    client-certificate: {}\n    client-key: {}\n",
            crt.display(),
            key.display()
        )),
        None => s.push_str("users:\n- name: anonymous\n  user: {}\n"),
    }
    s.push_str(&format!(
        "contexts:\n- name: {cluster}\n  context:\n    cluster: {cluster}\n    user: {user_name}\ncurrent-context: {cluster}\n"
    ));
    s
}

pub async fn client_from_kubeconfig(path: &Path) -> Result<kube::Client> {
    client_for_context(path, None).await
}

/// A client for `context` of a kubeconfig (its current one when None).
pub async fn client_for_context(path: &Path, context: Option<&str>) -> Result<kube::Client> {
    build(config_for_context(path, context).await?, path)
}

/// As `client_for_context`, but a failed request is not sent again: for
/// requests whose repeat is not the same request (an exit through the
/// pod proxy answers 503 once the process is gone, and its repeat would
/// meet a closed port).
pub async fn client_without_retries(path: &Path, context: Option<&str>) -> Result<kube::Client> {
    let mut config = config_for_context(path, context).await?;
    config.default_retry = false;
    build(config, path)
}

/// A client for `config`; one that may ask again (`default_retry`) also
/// sends a read again whose connection was lost before an answer
/// (cluster::read_again). Must run inside the runtime (the buffer that
/// lets a request be sent twice is a task).
fn build(config: kube::Config, path: &Path) -> Result<kube::Client> {
    let read_again = config.default_retry;
    let builder = kube::client::ClientBuilder::try_from(config)
        .with_context(|| format!("building a client from {}", path.display()))?;
    if !read_again {
        return Ok(builder.build());
    }
    Ok(builder
        .with_layer(&tower::buffer::BufferLayer::new(BUFFERED))
        .with_layer(&tower::retry::RetryLayer::new(
            crate::cluster::read_again::ReadAgain::default(),
        ))
        .build())
}

/// Requests a client holds while its connections are busy (kube's own
/// buffer holds as many).
const BUFFERED: usize = 1024;

async fn config_for_context(path: &Path, context: Option<&str>) -> Result<kube::Config> {
    crate::init_crypto();
    let kc = read_kubeconfig("kubeconfig", path)?;
    let options = kube::config::KubeConfigOptions {
        context: context.map(str::to_string),
        ..Default::default()
    };
    let mut config = kube::Config::from_custom_kubeconfig(kc, &options)
        .await
        .with_context(|| format!("loading kubeconfig {}", path.display()))?;
    config.read_timeout = Some(Duration::from_secs(60));
    config.connect_timeout = Some(CONNECT_TIMEOUT);
    Ok(config)
}

/// How long a client waits for a connection to the server: client-go's
/// dial timeout (k8s.io/client-go `transport/cache.go`, `tlsTransportCache.get`:
/// `net.Dialer{Timeout: 30 * time.Second}`), what kubectl and the
/// controllers wait. It was 5 s, and on a loaded 2-core machine a kind
/// API server's port took longer than that once (CI of 0a8ca83: "listing
/// pods …: client error (Connect): deadline has elapsed" ended a Thor run);
/// a server that is not there at all is named within [`REACH_TIMEOUT`] by
/// [`reachable`] before a run starts.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// How long `reachable` waits for the server's port to accept.
pub const REACH_TIMEOUT: Duration = Duration::from_secs(5);

/// Read the kubeconfig (bad input when it is not one, exit 2) and open a
/// TCP connection to its server within `REACH_TIMEOUT`: a server that
/// does not answer is the environment's (exit 3), named with its URL and
/// the kubeconfig, in seconds rather than after a discovery's wait.
pub async fn reachable(path: &Path, context: Option<&str>) -> Result<()> {
    let config = config_for_context(path, context)
        .await
        .map_err(|e| crate::error::bad_input(format!("--kubeconfig {}: {e:#}", path.display())))?;
    let url = config.cluster_url.clone();
    let host = url
        .host()
        .unwrap_or_default()
        .trim_matches(['[', ']'])
        .to_string();
    let port = url.port_u16().unwrap_or(match url.scheme_str() {
        Some("http") => 80,
        _ => 443,
    });
    let unreachable = |why: String| {
        crate::error::env_missing(
            format!(
                "the server {url} of --kubeconfig {} is not reachable: {why}",
                path.display()
            ),
            "check the cluster is up and its server reachable from here (`kubectl --kubeconfig FILE get --raw /readyz`)",
        )
    };
    match tokio::time::timeout(
        REACH_TIMEOUT,
        tokio::net::TcpStream::connect((host.as_str(), port)),
    )
    .await
    {
        Ok(Ok(_)) => {}
        Ok(Err(e)) => return Err(unreachable(e.to_string())),
        Err(_) => {
            return Err(unreachable(format!(
                "no answer within {} s",
                REACH_TIMEOUT.as_secs()
            )));
        }
    }
    // A server that takes the connection must also answer: any answer
    // (even a refusal of the credentials) is the later steps' to judge;
    // none at all is named here, not after discovery's wait.
    let client = kube::Client::try_from(config)
        .map_err(|e| crate::error::bad_input(format!("--kubeconfig {}: {e:#}", path.display())))?;
    match tokio::time::timeout(ANSWER_TIMEOUT, client.apiserver_version()).await {
        Ok(_) => Ok(()),
        Err(_) => Err(unreachable(format!(
            "it takes connections but sent no answer to GET /version within {} s",
            ANSWER_TIMEOUT.as_secs()
        ))),
    }
}

/// How long a server that took the connection has to answer
/// [`reachable`]'s GET /version (with [`REACH_TIMEOUT`], within 10 s).
pub const ANSWER_TIMEOUT: Duration = Duration::from_secs(4);

/// A kubeconfig read through the bounded reader (a FIFO or a device is
/// refused, naming `what` — the flag it came from, or "kubeconfig"), its
/// relative file references made absolute against its directory as
/// kube's own reader does, and every file it references (CA, client
/// certificate and key, token file) that exists checked the same way
/// before kube reads it.
pub fn read_kubeconfig(what: &str, path: &Path) -> Result<kube::config::Kubeconfig> {
    let text = crate::input::read_flag(what, path)?;
    let mut kc = kube::config::Kubeconfig::from_yaml(&text).map_err(|e| {
        crate::error::bad_input(format!("{what} {}: not a kubeconfig: {e}", path.display()))
    })?;
    let dir = path.parent().unwrap_or(Path::new("."));
    let absolute = |p: &mut Option<String>, field: &str| -> Result<()> {
        if let Some(f) = p.as_mut() {
            if Path::new(f.as_str()).is_relative() {
                *f = dir.join(f.as_str()).display().to_string();
            }
            // A missing file is left to kube (it reads only the chosen
            // context's, and a stale entry elsewhere is no harm); one that
            // is there must be a regular file within the limit.
            if std::fs::metadata(f.as_str()).is_ok() {
                crate::input::check(&format!("{what} {}: {field}", path.display()), Path::new(f))?;
            }
        }
        Ok(())
    };
    for c in kc.clusters.iter_mut().filter_map(|n| n.cluster.as_mut()) {
        absolute(&mut c.certificate_authority, "certificate-authority")?;
    }
    for a in kc
        .auth_infos
        .iter_mut()
        .filter_map(|n| n.auth_info.as_mut())
    {
        absolute(&mut a.client_certificate, "client-certificate")?;
        absolute(&mut a.client_key, "client-key")?;
        absolute(&mut a.token_file, "tokenFile")?;
        if let Some(exec) = a.exec.as_mut()
            && let Some(cmd) = exec.command.as_mut()
            && cmd.contains('/')
            && Path::new(cmd.as_str()).is_relative()
        {
            *cmd = dir.join(cmd.as_str()).display().to_string();
        }
    }
    Ok(kc)
}

pub fn http_client() -> Result<reqwest::Client> {
    crate::init_crypto();
    reqwest::Client::builder()
        .no_proxy()
        .timeout(Duration::from_secs(10))
        .build()
        .context("building an HTTP client")
}

pub async fn http_get(url: &str) -> Result<String> {
    let resp = http_client()?
        .get(url)
        .send()
        .await
        .with_context(|| format!("GET {url}"))?;
    ok_body(resp, url).await
}

/// The body of a 2xx response; the status and body otherwise.
pub async fn ok_body(resp: reqwest::Response, what: &str) -> Result<String> {
    let status = resp.status();
    let body = resp
        .text()
        .await
        .with_context(|| format!("reading GET {what}"))?;
    if !status.is_success() {
        bail!("GET {what}: {status}: {}", body.trim());
    }
    Ok(body)
}

pub async fn client_get(client: &kube::Client, path: &str) -> Result<String> {
    let req = http::Request::get(path).body(Vec::new())?;
    client
        .request_text(req)
        .await
        .with_context(|| format!("GET {path}"))
}

/// GET `path` through a kube client, the body as bytes (a profile is
/// gzipped protobuf, not text).
pub async fn client_get_bytes(client: &kube::Client, path: &str) -> Result<Vec<u8>> {
    use futures::AsyncReadExt;
    let req = http::Request::get(path).body(Vec::new())?;
    let mut body = Vec::new();
    client
        .request_stream(req)
        .await
        .with_context(|| format!("GET {path}"))?
        .read_to_end(&mut body)
        .await
        .with_context(|| format!("reading GET {path}"))?;
    Ok(body)
}

/// A client for a kubeconfig's context; a kubeconfig that cannot be used
/// is bad input (exit 2).
pub async fn client_for(kubeconfig: &Path, context: Option<&str>) -> Result<kube::Client> {
    crate::cluster::client::client_for_context(kubeconfig, context)
        .await
        .map_err(|e| {
            crate::error::bad_input(format!(
                "--kubeconfig {}{}: {e:#}",
                kubeconfig.display(),
                context
                    .map(|c| format!(" --context {c}"))
                    .unwrap_or_default()
            ))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 30: a kubeconfig is read bounded, its relative references
    /// made absolute, and a device named by it is refused before kube
    /// reads it.
    #[test]
    fn kubeconfigs_are_read_bounded_with_their_references_checked() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("ca.crt"), "pem").unwrap();
        let kc = d.path().join("config");
        std::fs::write(
            &kc,
            kubeconfig_text("c", "https://127.0.0.1:1", Path::new("ca.crt"), None),
        )
        .unwrap();
        let read = read_kubeconfig("--kubeconfig", &kc).unwrap();
        assert_eq!(
            read.clusters[0]
                .cluster
                .as_ref()
                .unwrap()
                .certificate_authority
                .as_deref(),
            Some(d.path().join("ca.crt").to_str().unwrap())
        );
        std::fs::write(
            &kc,
            kubeconfig_text("c", "https://127.0.0.1:1", Path::new("/dev/zero"), None),
        )
        .unwrap();
        let e = read_kubeconfig("--kubeconfig", &kc).unwrap_err();
        assert_eq!(crate::error::exit_code(&e), 2);
        let msg = e.to_string();
        assert!(
            msg.contains("certificate-authority /dev/zero: not a regular file"),
            "{msg}"
        );
        // A file that is not there is kube's to report (for the context
        // it uses), not a reason to refuse the whole kubeconfig.
        std::fs::write(
            &kc,
            kubeconfig_text("c", "https://127.0.0.1:1", Path::new("gone/ca.crt"), None),
        )
        .unwrap();
        read_kubeconfig("--kubeconfig", &kc).unwrap();
        let e = read_kubeconfig("--kubeconfig", Path::new("/dev/zero")).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("--kubeconfig /dev/zero: not a regular file"),
            "{e}"
        );
        std::fs::write(&kc, "clusters: 7\n").unwrap();
        let e = read_kubeconfig("--kubeconfig", &kc).unwrap_err();
        assert_eq!(crate::error::exit_code(&e), 2);
        assert!(e.to_string().contains("not a kubeconfig"), "{e}");
    }

    #[test]
    fn kubeconfig_parses_with_kube() {
        let text = kubeconfig_text(
            "harness-dev",
            "https://127.0.0.1:6443",
            Path::new("/s/pki/ca.crt"),
            Some((
                "admin",
                Path::new("/s/pki/a.crt"),
                Path::new("/s/pki/a.key"),
            )),
        );
        let kc = kube::config::Kubeconfig::from_yaml(&text).unwrap();
        assert_eq!(kc.current_context.as_deref(), Some("harness-dev"));
        let cluster = kc.clusters[0].cluster.as_ref().unwrap();
        assert_eq!(cluster.server.as_deref(), Some("https://127.0.0.1:6443"));
        let user = kc.auth_infos[0].auth_info.as_ref().unwrap();
        assert_eq!(user.client_certificate.as_deref(), Some("/s/pki/a.crt"));
        let anon = kubeconfig_text("c", "https://127.0.0.1:1", Path::new("/ca"), None);
        kube::config::Kubeconfig::from_yaml(&anon).unwrap();
    }

    /// Requests started on connections to `listener`, which reads each
    /// request and never answers: it stands for an API server whose
    /// connection hangs (a fault the real server cannot be made to show
    /// here on demand); nothing Kubernetes would answer is made up.
    fn silent(listener: std::net::TcpListener) -> std::sync::Arc<std::sync::Mutex<Vec<String>>> {
        let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let log = seen.clone();
        std::thread::spawn(move || {
            for conn in listener.incoming().flatten() {
                let log = log.clone();
                std::thread::spawn(move || {
                    use std::io::BufRead;
                    let mut line = String::new();
                    let mut r = std::io::BufReader::new(conn);
                    if r.read_line(&mut line).is_ok() && !line.is_empty() {
                        log.lock().unwrap().push(line.trim().to_string());
                    }
                    // Hold the connection open, answering nothing.
                    std::thread::sleep(Duration::from_secs(30));
                });
            }
        });
        seen
    }

    /// CI of 99a3dad: a LIST that got no answer ended a Thor run. Through
    /// the clients `build` makes, a read that times out is sent again
    /// three times and then fails; a write is sent once.
    #[tokio::test]
    async fn a_read_that_gets_no_answer_is_sent_again_and_a_write_is_not() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let seen = silent(listener);
        let mut config = kube::Config::new(url.parse().unwrap());
        config.read_timeout = Some(Duration::from_millis(300));
        let client = build(config.clone(), Path::new("(test)")).unwrap();
        let get = http::Request::get("/api/v1/pods").body(Vec::new()).unwrap();
        let err = client.request_text(get).await.unwrap_err();
        assert_eq!(
            crate::cluster::read_again::lost_connection(&err).as_deref(),
            Some("timed out"),
            "{err:?}"
        );
        let post = http::Request::post("/api/v1/namespaces/x/pods")
            .body(b"{}".to_vec())
            .unwrap();
        client.request_text(post).await.unwrap_err();
        // A client that asks nothing again (exits through the pod proxy).
        config.default_retry = false;
        let once = build(config, Path::new("(test)")).unwrap();
        let get = http::Request::get("/api/v1/nodes")
            .body(Vec::new())
            .unwrap();
        once.request_text(get).await.unwrap_err();
        let seen = seen.lock().unwrap().clone();
        let count = |start: &str| seen.iter().filter(|l| l.starts_with(start)).count();
        assert_eq!(
            count("GET /api/v1/pods "),
            1 + crate::cluster::read_again::AGAIN as usize,
            "{seen:?}"
        );
        assert_eq!(count("POST /api/v1/namespaces/x/pods "), 1, "{seen:?}");
        assert_eq!(count("GET /api/v1/nodes "), 1, "{seen:?}");
    }
}
