//! Reading a file the user gave us, bounded: regular files only (a FIFO, a
//! device or a directory is refused, not read forever), at most
//! `max_bytes()` (16 MiB unless `HARNESS_MAX_INPUT_BYTES` says otherwise),
//! valid UTF-8 (an invalid byte is reported at its line). Every problem is
//! bad input naming the file.

use std::io::Read;
use std::path::Path;

use anyhow::Result;

use crate::error::bad_input;

/// The default size limit of one input file.
pub const DEFAULT_MAX_BYTES: u64 = 16 * 1024 * 1024;

/// The size limit: `HARNESS_MAX_INPUT_BYTES`, else 16 MiB.
pub fn max_bytes() -> u64 {
    std::env::var("HARNESS_MAX_INPUT_BYTES")
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .filter(|n| *n > 0)
        .unwrap_or(DEFAULT_MAX_BYTES)
}

/// Why a file could not be read as input: the message (without the file's
/// name) and, for bytes that are not UTF-8, where they are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unreadable {
    /// (line, column), 1-based, when the problem has a place in the file.
    pub at: Option<(usize, usize)>,
    pub message: String,
}

/// Read `path` as text, within the limits above.
pub fn read(path: &Path) -> Result<String> {
    read_text(path).map_err(|u| {
        let name = path.display();
        bad_input(match u.at {
            Some((line, column)) => format!("{name}:{line}:{column}: {}", u.message),
            None => format!("{name}: {}", u.message),
        })
    })
}

/// `read`, with the problem as data (`harness validate` reports it at its
/// line and column).
pub fn read_text(path: &Path) -> Result<String, Unreadable> {
    let fail = |message: String| Unreadable { at: None, message };
    let meta = std::fs::metadata(path).map_err(|e| fail(e.to_string()))?;
    if !meta.file_type().is_file() {
        let what = if meta.is_dir() {
            "a directory"
        } else {
            "not a regular file (a FIFO, socket or device)"
        };
        return Err(fail(format!("{what}; give a regular file")));
    }
    let limit = max_bytes();
    if meta.len() > limit {
        return Err(fail(format!(
            "{} bytes, over the {limit}-byte limit (HARNESS_MAX_INPUT_BYTES)",
            meta.len()
        )));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    let f = std::fs::File::open(path).map_err(|e| fail(e.to_string()))?;
    // The file may grow between the check and the read: read one byte past
    // the limit at most.
    f.take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| fail(e.to_string()))?;
    if bytes.len() as u64 > limit {
        return Err(fail(format!(
            "over the {limit}-byte limit (HARNESS_MAX_INPUT_BYTES)"
        )));
    }
    String::from_utf8(bytes).map_err(|e| {
        let at = e.utf8_error().valid_up_to();
        let before = &e.as_bytes()[..at];
        let line = before.iter().filter(|b| **b == b'\n').count() + 1;
        let column = at
            - before
                .iter()
                .rposition(|b| *b == b'\n')
                .map_or(0, |i| i + 1)
            + 1;
        Unreadable {
            at: Some((line, column)),
            message: format!("not valid UTF-8 (byte {at})"),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounded_regular_utf8_files_only() {
        let d = tempfile::tempdir().unwrap();
        let ok = d.path().join("ok.yaml");
        std::fs::write(&ok, "a: 1\n").unwrap();
        assert_eq!(read(&ok).unwrap(), "a: 1\n");
        let e = read(d.path()).unwrap_err();
        assert_eq!(crate::error::exit_code(&e), 2);
        assert!(e.to_string().contains("a directory"), "{e}");
        let bad = d.path().join("bad.yaml");
        std::fs::write(&bad, b"a: 1\nb: \xff\n").unwrap();
        let e = read(&bad).unwrap_err().to_string();
        assert!(e.contains("bad.yaml:2:4: not valid UTF-8"), "{e}");
        assert_eq!(read_text(&bad).unwrap_err().at, Some((2, 4)));
        let fifo = d.path().join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: mkfifo with a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let e = read(&fifo).unwrap_err().to_string();
        assert!(e.contains("not a regular file"), "{e}");
        let e = read(&d.path().join("missing")).unwrap_err();
        assert_eq!(crate::error::exit_code(&e), 2);
    }
}
