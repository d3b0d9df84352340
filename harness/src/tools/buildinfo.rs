//! Reads the build information the Go linker embeds in every binary
//! (the data behind `go version -m`): Go version, main module, dependencies
//! and build settings. Used to tell which module version a binary was built
//! from when it has no version command, without needing Go installed.

use std::path::Path;

use anyhow::{Context, Result, bail};

const MAGIC: &[u8] = b"\xff Go buildinf:";

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BuildInfo {
    pub go_version: String,
    /// (path, version) of the main module.
    pub main: Option<(String, String)>,
    pub deps: Vec<(String, String)>,
    pub settings: Vec<(String, String)>,
}

impl BuildInfo {
    pub fn read(path: &Path) -> Result<BuildInfo> {
        let data = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
        Self::parse(&data).with_context(|| format!("Go build information of {}", path.display()))
    }

    /// The version of `module`, whether it is the main module or a dependency.
    pub fn module_version(&self, module: &str) -> Option<&str> {
        self.main
            .iter()
            .chain(self.deps.iter())
            .find(|(p, _)| p == module)
            .map(|(_, v)| v.as_str())
    }

    pub fn setting(&self, key: &str) -> Option<&str> {
        self.settings
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    pub fn parse(data: &[u8]) -> Result<BuildInfo> {
        // The linker puts the header at a 16-byte aligned offset.
        let start = (0..data.len().saturating_sub(MAGIC.len()))
            .step_by(16)
            .find(|&i| data[i..].starts_with(MAGIC))
            .context("no Go build information (not a Go 1.18+ binary?)")?;
        let header = data
            .get(start..start + 32)
            .context("truncated build information header")?;
        let flags = header[15];
        if flags & 0x2 == 0 {
            bail!("build information in the pre-1.18 pointer format is not supported");
        }
        let mut rest = &data[start + 32..];
        let go_version = read_string(&mut rest).context("Go version")?;
        let modinfo = read_string(&mut rest).context("module information")?;
        // The module information is framed by 16-byte sentinels.
        let modinfo = if modinfo.len() >= 33 && modinfo.as_bytes()[modinfo.len() - 17] == b'\n' {
            modinfo[16..modinfo.len() - 16].to_string()
        } else {
            modinfo
        };
        let mut info = BuildInfo {
            go_version,
            ..Default::default()
        };
        for line in modinfo.lines() {
            let fields: Vec<&str> = line.split('\t').collect();
            match fields.as_slice() {
                ["mod", path, version, ..] => {
                    info.main = Some((path.to_string(), version.to_string()))
                }
                ["dep", path, version, ..] => {
                    info.deps.push((path.to_string(), version.to_string()))
                }
                ["build", kv] => {
                    if let Some((k, v)) = kv.split_once('=') {
                        info.settings.push((k.to_string(), v.to_string()));
                    }
                }
                _ => {}
            }
        }
        Ok(info)
    }
}

fn read_string(buf: &mut &[u8]) -> Result<String> {
    let mut len: u64 = 0;
    let mut shift = 0;
    loop {
        let (&b, rest) = buf.split_first().context("truncated length")?;
        *buf = rest;
        len |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            break;
        }
        shift += 7;
        if shift > 63 {
            bail!("length varint too long");
        }
    }
    let len = usize::try_from(len).context("length overflows")?;
    if buf.len() < len {
        bail!("string of {len} bytes runs past the end");
    }
    let (s, rest) = buf.split_at(len);
    *buf = rest;
    Ok(String::from_utf8_lossy(s).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn varint(mut n: usize, out: &mut Vec<u8>) {
        loop {
            let b = (n & 0x7f) as u8;
            n >>= 7;
            if n == 0 {
                out.push(b);
                break;
            }
            out.push(b | 0x80);
        }
    }

    fn synth(go: &str, modinfo: &str) -> Vec<u8> {
        let mut data = vec![0u8; 48]; // some leading bytes, 16-aligned
        let mut header = MAGIC.to_vec();
        header.push(8);
        header.push(2);
        header.resize(32, 0);
        data.extend(header);
        varint(go.len(), &mut data);
        data.extend(go.as_bytes());
        let framed = format!("0123456789abcdef{modinfo}\n0123456789abcdef");
        varint(framed.len(), &mut data);
        data.extend(framed.as_bytes());
        data
    }

    #[test]
    fn parses_modules_and_settings() {
        let modinfo = "path\tsigs.k8s.io/jobset\nmod\tsigs.k8s.io/jobset\tv0.12.0\th1:x=\ndep\tk8s.io/api\tv0.35.0\th1:y=\nbuild\t-ldflags=\"-X a=b\"\nbuild\tCGO_ENABLED=0";
        let info = BuildInfo::parse(&synth("go1.26.8", modinfo)).unwrap();
        assert_eq!(info.go_version, "go1.26.8");
        assert_eq!(info.module_version("sigs.k8s.io/jobset"), Some("v0.12.0"));
        assert_eq!(info.module_version("k8s.io/api"), Some("v0.35.0"));
        assert_eq!(info.setting("CGO_ENABLED"), Some("0"));
        assert_eq!(info.module_version("nope"), None);
    }

    #[test]
    fn rejects_garbage_and_truncation() {
        assert!(BuildInfo::parse(b"not a binary").is_err());
        let data = synth("go1.26.8", "mod\tx\tv1\t");
        for cut in [50, 64 + 20, data.len() - 5] {
            assert!(BuildInfo::parse(&data[..cut]).is_err(), "cut at {cut}");
        }
    }

    #[test]
    fn unaligned_magic_is_skipped() {
        let mut data = vec![0u8; 3];
        data.extend(MAGIC);
        assert!(BuildInfo::parse(&data).is_err());
    }
}
