//! What the live fleet tests share (`live_fleet*.rs`): the three member API servers that
//! `cargo xtask plumb-live` started, set up afresh for each test, and `plumb agent`'s hub loop
//! run in-process with shortened Lease clocks.
#![allow(dead_code)]

pub mod fleet;
pub mod story;
pub mod webhook;
