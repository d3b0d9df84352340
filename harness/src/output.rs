//! Writing what the harness reports: atomic file writes (temp file in the
//! same directory, then rename), so a reader never sees half a report,
//! baseline or state file; XML escaping; and the one JUnit XML writer every
//! report uses (Thor bench, baseline compare, validate, ECL, gang); and
//! where a command may write (`check_out`: outputs never touch inputs, the
//! book's docs/src/troubleshooting.md).

use std::fmt::Write as _;
use std::path::Path;

use anyhow::{Context, Result};

/// Escape text for XML content and attribute values. Characters XML 1.0
/// cannot carry at all (C0 controls other than tab, newline and carriage
/// return) are written as visible `\xNN` text instead.
pub fn xml_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if (c as u32) < 0x20 || c == '\u{7f}' || c == '\u{fffe}' || c == '\u{ffff}' => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out
}

/// Text for a terminal: control characters (ESC among them) shown as
/// `\xNN`, so a value from a file cannot move the cursor or recolour.
pub fn terminal_safe(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if c.is_control() && c != '\n' && c != '\t' {
            let _ = write!(out, "\\x{:02x}", c as u32);
        } else {
            out.push(c);
        }
    }
    out
}

/// A Markdown table's head: `first` over the labels, then one numeric
/// column per name.
pub fn markdown_table_head<S: std::fmt::Display>(s: &mut String, first: &str, columns: &[S]) {
    s.push_str(&format!("| {first} |"));
    for c in columns {
        s.push_str(&format!(" {c} |"));
    }
    s.push_str("\n|---|");
    for _ in columns {
        s.push_str("---:|");
    }
    s.push('\n');
}

/// A benchmark's two reports in `out`: `<stem>.json` (the result) and
/// `<stem>.md` (its table).
pub fn write_reports(
    out: &Path,
    stem: &str,
    result: &impl serde::Serialize,
    markdown: String,
) -> Result<Vec<std::path::PathBuf>> {
    let json = out.join(format!("{stem}.json"));
    let md = out.join(format!("{stem}.md"));
    write_atomic(&json, serde_json::to_string_pretty(result)? + "\n")?;
    write_atomic(&md, markdown)?;
    Ok(vec![json, md])
}

/// A path as the file system resolves it, for comparing an output with
/// the inputs: canonical where it exists; else its nearest existing
/// ancestor canonical and the rest joined on. Err(ancestor) when that
/// ancestor is not a directory (nothing can be made under it).
fn resolved(p: &Path) -> std::result::Result<std::path::PathBuf, std::path::PathBuf> {
    let abs = std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
    let parts: Vec<std::path::Component> = abs.components().collect();
    // The longest prefix that exists, canonical; the rest after it.
    for n in (1..=parts.len()).rev() {
        let head: std::path::PathBuf = parts[..n].iter().collect();
        let Ok(c) = std::fs::canonicalize(&head) else {
            continue;
        };
        if n < parts.len() && !c.is_dir() {
            return Err(head);
        }
        // What does not exist yet holds no symlink: its `..` is lexical
        // (`new/../s1` is `s1`).
        let mut out = c;
        for r in &parts[n..] {
            match r {
                std::path::Component::ParentDir => {
                    out.pop();
                }
                std::path::Component::CurDir => {}
                r => out.push(r),
            }
        }
        return Ok(out);
    }
    Ok(abs)
}

/// What a command writes: one directory (`Dir`) or one file (`File`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Out {
    Dir,
    File,
}

/// Outputs never touch inputs (the book: docs/src/troubleshooting.md):
/// refuse `out` (given as `flag`) when it is, contains or lies inside any
/// of `inputs` (each `(flag, path)`; compared canonicalized, an input that
/// does not exist is the reader's to refuse), or when it cannot be made
/// as `kind` — an existing file or device where a directory goes, a
/// directory or device where a file goes, or a path under a file. Bad
/// input (exit 2) naming both paths; it reads nothing, so every command
/// that writes calls it before its first heavy step.
pub fn check_out(flag: &str, out: &Path, kind: Out, inputs: &[(&str, &Path)]) -> Result<()> {
    let shown = out.display();
    let o = resolved(out).map_err(|file| {
        crate::error::bad_input(format!(
            "{flag} {shown}: not writable: it lies under {}, which is not a directory",
            file.display()
        ))
    })?;
    if let Ok(m) = std::fs::metadata(&o) {
        let bad = match kind {
            Out::Dir if !m.is_dir() => Some("a directory"),
            Out::File if !m.is_file() => Some("a regular file"),
            _ => None,
        };
        if let Some(want) = bad {
            let is = if m.is_dir() {
                "a directory"
            } else if m.is_file() {
                "a file"
            } else {
                "a device, FIFO or socket"
            };
            return Err(crate::error::bad_input(format!(
                "{flag} {shown}: not writable: it is {is}; it must be {want} (or not exist yet)"
            )));
        }
    }
    for (in_flag, input) in inputs {
        let Ok(i) = resolved(input) else { continue };
        if !i.exists() {
            continue;
        }
        let relation = if o == i {
            "is"
        } else if o.starts_with(&i) {
            "lies inside"
        } else if i.starts_with(&o) {
            "contains"
        } else {
            continue;
        };
        let in_flag = match in_flag.is_empty() {
            true => String::new(),
            false => format!("{in_flag} "),
        };
        return Err(crate::error::bad_input(format!(
            "{flag} {shown}: {relation} the input {in_flag}{}; what a command writes never touches what it reads: give another {flag}",
            input.display()
        )));
    }
    Ok(())
}

/// Run `work`, which writes into the directory `out`; when it fails, an
/// `out` that did not exist before and is still empty is removed (a
/// refused or failed command leaves nothing behind; what it wrote stays).
pub async fn removing_empty_out<T>(
    out: &Path,
    work: impl std::future::Future<Output = Result<T>>,
) -> Result<T> {
    let existed = std::fs::symlink_metadata(out).is_ok();
    let r = work.await;
    if r.is_err() && !existed {
        // Only an empty directory is removed; anything else fails here.
        let _ = std::fs::remove_dir(out);
    }
    r
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
    // A temporary file is created 0600; what we write is a report, result
    // or state file anyone who can enter its directory may read, never an
    // executable (secrets live in 0700 state directories).
    set_readable(tmp.path()).with_context(|| format!("writing {}", path.display()))?;
    tmp.persist(path)
        .with_context(|| format!("writing {}", path.display()))?;
    Ok(())
}

#[cfg(unix)]
fn set_readable(p: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o644))
}

#[cfg(not(unix))]
fn set_readable(_: &Path) -> std::io::Result<()> {
    Ok(())
}

/// One JUnit test case.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct JunitCase {
    pub classname: String,
    pub name: String,
    /// Seconds; omitted when None.
    pub time: Option<f64>,
    /// (message, body) when the case failed.
    pub failure: Option<(String, String)>,
    /// `<properties>`: name → value.
    pub properties: Vec<(String, String)>,
    pub system_out: Option<String>,
}

/// One JUnit test suite.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct JunitSuite {
    pub name: String,
    /// Seconds; the sum of the cases' times when None.
    pub time: Option<f64>,
    pub cases: Vec<JunitCase>,
}

impl JunitCase {
    pub fn new(classname: impl Into<String>, name: impl Into<String>) -> JunitCase {
        JunitCase {
            classname: classname.into(),
            name: name.into(),
            ..Default::default()
        }
    }

    pub fn time(mut self, secs: f64) -> JunitCase {
        self.time = Some(secs);
        self
    }

    /// Mark it failed; the message is the body's first line.
    pub fn failed(mut self, body: impl Into<String>) -> JunitCase {
        let body = body.into();
        let message = body.lines().next().unwrap_or_default().to_string();
        self.failure = Some((message, body));
        self
    }
}

/// The JUnit XML of `suites` (a `<testsuites>` root).
pub fn junit_xml(suites: &[JunitSuite]) -> String {
    let mut s = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites>\n");
    for suite in suites {
        let failures = suite.cases.iter().filter(|c| c.failure.is_some()).count();
        let time = suite
            .time
            .unwrap_or_else(|| suite.cases.iter().filter_map(|c| c.time).sum());
        let _ = writeln!(
            s,
            "<testsuite name=\"{}\" tests=\"{}\" failures=\"{failures}\" time=\"{time:.3}\">",
            xml_escape(&suite.name),
            suite.cases.len()
        );
        for c in &suite.cases {
            let _ = write!(
                s,
                "  <testcase classname=\"{}\" name=\"{}\"",
                xml_escape(&c.classname),
                xml_escape(&c.name)
            );
            if let Some(t) = c.time {
                let _ = write!(s, " time=\"{t:.3}\"");
            }
            if c.failure.is_none() && c.properties.is_empty() && c.system_out.is_none() {
                s.push_str("/>\n");
                continue;
            }
            s.push_str(">\n");
            if !c.properties.is_empty() {
                s.push_str("    <properties>\n");
                for (k, v) in &c.properties {
                    let _ = writeln!(
                        s,
                        "      <property name=\"{}\" value=\"{}\"/>",
                        xml_escape(k),
                        xml_escape(v)
                    );
                }
                s.push_str("    </properties>\n");
            }
            if let Some((message, body)) = &c.failure {
                let _ = writeln!(
                    s,
                    "    <failure message=\"{}\">{}</failure>",
                    xml_escape(message),
                    xml_escape(body)
                );
            }
            if let Some(out) = &c.system_out {
                let _ = writeln!(s, "    <system-out>{}</system-out>", xml_escape(out));
            }
            s.push_str("  </testcase>\n");
        }
        s.push_str("</testsuite>\n");
    }
    s.push_str("</testsuites>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    #[test]
    fn written_files_are_readable_and_not_executable() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("report.html");
        write_atomic(&p, "<html/>").unwrap();
        let mode = std::fs::metadata(&p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o644, "{mode:o}");
    }

    #[test]
    fn escapes_markup_and_controls() {
        assert_eq!(
            xml_escape(r#"a<b & "c" 'd'>"#),
            "a&lt;b &amp; &quot;c&quot; &apos;d&apos;&gt;"
        );
        assert_eq!(xml_escape("x\u{1b}[31my\u{0}\tz"), "x\\x1b[31my\\x00\tz");
        assert_eq!(terminal_safe("k\u{1b}[2Jz\n"), "k\\x1b[2Jz\n");
    }

    #[test]
    fn junit_is_well_formed_and_counts_failures() {
        let suite = JunitSuite {
            name: "s <1>".into(),
            time: None,
            cases: vec![
                JunitCase::new("c", "ok").time(1.5),
                JunitCase::new("c", "bad\u{7}")
                    .time(0.5)
                    .failed("first\nsecond"),
                JunitCase {
                    properties: vec![("k".into(), "v&".into())],
                    system_out: Some("seen".into()),
                    ..JunitCase::new("c", "props")
                },
            ],
        };
        let x = junit_xml(&[suite]);
        assert!(
            x.contains(
                "<testsuite name=\"s &lt;1&gt;\" tests=\"3\" failures=\"1\" time=\"2.000\">"
            ),
            "{x}"
        );
        assert!(
            x.contains("<failure message=\"first\">first\nsecond</failure>"),
            "{x}"
        );
        assert!(x.contains("name=\"bad\\x07\""), "{x}");
        assert!(x.contains("<property name=\"k\" value=\"v&amp;\"/>"), "{x}");
        assert!(x.contains("<system-out>seen</system-out>"), "{x}");
        assert!(!x.chars().any(|c| (c as u32) < 0x20 && c != '\n'), "{x}");
    }

    #[test]
    fn an_out_that_touches_an_input_or_cannot_be_made_is_refused() {
        use crate::error::{EXIT_USAGE, exit_code};
        let d = tempfile::tempdir().unwrap();
        let s1 = d.path().join("s1");
        std::fs::create_dir_all(s1.join("runs")).unwrap();
        std::fs::write(s1.join("result.json"), "{}").unwrap();
        let file = d.path().join("f");
        std::fs::write(&file, "x").unwrap();
        let refused = |out: &Path, kind: Out, inputs: &[(&str, &Path)], says: &str| {
            let e = check_out("--out", out, kind, inputs).unwrap_err();
            assert_eq!(exit_code(&e), EXIT_USAGE, "{e:#}");
            let m = format!("{e:#}");
            assert!(
                m.contains(says) && m.contains(&out.display().to_string()),
                "{m}"
            );
        };
        let inputs: &[(&str, &Path)] = &[("", &s1)];
        refused(&s1, Out::Dir, inputs, "is the input");
        refused(&s1.join("runs/new"), Out::Dir, inputs, "lies inside");
        refused(d.path(), Out::Dir, inputs, "contains");
        // Spelled another way: the same directory.
        refused(
            &d.path().join("s1/runs/.."),
            Out::Dir,
            inputs,
            "is the input",
        );
        refused(&file, Out::Dir, &[], "is a file");
        refused(&file.join("sub"), Out::Dir, &[], "lies under");
        refused(&s1, Out::File, &[], "is a directory");
        refused(Path::new("/dev/null"), Out::Dir, &[], "device");
        check_out("--out", &d.path().join("merged/new"), Out::Dir, inputs).unwrap();
        check_out("--out", &d.path().join("s2"), Out::Dir, inputs).unwrap();
        check_out("--out", &file, Out::File, &[("", &s1)]).unwrap();
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
