//! Kubernetes name and label rules (apimachinery's validation, restated).

/// RFC 1123 label: lower-case alphanumerics and '-', starting and ending
/// alphanumeric, at most 63 characters. Used for most object names that
/// become DNS labels (Services, Jobs' pods, namespaces).
pub fn dns1123_label(s: &str) -> Result<(), String> {
    if s.is_empty() || s.len() > 63 {
        return Err(format!("{s:?} must be 1–63 characters (is {})", s.len()));
    }
    let ok_chars = s
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    let ends = |c: Option<char>| c.is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
    if !ok_chars || !ends(s.chars().next()) || !ends(s.chars().last()) {
        return Err(format!(
            "{s:?} is not a DNS-1123 label: lower-case letters, digits and '-', starting and ending with a letter or digit"
        ));
    }
    Ok(())
}

/// RFC 1123 subdomain as Kubernetes checks it: at most 253 characters,
/// dot-separated parts of lower-case alphanumerics and '-' that start and
/// end alphanumeric (no per-part length limit, unlike a DNS label).
pub fn dns1123_subdomain(s: &str) -> Result<(), String> {
    if s.is_empty() || s.len() > 253 {
        return Err(format!("{s:?} must be 1–253 characters (is {})", s.len()));
    }
    let part_ok = |p: &str| {
        !p.is_empty()
            && p.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
            && !p.starts_with('-')
            && !p.ends_with('-')
    };
    if s.split('.').all(part_ok) {
        Ok(())
    } else {
        Err(format!(
            "{s:?} is not a DNS-1123 subdomain: lower-case letters, digits, '-' and '.', each part starting and ending with a letter or digit"
        ))
    }
}

/// A label value: empty, or at most 63 characters of alphanumerics, '-',
/// '_' and '.', starting and ending alphanumeric.
pub fn label_value(s: &str) -> Result<(), String> {
    if s.is_empty() {
        return Ok(());
    }
    if s.len() > 63 {
        return Err(format!(
            "label value {s:?} is longer than 63 characters ({})",
            s.len()
        ));
    }
    let ok = s
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        && s.chars().next().is_some_and(|c| c.is_ascii_alphanumeric())
        && s.chars().last().is_some_and(|c| c.is_ascii_alphanumeric());
    if ok {
        Ok(())
    } else {
        Err(format!("{s:?} is not a valid label value"))
    }
}

/// A label key: optional DNS-subdomain prefix and '/', then a name part of
/// at most 63 characters (the label-value alphabet, non-empty).
pub fn label_key(s: &str) -> Result<(), String> {
    let (prefix, name) = match s.rsplit_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, s),
    };
    if let Some(p) = prefix {
        dns1123_subdomain(p).map_err(|e| format!("label key {s:?}: prefix {e}"))?;
    }
    if name.is_empty() {
        return Err(format!("label key {s:?} has an empty name"));
    }
    label_value(name).map_err(|e| format!("label key {s:?}: {e}"))
}

/// A resource quantity as Kubernetes accepts it ("32", "500m", "256Gi",
/// "1e3"): a decimal number with an optional binary (Ki…Ei) or decimal
/// (n, u, m, k, M, G, T, P, E) suffix or an exponent.
pub fn quantity(s: &str) -> Result<(), String> {
    let bad = || {
        Err(format!(
            "{s:?} is not a Kubernetes quantity (e.g. 32, 500m, 256Gi)"
        ))
    };
    let body = s.strip_prefix(['+', '-']).unwrap_or(s);
    let digits_end = body
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(body.len());
    let (number, suffix) = body.split_at(digits_end);
    let dots = number.matches('.').count();
    if number.is_empty() || number == "." || dots > 1 || s.len() > 64 {
        return bad();
    }
    let exponent_ok = |e: &str| {
        let e = e.strip_prefix(['+', '-']).unwrap_or(e);
        !e.is_empty() && e.len() <= 3 && e.chars().all(|c| c.is_ascii_digit())
    };
    match suffix {
        "" | "n" | "u" | "m" | "k" | "M" | "G" | "T" | "P" | "E" => Ok(()),
        "Ki" | "Mi" | "Gi" | "Ti" | "Pi" | "Ei" => Ok(()),
        e if (e.starts_with('e') || e.starts_with('E')) && exponent_ok(&e[1..]) => Ok(()),
        _ => bad(),
    }
}

/// A quantity above zero (a node's CPU or memory): `quantity`, without a
/// minus sign and with a non-zero digit.
pub fn positive_quantity(s: &str) -> Result<(), String> {
    quantity(s)?;
    let mantissa = s
        .split(['e', 'E'])
        .next()
        .unwrap_or_default()
        .trim_start_matches('+');
    if mantissa.starts_with('-') || !mantissa.chars().any(|c| ('1'..='9').contains(&c)) {
        return Err(format!("{s:?} is not more than zero"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positive_quantities() {
        for ok in ["32", "500m", "256Gi", "1e3", "0.5", "+2"] {
            positive_quantity(ok).unwrap();
        }
        for bad in ["0", "0.0", "-1", "0e3", "banana", "lots", "", "0Gi"] {
            assert!(positive_quantity(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn labels_and_names() {
        dns1123_label("thorworker-job-thor-abc12-1").unwrap();
        assert!(dns1123_label("Thor").is_err());
        assert!(dns1123_label("-x").is_err());
        assert!(dns1123_label(&"a".repeat(64)).is_err());
        dns1123_label(&"a".repeat(63)).unwrap();
        dns1123_subdomain("jobsets.jobset.x-k8s.io").unwrap();
        assert!(dns1123_subdomain("a..b").is_err());
        assert!(dns1123_subdomain("a-.b").is_err());
        dns1123_subdomain(&"n".repeat(200)).unwrap();
        assert!(dns1123_subdomain(&"n".repeat(254)).is_err());
        label_value("").unwrap();
        label_value("Thor_1.x").unwrap();
        assert!(label_value("-x").is_err());
        assert!(label_value(&"v".repeat(64)).is_err());
        label_key("jobset.sigs.k8s.io/jobset-name").unwrap();
        label_key("app").unwrap();
        assert!(label_key("a/b/c").is_err());
        assert!(label_key("example.com/").is_err());
    }

    #[test]
    fn quantities() {
        for ok in ["32", "500m", "256Gi", "1.5", "1e3", "0.5Ti", "+4k"] {
            assert!(quantity(ok).is_ok(), "{ok}");
        }
        for bad in ["banana", "", "1.2.3", "Gi", "5 Gi", "12XB", "1e", "1e4000"] {
            assert!(quantity(bad).is_err(), "{bad}");
        }
    }
}
