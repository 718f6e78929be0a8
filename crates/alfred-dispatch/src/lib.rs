//! alfred-dispatch (stub).
