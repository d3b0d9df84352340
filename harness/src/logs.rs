//! Quoting component and build logs in error messages.

use std::path::Path;

/// The last `n` lines of a log file, indented, for error messages.
pub fn tail(path: &Path, n: usize) -> String {
    let text = match std::fs::read(path) {
        Ok(b) => String::from_utf8_lossy(&b).into_owned(),
        Err(e) => return format!("    (cannot read {}: {e})", path.display()),
    };
    let lines: Vec<&str> = text.lines().collect();
    if lines.is_empty() {
        return "    (log is empty)".to_string();
    }
    let start = lines.len().saturating_sub(n);
    lines[start..]
        .iter()
        .map(|l| format!("    {l}"))
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tails_and_explains() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.log");
        std::fs::write(&p, "a\nb\nc\n").unwrap();
        assert_eq!(tail(&p, 2), "    b\n    c");
        std::fs::write(&p, "").unwrap();
        assert!(tail(&p, 2).contains("empty"));
        assert!(tail(&dir.path().join("none"), 2).contains("cannot read"));
    }
}
