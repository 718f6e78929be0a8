//! alfred-score (stub).
