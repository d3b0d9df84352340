//! Writing what the harness reports: XML escaping for the JUnit files and
//! atomic file writes (temp file in the same directory, then rename), so a
//! reader never sees half a report, baseline or state file.

use std::path::Path;

use anyhow::{Context, Result};

/// Escape text for XML content and attribute values.
pub fn xml_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&apos;")
}

/// Write `bytes` to `path` atomically, creating its directory.
pub fn write_atomic(path: &Path, bytes: impl AsRef<[u8]>) -> Result<()> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let tmp = tempfile::NamedTempFile::new_in(dir)
        .with_context(|| format!("temporary file in {}", dir.display()))?;
    std::fs::write(tmp.path(), bytes).with_context(|| format!("writing {}", path.display()))?;
    tmp.persist(path)
        .with_context(|| format!("writing {}", path.display()))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup() {
        assert_eq!(
            xml_escape(r#"a<b & "c" 'd'>"#),
            "a&lt;b &amp; &quot;c&quot; &apos;d&apos;&gt;"
        );
    }

    #[test]
    fn atomic_write_replaces_whole_files() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("sub/r.json");
        write_atomic(&p, "one").unwrap();
        write_atomic(&p, "two").unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "two");
        assert_eq!(
            std::fs::read_dir(d.path().join("sub")).unwrap().count(),
            1,
            "no temp file left"
        );
    }
}
