//! Keeping the cluster in view: the list-then-watch streams (`list_watch`), the caches they fill
//! (`caches`), the early-tick triggers (`early`), the `alfred-config` reloads (`config`) and the
//! snapshots built from the caches (`observe`).

pub mod caches;
pub mod config;
pub(crate) mod early;
pub mod list_watch;
pub(crate) mod observe;
