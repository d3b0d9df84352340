//! The image a round runs in on someone's cluster (`harness image build`):
//! the harness itself with the shared libraries it links (read with
//! `ldd`), every binary the local provider starts for the run set, found
//! or built here, in the cache layout the harness reads
//! (`$HARNESS_CACHE_DIR/bin/<name>-<version>`), the upstream module files
//! the local provider installs from (JobSet's CRDs, kwok's stages: the Go
//! module cache layout `$GOMODCACHE/<module>@<version>`), and the
//! scenario files — as an OCI image layout archive (`tools::oci`), made
//! the way the kind node images are made here: no registry needed. It is
//! loaded into a kind cluster's nodes directly, or pushed where the nodes
//! pull from. Its name carries a digest of what is in it, so a new harness
//! or binary is a new image.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::k8s::K8sRelease;
use crate::tools::Component;
use crate::tools::oci::{self, ImageSpec};

/// The repository part of the image's name (local: never pulled).
pub const IMAGE_REPO: &str = "localhost/harness-rounds";

/// Where things are inside the image.
pub const CACHE: &str = "/cache";
pub const GOMOD: &str = "/gomod";
pub const REPO: &str = "/repo";
pub const HARNESS: &str = "/usr/local/bin/harness";
/// The pod's writable home (an emptyDir): state, out dirs.
pub const WORK: &str = "/work";
/// The trust roots (Debian's path), copied from this machine.
const CA_BUNDLE: &str = "/etc/ssl/certs/ca-certificates.crt";
/// The shell a measured command runs with (`sh -c`): this machine's
/// `/bin/sh` (dash on Debian) and what it links. The image holds no other
/// tool but the cluster's kubectl.
pub const SHELL: &str = "/bin/sh";

/// What goes into the image.
pub struct Contents {
    pub k8s: K8sRelease,
    /// Each binary and where it was found or built.
    pub binaries: Vec<(Component, PathBuf)>,
    /// Upstream modules the local provider reads files of: (module,
    /// version with its v).
    pub modules: Vec<(&'static str, String)>,
    /// The repository's files the runs read (scenarios), relative to
    /// `root`.
    pub files: Vec<PathBuf>,
    pub root: PathBuf,
}

/// What the image holds for rounds of Kubernetes `k8s`: every binary the
/// local provider starts and HPCC's kubectl, and `extra` (Kueue's
/// controller, its performance runner), found or built here; the module
/// files JobSet, kwok (and Kueue) are installed from; the Thor scenarios
/// of `root`.
pub async fn contents(k8s: K8sRelease, extra: &[Component], root: &Path) -> Result<Contents> {
    let mut components: Vec<Component> = Component::CLUSTER.to_vec();
    components.push(Component::HpccKubectl);
    let mut modules = vec![
        (
            "sigs.k8s.io/jobset",
            format!("v{}", crate::tools::versions::JOBSET_VERSION),
        ),
        (
            "sigs.k8s.io/kwok",
            format!("v{}", crate::tools::versions::KWOK_VERSION),
        ),
    ];
    components.extend(
        extra
            .iter()
            .filter(|c| !components.contains(c))
            .copied()
            .collect::<Vec<_>>(),
    );
    if extra
        .iter()
        .any(|c| matches!(c, Component::Kueue | Component::KueuePerfRunner))
    {
        modules.push((
            "sigs.k8s.io/kueue",
            format!("v{}", crate::tools::versions::KUEUE_VERSION),
        ));
    }
    let binaries = tokio::task::spawn_blocking(move || {
        let r = crate::tools::Resolver::from_env(k8s, Default::default());
        components
            .into_iter()
            .map(|c| Ok((c, r.resolve(c)?.path)))
            .collect::<Result<Vec<_>>>()
    })
    .await
    .context("finding the image's binaries")??;
    let scenarios = root.join("suites/thor");
    let files = walk(&scenarios)?
        .into_iter()
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .map(|p| Path::new("suites/thor").join(p))
        .collect();
    Ok(Contents {
        k8s,
        binaries,
        modules,
        files,
        root: root.to_path_buf(),
    })
}

/// The shared objects `exe` loads, and its ELF interpreter, as `ldd`
/// lists them: (path in the image, file here).
fn shared_libraries(exe: &Path) -> Result<Vec<(String, PathBuf)>> {
    let out = std::process::Command::new("ldd")
        .arg(exe)
        .output()
        .with_context(|| format!("ldd {} (it lists what the harness links)", exe.display()))?;
    let text = String::from_utf8_lossy(&out.stdout);
    Ok(parse_ldd(&text))
}

/// `ldd`'s lines "name => /path (0x…)" and "/path (0x…)" as paths; the
/// vDSO has none.
fn parse_ldd(text: &str) -> Vec<(String, PathBuf)> {
    text.lines()
        .filter_map(|l| {
            let l = l.trim();
            let path = match l.split_once("=>") {
                Some((_, rest)) => rest.split_whitespace().next()?,
                None => l.split_whitespace().next()?,
            };
            path.starts_with('/')
                .then(|| (path.to_string(), PathBuf::from(path)))
        })
        .collect()
}

/// Every file under `dir`, by its path relative to `dir`.
pub fn walk(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).with_context(|| format!("reading {}", d.display()))? {
            let p = e?.path();
            let meta = std::fs::symlink_metadata(&p)?;
            if meta.is_dir() {
                todo.push(p);
            } else if meta.is_file() {
                out.push(p.strip_prefix(dir)?.to_path_buf());
            }
        }
    }
    out.sort();
    Ok(out)
}

/// The image's spec: its files, its environment, and a name whose tag is
/// a digest of what it holds.
pub fn spec(c: &Contents) -> Result<ImageSpec> {
    let exe = std::env::current_exe().context("the harness's own path")?;
    let mut files: Vec<(String, PathBuf, u32)> = vec![(HARNESS.into(), exe.clone(), 0o755)];
    for (path, file) in shared_libraries(&exe)? {
        files.push((path, file, 0o755));
    }
    let shell = std::fs::canonicalize(SHELL)
        .with_context(|| format!("{SHELL} (the image's shell for measured commands)"))?;
    files.push((SHELL.into(), shell.clone(), 0o755));
    for (path, file) in shared_libraries(&shell)? {
        if !files.iter().any(|(p, _, _)| *p == path) {
            files.push((path, file, 0o755));
        }
    }
    let cache = Path::new(CACHE);
    for (comp, path) in &c.binaries {
        let at = comp.cached_path(cache, c.k8s);
        files.push((at.display().to_string(), path.clone(), 0o755));
    }
    for (module, version) in &c.modules {
        let dir = crate::tools::modules::module_dir(module, version)?;
        let name = format!(
            "{}@{version}",
            crate::tools::modules::escape_module_path(module)
        );
        for rel in walk(&dir)? {
            files.push((
                format!("{GOMOD}/{name}/{}", rel.display()),
                dir.join(&rel),
                0o644,
            ));
        }
    }
    // The harness's HTTP clients load the system's trust roots even where
    // they trust only a cluster's own CA.
    let roots = Path::new(CA_BUNDLE);
    if roots.is_file() {
        files.push((CA_BUNDLE.into(), roots.to_path_buf(), 0o644));
    }
    for rel in &c.files {
        files.push((format!("{REPO}/{}", rel.display()), c.root.join(rel), 0o644));
    }
    // A digest of every file's path and bytes names the image.
    let mut digest = sha2::Sha256::default();
    for (path, file, _) in &files {
        use sha2::Digest;
        digest.update(path.as_bytes());
        digest.update(std::fs::read(file).with_context(|| format!("reading {}", file.display()))?);
    }
    let tag = format!("{:x}", sha2::Digest::finalize(digest));
    Ok(ImageSpec {
        name: format!("{IMAGE_REPO}:{}", &tag[..16]),
        base_layer: None,
        files,
        entrypoint: vec![HARNESS.into()],
        cmd: vec!["--help".into()],
        env: vec![
            format!("HARNESS_CACHE_DIR={CACHE}"),
            format!("GOMODCACHE={GOMOD}"),
            format!("HOME={WORK}"),
            "HARNESS_NO_PROGRESS=1".into(),
            format!("SSL_CERT_FILE={CA_BUNDLE}"),
            "PATH=/usr/local/bin:/usr/bin:/bin".into(),
        ],
        labels: vec![(
            "org.opencontainers.image.description".into(),
            format!(
                "harness {} with the binaries of Kubernetes {} it runs a local cluster with",
                env!("CARGO_PKG_VERSION"),
                c.k8s.version
            ),
        )],
        user: None,
    })
}

/// Write the image into `dir` (`<tag>.tar`; kept when it is there
/// already); its archive and name.
pub fn build(c: &Contents, dir: &Path) -> Result<(PathBuf, String)> {
    let spec = spec(c)?;
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let tag = spec.name.rsplit(':').next().unwrap_or("image").to_string();
    let archive = dir.join(format!("harness-rounds-{tag}.tar"));
    if !archive.is_file() {
        oci::write_archive(&spec, &archive)?;
        forget_older(dir, &archive, KEPT)?;
    }
    Ok((archive, spec.name))
}

/// How many image archives the cache keeps: each is ~750 MB, and every
/// new harness binary makes a new one (15, 11 GB, had piled up here in
/// two days).
const KEPT: usize = 2;

/// Remove all but the `kept` newest image archives of `dir` (never
/// `current`).
fn forget_older(dir: &Path, current: &Path, kept: usize) -> Result<()> {
    let mut archives: Vec<(std::time::SystemTime, PathBuf)> = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("harness-rounds-") && n.ends_with(".tar"))
        })
        .filter_map(|p| Some((std::fs::metadata(&p).ok()?.modified().ok()?, p)))
        .collect();
    archives.sort_by_key(|a| std::cmp::Reverse(a.0));
    for (_, p) in archives
        .into_iter()
        .filter(|(_, p)| p != current)
        .skip(kept.saturating_sub(1))
    {
        std::fs::remove_file(&p).with_context(|| format!("removing {}", p.display()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cache_keeps_the_newest_archives_and_the_current_one() {
        let d = tempfile::tempdir().unwrap();
        let mut paths = Vec::new();
        for (i, name) in ["a", "b", "c", "d"].iter().enumerate() {
            let p = d.path().join(format!("harness-rounds-{name}.tar"));
            std::fs::write(&p, "x").unwrap();
            let t =
                std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1000 + i as u64);
            std::fs::File::options()
                .write(true)
                .open(&p)
                .unwrap()
                .set_modified(t)
                .unwrap();
            paths.push(p);
        }
        std::fs::write(d.path().join("other.tar"), "x").unwrap();
        // "b" was just written (its archive existed older: the newest is "d").
        forget_older(d.path(), &paths[1], 2).unwrap();
        let mut left: Vec<String> = std::fs::read_dir(d.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        assert_eq!(
            left,
            ["harness-rounds-b.tar", "harness-rounds-d.tar", "other.tar"]
        );
    }

    #[test]
    fn ldd_lines_give_the_libraries_and_the_interpreter() {
        let text = "\tlinux-vdso.so.1 (0x00007ffd)\n\
                    \tlibgcc_s.so.1 => /lib/x86_64-linux-gnu/libgcc_s.so.1 (0x00007f1)\n\
                    \tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f2)\n\
                    \t/lib64/ld-linux-x86-64.so.2 (0x00007f3)\n";
        let libs: Vec<String> = parse_ldd(text).into_iter().map(|(p, _)| p).collect();
        assert_eq!(
            libs,
            [
                "/lib/x86_64-linux-gnu/libgcc_s.so.1",
                "/lib/x86_64-linux-gnu/libc.so.6",
                "/lib64/ld-linux-x86-64.so.2"
            ]
        );
    }
}
