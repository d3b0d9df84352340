use super::*;

#[test]
fn durations() {
    assert_eq!(parse_duration("5s").unwrap(), Duration::from_secs(5));
    assert_eq!(parse_duration("250ms").unwrap(), Duration::from_millis(250));
    assert_eq!(parse_duration("2m").unwrap(), Duration::from_secs(120));
    assert!(parse_duration("5").is_err());
    assert!(parse_duration("s").is_err());
    assert!(parse_duration("5 parsecs").is_err());
    // Overflow and absurd lengths are errors, not wrap-arounds.
    assert!(parse_duration("5124095576030432h").is_err());
    assert!(parse_duration("25h").is_err());
    assert_eq!(parse_duration("24h").unwrap(), MAX_DURATION);
}

fn problems(yaml: &str) -> Vec<String> {
    let (_, f) = crate::schema::check_yaml("s.yaml", yaml, |ctx, v| check(ctx, v).1);
    f.iter().map(|f| f.to_string()).collect()
}

const OK: &str = "name: smoke\nthor: {numWorkers: 2, maxGraphs: 2}\nworkunits: 4\ngraphDuration: 3s\nmodes: [baseline]\ncluster: {k8sMinor: \"1.37\", nodes: 3, nodeCpu: \"32\", nodeMemory: 256Gi}\n";

#[test]
fn chart_defaults_and_one_set_of_rules() {
    assert_eq!(problems(OK), Vec::<String>::new());
    let (s, _) = crate::schema::check_yaml("s.yaml", OK, |ctx, v| {
        let (s, f) = check(ctx, v);
        assert!(s.is_some());
        f
    });
    assert_eq!(s, 1);
    for (bad, what) in [
        ("nodeCpu: \"32\"", "nodeCpu: banana"),
        ("name: smoke", "name: ../../x/PWNED"),
        (
            "thor: {numWorkers: 2,",
            "thor: {name: Thor_Bad!, numWorkers: 2,",
        ),
        ("numWorkers: 2,", "numWorkers: 4294967295,"),
        ("graphDuration: 3s", "graphDuration: 5124095576030432h"),
        ("workunits: 4", "workunits: 0"),
    ] {
        let text = OK.replace(bad, what);
        assert!(!problems(&text).is_empty(), "{what} accepted");
    }
    let set = parse_overrides(&[
        "jobset.enableDNSHostnames=true".into(),
        "thor.maxGraphs=4".into(),
    ])
    .unwrap();
    let v = apply_overrides(&serde_json::json!({"thor": {"maxGraphs": 2}}), &set);
    assert_eq!(
        v,
        serde_json::json!({"thor": {"maxGraphs": 4}, "jobset": {"enableDNSHostnames": true}})
    );
    assert!(parse_overrides(&["nokey".into()]).is_err());
    assert!(parse_overrides(&["a..b=1".into()]).is_err());
    let old = OK.replace("workunits: 4", "instances: 4");
    assert!(
        problems(&old).iter().any(|p| p.contains("instances")),
        "{:?}",
        problems(&old)
    );
}

/// Issue 30: a bad `--set` key is reported as the flag's, not at the
/// line of whatever holds its parent.
#[test]
fn a_bad_set_key_is_reported_as_the_flag() {
    let text = include_str!("../../../../../suites/thor/smoke.yaml");
    for (set, says) in [
        (
            "bogus.key=1",
            "--set bogus.key: bogus: unknown field \"bogus\"",
        ),
        (
            "thor.bogus=1",
            "--set thor.bogus: thor.bogus: unknown field \"bogus\"",
        ),
    ] {
        let ov = parse_overrides(&[set.into()]).unwrap();
        let (_, _, findings) = check_file("smoke.yaml", text, &ov);
        let all: Vec<String> = findings.iter().map(|f| f.to_string()).collect();
        assert!(all.iter().any(|f| f.starts_with(says)), "{set}: {all:?}");
        assert!(
            !all.iter().any(|f| f.starts_with("smoke.yaml:")),
            "{set}: {all:?}"
        );
    }
}
