//! HPCC Thor instances in baseline (manager Job + worker Job) and JobSet
//! modes: our templates in manifests/hpcc/, rendered the way HPCC's
//! jcontainerized fills its job specs, and what each mode's driver may ask
//! of the API server.
//!
//! `api` says what each mode's driver may ask of the API server.

pub mod api;
pub mod capacity;
pub mod discovery;
pub mod driver;
pub mod kubectl;
pub mod mode;
pub mod mode_plan;
pub mod needs;
pub mod overrides;
pub mod realpods;
pub mod room;
pub mod scenario;
pub mod setup_objects;
pub mod shape;
pub mod site;
pub mod template;

pub use crate::workload::thor::api::{ApiUse, THOR_AGENT_USER, api_usage};
pub use crate::workload::thor::shape::{Shape, shape};
pub use crate::workload::thor::template::{
    Mode, Template, ThorParams, rbac, render, templates, templates_for,
};
