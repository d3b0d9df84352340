//! Finding, downloading or building the binaries a provider needs. One
//! version table (`versions`), one resolution order (`resolve`), one
//! download source (`release` layouts, `download`, `verify`), one builder
//! (`build`, which `refused` tells what the Go module proxy will not let
//! it build), and `doctor`: where each would come from right now.

pub mod build;
pub mod build_cost;
pub mod buildinfo;
pub mod cdeps;
pub mod command;
pub mod component;
pub mod doctor;
pub mod download;
pub mod engine;
pub mod exec;
pub mod go_source;
pub mod http;
pub mod kindnode;
/// Test support (the download mirror test server): built for this crate's
/// tests and, with the `testkit` feature, for its integration tests.
#[cfg(any(test, feature = "testkit"))]
pub mod mirror;
pub mod modules;
pub mod node_sources;
pub mod oci;
pub mod push;
pub mod refused;
pub mod release;
pub mod resolve;
pub mod side_by_side;
pub mod source;
pub mod toolchain;
pub mod verify;
pub mod versions;

pub use component::Component;
pub use resolve::{Resolved, Resolver, Source, Tools};
pub use source::SourceMode;
