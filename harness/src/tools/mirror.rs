//! The download mirror test server: a small loopback HTTP/1.1 server
//! (tokio) that serves a mirror of the release layout
//! (`HARNESS_DOWNLOAD_BASE`, tools/release.rs) built by a test, and can
//! misbehave on purpose: a truncated body, a stall, silence, a trickle.
//! The real release hosts speak HTTPS to the internet, which tests cannot
//! reach; this stands in for them, never for anything else.
//!
//! Test support: compiled for this crate's unit tests, and with the
//! `testkit` feature for the integration tests under harness/tests/.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use sha2::{Digest, Sha256};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::tools::verify::hex;

/// Lower-case hex SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

/// A shell script that answers a version command like the real binary
/// ("Kubernetes v1.37.1"), so the resolver's version check passes.
pub fn version_script(version_line: &str) -> Vec<u8> {
    format!("#!/bin/sh\necho '{version_line}'\n").into_bytes()
}

/// What the download mirror test server answers for one path.
#[derive(Clone)]
pub enum Reply {
    /// 200 with this body.
    Body(Arc<Vec<u8>>),
    /// 200 announcing `claimed` bytes, sending `body`, then closing.
    Truncated { body: Vec<u8>, claimed: usize },
    /// 200 with the full Content-Length, the first `head` bytes, then
    /// nothing for `stall`.
    Stall {
        body: Vec<u8>,
        head: usize,
        stall: Duration,
    },
    /// Reads the request and says nothing for this long.
    Silent(Duration),
    /// 200, then one byte every `every`.
    Trickle { body: Vec<u8>, every: Duration },
}

type Routes = Arc<Mutex<HashMap<String, Reply>>>;

/// The download mirror test server: HTTP/1.1 on 127.0.0.1, one response
/// per connection, 404 for any path without a route. Records every path
/// asked for.
pub struct Mirror {
    /// `http://127.0.0.1:<port>/mirror`: the value for HARNESS_DOWNLOAD_BASE.
    pub base: String,
    routes: Routes,
    hits: Arc<Mutex<Vec<String>>>,
    _rt: tokio::runtime::Runtime,
}

impl Mirror {
    pub fn start() -> Mirror {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let routes: Routes = Arc::default();
        let hits: Arc<Mutex<Vec<String>>> = Arc::default();
        let listener = rt
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap();
        let port = listener.local_addr().unwrap().port();
        let (r, h) = (routes.clone(), hits.clone());
        rt.spawn(async move {
            while let Ok((sock, _)) = listener.accept().await {
                tokio::spawn(serve_one(sock, r.clone(), h.clone()));
            }
        });
        Mirror {
            base: format!("http://127.0.0.1:{port}/mirror"),
            routes,
            hits,
            _rt: rt,
        }
    }

    /// Serve `reply` at `<base>/<path>`.
    pub fn route(&self, path: &str, reply: Reply) {
        self.routes
            .lock()
            .unwrap()
            .insert(format!("/mirror/{path}"), reply);
    }

    pub fn body(&self, path: &str, bytes: &[u8]) {
        self.route(path, Reply::Body(Arc::new(bytes.to_vec())));
    }

    /// Serve `bytes` at `path` and, as Kubernetes does, its SHA-256 as bare
    /// hex at `path.sha256`.
    pub fn with_sidecar(&self, path: &str, bytes: &[u8]) {
        self.body(path, bytes);
        self.body(&format!("{path}.sha256"), sha256_hex(bytes).as_bytes());
    }

    pub fn hits(&self) -> Vec<String> {
        self.hits.lock().unwrap().clone()
    }
}

async fn serve_one(mut sock: tokio::net::TcpStream, routes: Routes, hits: Arc<Mutex<Vec<String>>>) {
    let mut req = Vec::new();
    let mut buf = [0u8; 2048];
    while !req.windows(4).any(|w| w == b"\r\n\r\n") {
        match sock.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => req.extend_from_slice(&buf[..n]),
        }
    }
    let head = String::from_utf8_lossy(&req).into_owned();
    let path = head.split_whitespace().nth(1).unwrap_or("/").to_string();
    hits.lock().unwrap().push(path.clone());
    let reply = routes.lock().unwrap().get(&path).cloned();
    let _ = answer(&mut sock, reply).await;
}

async fn answer(sock: &mut tokio::net::TcpStream, reply: Option<Reply>) -> std::io::Result<()> {
    let ok = |len: usize| {
        format!(
            "HTTP/1.1 200 OK\r\nContent-Length: {len}\r\nContent-Type: application/octet-stream\r\nConnection: close\r\n\r\n"
        )
    };
    match reply {
        None => {
            let body = b"404 page not found\n";
            let head = format!(
                "HTTP/1.1 404 Not Found\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            );
            sock.write_all(head.as_bytes()).await?;
            sock.write_all(body).await?;
        }
        Some(Reply::Body(b)) => {
            sock.write_all(ok(b.len()).as_bytes()).await?;
            sock.write_all(&b).await?;
        }
        Some(Reply::Truncated { body, claimed }) => {
            sock.write_all(ok(claimed).as_bytes()).await?;
            sock.write_all(&body).await?;
        }
        Some(Reply::Stall { body, head, stall }) => {
            sock.write_all(ok(body.len()).as_bytes()).await?;
            sock.write_all(&body[..head]).await?;
            sock.flush().await?;
            tokio::time::sleep(stall).await;
        }
        Some(Reply::Silent(d)) => tokio::time::sleep(d).await,
        Some(Reply::Trickle { body, every }) => {
            sock.write_all(ok(body.len()).as_bytes()).await?;
            for b in body {
                sock.write_all(&[b]).await?;
                sock.flush().await?;
                tokio::time::sleep(every).await;
            }
        }
    }
    sock.shutdown().await
}
