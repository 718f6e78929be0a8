//! alfred-policy (stub).
