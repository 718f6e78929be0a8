//! alfred's data model: the cluster snapshot the policies read, the configuration,
//! the decision record, the reason codes and the effects an adapter applies.
//!
//! Deterministic and free of IO: no clock, no randomness, no hash-map iteration order
//! in any output. Time arrives as a [`time::Timestamp`] parameter.
//!
//! # Example
//!
//! A configuration from its YAML (every key left out at its documented default, a bad
//! value refused naming its key) and the time type every pass takes as an argument:
//!
//! ```
//! use alfred_model::Timestamp;
//! use alfred_model::config::{Config, Mode};
//!
//! let config = Config::from_yaml("schemaVersion: 1\nmaxMigrationsPerHour: 4\n")?;
//! assert_eq!(config.max_migrations_per_hour, 4);
//! assert_eq!(config.mode, Mode::RecommendOnly);
//! assert_eq!(config.emergency_pending_age_minutes, Config::builtin().emergency_pending_age_minutes);
//! let refused = Config::from_yaml("schemaVersion: 1\nmaxMigrationsPerHour: -1\n").unwrap_err();
//! assert!(refused.to_string().contains("maxMigrationsPerHour"), "{refused}");
//! let now = Timestamp::parse_rfc3339("2026-11-29T08:00:00Z")?;
//! assert_eq!(now.plus_minutes(5).to_rfc3339(), "2026-11-29T08:05:00Z");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! An embedder without Kubernetes objects builds its snapshot in code
//! ([`ClusterSnapshot::builder`], documented defaults in [`build`]); with objects,
//! `alfred-observe` builds it. Runtime options come from
//! [`config::RuntimeOptions::recommend_only`] or [`config::RuntimeOptions::with_executor`], no
//! flag strings.

#![warn(missing_docs, unreachable_pub)]

pub mod build;
pub mod config;
pub mod count;
pub mod effect;
pub mod event;
pub mod index;
pub mod metric;
mod normalized;
pub mod plan;
pub mod reason;
pub mod record;
pub mod shared;
pub mod snapshot;
pub mod time;

pub use build::SnapshotBuilder;
pub use snapshot::ClusterSnapshot;
pub use time::Timestamp;
