//! Reading a file the user gave us, bounded: regular files only (a FIFO, a
//! device or a directory is refused, not read forever — the file is opened
//! without blocking and checked on its descriptor, so a FIFO with no
//! writer cannot hang the open), at most `max_bytes()` (16 MiB unless
//! `HARNESS_MAX_INPUT_BYTES` says otherwise), valid UTF-8 for text (an
//! invalid byte is reported at its line). Every problem is bad input naming
//! the file (and the flag, through `read_flag`/`bytes_flag`).
//!
//! Logs that grow while they are read (audit logs) do not fit a size cap:
//! `open_stream` refuses what is not a regular file and returns the size at
//! open, the end a reader stops at.

use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use anyhow::Result;

use crate::error::bad_input;

/// The default size limit of one input file.
pub const DEFAULT_MAX_BYTES: u64 = 16 * 1024 * 1024;

/// The size limit: `HARNESS_MAX_INPUT_BYTES`, else 16 MiB. A value that is
/// not a positive byte count is refused (not silently ignored).
pub fn max_bytes() -> Result<u64> {
    match std::env::var_os("HARNESS_MAX_INPUT_BYTES") {
        None => Ok(DEFAULT_MAX_BYTES),
        Some(v) if v.is_empty() => Ok(DEFAULT_MAX_BYTES),
        Some(v) => v
            .to_str()
            .and_then(|s| s.trim().parse::<u64>().ok())
            .filter(|n| *n > 0)
            .ok_or_else(|| {
                bad_input(format!(
                    "HARNESS_MAX_INPUT_BYTES={}: not a positive number of bytes (unset it for 16 MiB)",
                    v.to_string_lossy()
                ))
            }),
    }
}

/// Why a file could not be read as input: the message (without the file's
/// name) and, for bytes that are not UTF-8, where they are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unreadable {
    /// (line, column), 1-based, when the problem has a place in the file.
    pub at: Option<(usize, usize)>,
    pub message: String,
}

impl Unreadable {
    fn into_error(self, name: &str) -> anyhow::Error {
        bad_input(match self.at {
            Some((line, column)) => format!("{name}:{line}:{column}: {}", self.message),
            None => format!("{name}: {}", self.message),
        })
    }
}

/// Read `path` as text, within the limits above.
pub fn read(path: &Path) -> Result<String> {
    read_text(path).map_err(|u| u.into_error(&path.display().to_string()))
}

/// `read`, the error naming the flag the file came from
/// ("--kubeconfig /dev/zero: not a regular file …").
pub fn read_flag(flag: &str, path: &Path) -> Result<String> {
    read_text(path).map_err(|u| u.into_error(&format!("{flag} {}", path.display())))
}

/// The bytes of `path` (certificates, keys, dumps that need not be text),
/// regular files only, within the limit; the error names `flag` (or the
/// file alone when `flag` is empty).
pub fn bytes_flag(flag: &str, path: &Path) -> Result<Vec<u8>> {
    let name = if flag.is_empty() {
        path.display().to_string()
    } else {
        format!("{flag} {}", path.display())
    };
    read_bytes(path).map_err(|u| u.into_error(&name))
}

/// Open `path` for reading without blocking (a FIFO with no writer would
/// block a plain open forever) and refuse anything but a regular file,
/// judged on the open descriptor. Returns the file (blocking again) and
/// its size at open.
fn open_regular(path: &Path) -> Result<(std::fs::File, u64), Unreadable> {
    let fail = |message: String| Unreadable { at: None, message };
    let refuse = |meta: &std::fs::Metadata| {
        let what = if meta.is_dir() {
            "a directory"
        } else {
            "not a regular file (a FIFO, socket or device)"
        };
        fail(format!("{what}; give a regular file"))
    };
    // A device is not even opened when the path already says what it is.
    let meta = std::fs::metadata(path).map_err(|e| fail(e.to_string()))?;
    if !meta.file_type().is_file() {
        return Err(refuse(&meta));
    }
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .map_err(|e| fail(e.to_string()))?;
    let meta = f.metadata().map_err(|e| fail(e.to_string()))?;
    // Judged again on the descriptor: the path may have been swapped.
    if !meta.file_type().is_file() {
        return Err(refuse(&meta));
    }
    // Back to blocking reads (a regular file never blocks, but keep the
    // descriptor's flags plain for whoever reads it).
    use std::os::fd::AsRawFd;
    let fd = f.as_raw_fd();
    // SAFETY: fcntl on a descriptor this function owns.
    unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFL);
        if flags >= 0 {
            libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK);
        }
    }
    Ok((f, meta.len()))
}

/// Check that `path` could be read as input (a regular file within the
/// limit) without reading it: for files another program reads (a
/// certificate a kubeconfig names), the error naming `what`.
pub fn check(what: &str, path: &Path) -> Result<()> {
    let name = format!("{what} {}", path.display());
    let limit = max_bytes()?;
    let (_, len) = open_regular(path).map_err(|u| u.into_error(&name))?;
    if len > limit {
        return Err(bad_input(format!(
            "{name}: {len} bytes, over the {limit}-byte limit (HARNESS_MAX_INPUT_BYTES)"
        )));
    }
    Ok(())
}

/// A log that grows while it is read (an audit log): the open file and its
/// size at open — read no further than that. Not a regular file: refused,
/// naming `what`.
pub fn open_stream(what: &str, path: &Path) -> Result<(std::fs::File, u64)> {
    open_regular(path).map_err(|u| u.into_error(&format!("{what} {}", path.display())))
}

/// The bytes of `path` within the limits above, the problem as data.
pub fn read_bytes(path: &Path) -> Result<Vec<u8>, Unreadable> {
    let fail = |message: String| Unreadable { at: None, message };
    let limit = max_bytes().map_err(|e| fail(e.to_string()))?;
    let (f, len) = open_regular(path)?;
    if len > limit {
        return Err(fail(format!(
            "{len} bytes, over the {limit}-byte limit (HARNESS_MAX_INPUT_BYTES)"
        )));
    }
    let mut bytes = Vec::with_capacity(len as usize);
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
    Ok(bytes)
}

/// `read`, with the problem as data (`harness validate` reports it at its
/// line and column).
pub fn read_text(path: &Path) -> Result<String, Unreadable> {
    let bytes = read_bytes(path)?;
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

    /// Issue 30: a device or a FIFO given for a flag is refused at once,
    /// naming the flag, whichever way it is read.
    #[test]
    fn devices_and_fifos_are_refused_naming_the_flag_without_blocking() {
        let d = tempfile::tempdir().unwrap();
        let fifo = d.path().join("kubeconfig");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: mkfifo with a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let started = std::time::Instant::now();
        for p in [Path::new("/dev/zero"), fifo.as_path()] {
            let e = read_flag("--kubeconfig", p).unwrap_err();
            assert_eq!(crate::error::exit_code(&e), 2);
            let msg = e.to_string();
            assert!(
                msg.starts_with(&format!("--kubeconfig {}: not a regular file", p.display())),
                "{msg}"
            );
            let e = bytes_flag("--etcd-cert", p).unwrap_err().to_string();
            assert!(e.starts_with("--etcd-cert "), "{e}");
            assert!(e.contains("not a regular file"), "{e}");
            let e = open_stream("--audit-log", p).unwrap_err().to_string();
            assert!(e.starts_with("--audit-log "), "{e}");
            let e = check("certificate-authority", p).unwrap_err().to_string();
            assert!(e.contains("not a regular file"), "{e}");
        }
        assert!(started.elapsed() < std::time::Duration::from_secs(2));
        // A growing log: the size at open is where reading stops.
        let log = d.path().join("audit.log");
        std::fs::write(&log, "one\n").unwrap();
        let (_f, len) = open_stream("--audit-log", &log).unwrap();
        assert_eq!(len, 4);
        let pem = d.path().join("ca.pem");
        std::fs::write(&pem, b"\x00\xff").unwrap();
        assert_eq!(bytes_flag("--etcd-ca", &pem).unwrap(), b"\x00\xff");
    }
}

/// Where in `file` JSON error `e` lies, as "file:line:column" — or the
/// file alone where serde gives no place (a check of the whole value, its
/// line 0).
pub fn json_at(file: &Path, e: &serde_json::Error) -> String {
    match e.line() {
        0 => file.display().to_string(),
        line => format!("{}:{line}:{}", file.display(), e.column()),
    }
}

#[cfg(test)]
mod json_at_tests {
    use crate::input::json_at;
    use std::path::Path;

    #[test]
    fn a_place_is_given_only_where_serde_has_one() {
        let f = Path::new("r.json");
        let e = serde_json::from_str::<u8>("\n 300").unwrap_err();
        assert_eq!(json_at(f, &e), "r.json:2:4");
        let e = <serde_json::Error as serde::de::Error>::custom("whole value");
        assert_eq!(json_at(f, &e), "r.json");
    }
}
