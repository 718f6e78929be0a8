//! `plumb`: the multi-cluster capacity hub's binary (offline commands for now).
fn main() {}
