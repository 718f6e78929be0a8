//! Decoding what the API server sends: JSON and protobuf lists split item by item (`list_split`,
//! `proto_list`, `protobuf`), the slim Node and Pod types they decode into (`slim`), the first
//! list's Pods read as they arrive (`first_list`) and the fields stripped from cached objects
//! (`strip`).

pub(crate) mod first_list;
pub mod list_split;
pub mod proto_list;
pub mod protobuf;
pub mod slim;
pub(crate) mod strip;
