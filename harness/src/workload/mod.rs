//! Workloads the harness drives. Today: the shapes of a Thor instance
//! (templates, rendering, the API each driver may use).

pub mod ecl;
pub mod gang;
pub mod thor;
