//! The webhook certificate of a controller that makes its own (JobSet's
//! and Kueue's internal certificate management), made here before the
//! controller starts. Their manifests ship an empty Secret; at start the
//! controller's rotator (open-policy-agent/cert-controller,
//! `pkg/rotator/rotator.go`, `refreshCertIfNeeded`) finds it invalid,
//! writes a new CA and serving certificate into it and injects the CA
//! into the webhook configurations — and the webhook server then serves
//! only once the kubelet has refreshed the pod's Secret volume with them:
//! on kind that took 81.6, 109.6 and 113.7 s in 3 of 7 `up`s (2026-11-29;
//! 0.4–2.3 s in the others), and 103.9 s in CI.
//!
//! A Secret that already holds a valid pair is kept ("no cert refresh
//! needed"): valid is a CA certificate that verifies for the rotator's CA
//! name (`CAName`, which the controller's `pkg/util/cert/cert.go` sets —
//! read from its module here) and a serving certificate for
//! `<webhook Service>.<namespace>.svc` chained to it, both still valid a
//! lookahead (90 days by default) from now. So the Secret is applied with
//! such a pair (the CA for 10 years, the serving certificate for 1), and
//! the webhook configurations carry the CA already; the pod mounts the
//! pair at its start and serves at once. What a benchmark measures is not
//! touched: the rotator's writes happened at install, before any window.

use std::path::Path;

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

use crate::pki::Ca;

/// The CA's and the serving certificate's validity: beyond the rotator's
/// lookahead (`defaultLookaheadInterval`, 90 days).
const CA_DAYS: i64 = 3650;
const SERVING_DAYS: i64 = 365;

/// What the rotator of the controller in module `dir` checks, read from
/// its `pkg/util/cert/cert.go`: the constants its `CertRotator`'s
/// `CAName` and `CAOrganization` are set to (JobSet: `caName`, `caOrg`;
/// Kueue: `caName`, `caOrganization`).
fn rotator_names(dir: &Path) -> Result<(String, String)> {
    let file = dir.join("pkg/util/cert/cert.go");
    let src = std::fs::read_to_string(&file)
        .with_context(|| format!("reading {} (its rotator's CA name)", file.display()))?;
    let field = |name: &str| -> Result<String> {
        let set = regex::Regex::new(&format!(r"\b{name}:\s*(\w+)"))?;
        let Some(ident) = set.captures(&src).map(|c| c[1].to_string()) else {
            bail!("{}: the rotator's {name} is not set", file.display());
        };
        let constant = regex::Regex::new(&format!(r#"\b{ident}\s*=\s*"([^"]+)""#))?;
        match constant.captures(&src) {
            Some(c) => Ok(c[1].to_string()),
            None => bail!(
                "{}: {name} is {ident}, a constant not found",
                file.display()
            ),
        }
    };
    Ok((field("CAName")?, field("CAOrganization")?))
}

/// Fill the empty webhook Secret of `objects` (a kustomized controller
/// from module `dir`) with a CA and a serving certificate for its webhook
/// Service, and give the webhook configurations that CA. Objects without
/// such a Secret are left as they are; Ok(false) then.
pub fn seed(objects: &mut [Value], dir: &Path) -> Result<bool> {
    let is = |o: &Value, kind: &str, suffix: &str| {
        o["kind"] == kind
            && o["metadata"]["name"]
                .as_str()
                .is_some_and(|n| n.ends_with(suffix))
    };
    let Some(secret) = objects
        .iter()
        .position(|o| is(o, "Secret", "webhook-server-cert"))
    else {
        return Ok(false);
    };
    let namespace = objects[secret]["metadata"]["namespace"]
        .as_str()
        .context("the webhook Secret has no namespace")?
        .to_string();
    let service = objects
        .iter()
        .find(|o| is(o, "Service", "webhook-service"))
        .and_then(|o| o["metadata"]["name"].as_str())
        .context("a webhook Secret but no webhook Service")?
        .to_string();
    let (ca_name, ca_org) = rotator_names(dir)?;
    let ca = Ca::named(&ca_name, &ca_org, CA_DAYS)?;
    let serving = ca.serving_for(&format!("{service}.{namespace}.svc"), SERVING_DAYS)?;
    let b64 = |s: &str| serde_json::to_value(k8s_openapi::ByteString(s.as_bytes().to_vec()));
    objects[secret]["data"] = json!({
        "ca.crt": b64(&ca.pair.cert_pem)?,
        "ca.key": b64(&ca.pair.key_pem)?,
        "tls.crt": b64(&serving.cert_pem)?,
        "tls.key": b64(&serving.key_pem)?,
    });
    let bundle = b64(&ca.pair.cert_pem)?;
    for o in objects.iter_mut().filter(|o| {
        matches!(
            o["kind"].as_str(),
            Some("ValidatingWebhookConfiguration" | "MutatingWebhookConfiguration")
        )
    }) {
        if let Some(hooks) = o["webhooks"].as_array_mut() {
            for h in hooks {
                h["clientConfig"]["caBundle"] = bundle.clone();
            }
        }
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use crate::install::webhook_cert::seed;
    use serde_json::json;

    fn module(ca: &str) -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join("pkg/util/cert")).unwrap();
        std::fs::write(
            d.path().join("pkg/util/cert/cert.go"),
            format!(
                "const (\n\tcaName = \"{ca}\"\n\tcaOrganization  = \"org\"\n)\n\
                 func f() {{ cert.AddRotator(mgr, &cert.CertRotator{{\n\
                 \t\tCAName:         caName,\n\t\tCAOrganization: caOrganization,\n}}) }}\n"
            ),
        )
        .unwrap();
        d
    }

    #[test]
    fn the_empty_secret_gets_a_pair_for_the_service_and_the_webhooks_its_ca() {
        let d = module("jobset-ca");
        let mut objects = vec![
            json!({"kind": "Secret", "metadata": {"name": "jobset-webhook-server-cert", "namespace": "jobset-system"}}),
            json!({"kind": "Service", "metadata": {"name": "jobset-webhook-service", "namespace": "jobset-system"}}),
            json!({"kind": "ValidatingWebhookConfiguration", "metadata": {"name": "v"},
                   "webhooks": [{"name": "a", "clientConfig": {"service": {"name": "jobset-webhook-service"}}}]}),
        ];
        assert!(seed(&mut objects, d.path()).unwrap());
        let data = &objects[0]["data"];
        for key in ["ca.crt", "ca.key", "tls.crt", "tls.key"] {
            assert!(data[key].as_str().is_some_and(|s| s.len() > 100), "{key}");
        }
        assert_eq!(
            objects[2]["webhooks"][0]["clientConfig"]["caBundle"],
            data["ca.crt"]
        );
        assert_eq!(
            objects[2]["webhooks"][0]["clientConfig"]["service"]["name"],
            "jobset-webhook-service"
        );
    }

    #[test]
    fn nothing_to_seed_without_the_secret_and_a_missing_ca_name_is_said() {
        let d = module("x");
        let mut objects = vec![json!({"kind": "Service", "metadata": {"name": "s"}})];
        assert!(!seed(&mut objects, d.path()).unwrap());
        let empty = tempfile::tempdir().unwrap();
        let mut objects = vec![
            json!({"kind": "Secret", "metadata": {"name": "k-webhook-server-cert", "namespace": "n"}}),
            json!({"kind": "Service", "metadata": {"name": "k-webhook-service", "namespace": "n"}}),
        ];
        let e = seed(&mut objects, empty.path()).unwrap_err();
        assert!(format!("{e:#}").contains("pkg/util/cert/cert.go"), "{e:#}");
    }
}
