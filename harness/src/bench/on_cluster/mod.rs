//! Rounds at scale on a cluster the user has: a run set's rounds as the
//! pods of an Indexed Job, each running its shard with the local provider
//! inside it. `image` is what the pods run (the harness and its
//! binaries, built here), `job` the Job, `inputs` the caller's files the
//! rounds read, `collect` how a pod's out dir comes back, `run` the whole.

pub mod collect;
pub mod image;
pub mod inputs;
pub mod job;
pub mod run;
