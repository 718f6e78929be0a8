//! alfred-arbiter (stub).
