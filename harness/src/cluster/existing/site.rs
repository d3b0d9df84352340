//! Where a run works on a cluster the harness did not start: namespaces of
//! its own, labelled with the run's id, and ServiceAccount identities with
//! short-lived tokens (no client certificates); `remove_run` deletes what
//! carries the run id and checks that nothing is left.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use k8s_openapi::api::authentication::v1::{TokenRequest, TokenRequestSpec};
use k8s_openapi::api::core::v1::{Namespace, ServiceAccount};
use kube::api::{Api, DeleteParams, ListParams, PostParams};

use crate::cluster::existing::labels::RUN_ID_LABEL;
pub use crate::cluster::run_id::{namespace_object, new_run_id, run_namespace};
use crate::poll::Poll;

/// Create namespace `name` carrying the run id.
pub async fn create_namespace(client: &kube::Client, name: &str, run_id: &str) -> Result<()> {
    let ns: Namespace = serde_json::from_value(namespace_object(name, run_id))?;
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &ns)
        .await
        .with_context(|| format!("creating namespace {name}"))?;
    Ok(())
}

/// A ServiceAccount `name` in `namespace` and a kubeconfig for it (a token
/// valid for `ttl`) written into `dir` (mode 0600): its path and the user
/// name the API server sees.
pub async fn service_account_kubeconfig(
    client: &kube::Client,
    user_kubeconfig: &Path,
    context: Option<&str>,
    namespace: &str,
    name: &str,
    dir: &Path,
    ttl: Duration,
) -> Result<(PathBuf, String)> {
    let sas: Api<ServiceAccount> = Api::namespaced(client.clone(), namespace);
    let sa: ServiceAccount = serde_json::from_value(serde_json::json!({
        "apiVersion": "v1", "kind": "ServiceAccount",
        "metadata": {"name": name, "namespace": namespace},
    }))?;
    match sas.create(&PostParams::default(), &sa).await {
        Ok(_) => {}
        Err(kube::Error::Api(e)) if e.code == 409 => {}
        Err(e) => return Err(e).with_context(|| format!("creating ServiceAccount {name}")),
    }
    let req = TokenRequest {
        spec: Some(TokenRequestSpec {
            expiration_seconds: Some(ttl.as_secs() as i64),
            ..Default::default()
        }),
        ..Default::default()
    };
    let token: TokenRequest = sas
        .create_subresource("token", name, &PostParams::default(), &req)
        .await
        .with_context(|| format!("requesting a token for ServiceAccount {namespace}/{name}"))?;
    let token = token
        .status
        .and_then(|s| s.token)
        .filter(|t| !t.is_empty())
        .with_context(|| format!("the token request for {namespace}/{name} returned no token"))?;
    let text = kubeconfig_with_token(user_kubeconfig, context, name, &token)?;
    let path = dir.join(format!("{namespace}-{name}.kubeconfig"));
    write_private(&path, &text)?;
    Ok((path, format!("system:serviceaccount:{namespace}:{name}")))
}

/// Make `ns` the default namespace of a kubeconfig
/// `service_account_kubeconfig` wrote: what its user runs without `-n`
/// lands there.
pub fn default_namespace(path: &Path, ns: &str) -> Result<()> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let mut doc: serde_json::Value =
        serde_json::from_str(&text).with_context(|| format!("{}: not JSON", path.display()))?;
    for c in doc["contexts"].as_array_mut().into_iter().flatten() {
        c["context"]["namespace"] = ns.into();
    }
    write_private(path, &(serde_json::to_string_pretty(&doc)? + "\n"))
}

fn write_private(path: &Path, text: &str) -> Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("writing {}", path.display()))?;
    f.write_all(text.as_bytes())?;
    Ok(())
}

/// A kubeconfig with the cluster entry of `user_kubeconfig`'s context (its
/// CA file made absolute) and a bearer token as the user.
pub fn kubeconfig_with_token(
    user_kubeconfig: &Path,
    context: Option<&str>,
    user: &str,
    token: &str,
) -> Result<String> {
    let kc = crate::cluster::client::read_kubeconfig("--kubeconfig", user_kubeconfig)?;
    let ctx_name = context
        .map(str::to_string)
        .or(kc.current_context.clone())
        .with_context(|| format!("{}: no current context", user_kubeconfig.display()))?;
    let ctx = kc
        .contexts
        .iter()
        .find(|c| c.name == ctx_name)
        .and_then(|c| c.context.as_ref())
        .with_context(|| format!("{}: no context {ctx_name}", user_kubeconfig.display()))?;
    let mut cluster = kc
        .clusters
        .iter()
        .find(|c| c.name == ctx.cluster)
        .and_then(|c| c.cluster.clone())
        .with_context(|| format!("{}: no cluster {}", user_kubeconfig.display(), ctx.cluster))?;
    if let Some(ca) = &cluster.certificate_authority
        && Path::new(ca).is_relative()
    {
        let base = user_kubeconfig.parent().unwrap_or(Path::new("."));
        cluster.certificate_authority = Some(base.join(ca).display().to_string());
    }
    let mut c = serde_json::to_value(&cluster)?;
    if let Some(m) = c.as_object_mut() {
        m.retain(|_, v| !v.is_null());
    }
    let doc = serde_json::json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "cluster", "cluster": c}],
        "users": [{"name": user, "user": {"token": token}}],
        "contexts": [{"name": "run", "context": {"cluster": "cluster", "user": user}}],
        "current-context": "run",
    });
    // JSON is YAML: every kubectl reads it.
    Ok(serde_json::to_string_pretty(&doc)? + "\n")
}

/// Kueue's cluster-scoped kinds a case suite may apply, labelled with the
/// run id (workload/gang/steps.rs).
const KUEUE_CLUSTER_KINDS: &[&str] = &[
    "ClusterQueue",
    "ResourceFlavor",
    "WorkloadPriorityClass",
    "Cohort",
];

/// Delete the run's Kueue objects (none where Kueue is not served). A
/// ClusterQueue goes once its workloads have, with the namespaces.
async fn remove_kueue_objects(client: &kube::Client, sel: &ListParams) -> Result<()> {
    for kind in KUEUE_CLUSTER_KINDS {
        let gvk = kube::core::GroupVersionKind::gvk("kueue.x-k8s.io", "v1beta2", kind);
        let Ok((ar, _)) = kube::discovery::pinned_kind(client, &gvk).await else {
            continue;
        };
        let api: Api<kube::api::DynamicObject> = Api::all_with(client.clone(), &ar);
        for name in api
            .list_metadata(sel)
            .await?
            .items
            .into_iter()
            .filter_map(|o| o.metadata.name)
        {
            match api.delete(&name, &DeleteParams::background()).await {
                Ok(_) => {}
                Err(kube::Error::Api(e)) if e.code == 404 => {}
                Err(e) => return Err(e).with_context(|| format!("deleting {kind} {name}")),
            }
        }
    }
    Ok(())
}

/// Delete every namespace, node, FlowSchema and Kueue object carrying
/// `run_id` and wait until no namespace is listed (their objects go with
/// them); Err naming what is left.
pub async fn remove_run(client: &kube::Client, run_id: &str, timeout: Duration) -> Result<()> {
    let api: Api<Namespace> = Api::all(client.clone());
    let sel = ListParams::default().labels(&format!("{RUN_ID_LABEL}={run_id}"));
    for ns in api.list_metadata(&sel).await?.items {
        let Some(name) = ns.metadata.name else {
            continue;
        };
        match api.delete(&name, &DeleteParams::background()).await {
            Ok(_) => {}
            Err(kube::Error::Api(e)) if e.code == 404 => {}
            Err(e) => return Err(e).with_context(|| format!("deleting namespace {name}")),
        }
    }
    // Nodes and FlowSchemas first: a namespace stuck terminating must not
    // keep them.
    let nodes: Api<k8s_openapi::api::core::v1::Node> = Api::all(client.clone());
    if let Ok(list) = nodes.list_metadata(&sel).await {
        for n in list.items.into_iter().filter_map(|n| n.metadata.name) {
            match nodes.delete(&n, &DeleteParams::default()).await {
                Ok(_) => {}
                Err(kube::Error::Api(e)) if e.code == 404 => {}
                Err(e) => return Err(e).with_context(|| format!("deleting node {n}")),
            }
        }
    }
    remove_kueue_objects(client, &sel).await?;
    let schemas = crate::cluster::existing::apf::remove(client, run_id).await?;
    if !schemas.is_empty() {
        let left = crate::cluster::existing::apf::remove(client, run_id).await?;
        if !left.is_empty() {
            bail!(
                "FlowSchemas of run {run_id} still there after deletion: {}: delete them with `kubectl delete flowschema -l {RUN_ID_LABEL}={run_id}`",
                left.join(", ")
            );
        }
    }
    let left = Poll::new(format!("namespaces of run {run_id} deleted"), timeout)
        .until_state(|| async {
            let names: Vec<String> = api
                .list_metadata(&sel)
                .await?
                .items
                .into_iter()
                .filter_map(|n| n.metadata.name)
                .collect();
            Ok(if names.is_empty() {
                Ok(())
            } else {
                Err(format!("still there: {}", names.join(", ")))
            })
        })
        .await;
    if let Err(e) = left {
        bail!(
            "{e:#}: delete them with `kubectl delete namespace,node,flowschema -l {RUN_ID_LABEL}={run_id}`"
        );
    }
    Ok(())
}

/// What runs left on the cluster: run id → the namespaces, nodes and
/// FlowSchemas carrying it (a run that was killed before its cleanup).
pub async fn runs_left(
    client: &kube::Client,
) -> Result<std::collections::BTreeMap<String, Vec<String>>> {
    use k8s_openapi::api::flowcontrol::v1::FlowSchema;
    let mut out: std::collections::BTreeMap<String, Vec<String>> = Default::default();
    let sel = ListParams::default().labels(RUN_ID_LABEL);
    let mut add = |meta: kube::api::ObjectMeta, kind: &str| {
        if let (Some(name), Some(run)) = (
            meta.name,
            meta.labels.and_then(|l| l.get(RUN_ID_LABEL).cloned()),
        ) {
            out.entry(run).or_default().push(format!("{kind}/{name}"));
        }
    };
    let namespaces = Api::<Namespace>::all(client.clone())
        .list_metadata(&sel)
        .await
        .context("listing the namespaces runs left")?;
    namespaces
        .items
        .into_iter()
        .for_each(|n| add(n.metadata, "namespace"));
    if let Ok(l) = Api::<k8s_openapi::api::core::v1::Node>::all(client.clone())
        .list_metadata(&sel)
        .await
    {
        l.items.into_iter().for_each(|n| add(n.metadata, "node"));
    }
    // Listing FlowSchemas may be refused; a run could not have made any.
    if let Ok(l) = Api::<FlowSchema>::all(client.clone())
        .list_metadata(&sel)
        .await
    {
        l.items
            .into_iter()
            .for_each(|f| add(f.metadata, "flowschema"));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_kubeconfig_keeps_the_cluster_and_makes_its_ca_absolute() {
        let dir = tempfile::tempdir().unwrap();
        let kc = dir.path().join("user.kubeconfig");
        // The files a kubeconfig names are read (bounded) with it.
        std::fs::create_dir_all(dir.path().join("pki")).unwrap();
        std::fs::write(dir.path().join("pki/ca.crt"), "not checked here\n").unwrap();
        std::fs::write(
            &kc,
            "apiVersion: v1\nkind: Config\nclusters:\n- name: c1\n  cluster:\n    server: https://10.1.2.3:6443\n    certificate-authority: pki/ca.crt\n- name: c2\n  cluster:\n    server: https://other:6443\n    insecure-skip-tls-verify: true\ncontexts:\n- name: a\n  context: {cluster: c1, user: u}\n- name: b\n  context: {cluster: c2, user: u}\ncurrent-context: a\nusers:\n- name: u\n  user: {token: secret}\n",
        )
        .unwrap();
        let text = kubeconfig_with_token(&kc, None, "sa", "TOKEN").unwrap();
        let parsed = kube::config::Kubeconfig::from_yaml(&text).unwrap();
        let c = parsed.clusters[0].cluster.as_ref().unwrap();
        assert_eq!(c.server.as_deref(), Some("https://10.1.2.3:6443"));
        assert_eq!(
            c.certificate_authority.as_deref(),
            Some(dir.path().join("pki/ca.crt").to_str().unwrap())
        );
        assert!(
            !text.contains("secret"),
            "the user's credentials stay out: {text}"
        );
        assert!(text.contains("TOKEN"));
        let b = kubeconfig_with_token(&kc, Some("b"), "sa", "T").unwrap();
        assert!(b.contains("https://other:6443") && b.contains("insecure-skip-tls-verify"));
        assert!(kubeconfig_with_token(&kc, Some("nope"), "sa", "T").is_err());
    }

    #[test]
    fn a_token_kubeconfig_gets_a_default_namespace_and_stays_private() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let kc = dir.path().join("user.kubeconfig");
        std::fs::write(
            &kc,
            "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: 'https://h:6443', insecure-skip-tls-verify: true}\ncontexts:\n- name: a\n  context: {cluster: c, user: u}\ncurrent-context: a\nusers:\n- name: u\n  user: {token: x}\n",
        )
        .unwrap();
        let path = dir.path().join("sa.kubeconfig");
        write_private(&path, &kubeconfig_with_token(&kc, None, "sa", "T").unwrap()).unwrap();
        default_namespace(&path, "harness-r1-a-0").unwrap();
        let parsed = kube::config::Kubeconfig::read_from(&path).unwrap();
        let ctx = parsed.contexts[0].context.as_ref().unwrap();
        assert_eq!(ctx.namespace.as_deref(), Some("harness-r1-a-0"));
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        assert!(default_namespace(&dir.path().join("none"), "x").is_err());
    }
}
