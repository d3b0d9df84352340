//! A read whose connection was lost before the server answered is sent
//! again, as client-go sends it: `k8s.io/client-go/rest/request.go`,
//! `(*Request).request`, asks a GET again when its error is a connection
//! reset, a probable EOF or a lost HTTP/2 connection (its health check
//! closes a connection that has not answered for 30 s + 15 s), and never
//! asks a write again. Our clients' read timeout (60 s,
//! cluster::client) plays that health check's part: seen in CI of
//! 99a3dad, a kind API server's LIST of Thor's worker pods got no answer
//! on a loaded 2-core machine ("connection error: timed out") and ended a
//! Thor run that a second LIST would have finished.
//!
//! The layer sits outside kube's own (which asks again on 429, 503 and
//! 504 answers): a write here is never asked again (busy::ask settles
//! those, knowing what a 409 or 404 after a lost answer means), nor a
//! watch (its stream is the caller's to resume).

use std::error::Error as StdError;
use std::io::ErrorKind;
use std::time::Duration;

use http::{Method, Request};
use kube::client::Body;
use tower::BoxError;
use tower::retry::Policy;

/// How often a read is sent again after its first try.
pub const AGAIN: u32 = 3;
/// The pause before the first repeat; each next one doubles it.
const FIRST_PAUSE: Duration = Duration::from_millis(500);

/// The policy: a GET (not a watch) whose connection failed before an
/// answer is sent again, at most [`AGAIN`] times.
#[derive(Clone, Debug, Default)]
pub struct ReadAgain {
    sent_again: u32,
}

/// Why `err` means the request got no answer over a connection that
/// failed (the server may be alive and the next connection answer), or
/// None for every other error (a refused connection, a TLS failure, a
/// bad URL: asking again would meet the same).
pub fn lost_connection(err: &(dyn StdError + 'static)) -> Option<String> {
    let mut cause = Some(err);
    while let Some(e) = cause {
        if let Some(io) = e.downcast_ref::<std::io::Error>()
            && matches!(
                io.kind(),
                ErrorKind::TimedOut
                    | ErrorKind::ConnectionReset
                    | ErrorKind::ConnectionAborted
                    | ErrorKind::BrokenPipe
                    | ErrorKind::UnexpectedEof
            )
        {
            return Some(io.to_string());
        }
        if let Some(h) = e.downcast_ref::<hyper::Error>()
            && (h.is_incomplete_message() || h.is_timeout())
        {
            return Some(h.to_string());
        }
        cause = e.source();
    }
    None
}

/// Whether `req` is a read that may be sent again: a GET that is not a
/// watch (`watch=true` or `watch=1` in its query).
fn repeatable(req: &Request<Body>) -> bool {
    req.method() == Method::GET
        && !req
            .uri()
            .query()
            .unwrap_or("")
            .split('&')
            .any(|kv| kv == "watch=true" || kv == "watch=1")
}

impl<Res> Policy<Request<Body>, Res, BoxError> for ReadAgain {
    type Future = tokio::time::Sleep;

    fn retry(
        &mut self,
        req: &mut Request<Body>,
        result: &mut Result<Res, BoxError>,
    ) -> Option<Self::Future> {
        let Err(err) = result else { return None };
        if self.sent_again >= AGAIN || !repeatable(req) {
            return None;
        }
        let why = lost_connection(err.as_ref())?;
        let pause = FIRST_PAUSE * 2u32.pow(self.sent_again);
        self.sent_again += 1;
        tracing::warn!(
            "GET {}: the connection was lost before an answer ({why}); asking again in {:.1} s ({} of {AGAIN})",
            req.uri().path(),
            pause.as_secs_f64(),
            self.sent_again
        );
        Some(tokio::time::sleep(pause))
    }

    fn clone_request(&mut self, req: &Request<Body>) -> Option<Request<Body>> {
        if !repeatable(req) {
            return None;
        }
        let mut again = Request::builder()
            .method(req.method().clone())
            .uri(req.uri().clone())
            .version(req.version())
            .body(req.body().try_clone()?)
            .ok()?;
        *again.headers_mut() = req.headers().clone();
        *again.extensions_mut() = req.extensions().clone();
        Some(again)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get(uri: &str) -> Request<Body> {
        Request::get(uri).body(Body::empty()).unwrap()
    }

    /// The copy the policy would send again (`()` stands for the answer type).
    fn copy(policy: &mut ReadAgain, req: &Request<Body>) -> Option<Request<Body>> {
        <ReadAgain as Policy<Request<Body>, (), BoxError>>::clone_request(policy, req)
    }

    fn failed(kind: ErrorKind) -> Result<(), BoxError> {
        Err(Box::new(std::io::Error::from(kind)))
    }

    #[tokio::test]
    async fn a_read_whose_connection_was_lost_is_sent_again_three_times() {
        let mut policy = ReadAgain::default();
        let mut req = get("/api/v1/namespaces/x/pods?labelSelector=a%3Db");
        let pauses: Vec<_> = (0..5)
            .map(|_| {
                policy
                    .retry(&mut req, &mut failed(ErrorKind::TimedOut))
                    .map(|s| s.deadline())
            })
            .collect();
        assert_eq!(pauses.iter().filter(|p| p.is_some()).count(), 3);
        assert!(pauses[3].is_none() && pauses[4].is_none());
        assert!(copy(&mut policy, &req).is_some());
    }

    #[tokio::test]
    async fn writes_watches_answers_and_refusals_are_not_sent_again() {
        let mut policy = ReadAgain::default();
        let mut post = Request::post("/api/v1/namespaces/x/pods")
            .body(Body::from(b"{}".to_vec()))
            .unwrap();
        assert!(
            policy
                .retry(&mut post, &mut failed(ErrorKind::TimedOut))
                .is_none()
        );
        assert!(copy(&mut policy, &post).is_none());
        let mut watch = get("/api/v1/pods?watch=true&resourceVersion=5");
        assert!(
            policy
                .retry(&mut watch, &mut failed(ErrorKind::ConnectionReset))
                .is_none()
        );
        let mut list = get("/api/v1/pods");
        assert!(
            policy
                .retry(&mut list, &mut failed(ErrorKind::ConnectionRefused))
                .is_none()
        );
        assert!(policy.retry(&mut list, &mut Ok(())).is_none());
    }

    #[test]
    fn a_lost_connection_is_found_under_the_client_errors_that_wrap_it() {
        let inner = std::io::Error::from(ErrorKind::TimedOut);
        let wrapped = anyhow::Error::new(inner).context("client error (SendRequest)");
        let boxed: Box<dyn StdError + Send + Sync> = wrapped.into();
        assert_eq!(
            lost_connection(boxed.as_ref()).as_deref(),
            Some("timed out")
        );
        let other: Box<dyn StdError + Send + Sync> = "certificate unknown".into();
        assert!(lost_connection(other.as_ref()).is_none());
    }
}
