//! Assembling a kind node image in a build container, as kind's own
//! `build node-image` does (kind pkg/build/nodeimage/buildcontext.go), but
//! from parts made here:
//! 1. a container of the root filesystem image (rootfs.rs), privileged so
//!    that containerd can run in it;
//! 2. kind's base files copied in from the kind module
//!    (`images/base/files`: the entrypoint, the kubelet and containerd
//!    units and drop-ins, containerd's config, crictl's config, sysctls,
//!    `/kind/bin`), with the modes kind's base Dockerfile gives them, and
//!    the binaries where kind's images keep them (kubelet, kubeadm,
//!    kubectl in /usr/bin; containerd, its shim, ctr and crictl in
//!    /usr/local/bin; runc in /usr/local/sbin; CNI plugins in /opt/cni/bin);
//! 3. what kind's base Dockerfile does next, in our words: only kubelet,
//!    containerd and undo-mount-hacks enabled, other units' wants removed,
//!    binfmt masked, journald without kmsg, /sbin/init → systemd;
//!    `/etc/containerd/cri-base.json` from `ctr oci spec` with kind's
//!    mount-product-files hook and no rlimits;
//! 4. containerd's config told the sandbox image built here and
//!    `restrict_oom_score_adj = true` (this machine cannot lower an OOM
//!    score: no CAP_SYS_RESOURCE), `/kind/version`;
//! 5. the images imported into containerd's `k8s.io` namespace as kind
//!    does (`ctr images import --all-platforms --no-unpack --digests`,
//!    pinned), then `docker commit` with kind's entrypoint and stop signal.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

use crate::progress::Step;
use crate::tools::kindnode::docker;

/// One file to put into the node: where it goes, where it comes from.
#[derive(Debug, Clone)]
pub struct Placed {
    pub at: String,
    pub from: PathBuf,
    pub mode: u32,
}

/// What goes into one node image.
#[derive(Debug, Clone)]
pub struct NodeParts {
    /// The root filesystem image (`harness.local/kind-base:…`).
    pub base_image: String,
    /// The kind module's directory.
    pub kind_dir: PathBuf,
    /// Binaries, placed.
    pub binaries: Vec<Placed>,
    /// "v1.37.1".
    pub version: String,
    /// The pod sandbox image's reference.
    pub pause: String,
    /// OCI archives to import into containerd.
    pub archives: Vec<PathBuf>,
    /// The image to commit.
    pub image: String,
}

/// The modes kind's base Dockerfile gives its files: executables in
/// usr/local/bin and kind/bin, everything else 0644.
pub fn kind_file_mode(rel: &Path) -> u32 {
    if rel.starts_with("usr/local/bin") || rel.starts_with("kind/bin") {
        0o755
    } else {
        0o644
    }
}

/// Every file under the kind module's `images/base/files`, relative.
fn kind_files(kind_dir: &Path) -> Result<Vec<PathBuf>> {
    let root = kind_dir.join("images/base/files");
    let mut out = Vec::new();
    let mut stack = vec![root.clone()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).with_context(|| format!("reading {}", d.display()))? {
            let p = e?.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p.strip_prefix(&root)?.to_path_buf());
            }
        }
    }
    out.sort();
    if !out
        .iter()
        .any(|p| p == Path::new("usr/local/bin/entrypoint"))
    {
        bail!(
            "{} has no usr/local/bin/entrypoint: not kind's node base files",
            root.display()
        );
    }
    Ok(out)
}

/// kind's containerd config with the sandbox image and the OOM score
/// restriction this host needs.
pub fn containerd_config(text: &str, pause: &str) -> Result<String> {
    let mut saw = (false, false);
    let out: Vec<String> = text
        .lines()
        .map(|l| {
            let t = l.trim_start();
            let indent = &l[..l.len() - t.len()];
            if t.starts_with("sandbox_image") {
                saw.0 = true;
                format!("{indent}sandbox_image = \"{pause}\"")
            } else if t.starts_with("restrict_oom_score_adj") {
                saw.1 = true;
                format!("{indent}restrict_oom_score_adj = true")
            } else {
                l.to_string()
            }
        })
        .collect();
    if saw != (true, true) {
        bail!(
            "kind's containerd config has no sandbox_image or restrict_oom_score_adj line to set"
        );
    }
    Ok(out.join("\n") + "\n")
}

/// `ctr oci spec` made into kind's cri-base.json: kind's
/// mount-product-files hook appended to createContainer, no rlimits.
pub fn cri_base(spec: &str) -> Result<String> {
    let mut v: Value = serde_json::from_str(spec).context("`ctr oci spec` printed no JSON")?;
    let hooks = v
        .as_object_mut()
        .context("`ctr oci spec` is not an object")?
        .entry("hooks")
        .or_insert_with(|| json!({}));
    let list = hooks
        .as_object_mut()
        .context("hooks is not an object")?
        .entry("createContainer")
        .or_insert_with(|| json!([]));
    list.as_array_mut()
        .context("hooks.createContainer is not a list")?
        .push(json!({"path": "/kind/bin/mount-product-files.sh"}));
    if let Some(p) = v.get_mut("process").and_then(Value::as_object_mut) {
        p.remove("rlimits");
    }
    Ok(serde_json::to_string_pretty(&v)?)
}

/// The shell steps run in the build container after the files are in.
const SETUP: &str = "set -eu
chmod 755 /kind /kind/bin
find /lib/systemd/system/sysinit.target.wants/ -name systemd-tmpfiles-setup.service -delete
rm -f /lib/systemd/system/multi-user.target.wants/* /etc/systemd/system/*.wants/* \
  /lib/systemd/system/local-fs.target.wants/* /lib/systemd/system/sockets.target.wants/*udev* \
  /lib/systemd/system/sockets.target.wants/*initctl* /lib/systemd/system/basic.target.wants/*
grep -q '^ReadKMsg=no' /etc/systemd/journald.conf || echo 'ReadKMsg=no' >> /etc/systemd/journald.conf
ln -sf /usr/lib/systemd/systemd /sbin/init
systemctl enable kubelet.service containerd.service undo-mount-hacks.service
systemctl mask systemd-binfmt.service
mkdir -p /etc/kubernetes/manifests /etc/cni/net.d /var/lib/kubelet
";

const START_CONTAINERD: &str = "nohup containerd >/tmp/containerd.log 2>&1 &
for i in $(seq 1 100); do
  if [ -S /run/containerd/containerd.sock ] && ctr version >/dev/null 2>&1; then exit 0; fi
  sleep 0.2
done
cat /tmp/containerd.log >&2
exit 1";

const STOP_CONTAINERD: &str = "pkill containerd || true
for i in $(seq 1 50); do pgrep -x containerd >/dev/null || break; sleep 0.2; done
rm -rf /images /tmp/* /run/containerd";

/// Remove build containers of harness processes that are gone (a build
/// interrupted by a signal leaves its container).
pub fn remove_stale_build_containers(dockerbin: &Path) {
    let Ok(names) = docker::stdout(
        dockerbin,
        &[
            "ps",
            "-a",
            "--filter",
            "name=harness-kind-build-",
            "--format",
            "{{.Names}}",
        ],
    ) else {
        return;
    };
    for name in names.lines() {
        let pid = name.rsplit('-').next().and_then(|p| p.parse::<i32>().ok());
        let alive = pid.is_some_and(|p| Path::new(&format!("/proc/{p}")).exists());
        if !alive {
            let _ = docker::run(dockerbin, &["rm", "-f", "-v", name]);
        }
    }
}

struct BuildContainer<'a> {
    docker: &'a Path,
    name: String,
}

impl Drop for BuildContainer<'_> {
    fn drop(&mut self) {
        let _ = docker::run(self.docker, &["rm", "-f", "-v", &self.name]);
    }
}

impl BuildContainer<'_> {
    fn exec(&self, script: &str) -> Result<String> {
        docker::stdout(self.docker, &["exec", &self.name, "bash", "-c", script])
    }
}

/// Build the node image `parts.image` (the caller checked it is missing).
pub fn assemble(dockerbin: &Path, parts: &NodeParts, scratch: &Path) -> Result<()> {
    remove_stale_build_containers(dockerbin);
    let step = Step::start(format!("assembling kind node image {}", parts.image));
    let stage = scratch.join("stage");
    if stage.exists() {
        std::fs::remove_dir_all(&stage)?;
    }
    stage_files(&stage, parts)?;
    let bc = start_build_container(dockerbin, parts)?;
    set_up_build_container(&bc, &stage, scratch)?;
    import_images(&bc, parts, &step)?;
    let listed = bc.exec("ctr --namespace=k8s.io images list -q")?;
    bc.exec(STOP_CONTAINERD)?;
    commit_node_image(&bc, parts)?;
    drop(bc);
    let _ = std::fs::remove_dir_all(&stage);
    let n = listed
        .lines()
        .filter(|l| !l.starts_with("sha256:") && !l.contains('@'))
        .count();
    step.done(&format!("{} ({n} images in its containerd)", parts.image));
    Ok(())
}

/// Copy `from` to `at` under `stage` (its directories made) with `mode`.
fn put(stage: &Path, at: &str, from: &Path, mode: u32) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let dest = stage.join(at.trim_start_matches('/'));
    if let Some(d) = dest.parent() {
        std::fs::create_dir_all(d)?;
    }
    std::fs::copy(from, &dest)
        .with_context(|| format!("copying {} to {}", from.display(), dest.display()))?;
    std::fs::set_permissions(&dest, std::fs::Permissions::from_mode(mode))?;
    Ok(())
}

/// Lay out in `stage` what goes into the node: kind's base files, the
/// binaries, containerd's config, `/kind/version` and the image archives.
fn stage_files(stage: &Path, parts: &NodeParts) -> Result<()> {
    let files_root = parts.kind_dir.join("images/base/files");
    for rel in kind_files(&parts.kind_dir)? {
        put(
            stage,
            &rel.to_string_lossy(),
            &files_root.join(&rel),
            kind_file_mode(&rel),
        )?;
    }
    for b in &parts.binaries {
        put(stage, &b.at, &b.from, b.mode)?;
    }
    let cfg = stage.join("etc/containerd/config.toml");
    let text =
        std::fs::read_to_string(&cfg).with_context(|| format!("reading {}", cfg.display()))?;
    std::fs::write(&cfg, containerd_config(&text, &parts.pause)?)?;
    std::fs::write(stage.join("kind/version"), format!("{}\n", parts.version))?;
    for a in &parts.archives {
        let name = a.file_name().context("an archive file name")?;
        put(
            stage,
            &format!("images/{}", name.to_string_lossy()),
            a,
            0o644,
        )?;
    }
    Ok(())
}

/// Start the privileged build container from the root filesystem image
/// (removed when the returned guard drops, also if starting fails).
fn start_build_container<'a>(dockerbin: &'a Path, parts: &NodeParts) -> Result<BuildContainer<'a>> {
    let bc = BuildContainer {
        docker: dockerbin,
        name: format!(
            "harness-kind-build-{}-{}",
            parts.version.trim_start_matches('v').replace('.', "-"),
            std::process::id()
        ),
    };
    docker::run(
        dockerbin,
        &[
            "run",
            "-d",
            "--name",
            &bc.name,
            "--privileged",
            // The stop signal kind's nodes need (systemd's) goes into the
            // committed image from here: this Docker's `commit --change`
            // takes no STOPSIGNAL.
            "--stop-signal",
            "SIGRTMIN+3",
            "--security-opt",
            "seccomp=unconfined",
            "--security-opt",
            "apparmor=unconfined",
            "--entrypoint",
            "sleep",
            &parts.base_image,
            "infinity",
        ],
    )
    .context("starting the build container")?;
    Ok(bc)
}

/// Copy the staged files in, set up systemd as kind's base does, write
/// `cri-base.json` and start containerd in the build container.
fn set_up_build_container(bc: &BuildContainer<'_>, stage: &Path, scratch: &Path) -> Result<()> {
    let dockerbin = bc.docker;
    docker::run(
        dockerbin,
        &[
            "cp",
            &format!("{}/.", stage.display()),
            &format!("{}:/", bc.name),
        ],
    )
    .context("copying kind's files and the binaries into the build container")?;
    bc.exec(SETUP)
        .context("setting up systemd units as kind's base does")?;
    let spec = bc.exec("ctr oci spec").context("`ctr oci spec`")?;
    let base_json = scratch.join("cri-base.json");
    std::fs::write(&base_json, cri_base(&spec)?)?;
    docker::run(
        dockerbin,
        &[
            "cp",
            &base_json.to_string_lossy(),
            &format!("{}:/etc/containerd/cri-base.json", bc.name),
        ],
    )?;
    bc.exec(START_CONTAINERD)
        .context("starting containerd in the build container")?;
    Ok(())
}

/// Import every image archive into the node's containerd (`k8s.io`
/// namespace, pinned), as kind does.
fn import_images(bc: &BuildContainer<'_>, parts: &NodeParts, step: &Step) -> Result<()> {
    for a in &parts.archives {
        let name = a
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        step.update(&format!("importing {name}"));
        bc.exec(&format!(
            "ctr --namespace=k8s.io images import --label=io.cri-containerd.pinned=pinned --all-platforms --no-unpack --digests /images/{name}"
        ))
        .with_context(|| format!("importing {name} into the node's containerd"))?;
    }
    Ok(())
}

/// `docker commit` the build container as `parts.image` with kind's
/// entrypoint.
fn commit_node_image(bc: &BuildContainer<'_>, parts: &NodeParts) -> Result<()> {
    docker::run(
        bc.docker,
        &[
            "commit",
            "--change",
            r#"ENTRYPOINT [ "/usr/local/bin/entrypoint", "/sbin/init" ]"#,
            "--change",
            "CMD []",
            "--change",
            "ENV container=docker",
            "--change",
            r#"LABEL harness.built-here="kind node image assembled by harness tools install --kind""#,
            &bc.name,
            &parts.image,
        ],
    )
    .context("committing the node image")?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn containerd_config_gets_the_sandbox_and_oom_settings() {
        let text = "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\"]\n  sandbox_image = \"registry.k8s.io/pause:3.10\"\n  restrict_oom_score_adj = false\n";
        let out = containerd_config(text, "registry.k8s.io/pause:3.10.1").unwrap();
        assert!(
            out.contains("  sandbox_image = \"registry.k8s.io/pause:3.10.1\"\n"),
            "{out}"
        );
        assert!(out.contains("  restrict_oom_score_adj = true\n"), "{out}");
        assert!(containerd_config("version = 2\n", "p").is_err());
    }

    #[test]
    fn cri_base_has_kinds_hook_and_no_rlimits() {
        let spec = r#"{"ociVersion":"1.2.0","process":{"args":["sh"],"rlimits":[{"type":"RLIMIT_NOFILE","hard":1024,"soft":1024}]},"hooks":{"createContainer":[{"path":"/x"}]}}"#;
        let v: Value = serde_json::from_str(&cri_base(spec).unwrap()).unwrap();
        assert!(v["process"].get("rlimits").is_none());
        assert_eq!(
            v["hooks"]["createContainer"][1]["path"],
            "/kind/bin/mount-product-files.sh"
        );
        let bare: Value = serde_json::from_str(&cri_base(r#"{"process":{}}"#).unwrap()).unwrap();
        assert_eq!(
            bare["hooks"]["createContainer"][0]["path"],
            "/kind/bin/mount-product-files.sh"
        );
        assert!(cri_base("not json").is_err());
    }

    #[test]
    fn kind_files_keep_kinds_modes() {
        assert_eq!(kind_file_mode(Path::new("usr/local/bin/entrypoint")), 0o755);
        assert_eq!(
            kind_file_mode(Path::new("kind/bin/mount-product-files.sh")),
            0o755
        );
        assert_eq!(
            kind_file_mode(Path::new("etc/containerd/config.toml")),
            0o644
        );
    }
}
