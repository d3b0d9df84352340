//! Reach ESP (eclwatch) on a cluster through a kube-rs port-forward: a
//! local listener on 127.0.0.1 whose every accepted connection is pumped
//! through a new port-forward stream to the eclwatch pod. No kubectl.
//!
//! The pod is found by label. HPCC's chart labels an ESP pod with
//! `server: <esp name>`, `run: <esp name>` and `app: <application>` (the
//! default values name the eclwatch ESP `eclwatch`), so the default
//! selector is `server=eclwatch`; a different ESP name is a parameter.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use anyhow::{Context, Result, bail};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams};
use tokio::net::{TcpListener, TcpStream};

use crate::error::bad_input;

/// ESP's eclwatch port in HPCC's chart.
pub const ESP_PORT: u16 = 8010;
/// The label selector of the eclwatch pod with the chart's default values.
pub const DEFAULT_ESP_SELECTOR: &str = "server=eclwatch";

/// Check a `key=value[,key=value…]` selector (the only form used here).
pub fn validate_selector(selector: &str) -> Result<()> {
    if selector.trim().is_empty() {
        return Err(bad_input("empty pod label selector"));
    }
    for part in selector.split(',') {
        let Some((k, v)) = part.split_once('=') else {
            return Err(bad_input(format!(
                "pod label selector {selector:?}: {part:?} is not key=value"
            )));
        };
        let (k, v) = (
            k.trim().trim_end_matches('!'),
            v.trim().trim_start_matches('='),
        );
        let ok_key = !k.is_empty()
            && k.chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_./".contains(c));
        let ok_val = v
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c));
        if !ok_key || !ok_val {
            return Err(bad_input(format!(
                "pod label selector {selector:?}: {part:?} is not a valid label key=value"
            )));
        }
    }
    Ok(())
}

fn is_ready(p: &Pod) -> bool {
    let Some(status) = &p.status else {
        return false;
    };
    status.phase.as_deref() == Some("Running")
        && status
            .conditions
            .as_ref()
            .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

/// The pod to forward to: Ready and Running, not being deleted; the newest
/// when several are.
pub fn pick_pod(pods: &[Pod]) -> Option<String> {
    pods.iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none() && is_ready(p))
        .max_by_key(|p| p.metadata.creation_timestamp.clone().map(|t| t.0))
        .and_then(|p| p.metadata.name.clone())
}

/// A running forward; dropping it stops the listener and all streams.
pub struct PortForward {
    pub local: SocketAddr,
    pub pod: String,
    pub namespace: String,
    errors: Arc<Mutex<Vec<String>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for PortForward {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl PortForward {
    /// Find the pod matching `selector` in `namespace` and forward a local
    /// port to its `port`.
    pub async fn start(
        client: kube::Client,
        namespace: &str,
        selector: &str,
        port: u16,
    ) -> Result<PortForward> {
        validate_selector(selector)?;
        let api: Api<Pod> = Api::namespaced(client, namespace);
        let pods = api
            .list(&ListParams::default().labels(selector))
            .await
            .with_context(|| format!("listing pods {selector} in namespace {namespace}"))?;
        let Some(pod) = pick_pod(&pods.items) else {
            let seen: Vec<String> = pods
                .items
                .iter()
                .map(|p| {
                    format!(
                        "{} ({})",
                        p.metadata.name.clone().unwrap_or_default(),
                        p.status
                            .as_ref()
                            .and_then(|s| s.phase.clone())
                            .unwrap_or_else(|| "no phase".into())
                    )
                })
                .collect();
            bail!(
                "no ready pod with labels {selector} in namespace {namespace} to forward port {port} to (found: {})",
                if seen.is_empty() {
                    "none — is HPCC installed there?".to_string()
                } else {
                    seen.join(", ")
                }
            );
        };
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .context("binding a local port for the ESP port-forward")?;
        let local = listener.local_addr()?;
        let errors: Arc<Mutex<Vec<String>>> = Arc::default();
        let (a, p) = (api.clone(), pod.clone());
        let task = tokio::spawn(accept_loop(
            listener,
            format!("pod {namespace}/{pod}:{port}"),
            move || open_portforward(a.clone(), p.clone(), port),
            errors.clone(),
        ));
        tracing::info!("forwarding {local} to pod {namespace}/{pod}:{port}");
        Ok(PortForward {
            local,
            pod,
            namespace: namespace.to_string(),
            errors,
            task,
        })
    }

    /// `http://127.0.0.1:<port>`
    pub fn base_url(&self) -> String {
        format!("http://{}", self.local)
    }

    /// Errors of the forward's connections so far (a request through the
    /// forward that failed shows up here with the reason).
    pub fn errors(&self) -> Vec<String> {
        self.errors.lock().map(|e| e.clone()).unwrap_or_default()
    }
}

/// An upstream byte stream for one local connection, and what to await
/// once the copy is over (the port-forward's own completion).
pub struct Upstream {
    pub stream: Box<dyn Duplex>,
    pub finish: futures::future::BoxFuture<'static, Result<()>>,
}

pub trait Duplex: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send {}
impl<T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send> Duplex for T {}

/// Accept local connections forever; each gets its own upstream from
/// `open`, and bytes are copied both ways until either side closes.
/// Failures are recorded in `errors`, naming the peer and `target`.
pub async fn accept_loop<F, Fut>(
    listener: TcpListener,
    target: String,
    open: F,
    errors: Arc<Mutex<Vec<String>>>,
) where
    F: Fn() -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = Result<Upstream>> + Send + 'static,
{
    let open = Arc::new(open);
    loop {
        let (sock, peer) = match listener.accept().await {
            Ok(x) => x,
            Err(e) => {
                record(&errors, format!("accepting a local connection: {e}"));
                continue;
            }
        };
        let (open, errors, target) = (open.clone(), errors.clone(), target.clone());
        tokio::spawn(async move {
            if let Err(e) = pump(sock, open().await).await {
                record(&errors, format!("forwarding {peer} to {target}: {e:#}"));
            }
        });
    }
}

fn record(errors: &Mutex<Vec<String>>, msg: String) {
    tracing::warn!("{msg}");
    if let Ok(mut e) = errors.lock() {
        e.push(msg);
    }
}

async fn pump(mut sock: TcpStream, upstream: Result<Upstream>) -> Result<()> {
    let Upstream { mut stream, finish } = upstream?;
    let copied = tokio::io::copy_bidirectional(&mut sock, &mut stream).await;
    drop(stream);
    finish.await?;
    copied.context("copying between the local connection and the pod")?;
    Ok(())
}

/// A new port-forward to `pod`:`port` as an upstream.
async fn open_portforward(api: Api<Pod>, pod: String, port: u16) -> Result<Upstream> {
    let mut pf = api
        .portforward(&pod, &[port])
        .await
        .context("opening the port-forward")?;
    let stream = pf
        .take_stream(port)
        .context("the port-forward has no stream for the port")?;
    let pf_error = pf.take_error(port);
    let finish = Box::pin(async move {
        if let Some(err) = pf_error
            && let Some(msg) = err.await
        {
            bail!("the pod side reported: {msg}");
        }
        pf.join().await.context("closing the port-forward")?;
        Ok(())
    });
    Ok(Upstream {
        stream: Box::new(stream),
        finish,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(name: &str, phase: &str, ready: bool, created: &str, deleting: bool) -> Pod {
        let mut v = json!({
            "metadata": {"name": name, "creationTimestamp": created},
            "status": {"phase": phase, "conditions": [
                {"type": "Ready", "status": if ready { "True" } else { "False" }}
            ]}
        });
        if deleting {
            v["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:10:00Z");
        }
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn picks_the_newest_ready_pod() {
        let pods = vec![
            pod("old", "Running", true, "2026-01-01T00:00:00Z", false),
            pod("new", "Running", true, "2026-01-01T00:05:00Z", false),
            pod(
                "newer-not-ready",
                "Running",
                false,
                "2026-01-01T00:06:00Z",
                false,
            ),
            pod("pending", "Pending", false, "2026-01-01T00:07:00Z", false),
            pod("going", "Running", true, "2026-01-01T00:08:00Z", true),
        ];
        assert_eq!(pick_pod(&pods).as_deref(), Some("new"));
        assert_eq!(pick_pod(&pods[2..]), None);
        assert_eq!(pick_pod(&[]), None);
    }

    /// The pumping, with local TCP echo servers standing in for the
    /// port-forward streams: each local connection gets its own upstream,
    /// bytes go both ways, a failed open is recorded and the listener
    /// keeps serving.
    #[tokio::test]
    async fn each_connection_gets_its_own_upstream() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        use tokio::io::{AsyncReadExt, AsyncWriteExt};

        let echo = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let echo_addr = echo.local_addr().unwrap();
        tokio::spawn(async move {
            loop {
                let (mut s, _) = echo.accept().await.unwrap();
                tokio::spawn(async move {
                    let (mut r, mut w) = s.split();
                    let _ = tokio::io::copy(&mut r, &mut w).await;
                });
            }
        });
        let opened = Arc::new(AtomicUsize::new(0));
        let errors: Arc<Mutex<Vec<String>>> = Arc::default();
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let local = listener.local_addr().unwrap();
        let o = opened.clone();
        let task = tokio::spawn(accept_loop(
            listener,
            "echo".into(),
            move || {
                let n = o.fetch_add(1, Ordering::SeqCst);
                async move {
                    if n == 1 {
                        bail!("pod is gone");
                    }
                    let s = TcpStream::connect(echo_addr).await?;
                    Ok(Upstream {
                        stream: Box::new(s),
                        finish: Box::pin(async { Ok(()) }),
                    })
                }
            },
            errors.clone(),
        ));
        for (i, msg) in ["first", "second", "third"].iter().enumerate() {
            let mut c = TcpStream::connect(local).await.unwrap();
            let mut back = String::new();
            let io = async {
                c.write_all(msg.as_bytes()).await?;
                c.shutdown().await?;
                c.read_to_string(&mut back).await
            }
            .await;
            if i == 1 {
                // The failed upstream closes the connection (or resets it,
                // as the bytes sent were never read).
                assert!(io.is_err() || back.is_empty(), "{io:?} {back:?}");
            } else {
                io.unwrap();
                assert_eq!(&back, msg);
            }
        }
        assert_eq!(opened.load(Ordering::SeqCst), 3);
        // The failure is recorded by the connection's task: give it a moment.
        let mut errs = Vec::new();
        for _ in 0..100 {
            errs = errors.lock().unwrap().clone();
            if !errs.is_empty() {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        assert_eq!(errs.len(), 1, "{errs:?}");
        assert!(errs[0].contains("to echo: pod is gone"), "{errs:?}");
        task.abort();
    }

    #[test]
    fn selectors_are_checked() {
        validate_selector(DEFAULT_ESP_SELECTOR).unwrap();
        validate_selector("app.kubernetes.io/component=esp,run=eclwatch").unwrap();
        for bad in ["", "server", "server=ecl watch", "=x", "a=b,c"] {
            let e = validate_selector(bad).unwrap_err();
            assert_eq!(
                crate::error::exit_code(&e),
                crate::error::EXIT_USAGE,
                "{bad}"
            );
        }
    }
}
