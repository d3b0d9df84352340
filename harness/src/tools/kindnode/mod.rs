//! kind node images built here, for machines that reach no container
//! registry (`harness tools install --kind`, and on demand by
//! `up --provider kind --kind-images built`): kind's `build node-image`
//! pulls etcd, CoreDNS, pause, kindnetd and local-path images at build
//! time and has no offline mode, and its base image is pulled too. So the
//! node is assembled from parts made here — a Debian root filesystem
//! (rootfs.rs), the binaries built from Go modules (tools/build.rs), the
//! images kubeadm runs written as OCI archives (images.rs, tools/oci.rs)
//! — following kind's node contract, read at build time from the kind
//! module (node.rs).
//!
//! Cached by content: the image's tag carries a key over the root
//! filesystem's inputs, kind's version, this assembly's revision and the
//! SHA-256 of every binary, so a changed input makes a new image and an
//! unchanged one is reused.
//!
//! `build` makes (or finds) the node image; `rootfs`, `images`, `node` and
//! `docker` are its parts.

pub mod build;
pub mod docker;
pub mod images;
pub mod node;
pub mod rootfs;

pub use crate::tools::kindnode::build::{BuiltNode, NODE_REPO, components, ensure, find_built};
