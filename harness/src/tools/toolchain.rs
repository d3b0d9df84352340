//! Which Go toolchain runs a go command: the machine's, or — when the
//! module asks for a newer Go — the one pinned for that Go minor
//! (tools/versions.rs GO_TOOLCHAINS), which the go command fetches from
//! the Go module proxy when GOTOOLCHAIN names it.

use anyhow::{Result, bail};

use crate::tools::versions::{GO_TOOLCHAINS, MIN_GO};

/// The Go toolchain one build runs with: the machine's, or the pinned one
/// for the Go minor its module declares when that is newer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Toolchain {
    /// GOTOOLCHAIN: "local" or "go1.27.3".
    pub env: &'static str,
    /// What the progress line says: "go1.26.8" or "go1.27.3 (the module asks for Go 1.27)".
    pub name: String,
    /// The wrapper module's `go` line (major, minor).
    pub language: (u32, u32),
}

impl Toolchain {
    pub fn choose(
        wanted: Option<(u32, u32)>,
        local: (u32, u32),
        local_name: &str,
    ) -> Result<Toolchain> {
        let wanted = wanted.unwrap_or(MIN_GO).max(MIN_GO);
        if wanted <= local {
            return Ok(Toolchain {
                env: "local",
                name: local_name.to_string(),
                language: wanted,
            });
        }
        let Some(pinned) = pinned(wanted) else {
            bail!(
                "its module asks for Go {}.{}, newer than the machine's {local_name}, and the harness pins no Go {}.{} toolchain (tools/versions.rs GO_TOOLCHAINS)",
                wanted.0,
                wanted.1,
                wanted.0,
                wanted.1
            );
        };
        Ok(Toolchain {
            env: pinned,
            name: format!(
                "{pinned} (the module asks for Go {}.{})",
                wanted.0, wanted.1
            ),
            language: wanted,
        })
    }
}

/// The (major, minor) of a go.mod's `go` line, if it has one.
pub fn go_directive(gomod: &str) -> Option<(u32, u32)> {
    let line = gomod
        .lines()
        .map(str::trim)
        .find_map(|l| l.strip_prefix("go "))?;
    let mut parts = line.trim().split('.').map(|p| p.parse::<u32>().ok());
    Some((parts.next()??, parts.next()??))
}

/// The Go a module needs, from the go command's refusal ("k8s.io/kubernetes@v1.38.0-beta.0 requires go >= 1.27.0 (running go 1.26.8; GOTOOLCHAIN=local)").
pub fn required_by_refusal(error: &str) -> Option<(u32, u32)> {
    let (_, rest) = error.split_once("requires go >= ")?;
    let mut parts = rest
        .split(|c: char| !c.is_ascii_digit())
        .map(|p| p.parse::<u32>().ok());
    Some((parts.next()??, parts.next()??))
}

/// The pinned toolchain for a Go minor, if any.
pub fn pinned(version: (u32, u32)) -> Option<&'static str> {
    GO_TOOLCHAINS
        .iter()
        .find(|(v, _)| *v == version)
        .map(|(_, t)| *t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_module_asking_for_a_newer_go_gets_the_pinned_toolchain() {
        let gomod = "module k8s.io/kubernetes\n\ngo 1.27.0\n\ngodebug default=go1.27\n";
        assert_eq!(go_directive(gomod), Some((1, 27)));
        assert_eq!(go_directive("module x\n"), None);
        let t = Toolchain::choose(go_directive(gomod), (1, 26), "go1.26.8").unwrap();
        assert_eq!(t.env, "go1.27.3");
        assert_eq!(t.language, (1, 27));
        // A module within the machine's Go stays on it, its go line at least MIN_GO.
        let t = Toolchain::choose(Some((1, 24)), (1, 26), "go1.26.8").unwrap();
        assert_eq!((t.env, t.language), ("local", MIN_GO));
        let t = Toolchain::choose(Some((1, 27)), (1, 27), "go1.27.1").unwrap();
        assert_eq!(t.env, "local");
        let e = Toolchain::choose(Some((1, 28)), (1, 26), "go1.26.8").unwrap_err();
        assert!(e.to_string().contains("pins no Go 1.28 toolchain"), "{e}");
    }

    #[test]
    fn the_go_a_refusal_names() {
        let e = "k8s.io/kubernetes@v1.38.0-beta.0 requires go >= 1.27.0 (running go 1.26.8; GOTOOLCHAIN=local)";
        assert_eq!(required_by_refusal(e), Some((1, 27)));
        assert_eq!(pinned((1, 27)), Some("go1.27.3"));
        assert_eq!(required_by_refusal("unknown revision v9"), None);
        assert_eq!(pinned((1, 99)), None);
    }
}
