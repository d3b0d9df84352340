//! Quoting component and build logs in error messages.

use std::path::Path;

/// How much of a log's end `tail` reads: a component's log can be
/// gigabytes, and an error message quotes a few lines.
const TAIL_BYTES: u64 = 256 * 1024;

/// The last `TAIL_BYTES` of a log (a regular file: a FIFO or a device in
/// its place is refused, not read).
fn read_tail(path: &Path) -> anyhow::Result<Vec<u8>> {
    use std::io::{Read, Seek, SeekFrom};
    let (mut f, len) = crate::input::open_stream("log", path)?;
    let from = len.saturating_sub(TAIL_BYTES);
    f.seek(SeekFrom::Start(from))?;
    let mut b = Vec::new();
    f.take(len - from).read_to_end(&mut b)?;
    if from > 0 {
        // Drop the partial first line.
        let cut = b.iter().position(|c| *c == b'\n').map_or(0, |i| i + 1);
        b.drain(..cut);
    }
    Ok(b)
}

/// The last `n` lines of a log file, indented, for error messages.
pub fn tail(path: &Path, n: usize) -> String {
    let text = match read_tail(path) {
        Ok(b) => String::from_utf8_lossy(&b).into_owned(),
        Err(e) => return format!("    (cannot read {}: {e:#})", path.display()),
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

    /// Issue 30: only the end of a big log is read, and a device in place
    /// of a log is refused at once.
    #[test]
    fn reads_only_the_end_and_refuses_devices() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("big.log");
        let mut text = String::new();
        for i in 0..200_000 {
            text.push_str(&format!("line {i}\n"));
        }
        std::fs::write(&p, &text).unwrap();
        assert_eq!(tail(&p, 2), "    line 199998\n    line 199999");
        assert!(read_tail(&p).unwrap().len() as u64 <= TAIL_BYTES);
        let started = std::time::Instant::now();
        let t = tail(Path::new("/dev/zero"), 2);
        assert!(t.contains("not a regular file"), "{t}");
        assert!(started.elapsed() < std::time::Duration::from_secs(1));
    }
}
