//! The root filesystem of a kind node built here: Debian bookworm made by
//! `debootstrap` from Debian's packages, with the packages kind's own base
//! image installs — read at build time from kind's base Dockerfile in the
//! kind module (`images/base/Dockerfile`, its `clean-install` list) — and
//! dbus, which systemd's units want. bookworm rather than kind's trixie:
//! bookworm's systemd 252 boots on a cgroup v1 host, trixie's may refuse.
//!
//! Made once per package list and mirror: a tar in the cache
//! (`<cache>/kind/rootfs-<key>.tar`, also the base layer of the
//! kube-proxy image, which needs iptables and conntrack) and its
//! `docker import` as `harness.local/kind-base:<key>`.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

use crate::error::env_missing;
use crate::progress::Step;
use crate::tools::kindnode::docker;
use crate::tools::oci::sha256_hex;

pub const SUITE: &str = "bookworm";

/// Beyond kind's list: what a systemd container here needs that kind's
/// trixie base brings otherwise.
const EXTRA_PACKAGES: &[&str] = &["dbus", "systemd-sysv"];

/// The Debian mirror: `$HARNESS_DEBIAN_MIRROR`, else Debian's own.
pub fn mirror() -> String {
    std::env::var("HARNESS_DEBIAN_MIRROR")
        .ok()
        .filter(|m| !m.is_empty())
        .unwrap_or_else(|| "http://deb.debian.org/debian".to_string())
}

/// The packages of kind's base image: the words after `clean-install` in
/// its Dockerfile, up to the end of that shell command.
pub fn kind_packages(dockerfile: &str) -> Result<Vec<String>> {
    let start = dockerfile
        .find("clean-install")
        .context("kind's base Dockerfile has no `clean-install` step")?;
    let mut out = Vec::new();
    for word in dockerfile[start + "clean-install".len()..].split_whitespace() {
        match word {
            "\\" => continue,
            "&&" | ";" => break,
            w if w.starts_with('-') || w.contains('=') || w.contains('$') => {
                bail!("kind's `clean-install` list has {w:?}, not a package name")
            }
            w => out.push(w.to_string()),
        }
    }
    if out.is_empty() {
        bail!("kind's `clean-install` step names no package");
    }
    Ok(out)
}

/// What the root filesystem is made of, and the key of its cache entry.
#[derive(Debug, Clone)]
pub struct RootfsPlan {
    pub packages: Vec<String>,
    pub mirror: String,
    pub key: String,
}

impl RootfsPlan {
    pub fn new(kind_dir: &Path) -> Result<RootfsPlan> {
        let dockerfile =
            crate::tools::modules::read_module_file(kind_dir, "images/base/Dockerfile")?;
        let mut packages = kind_packages(&dockerfile)?;
        packages.extend(EXTRA_PACKAGES.iter().map(|p| p.to_string()));
        packages.sort();
        packages.dedup();
        let mirror = mirror();
        let key = sha256_hex(format!("{SUITE}\n{mirror}\n{}", packages.join(",")).as_bytes())[..16]
            .to_string();
        Ok(RootfsPlan {
            packages,
            mirror,
            key,
        })
    }

    pub fn tar_path(&self, cache: &Path) -> PathBuf {
        cache.join("kind").join(format!("rootfs-{}.tar", self.key))
    }

    pub fn image(&self) -> String {
        format!("harness.local/kind-base:{}", self.key)
    }
}

/// The root filesystem tar and its imported image, made when missing.
pub fn ensure(plan: &RootfsPlan, cache: &Path, dockerbin: &Path) -> Result<PathBuf> {
    let tar = plan.tar_path(cache);
    if !tar.is_file() {
        debootstrap(plan, &tar)?;
    }
    if !docker::has_image(dockerbin, &plan.image()) {
        let step = Step::start(format!("importing {} as {}", tar.display(), plan.image()));
        docker::run(
            dockerbin,
            &["import", &tar.to_string_lossy(), &plan.image()],
        )?;
        step.done("imported");
    }
    Ok(tar)
}

fn debootstrap(plan: &RootfsPlan, tar: &Path) -> Result<()> {
    let Ok(bin) = which::which("debootstrap") else {
        return Err(env_missing(
            "building a kind node image needs debootstrap (a Debian root filesystem from Debian's packages)",
            "apt-get install debootstrap (ci/ensure-docker.sh installs it with the engine)",
        ));
    };
    let dir = tar.with_extension("dir");
    if dir.exists() {
        std::fs::remove_dir_all(&dir).with_context(|| format!("removing {}", dir.display()))?;
    }
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let step = Step::start(format!(
        "debootstrap {SUITE} from {} with {} packages (kind's base list)",
        plan.mirror,
        plan.packages.len()
    ));
    let log = tar.with_extension("debootstrap.log");
    let logf =
        std::fs::File::create(&log).with_context(|| format!("creating {}", log.display()))?;
    let status = Command::new(bin)
        .args([
            "--variant=minbase",
            &format!("--include={}", plan.packages.join(",")),
            SUITE,
        ])
        .arg(&dir)
        .arg(&plan.mirror)
        .stdout(logf.try_clone()?)
        .stderr(logf)
        .status()
        .context("running debootstrap")?;
    if !status.success() {
        let tail = crate::logs::tail(&log, 20);
        let _ = std::fs::remove_dir_all(&dir);
        bail!("debootstrap failed ({status}); {}:\n{tail}", log.display());
    }
    // Apt's caches are not part of a node; /dev is the runtime's.
    for sub in ["var/cache/apt/archives", "var/lib/apt/lists"] {
        let p = dir.join(sub);
        if let Ok(entries) = std::fs::read_dir(&p) {
            for e in entries.flatten() {
                if e.path().is_file() {
                    let _ = std::fs::remove_file(e.path());
                }
            }
        }
    }
    let partial = tar.with_extension("tar.tmp");
    let status = Command::new("tar")
        .args(["--numeric-owner", "--exclude=./dev/*", "-C"])
        .arg(&dir)
        .arg("-cf")
        .arg(&partial)
        .arg(".")
        .status()
        .context("running tar")?;
    if !status.success() {
        bail!("tar of {} failed ({status})", dir.display());
    }
    std::fs::rename(&partial, tar)?;
    std::fs::remove_dir_all(&dir).with_context(|| format!("removing {}", dir.display()))?;
    let mb = std::fs::metadata(tar)
        .map(|m| m.len() / 1_000_000)
        .unwrap_or(0);
    step.done(&format!("{} ({mb} MB)", tar.display()));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_package_list_is_read_from_its_dockerfile() {
        let text = "RUN chmod 755 /kind && \\\n    echo x \\\n    && DEBIAN_FRONTEND=noninteractive clean-install \\\n      systemd \\\n      conntrack iptables \\\n      bash ca-certificates curl \\\n    && find /lib -delete \\\n";
        assert_eq!(
            kind_packages(text).unwrap(),
            [
                "systemd",
                "conntrack",
                "iptables",
                "bash",
                "ca-certificates",
                "curl"
            ]
        );
        assert!(kind_packages("RUN apt-get install x").is_err());
        assert!(kind_packages("clean-install --yes x &&").is_err());
        assert!(kind_packages("clean-install && x").is_err());
    }
}
