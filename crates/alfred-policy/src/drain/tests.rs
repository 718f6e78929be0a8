//! Drain-plan tests.
