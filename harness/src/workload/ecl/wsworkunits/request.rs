//! Requests: the method and its form fields, one builder per method used.

/// The ESP service this client speaks to.
pub const SERVICE: &str = "WsWorkunits";

/// One request: the method and its form fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EspRequest {
    pub method: &'static str,
    /// The workunit the request is about, for error messages.
    pub wuid: Option<String>,
    pub form: Vec<(String, String)>,
}

impl EspRequest {
    pub fn path(&self) -> String {
        format!("/{SERVICE}/{}.json", self.method)
    }

    /// "WsWorkunits/WUInfo for W2024…" — how errors name the call.
    pub fn what(&self) -> String {
        match &self.wuid {
            Some(w) => format!("{SERVICE}/{} for workunit {w}", self.method),
            None => format!("{SERVICE}/{}", self.method),
        }
    }

    fn new(method: &'static str, wuid: Option<&str>, form: &[(&str, &str)]) -> EspRequest {
        EspRequest {
            method,
            wuid: wuid.map(str::to_string),
            form: form
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        }
    }
}

/// Which result of a workunit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResultRef {
    Sequence(u32),
    Name(String),
}

/// Create a workunit holding `ecl` (WUUpdateRequest's QueryText).
pub fn create_and_update(ecl: &str, jobname: &str) -> EspRequest {
    EspRequest::new(
        "WUCreateAndUpdate",
        None,
        &[("QueryText", ecl), ("Jobname", jobname)],
    )
}

/// The Thor target a workunit is submitted to by default (values.yaml's
/// `thor: [{name: thor}]`).
pub const DEFAULT_TARGET: &str = "thor";

/// Compile and run a workunit on a target cluster.
pub fn submit(wuid: &str, cluster: &str) -> EspRequest {
    EspRequest::new(
        "WUSubmit",
        Some(wuid),
        &[("Wuid", wuid), ("Cluster", cluster)],
    )
}

/// The workunit's state, exceptions and result list — nothing else.
pub fn info(wuid: &str) -> EspRequest {
    EspRequest::new(
        "WUInfo",
        Some(wuid),
        &[
            ("Wuid", wuid),
            ("TruncateEclTo64k", "true"),
            ("IncludeExceptions", "true"),
            ("IncludeResults", "true"),
            ("IncludeGraphs", "false"),
            ("IncludeSourceFiles", "false"),
            ("IncludeVariables", "false"),
            ("IncludeTimers", "false"),
            ("IncludeDebugValues", "false"),
            ("IncludeApplicationValues", "false"),
            ("IncludeWorkflows", "false"),
            ("SuppressResultSchemas", "true"),
        ],
    )
}

/// Rows `start .. start+count` of one result.
pub fn result(wuid: &str, which: &ResultRef, start: u64, count: u64) -> EspRequest {
    let (start, count) = (start.to_string(), count.to_string());
    let mut form = vec![("Wuid", wuid)];
    let seq;
    match which {
        ResultRef::Sequence(n) => {
            seq = n.to_string();
            form.push(("Sequence", &seq));
        }
        ResultRef::Name(n) => form.push(("ResultName", n)),
    }
    form.extend([
        ("Start", start.as_str()),
        ("Count", count.as_str()),
        ("SuppressXmlSchema", "true"),
    ]);
    EspRequest::new("WUResult", Some(wuid), &form)
}

/// Abort a workunit (WUAbortRequest's Wuids array).
pub fn abort(wuid: &str) -> EspRequest {
    EspRequest::new(
        "WUAbort",
        Some(wuid),
        &[("Wuids_i0", wuid), ("BlockTillFinishTimer", "0")],
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_carry_the_ecm_field_names() {
        let r = create_and_update("OUTPUT(1);", "t1");
        assert_eq!(r.path(), "/WsWorkunits/WUCreateAndUpdate.json");
        assert_eq!(
            r.form,
            vec![
                ("QueryText".to_string(), "OUTPUT(1);".to_string()),
                ("Jobname".to_string(), "t1".to_string())
            ]
        );
        let s = submit("W1", "thor");
        assert_eq!(s.path(), "/WsWorkunits/WUSubmit.json");
        assert!(s.form.contains(&("Cluster".into(), "thor".into())));
        assert!(s.form.contains(&("Wuid".into(), "W1".into())));
        assert_eq!(s.what(), "WsWorkunits/WUSubmit for workunit W1");
        let a = abort("W1");
        assert!(a.form.contains(&("Wuids_i0".into(), "W1".into())));
        let i = info("W1");
        assert!(i.form.contains(&("IncludeGraphs".into(), "false".into())));
        let by_seq = result("W1", &ResultRef::Sequence(2), 10, 5);
        assert!(by_seq.form.contains(&("Sequence".into(), "2".into())));
        assert!(by_seq.form.contains(&("Start".into(), "10".into())));
        assert!(by_seq.form.contains(&("Count".into(), "5".into())));
        let by_name = result("W1", &ResultRef::Name("sorted".into()), 0, 5);
        assert!(
            by_name
                .form
                .contains(&("ResultName".into(), "sorted".into()))
        );
        assert!(!by_name.form.iter().any(|(k, _)| k == "Sequence"));
    }
}
