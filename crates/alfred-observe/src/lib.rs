//! alfred-observe (stub).
