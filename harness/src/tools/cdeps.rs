//! What a cgo build needs from the machine: runc's seccomp support is
//! libseccomp-golang, which links libseccomp through cgo (its `#cgo
//! pkg-config: libseccomp`), so a C compiler, pkg-config and libseccomp's
//! headers. Where they are missing and this is a Debian machine run by
//! root, they are installed with apt-get (the one system change the
//! harness makes, said on its progress line); elsewhere the error names
//! them.

use std::path::Path;
use std::process::Command;

use anyhow::Result;

use crate::error::env_missing;
use crate::progress::Step;

/// The Debian packages that provide what `missing` lacks.
const PACKAGES: [&str; 3] = ["gcc", "pkg-config", "libseccomp-dev"];

/// What of the C toolchain and libseccomp is missing here.
fn missing() -> Vec<&'static str> {
    let mut out = vec![];
    if which::which("gcc").is_err() && which::which("cc").is_err() {
        out.push("a C compiler");
    }
    match Command::new("pkg-config")
        .args(["--exists", "libseccomp"])
        .status()
    {
        Ok(s) if s.success() => {}
        Ok(_) => out.push("libseccomp's headers and pkg-config file"),
        Err(_) => out.push("pkg-config"),
    }
    out
}

fn apt_get(args: &[&str]) -> bool {
    Command::new("apt-get")
        .args(args)
        .env("DEBIAN_FRONTEND", "noninteractive")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Make sure `what` (a binary built with cgo) can be built: install the
/// packages with apt-get where allowed, else Err naming what is missing.
pub fn ensure_libseccomp(what: &str) -> Result<()> {
    let lacking = missing();
    if lacking.is_empty() {
        return Ok(());
    }
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    if root && Path::new("/usr/bin/apt-get").exists() {
        let step = Step::start(format!(
            "installing {} with apt-get ({what} links libseccomp through cgo)",
            PACKAGES.join(", ")
        ));
        let mut install = vec!["install", "-y", "-q"];
        install.extend(PACKAGES);
        if apt_get(&install) || (apt_get(&["update", "-q"]) && apt_get(&install)) {
            step.done("installed");
            if missing().is_empty() {
                return Ok(());
            }
        } else {
            step.done("failed");
        }
    }
    Err(env_missing(
        format!(
            "{what} is built with cgo and libseccomp, and this machine lacks {}",
            lacking.join(" and ")
        ),
        format!(
            "install them (Debian/Ubuntu: apt-get install {}; Fedora: dnf install gcc pkgconf libseccomp-devel)",
            PACKAGES.join(" ")
        ),
    ))
}
