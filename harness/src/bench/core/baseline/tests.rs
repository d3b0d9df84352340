use super::*;

#[test]
fn real_node_runs_have_baselines_of_their_own() {
    let at = |p, real| path_of(Path::new("/r"), "local", "1.37.1", "s", &variant(p, real));
    assert_eq!(
        at("default", false),
        Path::new("/r/baselines/local/1.37/s.json")
    );
    assert_eq!(
        at("default", true),
        Path::new("/r/baselines/local/1.37/s.real-node.json")
    );
    assert_eq!(
        at("tuned", true),
        Path::new("/r/baselines/local/1.37/s.tuned.real-node.json")
    );
}

#[test]
fn runs_with_other_capabilities_are_not_compared() {
    let r = crate::bench::thor::result::sample_result(100, 10.0);
    let mut b = from_result(&r, "suites/thor/smoke.yaml");
    let p = Path::new("baselines/existing/1.37/smoke.json");
    assert!(same_capabilities(&b, &r, p).is_ok());
    let mut other = r.clone();
    other.capabilities = Some(Default::default());
    let e = same_capabilities(&b, &other, p).unwrap_err();
    assert_eq!(crate::error::exit_code(&e), 2);
    assert!(format!("{e}").contains("not comparable"), "{e}");
    b.capabilities = Some(crate::cluster::existing::probe::Capabilities::default().comparable());
    assert!(same_capabilities(&b, &other, p).is_ok());
}
use crate::bench::core::compare::compare;
use crate::bench::thor::result::sample_result as result;

#[test]
fn a_corrupt_baseline_is_a_usage_error_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("smoke.json");
    std::fs::write(&path, "{\"schema\": \"harness.baseline/v1\", \"modes\": ").unwrap();
    let e = load(&path).unwrap_err();
    assert_eq!(crate::error::exit_code(&e), crate::error::EXIT_USAGE);
    assert!(
        format!("{e:#}").contains(&path.display().to_string()),
        "{e:#}"
    );
    let e = load(&dir.path().join("missing.json")).unwrap_err();
    assert_eq!(crate::error::exit_code(&e), crate::error::EXIT_USAGE);
    // Valid JSON, insane content.
    let mut b = from_result(&result(300, 2000.0), "s.yaml");
    b.modes
        .get_mut("baseline")
        .unwrap()
        .get_mut("api_requests_total")
        .unwrap()
        .samples
        .clear();
    std::fs::write(&path, serde_json::to_string(&b).unwrap()).unwrap();
    let e = load(&path).unwrap_err();
    assert!(format!("{e:#}").contains("no samples recorded"), "{e:#}");
}

#[test]
fn record_writes_atomically_where_compare_looks() {
    let dir = tempfile::tempdir().unwrap();
    let r = result(300, 2000.0);
    let path = path_for(dir.path(), &r);
    assert!(
        path.ends_with("baselines/local/1.37/smoke.json"),
        "{}",
        path.display()
    );
    record(&path, &r, "suites/thor/smoke.yaml").unwrap();
    let b = load(&path).unwrap();
    assert!(compare(&b, &r).iter().all(|v| v.pass));
    let leftovers: Vec<_> = std::fs::read_dir(path.parent().unwrap()).unwrap().collect();
    assert_eq!(leftovers.len(), 1, "temp files left: {leftovers:?}");
}
