//! The caller's files a run set's rounds read — `measure`'s manifest
//! folders (`--apply DIR`, `--variant NAME=@DIR`) and configs
//! (`--kueue-perf CONFIG`) — shipped to the pods in a ConfigMap of the
//! run's namespace (`job::inputs`) and mounted read-only at
//! `job::INPUTS_DIR`: the i-th path given is at `/inputs/<i>` (a folder,
//! with its tree) or `/inputs/<i>/<file name>` (a file). A ConfigMap,
//! rather than files in the image, so that an image given with `--image`
//! (built once, pushed) serves any workload; its limit (about 1 MiB) is
//! said before anything is made.

use std::path::Path;

use anyhow::{Context, Result};

use crate::bench::on_cluster::image::walk;
use crate::bench::on_cluster::job::INPUTS_DIR;
use crate::error::bad_input;

#[derive(Debug, Default)]
pub struct Inputs {
    /// (path under INPUTS_DIR, bytes).
    pub files: Vec<(String, Vec<u8>)>,
    shipped: usize,
}

impl Inputs {
    /// Ship `path` (`flag` names where it was given, for errors): a
    /// folder with every file under it, or one file. Its path in a pod.
    pub fn ship(&mut self, flag: &str, path: &Path) -> Result<String> {
        let i = self.shipped;
        let meta = std::fs::metadata(path)
            .map_err(|e| bad_input(format!("{flag} {}: {e}", path.display())))?;
        let at = if meta.is_dir() {
            let files = walk(path)?;
            if files.is_empty() {
                return Err(bad_input(format!(
                    "{flag} {}: the folder has no file",
                    path.display()
                )));
            }
            for rel in files {
                let bytes = std::fs::read(path.join(&rel))
                    .with_context(|| format!("reading {}", path.join(&rel).display()))?;
                self.files.push((format!("{i}/{}", rel.display()), bytes));
            }
            format!("{INPUTS_DIR}/{i}")
        } else {
            let name = path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| "file".into());
            let bytes =
                std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
            self.files.push((format!("{i}/{name}"), bytes));
            format!("{INPUTS_DIR}/{i}/{name}")
        };
        self.shipped += 1;
        Ok(at)
    }
}

#[cfg(test)]
mod tests {
    use crate::bench::on_cluster::inputs::Inputs;

    #[test]
    fn folders_keep_their_tree_and_files_their_name_each_under_its_own_index() {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().join("manifests");
        std::fs::create_dir_all(dir.join("crds")).unwrap();
        std::fs::write(dir.join("crds/a.yaml"), "a").unwrap();
        std::fs::write(dir.join("job.yaml"), "j").unwrap();
        let config = d.path().join("small.yaml");
        std::fs::write(&config, "c").unwrap();
        let mut i = Inputs::default();
        assert_eq!(i.ship("--apply", &dir).unwrap(), "/inputs/0");
        assert_eq!(
            i.ship("--kueue-perf", &config).unwrap(),
            "/inputs/1/small.yaml"
        );
        let paths: Vec<&str> = i.files.iter().map(|(p, _)| p.as_str()).collect();
        assert_eq!(paths, ["0/crds/a.yaml", "0/job.yaml", "1/small.yaml"]);
        assert_eq!(i.files[2].1, b"c");
    }

    #[test]
    fn a_missing_or_empty_folder_is_bad_input_naming_the_flag() {
        let d = tempfile::tempdir().unwrap();
        let mut i = Inputs::default();
        let e = i.ship("--variant b=@", &d.path().join("nope")).unwrap_err();
        assert_eq!(crate::error::exit_code(&e), 2);
        assert!(format!("{e:#}").contains("--variant b=@"), "{e:#}");
        let e = i.ship("--apply", d.path()).unwrap_err();
        assert!(format!("{e:#}").contains("no file"), "{e:#}");
    }
}
