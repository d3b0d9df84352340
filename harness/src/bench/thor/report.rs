//! What only the Thor benchmark's report.md shows: instances competing
//! for room (after the rounds table) and the Thor identity's requests by
//! call (after the requests by client). The rest of its report is the
//! core's (`bench::core::report`).

use std::fmt::Write;

use crate::bench::thor::result::ThorResult;

/// The contention table of the modes where instances competed for room.
pub fn contention(r: &ThorResult) -> String {
    let contended: Vec<_> = r
        .modes
        .iter()
        .filter_map(|(m, sum)| {
            let c = sum.result.contention.as_ref()?;
            let runs = sum
                .repeats
                .iter()
                .filter_map(|r| r.contention.as_ref())
                .collect();
            Some((m.as_str(), c, sum.result.run.wall_s, runs))
        })
        .collect();
    crate::bench::thor::contention::markdown(&contended)
}

/// Per mode, the Thor identity's requests by verb and resource.
pub fn identity_requests(r: &ThorResult) -> String {
    let mut s = String::from("\n### Requests of the Thor identity\n\n");
    for (m, sum) in &r.modes {
        let reqs = sum
            .result
            .run
            .window
            .api_requests_by_client_request
            .get(&sum.result.thor_agent_user);
        let parts: Vec<String> = reqs
            .into_iter()
            .flatten()
            .map(|(k, v)| format!("{k} {v}"))
            .collect();
        let _ = writeln!(
            s,
            "- {m}: {}",
            if parts.is_empty() {
                "none".into()
            } else {
                parts.join(", ")
            }
        );
    }
    s
}
