//! The harness's own typed models of objects k8s-openapi does not carry:
//! JobSet (jobset.x-k8s.io/v1alpha2, as served by JobSet v0.12.0), the
//! 1.36 Workload/PodGroup (scheduling.k8s.io/v1alpha2), the audit Policy,
//! kwok's Stage and the kind Cluster config fields the harness uses. Unknown fields are
//! reported by the decoder (serde_ignored), so the models list every field
//! they accept and nothing else.

use std::collections::BTreeMap;

use k8s_openapi::api::batch::v1::JobTemplateSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::Deserialize;

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct JobSet {
    pub api_version: String,
    pub kind: String,
    pub metadata: ObjectMeta,
    pub spec: JobSetSpec,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct JobSetSpec {
    pub replicated_jobs: Vec<ReplicatedJob>,
    pub network: Option<JobSetNetwork>,
    pub success_policy: Option<SuccessPolicy>,
    pub failure_policy: Option<FailurePolicy>,
    pub startup_policy: Option<StartupPolicy>,
    pub suspend: Option<bool>,
    pub coordinator: Option<Coordinator>,
    pub managed_by: Option<String>,
    pub ttl_seconds_after_finished: Option<i32>,
    pub volume_claim_policies: Option<Vec<serde_json::Value>>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReplicatedJob {
    pub name: String,
    pub group_name: Option<String>,
    pub template: JobTemplateSpec,
    pub replicas: Option<i32>,
    pub depends_on: Option<Vec<DependsOn>>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct DependsOn {
    pub name: String,
    pub status: String,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct JobSetNetwork {
    #[serde(rename = "enableDNSHostnames")]
    pub enable_dns_hostnames: Option<bool>,
    pub subdomain: Option<String>,
    pub publish_not_ready_addresses: Option<bool>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SuccessPolicy {
    pub operator: String,
    pub target_replicated_jobs: Option<Vec<String>>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FailurePolicy {
    pub max_restarts: Option<i32>,
    pub restart_strategy: Option<String>,
    pub rules: Option<Vec<serde_json::Value>>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StartupPolicy {
    pub startup_policy_order: String,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Coordinator {
    pub replicated_job: String,
    pub job_index: Option<i32>,
    pub pod_index: Option<i32>,
}

/// scheduling.k8s.io/v1alpha2 Workload (Kubernetes 1.36).
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadV1alpha2 {
    pub api_version: String,
    pub kind: String,
    pub metadata: ObjectMeta,
    pub spec: WorkloadSpecV1alpha2,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadSpecV1alpha2 {
    pub controller_ref: Option<TypedLocalRef>,
    pub pod_group_templates: Vec<PodGroupTemplateV1alpha2>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TypedLocalRef {
    pub api_group: Option<String>,
    pub kind: String,
    pub name: String,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PodGroupTemplateV1alpha2 {
    pub name: String,
    pub scheduling_policy: SchedulingPolicy,
}

#[derive(Debug, Clone, Deserialize)]
pub struct SchedulingPolicy {
    pub basic: Option<BTreeMap<String, serde_json::Value>>,
    pub gang: Option<GangPolicy>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GangPolicy {
    pub min_count: i32,
}

/// scheduling.k8s.io/v1alpha2 PodGroup (Kubernetes 1.36).
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PodGroupV1alpha2 {
    pub api_version: String,
    pub kind: String,
    pub metadata: ObjectMeta,
    pub spec: PodGroupSpecV1alpha2,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PodGroupSpecV1alpha2 {
    pub pod_group_template_ref: Option<PodGroupTemplateRef>,
    pub scheduling_policy: SchedulingPolicy,
}

#[derive(Debug, Clone, Deserialize)]
pub struct PodGroupTemplateRef {
    pub workload: WorkloadTemplateRef,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadTemplateRef {
    pub workload_name: String,
    pub pod_group_template_name: String,
}

/// audit.k8s.io/v1 Policy.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AuditPolicy {
    pub api_version: String,
    pub kind: String,
    pub metadata: Option<ObjectMeta>,
    pub rules: Vec<AuditRule>,
    pub omit_stages: Option<Vec<String>>,
    pub omit_managed_fields: Option<bool>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AuditRule {
    pub level: String,
    pub users: Option<Vec<String>>,
    pub user_groups: Option<Vec<String>>,
    pub verbs: Option<Vec<String>>,
    pub resources: Option<Vec<AuditGroupResources>>,
    pub namespaces: Option<Vec<String>>,
    #[serde(rename = "nonResourceURLs")]
    pub non_resource_urls: Option<Vec<String>>,
    pub omit_stages: Option<Vec<String>>,
    pub omit_managed_fields: Option<bool>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AuditGroupResources {
    pub group: Option<String>,
    pub resources: Option<Vec<String>>,
    pub resource_names: Option<Vec<String>>,
}

pub const AUDIT_LEVELS: &[&str] = &["None", "Metadata", "Request", "RequestResponse"];
pub const AUDIT_STAGES: &[&str] = &[
    "RequestReceived",
    "ResponseStarted",
    "ResponseComplete",
    "Panic",
];

/// kind.x-k8s.io/v1alpha4 Cluster: the fields the harness's kind profiles use.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct KindCluster {
    pub kind: String,
    pub api_version: String,
    pub name: Option<String>,
    pub nodes: Option<Vec<KindNode>>,
    pub feature_gates: Option<BTreeMap<String, bool>>,
    pub runtime_config: Option<BTreeMap<String, String>>,
    pub kubeadm_config_patches: Option<Vec<String>>,
    #[serde(rename = "kubeadmConfigPatchesJSON6902")]
    pub kubeadm_config_patches_json6902: Option<Vec<serde_json::Value>>,
    pub containerd_config_patches: Option<Vec<String>>,
    pub networking: Option<KindNetworking>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct KindNode {
    pub role: String,
    pub image: Option<String>,
    pub labels: Option<BTreeMap<String, String>>,
    pub extra_mounts: Option<Vec<KindMount>>,
    pub extra_port_mappings: Option<Vec<KindPortMapping>>,
    pub kubeadm_config_patches: Option<Vec<String>>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct KindMount {
    pub host_path: String,
    pub container_path: String,
    pub read_only: Option<bool>,
    pub selinux_relabel: Option<bool>,
    pub propagation: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct KindPortMapping {
    pub container_port: u16,
    pub host_port: Option<u16>,
    pub listen_address: Option<String>,
    pub protocol: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct KindNetworking {
    pub ip_family: Option<String>,
    pub api_server_address: Option<String>,
    pub api_server_port: Option<i32>,
    pub pod_subnet: Option<String>,
    pub service_subnet: Option<String>,
    #[serde(rename = "disableDefaultCNI")]
    pub disable_default_cni: Option<bool>,
    pub kube_proxy_mode: Option<String>,
    pub dns_search: Option<Vec<String>>,
}

/// kwok's Stage (kwok.x-k8s.io/v1alpha1, as of kwok v0.8.0's
/// pkg/apis/v1alpha1/stage_types.go): its fields; unknown ones are
/// reported like every model's; templates stay text.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct KwokStage {
    pub api_version: String,
    pub kind: String,
    pub metadata: ObjectMeta,
    pub spec: KwokStageSpec,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct KwokStageSpec {
    pub resource_ref: KwokResourceRef,
    #[serde(default)]
    pub selector: Option<KwokSelector>,
    #[serde(default)]
    pub weight: Option<i64>,
    #[serde(default)]
    pub weight_from: Option<KwokExpressionFrom>,
    #[serde(default)]
    pub delay: Option<KwokDelay>,
    #[serde(default)]
    pub next: Option<KwokNext>,
    #[serde(default)]
    pub immediate_next_stage: Option<bool>,
    #[serde(default)]
    pub steps: Vec<KwokStep>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct KwokResourceRef {
    #[serde(default)]
    pub api_group: String,
    pub kind: String,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct KwokSelector {
    #[serde(default)]
    pub match_labels: BTreeMap<String, String>,
    #[serde(default)]
    pub match_annotations: BTreeMap<String, String>,
    #[serde(default)]
    pub match_expressions: Vec<KwokMatchExpression>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct KwokMatchExpression {
    #[serde(default)]
    pub jq: Option<KwokSelectorJq>,
    #[serde(default)]
    pub cel: Option<KwokExpression>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct KwokSelectorJq {
    pub key: String,
    pub operator: String,
    #[serde(default)]
    pub values: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct KwokExpression {
    pub expression: String,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct KwokExpressionFrom {
    #[serde(default)]
    pub jq: Option<KwokExpressionJq>,
    #[serde(default)]
    pub cel: Option<KwokExpression>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct KwokExpressionJq {
    pub expression: String,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct KwokDelay {
    #[serde(default)]
    pub duration_milliseconds: Option<i64>,
    #[serde(default)]
    pub duration_from: Option<KwokExpressionFrom>,
    #[serde(default)]
    pub jitter_duration_milliseconds: Option<i64>,
    #[serde(default)]
    pub jitter_duration_from: Option<KwokExpressionFrom>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct KwokEvent {
    #[serde(default, rename = "type")]
    pub type_: String,
    #[serde(default)]
    pub reason: String,
    #[serde(default)]
    pub message: String,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct KwokPatch {
    #[serde(default)]
    pub subresource: String,
    #[serde(default)]
    pub root: String,
    #[serde(default)]
    pub template: String,
    #[serde(default, rename = "type")]
    pub type_: Option<String>,
    #[serde(default)]
    pub impersonation: Option<serde_json::Value>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct KwokNext {
    #[serde(default)]
    pub event: Option<KwokEvent>,
    #[serde(default)]
    pub finalizers: Option<serde_json::Value>,
    #[serde(default)]
    pub delete: bool,
    #[serde(default)]
    pub patches: Vec<KwokPatch>,
    #[serde(default)]
    pub status_template: String,
    #[serde(default)]
    pub status_subresource: Option<String>,
    #[serde(default)]
    pub status_patch_as: Option<serde_json::Value>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct KwokStep {
    #[serde(default)]
    pub patch: Option<KwokPatch>,
    #[serde(default)]
    pub event: Option<KwokEvent>,
    #[serde(default)]
    pub finalizers: Option<serde_json::Value>,
    #[serde(default)]
    pub delete: bool,
    #[serde(default)]
    pub apply: Option<serde_json::Value>,
}
