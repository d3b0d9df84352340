//! `status` of a local cluster: each component's process and health
//! check, and what a start that died half-way never got to.

use anyhow::Result;

use crate::cluster::local::components::ComponentDef;
use crate::cluster::local::process::Proc;
use crate::cluster::spec::ComponentHealth;

/// One row per component: those `up` never started (`missing`), `up`
/// itself when it did not finish (`ready` false), then every recorded
/// process with its health check's answer.
pub async fn report(
    defs: &[ComponentDef],
    missing: &[&str],
    ready: bool,
    procs: &[Proc],
) -> Vec<ComponentHealth> {
    let mut out = Vec::new();
    for name in missing {
        out.push(ComponentHealth {
            component: name.to_string(),
            pid: None,
            running: false,
            health: "never started (`up` did not finish)".into(),
            healthy: false,
        });
    }
    if !ready {
        out.push(ComponentHealth {
            component: "up".into(),
            pid: None,
            running: false,
            health: "incomplete: `up` did not finish its installs and readiness checks".into(),
            healthy: false,
        });
    }
    for p in procs {
        let running = p.is_running();
        let check: Result<String> = match defs.iter().find(|c| c.name == p.name) {
            _ if !running => Err(anyhow::anyhow!("process has exited")),
            Some(c) => c.health.check().await,
            None => Ok("running".into()),
        };
        let (healthy, health) = match check {
            Ok(body) => (true, body.trim().chars().take(60).collect()),
            Err(e) => (false, format!("{e:#}").chars().take(200).collect()),
        };
        out.push(ComponentHealth {
            component: p.name.clone(),
            pid: Some(p.pid),
            running,
            health,
            healthy,
        });
    }
    out
}
