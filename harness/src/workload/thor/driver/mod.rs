//! Drivers that put the same Kubernetes API traffic on a cluster as HPCC's
//! processes do, call for call (docs/thor-model.md has the table of every
//! modelled call and where HPCC makes it):
//! - workunits (up to the Thor eclagent's maxActive at once) each compile
//!   through eclccserver's compile Jobs (`compile`), then queue their
//!   graphs one after another on the Thor queue (`dispatch`);
//! - thoragent launches an instance for a graph no lingering manager takes
//!   (`agent`), runs waitJob for its whole life (`waitjob`) and deletes it;
//! - the manager process creates its workers, waits for them, runs graphs
//!   and lingers, then exits and its post-job script cleans up (`manager`);
//! - processes end when HPCC's would (`kubelet`), as the nodes show it
//!   (`exits`: a fake kubelet's status PATCH or a real container's exit).
//!
//! Every Kubernetes call is a forked kubectl as HPCC's identity (`calls`),
//! recorded by kind so the server's count can be checked against the
//! modelled cost of the call list.
//!
//! `run` runs a plan with these drivers; `gone` waits until what they
//! made is gone.

pub mod agent;
pub mod callplan;
pub mod calls;
pub mod compile;
pub mod dispatch;
pub mod env;
pub mod exits;
pub mod gone;
pub mod kubelet;
pub mod manager;
pub mod run;
pub mod waitjob;

pub use crate::workload::thor::driver::env::{
    COMPONENT_LABEL, InstanceResult, JOB_LABEL, POD_RUNTIME, Plan, ThorEnv,
};
pub use crate::workload::thor::driver::gone::wait_all_gone;
pub use crate::workload::thor::driver::run::{DriverReport, run};
