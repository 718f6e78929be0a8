//! alfred-dispatch: the decision pass, the dispatcher and the reporter.

pub mod journal;
pub mod request;
mod strict_json;
