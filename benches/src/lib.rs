//! Shared generators for the criterion benchmarks.
