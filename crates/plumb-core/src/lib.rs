//! plumb-core: Plumb's decisions as pure functions of data. The member report
//! ([`member::report`]) says what one cluster needs and how much room it has; time, the
//! observed objects and the signal samples come in as arguments, the report comes out.
//! The hub's step ([`hub::Hub`]) decides where replicas are borrowed and where traffic goes;
//! [`quorum`] elects the hub over every member's Lease and [`fencing`] voids floors a hub
//! that lost its place wrote. No IO, no clock, no randomness.

pub mod fencing;
pub mod hub;
pub mod member;
pub mod quorum;
#[cfg(feature = "synthetic")]
pub mod synthetic;
