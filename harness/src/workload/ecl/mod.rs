//! HPCC Systems as a workload: submitting ECL to a real HPCC platform on a
//! cluster and measuring what Thor does to the Kubernetes API meanwhile.
//!
//! - `wsworkunits`: a JSON client for ESP's WsWorkunits service (eclwatch,
//!   port 8010): create a workunit from ECL text, submit it to a target,
//!   poll it to a final state, fetch its results, abort it.
//! - `portforward`: reach eclwatch through a kube-rs port-forward (no
//!   kubectl), one forward stream per accepted local connection.
//! - `cases`: the ECL suite's case files (`suites/ecl/<case>.ecl` and
//!   `<case>.expected.json`) and the comparison of fetched results with them.
//! - `run`: one case on a cluster, measured (API requests, etcd writes,
//!   Thor pods, wall time).
//! - `report`: the suite's JSON, JUnit XML and Markdown (baseline vs jobset).
//!
//! Tests run the client against the "ESP test server"
//! (`harness/tests/esp.rs`), a small local HTTP server that implements the
//! WsWorkunits subset used here with scripted workunit states — the one
//! stand-in for HPCC this project allows. It is test code, never shipped.

pub mod cases;
pub mod portforward;
pub mod report;
pub mod run;
pub mod wsworkunits;

pub use wsworkunits::{EspClient, PollPolicy, WorkunitInfo, WuState};
