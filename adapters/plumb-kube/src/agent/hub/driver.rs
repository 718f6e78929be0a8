//! The hub step's driver (being built): per policy, read every member's copy, adopt the most
//! recent `status.fleet` at a new term, step plumb-core's `Hub`, then carry out its effects in
//! order (outcome lines, `status.fleet`, the decision line, intents, Events, route weights),
//! each write fenced by the target's `plumb-hub` Lease.
