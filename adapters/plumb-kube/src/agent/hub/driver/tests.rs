//! Unit tests of the driver's pure parts.
