//! A JSON client for HPCC's ESP WsWorkunits service.
//!
//! Every call is `POST /WsWorkunits/<Method>.json` with form-encoded fields
//! (arrays as `<Name>_i<n>`), answered by `{"<Method>Response": {...}}` —
//! the service uses method names for its response elements, so
//! WUCreateAndUpdate answers `WUCreateAndUpdateResponse` although its
//! response type is WUUpdateResponse. ESP reports failures as an
//! `Exceptions` block `{"Source": .., "Exception": [{"Code", "Message"}]}`,
//! at the top level or inside the response element.
//!
//! Field names are those of HPCC-Platform's esp/scm/ws_workunits.ecm
//! (WUUpdateRequest, WUSubmitRequest, WUInfoRequest, WUResultRequest,
//! WUAbortRequest, ECLWorkunit, ECLException, ECLResult); state names and
//! numbers are those of common/workunit's WUState.

use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The Thor target a workunit is submitted to by default (values.yaml's
/// `thor: [{name: thor}]`).
pub const DEFAULT_TARGET: &str = "thor";
/// The ESP service this client speaks to.
pub const SERVICE: &str = "WsWorkunits";

/// A workunit's state (HPCC's WUState; `State` is its lower-case name,
/// `StateID` its number).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WuState {
    Unknown,
    Compiled,
    Running,
    Completed,
    Failed,
    Archived,
    Aborting,
    Aborted,
    Blocked,
    Submitted,
    Scheduled,
    Compiling,
    Wait,
    UploadingFiles,
    Debugging,
    DebugRunning,
    Paused,
}

/// (StateID, State) in WUState order.
const STATES: &[(WuState, &str)] = &[
    (WuState::Unknown, "unknown"),
    (WuState::Compiled, "compiled"),
    (WuState::Running, "running"),
    (WuState::Completed, "completed"),
    (WuState::Failed, "failed"),
    (WuState::Archived, "archived"),
    (WuState::Aborting, "aborting"),
    (WuState::Aborted, "aborted"),
    (WuState::Blocked, "blocked"),
    (WuState::Submitted, "submitted"),
    (WuState::Scheduled, "scheduled"),
    (WuState::Compiling, "compiling"),
    (WuState::Wait, "wait"),
    (WuState::UploadingFiles, "uploading_files"),
    (WuState::Debugging, "debugging"),
    (WuState::DebugRunning, "debug_running"),
    (WuState::Paused, "paused"),
];

impl WuState {
    pub fn from_id(id: i64) -> Option<WuState> {
        usize::try_from(id)
            .ok()
            .and_then(|i| STATES.get(i))
            .map(|(s, _)| *s)
    }

    /// From ESP's `State` text (case-insensitive).
    pub fn from_name(name: &str) -> Option<WuState> {
        let n = name.trim().to_ascii_lowercase();
        STATES.iter().find(|(_, s)| *s == n).map(|(s, _)| *s)
    }

    pub fn id(self) -> i64 {
        STATES.iter().position(|(s, _)| *s == self).unwrap_or(0) as i64
    }

    pub fn name(self) -> &'static str {
        STATES
            .iter()
            .find(|(s, _)| *s == self)
            .map_or("unknown", |(_, n)| n)
    }

    /// The state of an ECLWorkunit: `StateID` when it is a known number,
    /// else the `State` text. Err when they disagree or neither is known.
    pub fn from_esp(state: Option<&str>, state_id: Option<i64>) -> Result<WuState> {
        let by_id = state_id.and_then(WuState::from_id);
        let by_name = state.and_then(WuState::from_name);
        match (by_id, by_name) {
            (Some(a), Some(b)) if a != b => bail!(
                "StateID {} ({}) disagrees with State {:?}",
                state_id.unwrap_or_default(),
                a.name(),
                state.unwrap_or_default()
            ),
            (Some(a), _) | (None, Some(a)) => Ok(a),
            (None, None) => bail!(
                "unknown workunit state (State {:?}, StateID {:?})",
                state.unwrap_or(""),
                state_id
            ),
        }
    }

    /// The workunit will not change state again by itself.
    pub fn is_final(self) -> bool {
        matches!(
            self,
            WuState::Completed | WuState::Failed | WuState::Aborted | WuState::Archived
        )
    }
}

impl std::fmt::Display for WuState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

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

/// Request builders, one per method used.
pub mod request {
    use super::EspRequest;

    /// Create a workunit holding `ecl` (WUUpdateRequest's QueryText).
    pub fn create_and_update(ecl: &str, jobname: &str) -> EspRequest {
        EspRequest::new(
            "WUCreateAndUpdate",
            None,
            &[("QueryText", ecl), ("Jobname", jobname)],
        )
    }

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
    pub fn result(wuid: &str, which: &super::ResultRef, start: u64, count: u64) -> EspRequest {
        let (start, count) = (start.to_string(), count.to_string());
        let mut form = vec![("Wuid", wuid)];
        let seq;
        match which {
            super::ResultRef::Sequence(n) => {
                seq = n.to_string();
                form.push(("Sequence", &seq));
            }
            super::ResultRef::Name(n) => form.push(("ResultName", n)),
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
}

/// Which result of a workunit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResultRef {
    Sequence(u32),
    Name(String),
}

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

/// How long and how often to poll a workunit.
#[derive(Debug, Clone)]
pub struct PollPolicy {
    /// Give up (and abort the workunit) after this long.
    pub timeout: Duration,
    pub initial_interval: Duration,
    pub max_interval: Duration,
    /// Consecutive failed WUInfo calls tolerated while polling.
    pub max_poll_errors: u32,
}

impl Default for PollPolicy {
    fn default() -> Self {
        PollPolicy {
            timeout: Duration::from_secs(900),
            initial_interval: Duration::from_millis(250),
            max_interval: Duration::from_secs(5),
            max_poll_errors: 3,
        }
    }
}

/// The intervals a poll sleeps: doubling from `initial` up to `max`.
pub fn backoff(initial: Duration, max: Duration) -> impl Iterator<Item = Duration> {
    let max = max.max(initial);
    std::iter::successors(Some(initial), move |d| Some((*d * 2).min(max)))
}

// ---------------------------------------------------------------------------
// Response parsing (pure, unit-tested)

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

// ---------------------------------------------------------------------------
// The client

/// A workunit run to its end.
#[derive(Debug, Clone)]
pub struct Execution {
    pub wuid: String,
    pub info: WorkunitInfo,
    pub elapsed: Duration,
}

/// Talks to one ESP (e.g. `http://127.0.0.1:PORT` through a port-forward).
#[derive(Debug, Clone)]
pub struct EspClient {
    base: String,
    http: reqwest::Client,
    /// Each HTTP call must answer within this.
    pub request_timeout: Duration,
}

impl EspClient {
    pub fn new(base_url: &str, request_timeout: Duration) -> Result<EspClient> {
        crate::init_crypto();
        let base = base_url.trim_end_matches('/').to_string();
        if !(base.starts_with("http://") || base.starts_with("https://")) {
            return Err(crate::error::bad_input(format!(
                "ESP address {base_url:?} is not an http:// or https:// URL"
            )));
        }
        let http = reqwest::Client::builder()
            .connect_timeout(request_timeout)
            .build()
            .context("building the HTTP client for ESP")?;
        Ok(EspClient {
            base,
            http,
            request_timeout,
        })
    }

    pub fn base_url(&self) -> &str {
        &self.base
    }

    /// Send one request and return its response element.
    pub async fn call(&self, req: &EspRequest) -> Result<Value> {
        let url = format!("{}{}", self.base, req.path());
        let what = req.what();
        let resp = self
            .http
            .post(&url)
            .header("Accept", "application/json")
            .form(&req.form)
            .timeout(self.request_timeout)
            .send()
            .await
            .map_err(|e| self.transport_error(&what, &url, e))?;
        let status = resp.status().as_u16();
        let body = resp
            .text()
            .await
            .map_err(|e| self.transport_error(&what, &url, e))?;
        parse_response(req, status, &body)
    }

    fn transport_error(&self, what: &str, url: &str, e: reqwest::Error) -> anyhow::Error {
        if e.is_timeout() {
            anyhow!(
                "{what}: no answer from {url} within the per-request timeout of {:.1} s",
                self.request_timeout.as_secs_f64()
            )
        } else {
            anyhow!("{what}: request to {url} failed: {e:#}")
        }
    }

    /// Create a workunit holding `ecl`; its Wuid.
    pub async fn create(&self, ecl: &str, jobname: &str) -> Result<String> {
        let req = request::create_and_update(ecl, jobname);
        let resp = self.call(&req).await?;
        parse_created(&req, &resp)
    }

    pub async fn submit(&self, wuid: &str, cluster: &str) -> Result<()> {
        self.call(&request::submit(wuid, cluster)).await.map(|_| ())
    }

    pub async fn info(&self, wuid: &str) -> Result<WorkunitInfo> {
        let req = request::info(wuid);
        let resp = self.call(&req).await?;
        parse_info(&req, &resp)
    }

    pub async fn abort(&self, wuid: &str) -> Result<()> {
        self.call(&request::abort(wuid)).await.map(|_| ())
    }

    pub async fn result(
        &self,
        wuid: &str,
        which: &ResultRef,
        start: u64,
        count: u64,
    ) -> Result<ResultPage> {
        let req = request::result(wuid, which, start, count);
        let resp = self.call(&req).await?;
        parse_result(&req, &resp)
    }

    /// All rows of a result, `page` rows per call, failing beyond `limit`.
    pub async fn result_rows(
        &self,
        wuid: &str,
        which: &ResultRef,
        page: u64,
        limit: u64,
    ) -> Result<ResultPage> {
        let mut first = self.result(wuid, which, 0, page.max(1)).await?;
        let total = first.total;
        if total > limit as i64 {
            bail!(
                "{SERVICE}/WUResult for workunit {wuid}: result {:?} has {total} rows, more than the {limit} this check fetches",
                first.name
            );
        }
        while (first.rows.len() as i64) < total {
            let next = self
                .result(wuid, which, first.rows.len() as u64, page.max(1))
                .await?;
            if next.rows.is_empty() {
                bail!(
                    "{SERVICE}/WUResult for workunit {wuid}: result {:?} stopped at row {} of {total}",
                    first.name,
                    first.rows.len()
                );
            }
            first.rows.extend(next.rows);
        }
        Ok(first)
    }

    /// Poll WUInfo, backing off, until the workunit reaches a final state.
    /// On timeout the workunit is aborted and the error says so.
    pub async fn wait(&self, wuid: &str, policy: &PollPolicy) -> Result<WorkunitInfo> {
        let started = Instant::now();
        let mut intervals = backoff(policy.initial_interval, policy.max_interval);
        let mut errors = 0u32;
        let mut last;
        loop {
            match self.info(wuid).await {
                Ok(info) if info.state.is_final() => return Ok(info),
                Ok(info) => {
                    errors = 0;
                    last = format!("state {}", info.state);
                }
                Err(e) => {
                    errors += 1;
                    if errors > policy.max_poll_errors {
                        let abort = self.abort_note(wuid).await;
                        return Err(e.context(format!(
                            "polling workunit {wuid}: {errors} failed WUInfo calls in a row ({abort})"
                        )));
                    }
                    last = format!("{e:#}");
                }
            }
            let elapsed = started.elapsed();
            if elapsed >= policy.timeout {
                let abort = self.abort_note(wuid).await;
                bail!(
                    "workunit {wuid} did not reach a final state within {:.1} s (last: {last}; {abort})",
                    policy.timeout.as_secs_f64()
                );
            }
            let pause = intervals
                .next()
                .unwrap_or(policy.max_interval)
                .min(policy.timeout - elapsed);
            tokio::time::sleep(pause).await;
        }
    }

    async fn abort_note(&self, wuid: &str) -> String {
        match self.abort(wuid).await {
            Ok(()) => "WUAbort sent".into(),
            Err(e) => format!("WUAbort failed too: {e:#}"),
        }
    }

    /// Create, submit to `cluster` and wait for the end. A workunit that
    /// could not be submitted or waited for is aborted (best effort).
    pub async fn run(
        &self,
        ecl: &str,
        jobname: &str,
        cluster: &str,
        policy: &PollPolicy,
    ) -> Result<Execution> {
        self.run_tracked(ecl, jobname, cluster, policy, &|_| {})
            .await
    }

    /// `run`, telling `on_created` the Wuid as soon as it exists (so that
    /// an interrupted caller can abort it).
    pub async fn run_tracked(
        &self,
        ecl: &str,
        jobname: &str,
        cluster: &str,
        policy: &PollPolicy,
        on_created: &(dyn Fn(&str) + Send + Sync),
    ) -> Result<Execution> {
        let started = Instant::now();
        let wuid = self.create(ecl, jobname).await?;
        on_created(&wuid);
        if let Err(e) = self.submit(&wuid, cluster).await {
            let abort = self.abort_note(&wuid).await;
            return Err(e.context(format!("submitting workunit {wuid} ({abort})")));
        }
        let info = self.wait(&wuid, policy).await?;
        Ok(Execution {
            wuid,
            info,
            elapsed: started.elapsed(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn states_map_from_ids_and_names() {
        assert_eq!(WuState::from_id(3), Some(WuState::Completed));
        assert_eq!(WuState::from_id(11), Some(WuState::Compiling));
        assert_eq!(WuState::from_id(9), Some(WuState::Submitted));
        assert_eq!(WuState::from_id(7), Some(WuState::Aborted));
        assert_eq!(WuState::from_id(-1), None);
        assert_eq!(WuState::from_id(17), None);
        assert_eq!(WuState::from_name("Running"), Some(WuState::Running));
        assert_eq!(WuState::from_name("blocked"), Some(WuState::Blocked));
        assert_eq!(WuState::from_name("wait"), Some(WuState::Wait));
        assert_eq!(WuState::from_name("finished"), None);
        for (i, (s, n)) in STATES.iter().enumerate() {
            assert_eq!(s.id(), i as i64);
            assert_eq!(s.name(), *n);
            assert_eq!(WuState::from_name(n), Some(*s));
        }
        assert_eq!(
            WuState::from_esp(Some("failed"), Some(4)).unwrap(),
            WuState::Failed
        );
        assert_eq!(WuState::from_esp(None, Some(8)).unwrap(), WuState::Blocked);
        assert_eq!(
            WuState::from_esp(Some("compiled"), None).unwrap(),
            WuState::Compiled
        );
        let e = WuState::from_esp(Some("running"), Some(3)).unwrap_err();
        assert!(format!("{e}").contains("disagrees"), "{e}");
        assert!(WuState::from_esp(Some("??"), Some(99)).is_err());
        let finals: Vec<_> = STATES.iter().filter(|(s, _)| s.is_final()).collect();
        assert_eq!(finals.len(), 4);
        assert!(!WuState::Compiled.is_final() && !WuState::Blocked.is_final());
    }

    #[test]
    fn requests_carry_the_ecm_field_names() {
        let r = request::create_and_update("OUTPUT(1);", "t1");
        assert_eq!(r.path(), "/WsWorkunits/WUCreateAndUpdate.json");
        assert_eq!(
            r.form,
            vec![
                ("QueryText".to_string(), "OUTPUT(1);".to_string()),
                ("Jobname".to_string(), "t1".to_string())
            ]
        );
        let s = request::submit("W1", "thor");
        assert_eq!(s.path(), "/WsWorkunits/WUSubmit.json");
        assert!(s.form.contains(&("Cluster".into(), "thor".into())));
        assert!(s.form.contains(&("Wuid".into(), "W1".into())));
        assert_eq!(s.what(), "WsWorkunits/WUSubmit for workunit W1");
        let a = request::abort("W1");
        assert!(a.form.contains(&("Wuids_i0".into(), "W1".into())));
        let i = request::info("W1");
        assert!(i.form.contains(&("IncludeGraphs".into(), "false".into())));
        let by_seq = request::result("W1", &ResultRef::Sequence(2), 10, 5);
        assert!(by_seq.form.contains(&("Sequence".into(), "2".into())));
        assert!(by_seq.form.contains(&("Start".into(), "10".into())));
        assert!(by_seq.form.contains(&("Count".into(), "5".into())));
        let by_name = request::result("W1", &ResultRef::Name("sorted".into()), 0, 5);
        assert!(
            by_name
                .form
                .contains(&("ResultName".into(), "sorted".into()))
        );
        assert!(!by_name.form.iter().any(|(k, _)| k == "Sequence"));
    }

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

    #[test]
    fn backoff_doubles_to_its_cap() {
        let v: Vec<u64> = backoff(Duration::from_millis(100), Duration::from_millis(700))
            .take(5)
            .map(|d| d.as_millis() as u64)
            .collect();
        assert_eq!(v, vec![100, 200, 400, 700, 700]);
    }

    #[test]
    fn client_rejects_bad_addresses() {
        let e = EspClient::new("localhost:8010", Duration::from_secs(1)).unwrap_err();
        assert_eq!(crate::error::exit_code(&e), crate::error::EXIT_USAGE);
        assert!(EspClient::new("http://127.0.0.1:8010/", Duration::from_secs(1)).is_ok());
    }
}
