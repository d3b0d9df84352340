//! What one forked `kubectl` costs the API server, as HPCC's Thor forks it
//! for every Kubernetes call, and how the harness runs it the same way.
//!
//! HPCC's platform image ships kubectl 1.29.7 and runs with a read-only
//! root filesystem, so kubectl's discovery cache can never be written:
//! every call starts cold ([`DiscoveryCache::None`]). A long-lived process
//! with a writable home would keep a warm cache ([`DiscoveryCache::Warm`]).
//!
//! [`KubectlModel::expected_requests`] predicts the requests of one call
//! from what the server serves ([`Discovery`], read from the live server).
//! Each term names the kubectl / client-go / cli-runtime function it comes
//! from; the rule was read from k8s.io/kubectl, k8s.io/client-go and
//! k8s.io/cli-runtime at v0.29.7 and v0.37.1 and checked against the audit
//! log of a live 1.37.1 server by suites/tests/kubectl.rs.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use crate::workload::thor::discovery::{Discovery, DiscoveryCache};

/// The calls HPCC makes (jcontainerized's runKubectlCommand, and
/// k8s_postjob_clearup.sh), plus the JobSet mode's status poll.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Call {
    /// `replace --force -f -` of an object that does not exist yet (stdin).
    Replace,
    /// `get jobs NAME -o jsonpath=…` of an existing Job.
    GetJob { name: String, jsonpath: String },
    /// `get pods --selector SEL -o jsonpath=…`.
    ListPods { selector: String, jsonpath: String },
    /// `delete TYPE/NAME` of an existing object that goes at once (no
    /// finalizers; kubectl's default background cascade).
    Delete { resource: String, name: String },
    /// `get jobset NAME -o jsonpath=…` of an existing JobSet.
    GetJobSet { name: String, jsonpath: String },
}

impl Call {
    pub fn kind(&self) -> &'static str {
        match self {
            Call::Replace => "replace",
            Call::GetJob { .. } => "get-job",
            Call::ListPods { .. } => "list-pods",
            Call::Delete { .. } => "delete",
            Call::GetJobSet { .. } => "get-jobset",
        }
    }

    /// The TYPE argument kubectl resolves through its RESTMapper.
    pub fn resource_arg(&self) -> Option<&str> {
        match self {
            Call::Replace => None,
            Call::GetJob { .. } => Some("jobs"),
            Call::ListPods { .. } => Some("pods"),
            Call::Delete { resource, .. } => Some(resource),
            // The singular kind name, as HPCC names its types (`job/…`):
            // a dotted RESOURCE.GROUP would make even a warm kubectl
            // rediscover (see expected_requests).
            Call::GetJobSet { .. } => Some("jobset"),
        }
    }

    /// kubectl's arguments for this call (without --namespace).
    pub fn args(&self) -> Vec<String> {
        let (args, jsonpath): (Vec<&str>, &str) = match self {
            Call::Replace => (vec!["replace", "--force", "-f", "-"], ""),
            Call::GetJob { name, jsonpath } => (vec!["get", "jobs", name], jsonpath),
            Call::GetJobSet { name, jsonpath } => (vec!["get", "jobset", name], jsonpath),
            Call::ListPods { selector, jsonpath } => {
                (vec!["get", "pods", "--selector", selector], jsonpath)
            }
            Call::Delete { resource, name } => {
                return vec!["delete".into(), format!("{resource}/{name}")];
            }
        };
        let mut out: Vec<String> = args.into_iter().map(String::from).collect();
        if !jsonpath.is_empty() {
            out.extend(["-o".to_string(), format!("jsonpath={jsonpath}")]);
        }
        out
    }
}

/// Which part of a call's cost a request is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Part {
    /// /api, /apis and the per-group-version documents.
    Discovery,
    /// /openapi/v3 and its per-group-version documents.
    OpenApi,
    /// Requests on the objects themselves.
    Own,
}

impl Part {
    /// Classify an audit event's requestURI.
    pub fn of(request_uri: &str) -> Part {
        let path = request_uri.split('?').next().unwrap_or_default();
        let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
        match segments.as_slice() {
            ["openapi", ..] => Part::OpenApi,
            ["api"] | ["api", _] | ["apis"] | ["apis", _] | ["apis", _, _] => Part::Discovery,
            _ => Part::Own,
        }
    }
}

/// One term of a prediction: how many requests, what, and where in the
/// kubectl / client-go / cli-runtime source they come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Term {
    pub part: Part,
    pub requests: u32,
    pub what: String,
    pub source: &'static str,
}

/// The predicted requests of one call.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Expected {
    pub terms: Vec<Term>,
}

impl Expected {
    fn add(&mut self, part: Part, requests: u32, (what, source): (&str, &'static str)) {
        let what = what.to_string();
        self.terms.push(Term {
            part,
            requests,
            what,
            source,
        });
    }
    pub fn of(&self, part: Part) -> u32 {
        self.terms
            .iter()
            .filter(|t| t.part == part)
            .map(|t| t.requests)
            .sum()
    }
    /// (discovery, openapi, own)
    pub fn split(&self) -> (u32, u32, u32) {
        (
            self.of(Part::Discovery),
            self.of(Part::OpenApi),
            self.of(Part::Own),
        )
    }
    pub fn total(&self) -> u32 {
        self.terms.iter().map(|t| t.requests).sum()
    }
}

// The terms of the model: (what, where in the upstream source).
const ROOTS: (&str, &str) = (
    "GET /api and GET /apis",
    "client-go discovery_client.go DiscoveryClient.GroupsAndMaybeResources (downloadLegacy, \
     downloadAPIs), called once per process by memcache.go memCacheClient.refreshLocked",
);
const RESET: (&str, &str) = (
    "GET /api and GET /apis after the warm cache missed a misread TYPE",
    "cli-runtime resource/builder.go mappingFor: apimachinery schema.ParseResourceArg reads \
     jobsets.jobset.x-k8s.io as resource.version.group; restmapper discovery.go \
     DeferredDiscoveryRESTMapper.KindFor misses, and as the disk cache is not Fresh, Reset → \
     CachedDiscoveryClient.Invalidate ignores every file not written by this process",
);
const PER_GROUP_VERSION: (&str, &str) = (
    "GET per group-version",
    "client-go discovery/cached/memory/memcache.go refreshLocked: when GroupsAndMaybeResources \
     got no aggregated document, one serverResourcesForGroupVersion per version of every group",
);
const OPENAPI_ROOT: (&str, &str) = (
    "GET /openapi/v3 (an ETag but no expiry: never fresh in the HTTP cache)",
    "kubectl cmd/util factory_client_access.go Validator → cli-runtime \
     query_param_verifier_v3.go queryParamVerifierV3.HasSupport → openapi3 root.GVSpec; \
     kube-openapi handler3 sets only Etag on the root",
);
const OPENAPI_GV: (&str, &str) = (
    "GET /openapi/v3/<group-version>?hash=… of the object",
    "cli-runtime openapi3 root.GVSpec; a warm HTTP cache (client-go discovery/cached/disk \
     round_tripper.go, httpcache) serves it without a request: kube-openapi handler3 marks \
     hashed URLs immutable with a one-year Expires",
);
const REPLACE_DELETE: (&str, &str) = (
    "DELETE the object (404, ignored)",
    "kubectl cmd/replace/replace.go forceReplace → cmd/delete/delete.go DeleteOptions.DeleteResult \
     (IgnoreNotFound set by ReplaceOptions.Complete)",
);
const REPLACE_WAIT: (&str, &str) = (
    "GET the object (404: deleted)",
    "kubectl replace.go forceReplace: wait.PollImmediate on resource.Info.Get",
);
const NAMESPACE_CHECK: (&str, &str) = (
    "GET /api/v1/namespaces/<ns> after that 404",
    "cli-runtime resource/visitor.go Info.Get: on NotFound outside the default namespace it \
     checks whether the namespace exists",
);
const REPLACE_CREATE: (&str, &str) = (
    "POST the object",
    "kubectl replace.go forceReplace → resource.Helper.Create",
);
const GET: (&str, &str) = (
    "GET the object",
    "kubectl cmd/get/get.go GetOptions.Run → resource.Builder, a named object: Info.Get",
);
const LIST: (&str, &str) = (
    "LIST pods with the label selector",
    "kubectl cmd/get/get.go GetOptions.Run → resource.Builder selector visitor",
);
const DELETE: (&str, &str) = (
    "DELETE the object",
    "kubectl cmd/delete/delete.go DeleteOptions.DeleteResult → deleteResource",
);
const DELETE_WAIT: (&str, &str) = (
    "GET the object (404: gone, so no watch)",
    "kubectl cmd/wait/wait.go IsDeleted (delete's --wait defaults to true)",
);

/// A kubectl of one version, run with or without a cache.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KubectlModel {
    /// "1.29.7"
    version: String,
    cache: DiscoveryCache,
}

impl KubectlModel {
    pub fn new(version: &str, cache: DiscoveryCache) -> Result<KubectlModel> {
        let v = version.trim_start_matches('v').to_string();
        let parts: Vec<&str> = v.split('.').collect();
        if parts.len() != 3 || parts[0] != "1" || parts.iter().any(|p| p.parse::<u32>().is_err()) {
            bail!("kubectl model: {version:?} is not a kubectl version 1.x.y");
        }
        Ok(KubectlModel { version: v, cache })
    }

    pub fn version(&self) -> &str {
        &self.version
    }

    pub fn cache(&self) -> DiscoveryCache {
        self.cache
    }

    fn minor(&self) -> u32 {
        let minor = self.version.split('.').nth(1);
        minor.and_then(|m| m.parse().ok()).unwrap_or_default()
    }

    /// The aggregated discovery formats this kubectl's client-go asks for
    /// (client-go discovery/discovery_client.go, `acceptDiscoveryFormats`):
    /// 1.26–1.29 v2beta1 only (read at v0.29.7); v2 first from 1.30
    /// (kubernetes PR #122882; read at v0.33.2 and v0.36.4: v2, v2beta1);
    /// v2 only from 1.37 (PR #138271; read at v0.37.1).
    pub fn aggregated_accepted(&self) -> &'static [&'static str] {
        match self.minor() {
            0..=25 => &[],
            26..=29 => &["v2beta1"],
            30..=36 => &["v2", "v2beta1"],
            _ => &["v2"],
        }
    }

    /// The requests one `call` in `namespace` makes against a server that
    /// serves `served`. Discovery: every command resolves its resource
    /// through cmdutil.Factory's RESTMapper (restmapper
    /// DeferredDiscoveryRESTMapper + shortcutExpander) over the client of
    /// cli-runtime ConfigFlags.toDiscoveryClient: disk.CachedDiscoveryClient
    /// over memory.memCacheClient over discovery.DiscoveryClient. A warm
    /// cache answers all of it from disk (CachedDiscoveryClient
    /// getCachedFile: servergroups.json and <gv>/serverresources.json,
    /// fresh for the 6 h ttl toDiscoveryClient sets).
    pub fn expected_requests(&self, call: &Call, namespace: &str, served: &Discovery) -> Expected {
        let mut e = Expected::default();
        // RESOURCE.GROUP with two dots or more is first read as
        // resource.version.group: a miss, which a warm cache answers by
        // invalidating itself and discovering again.
        let misread = call.resource_arg().is_some_and(|arg| {
            let p: Vec<&str> = arg.splitn(3, '.').collect();
            p.len() == 3
                && !served
                    .group_versions
                    .contains(&format!("{}/{}", p[2], p[1]))
        });
        let rediscovers = self.cache == DiscoveryCache::Warm && misread;
        if self.cache == DiscoveryCache::None || rediscovers {
            e.add(Part::Discovery, 2, if rediscovers { RESET } else { ROOTS });
            let common = self
                .aggregated_accepted()
                .iter()
                .any(|f| served.aggregated.contains(f));
            if !common {
                let what = format!(
                    "GET per group-version ({} at /api + {} at /apis): the client asks {:?}, \
                     the server answers {:?}",
                    served.core_versions.len(),
                    served.group_versions.len(),
                    self.aggregated_accepted(),
                    served.aggregated
                );
                let n = served.legacy_group_versions();
                e.add(Part::Discovery, n, (&what, PER_GROUP_VERSION.1));
            }
        }
        // Only `replace` validates (--validate=strict by default).
        if *call == Call::Replace {
            e.add(Part::OpenApi, 1, OPENAPI_ROOT);
            if self.cache == DiscoveryCache::None {
                e.add(Part::OpenApi, 1, OPENAPI_GV);
            }
        }
        match call {
            Call::Replace => {
                e.add(Part::Own, 1, REPLACE_DELETE);
                e.add(Part::Own, 1, REPLACE_WAIT);
                if !namespace.is_empty() && namespace != "default" {
                    e.add(Part::Own, 1, NAMESPACE_CHECK);
                }
                e.add(Part::Own, 1, REPLACE_CREATE);
            }
            Call::GetJob { .. } | Call::GetJobSet { .. } => e.add(Part::Own, 1, GET),
            Call::ListPods { .. } => e.add(Part::Own, 1, LIST),
            Call::Delete { .. } => {
                e.add(Part::Own, 1, DELETE);
                e.add(Part::Own, 1, DELETE_WAIT);
            }
        }
        e
    }

    /// The cache directory kubectl is given (KUBECACHEDIR). `None`: a path
    /// below /dev/null, a character device, so kubectl's MkdirAll and every
    /// open fail with ENOTDIR — nothing is read or written, as on HPCC's
    /// read-only root, and even for root, whom a read-only mode bit would
    /// not stop. `Warm`: a directory per kubectl version under
    /// `cache_root` that persists between calls (kubectl creates it).
    pub fn cache_dir(&self, cache_root: &Path) -> PathBuf {
        match self.cache {
            DiscoveryCache::None => PathBuf::from("/dev/null/kube-cache"),
            DiscoveryCache::Warm => cache_root.join(format!("kubectl-{}-cache", self.version)),
        }
    }

    /// `kubectl` as HPCC forks it: argv[0] "kubectl" (its user agent is
    /// `kubectl/v<version> (<os>/<arch>) kubernetes/<commit>`, client-go
    /// rest.DefaultKubernetesUserAgent), the cache as `self.cache` says
    /// through KUBECACHEDIR (cli-runtime genericclioptions getDefaultCacheDir,
    /// honoured by 1.29 and 1.37), and HOME `<cache_root>/home`, an empty
    /// directory of ours that kubectl only reads, so no user file (kuberc,
    /// ~/.kube/cache) leaks in. The caller adds KUBECONFIG, --namespace and
    /// the call's arguments.
    pub fn command(&self, kubectl: &Path, cache_root: &Path) -> Result<tokio::process::Command> {
        let home = cache_root.join("home");
        std::fs::create_dir_all(&home)
            .with_context(|| format!("kubectl model: creating HOME {}", home.display()))?;
        let mut cmd = tokio::process::Command::new(kubectl);
        cmd.arg0("kubectl")
            .env("KUBECACHEDIR", self.cache_dir(cache_root))
            .env("HOME", home)
            .kill_on_drop(true);
        Ok(cmd)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn served(aggregated: Vec<&'static str>) -> Discovery {
        let gvs = ["apps/v1", "batch/v1", "autoscaling/v2", "autoscaling/v1"];
        let group_versions = gvs.map(String::from).to_vec();
        let core_versions = vec!["v1".into()];
        Discovery {
            core_versions,
            group_versions,
            aggregated,
        }
    }

    /// (discovery, openapi, own) of `call` by kubectl `v` in namespace "t".
    fn cost(v: &str, cache: DiscoveryCache, call: &Call, s: &Discovery) -> (u32, u32, u32) {
        let m = KubectlModel::new(v, cache).unwrap();
        m.expected_requests(call, "t", s).split()
    }

    fn get(name: &str) -> Call {
        let (name, jsonpath) = (name.into(), "{.status.active}".into());
        Call::GetJob { name, jsonpath }
    }

    fn delete(resource: &str) -> Call {
        let (resource, name) = (resource.into(), "n".into());
        Call::Delete { resource, name }
    }

    const NONE: DiscoveryCache = DiscoveryCache::None;
    const WARM: DiscoveryCache = DiscoveryCache::Warm;

    #[test]
    fn cold_legacy_discovery_grows_with_the_served_group_versions() {
        let s = served(vec!["v2"]);
        // /api, /apis, then v1 and every version of every group.
        assert_eq!(cost("1.29.7", NONE, &get("j"), &s), (7, 0, 1));
        let mut more = s.clone();
        more.group_versions.push("jobset.x-k8s.io/v1alpha2".into());
        assert_eq!(cost("1.29.7", NONE, &delete("job"), &more), (8, 0, 2));
        // A server that still answers v2beta1 spares 1.29 the per-GV GETs.
        let beta = served(vec!["v2beta1"]);
        assert_eq!(cost("1.29.7", NONE, &get("j"), &beta), (2, 0, 1));
        // 1.37 asks for v2 only; 1.30–1.36 for v2, then v2beta1.
        assert_eq!(cost("v1.37.1", NONE, &get("j"), &s), (2, 0, 1));
        assert_eq!(cost("1.37.1", NONE, &get("j"), &beta), (7, 0, 1));
        assert_eq!(cost("1.33.2", NONE, &get("j"), &beta), (2, 0, 1));
        assert_eq!(cost("1.25.0", NONE, &get("j"), &s), (7, 0, 1));
    }

    #[test]
    fn replace_costs_openapi_and_a_namespace_check_outside_default() {
        let s = served(vec![]);
        assert_eq!(cost("1.29.7", WARM, &Call::Replace, &s), (0, 1, 4));
        let cold = KubectlModel::new("1.29.7", NONE).unwrap();
        let r = cold.expected_requests(&Call::Replace, "default", &s);
        assert_eq!((r.split(), r.total()), ((7, 2, 3), 12));
        assert!(
            r.terms
                .iter()
                .all(|t| !t.source.is_empty() && t.requests > 0)
        );
        assert_eq!(cost("1.29.7", WARM, &delete("job"), &s), (0, 0, 2));
    }

    #[test]
    fn a_misread_resource_group_rediscovers_even_when_warm() {
        let (name, jsonpath) = ("s".to_string(), "{.status}".to_string());
        let get_js = Call::GetJobSet { name, jsonpath };
        let mut s = served(vec!["v2"]);
        s.group_versions.push("jobset.x-k8s.io/v1alpha2".into());
        // The driver names JobSets by their singular, undotted: the cache serves it.
        assert_eq!(cost("1.37.1", WARM, &get_js, &s), (0, 0, 1));
        assert_eq!(cost("1.29.7", WARM, &get_js, &s), (0, 0, 1));
        assert_eq!(
            cost("1.37.1", WARM, &delete("jobsets.jobset.x-k8s.io"), &s),
            (2, 0, 2)
        );
        assert_eq!(
            cost("1.29.7", WARM, &delete("jobsets.jobset.x-k8s.io"), &s),
            (8, 0, 2)
        );
        assert_eq!(cost("1.37.1", WARM, &get("j"), &s), (0, 0, 1));
        // A TYPE that really is resource.version.group is found in the cache.
        let exact = delete("jobsets.v1alpha2.jobset.x-k8s.io");
        assert_eq!(cost("1.37.1", WARM, &exact, &s), (0, 0, 2));
    }

    #[test]
    fn request_uris_are_classified() {
        assert_eq!(Part::of("/api?timeout=32s"), Part::Discovery);
        assert_eq!(Part::of("/api/v1"), Part::Discovery);
        assert_eq!(Part::of("/apis/batch/v1?timeout=32s"), Part::Discovery);
        assert_eq!(Part::of("/openapi/v3/apis/batch/v1?hash=AB"), Part::OpenApi);
        assert_eq!(Part::of("/api/v1/namespaces/thor"), Part::Own);
        assert_eq!(Part::of("/apis/batch/v1/namespaces/t/jobs/j"), Part::Own);
    }

    #[test]
    fn calls_are_hpccs_command_lines() {
        assert_eq!(Call::Replace.args(), ["replace", "--force", "-f", "-"]);
        let g = get("j").args();
        assert_eq!(g, ["get", "jobs", "j", "-o", "jsonpath={.status.active}"]);
        assert_eq!(
            delete("networkpolicy").args(),
            ["delete", "networkpolicy/n"]
        );
        assert_eq!(delete("job").kind(), "delete");
        assert!(KubectlModel::new("1.29", NONE).is_err());
        assert!(KubectlModel::new("2.0.0", NONE).is_err());
        assert_eq!(
            KubectlModel::new("v1.29.7", WARM).unwrap().version(),
            "1.29.7"
        );
    }

    #[test]
    fn no_cache_is_a_directory_that_cannot_be_created() {
        let tmp = tempfile::tempdir().unwrap();
        let m = KubectlModel::new("1.29.7", NONE).unwrap();
        let none = m.cache_dir(tmp.path());
        let err = std::fs::create_dir_all(none.join("discovery")).unwrap_err();
        assert_eq!(err.raw_os_error(), Some(20), "ENOTDIR expected: {err}");
        let warm = KubectlModel::new("1.37.1", WARM)
            .unwrap()
            .cache_dir(tmp.path());
        assert!(warm.starts_with(tmp.path()));
        let cmd = m.command(Path::new("/k"), tmp.path()).unwrap();
        assert!(tmp.path().join("home").is_dir());
        let cache = cmd.as_std().get_envs().find(|(k, _)| *k == "KUBECACHEDIR");
        assert_eq!(cache.and_then(|(_, v)| v), Some(none.as_os_str()));
    }
}
