//! Hostile result files (issue 53): result.json files whose numbers,
//! fields and shapes lie — a shard of 0 shards, a run set of 2^64 − 1
//! rounds, a lost round past the set, a run's round at 2^32 − 1, numbers
//! past u64 and f64, older shapes without repeats — generated from cut-down
//! copies of committed results (harness/fuzz/corpus/) and run through the
//! built binary's `report merge`, `report render` (with and without
//! `--rejudge`), `report history`, `report headline` and `report
//! calibrate`. Each case has its exit code and a text it must say (the
//! file and the field, for a refusal: the book's docs/src/reports.md says
//! what a result holds); none may panic, abort, run past its bound or
//! grow past the address-space cap, and none may be accepted silently.
//! Every committed result `report render` reads (the book's and the
//! suites') renders and is judged again, beside the older shapes made
//! from them. A table and the summary figures are printed
//! (`--nocapture`); a run's peak RSS is wait4's, which counts the test
//! process's pages the child had between fork and exec (a floor of ~50
//! MiB here).
//!
//! No cluster, binary download or network is needed.

mod common;

use common::capped::Run;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// The address-space cap of every run: reading and rendering a result
/// stays far below it; a run that allocates what a claim says hits it.
const AS_CAP: u64 = 2 << 30;
/// Every case's bound: a debug build renders a small result in well
/// under a second.
const BOUND: Duration = Duration::from_secs(10);

/// Run `harness args…` under the address-space cap; SIGKILL it past
/// twice the bound.
fn run(args: &[String]) -> Run {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_harness"));
    cmd.args(args);
    common::capped::run(cmd, AS_CAP, 2 * BOUND)
}

/// A committed seed, parsed.
fn seed(rel: &str) -> Value {
    let p = common::repo_root().join(rel);
    serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap()
}

/// `v` with `value` at the JSON pointer `at` (its parent must exist; the
/// last step is a key or an index).
fn set(mut v: Value, at: &str, value: Value) -> Value {
    let (parent, key) = at.rsplit_once('/').unwrap();
    let p = v.pointer_mut(parent).unwrap_or_else(|| panic!("{parent}"));
    match p {
        Value::Array(a) => a[key.parse::<usize>().unwrap()] = value,
        _ => p[key] = value,
    }
    v
}

/// `v` without the field at `at`.
fn remove(mut v: Value, at: &str) -> Value {
    let (parent, key) = at.rsplit_once('/').unwrap();
    if let Some(Value::Object(o)) = v.pointer_mut(parent) {
        o.remove(key);
    }
    v
}

/// Every mode's `field` of `v` (Thor: `/modes`; measure:
/// `/figures/modes`) set to `value`, or removed when `value` is None.
fn each_mode(mut v: Value, modes: &str, field: &str, value: Option<Value>) -> Value {
    if let Some(Value::Object(ms)) = v.pointer_mut(modes) {
        for m in ms.values_mut() {
            match &value {
                Some(x) => m[field] = x.clone(),
                None => {
                    m.as_object_mut().unwrap().remove(field);
                }
            }
        }
    }
    v
}

/// A result whose text is not JSON a number fits in: `v` written, then
/// `from` replaced by `to` once.
#[derive(Clone)]
enum Body {
    Json(Value),
    Text(String),
}

fn text_edit(v: &Value, from: &str, to: &str) -> Body {
    let s = serde_json::to_string_pretty(v).unwrap();
    assert!(s.contains(from), "{from}");
    Body::Text(s.replacen(from, to, 1))
}

#[derive(Clone, Copy, PartialEq)]
enum Cmd {
    Render,
    Rejudge,
    /// Merged with the twin shard (2/2 of the seed's run set).
    Merge,
    /// A series of the case's result and a sound one.
    History,
    Headline,
    Calibrate,
}

impl Cmd {
    fn name(self) -> &'static str {
        match self {
            Cmd::Render => "render",
            Cmd::Rejudge => "render --rejudge",
            Cmd::Merge => "merge",
            Cmd::History => "history",
            Cmd::Headline => "headline",
            Cmd::Calibrate => "calibrate",
        }
    }
}

/// One hostile result and what each command must do with it.
struct Case {
    name: String,
    body: Body,
    /// The twin shard `merge` joins it with, when not the seed's own.
    twin: Option<Value>,
    cmd: Cmd,
    want: i32,
    says: String,
}

/// The cut-down seeds: a Thor shard (1/2 of 6 rounds, 3 rounds run), a
/// whole Thor run set, a measure shard (1/2 of 2 rounds) and the twin
/// shards that merge with them.
struct Seeds {
    thor_shard: Value,
    thor_twin: Value,
    thor_whole: Value,
    measure: Value,
    measure_twin: Value,
    /// A cron shard 1/2 of 2 rounds and a gang run set of 2 rounds.
    cron: Value,
    gang: Value,
}

fn seeds() -> Seeds {
    let thor_shard = seed("harness/fuzz/corpus/thor-result/thor-shard.json");
    let thor_twin = set(
        set(thor_shard.clone(), "/statistics/shard/k", json!(2)),
        "/statistics/shard/first",
        json!(3),
    );
    let measure = seed("harness/fuzz/corpus/measure-result/kubectl-job-shard.json");
    let mut measure_twin = set(
        set(measure.clone(), "/figures/statistics/shard/k", json!(2)),
        "/figures/statistics/shard/first",
        json!(1),
    );
    measure_twin["runs"][0]["round"] = json!(1);
    Seeds {
        thor_shard,
        thor_twin,
        thor_whole: seed("harness/fuzz/corpus/thor-result/thor-whole.json"),
        measure,
        measure_twin,
        cron: seed("harness/fuzz/corpus/cron-result/shard-1-of-2.json"),
        gang: seed("harness/fuzz/corpus/gang-result/two-rounds.json"),
    }
}

/// `body` under each of `cmds`, each to exit `want` saying `says`.
fn add(cases: &mut Vec<Case>, name: &str, body: Body, cmds: &[Cmd], want: i32, says: &str) {
    for &cmd in cmds {
        cases.push(Case {
            name: name.to_string(),
            body: body.clone(),
            twin: None,
            cmd,
            want,
            says: says.to_string(),
        });
    }
}

const READ_CMDS: &[Cmd] = &[Cmd::Render, Cmd::Rejudge, Cmd::Merge];

/// The corpus: each hostile result under each command that reads it.
fn corpus(s: &Seeds) -> Vec<Case> {
    let mut cases = Vec::new();
    let max = json!(u64::MAX);
    let thor = |at: &str, v: Value| Body::Json(set(s.thor_shard.clone(), at, v));
    let thor_all: Vec<Cmd> = [READ_CMDS, &[Cmd::History]].concat();
    // A shard's place that does not fit.
    let shard_cases: Vec<(&str, &str, Value, &str)> = vec![
        (
            "shard n 0",
            "/statistics/shard/n",
            json!(0),
            "statistics.shard.n: 0 shards",
        ),
        (
            "shard k 0",
            "/statistics/shard/k",
            json!(0),
            "statistics.shard.k: shard 0 of 2",
        ),
        (
            "shard k > n",
            "/statistics/shard/k",
            json!(3),
            "statistics.shard.k: shard 3 of 2",
        ),
        (
            "shard of 2^32",
            "/statistics/shard/of",
            json!(1u64 << 32),
            "statistics.shard.of",
        ),
        (
            "shard of 2^64-1",
            "/statistics/shard/of",
            max.clone(),
            "statistics.shard.of",
        ),
        (
            "shard of 0",
            "/statistics/shard/of",
            json!(0),
            "statistics.shard.n: 2 shards of 0 rounds",
        ),
        (
            "shard first 2^64-1",
            "/statistics/shard/first",
            max.clone(),
            "statistics.shard.first",
        ),
        (
            "shard first past of",
            "/statistics/shard/first",
            json!(4),
            "statistics.shard.first: rounds from 4 on",
        ),
        (
            "shard n 2^32-1",
            "/statistics/shard/n",
            json!(u32::MAX),
            "statistics.shard.n: 4294967295 shards of 6",
        ),
        (
            "shard n 2^32",
            "/statistics/shard/n",
            json!(1u64 << 32),
            "expected u32",
        ),
        (
            "shard k -1",
            "/statistics/shard/k",
            json!(-1),
            "expected u32",
        ),
        (
            "shard first -1",
            "/statistics/shard/first",
            json!(-1),
            "expected usize",
        ),
        (
            "shard of 0.5",
            "/statistics/shard/of",
            json!(0.5),
            "expected usize",
        ),
        (
            "shard of string",
            "/statistics/shard/of",
            json!("6"),
            "expected usize",
        ),
        (
            "lost round 2^64-1",
            "/statistics/lost_rounds",
            json!([u64::MAX]),
            "statistics.lost_rounds[0]",
        ),
        (
            "lost round past set",
            "/statistics/lost_rounds",
            json!([6]),
            "statistics.lost_rounds[0]: round 6",
        ),
        (
            "confidence 0",
            "/statistics/confidence",
            json!(0),
            "statistics.confidence: 0",
        ),
        (
            "confidence -1",
            "/statistics/confidence",
            json!(-1),
            "statistics.confidence: -1",
        ),
        (
            "confidence 2^64-1",
            "/statistics/confidence",
            max.clone(),
            "statistics.confidence",
        ),
        ("seed -1", "/statistics/seed", json!(-1), "expected u64"),
    ];
    // Gang's and cron's results are the core's Result too: the same
    // claims refused the same way (a cron shard 1/2 of 2 rounds; a gang
    // run set of 2 rounds made a shard 1/1 of them). The cases whose
    // message names the Thor seed's own numbers are Thor's only.
    let seed_bound = [
        "shard of 0",
        "shard first past of",
        "shard n 2^32-1",
        "lost round past set",
    ];
    let mut gang = s.gang.clone();
    gang["statistics"]["shard"] = json!({"k": 1, "n": 1, "first": 0, "of": 2});
    for (name, at, v, says) in &shard_cases {
        if seed_bound.contains(name) {
            continue;
        }
        for (w, base) in [("cron", &s.cron), ("gang", &gang)] {
            let says = match (*name, w) {
                ("shard k > n", "gang") => "statistics.shard.k: shard 3 of 1",
                ("shard k 0", "gang") => "statistics.shard.k: shard 0 of 1",
                _ => says,
            };
            let body = Body::Json(set(base.clone(), at, v.clone()));
            add(
                &mut cases,
                &format!("{w}: {name}"),
                body,
                READ_CMDS,
                2,
                says,
            );
        }
    }
    for (name, at, v, says) in shard_cases {
        add(&mut cases, name, thor(at, v), &thor_all, 2, says);
    }
    // The tester's case: a shard 1/(2^32 − 1) of 2^32 − 1 rounds, one round
    // run — the merge allocated every round the set claims.
    let mut claim = s.thor_shard.clone();
    claim["statistics"]["shard"] = json!({"k": 1, "n": u32::MAX, "first": 0, "of": u32::MAX});
    claim["statistics"]["rounds"] = json!([["baseline", "jobset", "jobset-gang"]]);
    add(
        &mut cases,
        "shard of 2^32-1 rounds, 1 run",
        Body::Json(claim.clone()),
        &thor_all,
        2,
        "statistics.shard.of: a run set of 4294967295 rounds",
    );
    // …and merged with its twin 2/(2^32 − 1): the merge walked and kept
    // every round the set claims no shard brought.
    let mut twin = claim.clone();
    twin["statistics"]["shard"]["k"] = json!(2);
    twin["statistics"]["shard"]["first"] = json!(1);
    cases.push(Case {
        name: "shards of 2^32-1 rounds, merged".into(),
        body: Body::Json(claim.clone()),
        twin: Some(twin),
        cmd: Cmd::Merge,
        want: 2,
        says: "statistics.shard.of: a run set of 4294967295 rounds".into(),
    });
    let rounds = json!(vec![Vec::<String>::new(); 100_001]);
    add(
        &mut cases,
        "100001 rounds",
        Body::Json(set(s.thor_whole.clone(), "/statistics/rounds", rounds)),
        READ_CMDS,
        2,
        "statistics.rounds: 100001 rounds",
    );
    // A merged set's shards and rounds.
    let whole = |at: &str, v: Value| Body::Json(set(s.thor_whole.clone(), at, v));
    let merged =
        |k: Value, rounds: Value| json!([{"k": k, "rounds": rounds, "started": "", "from": "x"}]);
    add(
        &mut cases,
        "merged shard k 0",
        whole("/statistics/merged", merged(json!(0), json!([0]))),
        &[Cmd::Render, Cmd::Rejudge, Cmd::History],
        2,
        "statistics.merged[0].k",
    );
    add(
        &mut cases,
        "merged round 2^64-1",
        whole("/statistics/merged", merged(json!(1), json!([u64::MAX]))),
        &[Cmd::Render, Cmd::Rejudge, Cmd::History],
        2,
        "statistics.merged[0].rounds[0]",
    );
    add(
        &mut cases,
        "merged rounds past set",
        whole(
            "/statistics/merged",
            merged(json!(1), json!([0, 1, 2, 3, 4])),
        ),
        &[Cmd::Render, Cmd::Rejudge],
        2,
        "statistics.merged[0].rounds: 5 rounds of a run set of 2",
    );
    add(
        &mut cases,
        "lost rounds 2^64-1 of whole",
        whole("/statistics/lost_rounds", json!([u64::MAX, 0])),
        &[Cmd::Render, Cmd::Rejudge],
        2,
        "statistics.lost_rounds[0]",
    );
    // Numbers JSON or the field's type has no room for.
    let v = &s.thor_shard;
    add(
        &mut cases,
        "seed 2^64",
        text_edit(v, "\"seed\": 11", "\"seed\": 18446744073709551616"),
        READ_CMDS,
        2,
        "result.json:",
    );
    add(
        &mut cases,
        "confidence 1e400",
        text_edit(v, "\"confidence\": 0.95", "\"confidence\": 1e400"),
        READ_CMDS,
        2,
        "result.json:",
    );
    add(
        &mut cases,
        "confidence NaN",
        text_edit(v, "\"confidence\": 0.95", "\"confidence\": NaN"),
        READ_CMDS,
        2,
        "result.json:",
    );
    add(
        &mut cases,
        "shard k Infinity",
        text_edit(v, "\"k\": 1", "\"k\": Infinity"),
        READ_CMDS,
        2,
        "result.json:",
    );
    add(
        &mut cases,
        "truncated",
        Body::Text(serde_json::to_string_pretty(v).unwrap()[..5000].to_string()),
        READ_CMDS,
        2,
        "EOF while parsing",
    );
    add(
        &mut cases,
        "statistics a list",
        Body::Json(set(v.clone(), "/statistics", json!([]))),
        READ_CMDS,
        2,
        "invalid length 0, expected struct Statistics",
    );
    // A shard and its twin that do not make one run set.
    let mut t = Case {
        name: "twin of another run set".into(),
        body: Body::Json(s.thor_shard.clone()),
        twin: Some(set(s.thor_twin.clone(), "/statistics/shard/of", json!(7))),
        cmd: Cmd::Merge,
        want: 2,
        says: "run set: 2 shards of 6 rounds against 2 shards of 7 rounds".into(),
    };
    cases.push(t);
    t = Case {
        name: "twin is the same shard".into(),
        body: Body::Json(s.thor_shard.clone()),
        twin: Some(s.thor_shard.clone()),
        cmd: Cmd::Merge,
        want: 2,
        says: "given twice".into(),
    };
    cases.push(t);
    let mut short = s.thor_shard.clone();
    short["statistics"]["rounds"].as_array_mut().unwrap().pop();
    cases.push(Case {
        name: "shard cut short".into(),
        body: Body::Json(short),
        twin: None,
        cmd: Cmd::Merge,
        want: 2,
        says: "a shard cut short".into(),
    });
    // Older shapes the code still reads: they render and are judged again.
    let no_repeats = each_mode(s.thor_whole.clone(), "/modes", "repeats", Some(json!([])));
    add(
        &mut cases,
        "older: no repeats",
        Body::Json(no_repeats.clone()),
        &[Cmd::Render, Cmd::Rejudge],
        0,
        "API requests (all clients but the harness)",
    );
    let mut oldest = each_mode(no_repeats, "/modes", "stats", None);
    oldest = each_mode(oldest, "/modes", "vs_reference", None);
    for f in [
        "/scenario_file",
        "/model",
        "/harness_peak_rss_kib",
        "/statistics",
        "/machine",
        "/capabilities",
    ] {
        oldest = remove(oldest, f);
    }
    add(
        &mut cases,
        "older: no repeats, stats or statistics",
        Body::Json(oldest),
        &[Cmd::Render, Cmd::Rejudge],
        0,
        "API requests (all clients but the harness)",
    );
    let mut no_stats = each_mode(s.thor_whole.clone(), "/modes", "stats", None);
    no_stats = remove(no_stats, "/statistics");
    add(
        &mut cases,
        "older: no stats, no statistics",
        Body::Json(no_stats),
        &[Cmd::Render, Cmd::Rejudge, Cmd::History],
        0,
        "",
    );
    add(
        &mut cases,
        "a sound shard",
        Body::Json(s.thor_shard.clone()),
        &[Cmd::Render, Cmd::Rejudge],
        0,
        "Shard 1/2 of a run set of 6 rounds",
    );
    add(
        &mut cases,
        "a sound shard merged",
        Body::Json(s.thor_shard.clone()),
        &[Cmd::Merge],
        0,
        "Merged from 2 shards",
    );
    // Counts that fit their type but not a sum of them: each run's sums
    // of watch events and objects created (the fuzz target found these).
    let mut huge = s.thor_shard.clone();
    for r in huge["modes"]["baseline"]["repeats"].as_array_mut().unwrap() {
        for e in r["watch_events"].as_object_mut().unwrap().values_mut() {
            e["bytes"] = json!(u64::MAX);
        }
        for v in r["objects_created"].as_object_mut().unwrap().values_mut() {
            *v = json!(u64::MAX);
        }
    }
    add(
        &mut cases,
        "counts of 2^64-1 summed",
        Body::Json(huge),
        &[Cmd::Render, Cmd::Rejudge, Cmd::Merge],
        0,
        "API requests (all clients but the harness)",
    );
    // measure's result: its runs' rounds and its figures' statistics.
    let m = |at: &str, v: Value| Body::Json(set(s.measure.clone(), at, v));
    add(
        &mut cases,
        "measure run round 2^32-1",
        m("/runs/0/round", json!(u32::MAX)),
        READ_CMDS,
        2,
        "runs[0].round: round 4294967295",
    );
    add(
        &mut cases,
        "measure run round past set",
        m("/runs/0/round", json!(2)),
        READ_CMDS,
        2,
        "runs[0].round: round 2 (0-based) of a run set of 2 rounds",
    );
    add(
        &mut cases,
        "measure run round -1",
        m("/runs/0/round", json!(-1)),
        READ_CMDS,
        2,
        "expected u32",
    );
    add(
        &mut cases,
        "measure shard n 0",
        m("/figures/statistics/shard/n", json!(0)),
        READ_CMDS,
        2,
        "statistics.shard.n: 0 shards",
    );
    add(
        &mut cases,
        "measure shard of 2^64-1",
        m("/figures/statistics/shard/of", max.clone()),
        READ_CMDS,
        2,
        "statistics.shard.of",
    );
    add(
        &mut cases,
        "measure shard first 2^64-1",
        m("/figures/statistics/shard/first", max.clone()),
        READ_CMDS,
        2,
        "statistics.shard.first",
    );
    add(
        &mut cases,
        "measure lost round 2^64-1",
        m("/figures/statistics/lost_rounds", json!([u64::MAX])),
        READ_CMDS,
        2,
        "statistics.lost_rounds[0]",
    );
    let no_shard = remove(s.measure.clone(), "/figures/statistics/shard");
    let no_shard = set(no_shard, "/runs/0/round", json!(7));
    add(
        &mut cases,
        "measure whole run round past set",
        Body::Json(no_shard),
        &[Cmd::Render, Cmd::Rejudge],
        2,
        "runs[0].round: round 7 (0-based) of a run set of 1 rounds",
    );
    let m_old = each_mode(
        s.measure.clone(),
        "/figures/modes",
        "repeats",
        Some(json!([])),
    );
    add(
        &mut cases,
        "measure older: no repeats",
        Body::Json(m_old),
        &[Cmd::Render, Cmd::Rejudge],
        0,
        "## harness measure",
    );
    add(
        &mut cases,
        "a sound measure shard merged",
        Body::Json(s.measure.clone()),
        &[Cmd::Merge],
        0,
        "Merged from 2 shards",
    );
    // Every committed result of a shape `report render` reads renders and
    // is judged again.
    let root = common::repo_root();
    for dir in [
        "docs/src/providers/kind-results",
        "suites/thor/recorded",
        "suites/thor/seeded",
        "suites/measure/results",
    ] {
        let mut found: Vec<_> = std::fs::read_dir(root.join(dir))
            .unwrap()
            .flatten()
            .map(|e| e.path().join("result.json"))
            .filter(|p| p.is_file())
            .collect();
        found.sort();
        for p in found {
            let text = std::fs::read_to_string(&p).unwrap();
            let rel = p.strip_prefix(&root).unwrap().display().to_string();
            add(
                &mut cases,
                &format!("committed {rel}"),
                Body::Text(text),
                &[Cmd::Render, Cmd::Rejudge],
                0,
                "",
            );
        }
    }
    // headline and calibrate read baselines: a result file given to them,
    // however hostile, is refused naming it.
    let shard_n0 = set(s.thor_shard.clone(), "/statistics/shard/n", json!(0));
    for cmd in [Cmd::Headline, Cmd::Calibrate] {
        cases.push(Case {
            name: "a hostile result as a baseline".into(),
            body: Body::Json(shard_n0.clone()),
            twin: None,
            cmd,
            want: 2,
            says: "result.json:".into(),
        });
        cases.push(Case {
            name: "a hostile measure result as a baseline".into(),
            body: Body::Json(set(s.measure.clone(), "/runs/0/round", json!(u32::MAX))),
            twin: None,
            cmd,
            want: 2,
            says: "result.json:".into(),
        });
    }
    cases
}

/// Where the case's files go, and the arguments of its command.
fn args_of(c: &Case, s: &Seeds, dir: &Path) -> Vec<String> {
    let file = dir.join("case").join("result.json");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    let text = match &c.body {
        Body::Json(v) => serde_json::to_string_pretty(v).unwrap(),
        Body::Text(t) => t.clone(),
    };
    std::fs::write(&file, text).unwrap();
    let case_dir = file.parent().unwrap().display().to_string();
    let twin_file = |v: &Value| {
        let p = dir.join("twin").join("result.json");
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, serde_json::to_string_pretty(v).unwrap()).unwrap();
        p.parent().unwrap().display().to_string()
    };
    let strs = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    match c.cmd {
        Cmd::Render => strs(&["report", "render", &case_dir]),
        Cmd::Rejudge => strs(&["report", "render", "--rejudge", &case_dir]),
        Cmd::Merge => {
            let measure = c.name.contains("measure");
            let twin = c.twin.clone().unwrap_or_else(|| match measure {
                true => s.measure_twin.clone(),
                false => s.thor_twin.clone(),
            });
            let t = twin_file(&twin);
            let out = dir.join("merged").display().to_string();
            strs(&["report", "merge", &case_dir, &t, "--out", &out])
        }
        Cmd::History => {
            let t = twin_file(&s.thor_whole);
            let out = dir.join("history").display().to_string();
            strs(&["report", "history", &t, &case_dir, "--out", &out])
        }
        Cmd::Headline => strs(&["report", "headline", &file.display().to_string()]),
        Cmd::Calibrate => strs(&["report", "calibrate", &file.display().to_string()]),
    }
}

/// How a case ended.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
enum Outcome {
    /// Refused with its exit code, naming the file (or rendered, for a
    /// sound one) and saying what it must.
    Clean,
    /// The right exit code, but without the file or the text.
    CleanWithout,
    /// Exit 0 where it must be refused (or refused where it must render).
    Accepted,
    Panic,
    Hang,
    Oom,
}

fn judge(c: &Case, r: &Run, file: &str) -> (Outcome, String) {
    let text = r.text();
    let oom = text.contains("memory allocation of")
        || text.contains("memory allocation failed")
        || r.signal == Some(libc::SIGABRT);
    if text.contains("panicked") || r.code == Some(101) {
        return (Outcome::Panic, "panic".into());
    }
    if oom {
        return (Outcome::Oom, "out of memory".into());
    }
    if r.took > BOUND || r.signal.is_some() {
        return (
            Outcome::Hang,
            format!("{:.1} s, signal {:?}", r.took.as_secs_f64(), r.signal),
        );
    }
    if r.code != Some(c.want) {
        return (
            Outcome::Accepted,
            format!("exit {:?}, want {}", r.code, c.want),
        );
    }
    let mut missing = Vec::new();
    if !text.contains(c.says.as_str()) {
        missing.push(format!("does not say {:?}", c.says));
    }
    if c.want != 0 && !text.contains(file) {
        missing.push(format!("does not name {file}"));
    }
    match missing.is_empty() {
        true => (Outcome::Clean, String::new()),
        false => (Outcome::CleanWithout, missing.join("; ")),
    }
}

fn mib(kib: u64) -> String {
    format!("{:.1} MiB", kib as f64 / 1024.0)
}

#[test]
fn hostile_result_files_are_refused_naming_file_and_field_bounded() {
    let started = Instant::now();
    let s = seeds();
    let cases = corpus(&s);
    assert!(cases.len() >= 60, "{} cases", cases.len());
    let tmp = tempfile::tempdir().unwrap();
    println!(
        "{:>3} {:<40} {:<17} {:>4} {:>4} {:>6} {:>10}  outcome",
        "#", "case", "command", "exit", "want", "time", "peak RSS"
    );
    let mut outcomes = Vec::new();
    for (i, c) in cases.iter().enumerate() {
        let dir = tmp.path().join(format!("{i:03}"));
        let args = args_of(c, &s, &dir);
        // The case's out dir: every message about it names it (its
        // result.json, where a position applies).
        let file = dir.join("case").display().to_string();
        let r = run(&args);
        let (o, why) = judge(c, &r, &file);
        println!(
            "{:>3} {:<40} {:<17} {:>4} {:>4} {:>5.2}s {:>10}  {:?} {}",
            i + 1,
            c.name,
            c.cmd.name(),
            r.code.map_or("-".into(), |c| c.to_string()),
            c.want,
            r.took.as_secs_f64(),
            mib(r.max_rss_kib),
            o,
            why
        );
        if o != Outcome::Clean {
            println!("    {}", r.text().trim().replace('\n', "\n    "));
        }
        outcomes.push((c, r, o));
    }
    let count = |o: Outcome| outcomes.iter().filter(|x| x.2 == o).count();
    let peak = outcomes.iter().max_by_key(|x| x.1.max_rss_kib).unwrap();
    let refusals = outcomes.iter().filter(|x| x.0.want != 0).count();
    println!("\nsummary");
    println!(
        "  cases                 {} ({} refusals, {} sound or older shapes that render)",
        outcomes.len(),
        refusals,
        outcomes.len() - refusals
    );
    println!("  clean, with location  {}", count(Outcome::Clean));
    println!("  clean, without        {}", count(Outcome::CleanWithout));
    println!("  accepted (wrong exit) {}", count(Outcome::Accepted));
    println!("  panics                {}", count(Outcome::Panic));
    println!("  hangs                 {}", count(Outcome::Hang));
    println!("  out of memory         {}", count(Outcome::Oom));
    println!(
        "  worst peak RSS        {} ({}, {})",
        mib(peak.1.max_rss_kib),
        peak.0.name,
        peak.0.cmd.name()
    );
    println!(
        "  wall time             {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let bad: Vec<String> = outcomes
        .iter()
        .filter(|x| x.2 != Outcome::Clean)
        .map(|x| format!("{} ({}): {:?}", x.0.name, x.0.cmd.name(), x.2))
        .collect();
    assert!(
        bad.is_empty(),
        "{} case(s) not clean:\n{}",
        bad.len(),
        bad.join("\n")
    );
}
