//! Running `plumb agent` (being built): the local Lease, both loops, `/metrics` and the
//! graceful stop that releases both Leases.
