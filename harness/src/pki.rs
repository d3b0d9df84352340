//! Certificates the harness makes. A local cluster's PKI: one CA, a
//! serving certificate for every TLS endpoint (SANs 127.0.0.1 and
//! localhost), a client certificate per identity, and the service-account
//! signing key pair — each identity has its own client certificate so the
//! audit log can say who made every request. And the CA and serving
//! certificate a controller's webhook server is started with
//! (`install::webhook_cert`): named as the controller's own rotator names
//! them.

use anyhow::{Context, Result};
use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose,
};
use time::{Duration, OffsetDateTime};

/// A PEM certificate and its PEM private key.
#[derive(Debug, Clone)]
pub struct CertPair {
    pub cert_pem: String,
    pub key_pem: String,
}

pub struct Ca {
    pub pair: CertPair,
    params: CertificateParams,
    key: KeyPair,
}

fn validity(params: &mut CertificateParams, days: i64) {
    let now = OffsetDateTime::now_utc();
    // Back-date a little: components compare against their own clocks.
    params.not_before = now - Duration::hours(1);
    params.not_after = now + Duration::days(days);
}

fn dn(cn: &str, orgs: &[&str]) -> DistinguishedName {
    let mut d = DistinguishedName::new();
    for o in orgs {
        d.push(DnType::OrganizationName, *o);
    }
    d.push(DnType::CommonName, cn);
    d
}

/// A CA's basic constraints, key usages and validity.
fn as_ca(params: &mut CertificateParams, days: i64) {
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    validity(params, days);
}

impl Ca {
    pub fn generate(name: &str) -> Result<Ca> {
        let key = KeyPair::generate().context("generating the CA key")?;
        let mut params = CertificateParams::default();
        params.distinguished_name = dn(&format!("harness-ca-{name}"), &[]);
        as_ca(&mut params, 3650);
        let cert = params.self_signed(&key).context("self-signing the CA")?;
        Ok(Ca {
            pair: CertPair {
                cert_pem: cert.pem(),
                key_pem: key.serialize_pem(),
            },
            params,
            key,
        })
    }

    /// A CA named `cn` of organization `org` whose certificate also holds
    /// `cn` as a DNS name, valid for `days`, with a 2048-bit RSA key whose
    /// PEM is PKCS#1 ("RSA PRIVATE KEY"): what
    /// open-policy-agent/cert-controller takes as a webhook CA (pkg/rotator:
    /// `ValidCert(ca, ca, key, CAName, …)` checks the name,
    /// `buildArtifactsFromSecret` reads the key with
    /// `x509.ParsePKCS1PrivateKey` and nothing else).
    pub fn named(cn: &str, org: &str, days: i64) -> Result<Ca> {
        use rsa::pkcs1::EncodeRsaPrivateKey;
        use rsa::pkcs8::EncodePrivateKey;
        let rsa_key = rsa::RsaPrivateKey::new(&mut rsa::rand_core::OsRng, 2048)
            .context("generating the CA's RSA key")?;
        let pkcs1 = rsa_key
            .to_pkcs1_pem(rsa::pkcs8::LineEnding::LF)
            .context("the CA key as PKCS#1")?;
        let pkcs8 = rsa_key
            .to_pkcs8_pem(rsa::pkcs8::LineEnding::LF)
            .context("the CA key as PKCS#8")?;
        let key = KeyPair::from_pkcs8_pem_and_sign_algo(&pkcs8, &rcgen::PKCS_RSA_SHA256)
            .context("loading the CA's RSA key")?;
        let mut params =
            CertificateParams::new(vec![cn.to_string()]).context("the CA's DNS name")?;
        params.distinguished_name = dn(cn, &[org]);
        as_ca(&mut params, days);
        let cert = params
            .self_signed(&key)
            .with_context(|| format!("self-signing the CA {cn}"))?;
        Ok(Ca {
            pair: CertPair {
                cert_pem: cert.pem(),
                key_pem: pkcs1.to_string(),
            },
            params,
            key,
        })
    }

    /// A serving certificate for `dns` only (a Service's name), valid for
    /// `days`.
    pub fn serving_for(&self, dns: &str, days: i64) -> Result<CertPair> {
        self.serving_with(dns, vec![dns.to_string()], days)
    }

    /// A serving certificate named `cn` for `sans`, valid for `days`.
    fn serving_with(&self, cn: &str, sans: Vec<String>, days: i64) -> Result<CertPair> {
        let mut params = CertificateParams::new(sans).context("serving certificate SANs")?;
        params.distinguished_name = dn(cn, &[]);
        params.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        validity(&mut params, days);
        self.sign(params)
            .with_context(|| format!("signing the serving certificate {cn}"))
    }

    fn sign(&self, params: CertificateParams) -> Result<CertPair> {
        let key = KeyPair::generate()?;
        let issuer = Issuer::from_params(&self.params, &self.key);
        let cert = params.signed_by(&key, &issuer)?;
        Ok(CertPair {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
        })
    }

    /// A serving certificate for loopback endpoints.
    pub fn serving(&self, cn: &str, extra_sans: &[&str]) -> Result<CertPair> {
        let mut sans = vec!["127.0.0.1".to_string(), "localhost".to_string()];
        sans.extend(extra_sans.iter().map(|s| s.to_string()));
        self.serving_with(cn, sans, 365)
    }

    /// A client certificate: the API server takes CN as the user name and
    /// each O as a group.
    pub fn client(&self, user: &str, groups: &[&str]) -> Result<CertPair> {
        let mut params = CertificateParams::default();
        params.distinguished_name = dn(user, groups);
        params.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        validity(&mut params, 365);
        self.sign(params)
            .with_context(|| format!("signing the client certificate of {user}"))
    }
}

/// The service-account token signing key: (private PEM, public PEM).
pub fn service_account_keys() -> Result<(String, String)> {
    let key = KeyPair::generate().context("generating the service-account key")?;
    Ok((key.serialize_pem(), key.public_key_pem()))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use rustls::RootCertStore;
    use rustls::client::WebPkiServerVerifier;
    use rustls::client::danger::ServerCertVerifier;
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
    use rustls::server::WebPkiClientVerifier;

    use super::*;

    // Checked as a TLS peer checks them (rustls's webpki verifiers: chain
    // to the CA, validity now, SANs, extended key usage), and the names by
    // their DER encoding.

    fn der(pem: &str) -> CertificateDer<'static> {
        CertificateDer::from_pem_slice(pem.as_bytes()).expect("one PEM certificate")
    }

    fn roots(ca: &Ca) -> Arc<RootCertStore> {
        let mut roots = RootCertStore::empty();
        roots.add(der(&ca.pair.cert_pem)).expect("the CA as a root");
        Arc::new(roots)
    }

    fn provider() -> Arc<rustls::crypto::CryptoProvider> {
        Arc::new(rustls::crypto::ring::default_provider())
    }

    fn as_server(ca: &Ca, cert: &CertPair, name: &str) -> Result<(), rustls::Error> {
        let verifier = WebPkiServerVerifier::builder_with_provider(roots(ca), provider())
            .build()
            .expect("a server verifier");
        let name = ServerName::try_from(name.to_string()).expect("a server name");
        verifier
            .verify_server_cert(&der(&cert.cert_pem), &[], &name, &[], UnixTime::now())
            .map(|_| ())
    }

    fn as_client(ca: &Ca, cert: &CertPair) -> Result<(), rustls::Error> {
        let verifier = WebPkiClientVerifier::builder_with_provider(roots(ca), provider())
            .build()
            .expect("a client verifier");
        verifier
            .verify_client_cert(&der(&cert.cert_pem), &[], UnixTime::now())
            .map(|_| ())
    }

    /// Whether a name attribute (OID 2.5.4.`oid`) holds `value`, as DER
    /// writes it: the OID, then a UTF8String or PrintableString.
    fn has_name(cert: &CertPair, oid: u8, value: &str) -> bool {
        let der = der(&cert.cert_pem);
        [0x0c, 0x13].into_iter().any(|tag| {
            let mut pattern = vec![0x06, 0x03, 0x55, 0x04, oid, tag, value.len() as u8];
            pattern.extend_from_slice(value.as_bytes());
            der.windows(pattern.len()).any(|w| w == pattern)
        })
    }

    const COMMON_NAME: u8 = 3;
    const ORGANIZATION: u8 = 10;

    /// A webhook's pair: the CA holds its name as a DNS name (how
    /// cert-controller checks a CA), the serving certificate serves the
    /// Service's name and nothing else, chained to that CA.
    #[test]
    fn a_named_ca_and_a_serving_cert_for_one_service_name() {
        let ca = Ca::named("jobset-ca", "jobset", 3650).unwrap();
        let name = "jobset-webhook-service.jobset-system.svc";
        let s = ca.serving_for(name, 3650).unwrap();
        as_server(&ca, &s, name).unwrap();
        assert!(as_server(&ca, &s, "localhost").is_err());
        assert!(as_server(&Ca::named("jobset-ca", "jobset", 1).unwrap(), &s, name).is_err());
        // subjectAltName dNSName [2] "jobset-ca" in the CA's certificate.
        let mut san = vec![0x82, 9];
        san.extend_from_slice(b"jobset-ca");
        let ca_der = der(&ca.pair.cert_pem);
        assert!(ca_der.windows(san.len()).any(|w| w == san));
        assert!(has_name(&ca.pair, COMMON_NAME, "jobset-ca"));
        assert!(has_name(&ca.pair, ORGANIZATION, "jobset"));
        // PKCS#1, the only form cert-controller reads a CA key in.
        assert!(
            ca.pair
                .key_pem
                .starts_with("-----BEGIN RSA PRIVATE KEY-----"),
            "{}",
            &ca.pair.key_pem[..40]
        );
    }

    #[test]
    fn ca_signs_a_serving_cert_with_loopback_sans() {
        let ca = Ca::generate("t").unwrap();
        // basicConstraints (2.5.29.19) with cA TRUE.
        let ca_der = der(&ca.pair.cert_pem);
        for pattern in [
            &[0x06, 0x03, 0x55, 0x1d, 0x13][..],
            &[0x30, 0x03, 0x01, 0x01, 0xff],
        ] {
            assert!(ca_der.windows(pattern.len()).any(|w| w == pattern));
        }
        let s = ca
            .serving("kube-apiserver", &["kubernetes.default.svc"])
            .unwrap();
        for name in ["localhost", "127.0.0.1", "kubernetes.default.svc"] {
            as_server(&ca, &s, name).unwrap_or_else(|e| panic!("{name}: {e}"));
        }
        assert!(as_server(&ca, &s, "example.com").is_err());
        // Signed by this CA, not another.
        assert!(as_server(&Ca::generate("u").unwrap(), &s, "localhost").is_err());
        // Serving only: no client authentication.
        assert!(as_client(&ca, &s).is_err());
        assert!(has_name(&s, COMMON_NAME, "kube-apiserver"));
        assert!(s.key_pem.contains("PRIVATE KEY"));
    }

    #[test]
    fn admin_client_cert_is_in_system_masters() {
        let ca = Ca::generate("t").unwrap();
        let c = ca.client("admin", &["system:masters"]).unwrap();
        as_client(&ca, &c).expect("a client certificate of the CA, valid now");
        assert!(has_name(&c, COMMON_NAME, "admin"));
        assert!(has_name(&c, ORGANIZATION, "system:masters"));
        assert!(!has_name(&c, ORGANIZATION, "admin"));
        // Client only: not a serving certificate.
        assert!(as_server(&ca, &c, "localhost").is_err());
    }

    #[test]
    fn service_account_keys_are_a_pair() {
        let (private, public) = service_account_keys().unwrap();
        assert!(private.starts_with("-----BEGIN PRIVATE KEY-----"));
        assert!(public.starts_with("-----BEGIN PUBLIC KEY-----"));
        let again = KeyPair::from_pem(&private).unwrap();
        assert_eq!(again.public_key_pem(), public);
    }
}
