//! Tests of both policies, built from small clusters (see [`crate::testkit`]).

mod coverage;
mod defrag;
mod early;
mod fast_paths;
mod nodehealth;
mod props;
