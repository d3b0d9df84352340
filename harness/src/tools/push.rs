//! Push an image archive made here (`tools::oci`: an OCI image layout in
//! a tar) to a registry, by the OCI distribution API
//! (opencontainers/distribution-spec `spec.md`, "Pushing"): each blob the
//! registry lacks (`HEAD /v2/<name>/blobs/<digest>` answers 404) is
//! uploaded whole (`POST /v2/<name>/blobs/uploads/`, then `PUT` of the
//! bytes at the upload's `Location` with `?digest=`), then the manifest is
//! `PUT` at `/v2/<name>/manifests/<tag>` with its media type. What the
//! registry has already is not sent again.
//!
//! A registry on a loopback address is spoken to over plain HTTP (as
//! Docker and containerd treat `localhost` registries), any other over
//! HTTPS. Credentials, where a registry asks for them (`401` with a
//! `WWW-Authenticate` challenge: Bearer, whose token is fetched from its
//! realm, or Basic), are the `auths.<registry>.auth` of
//! `$DOCKER_CONFIG/config.json` (`~/.docker/config.json`), what `docker
//! login` writes; without one the token is asked for anonymously.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;

use anyhow::{Context, Result, bail};
use reqwest::{Method, StatusCode, header};

use crate::error::{bad_input, env_missing};

/// `registry/repository[:tag]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reference {
    pub registry: String,
    pub repository: String,
    pub tag: String,
}

impl std::fmt::Display for Reference {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}:{}", self.registry, self.repository, self.tag)
    }
}

/// `REGISTRY/REPOSITORY[:TAG]` (the registry part is required: a host,
/// with a port or not); `default_tag` where none is given.
pub fn parse_reference(s: &str, default_tag: &str) -> Result<Reference> {
    let bad = |why: &str| {
        bad_input(format!(
            "--push {s:?}: {why} (expected REGISTRY/REPOSITORY[:TAG], e.g. localhost:5000/harness-rounds)"
        ))
    };
    let (registry, rest) = s.split_once('/').ok_or_else(|| bad("no registry"))?;
    if registry.is_empty()
        || !(registry.contains('.') || registry.contains(':') || registry == "localhost")
    {
        return Err(bad("the part before the first '/' is not a registry host"));
    }
    // A tag is after the last ':' of the last path segment.
    let last = rest.rsplit('/').next().unwrap_or(rest);
    let (repository, tag) = match last.rsplit_once(':') {
        Some((_, tag)) => (&rest[..rest.len() - tag.len() - 1], tag),
        None => (rest, default_tag),
    };
    let path_ok = |p: &str| {
        !p.is_empty()
            && p.split('/').all(|c| {
                !c.is_empty()
                    && c.chars().all(|ch| {
                        ch.is_ascii_lowercase() || ch.is_ascii_digit() || "._-".contains(ch)
                    })
            })
    };
    if !path_ok(repository) {
        return Err(bad(
            "the repository must be lowercase letters, digits, '.', '_', '-' and '/'",
        ));
    }
    if tag.is_empty()
        || tag.len() > 128
        || !tag
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
    {
        return Err(bad(
            "the tag must be letters, digits, '.', '_', '-' (at most 128)",
        ));
    }
    Ok(Reference {
        registry: registry.to_string(),
        repository: repository.to_string(),
        tag: tag.to_string(),
    })
}

/// Plain HTTP for a loopback registry, HTTPS for any other.
fn base_url(registry: &str) -> String {
    let host = registry
        .rsplit_once(':')
        .filter(|(_, port)| port.chars().all(|c| c.is_ascii_digit()))
        .map_or(registry, |(h, _)| h);
    let loopback = host == "localhost"
        || host
            .trim_matches(|c| c == '[' || c == ']')
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback());
    format!("{}://{registry}", if loopback { "http" } else { "https" })
}

/// What a push did.
#[derive(Debug, Default)]
pub struct Pushed {
    pub blobs_sent: usize,
    pub blobs_there: usize,
    pub bytes_sent: u64,
    /// The manifest's digest ("sha256:…").
    pub digest: String,
}

/// Push the image of `archive` (its one manifest) as `to`.
pub async fn push(archive: &Path, to: &Reference) -> Result<Pushed> {
    let files = read_archive(archive)?;
    let index: serde_json::Value =
        serde_json::from_slice(files.get("index.json").with_context(|| {
            format!(
                "{}: no index.json (not an OCI image layout)",
                archive.display()
            )
        })?)?;
    let desc = &index["manifests"][0];
    let (Some(digest), Some(media)) = (desc["digest"].as_str(), desc["mediaType"].as_str()) else {
        bail!("{}: index.json names no manifest", archive.display());
    };
    let blob = |d: &str| -> Result<&Vec<u8>> {
        files
            .get(&format!("blobs/{}", d.replace(':', "/")))
            .with_context(|| format!("{}: blob {d} missing", archive.display()))
    };
    let manifest = blob(digest)?.clone();
    let m: serde_json::Value = serde_json::from_slice(&manifest)?;
    let mut blobs: Vec<String> = m["layers"]
        .as_array()
        .map(|ls| {
            ls.iter()
                .filter_map(|l| l["digest"].as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default();
    blobs.extend(m["config"]["digest"].as_str().map(String::from));
    let mut r = Registry::new(to)?;
    let mut pushed = Pushed {
        digest: digest.to_string(),
        ..Pushed::default()
    };
    for d in &blobs {
        let path = format!("/v2/{}/blobs/{d}", to.repository);
        if r.send(Method::HEAD, &path, None, None).await?.status() == StatusCode::OK {
            pushed.blobs_there += 1;
            continue;
        }
        let bytes = blob(d)?;
        let start = r
            .send(
                Method::POST,
                &format!("/v2/{}/blobs/uploads/", to.repository),
                None,
                None,
            )
            .await?;
        let location = expect(start, StatusCode::ACCEPTED, "starting an upload").await?;
        let location = location
            .headers()
            .get(header::LOCATION)
            .and_then(|l| l.to_str().ok())
            .context("the registry's upload has no Location")?
            .to_string();
        let sep = if location.contains('?') { '&' } else { '?' };
        let put = r
            .send(
                Method::PUT,
                &format!("{location}{sep}digest={d}"),
                Some("application/octet-stream"),
                Some(bytes.clone()),
            )
            .await?;
        expect(put, StatusCode::CREATED, &format!("uploading blob {d}")).await?;
        pushed.blobs_sent += 1;
        pushed.bytes_sent += bytes.len() as u64;
    }
    let put = r
        .send(
            Method::PUT,
            &format!("/v2/{}/manifests/{}", to.repository, to.tag),
            Some(media),
            Some(manifest),
        )
        .await?;
    expect(put, StatusCode::CREATED, "putting the manifest").await?;
    Ok(pushed)
}

/// `resp` if it has `want`, else an error with the registry's words.
async fn expect(
    resp: reqwest::Response,
    want: StatusCode,
    what: &str,
) -> Result<reqwest::Response> {
    if resp.status() == want {
        return Ok(resp);
    }
    let status = resp.status();
    let body = resp.text().await.unwrap_or_default();
    bail!("{what}: the registry answered {status}: {}", body.trim())
}

/// Every file of the archive by its path.
fn read_archive(archive: &Path) -> Result<BTreeMap<String, Vec<u8>>> {
    let file = std::fs::File::open(archive)
        .map_err(|e| bad_input(format!("{}: {e}", archive.display())))?;
    let mut tar = tar::Archive::new(std::io::BufReader::new(file));
    let mut out = BTreeMap::new();
    for entry in tar.entries()? {
        let mut entry = entry?;
        if !entry.header().entry_type().is_file() {
            continue;
        }
        let path = entry
            .path()?
            .to_string_lossy()
            .trim_start_matches("./")
            .to_string();
        let mut data = Vec::new();
        entry.read_to_end(&mut data)?;
        out.insert(path, data);
    }
    Ok(out)
}

/// A registry session: its base URL and the authorization it asked for.
struct Registry {
    base: String,
    registry: String,
    http: reqwest::Client,
    authorization: Option<String>,
}

impl Registry {
    fn new(to: &Reference) -> Result<Registry> {
        crate::init_crypto();
        Ok(Registry {
            base: base_url(&to.registry),
            registry: to.registry.clone(),
            http: reqwest::Client::builder()
                .user_agent(concat!("harness/", env!("CARGO_PKG_VERSION")))
                .connect_timeout(std::time::Duration::from_secs(10))
                .build()?,
            authorization: None,
        })
    }

    /// A request to `path` (or an absolute URL the registry gave); once
    /// again with credentials when it answers 401 with a challenge.
    async fn send(
        &mut self,
        method: Method,
        path: &str,
        content_type: Option<&str>,
        body: Option<Vec<u8>>,
    ) -> Result<reqwest::Response> {
        let url = if path.starts_with("http://") || path.starts_with("https://") {
            path.to_string()
        } else {
            format!("{}{path}", self.base)
        };
        for attempt in 0..2 {
            let mut req = self.http.request(method.clone(), &url);
            if let Some(a) = &self.authorization {
                req = req.header(header::AUTHORIZATION, a);
            }
            if let Some(ct) = content_type {
                req = req.header(header::CONTENT_TYPE, ct);
            }
            if let Some(b) = &body {
                req = req.body(b.clone());
            } else if method == Method::POST || method == Method::PUT {
                req = req.header(header::CONTENT_LENGTH, "0");
            }
            let resp = req.send().await.map_err(|e| {
                env_missing(
                    format!("{method} {url}: {}", crate::tools::http::chain(&e)),
                    format!("is a registry serving at {}?", self.base),
                )
            })?;
            if resp.status() != StatusCode::UNAUTHORIZED || attempt == 1 {
                return Ok(resp);
            }
            let challenge = resp
                .headers()
                .get(header::WWW_AUTHENTICATE)
                .and_then(|h| h.to_str().ok())
                .unwrap_or_default()
                .to_string();
            self.authorization = Some(self.authorize(&challenge).await?);
        }
        unreachable!("the loop returns on its second attempt")
    }

    /// The Authorization header a challenge asks for.
    async fn authorize(&self, challenge: &str) -> Result<String> {
        let creds = docker_credentials(&self.registry);
        let (scheme, params) = challenge.split_once(' ').unwrap_or((challenge, ""));
        match scheme.to_ascii_lowercase().as_str() {
            "basic" => match creds {
                Some(c) => Ok(format!("Basic {c}")),
                None => Err(env_missing(
                    format!("{} asks for a user and password", self.registry),
                    format!("`docker login {}` (its config.json is read)", self.registry),
                )),
            },
            "bearer" => {
                let p = challenge_params(params);
                let realm = p.get("realm").context("a Bearer challenge with no realm")?;
                let mut url = reqwest::Url::parse(realm)
                    .with_context(|| format!("the registry's token realm {realm:?}"))?;
                for k in ["service", "scope"] {
                    if let Some(v) = p.get(k) {
                        url.query_pairs_mut().append_pair(k, v);
                    }
                }
                let mut req = self.http.get(url);
                if let Some(c) = &creds {
                    req = req.header(header::AUTHORIZATION, format!("Basic {c}"));
                }
                let resp = req
                    .send()
                    .await
                    .context("asking the registry for a token")?;
                let resp = expect(resp, StatusCode::OK, "asking the registry for a token").await?;
                let t: serde_json::Value = resp.json().await?;
                let token = t["token"]
                    .as_str()
                    .or(t["access_token"].as_str())
                    .context("the registry's token answer has no token")?;
                Ok(format!("Bearer {token}"))
            }
            _ => bail!(
                "the registry asks for {scheme:?} authentication, which the harness does not speak"
            ),
        }
    }
}

/// `key="value", …` of a challenge.
fn challenge_params(s: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut rest = s.trim();
    while let Some((key, after)) = rest.split_once('=') {
        let key = key.trim().trim_start_matches(',').trim().to_string();
        let after = after.trim_start();
        let (value, next) = match after.strip_prefix('"') {
            Some(q) => {
                let end = q.find('"').unwrap_or(q.len());
                (&q[..end], q.get(end + 1..).unwrap_or(""))
            }
            None => {
                let end = after.find(',').unwrap_or(after.len());
                (&after[..end], &after[end..])
            }
        };
        out.insert(key, value.to_string());
        rest = next.trim_start_matches(',').trim();
    }
    out
}

/// `auths.<registry>.auth` of Docker's config.json (base64 "user:pass").
fn docker_credentials(registry: &str) -> Option<String> {
    let dir = std::env::var_os("DOCKER_CONFIG")
        .map(std::path::PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".docker")))?;
    let config: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("config.json")).ok()?).ok()?;
    config["auths"][registry]["auth"].as_str().map(String::from)
}

#[cfg(test)]
mod tests {
    use crate::tools::push::{base_url, challenge_params, parse_reference};

    #[test]
    fn references_parse_with_or_without_a_tag_and_bad_ones_are_said() {
        let r = parse_reference("localhost:5000/harness-rounds", "abc").unwrap();
        assert_eq!(
            (r.registry.as_str(), r.repository.as_str(), r.tag.as_str()),
            ("localhost:5000", "harness-rounds", "abc")
        );
        let r = parse_reference("ghcr.io/me/rounds:v1", "abc").unwrap();
        assert_eq!(r.to_string(), "ghcr.io/me/rounds:v1");
        for bad in [
            "rounds",
            "rounds/x",
            "ghcr.io/Me/x",
            "ghcr.io/x:",
            "ghcr.io/",
        ] {
            let e = parse_reference(bad, "t").unwrap_err();
            assert_eq!(crate::error::exit_code(&e), 2, "{bad}");
            assert!(format!("{e}").contains(bad), "{e}");
        }
    }

    #[test]
    fn loopback_registries_are_plain_http() {
        assert_eq!(base_url("localhost:5000"), "http://localhost:5000");
        assert_eq!(base_url("127.0.0.1:5000"), "http://127.0.0.1:5000");
        assert_eq!(base_url("[::1]:5000"), "http://[::1]:5000");
        assert_eq!(base_url("ghcr.io"), "https://ghcr.io");
        assert_eq!(base_url("10.0.0.1:5000"), "https://10.0.0.1:5000");
    }

    #[test]
    fn a_bearer_challenge_reads_back() {
        let p = challenge_params(
            r#"realm="https://auth.example/token",service="registry.example",scope="repository:me/x:pull,push""#,
        );
        assert_eq!(p["realm"], "https://auth.example/token");
        assert_eq!(p["service"], "registry.example");
        assert_eq!(p["scope"], "repository:me/x:pull,push");
    }
}
