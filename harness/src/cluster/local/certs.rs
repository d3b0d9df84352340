//! The cluster's PKI: one CA, a serving certificate for every TLS endpoint
//! (SANs 127.0.0.1 and localhost), a client certificate per identity, and
//! the service-account signing key pair. Each identity has its own client
//! certificate so the audit log can say who made every request.

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

impl Ca {
    pub fn generate(name: &str) -> Result<Ca> {
        let key = KeyPair::generate().context("generating the CA key")?;
        let mut params = CertificateParams::default();
        params.distinguished_name = dn(&format!("harness-ca-{name}"), &[]);
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        validity(&mut params, 3650);
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
        let mut params = CertificateParams::new(sans).context("serving certificate SANs")?;
        params.distinguished_name = dn(cn, &[]);
        params.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        validity(&mut params, 365);
        self.sign(params)
            .with_context(|| format!("signing the serving certificate {cn}"))
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
    use super::*;
    use x509_parser::extensions::GeneralName;
    use x509_parser::pem::parse_x509_pem;

    fn parse(pem: &str) -> x509_parser::pem::Pem {
        parse_x509_pem(pem.as_bytes()).expect("valid PEM").1
    }

    #[test]
    fn ca_signs_a_serving_cert_with_loopback_sans() {
        let ca = Ca::generate("t").unwrap();
        let ca_pem = parse(&ca.pair.cert_pem);
        let ca_x = ca_pem.parse_x509().unwrap();
        assert!(ca_x.is_ca());
        let s = ca
            .serving("kube-apiserver", &["kubernetes.default.svc"])
            .unwrap();
        let pem = parse(&s.cert_pem);
        let x = pem.parse_x509().unwrap();
        assert_eq!(x.issuer(), ca_x.subject());
        x.verify_signature(Some(ca_x.public_key()))
            .expect("signed by the CA");
        let sans = x.subject_alternative_name().unwrap().unwrap().value;
        let names: Vec<String> = sans
            .general_names
            .iter()
            .map(|n| match n {
                GeneralName::DNSName(d) => d.to_string(),
                GeneralName::IPAddress(ip) => format!("{ip:?}"),
                other => format!("{other:?}"),
            })
            .collect();
        assert!(names.contains(&"localhost".to_string()), "{names:?}");
        assert!(names.contains(&"[127, 0, 0, 1]".to_string()), "{names:?}");
        assert!(
            names.contains(&"kubernetes.default.svc".to_string()),
            "{names:?}"
        );
        assert!(x.extended_key_usage().unwrap().unwrap().value.server_auth);
        assert!(s.key_pem.contains("PRIVATE KEY"));
    }

    #[test]
    fn admin_client_cert_is_in_system_masters() {
        let ca = Ca::generate("t").unwrap();
        let c = ca.client("admin", &["system:masters"]).unwrap();
        let pem = parse(&c.cert_pem);
        let x = pem.parse_x509().unwrap();
        let cn: Vec<_> = x
            .subject()
            .iter_common_name()
            .map(|a| a.as_str().unwrap().to_string())
            .collect();
        let o: Vec<_> = x
            .subject()
            .iter_organization()
            .map(|a| a.as_str().unwrap().to_string())
            .collect();
        assert_eq!(cn, vec!["admin"]);
        assert_eq!(o, vec!["system:masters"]);
        assert!(x.extended_key_usage().unwrap().unwrap().value.client_auth);
        let now = x509_parser::time::ASN1Time::now();
        assert!(x.validity().is_valid_at(now));
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
