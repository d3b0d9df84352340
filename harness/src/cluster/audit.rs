//! Reading the API server's audit log (JSON lines, Metadata level).

use std::io::{BufRead, BufReader, Seek, SeekFrom};
use std::path::Path;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct AuditUser {
    #[serde(default)]
    pub username: String,
    #[serde(default)]
    pub groups: Vec<String>,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct ObjectRef {
    #[serde(default)]
    pub resource: String,
    #[serde(default)]
    pub subresource: String,
    #[serde(default)]
    pub namespace: String,
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub api_group: String,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, Eq)]
pub struct ResponseStatus {
    #[serde(default)]
    pub code: u16,
}

/// The fields of an audit.k8s.io/v1 Event the harness uses.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct AuditEvent {
    #[serde(default, rename = "auditID")]
    pub audit_id: String,
    #[serde(default)]
    pub stage: String,
    #[serde(default)]
    pub verb: String,
    #[serde(default, rename = "requestURI")]
    pub request_uri: String,
    #[serde(default)]
    pub user: AuditUser,
    #[serde(default)]
    pub user_agent: String,
    #[serde(default)]
    pub object_ref: Option<ObjectRef>,
    #[serde(default)]
    pub response_status: Option<ResponseStatus>,
    #[serde(default)]
    pub stage_timestamp: String,
    #[serde(default)]
    pub request_received_timestamp: String,
}

impl AuditEvent {
    /// An event of `user`'s `verb` at `stage`; the rest empty (fixtures).
    pub fn of(id: &str, stage: &str, verb: &str, user: &str) -> AuditEvent {
        AuditEvent {
            audit_id: id.into(),
            stage: stage.into(),
            verb: verb.into(),
            user: AuditUser {
                username: user.into(),
                groups: Vec::new(),
            },
            ..Default::default()
        }
    }

    /// "VERB resource[/subresource]", the key the reports use.
    /// Requests without a resource (discovery, /healthz, /metrics) are
    /// keyed by their path, API discovery paths as "discovery".
    pub fn key(&self) -> String {
        match &self.object_ref {
            Some(o) if !o.resource.is_empty() && !o.subresource.is_empty() => {
                format!("{} {}/{}", self.verb, o.resource, o.subresource)
            }
            Some(o) if !o.resource.is_empty() => format!("{} {}", self.verb, o.resource),
            _ => {
                let path = self.request_uri.split('?').next().unwrap_or_default();
                if path.starts_with("/api") || path.starts_with("/openapi") {
                    format!("{} discovery", self.verb)
                } else {
                    format!("{} {path}", self.verb)
                }
            }
        }
    }
}

/// The offset just past the last complete line of the audit log: where
/// events of what happens next start. Reads only the file's tail.
pub fn end_offset(path: &Path) -> Result<u64> {
    use std::io::Read;
    let (mut f, len) = crate::input::open_stream("the audit log", path)?;
    let tail = len.min(256 * 1024);
    f.seek(SeekFrom::Start(len - tail))?;
    let mut buf = Vec::with_capacity(tail as usize);
    f.read_to_end(&mut buf)?;
    match buf.iter().rposition(|&b| b == b'\n') {
        Some(i) => Ok(len - tail + i as u64 + 1),
        // No line end in the tail: a line longer than the tail, or none.
        None if len > tail => Ok(read_from(path, 0)?.1),
        None => Ok(0),
    }
}

/// Read complete lines from byte `offset`; returns the events and the offset
/// after the last complete line (a half-written last line is left for the
/// next read). A line that is not an audit event is an error naming its
/// position.
pub fn read_from(path: &Path, offset: u64) -> Result<(Vec<AuditEvent>, u64)> {
    let mut events = Vec::new();
    let end = visit_from(path, offset, &mut |e| events.push(e))?;
    Ok((events, end))
}

/// `read_from` one event at a time: `each` sees every event in order and
/// nothing is kept, so a window of 50 000 events costs one event's memory.
/// The log is read up to its size when opened (it grows while it is read),
/// one line at most the input limit (`HARNESS_MAX_INPUT_BYTES`); a FIFO or
/// a device is refused.
pub fn visit_from(path: &Path, offset: u64, each: &mut dyn FnMut(AuditEvent)) -> Result<u64> {
    visit_between(path, offset, u64::MAX, each)
}

/// `visit_from`, stopping at byte `until` (an offset `end_offset` gave:
/// the end of a measurement window) or the file's size at open,
/// whichever comes first.
pub fn visit_between(
    path: &Path,
    offset: u64,
    until: u64,
    each: &mut dyn FnMut(AuditEvent),
) -> Result<u64> {
    use std::io::Read;
    let (mut f, len) = crate::input::open_stream("the audit log", path)?;
    let line_cap = crate::input::max_bytes()?;
    f.seek(SeekFrom::Start(offset))?;
    let mut reader = BufReader::new(f.take(len.min(until).saturating_sub(offset)));
    let mut pos = offset;
    let mut line = String::new();
    loop {
        line.clear();
        let n = (&mut reader)
            .take(line_cap + 1)
            .read_line(&mut line)
            .with_context(|| format!("{}: byte {pos}", path.display()))?;
        if n as u64 > line_cap {
            return Err(crate::error::bad_input(format!(
                "{}: byte {pos}: a line over the {line_cap}-byte limit (HARNESS_MAX_INPUT_BYTES): not an audit event",
                path.display()
            )));
        }
        if n == 0 || !line.ends_with('\n') {
            break;
        }
        let ev: AuditEvent = serde_json::from_str(line.trim_end())
            .with_context(|| format!("{}: byte {pos}: not an audit event", path.display()))?;
        each(ev);
        pos += n as u64;
    }
    Ok(pos)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    const LINE: &str = r#"{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"a","stage":"ResponseComplete","requestURI":"/api/v1/namespaces/default/pods","verb":"create","user":{"username":"system:serviceaccount:kube-system:job-controller","groups":["system:serviceaccounts"]},"userAgent":"kube-controller-manager/v1.37.1","objectRef":{"resource":"pods","namespace":"default","name":"p","apiVersion":"v1"},"responseStatus":{"metadata":{},"code":201},"stageTimestamp":"2026-11-21T00:00:00.000000Z"}"#;

    #[test]
    fn reads_events_and_keeps_partial_lines_for_later() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.log");
        let mut f = std::fs::File::create(&path).unwrap();
        writeln!(f, "{LINE}").unwrap();
        write!(f, "{}", &LINE[..40]).unwrap();
        f.flush().unwrap();
        let (events, off) = read_from(&path, 0).unwrap();
        assert_eq!(events.len(), 1);
        assert_eq!(
            events[0].user.username,
            "system:serviceaccount:kube-system:job-controller"
        );
        assert_eq!(events[0].key(), "create pods");
        let mut d = events[0].clone();
        d.object_ref = Some(ObjectRef::default());
        d.request_uri = "/apis/batch/v1?timeout=32s".into();
        d.verb = "get".into();
        assert_eq!(d.key(), "get discovery");
        d.object_ref = None;
        d.request_uri = "/metrics".into();
        assert_eq!(d.key(), "get /metrics");
        assert_eq!(events[0].response_status.as_ref().unwrap().code, 201);
        assert_eq!(off as usize, LINE.len() + 1);
        assert_eq!(
            end_offset(&path).unwrap(),
            off,
            "a partial last line is not past the end"
        );
        writeln!(f, "{}", &LINE[40..]).unwrap();
        let (events, end) = read_from(&path, off).unwrap();
        assert_eq!(end_offset(&path).unwrap(), end);
        assert_eq!(events.len(), 1);
    }

    /// A window's events end where the log ended when it closed, however
    /// far the log has grown by the time it is read.
    #[test]
    fn a_window_reads_up_to_its_end_offset() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.log");
        std::fs::write(&path, format!("{LINE}\n{LINE}\n")).unwrap();
        let closed = end_offset(&path).unwrap();
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        writeln!(f, "{LINE}").unwrap();
        let mut seen = 0;
        let end = visit_between(&path, 0, closed, &mut |_| seen += 1).unwrap();
        assert_eq!((seen, end), (2, closed));
        let mut all = 0;
        visit_from(&path, 0, &mut |_| all += 1).unwrap();
        assert_eq!(all, 3);
    }

    /// Issue 30: the audit log is read to its size at open, and a FIFO or a
    /// device in its place is refused at once.
    #[test]
    fn read_to_the_size_at_open_and_non_regular_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.log");
        std::fs::write(&path, format!("{LINE}\n")).unwrap();
        let mut seen = 0;
        let mut grow = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        let end = visit_from(&path, 0, &mut |_| {
            // Written while the log is read: past the size at open.
            writeln!(grow, "{LINE}").unwrap();
            seen += 1;
        })
        .unwrap();
        assert_eq!(seen, 1);
        assert_eq!(end as usize, LINE.len() + 1);
        for bad in [Path::new("/dev/zero"), dir.path()] {
            let started = std::time::Instant::now();
            let e = read_from(bad, 0).unwrap_err();
            assert_eq!(crate::error::exit_code(&e), 2, "{e:#}");
            assert!(format!("{e:#}").contains("the audit log"), "{e:#}");
            assert!(end_offset(bad).is_err());
            assert!(started.elapsed() < std::time::Duration::from_secs(1));
        }
    }

    #[test]
    fn a_corrupt_line_names_its_offset() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.log");
        std::fs::write(&path, format!("{LINE}\nnot json\n")).unwrap();
        let err = read_from(&path, 0).unwrap_err();
        assert!(
            format!("{err:#}").contains(&format!("byte {}", LINE.len() + 1)),
            "{err:#}"
        );
    }
}
