//! The hub loop (being built): members from ClusterProfiles, the quorum lock over their
//! `plumb-hub` Leases, the hub step per policy and its writes.
