//! The harness library: clusters, installs, tools — and, in later layers,
//! workloads, metrics, baselines and reports. See README.md for the layers.

pub mod bench;
pub mod cluster;
pub mod error;
pub mod inotify;
pub mod input;
pub mod install;
pub mod k8s;
pub mod lifecycle;
pub mod load;
pub mod logs;
pub mod machine;
pub mod metrics;
pub mod output;
pub mod paths;
pub mod pki;
pub mod poll;
pub mod progress;
pub mod schema;
pub mod signal;
pub mod stats;
pub mod timings;
pub mod tools;
pub mod validate;
pub mod workload;
pub mod yaml;

/// Install the process-wide TLS crypto provider (ring) once. kube and
/// reqwest both use rustls; neither is built with a default provider.
pub fn init_crypto() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // Err means another provider is installed already: fine.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}
