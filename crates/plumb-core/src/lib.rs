//! plumb-core: Plumb's decisions as pure functions of data. The member report
//! ([`member::report`]) says what one cluster needs and how much room it has; time, the
//! observed objects and the signal samples come in as arguments, the report comes out.
//! No IO, no clock, no randomness.

pub mod member;
