//! Putting components on a running cluster. A provider never calls this
//! layer; `lifecycle::up` calls the provider, then this.

pub mod apply;
pub mod busy;
pub mod certmanager;
pub mod controller;
pub mod hpcc;
pub mod jobset;
pub mod kueue;
pub mod kwok;
pub mod release;
pub mod storage;
pub mod webhook_cert;
