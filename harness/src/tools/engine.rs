//! Which Docker engine the kind provider (and the kind node image build)
//! talks to: `$DOCKER_HOST` when set; else the harness's private engine
//! when its socket is there (`ci/ensure-docker.sh` starts it: a dockerd
//! whose state lives under the harness cache, its socket at
//! `<cache>/docker/docker.sock`); else Docker's default socket. Every
//! `docker` and `kind` the harness runs gets the same answer through
//! [`env`], so one process never mixes engines.

use std::path::PathBuf;
use std::sync::OnceLock;

/// The private engine's socket (ci/ensure-docker.sh keeps it there).
pub fn private_socket() -> PathBuf {
    crate::paths::cache_dir().join("docker").join("docker.sock")
}

/// Where the engine is, and how the harness found it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Engine {
    /// The DOCKER_HOST to give docker and kind; None: Docker's default.
    pub host: Option<String>,
    /// "DOCKER_HOST", "the harness's private engine", "Docker's default socket".
    pub how: &'static str,
}

/// The engine, decided once per process.
pub fn engine() -> &'static Engine {
    static ENGINE: OnceLock<Engine> = OnceLock::new();
    ENGINE.get_or_init(|| {
        decide(
            std::env::var("DOCKER_HOST").ok().filter(|h| !h.is_empty()),
            private_socket(),
        )
    })
}

fn decide(env_host: Option<String>, private: PathBuf) -> Engine {
    use std::os::unix::fs::FileTypeExt;
    if let Some(h) = env_host {
        return Engine {
            host: Some(h),
            how: "DOCKER_HOST",
        };
    }
    let is_socket = std::fs::metadata(&private).is_ok_and(|m| m.file_type().is_socket());
    if is_socket {
        return Engine {
            host: Some(format!("unix://{}", private.display())),
            how: "the harness's private engine (ci/ensure-docker.sh)",
        };
    }
    Engine {
        host: None,
        how: "Docker's default socket",
    }
}

/// The environment every `docker` and `kind` the harness runs gets.
pub fn env() -> Vec<(String, String)> {
    engine()
        .host
        .iter()
        .map(|h| ("DOCKER_HOST".to_string(), h.clone()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn docker_host_wins_then_the_private_socket_then_the_default() {
        let dir = tempfile::tempdir().unwrap();
        let sock = dir.path().join("docker.sock");
        let e = decide(Some("tcp://127.0.0.1:2375".into()), sock.clone());
        assert_eq!(e.host.as_deref(), Some("tcp://127.0.0.1:2375"));
        // A missing socket, or a plain file where it should be: the default.
        assert_eq!(decide(None, sock.clone()).host, None);
        std::fs::write(&sock, b"").unwrap();
        assert_eq!(decide(None, sock.clone()).host, None);
        std::fs::remove_file(&sock).unwrap();
        let _l = std::os::unix::net::UnixListener::bind(&sock).unwrap();
        let e = decide(None, sock.clone());
        assert_eq!(
            e.host,
            Some(format!("unix://{}", sock.display())),
            "{}",
            e.how
        );
    }
}
