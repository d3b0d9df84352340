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

/// What one answer to a create or delete asked while the server may be
/// busy means: done, ask again (the busy answer, quoted, or the lost
/// connection named), or the error.
/// A create that finds its object there (409), or a delete that finds it
/// gone (404), after a busy answer is done: the first request landed
/// before its answer was lost.
fn settle<T>(
    answer: kube::Result<T>,
    asked_before: bool,
    done_code: Option<u16>,
) -> std::result::Result<std::result::Result<Option<T>, String>, kube::Error> {
    match answer {
        Ok(v) => Ok(Ok(Some(v))),
        Err(kube::Error::Api(e)) if server_busy(&e) => Ok(Err(format!(
            "the API server is busy ({} (HTTP {}))",
            e.message, e.code
        ))),
        Err(kube::Error::Api(e)) if asked_before && Some(e.code) == done_code => Ok(Ok(None)),
        Err(e) => match crate::cluster::read_again::lost_connection(&e) {
            Some(why) => Ok(Err(format!(
                "the connection was lost before an answer: {why}"
            ))),
            None => Err(e),
        },
    }
}

/// Ask `request` (`what` names it) until the server answers other than
/// busy; after a busy answer, `done_code` (if any) means the first one
/// landed. The one loop of the install's applies and the suites' creates
/// and deletes.
pub(crate) async fn ask<T, F, Fut>(
    what: String,
    done_code: Option<u16>,
    mut request: F,
) -> anyhow::Result<()>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = kube::Result<T>>,
{
    let mut asked = false;
    while_busy(what.clone())
        .until_state(|| {
            let again = std::mem::replace(&mut asked, true);
            let (answer, what) = (request(), what.clone());
            async move {
                match settle(answer.await, again, done_code) {
                    Ok(Ok(_)) => Ok(Ok(())),
                    Ok(Err(why)) => {
                        tracing::warn!("{what}: {why}; asking again");
                        Ok(Err(why))
                    }
                    Err(e) => Err(anyhow::Error::from(e).context(what)),
                }
            }
        })
        .await
}

/// Create `obj` through `api`, asked again while the server is busy
/// ([`while_busy`]); a create asked again that finds the object there is
/// done (the first landed). Errors name the object.
pub async fn create<K>(api: &kube::Api<K>, obj: &K) -> anyhow::Result<()>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + serde::Serialize + std::fmt::Debug,
    K::DynamicType: Default,
{
    let what = format!(
        "creating {} {}",
        K::kind(&Default::default()),
        obj.meta().name.as_deref().unwrap_or("(generated name)")
    );
    let params = kube::api::PostParams::default();
    ask(what, Some(409), || api.create(&params, obj)).await
}

/// Delete `name` through `api`, asked again while the server is busy; a
/// delete asked again that finds it gone is done.
pub async fn delete<K>(api: &kube::Api<K>, name: &str) -> anyhow::Result<()>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
    K::DynamicType: Default,
{
    let what = format!("deleting {} {name}", K::kind(&Default::default()));
    let params = kube::api::DeleteParams::default();
    ask(what, Some(404), || api.delete(name, &params)).await
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

    fn refused(code: u16, message: &str) -> kube::Result<()> {
        Err(kube::Error::Api(Box::new(answer(code, message))))
    }

    #[test]
    fn a_create_that_finds_its_object_after_a_busy_answer_is_done() {
        let busy = settle(
            refused(500, "etcdserver: request timed out"),
            false,
            Some(409),
        );
        assert!(
            matches!(busy, Ok(Err(ref m)) if m.contains("HTTP 500")),
            "{busy:?}"
        );
        // Asked again: the first landed.
        assert!(matches!(
            settle(refused(409, "already exists"), true, Some(409)),
            Ok(Ok(None))
        ));
        // Asked first: somebody else's object, an error.
        assert!(settle(refused(409, "already exists"), false, Some(409)).is_err());
        // A delete asked again that finds nothing is done; other refusals are errors.
        assert!(matches!(
            settle(refused(404, "not found"), true, Some(404)),
            Ok(Ok(None))
        ));
        assert!(settle(refused(409, "conflict"), true, Some(404)).is_err());
        assert!(settle(refused(403, "forbidden"), true, Some(409)).is_err());
        assert!(matches!(settle(Ok(7), false, Some(409)), Ok(Ok(Some(7)))));
        // No answer over a lost connection: asked again, like a busy one.
        let lost = kube::Error::Service(Box::new(std::io::Error::from(
            std::io::ErrorKind::ConnectionReset,
        )));
        assert!(matches!(
            settle::<()>(Err(lost), false, Some(409)),
            Ok(Err(_))
        ));
        let refused = kube::Error::Service(Box::new(std::io::Error::from(
            std::io::ErrorKind::ConnectionRefused,
        )));
        assert!(settle::<()>(Err(refused), false, Some(409)).is_err());
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
