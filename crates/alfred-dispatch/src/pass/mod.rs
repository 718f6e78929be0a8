//! The decision pass (docs/design-pass.md#pass-pipeline): score → policies → (recommend-only:
//! scheduling gate and ≤ 8 predictions) → arbiter → dispatch → report.
//!
//! The modules import in one direction: `types` (what a pass takes and gives) depends on no
//! other part of the pass; `stages` (the core's stages behind a port) on the dispatcher's
//! data; `steps` (the resumable run a driver steps) on both and on the reporter; `run`
//! ([`run_pass`], the synchronous form) on `steps`.

mod run;
pub(crate) mod stages;
pub(crate) mod steps;
mod types;

pub use run::run_pass;
pub use types::{Contingency, DurableState, Explained, PassInput, PassOutput, Session};
