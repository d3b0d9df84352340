//! What ESP answers, and its parsing (pure): the response element of a
//! call or an error naming the call, and the workunit, exceptions and
//! result rows inside it.

use anyhow::{Context, Result, anyhow, bail};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::workload::ecl::wsworkunits::request::EspRequest;
use crate::workload::ecl::wsworkunits::state::WuState;

/// An ECLException of a workunit (compile or run-time error, warning).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EclException {
    pub severity: String,
    pub source: String,
    pub code: i64,
    pub message: String,
    pub file: String,
    pub line: i64,
    pub column: i64,
}

impl std::fmt::Display for EclException {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {} [{}]", self.severity, self.source, self.code)?;
        if self.line > 0 {
            write!(f, " at {}({},{})", self.file, self.line, self.column)?;
        }
        write!(f, ": {}", self.message)
    }
}

/// A result a workunit has (ECLResult, without its rows).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResultMeta {
    pub name: String,
    pub sequence: u32,
    /// Row count; -1 while incomplete.
    pub total: i64,
}

/// What WUInfo says about a workunit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkunitInfo {
    pub wuid: String,
    pub state: WuState,
    pub jobname: String,
    pub cluster: String,
    pub exceptions: Vec<EclException>,
    pub results: Vec<ResultMeta>,
}

impl WorkunitInfo {
    /// Exceptions of severity error (or alert), one per line.
    pub fn errors(&self) -> Vec<String> {
        self.exceptions
            .iter()
            .filter(|e| {
                let s = e.severity.to_ascii_lowercase();
                s == "error" || s == "alert"
            })
            .map(ToString::to_string)
            .collect()
    }
}

/// Rows of one result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResultPage {
    pub name: String,
    pub sequence: u32,
    pub start: u64,
    /// Rows in the whole result.
    pub total: i64,
    pub rows: Vec<Value>,
}

/// ESP's list shapes: an array, a single object, or absent.
fn list(v: Option<&Value>) -> Vec<&Value> {
    match v {
        Some(Value::Array(a)) => a.iter().collect(),
        Some(Value::Null) | None => vec![],
        Some(other) => vec![other],
    }
}

fn text(v: &Value, key: &str) -> String {
    match v.get(key) {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    }
}

fn int(v: &Value, key: &str) -> Option<i64> {
    match v.get(key)? {
        Value::Number(n) => n.as_i64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

/// "[code] message; [code] message" of an ESP `Exceptions` block, None
/// when it holds no exception.
pub fn esp_exceptions(block: &Value) -> Option<String> {
    let items = list(block.get("Exception"));
    if items.is_empty() {
        return None;
    }
    let source = text(block, "Source");
    let msgs: Vec<String> = items
        .iter()
        .map(|e| {
            let code = int(e, "Code").map_or(String::new(), |c| format!("[{c}] "));
            format!("{code}{}", text(e, "Message"))
        })
        .collect();
    Some(if source.is_empty() {
        msgs.join("; ")
    } else {
        format!("{source}: {}", msgs.join("; "))
    })
}

/// The text around `line`:`column` of `body`, for error messages.
fn excerpt(body: &str, line: usize, column: usize) -> String {
    let Some(l) = body.lines().nth(line.saturating_sub(1)) else {
        return String::new();
    };
    let chars: Vec<char> = l.chars().collect();
    let at = column.saturating_sub(1).min(chars.len());
    let from = at.saturating_sub(30);
    let to = (at + 30).min(chars.len());
    let before: String = chars[from..at].iter().collect();
    let after: String = chars[at..to].iter().collect();
    format!("{before}⟪here⟫{after}")
}

/// Turn an HTTP answer into the method's response element, or an error
/// naming the call: HTTP status, malformed JSON (where it broke), ESP
/// exceptions, a missing response element.
pub fn parse_response(req: &EspRequest, status: u16, body: &str) -> Result<Value> {
    let what = req.what();
    if !(200..300).contains(&status) {
        let snippet: String = body.chars().take(300).collect();
        bail!("{what}: HTTP {status}: {}", snippet.trim());
    }
    let v: Value = serde_json::from_str(body).map_err(|e| {
        anyhow!(
            "{what}: malformed JSON in the response at line {} column {} ({e}): {}",
            e.line(),
            e.column(),
            excerpt(body, e.line(), e.column())
        )
    })?;
    if let Some(ex) = v.get("Exceptions").and_then(esp_exceptions) {
        bail!("{what}: ESP exception: {ex}");
    }
    let key = format!("{}Response", req.method);
    let Some(resp) = v.get(&key) else {
        let keys: Vec<&str> = v
            .as_object()
            .map(|o| o.keys().map(String::as_str).collect())
            .unwrap_or_default();
        bail!("{what}: the response has no {key} (top-level keys: {keys:?})");
    };
    if let Some(ex) = resp.get("Exceptions").and_then(esp_exceptions) {
        bail!("{what}: ESP exception: {ex}");
    }
    Ok(resp.clone())
}

/// The Wuid of a WUCreateAndUpdate/WUCreate response.
pub fn parse_created(req: &EspRequest, resp: &Value) -> Result<String> {
    let wuid = resp
        .get("Workunit")
        .map(|w| text(w, "Wuid"))
        .unwrap_or_default();
    if wuid.is_empty() {
        bail!("{}: the response names no Workunit.Wuid", req.what());
    }
    Ok(wuid)
}

/// A WUInfo response's ECLWorkunit.
pub fn parse_info(req: &EspRequest, resp: &Value) -> Result<WorkunitInfo> {
    let what = req.what();
    let wu = resp
        .get("Workunit")
        .ok_or_else(|| anyhow!("{what}: the response has no Workunit"))?;
    let wuid = text(wu, "Wuid");
    if let Some(asked) = &req.wuid
        && !wuid.is_empty()
        && &wuid != asked
    {
        bail!("{what}: the response is about workunit {wuid}");
    }
    let state_text = wu.get("State").and_then(Value::as_str);
    let state = WuState::from_esp(state_text, int(wu, "StateID")).with_context(|| what.clone())?;
    let exceptions = list(wu.get("Exceptions").and_then(|e| e.get("ECLException")))
        .into_iter()
        .map(|e| EclException {
            severity: text(e, "Severity"),
            source: text(e, "Source"),
            code: int(e, "Code").unwrap_or(0),
            message: text(e, "Message"),
            file: text(e, "FileName"),
            line: int(e, "LineNo").unwrap_or(0),
            column: int(e, "Column").unwrap_or(0),
        })
        .collect();
    let results = list(wu.get("Results").and_then(|r| r.get("ECLResult")))
        .into_iter()
        .map(|r| ResultMeta {
            name: text(r, "Name"),
            sequence: int(r, "Sequence").unwrap_or(0).max(0) as u32,
            total: int(r, "Total").unwrap_or(-1),
        })
        .collect();
    Ok(WorkunitInfo {
        wuid: if wuid.is_empty() {
            req.wuid.clone().unwrap_or_default()
        } else {
            wuid
        },
        state,
        jobname: text(wu, "Jobname"),
        cluster: text(wu, "Cluster"),
        exceptions,
        results,
    })
}

/// A WUResult response: `Result` holds `{<name>: {"Row": [...]}}` (and,
/// unless suppressed, `XmlSchema`).
pub fn parse_result(req: &EspRequest, resp: &Value) -> Result<ResultPage> {
    let what = req.what();
    let name = text(resp, "Name");
    let result = resp
        .get("Result")
        .ok_or_else(|| anyhow!("{what}: the response has no Result"))?;
    let obj = result
        .as_object()
        .ok_or_else(|| anyhow!("{what}: Result is not an object: {result}"))?;
    let dataset = match obj.get(&name) {
        Some(d) => d,
        None => {
            let others: Vec<(&String, &Value)> =
                obj.iter().filter(|(k, _)| *k != "XmlSchema").collect();
            match others.as_slice() {
                [(_, d)] => *d,
                [] => result,
                _ => bail!(
                    "{what}: Result holds {:?}, none named {name:?}",
                    others.iter().map(|(k, _)| k).collect::<Vec<_>>()
                ),
            }
        }
    };
    let rows = list(dataset.get("Row")).into_iter().cloned().collect();
    Ok(ResultPage {
        name,
        sequence: int(resp, "Sequence").unwrap_or(0).max(0) as u32,
        start: int(resp, "Start").unwrap_or(0).max(0) as u64,
        total: int(resp, "Total").unwrap_or(-1),
        rows,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::ecl::wsworkunits::request::{self, ResultRef};
    use serde_json::json;

    #[test]
    fn responses_errors_name_the_method_and_workunit() {
        let req = request::info("W20260101-000001");
        let e = parse_response(&req, 500, "internal trouble").unwrap_err();
        let m = format!("{e}");
        assert!(
            m.contains("WsWorkunits/WUInfo for workunit W20260101-000001"),
            "{m}"
        );
        assert!(
            m.contains("HTTP 500") && m.contains("internal trouble"),
            "{m}"
        );

        let e = parse_response(&req, 200, "{\"WUInfoResponse\": {\"Workunit\": [1, }").unwrap_err();
        let m = format!("{e}");
        assert!(m.contains("malformed JSON") && m.contains("column"), "{m}");
        assert!(m.contains("⟪here⟫"), "{m}");
        assert!(m.contains("WUInfo for workunit W20260101-000001"), "{m}");

        let ex = json!({"Exceptions": {"Source": "WsWorkunits", "Exception": [{"Code": 20080, "Message": "Cannot open workunit"}]}});
        let e = parse_response(&req, 200, &ex.to_string()).unwrap_err();
        let m = format!("{e}");
        assert!(
            m.contains("[20080] Cannot open workunit") && m.contains("ESP exception"),
            "{m}"
        );

        let inline = json!({"WUInfoResponse": {"Exceptions": {"Exception": {"Code": 1, "Message": "inline"}}}});
        let m = format!(
            "{}",
            parse_response(&req, 200, &inline.to_string()).unwrap_err()
        );
        assert!(m.contains("[1] inline"), "{m}");

        let wrong = json!({"WUQueryResponse": {}});
        let m = format!(
            "{}",
            parse_response(&req, 200, &wrong.to_string()).unwrap_err()
        );
        assert!(
            m.contains("no WUInfoResponse") && m.contains("WUQueryResponse"),
            "{m}"
        );

        // An empty Exceptions block is not an error.
        let ok = json!({"WUInfoResponse": {"Exceptions": {"Exception": []}, "Workunit": {}}});
        assert!(parse_response(&req, 200, &ok.to_string()).is_ok());
    }

    #[test]
    fn create_and_info_parse() {
        let req = request::create_and_update("x", "j");
        let resp = json!({"Workunit": {"Wuid": "W1", "State": "unknown"}});
        assert_eq!(parse_created(&req, &resp).unwrap(), "W1");
        assert!(parse_created(&req, &json!({"Workunit": {}})).is_err());

        let req = request::info("W1");
        let resp = json!({"Workunit": {
            "Wuid": "W1", "State": "failed", "StateID": 4, "Jobname": "j", "Cluster": "thor",
            "Exceptions": {"ECLException": [
                {"Source": "eclcc", "Severity": "Error", "Code": 2167, "Message": "Unknown identifier", "FileName": "", "LineNo": 3, "Column": 5},
                {"Source": "eclcc", "Severity": "Warning", "Code": 1, "Message": "meh"}
            ]},
            "Results": {"ECLResult": {"Name": "out", "Sequence": 0, "Total": 3}}
        }});
        let info = parse_info(&req, &resp).unwrap();
        assert_eq!(info.state, WuState::Failed);
        assert_eq!(info.exceptions.len(), 2);
        assert_eq!(info.errors().len(), 1);
        assert!(
            info.errors()[0].contains("Unknown identifier") && info.errors()[0].contains("(3,5)")
        );
        assert_eq!(
            info.results,
            vec![ResultMeta {
                name: "out".into(),
                sequence: 0,
                total: 3
            }]
        );
        let other = json!({"Workunit": {"Wuid": "W2", "State": "running"}});
        assert!(format!("{}", parse_info(&req, &other).unwrap_err()).contains("about workunit W2"));
    }

    #[test]
    fn result_rows_parse() {
        let req = request::result("W1", &ResultRef::Sequence(0), 0, 10);
        let resp = json!({"Wuid": "W1", "Sequence": 0, "Name": "sorted", "Start": 0, "Count": 2, "Total": 2,
            "Result": {"sorted": {"Row": [{"id": 1}, {"id": 2}]}, "XmlSchema": {"xml": "<x/>"}}});
        let p = parse_result(&req, &resp).unwrap();
        assert_eq!((p.name.as_str(), p.total, p.rows.len()), ("sorted", 2, 2));
        // A name mismatch with one dataset: take the dataset.
        let resp = json!({"Name": "a", "Total": 1, "Result": {"Result_1": {"Row": {"x": "y"}}}});
        assert_eq!(
            parse_result(&req, &resp).unwrap().rows,
            vec![json!({"x": "y"})]
        );
        let resp = json!({"Name": "a", "Result": {"b": {"Row": []}, "c": {"Row": []}}});
        assert!(parse_result(&req, &resp).is_err());
        assert!(parse_result(&req, &json!({"Name": "a"})).is_err());
    }
}
