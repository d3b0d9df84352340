//! A case's checks: list the objects of a kind, judge them against the
//! check (which match, how many, which fields), poll until it holds (and
//! keeps holding), and compare an action's outcome with the expected one.
//! A mismatch is a diff of expected and observed fields.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use kube::api::ListParams;
use serde_json::Value;

use crate::cluster::Cluster;
use crate::workload::gang::case::{Check, Outcome};
use crate::workload::gang::matcher::{
    describe, lookup, matches, parse_path, scalar_text, subst_str, substitute,
};
use crate::workload::gang::trial::Trial;

const DEFAULT_WITHIN: f64 = 30.0;

impl<C: Cluster> Trial<'_, C> {
    /// Poll a check until it holds (then for `hold` seconds more).
    pub(super) async fn expect(&mut self, c: &Check) -> Result<String> {
        let within = Duration::from_secs_f64(c.within.unwrap_or(DEFAULT_WITHIN));
        let hold = Duration::from_secs_f64(c.hold.unwrap_or(0.0));
        let start = Instant::now();
        let mut held_since: Option<Instant> = None;
        loop {
            let ev = self.evaluate(c).await?;
            match (ev.ok, held_since) {
                (true, None) => held_since = Some(Instant::now()),
                (false, Some(since)) => bail!(
                    "held for {:.1} s of the required {:.1} s, then:\n{}",
                    since.elapsed().as_secs_f64(),
                    hold.as_secs_f64(),
                    ev.diff
                ),
                _ => {}
            }
            if let Some(since) = held_since
                && since.elapsed() >= hold
            {
                for (var, v) in ev.captures {
                    self.vars.insert(var, v);
                }
                return Ok(ev.summary);
            }
            if held_since.is_none() && start.elapsed() > within {
                bail!("not met within {:.0} s:\n{}", within.as_secs_f64(), ev.diff);
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    async fn evaluate(&mut self, c: &Check) -> Result<Eval> {
        let served = self
            .resolve(c.api_version.as_deref(), &c.kind)
            .await?
            .is_some();
        if c.served == Some(false) || !served {
            let want = c.served.unwrap_or(true);
            let av = c
                .api_version
                .clone()
                .or_else(|| self.default_api_version(&c.kind))
                .unwrap_or_default();
            return Ok(Eval {
                ok: served == want,
                summary: format!("{av} {} {}served", c.kind, if served { "" } else { "not " }),
                diff: format!(
                    "  {av} {}: expected {}served, observed {}served",
                    c.kind,
                    if want { "" } else { "not " },
                    if served { "" } else { "not " }
                ),
                captures: BTreeMap::new(),
            });
        }
        let api = self.api(c.api_version.as_deref(), &c.kind).await?;
        let objs: Vec<Value> = api
            .list(&ListParams::default())
            .await
            .with_context(|| format!("listing {}", c.kind))?
            .items
            .into_iter()
            .map(serde_json::to_value)
            .collect::<std::result::Result<_, _>>()?;
        judge(c, objs, &self.vars)
    }
}

/// Judge a check against the listed objects of its kind: which match, is
/// the count right, does every matched object have the fields (a diff of
/// expected vs observed when not), and what to capture.
pub fn judge(c: &Check, objs: Vec<Value>, vars: &BTreeMap<String, String>) -> Result<Eval> {
    let (name, matched) = matching(c, objs, vars)?;
    let mut diff = String::new();
    let n = matched.len() as u64;
    let count_ok = count_holds(c.count.as_ref(), n)?;
    let what = described(c, name.as_deref());
    if !count_ok {
        diff.push_str(&format!(
            "  count of {what}: expected {}, observed {n}{}\n",
            c.count
                .as_ref()
                .map(describe)
                .unwrap_or_else(|| "at least 1".into()),
            names_of(&matched)
        ));
    }
    field_diffs(c, &matched, vars, &mut diff)?;
    let captures = captured(c, &matched, &mut diff)?;
    let mut summary = format!("{what}: {n}{}", names_of(&matched));
    if !captures.is_empty() {
        summary.push_str(&format!(
            " [{}]",
            captures
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    Ok(Eval {
        ok: diff.is_empty(),
        summary,
        diff: diff.trim_end().to_string(),
        captures,
    })
}

/// The check's object name (variables substituted) and the objects, by
/// name, of that name that every `where` matcher matches.
fn matching(
    c: &Check,
    mut objs: Vec<Value>,
    vars: &BTreeMap<String, String>,
) -> Result<(Option<String>, Vec<Value>)> {
    objs.sort_by_key(|o| {
        o["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    });
    let name = c.name.as_ref().map(|n| subst_str(n, vars)).transpose()?;
    let mut filter = Vec::new();
    for (path, m) in &c.filter {
        filter.push((parse_path(path)?, substitute(m, vars)?));
    }
    let mut matched = Vec::new();
    for o in objs {
        if name
            .as_ref()
            .is_some_and(|n| o["metadata"]["name"].as_str() != Some(n))
        {
            continue;
        }
        let mut keep = true;
        for (p, m) in &filter {
            keep &= matches(m, lookup(&o, p))?;
        }
        if keep {
            matched.push(o);
        }
    }
    Ok((name, matched))
}

/// Whether `n` matched objects meet the check's count (at least 1 when
/// none is given; an exact number, or `$min` and `$max`).
fn count_holds(count: Option<&Value>, n: u64) -> Result<bool> {
    Ok(match count {
        None => n >= 1,
        Some(Value::Number(x)) => Some(n) == x.as_u64(),
        Some(Value::Object(o)) => {
            o.get("$min").and_then(Value::as_u64).is_none_or(|m| n >= m)
                && o.get("$max").and_then(Value::as_u64).is_none_or(|m| n <= m)
        }
        Some(other) => bail!("bad count {other}"),
    })
}

/// What the check looks at, in words: the object of its name, or the
/// objects of its kind with its `where` matchers.
fn described(c: &Check, name: Option<&str>) -> String {
    match (name, c.filter.is_empty()) {
        (Some(n), _) => format!("{} {n}", c.kind),
        (None, true) => format!("{} objects", c.kind),
        (None, false) => format!(
            "{} objects where {}",
            c.kind,
            c.filter
                .iter()
                .map(|(p, m)| format!("{p} {}", describe(m)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// Adds to `diff`, per matched object, each field of the check it does
/// not have (expected against observed).
fn field_diffs(
    c: &Check,
    matched: &[Value],
    vars: &BTreeMap<String, String>,
    diff: &mut String,
) -> Result<()> {
    let mut fields = Vec::new();
    for (path, m) in &c.fields {
        fields.push((path.as_str(), parse_path(path)?, substitute(m, vars)?));
    }
    for o in matched {
        let mut lines = Vec::new();
        for (text, p, m) in &fields {
            let got = lookup(o, p);
            if !matches(m, got)? {
                lines.push(format!(
                    "    - {text}: expected {}, observed {}",
                    describe(m),
                    got.map(|g| g.to_string())
                        .unwrap_or_else(|| "(absent)".into())
                ));
            }
        }
        if !lines.is_empty() {
            diff.push_str(&format!(
                "  {} {}:\n{}\n",
                c.kind,
                o["metadata"]["name"].as_str().unwrap_or("?"),
                lines.join("\n")
            ));
        }
    }
    Ok(())
}

/// The check's captures from the first matched object once `diff` is
/// empty; a capture still absent adds to `diff`.
fn captured(c: &Check, matched: &[Value], diff: &mut String) -> Result<BTreeMap<String, String>> {
    // Captured once the check holds; a value still absent then is a
    // check not met yet (polled again), never an error before its time.
    let mut captures = BTreeMap::new();
    if let Some(first) = matched.first().filter(|_| diff.is_empty()) {
        for (var, path) in &c.capture {
            match lookup(first, &parse_path(path)?) {
                Some(v) => {
                    captures.insert(var.clone(), scalar_text(v));
                }
                None => diff.push_str(&format!(
                    "  capture {var}: {path} is absent on {}\n",
                    first["metadata"]["name"]
                )),
            }
        }
    }
    Ok(captures)
}

pub struct Eval {
    pub ok: bool,
    pub summary: String,
    pub diff: String,
    pub captures: BTreeMap<String, String>,
}

fn names_of(objs: &[Value]) -> String {
    if objs.is_empty() {
        return String::new();
    }
    let names: Vec<&str> = objs
        .iter()
        .take(3)
        .filter_map(|o| o["metadata"]["name"].as_str())
        .collect();
    let more = if objs.len() > 3 {
        format!(", … {} more", objs.len() - 3)
    } else {
        String::new()
    };
    format!(" ({}{more})", names.join(", "))
}

/// Compare what the server did with the expected outcome; the observation
/// on a match, an error on a mismatch.
pub fn outcome(
    expected: Option<&Outcome>,
    got: std::result::Result<(), kube::Error>,
    what: &str,
) -> Result<String> {
    let expected = expected.cloned().unwrap_or(Outcome::Accepted);
    match (expected, got) {
        (Outcome::Accepted, Ok(())) => Ok(format!("{what}: accepted")),
        (Outcome::Accepted, Err(kube::Error::Api(s))) => bail!(
            "{what}: expected the server to accept it; it rejected it: {} {}: {}",
            s.code,
            s.reason,
            s.message
        ),
        (Outcome::Rejected(r), Ok(())) => bail!(
            "{what}: expected the server to reject it ({}); it accepted it",
            rejection_text(&r)
        ),
        (Outcome::Rejected(r), Err(kube::Error::Api(s))) => {
            let mut bad = Vec::new();
            if r.code.is_some_and(|c| c != s.code) {
                bad.push(format!(
                    "code: expected {}, observed {}",
                    r.code.unwrap_or_default(),
                    s.code
                ));
            }
            if r.reason.as_ref().is_some_and(|x| *x != s.reason) {
                bad.push(format!(
                    "reason: expected {:?}, observed {:?}",
                    r.reason.clone().unwrap_or_default(),
                    s.reason
                ));
            }
            if let Some(m) = &r.message
                && !matches(m, Some(&Value::String(s.message.clone())))?
            {
                bad.push(format!(
                    "message: expected {}, observed {:?}",
                    describe(m),
                    s.message
                ));
            }
            if bad.is_empty() {
                Ok(format!(
                    "{what}: rejected, {} {}: {}",
                    s.code, s.reason, s.message
                ))
            } else {
                bail!(
                    "{what}: rejected, but not as expected:\n  {}",
                    bad.join("\n  ")
                )
            }
        }
        // Not an answer of the API server (connection, TLS, decoding).
        (_, Err(e)) => Err(e).with_context(|| what.to_string()),
    }
}

fn rejection_text(r: &crate::workload::gang::case::Rejection) -> String {
    let mut parts = Vec::new();
    if let Some(c) = r.code {
        parts.push(c.to_string());
    }
    if let Some(x) = &r.reason {
        parts.push(x.clone());
    }
    if let Some(m) = &r.message {
        parts.push(format!("message {}", describe(m)));
    }
    parts.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn check(yaml: &str) -> Check {
        serde_json::from_value(crate::yaml::parse(yaml).unwrap()[0].root.to_json()).unwrap()
    }

    fn pg(name: &str, min: u32, scheduled: &str) -> Value {
        json!({"metadata": {"name": name, "ownerReferences": [{"kind": "Job", "name": "train", "controller": true}]},
               "spec": {"schedulingPolicy": {"gang": {"minCount": min}}},
               "status": {"conditions": [{"type": "PodGroupScheduled", "status": scheduled}]}})
    }

    #[test]
    fn judge_matches_counts_and_captures() {
        let vars = BTreeMap::from([("job".to_string(), "train".to_string())]);
        let c = check(
            "kind: PodGroup\nwhere: {\"status.conditions[type=PodGroupScheduled].status\": \"True\"}\ncount: 1\nfields:\n  metadata.ownerReferences[kind=Job].name: ${job}\n  spec.schedulingPolicy.gang.minCount: 4\ncapture: {winner: metadata.name}\n",
        );
        let e = judge(&c, vec![pg("b", 4, "True"), pg("a", 4, "False")], &vars).unwrap();
        assert!(e.ok, "{}", e.diff);
        assert_eq!(e.captures["winner"], "b");
        assert!(e.summary.contains(": 1 (b)"), "{}", e.summary);
        // A capture whose value is not there yet: not met (polled again),
        // not an error.
        let later = check("kind: PodGroup\ncapture: {active: status.active}\n");
        let e = judge(&later, vec![pg("b", 4, "True")], &vars).unwrap();
        assert!(!e.ok);
        assert!(
            e.diff.contains("capture active: status.active is absent"),
            "{}",
            e.diff
        );
        assert!(e.captures.is_empty());
    }

    #[test]
    fn a_mismatch_is_a_diff_of_expected_and_observed_fields() {
        let c = check(
            "kind: PodGroup\nfields:\n  spec.schedulingPolicy.gang.minCount: 4\n  spec.workloadRef.workloadName: {$prefix: train-}\n",
        );
        let e = judge(
            &c,
            vec![pg("a", 3, "True"), pg("b", 4, "True")],
            &BTreeMap::new(),
        )
        .unwrap();
        assert!(!e.ok);
        assert!(
            e.diff.contains(
                "PodGroup a:\n    - spec.schedulingPolicy.gang.minCount: expected 4, observed 3"
            ),
            "{}",
            e.diff
        );
        assert!(
            e.diff.contains(
                "- spec.workloadRef.workloadName: expected $prefix \"train-\", observed (absent)"
            ),
            "{}",
            e.diff
        );
        assert!(e.diff.contains("PodGroup b:"), "b lacks workloadRef too");
        // Count mismatches name what was found.
        let c = check("kind: PodGroup\ncount: 0\n");
        let e = judge(&c, vec![pg("a", 3, "True")], &BTreeMap::new()).unwrap();
        assert!(!e.ok);
        assert!(
            e.diff
                .contains("count of PodGroup objects: expected 0, observed 1 (a)"),
            "{}",
            e.diff
        );
        // Default: at least one.
        let c = check("kind: Workload\n");
        assert!(!judge(&c, vec![], &BTreeMap::new()).unwrap().ok);
    }

    fn api_err(code: u16, reason: &str, message: &str) -> kube::Error {
        kube::Error::Api(Box::new(kube::core::Status {
            code,
            reason: reason.into(),
            message: message.into(),
            ..Default::default()
        }))
    }

    #[test]
    fn outcomes_compare_code_reason_and_message() {
        let rej = Outcome::Rejected(super::super::case::Rejection {
            code: Some(403),
            reason: Some("Forbidden".into()),
            message: Some(json!({"$contains": "cannot change parallelism"})),
        });
        let seen = outcome(
            Some(&rej),
            Err(api_err(
                403,
                "Forbidden",
                "x: cannot change parallelism for y",
            )),
            "patch",
        )
        .unwrap();
        assert!(seen.contains("rejected, 403 Forbidden"), "{seen}");
        let e = outcome(Some(&rej), Ok(()), "patch")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("expected the server to reject") && e.contains("403 Forbidden"),
            "{e}"
        );
        let e = outcome(
            Some(&rej),
            Err(api_err(422, "Invalid", "minCount")),
            "patch",
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("code: expected 403, observed 422")
                && e.contains("reason")
                && e.contains("message"),
            "{e}"
        );
        let e = outcome(None, Err(api_err(422, "Invalid", "nope")), "apply")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("expected the server to accept it") && e.contains("nope"),
            "{e}"
        );
        assert_eq!(outcome(None, Ok(()), "apply").unwrap(), "apply: accepted");
    }
}
