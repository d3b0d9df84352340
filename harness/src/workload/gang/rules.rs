//! The rules a gang case must keep before it runs (and what `harness
//! validate` reports for `suites/gang/`): one action per step, an entry for
//! every Kubernetes minor a step runs on (a missing one is an error, never
//! a skip), results only for actions with one, known matchers, variables
//! defined before use.

use serde_json::Value;

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::Result;

use crate::workload::gang::case::{Action, Case, Check, Outcome, Step, minors_of, parse};
use crate::workload::gang::matcher::{check_matcher, parse_path, unclosed_ref, var_refs};
use crate::yaml::Seg;

/// A problem in a case file: where (a path into the document) and what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub at: Vec<Seg>,
    pub message: String,
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: {}",
            crate::yaml::path_string(&self.at),
            self.message
        )
    }
}

fn k(s: &str) -> Seg {
    Seg::Key(s.to_string())
}

fn at(base: &[Seg], more: &[Seg]) -> Vec<Seg> {
    base.iter().chain(more).cloned().collect()
}

/// Load and validate `suites/gang/<name>.yaml`; the error lists every
/// problem.
pub fn load(path: &Path) -> Result<Case> {
    let text = crate::input::read(path)?;
    let origin = path.display().to_string();
    let case = parse(&text, &origin)?;
    let problems = validate(&case);
    if !problems.is_empty() {
        anyhow::bail!(
            "{origin}: {} problem(s):\n{}",
            problems.len(),
            problems
                .iter()
                .map(|p| format!("  {p}"))
                .collect::<Vec<_>>()
                .join("\n")
        );
    }
    Ok(case)
}

/// Check every rule a runner relies on.
pub fn validate(case: &Case) -> Vec<Problem> {
    let all = minors_of(case);
    let mut out = Vec::new();
    let mut p = |at: Vec<Seg>, message: String| out.push(Problem { at, message });
    check_case(case, &all, &mut p);
    // Variables defined so far: the runner's, then captures in order.
    let mut defined: Vec<String> = RUNNER_VARS.iter().map(|s| s.to_string()).collect();
    for (i, s) in case.steps.iter().enumerate() {
        check_step(&[k("steps"), Seg::Index(i)], s, &all, &mut defined, &mut p);
    }
    out
}

/// The rules on the case as a whole: a description, behaviour per minor,
/// steps or a benchmark (and its sizes and repeats), a pool with room.
fn check_case(case: &Case, all: &[&str], p: &mut dyn FnMut(Vec<Seg>, String)) {
    if case.description.trim().is_empty() {
        p(
            vec![k("description")],
            "must say what the case shows".into(),
        );
    }
    per_version(
        &[k("behaviour")],
        case.behaviour.keys().collect(),
        all,
        all,
        p,
    );
    match (&case.benchmark, case.steps.is_empty()) {
        (Some(_), false) => p(
            vec![k("benchmark")],
            "a case has either steps or a benchmark, not both".into(),
        ),
        (None, true) => p(vec![k("steps")], "a case needs at least one step".into()),
        _ => {}
    }
    if let Some(b) = &case.benchmark {
        if b.sizes.is_empty() || b.sizes.iter().any(|s| *s < 2) {
            p(
                vec![k("benchmark"), k("sizes")],
                "gang sizes must be ≥ 2 (a gang of one is not a gang)".into(),
            );
        }
        if b.repeats == 0 {
            p(vec![k("benchmark"), k("repeats")], "must be ≥ 1".into());
        }
    }
    if case.pool.pods == 0 || case.pool.nodes == 0 {
        p(
            vec![k("pool")],
            "a pool needs at least one node with room for a pod".into(),
        );
    }
}

/// The rules on one step at `base`; adds the variables it captures on
/// every version it runs on to `defined`.
fn check_step(
    base: &[Seg],
    s: &Step,
    all: &[&'static str],
    defined: &mut Vec<String>,
    p: &mut dyn FnMut(Vec<Seg>, String),
) {
    let acts = s.actions();
    if acts.len() > 1 {
        let words: Vec<&str> = acts.iter().map(Action::keyword).collect();
        p(
            base.to_vec(),
            format!("one action per step, found {}", words.join(", ")),
        );
    }
    if acts.is_empty() && s.expect.is_none() {
        p(base.to_vec(), "a step needs an action or an expect".into());
    }
    let need = step_minors(base, s, all, p);
    if let Some(r) = &s.result {
        check_result(base, r, &acts, &need, all, p);
    }
    if let Some(v) = &s.apply {
        check_apply(base, v, defined, p);
    }
    check_action_vars(base, s, defined, p);
    if let Some(n) = &s.add_nodes
        && (n.nodes == 0 || n.pods == 0)
    {
        p(
            at(base, &[k("addNodes")]),
            "adds at least one node with room for a pod".into(),
        );
    }
    if let Some(e) = &s.expect {
        check_expect(base, e, &need, all, defined, p);
    }
}

/// The minors a step runs on: those in its `only` (each of which must be
/// one the suite runs), else all of them.
fn step_minors(
    base: &[Seg],
    s: &Step,
    all: &[&'static str],
    p: &mut dyn FnMut(Vec<Seg>, String),
) -> Vec<&'static str> {
    match &s.only {
        Some(o) => {
            for (j, m) in o.iter().enumerate() {
                if !all.contains(&m.as_str()) {
                    p(
                        at(base, &[k("only"), Seg::Index(j)]),
                        format!(
                            "unknown Kubernetes minor {m:?}; the suite runs {}",
                            all.join(", ")
                        ),
                    );
                }
            }
            all.iter()
                .copied()
                .filter(|m| o.iter().any(|x| x == m))
                .collect()
        }
        None => all.to_vec(),
    }
}

/// A step's `result`: only for actions with one, an entry per minor it
/// runs on, and known matchers for rejection messages.
fn check_result(
    base: &[Seg],
    r: &BTreeMap<String, Outcome>,
    acts: &[Action<'_>],
    need: &[&str],
    all: &[&str],
    p: &mut dyn FnMut(Vec<Seg>, String),
) {
    if !acts.iter().any(Action::has_result) {
        p(
            at(base, &[k("result")]),
            "only apply, patch, suspend, resume and delete have a result".into(),
        );
    }
    per_version(&at(base, &[k("result")]), r.keys().collect(), need, all, p);
    for (m, o) in r {
        if let Outcome::Rejected(rej) = o
            && let Some(msg) = &rej.message
            && let Err(e) = check_matcher(msg)
        {
            p(
                at(base, &[k("result"), k(m), k("rejected"), k("message")]),
                e.to_string(),
            );
        }
    }
}

/// A step's `apply`: each object has an apiVersion, a kind and a name but
/// no namespace, and uses only variables already defined.
fn check_apply(base: &[Seg], v: &Value, defined: &[String], p: &mut dyn FnMut(Vec<Seg>, String)) {
    let objs: Vec<&Value> = match v {
        Value::Array(a) => a.iter().collect(),
        o => vec![o],
    };
    let many = v.is_array();
    for (j, o) in objs.iter().enumerate() {
        let oat = if many {
            at(base, &[k("apply"), Seg::Index(j)])
        } else {
            at(base, &[k("apply")])
        };
        for f in ["apiVersion", "kind"] {
            if !o.get(f).is_some_and(Value::is_string) {
                p(oat.clone(), format!("object without {f}"));
            }
        }
        if !o.pointer("/metadata/name").is_some_and(Value::is_string) {
            p(oat.clone(), "object without metadata.name".into());
        }
        if o.pointer("/metadata/namespace").is_some() {
            p(
                at(&oat, &[k("metadata"), k("namespace")]),
                "the runner sets the namespace (each trial has its own)".into(),
            );
        }
    }
    check_vars(&at(base, &[k("apply")]), v, defined, p);
}

/// A step's patch (an object merge) and the names its suspend, resume and
/// complete take: they use only variables already defined.
fn check_action_vars(
    base: &[Seg],
    s: &Step,
    defined: &[String],
    p: &mut dyn FnMut(Vec<Seg>, String),
) {
    if let Some(pt) = &s.patch {
        if !pt.merge.is_object() {
            p(
                at(base, &[k("patch"), k("merge")]),
                "a merge patch is an object".into(),
            );
        }
        let v = serde_json::to_value(pt).unwrap_or_default();
        check_vars(&at(base, &[k("patch")]), &v, defined, p);
    }
    for (what, name) in [
        ("suspend", &s.suspend),
        ("resume", &s.resume),
        ("complete", &s.complete),
    ] {
        if let Some(n) = name {
            check_vars(&at(base, &[k(what)]), &Value::String(n.clone()), defined, p);
        }
    }
}

/// A step's `expect`: an entry per minor it runs on, each with checks;
/// adds to `defined` what every such minor captures.
fn check_expect(
    base: &[Seg],
    e: &BTreeMap<String, Vec<Check>>,
    need: &[&str],
    all: &[&str],
    defined: &mut Vec<String>,
    p: &mut dyn FnMut(Vec<Seg>, String),
) {
    let eat = at(base, &[k("expect")]);
    per_version(&eat, e.keys().collect(), need, all, p);
    let mut captured: Vec<String> = Vec::new();
    for (m, checks) in e {
        if checks.is_empty() {
            p(
                at(&eat, &[k(m)]),
                "no checks: say what the server does on this version".into(),
            );
        }
        let mut local = defined.clone();
        for (j, c) in checks.iter().enumerate() {
            check_check(&at(&eat, &[k(m), Seg::Index(j)]), c, &local, p);
            for var in c.capture.keys() {
                local.push(var.clone());
                if !captured.contains(var) {
                    captured.push(var.clone());
                }
            }
        }
    }
    // A capture is visible to later steps only when every version
    // the step runs on defines it.
    for var in captured {
        if need.iter().all(|m| {
            e.get(*m)
                .is_some_and(|cs| cs.iter().any(|c| c.capture.contains_key(&var)))
        }) {
            defined.push(var);
        }
    }
}

/// Variables every trial has: its namespace, its pool label value and the
/// minor it runs on.
pub const RUNNER_VARS: &[&str] = &["ns", "pool", "minor"];

/// A per-version map must have exactly the versions in `need`.
fn per_version(
    base: &[Seg],
    keys: Vec<&String>,
    need: &[&str],
    all: &[&str],
    p: &mut dyn FnMut(Vec<Seg>, String),
) {
    for m in need {
        if !keys.iter().any(|k| k.as_str() == *m) {
            p(
                base.to_vec(),
                format!(
                    "no entry for Kubernetes {m}: every version the step runs on ({}) needs one — a missing expectation is an error, not a skip",
                    need.join(", ")
                ),
            );
        }
    }
    for key in keys {
        if !all.contains(&key.as_str()) {
            p(
                at(base, &[k(key)]),
                format!(
                    "unknown Kubernetes minor {key:?}; the suite runs {} (quote it: \"1.37\")",
                    all.join(", ")
                ),
            );
        } else if !need.contains(&key.as_str()) {
            p(
                at(base, &[k(key)]),
                format!("this step does not run on {key} (see `only`)"),
            );
        }
    }
}

fn check_check(base: &[Seg], c: &Check, defined: &[String], p: &mut dyn FnMut(Vec<Seg>, String)) {
    if c.kind.is_empty() {
        p(at(base, &[k("kind")]), "empty kind".into());
    }
    for (section, map) in [("where", &c.filter), ("fields", &c.fields)] {
        for (path, matcher) in map {
            let fat = at(base, &[k(section), k(path)]);
            if let Err(e) = parse_path(path) {
                p(fat.clone(), e.to_string());
            }
            if let Err(e) = check_matcher(matcher) {
                p(fat.clone(), e.to_string());
            }
            check_vars(&fat, matcher, defined, p);
        }
    }
    for (var, path) in &c.capture {
        if let Err(e) = parse_path(path) {
            p(at(base, &[k("capture"), k(var)]), e.to_string());
        }
    }
    if let Some(n) = &c.name {
        check_vars(
            &at(base, &[k("name")]),
            &Value::String(n.clone()),
            defined,
            p,
        );
    }
    if let Some(count) = &c.count {
        let ok = count.as_u64().is_some()
            || count.as_object().is_some_and(|o| {
                !o.is_empty()
                    && o.iter()
                        .all(|(k, v)| (k == "$min" || k == "$max") && v.as_u64().is_some())
            });
        if !ok {
            p(
                at(base, &[k("count")]),
                format!("a count is a whole number or {{$min: N, $max: M}}, got {count}"),
            );
        }
    }
    if c.served == Some(false)
        && (!c.fields.is_empty()
            || c.count.is_some()
            || !c.capture.is_empty()
            || !c.filter.is_empty())
    {
        p(
            base.to_vec(),
            "served: false checks only that the kind is not served; drop the other keys".into(),
        );
    }
    if !c.capture.is_empty() && c.count.as_ref().is_some_and(|n| n.as_u64() == Some(0)) {
        p(
            at(base, &[k("capture")]),
            "nothing to capture from when count is 0".into(),
        );
    }
    for (key, v) in [("within", c.within), ("hold", c.hold)] {
        if let Some(s) = v
            && !(0.0..=900.0).contains(&s)
        {
            p(at(base, &[k(key)]), format!("{s} s is outside 0…900 s"));
        }
    }
}

/// Every `${var}` in `v` must be defined by now.
fn check_vars(base: &[Seg], v: &Value, defined: &[String], p: &mut dyn FnMut(Vec<Seg>, String)) {
    match v {
        Value::String(s) => {
            if let Some(e) = unclosed_ref(s) {
                p(base.to_vec(), e);
            }
            for r in var_refs(s) {
                if !defined.contains(&r) {
                    p(
                        base.to_vec(),
                        format!(
                            "${{{r}}} is not defined before this step (defined: {})",
                            defined.join(", ")
                        ),
                    );
                }
            }
        }
        Value::Array(a) => a.iter().for_each(|e| check_vars(base, e, defined, p)),
        Value::Object(m) => m.iter().for_each(|(key, e)| {
            check_vars(base, &Value::String(key.clone()), defined, p);
            check_vars(base, e, defined, p)
        }),
        _ => {}
    }
}
