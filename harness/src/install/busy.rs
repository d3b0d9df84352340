//! When an API server's refusal means "too busy now", not "no": the
//! answers a client may ask again after a pause. On a loaded machine the
//! API server's etcd misses its own deadline (seen in CI: a kind
//! cluster's `etcdserver: request timed out`, HTTP 500, applying JobSet's
//! Namespace while etcd's WAL fsync p99 was 134 ms) or the server sheds
//! load (429, 503, 504). A server-side apply is idempotent, so asking
//! again is safe whether or not the first write happened.

use std::time::Duration;

use crate::poll::Poll;

/// How long a request the server refuses as busy is asked again; its
/// other refusals end it at once.
const ASK_AGAIN_FOR: Duration = Duration::from_secs(90);

/// The one wait for a request the server may refuse as busy: asked again
/// from 0.5 s apart, doubling up to 8 s, for [`ASK_AGAIN_FOR`].
pub fn while_busy<'a>(what: impl Into<String>) -> Poll<'a> {
    Poll::new(what, ASK_AGAIN_FOR).backoff(Duration::from_millis(500), Duration::from_secs(8))
}

/// Answers of a busy server (HTTP 500 messages from etcd's or the
/// server's own deadlines; every other 500 is an answer).
const BUSY_500: [&str; 4] = [
    "etcdserver: request timed out",
    "etcdserver: leader changed",
    "the server was unable to return a response in the time allotted",
    "context deadline exceeded",
];

/// Whether the API server's answer `e` says it is too busy now.
pub fn server_busy(e: &kube::core::Status) -> bool {
    match e.code {
        429 | 503 | 504 => true,
        500 => BUSY_500.iter().any(|m| e.message.contains(m)),
        _ => false,
    }
}

/// Whether a kubectl's failure (its stderr, in `message`) is the server
/// being too busy: the 500 messages above, or kubectl's own words for
/// 429/503/504 (`the server has received too many requests`, `the server
/// is currently unable to handle the request`, `the server was unable to
/// return a response`).
pub fn kubectl_busy(message: &str) -> bool {
    BUSY_500.iter().any(|m| message.contains(m))
        || message.contains("the server has received too many requests")
        || message.contains("the server is currently unable to handle the request")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(code: u16, message: &str) -> kube::core::Status {
        kube::core::Status::failure(message, "").with_code(code)
    }

    #[test]
    fn a_timed_out_etcd_and_shed_load_are_busy_and_other_answers_are_not() {
        assert!(server_busy(&answer(500, "etcdserver: request timed out")));
        assert!(server_busy(&answer(429, "too many requests")));
        assert!(server_busy(&answer(503, "")));
        assert!(!server_busy(&answer(
            500,
            "Internal error occurred: failed calling webhook"
        )));
        assert!(!server_busy(&answer(422, "etcdserver: request timed out")));
        assert!(!server_busy(&answer(404, "not found")));
    }

    #[test]
    fn kubectl_says_busy_in_its_own_words() {
        assert!(kubectl_busy(
            "Error from server: etcdserver: request timed out"
        ));
        assert!(kubectl_busy(
            "Error from server (ServiceUnavailable): the server is currently unable to handle the request"
        ));
        assert!(!kubectl_busy(
            "error: unable to recognize \"x.yaml\": no matches for kind \"Foo\""
        ));
    }
}
