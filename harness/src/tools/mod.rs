//! Finding or building the binaries a provider needs. One version table
//! (`versions`), one resolution order (`resolve`), one builder (`build`).

pub mod build;
pub mod buildinfo;
pub mod component;
pub mod exec;
pub mod modules;
pub mod resolve;
pub mod versions;

pub use component::Component;
pub use resolve::{Resolved, Resolver, Source, Tools};
