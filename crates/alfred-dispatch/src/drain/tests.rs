//! Drain-plan lifecycle tests.
