//! Building a component from Go modules with the local Go toolchain.
//!
//! Each source tree is a wrapper module under `<cache>/go/<tree>/` that
//! requires the upstream module and lists the commands as `tool`
//! directives, or, for a command whose `main` is not in its module
//! (kubectl), holds a main.go of the harness's own and builds itself. For k8s.io/kubernetes the staging replaces are derived from
//! the real go.mod of that release (its `=> ./staging/src/...` lines), so a
//! release that adds a staging module needs no code change here.
//!
//! A file lock per tree stops two harness processes (two test binaries, a
//! test and a CLI) from building the same thing at once; the second waits
//! and then finds the binary in the cache.

use std::ffi::OsStr;
use std::fs::{self, File};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::{Context, Result, bail};

use crate::error::env_missing;
use crate::k8s::K8sRelease;
use crate::progress::Step;
use crate::tools::component::{Component, GoSource};
use crate::tools::exec::{find_go, output_with_timeout, probe_version};
use crate::tools::refused::{refused_module, unbuildable};
use crate::tools::toolchain::{Toolchain, go_directive};
use crate::tools::versions::MIN_GO;

/// The toolchain's (major, minor, "go1.26.8").
pub fn go_version(go: &Path) -> Result<(u32, u32, String)> {
    let out = output_with_timeout(
        Command::new(go)
            .args(["env", "GOVERSION"])
            .env("GOTOOLCHAIN", "local"),
        Duration::from_secs(60),
    )
    .with_context(|| format!("running {} env GOVERSION", go.display()))?;
    let v = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let nums: Vec<u32> = v
        .trim_start_matches("go")
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|p| p.parse().ok())
        .collect();
    match nums.as_slice() {
        [major, minor, ..] => Ok((*major, *minor, v)),
        _ => bail!("cannot read the Go version from {v:?}"),
    }
}

fn missing_fix(k8s: K8sRelease, c: Component) -> String {
    format!(
        "install Go ≥ {}.{} (put `go` on PATH or set HARNESS_GO), or provide {} v{} yourself: \
         set {}=/path/to/{} or put it on PATH",
        MIN_GO.0,
        MIN_GO.1,
        c.name(),
        c.version(k8s),
        c.env_var(),
        c.name()
    )
}

/// Build `c` into the cache and return its path. A binary that imports a
/// module the Go module proxy refuses (tools/refused.rs) fails first,
/// before the toolchain and the module graph are fetched.
pub fn build(k8s: K8sRelease, cache_dir: &Path, c: Component, tried: &[String]) -> Result<PathBuf> {
    if let Some(refusal) = unbuildable(k8s, c) {
        return Err(refusal);
    }
    let version = c.version(k8s);
    let (go, go_minor, gov) = usable_go(k8s, c, tried)?;
    let src = c.go_source(k8s);
    let _lock = lock_tree(cache_dir, &src.tree)?;
    // Another process may have built it while we waited.
    let target = c.cached_path(cache_dir, k8s);
    if target.exists() && probe_version(c, &target).is_ok_and(|v| v == version) {
        return Ok(target);
    }

    let tree = cache_dir.join("go").join(&src.tree);
    fs::create_dir_all(&tree).with_context(|| format!("creating {}", tree.display()))?;
    let logs = cache_dir.join("logs");
    fs::create_dir_all(&logs)?;
    let log_path = logs.join(format!("build-{}-{version}.log", c.name()));
    let mut log =
        File::create(&log_path).with_context(|| format!("creating {}", log_path.display()))?;

    let (upstream, toolchain) = choose_toolchain(k8s, c, &go, &src, go_minor, &gov, &mut log)?;
    let step = Step::start(format!(
        "building {} v{version} from {}@{} with {}",
        c.name(),
        src.module,
        src.module_version,
        toolchain.name
    ));
    let fail = |what: &str, e: anyhow::Error| build_failed(k8s, c, &log_path, what, e);

    // How long resolving and downloading modules took, apart from
    // compiling: the first build of a module graph fetches it all.
    let resolving = std::time::Instant::now();
    prepare_tree(
        k8s,
        &go,
        &src,
        upstream.as_deref(),
        &toolchain,
        &tree,
        &mut log,
        &step,
    )
    .map_err(|e| fail("preparing the wrapper module", e))?;
    let resolving = resolving.elapsed().as_secs_f64();

    fs::create_dir_all(target.parent().expect("cached path has a parent"))?;
    let tmp = target.with_extension(format!("tmp-{}", std::process::id()));
    go_build(c, &go, &src, &toolchain, &tree, &tmp, &mut log, &step)
        .map_err(|e| fail("running go build", e))?;
    fs::rename(&tmp, &target)
        .with_context(|| format!("moving the build to {}", target.display()))?;
    step.done(&format!("done, {resolving:.1} s of it resolving modules"));
    Ok(target)
}

/// The Go toolchain to build `c` with, its (major, minor) and version
/// text; an error naming the fix when there is none or it is too old.
fn usable_go(
    k8s: K8sRelease,
    c: Component,
    tried: &[String],
) -> Result<(PathBuf, (u32, u32), String)> {
    let version = c.version(k8s);
    let Some(go) = find_go() else {
        return Err(env_missing(
            format!(
                "{} v{version} was not found ({}) and there is no Go toolchain to build it",
                c.name(),
                tried.join("; ")
            ),
            missing_fix(k8s, c),
        ));
    };
    let (major, minor, gov) = go_version(&go).map_err(|e| {
        env_missing(
            format!("the Go toolchain at {} does not work: {e:#}", go.display()),
            missing_fix(k8s, c),
        )
    })?;
    if (major, minor) < MIN_GO {
        return Err(env_missing(
            format!(
                "{} v{version} must be built, and {gov} at {} is older than Go {}.{}",
                c.name(),
                go.display(),
                MIN_GO.0,
                MIN_GO.1
            ),
            missing_fix(k8s, c),
        ));
    }
    Ok((go, (major, minor), gov))
}

/// Take the file lock of source tree `tree`, waiting (and saying so) while
/// another harness process holds it; the lock lasts as long as the file.
fn lock_tree(cache_dir: &Path, tree: &str) -> Result<File> {
    let locks = cache_dir.join("locks");
    fs::create_dir_all(&locks).with_context(|| format!("creating {}", locks.display()))?;
    let lock_path = locks.join(format!("{tree}.lock"));
    let lock =
        File::create(&lock_path).with_context(|| format!("creating {}", lock_path.display()))?;
    if lock.try_lock().is_err() {
        let wait = Step::start(format!(
            "waiting for another harness process building {tree}"
        ));
        lock.lock()
            .with_context(|| format!("locking {}", lock_path.display()))?;
        wait.done("done");
    }
    Ok(lock)
}

/// The upstream module's go.mod (None, logged, when unread) and the Go
/// toolchain it asks for, given the machine's Go.
fn choose_toolchain(
    k8s: K8sRelease,
    c: Component,
    go: &Path,
    src: &GoSource,
    go_minor: (u32, u32),
    gov: &str,
    log: &mut File,
) -> Result<(Option<String>, Toolchain)> {
    // The module's go.mod says which Go it needs. Unread (no proxy, a
    // broken go), the build goes on with the machine's Go and fails, if it
    // must, where its log shows why.
    let upstream = match upstream_gomod(go, src.module, &src.module_version) {
        Ok(text) => Some(text),
        Err(e) => {
            writeln!(
                log,
                "reading {}@{}'s go.mod: {e:#}; building with the machine's Go",
                src.module, src.module_version
            )?;
            None
        }
    };
    let toolchain = Toolchain::choose(upstream.as_deref().and_then(go_directive), go_minor, gov)
        .map_err(|e| {
            env_missing(
                format!("building {} v{}: {e:#}", c.name(), c.version(k8s)),
                missing_fix(k8s, c),
            )
        })?;
    Ok((upstream, toolchain))
}

/// The error of a build that failed while `what`: the build log's tail,
/// the module versions the proxy refused, and the fix.
fn build_failed(
    k8s: K8sRelease,
    c: Component,
    log_path: &Path,
    what: &str,
    e: anyhow::Error,
) -> anyhow::Error {
    let version = c.version(k8s);
    let tail = crate::logs::tail(log_path, 25);
    let refused = refused_modules(&fs::read_to_string(log_path).unwrap_or_default());
    let fix = if refused.is_empty() {
        missing_fix(k8s, c)
    } else {
        format!(
            "point GOPROXY at a Go module proxy that serves them (or fill GOMODCACHE with them), or provide {} v{version} yourself: set {}=/path/to/{}",
            c.name(),
            c.env_var(),
            c.name()
        )
    };
    let refused = if refused.is_empty() {
        String::new()
    } else {
        format!(
            "\n  the Go module proxy refused {} module version(s) the build needs: {}",
            refused.len(),
            refused.join(", ")
        )
    };
    env_missing(
        format!(
            "building {} v{version} failed while {what}: {e:#}{refused}\n  build log {}:\n{tail}",
            c.name(),
            log_path.display()
        ),
        fix,
    )
}

/// The compiler's flag for every package of a build: no DWARF
/// (`go_build`).
const NO_DWARF: &str = "all=-dwarf=false";

/// `go build` of the source's package into `tmp`, stripped, with its
/// ldflags and tags, and cgo (and libseccomp) only when it needs them.
/// The linker's `-w` drops DWARF from the binary, but `go build` still
/// has the compiler make it for every package (cmd/go/internal/work/gc.go
/// passes `-dwarf=false` only for `go run` and `go test`'s binaries);
/// `-gcflags=all=-dwarf=false` skips that work. Stack traces read the
/// pcln table, not DWARF: the binary behaves the same.
#[allow(clippy::too_many_arguments)]
fn go_build(
    c: Component,
    go: &Path,
    src: &GoSource,
    toolchain: &Toolchain,
    tree: &Path,
    tmp: &Path,
    log: &mut File,
    step: &Step,
) -> Result<()> {
    let ldflags = std::iter::once("-s -w".to_string())
        .chain(src.ldflags.iter().map(|x| format!("-X {x}")))
        .collect::<Vec<_>>()
        .join(" ");
    let tags = src.tags.join(",");
    let mut args: Vec<&OsStr> = vec![
        "build".as_ref(),
        "-trimpath".as_ref(),
        "-gcflags".as_ref(),
        NO_DWARF.as_ref(),
        "-ldflags".as_ref(),
        ldflags.as_ref(),
    ];
    if !tags.is_empty() {
        args.push("-tags".as_ref());
        args.push(tags.as_ref());
    }
    args.push("-o".as_ref());
    args.push(tmp.as_os_str());
    args.push(src.package.as_ref());
    if src.cgo {
        crate::tools::cdeps::ensure_libseccomp(c.name())?;
    }
    let cgo = if src.cgo { "1" } else { "0" };
    run_logged(go, toolchain, tree, &args, cgo, log, step)
}

/// Write the wrapper go.mod and resolve its dependencies (once per tree).
#[allow(clippy::too_many_arguments)]
fn prepare_tree(
    k8s: K8sRelease,
    go: &Path,
    src: &GoSource,
    upstream: Option<&str>,
    toolchain: &Toolchain,
    tree: &Path,
    log: &mut File,
    step: &Step,
) -> Result<()> {
    let (gmaj, gmin) = toolchain.language;
    let mut gomod = format!(
        "// Generated by the harness: builds {} {} from the Go module proxy.\nmodule harness.local/build/{}\n\ngo {gmaj}.{gmin}.0\n\nrequire {} {}\n",
        src.module, src.module_version, src.tree, src.module, src.module_version
    );
    if let Some(staging) = &src.staging_replaces {
        let upstream = match upstream {
            Some(text) => text.to_string(),
            None => upstream_gomod(go, src.module, &src.module_version)?,
        };
        let staged = staging_modules(&upstream);
        if staged.is_empty() {
            bail!(
                "{}@{}'s go.mod has no staging replaces",
                src.module,
                src.module_version
            );
        }
        gomod.push('\n');
        for m in staged {
            gomod.push_str(&format!("replace {m} => {m} {staging}\n"));
        }
    }
    gomod.push('\n');
    for package in tool_packages(k8s, &src.tree) {
        gomod.push_str(&format!("tool {package}\n"));
    }
    let gomod_path = tree.join("go.mod");
    let main_path = tree.join("main.go");
    let marker = tree.join(".tidy-done");
    // The marker records what tidy ran on: the generated go.mod and main.go.
    let tidied = format!("{gomod}{}", src.main_go.as_deref().unwrap_or_default());
    let main_unchanged = match &src.main_go {
        Some(main) => fs::read_to_string(&main_path).is_ok_and(|old| &old == main),
        None => true,
    };
    let unchanged = main_unchanged
        && fs::read_to_string(&gomod_path).is_ok_and(|old| old == gomod)
        && fs::read_to_string(&marker).is_ok_and(|m| m == tidied);
    if unchanged {
        return Ok(());
    }
    fs::write(&gomod_path, &gomod).with_context(|| format!("writing {}", gomod_path.display()))?;
    if let Some(main) = &src.main_go {
        fs::write(&main_path, main).with_context(|| format!("writing {}", main_path.display()))?;
    }
    let _ = fs::remove_file(&marker);
    // Best effort: without it, tidy verifies every sum against the checksum
    // database and says in the build log what it could not verify.
    if let Err(e) = seed_go_sum(go, src, tree) {
        writeln!(log, "starting go.sum from {}'s own: {e:#}", src.module)?;
    }
    run_logged(
        go,
        toolchain,
        tree,
        &["mod".as_ref(), "tidy".as_ref()],
        "0",
        log,
        step,
    )?;
    fs::write(&marker, &tidied).with_context(|| format!("writing {}", marker.display()))?;
    Ok(())
}

/// The packages the wrapper module of `tree` lists as `tool`s: every
/// upstream command built in it, so its go.mod is the same whichever is
/// built first; but those that import a module the proxy refuses
/// (tools/refused.rs), which are never built (`build`) and would fail the
/// tidy of the others.
fn tool_packages(k8s: K8sRelease, tree: &str) -> Vec<String> {
    Component::ALL
        .into_iter()
        .filter(|&c| refused_module(k8s, c).is_none())
        .map(|c| c.go_source(k8s))
        .filter(|other| other.tree == tree && other.main_go.is_none())
        .map(|other| other.package)
        .collect()
}

/// Start the wrapper's go.sum from the upstream module's own: the hashes
/// it was released with. The checksum database does not know every
/// version a module pins (sigs.k8s.io/kueue v0.19.2 requires
/// sigs.k8s.io/scheduler-library v0.1.0-alpha1, which sum.golang.org
/// answers with 404), and `go mod tidy` refuses what it cannot verify.
fn seed_go_sum(go: &Path, src: &GoSource, tree: &Path) -> Result<()> {
    let target = tree.join("go.sum");
    if target.exists() {
        return Ok(());
    }
    let info = crate::tools::modules::go_mod_download(go, src.module, &src.module_version)?;
    let Some(dir) = info.get("Dir").and_then(|d| d.as_str()) else {
        bail!("go mod download -json gave no Dir for {}", src.module);
    };
    let upstream = Path::new(dir).join("go.sum");
    match fs::read_to_string(&upstream) {
        Ok(text) => {
            fs::write(&target, text).with_context(|| format!("writing {}", target.display()))
        }
        // A module without dependencies has no go.sum.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e).with_context(|| format!("reading {}", upstream.display())),
    }
}

/// The text of `module@version`'s go.mod, fetched through the module proxy.
fn upstream_gomod(go: &Path, module: &str, version: &str) -> Result<String> {
    let info = crate::tools::modules::go_mod_download(go, module, version)?;
    let path = info
        .get("GoMod")
        .and_then(|p| p.as_str())
        .context("go mod download -json gave no GoMod path")?;
    fs::read_to_string(path).with_context(|| format!("reading {path}"))
}

/// The module versions the Go module proxy refused in a go command's
/// output ("reading https://…/k8s.io/ktesting/@v/v0.38.0-beta.0.zip: 403
/// Forbidden"), as "module@version", each once, in order.
fn refused_modules(log: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for line in log.lines() {
        let Some((url, rest)) = line.rsplit_once(": ") else {
            continue;
        };
        if !(rest.starts_with("403") || rest.starts_with("404") || rest.starts_with("410")) {
            continue;
        }
        let Some(url) = url.split("reading ").nth(1) else {
            continue;
        };
        let Some((path, file)) = url.split_once("/@v/") else {
            continue;
        };
        let Some(version) = file
            .strip_suffix(".zip")
            .or_else(|| file.strip_suffix(".mod"))
        else {
            continue;
        };
        let module = path.split_once("://").map_or(path, |(_, p)| p);
        let module = module.split_once('/').map_or(module, |(_, m)| m);
        let m = format!("{module}@{version}");
        if !out.contains(&m) {
            out.push(m);
        }
    }
    out
}

/// The modules a go.mod replaces with a `./staging/src/...` directory.
pub fn staging_modules(gomod: &str) -> Vec<String> {
    gomod
        .lines()
        .filter_map(|line| {
            let line = line.trim().trim_start_matches("replace").trim();
            let (left, right) = line.split_once("=>")?;
            right
                .trim()
                .starts_with("./staging/src/")
                .then(|| left.split_whitespace().next().map(str::to_string))
                .flatten()
        })
        .collect()
}

/// Run a go command with its output appended to the build log, showing
/// the latest line in the progress display. A non-zero exit is an error.
fn run_logged(
    go: &Path,
    toolchain: &Toolchain,
    dir: &Path,
    args: &[&OsStr],
    cgo: &str,
    log: &mut File,
    step: &Step,
) -> Result<()> {
    let shown: Vec<String> = args
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    writeln!(log, "$ (cd {}; go {})", dir.display(), shown.join(" "))?;
    let reader = duct::cmd(go, args)
        .dir(dir)
        .env("GOTOOLCHAIN", toolchain.env)
        .env("CGO_ENABLED", cgo)
        .env("GOWORK", "off")
        .stdin_null()
        .stderr_to_stdout()
        .reader()
        .with_context(|| format!("starting go {}", shown.join(" ")))?;
    for line in BufReader::new(reader).lines() {
        // The last read reports a non-zero exit status as an error.
        let line = line.with_context(|| format!("go {}", shown.join(" ")))?;
        writeln!(log, "{line}")?;
        step.update(&line);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_module_versions_the_proxy_refused_are_named_once() {
        let log = "go: k8s.io/kubernetes/cmd/kube-apiserver imports\n\
            \tk8s.io/apiextensions-api/pkg/client: k8s.io/apiextensions-api@v0.38.0-beta.0: reading https://proxy.golang.org/k8s.io/apiextensions-api/@v/v0.38.0-beta.0.zip: 403 Forbidden\n\
            \tserver response: This module version is not available.\n\
            \tsigs.k8s.io/structured-merge-diff/v7/schema: sigs.k8s.io/structured-merge-diff/v7@v7.0.1: reading https://proxy.golang.org/sigs.k8s.io/structured-merge-diff/v7/@v/v7.0.1.zip: 403 Forbidden\n\
            \tk8s.io/apiextensions-api/pkg/x: k8s.io/apiextensions-api@v0.38.0-beta.0: reading https://proxy.golang.org/k8s.io/apiextensions-api/@v/v0.38.0-beta.0.zip: 403 Forbidden\n\
            go: downloading k8s.io/api v0.38.0-beta.0\n";
        assert_eq!(
            refused_modules(log),
            [
                "k8s.io/apiextensions-api@v0.38.0-beta.0",
                "sigs.k8s.io/structured-merge-diff/v7@v7.0.1"
            ]
        );
        assert!(refused_modules("go: downloading x v1\n").is_empty());
    }

    #[test]
    fn the_control_plane_tree_lists_only_the_control_planes_commands() {
        let cmd = |p: &str| format!("k8s.io/kubernetes/{p}");
        let control_plane = [
            cmd("cmd/kube-apiserver"),
            cmd("cmd/kube-controller-manager"),
            cmd("cmd/kube-scheduler"),
            cmd("cmd/kubectl"),
        ];
        for minor in ["1.36", "1.37", "1.38"] {
            let k8s = K8sRelease::parse(minor).unwrap();
            let tree = Component::KubeApiserver.go_source(k8s).tree;
            assert_eq!(tool_packages(k8s, &tree), control_plane, "{minor}");
        }
        // The node's tree lists its four commands, but on 1.38 the two that
        // import sigs.k8s.io/iptables-wrappers, which the proxy refuses.
        let node = |minor| {
            let k8s = K8sRelease::parse(minor).unwrap();
            tool_packages(k8s, &Component::Kubelet.go_source(k8s).tree)
        };
        assert_eq!(
            node("1.37"),
            [
                cmd("cmd/kubelet"),
                cmd("test/images/agnhost"),
                cmd("cmd/kubeadm"),
                cmd("cmd/kube-proxy")
            ]
        );
        assert_eq!(
            node("1.38"),
            [cmd("test/images/agnhost"), cmd("cmd/kubeadm")]
        );
    }

    #[test]
    fn a_refused_binary_fails_before_anything_is_fetched() {
        let tmp = tempfile::tempdir().unwrap();
        let k8s = K8sRelease::parse("1.38").unwrap();
        let e = build(k8s, tmp.path(), Component::Kubelet, &[]).unwrap_err();
        assert_eq!(crate::error::exit_code(&e), crate::error::EXIT_ENV);
        assert!(
            e.to_string()
                .contains("sigs.k8s.io/iptables-wrappers v1.0.0"),
            "{e}"
        );
        // No tree, lock or log: nothing was started.
        assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 0);
    }

    #[test]
    fn staging_modules_come_from_the_replace_lines() {
        let gomod = "module k8s.io/kubernetes\n\nreplace (\n\tk8s.io/api => ./staging/src/k8s.io/api\n\tk8s.io/streaming => ./staging/src/k8s.io/streaming\n\tgithub.com/x/y => github.com/x/y v1.0.0\n)\nreplace k8s.io/kms => ./staging/src/k8s.io/kms\n";
        assert_eq!(
            staging_modules(gomod),
            vec!["k8s.io/api", "k8s.io/streaming", "k8s.io/kms"]
        );
    }
}
