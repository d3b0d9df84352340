//! HPCC chart values (manifests/hpcc/values/*.yaml): decoded into the
//! typed model of the keys the harness uses (`install::hpcc::HpccValues`),
//! so a key outside it, a wrong type or an unusable value is reported at
//! its file:line:column.

use serde_json::Value;

use crate::install::hpcc::HpccValues;
use crate::schema::Finding;
use crate::schema::typed::{Ctx, decode};

pub fn check(ctx: &Ctx<'_>, v: &Value) -> Vec<Finding> {
    let (values, mut findings) = decode::<HpccValues>(ctx, v, "HPCC chart values");
    if let Some(values) = values {
        findings.extend(
            values
                .problems()
                .into_iter()
                .map(|(path, msg)| ctx.finding(&path, msg)),
        );
    }
    findings
}

#[cfg(test)]
mod tests {
    use crate::install::hpcc::{KIND_VALUES, KIND_VALUES_PATH};
    use crate::schema::check_yaml;
    use crate::validate::hpcc::check;

    fn findings(text: &str) -> Vec<String> {
        check_yaml("manifests/hpcc/values/t.yaml", text, check)
            .1
            .iter()
            .map(|f| f.to_string())
            .collect()
    }

    const MINIMAL: &str = "\
storage:
  planes:
    - {name: dali, category: dali, prefix: /var/lib/HPCCSystems/dalistorage}
    - {name: dll, category: dll, prefix: /var/lib/HPCCSystems/queries}
    - {name: data, category: data, prefix: /var/lib/HPCCSystems/hpcc-data}
esp:
  - name: eclwatch
    application: eclwatch
    service: {servicePort: 8010, visibility: cluster}
thor:
  - name: thor
    numWorkers: 2
    maxJobs: 1
    maxGraphs: 1
";

    #[test]
    fn our_values_and_a_minimal_file_validate() {
        let (documents, found) = check_yaml(KIND_VALUES_PATH, KIND_VALUES, check);
        assert!(found.is_empty(), "{found:#?}");
        assert_eq!(documents, 1);
        assert_eq!(findings(MINIMAL), Vec::<String>::new());
    }

    #[test]
    fn a_typo_is_an_unknown_key_at_its_position() {
        let text = MINIMAL.replace("    maxJobs: 1\n", "    maxJob: 1\n");
        let f = findings(&text);
        // The typo is unknown and, maxJobs being required, the model fails there.
        assert!(
            f.iter()
                .any(|l| l.starts_with("manifests/hpcc/values/t.yaml:")
                    && l.contains("missing field `maxJobs`")),
            "{f:#?}"
        );
        let text = MINIMAL.replace(
            "  - name: eclwatch\n",
            "  - name: eclwatch\n    replica: 1\n",
        );
        let f = findings(&text);
        assert_eq!(
            f,
            [
                "manifests/hpcc/values/t.yaml:8:5: esp[0].replica: unknown field \"replica\" in HPCC chart values"
            ]
        );
        let f = findings(&format!("{MINIMAL}globl:\n  omitResources: true\n"));
        assert_eq!(
            f,
            [
                "manifests/hpcc/values/t.yaml:15:1: globl: unknown field \"globl\" in HPCC chart values"
            ]
        );
    }

    #[test]
    fn a_wrong_type_is_reported_at_the_field() {
        let text = MINIMAL.replace("numWorkers: 2", "numWorkers: two");
        let f = findings(&text);
        assert_eq!(f.len(), 1, "{f:#?}");
        assert!(
            f[0].starts_with("manifests/hpcc/values/t.yaml:12:5: thor[0].numWorkers: HPCC chart values: invalid type"),
            "{}",
            f[0]
        );
        let text = format!("{MINIMAL}global:\n  omitResources: \"yes\"\n");
        let f = findings(&text);
        assert!(
            f.len() == 1 && f[0].contains(":16:3: global.omitResources:"),
            "{f:#?}"
        );
    }

    #[test]
    fn unusable_values_are_reported() {
        let f = findings(&MINIMAL.replace("numWorkers: 2", "numWorkers: 0"));
        assert_eq!(
            f,
            [
                "manifests/hpcc/values/t.yaml:12:5: thor[0].numWorkers: numWorkers must be at least 1, is 0"
            ]
        );
        let f = findings(&MINIMAL.replace("category: dll", "category: dlls"));
        assert!(
            f.iter()
                .any(|l| l.contains(":4:") && l.contains("unknown plane category \"dlls\"")),
            "{f:#?}"
        );
        assert!(
            f.iter().any(|l| l.contains("no enabled \"dll\" plane")),
            "{f:#?}"
        );
        let f = findings(&MINIMAL.replace("visibility: cluster", "visibility: clustr"));
        assert!(
            f.len() == 1 && f[0].contains("esp[0].service.visibility: unknown visibility"),
            "{f:#?}"
        );
        let two = format!(
            "{MINIMAL}  - name: thor2\n    numWorkers: 1\n    maxJobs: 1\n    maxGraphs: 1\n"
        );
        let f = findings(&two);
        assert!(
            f.len() == 1 && f[0].contains("2 enabled Thor clusters"),
            "{f:#?}"
        );
    }
}
