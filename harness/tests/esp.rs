//! The WsWorkunits client against the "ESP test server": a small local
//! HTTP server, written here, that implements the subset of HPCC's ESP
//! WsWorkunits service the client uses (WUCreateAndUpdate, WUSubmit,
//! WUInfo, WUResult, WUAbort) with scripted per-workunit state sequences
//! and scripted faults (slow answers, malformed JSON, HTTP 500, ESP
//! exceptions). It is the one stand-in for HPCC the project allows; it
//! lives in tests only and records every request it receives so the tests
//! can assert what the client sent.

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use harness::workload::ecl::cases;
use harness::workload::ecl::run::check_results;
use harness::workload::ecl::wsworkunits::{EspClient, PollPolicy, ResultRef, WuState};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

mod esp_test_server {
    use super::*;

    /// Something the server does instead of answering normally.
    #[derive(Debug, Clone)]
    pub enum Fault {
        /// Answer after this long.
        Slow(Duration),
        /// A body that is not JSON.
        Malformed,
        /// HTTP 500 with a text body.
        Http500,
        /// HTTP 200 with an ESP Exceptions block.
        Exception(i64, &'static str),
    }

    /// How one workunit behaves.
    #[derive(Debug, Clone, Default)]
    pub struct Script {
        /// States reported by successive WUInfo calls after WUSubmit; the
        /// last repeats.
        pub states: Vec<&'static str>,
        /// ECLException entries reported by WUInfo.
        pub exceptions: Vec<Value>,
        /// Result name → rows.
        pub results: Vec<(&'static str, Vec<Value>)>,
        /// Method → fault (every call of it).
        pub faults: BTreeMap<&'static str, Fault>,
    }

    #[derive(Debug, Clone)]
    pub struct Received {
        pub method: String,
        pub form: BTreeMap<String, String>,
    }

    struct Wu {
        script: Script,
        submitted: bool,
        infos: usize,
        aborted: bool,
    }

    #[derive(Default)]
    struct State {
        scripts: VecDeque<Script>,
        wus: BTreeMap<String, Wu>,
        received: Vec<Received>,
        created: u32,
    }

    /// Faults of create (no workunit yet) come from the next script.
    pub struct Server {
        pub base: String,
        state: Arc<Mutex<State>>,
        task: tokio::task::JoinHandle<()>,
    }

    impl Drop for Server {
        fn drop(&mut self) {
            self.task.abort();
        }
    }

    impl Server {
        /// Serve on 127.0.0.1; each created workunit takes the next script.
        pub async fn start(scripts: Vec<Script>) -> Server {
            let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
            let base = format!("http://{}", listener.local_addr().unwrap());
            let state = Arc::new(Mutex::new(State {
                scripts: scripts.into(),
                ..Default::default()
            }));
            let st = state.clone();
            let task = tokio::spawn(async move {
                loop {
                    let Ok((sock, _)) = listener.accept().await else {
                        continue;
                    };
                    let st = st.clone();
                    tokio::spawn(async move {
                        let _ = serve(sock, st).await;
                    });
                }
            });
            Server { base, state, task }
        }

        pub fn received(&self) -> Vec<Received> {
            self.state.lock().unwrap().received.clone()
        }

        pub fn methods(&self) -> Vec<String> {
            self.received().into_iter().map(|r| r.method).collect()
        }
    }

    fn decode(s: &str) -> String {
        let b = s.as_bytes();
        let mut out = Vec::with_capacity(b.len());
        let mut i = 0;
        while i < b.len() {
            match b[i] {
                b'+' => out.push(b' '),
                b'%' if i + 2 < b.len() => {
                    let h = std::str::from_utf8(&b[i + 1..i + 3]).unwrap();
                    out.push(u8::from_str_radix(h, 16).unwrap());
                    i += 2;
                }
                c => out.push(c),
            }
            i += 1;
        }
        String::from_utf8(out).unwrap()
    }

    fn parse_form(body: &str) -> BTreeMap<String, String> {
        body.split('&')
            .filter(|p| !p.is_empty())
            .map(|p| {
                let (k, v) = p.split_once('=').unwrap_or((p, ""));
                (decode(k), decode(v))
            })
            .collect()
    }

    async fn read_request(sock: &mut TcpStream) -> Option<(String, String)> {
        let mut buf = Vec::new();
        let mut tmp = [0u8; 4096];
        let head_end = loop {
            let n = sock.read(&mut tmp).await.ok()?;
            if n == 0 {
                return None;
            }
            buf.extend_from_slice(&tmp[..n]);
            if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break i + 4;
            }
        };
        let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
        let path = head.split_whitespace().nth(1)?.to_string();
        let len: usize = head
            .lines()
            .find_map(|l| {
                let (k, v) = l.split_once(':')?;
                k.eq_ignore_ascii_case("content-length")
                    .then(|| v.trim().parse().ok())?
            })
            .unwrap_or(0);
        while buf.len() < head_end + len {
            let n = sock.read(&mut tmp).await.ok()?;
            if n == 0 {
                break;
            }
            buf.extend_from_slice(&tmp[..n]);
        }
        let body = String::from_utf8_lossy(&buf[head_end..]).to_string();
        Some((path, body))
    }

    async fn serve(mut sock: TcpStream, st: Arc<Mutex<State>>) -> std::io::Result<()> {
        let Some((path, body)) = read_request(&mut sock).await else {
            return Ok(());
        };
        let method = path
            .trim_start_matches("/WsWorkunits/")
            .trim_end_matches(".json")
            .to_string();
        let form = parse_form(&body);
        let (status, body, delay) = answer(&st, &method, &form);
        if let Some(d) = delay {
            tokio::time::sleep(d).await;
        }
        let reason = if status == 200 {
            "OK"
        } else {
            "Internal Server Error"
        };
        let resp = format!(
            "HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
        sock.write_all(resp.as_bytes()).await?;
        sock.shutdown().await
    }

    fn state_id(name: &str) -> i64 {
        WuState::from_name(name).map_or(0, |s| s.id())
    }

    /// The answer to one call: status, body, delay.
    fn answer(
        st: &Mutex<State>,
        method: &str,
        form: &BTreeMap<String, String>,
    ) -> (u16, String, Option<Duration>) {
        let mut st = st.lock().unwrap();
        st.received.push(Received {
            method: method.to_string(),
            form: form.clone(),
        });
        let wuid = form
            .get("Wuid")
            .or_else(|| form.get("Wuids_i0"))
            .cloned()
            .unwrap_or_default();
        let fault = if method == "WUCreateAndUpdate" {
            st.scripts
                .front()
                .and_then(|s| s.faults.get(method).cloned())
        } else {
            st.wus
                .get(&wuid)
                .and_then(|w| w.script.faults.get(method).cloned())
        };
        let mut delay = None;
        match fault {
            Some(Fault::Malformed) => {
                return (
                    200,
                    format!("{{\"{method}Response\": {{\"Workunit\": "),
                    None,
                );
            }
            Some(Fault::Http500) => return (500, "ESP fell over".into(), None),
            Some(Fault::Exception(code, msg)) => {
                let b = json!({"Exceptions": {"Source": "WsWorkunits", "Exception": [{"Code": code, "Message": msg}]}});
                return (200, b.to_string(), None);
            }
            Some(Fault::Slow(d)) => delay = Some(d),
            None => {}
        }
        let key = format!("{method}Response");
        let body = match method {
            "WUCreateAndUpdate" => {
                let Some(script) = st.scripts.pop_front() else {
                    return (200, json!({"Exceptions": {"Exception": [{"Code": 1, "Message": "no script left"}]}}).to_string(), None);
                };
                st.created += 1;
                let wuid = format!("W20260101-00000{}", st.created);
                st.wus.insert(
                    wuid.clone(),
                    Wu {
                        script,
                        submitted: false,
                        infos: 0,
                        aborted: false,
                    },
                );
                json!({&key: {"Workunit": {"Wuid": wuid, "State": "unknown", "StateID": 0,
                    "Jobname": form.get("Jobname"), "Query": {"Text": form.get("QueryText")}}}})
            }
            "WUSubmit" => match st.wus.get_mut(&wuid) {
                Some(w) => {
                    w.submitted = true;
                    json!({&key: {}})
                }
                None => not_found(&wuid),
            },
            "WUAbort" => match st.wus.get_mut(&wuid) {
                Some(w) => {
                    w.aborted = true;
                    json!({&key: {"ActionResults": {"WUActionResult": [{"Wuid": wuid, "Action": "Abort", "Result": "Success"}]}}})
                }
                None => not_found(&wuid),
            },
            "WUInfo" => {
                match st.wus.get_mut(&wuid) {
                    Some(w) => {
                        let state = if w.aborted {
                            "aborted"
                        } else if !w.submitted {
                            "unknown"
                        } else {
                            let i = w.infos.min(w.script.states.len().saturating_sub(1));
                            w.infos += 1;
                            w.script.states.get(i).copied().unwrap_or("unknown")
                        };
                        let results: Vec<Value> = w
                        .script
                        .results
                        .iter()
                        .enumerate()
                        .map(|(i, (n, rows))| json!({"Name": n, "Sequence": i, "Total": rows.len()}))
                        .collect();
                        json!({&key: {"Workunit": {
                        "Wuid": wuid, "State": state, "StateID": state_id(state), "Cluster": "thor",
                        "Exceptions": {"ECLException": w.script.exceptions},
                        "Results": {"ECLResult": results}}}})
                    }
                    None => not_found(&wuid),
                }
            }
            "WUResult" => match st.wus.get(&wuid) {
                Some(w) => {
                    let found = match (form.get("ResultName"), form.get("Sequence")) {
                        (Some(n), _) => w
                            .script
                            .results
                            .iter()
                            .enumerate()
                            .find(|(_, (rn, _))| rn == n),
                        (None, Some(s)) => {
                            let s: usize = s.parse().unwrap();
                            w.script.results.get(s).map(|r| (s, r))
                        }
                        _ => None,
                    };
                    match found {
                        Some((seq, (name, rows))) => {
                            let start: usize = form.get("Start").map_or(0, |s| s.parse().unwrap());
                            let count: usize = form.get("Count").map_or(1, |s| s.parse().unwrap());
                            let page: Vec<Value> =
                                rows.iter().skip(start).take(count).cloned().collect();
                            json!({&key: {"Wuid": wuid, "Sequence": seq, "Name": name,
                                "Start": start, "Count": page.len(), "Requested": count, "Total": rows.len(),
                                "Result": {*name: {"Row": page}}}})
                        }
                        None => {
                            json!({"Exceptions": {"Source": "WsWorkunits", "Exception": [{"Code": 20083, "Message": "Cannot find result"}]}})
                        }
                    }
                }
                None => not_found(&wuid),
            },
            other => {
                json!({"Exceptions": {"Exception": [{"Code": 0, "Message": format!("method {other} not served")}]}})
            }
        };
        (200, body.to_string(), delay)
    }

    fn not_found(wuid: &str) -> Value {
        json!({"Exceptions": {"Source": "WsWorkunits", "Exception": [{"Code": 20080, "Message": format!("Cannot open workunit {wuid}.")}]}})
    }
}

use esp_test_server::{Fault, Script, Server};

const ECL: &str = "OUTPUT(DATASET([{1, 'Ada & Bob'}], {UNSIGNED id; STRING name}), NAMED('people'));\n// 100% of it\n";

fn fast() -> PollPolicy {
    PollPolicy {
        timeout: Duration::from_secs(10),
        initial_interval: Duration::from_millis(10),
        max_interval: Duration::from_millis(40),
        max_poll_errors: 0,
    }
}

fn client(s: &Server, timeout_ms: u64) -> EspClient {
    EspClient::new(&s.base, Duration::from_millis(timeout_ms)).unwrap()
}

/// Run the ECL and expect it to fail: the error with its causes.
async fn run_error(s: &Server, timeout_ms: u64, policy: &PollPolicy) -> String {
    let e = client(s, timeout_ms)
        .run(ECL, "j", "thor", policy)
        .await
        .unwrap_err();
    format!("{e:#}")
}

fn completes(results: Vec<(&'static str, Vec<Value>)>) -> Script {
    Script {
        states: vec!["compiling", "compiled", "submitted", "running", "completed"],
        results,
        ..Default::default()
    }
}

#[tokio::test]
async fn a_workunit_runs_to_completed_and_its_results_are_fetched() {
    let people = vec![json!({"id": 1, "name": "Ada & Bob"})];
    let s = Server::start(vec![completes(vec![("people", people.clone())])]).await;
    let c = client(&s, 2000);
    let exec = c.run(ECL, "harness-t1", "thor", &fast()).await.unwrap();
    assert_eq!(exec.wuid, "W20260101-000001");
    assert_eq!(exec.info.state, WuState::Completed);
    assert_eq!(exec.info.results[0].name, "people");
    let page = c
        .result(&exec.wuid, &ResultRef::Name("people".into()), 0, 10)
        .await
        .unwrap();
    assert_eq!((page.total, page.rows.clone()), (1, people));
    let by_seq = c
        .result(&exec.wuid, &ResultRef::Sequence(0), 0, 10)
        .await
        .unwrap();
    assert_eq!(by_seq.name, "people");

    let got = s.received();
    let methods: Vec<&str> = got.iter().map(|r| r.method.as_str()).collect();
    assert_eq!(
        methods,
        [
            "WUCreateAndUpdate",
            "WUSubmit",
            "WUInfo",
            "WUInfo",
            "WUInfo",
            "WUInfo",
            "WUInfo",
            "WUResult",
            "WUResult"
        ]
    );
    // The ECL text arrives intact through the form encoding.
    assert_eq!(got[0].form["QueryText"], ECL);
    assert_eq!(got[0].form["Jobname"], "harness-t1");
    assert_eq!(got[1].form["Wuid"], exec.wuid);
    assert_eq!(got[1].form["Cluster"], "thor");
    assert!(got[2..7].iter().all(|r| r.form["Wuid"] == exec.wuid));
    assert_eq!(got[7].form["ResultName"], "people");
    assert_eq!(got[8].form["Sequence"], "0");
}

#[tokio::test]
async fn a_failed_workunit_reports_its_errors() {
    let s = Server::start(vec![Script {
        states: vec!["compiling", "failed"],
        exceptions: vec![
            json!({"Source": "eclcc", "Severity": "Error", "Code": 2167, "Message": "Unknown identifier \"OUPUT\"", "FileName": "", "LineNo": 1, "Column": 1}),
            json!({"Source": "eclcc", "Severity": "Warning", "Code": 1, "Message": "just a warning"}),
        ],
        ..Default::default()
    }])
    .await;
    let exec = client(&s, 2000)
        .run(ECL, "j", "thor", &fast())
        .await
        .unwrap();
    assert_eq!(exec.info.state, WuState::Failed);
    let errors = exec.info.errors();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(
        errors[0].contains("[2167]") && errors[0].contains("OUPUT"),
        "{errors:?}"
    );
    assert!(!s.methods().contains(&"WUAbort".to_string()));
}

#[tokio::test]
async fn an_aborted_workunit_is_final() {
    let s = Server::start(vec![Script {
        states: vec!["running", "aborting", "aborted"],
        ..Default::default()
    }])
    .await;
    let exec = client(&s, 2000)
        .run(ECL, "j", "thor", &fast())
        .await
        .unwrap();
    assert_eq!(exec.info.state, WuState::Aborted);
}

#[tokio::test]
async fn a_workunit_that_never_ends_is_aborted_at_the_timeout() {
    let s = Server::start(vec![Script {
        states: vec!["compiling", "blocked", "running"],
        ..Default::default()
    }])
    .await;
    let policy = PollPolicy {
        timeout: Duration::from_millis(400),
        ..fast()
    };
    let t = std::time::Instant::now();
    let m = run_error(&s, 2000, &policy).await;
    assert!(t.elapsed() < Duration::from_secs(3), "{:?}", t.elapsed());
    assert!(
        m.contains("W20260101-000001") && m.contains("within 0.4 s"),
        "{m}"
    );
    assert!(
        m.contains("last: state running") && m.contains("WUAbort sent"),
        "{m}"
    );
    let got = s.received();
    let abort = got
        .iter()
        .find(|r| r.method == "WUAbort")
        .expect("WUAbort sent");
    assert_eq!(abort.form["Wuids_i0"], "W20260101-000001");
}

#[tokio::test]
async fn a_slow_answer_beyond_the_request_timeout_is_an_error_naming_the_call() {
    let mut slow_create = Script::default();
    slow_create
        .faults
        .insert("WUCreateAndUpdate", Fault::Slow(Duration::from_secs(3)));
    let s = Server::start(vec![slow_create]).await;
    let t = std::time::Instant::now();
    let m = run_error(&s, 300, &fast()).await;
    assert!(t.elapsed() < Duration::from_secs(2), "{:?}", t.elapsed());
    assert!(
        m.contains("WsWorkunits/WUCreateAndUpdate") && m.contains("per-request timeout of 0.3 s"),
        "{m}"
    );

    // WUInfo slow every time: the poll gives up after its error budget,
    // naming the workunit, and aborts it.
    let mut slow_info = completes(vec![]);
    slow_info
        .faults
        .insert("WUInfo", Fault::Slow(Duration::from_secs(3)));
    let s = Server::start(vec![slow_info]).await;
    let policy = PollPolicy {
        max_poll_errors: 1,
        ..fast()
    };
    let m = run_error(&s, 300, &policy).await;
    assert!(
        m.contains("polling workunit W20260101-000001: 2 failed WUInfo calls"),
        "{m}"
    );
    assert!(
        m.contains("WUInfo for workunit W20260101-000001") && m.contains("per-request timeout"),
        "{m}"
    );
    assert!(m.contains("WUAbort sent"), "{m}");
    assert_eq!(s.methods().iter().filter(|m| *m == "WUInfo").count(), 2);
}

#[tokio::test]
async fn malformed_json_is_quoted_with_the_method() {
    let mut sc = completes(vec![]);
    sc.faults.insert("WUSubmit", Fault::Malformed);
    let s = Server::start(vec![sc]).await;
    let m = run_error(&s, 2000, &fast()).await;
    assert!(
        m.contains("WsWorkunits/WUSubmit for workunit W20260101-000001"),
        "{m}"
    );
    assert!(
        m.contains("malformed JSON") && m.contains("\"Workunit\":⟪here⟫"),
        "{m}"
    );
    // Submission failed: the workunit is aborted, not left behind.
    assert!(
        m.contains("submitting workunit W20260101-000001 (WUAbort sent)"),
        "{m}"
    );
    assert_eq!(s.methods(), ["WUCreateAndUpdate", "WUSubmit", "WUAbort"]);
}

#[tokio::test]
async fn http_500_and_esp_exceptions_are_errors() {
    let mut sc = completes(vec![]);
    sc.faults.insert("WUInfo", Fault::Http500);
    let s = Server::start(vec![sc]).await;
    let m = run_error(&s, 2000, &fast()).await;
    assert!(
        m.contains("WUInfo for workunit W20260101-000001: HTTP 500: ESP fell over"),
        "{m}"
    );

    let mut sc = completes(vec![("r", vec![json!({"a": 1})])]);
    sc.faults
        .insert("WUResult", Fault::Exception(20083, "Cannot find result r"));
    let s = Server::start(vec![sc]).await;
    let c = client(&s, 2000);
    let exec = c.run(ECL, "j", "thor", &fast()).await.unwrap();
    let e = c
        .result(&exec.wuid, &ResultRef::Name("r".into()), 0, 1)
        .await
        .unwrap_err();
    let m = format!("{e:#}");
    assert!(m.contains("WsWorkunits/WUResult for workunit W20260101-000001: ESP exception: WsWorkunits: [20083] Cannot find result r"), "{m}");

    // Unknown workunit: ESP's own exception comes through.
    let e = c.info("W19990101-000000").await.unwrap_err();
    assert!(format!("{e:#}").contains("[20080] Cannot open workunit W19990101-000000"));
}

#[tokio::test]
async fn large_results_are_fetched_in_pages() {
    let rows: Vec<Value> = (0..2500).map(|i| json!({"id": i})).collect();
    let s = Server::start(vec![completes(vec![("big", rows.clone())])]).await;
    let c = client(&s, 2000);
    let exec = c.run(ECL, "j", "thor", &fast()).await.unwrap();
    let page = c
        .result_rows(&exec.wuid, &ResultRef::Name("big".into()), 1000, 10_000)
        .await
        .unwrap();
    assert_eq!(page.rows, rows);
    let starts: Vec<String> = s
        .received()
        .into_iter()
        .filter(|r| r.method == "WUResult")
        .map(|r| r.form["Start"].clone())
        .collect();
    assert_eq!(starts, ["0", "1000", "2000"]);
    let e = c
        .result_rows(&exec.wuid, &ResultRef::Name("big".into()), 1000, 100)
        .await
        .unwrap_err();
    assert!(
        format!("{e}").contains("2500 rows, more than the 100"),
        "{e}"
    );
}

#[tokio::test]
async fn case_results_are_checked_against_the_expected_file() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("c.ecl"), ECL).unwrap();
    std::fs::write(
        d.path().join("c.expected.json"),
        r#"{"results": {"people": {"rows": [{"id": 1, "name": "Ada & Bob"}]}}}"#,
    )
    .unwrap();
    let case = cases::load(d.path(), "c").unwrap();
    let good = vec![json!({"id": "1", "name": "Ada & Bob"})];
    let bad = vec![json!({"id": "2", "name": "Ada & Bob"})];
    let s = Server::start(vec![
        completes(vec![("people", good)]),
        completes(vec![("people", bad)]),
    ])
    .await;
    let c = client(&s, 2000);
    let w1 = c.run(ECL, "j", "thor", &fast()).await.unwrap().wuid;
    check_results(&c, &w1, &case).await.unwrap();
    let w2 = c.run(ECL, "j", "thor", &fast()).await.unwrap().wuid;
    let m = format!("{:#}", check_results(&c, &w2, &case).await.unwrap_err());
    assert!(
        m.contains(&w2) && m.contains("c.expected.json") && m.contains("row 0"),
        "{m}"
    );
}
