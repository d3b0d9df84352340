//! Thor templates: every instance template rendered over a matrix of
//! numWorkers × numWorkersPerPod × maxGraphs (JobSet modes with and
//! without DNS hostnames), each rendering checked against the chart's
//! shapes (`shape`) and its mode's rules, each instance as a whole (its
//! NetworkPolicies select its pods; JobSet pods are baseline's); the setup
//! and compile templates and what the pods reference in them, both
//! identities' RBAC (`setup`); and the static model.
//!
//! `matrix` renders and checks the templates, `model` counts what an
//! instance is made of.

pub mod disk;
pub mod matrix;
pub mod model;
pub mod setup;
pub mod shape;

pub use crate::validate::thor::matrix::{
    INSTANCE, PER_POD, WORKERS, check_template_set, check_templates, longest_thor_name,
};
pub use crate::validate::thor::model::{StaticRow, static_model};
pub use crate::validate::thor::setup::{
    check_eclccserver_rbac, check_rbac, check_rbac_template, check_setup,
};
pub use crate::validate::thor::shape::{AGENT_POD_SUFFIX, THOR_NAME, ThorReport, params};
