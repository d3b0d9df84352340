//! `EspClient`: one ESP reached over HTTP, one call per method used.

use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};
use serde_json::Value;

use crate::workload::ecl::wsworkunits::request::SERVICE;
use crate::workload::ecl::wsworkunits::request::{self, EspRequest, ResultRef};
use crate::workload::ecl::wsworkunits::response::{
    ResultPage, WorkunitInfo, parse_created, parse_info, parse_response, parse_result,
};

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
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_rejects_bad_addresses() {
        let e = EspClient::new("localhost:8010", Duration::from_secs(1)).unwrap_err();
        assert_eq!(crate::error::exit_code(&e), crate::error::EXIT_USAGE);
        assert!(EspClient::new("http://127.0.0.1:8010/", Duration::from_secs(1)).is_ok());
    }
}
