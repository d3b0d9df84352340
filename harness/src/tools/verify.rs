//! Checking downloaded artifacts: reading the published checksum formats
//! and taking the executable out of a release tarball, in Rust.

use std::fs::File;
use std::io::{Read, Write};
use std::path::Path;

use anyhow::{Context, Result, bail};
use sha2::{Digest, Sha256};

/// Lower-case hex of a digest.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The SHA-256 of a file, as lower-case hex.
pub fn sha256_file(path: &Path) -> Result<String> {
    let mut f = File::open(path).with_context(|| format!("opening {}", path.display()))?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = f
            .read(&mut buf)
            .with_context(|| format!("reading {}", path.display()))?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    Ok(hex(&h.finalize()))
}

fn is_sha256_hex(s: &str) -> bool {
    s.len() == 64 && s.chars().all(|c| c.is_ascii_hexdigit())
}

/// A `.sha256` file beside an artifact: the bare hex digest (Kubernetes
/// writes no file name and no newline; a `<hex>  <name>` line is accepted
/// too).
pub fn parse_sidecar(text: &str) -> Result<String> {
    let first = text.split_whitespace().next().unwrap_or_default();
    if !is_sha256_hex(first) {
        bail!(
            "it does not hold a SHA-256 digest (64 hex digits); it starts with {:?}",
            text.chars().take(80).collect::<String>()
        );
    }
    Ok(first.to_ascii_lowercase())
}

/// The digest a `sha256sum` listing (etcd's SHA256SUMS: `<hex>  <name>`
/// per line, `*<name>` in binary mode) gives for `name`.
pub fn parse_sums(text: &str, name: &str) -> Result<String> {
    for line in text.lines() {
        let mut fields = line.split_whitespace();
        let (Some(digest), Some(file)) = (fields.next(), fields.last()) else {
            continue;
        };
        let file = file.trim_start_matches('*');
        let base = file.rsplit('/').next().unwrap_or(file);
        if (file == name || base == name) && is_sha256_hex(digest) {
            return Ok(digest.to_ascii_lowercase());
        }
    }
    bail!("it has no line for {name} ({} lines)", text.lines().count())
}

/// Copy the member at `member` (e.g. "etcd-v3.6.16-linux-amd64/etcd") of
/// the gzipped tarball `archive` into `out`. Err names the member and, when
/// it is missing, what the archive holds.
pub fn extract_member(archive: &Path, member: &str, out: &mut File) -> Result<u64> {
    let f = File::open(archive).with_context(|| format!("opening {}", archive.display()))?;
    let mut tar = tar::Archive::new(flate2::read::GzDecoder::new(f));
    let mut seen = Vec::new();
    let entries = tar
        .entries()
        .with_context(|| format!("reading the tarball {}", archive.display()))?;
    for entry in entries {
        let mut entry =
            entry.with_context(|| format!("reading the tarball {}", archive.display()))?;
        let path = entry
            .path()
            .with_context(|| format!("reading a member name in {}", archive.display()))?
            .to_string_lossy()
            .trim_start_matches("./")
            .to_string();
        if path == member {
            if !entry.header().entry_type().is_file() {
                bail!("{member} in {} is not a regular file", archive.display());
            }
            let n = std::io::copy(&mut entry, out)
                .with_context(|| format!("extracting {member} from {}", archive.display()))?;
            out.flush()?;
            return Ok(n);
        }
        if seen.len() < 12 {
            seen.push(path);
        }
    }
    bail!(
        "the tarball {} has no member {member} (it holds {}{})",
        archive.display(),
        seen.join(", "),
        if seen.len() == 12 { ", …" } else { "" }
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: &str = "e9b88b4ee95b18c706839c28d3a0220e5bc470e9cd9262410c90793c45ff8b7c";

    #[test]
    fn sidecars_are_bare_hex_and_anything_else_is_refused() {
        assert_eq!(parse_sidecar(A).unwrap(), A);
        assert_eq!(
            parse_sidecar(&format!("{}\n", A.to_uppercase())).unwrap(),
            A
        );
        assert_eq!(parse_sidecar(&format!("{A}  kube-scheduler\n")).unwrap(), A);
        let e = parse_sidecar("<html>Not Found</html>").unwrap_err();
        assert!(e.to_string().contains("<html>"), "{e}");
        assert!(parse_sidecar("").is_err());
        assert!(parse_sidecar(&A[1..]).is_err());
    }

    #[test]
    fn sums_files_give_the_line_of_the_named_file() {
        let b = "0".repeat(64);
        let text = format!(
            "{b}  etcd-v3.6.16-darwin-arm64.zip\n{A}  etcd-v3.6.16-linux-amd64.tar.gz\n{b} *bin/linux/arm64/kubectl\n"
        );
        assert_eq!(
            parse_sums(&text, "etcd-v3.6.16-linux-amd64.tar.gz").unwrap(),
            A
        );
        assert_eq!(parse_sums(&text, "kubectl").unwrap(), b);
        let e = parse_sums(&text, "etcd-v3.6.16-linux-arm64.tar.gz").unwrap_err();
        assert!(
            e.to_string()
                .contains("no line for etcd-v3.6.16-linux-arm64.tar.gz (3 lines)"),
            "{e}"
        );
    }

    fn tarball(dir: &Path, members: &[(&str, &[u8])]) -> std::path::PathBuf {
        let path = dir.join("a.tar.gz");
        let gz = flate2::write::GzEncoder::new(
            File::create(&path).unwrap(),
            flate2::Compression::fast(),
        );
        let mut b = tar::Builder::new(gz);
        for (name, data) in members {
            let mut h = tar::Header::new_gnu();
            h.set_size(data.len() as u64);
            h.set_mode(0o755);
            h.set_cksum();
            b.append_data(&mut h, name, *data).unwrap();
        }
        b.into_inner().unwrap().finish().unwrap();
        path
    }

    #[test]
    fn the_member_is_extracted_and_a_missing_one_is_named() {
        let tmp = tempfile::tempdir().unwrap();
        let archive = tarball(
            tmp.path(),
            &[
                ("etcd-v1-linux-amd64/README.md", b"readme"),
                ("etcd-v1-linux-amd64/etcd", b"#!/bin/sh\necho etcd\n"),
            ],
        );
        let out_path = tmp.path().join("etcd");
        let mut out = File::create(&out_path).unwrap();
        let n = extract_member(&archive, "etcd-v1-linux-amd64/etcd", &mut out).unwrap();
        assert_eq!(n, 20);
        assert_eq!(std::fs::read(&out_path).unwrap(), b"#!/bin/sh\necho etcd\n");
        let e = extract_member(&archive, "etcd-v2-linux-amd64/etcd", &mut out).unwrap_err();
        let text = e.to_string();
        assert!(
            text.contains("no member etcd-v2-linux-amd64/etcd")
                && text.contains("etcd-v1-linux-amd64/README.md"),
            "{text}"
        );
        // Not a tarball at all.
        std::fs::write(&archive, b"plain text").unwrap();
        assert!(extract_member(&archive, "x", &mut out).is_err());
    }

    #[test]
    fn file_digests_are_lower_case_hex() {
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("f");
        std::fs::write(&p, b"abc").unwrap();
        assert_eq!(
            sha256_file(&p).unwrap(),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
