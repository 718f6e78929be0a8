//! The protobuf wire format, as far as reading Kubernetes objects needs it.
//!
//! The API server encodes core kinds as protobuf when asked (`Accept:
//! application/vnd.kubernetes.protobuf`), which is what client-go's informers do: the server
//! encodes a large list faster than as JSON, the body is about a third smaller, and a reader
//! skips a field it does not need (a Pod's managed fields, its images and env) by its length
//! instead of parsing it. `slim/proto.rs` reads Pods and Nodes with the field numbers of
//! `k8s.io/api/core/v1/generated.proto`; this module is only the wire format: fields as
//! (number, value) pairs, and errors that name the field path and the byte offset.

use std::fmt;

/// A field's value as the wire carries it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Value<'a> {
    Varint(u64),
    Fixed64(u64),
    Fixed32(u32),
    /// Strings, bytes, embedded messages and map entries.
    Bytes(&'a [u8]),
}

impl<'a> Value<'a> {
    fn kind(&self) -> &'static str {
        match self {
            Value::Varint(_) => "a varint",
            Value::Fixed64(_) => "a 64-bit value",
            Value::Fixed32(_) => "a 32-bit value",
            Value::Bytes(_) => "a length-delimited value",
        }
    }

    /// The bytes of a string, message or map entry.
    pub fn bytes(self, field: &'static str) -> Result<&'a [u8], ProtoError> {
        match self {
            Value::Bytes(b) => Ok(b),
            other => Err(ProtoError::wrong_type(
                field,
                "a length-delimited value",
                other,
            )),
        }
    }

    pub fn string(self, field: &'static str) -> Result<String, ProtoError> {
        let bytes = self.bytes(field)?;
        match std::str::from_utf8(bytes) {
            Ok(s) => Ok(s.to_owned()),
            Err(_) => Err(ProtoError::new(field, "is not UTF-8".to_owned())),
        }
    }

    pub fn varint(self, field: &'static str) -> Result<u64, ProtoError> {
        match self {
            Value::Varint(v) => Ok(v),
            other => Err(ProtoError::wrong_type(field, "a varint", other)),
        }
    }

    /// An `int32`: negative values travel as ten-byte varints of their 64-bit sign extension.
    pub fn int32(self, field: &'static str) -> Result<i32, ProtoError> {
        let v = self.varint(field)? as i64;
        i32::try_from(v).map_err(|_| ProtoError::new(field, format!("{v} is not an int32")))
    }

    pub fn int64(self, field: &'static str) -> Result<i64, ProtoError> {
        Ok(self.varint(field)? as i64)
    }

    pub fn bool(self, field: &'static str) -> Result<bool, ProtoError> {
        Ok(self.varint(field)? != 0)
    }
}

/// The fields of one message, in wire order.
pub struct Fields<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Fields<'a> {
    pub fn new(buf: &'a [u8]) -> Fields<'a> {
        Fields { buf, pos: 0 }
    }

    fn fail(&mut self, detail: String) -> Option<Result<(u32, Value<'a>), ProtoError>> {
        let at = self.pos;
        self.pos = self.buf.len();
        Some(Err(ProtoError {
            path: Vec::new(),
            detail: format!("{detail} at byte {at}"),
        }))
    }
}

impl<'a> Iterator for Fields<'a> {
    type Item = Result<(u32, Value<'a>), ProtoError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.pos >= self.buf.len() {
            return None;
        }
        let Some((key, used)) = varint(&self.buf[self.pos..]) else {
            return self.fail("truncated field key".to_owned());
        };
        let number = key >> 3;
        if number == 0 || number > u64::from(u32::MAX >> 3) {
            return self.fail(format!("field number {number}"));
        }
        let start = self.pos;
        let rest = &self.buf[self.pos + used..];
        let (value, len) = match key & 7 {
            0 => match varint(rest) {
                Some((v, n)) => (Value::Varint(v), n),
                None => return self.fail(format!("truncated varint of field {number}")),
            },
            1 => match rest.first_chunk::<8>() {
                Some(b) => (Value::Fixed64(u64::from_le_bytes(*b)), 8),
                None => return self.fail(format!("truncated field {number}")),
            },
            5 => match rest.first_chunk::<4>() {
                Some(b) => (Value::Fixed32(u32::from_le_bytes(*b)), 4),
                None => return self.fail(format!("truncated field {number}")),
            },
            2 => match varint(rest) {
                Some((n, l)) if (n as usize) <= rest.len() - l && n <= rest.len() as u64 => {
                    (Value::Bytes(&rest[l..l + n as usize]), l + n as usize)
                }
                _ => return self.fail(format!("truncated length-delimited field {number}")),
            },
            wire_type => {
                return self.fail(format!("wire type {wire_type} of field {number}"));
            }
        };
        self.pos = start + used + len;
        Some(Ok((number as u32, value)))
    }
}

/// A base-128 varint at the start of `buf`: its value and length, or `None` if `buf` ends
/// inside it or it runs past ten bytes.
pub fn varint(buf: &[u8]) -> Option<(u64, usize)> {
    let mut value = 0u64;
    for (i, &b) in buf.iter().enumerate().take(10) {
        value |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            return Some((value, i + 1));
        }
    }
    None
}

/// A field that does not read as its type: the path of field names from the object down, and
/// what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProtoError {
    /// Innermost first (pushed while the error travels up).
    path: Vec<&'static str>,
    detail: String,
}

impl ProtoError {
    pub fn new(field: &'static str, detail: String) -> ProtoError {
        ProtoError {
            path: vec![field],
            detail,
        }
    }

    fn wrong_type(field: &'static str, expected: &str, found: Value<'_>) -> ProtoError {
        ProtoError::new(
            field,
            format!("expected {expected}, found {}", found.kind()),
        )
    }

    /// The same error, inside `field`.
    pub fn within(mut self, field: &'static str) -> ProtoError {
        self.path.push(field);
        self
    }
}

impl fmt::Display for ProtoError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            return write!(f, "protobuf: {}", self.detail);
        }
        let path: Vec<&str> = self.path.iter().rev().copied().collect();
        write!(f, "protobuf {}: {}", path.join("."), self.detail)
    }
}

impl std::error::Error for ProtoError {}

/// Names the field an error of `result` happened in.
pub fn within<T>(result: Result<T, ProtoError>, field: &'static str) -> Result<T, ProtoError> {
    result.map_err(|e| e.within(field))
}

pub mod encode {
    //! A protobuf writer for tests and benches (alfred itself never writes protobuf): builds
    //! messages field by field.

    #[derive(Default, Clone)]
    pub struct Message(pub Vec<u8>);

    pub fn put_varint(out: &mut Vec<u8>, mut v: u64) {
        while v >= 0x80 {
            out.push((v as u8) | 0x80);
            v >>= 7;
        }
        out.push(v as u8);
    }

    impl Message {
        pub fn new() -> Message {
            Message(Vec::new())
        }
        pub fn varint(mut self, field: u32, v: u64) -> Message {
            put_varint(&mut self.0, u64::from(field) << 3);
            put_varint(&mut self.0, v);
            self
        }
        pub fn bytes(mut self, field: u32, b: &[u8]) -> Message {
            put_varint(&mut self.0, (u64::from(field) << 3) | 2);
            put_varint(&mut self.0, b.len() as u64);
            self.0.extend_from_slice(b);
            self
        }
        pub fn string(self, field: u32, s: &str) -> Message {
            self.bytes(field, s.as_bytes())
        }
        pub fn message(self, field: u32, m: Message) -> Message {
            self.bytes(field, &m.0)
        }
        pub fn fixed32(mut self, field: u32, v: u32) -> Message {
            put_varint(&mut self.0, (u64::from(field) << 3) | 5);
            self.0.extend_from_slice(&v.to_le_bytes());
            self
        }
        pub fn fixed64(mut self, field: u32, v: u64) -> Message {
            put_varint(&mut self.0, (u64::from(field) << 3) | 1);
            self.0.extend_from_slice(&v.to_le_bytes());
            self
        }
        /// A `map<string, string>` entry.
        pub fn entry(self, field: u32, k: &str, v: &str) -> Message {
            self.message(field, Message::new().string(1, k).string(2, v))
        }
        /// A `map<string, Quantity>` entry (a resource list).
        pub fn quantity(self, field: u32, k: &str, v: &str) -> Message {
            let quantity = Message::new().string(1, v);
            self.message(field, Message::new().string(1, k).message(2, quantity))
        }
        /// A `metav1.Time` of `seconds` since the epoch.
        pub fn time(self, field: u32, seconds: u64) -> Message {
            self.message(field, Message::new().varint(1, seconds))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::encode::Message;
    use super::*;

    fn fields(buf: &[u8]) -> Result<Vec<(u32, Value<'_>)>, ProtoError> {
        Fields::new(buf).collect()
    }

    #[test]
    fn reads_every_wire_type_in_order() {
        let m = Message::new()
            .varint(1, 300)
            .string(2, "pod")
            .fixed64(3, 7)
            .fixed32(4, 9)
            .varint(536_870_911, 1);
        let got = fields(&m.0).expect("fields");
        assert_eq!(
            got,
            vec![
                (1, Value::Varint(300)),
                (2, Value::Bytes(b"pod")),
                (3, Value::Fixed64(7)),
                (4, Value::Fixed32(9)),
                (536_870_911, Value::Varint(1)),
            ]
        );
    }

    #[test]
    fn negative_int32_is_a_ten_byte_varint() {
        let m = Message::new().varint(1, (-5i64) as u64);
        assert_eq!(m.0.len(), 11);
        let (_, v) = fields(&m.0).expect("fields")[0];
        assert_eq!(v.int32("priority"), Ok(-5));
        let too_big = Message::new().varint(1, 1 << 40);
        let (_, v) = fields(&too_big.0).expect("fields")[0];
        let e = v.int32("priority").expect_err("out of range");
        assert_eq!(
            e.to_string(),
            "protobuf priority: 1099511627776 is not an int32"
        );
    }

    #[test]
    fn truncation_and_bad_wire_types_name_the_field_and_offset() {
        let m = Message::new().string(1, "abc").string(2, "defgh");
        let cut = &m.0[..m.0.len() - 2];
        let e = fields(cut).expect_err("truncated");
        assert_eq!(
            e.to_string(),
            "protobuf: truncated length-delimited field 2 at byte 5"
        );
        let e = fields(&[0x0b]).expect_err("group");
        assert!(e.to_string().contains("wire type 3 of field 1"), "{e}");
        let e = fields(&[0x80]).expect_err("key");
        assert!(
            e.to_string().contains("truncated field key at byte 0"),
            "{e}"
        );
        let e = fields(&[0x00, 0x01]).expect_err("field 0");
        assert!(e.to_string().contains("field number 0"), "{e}");
        // A length past the end of the buffer, even a huge one, is truncation, not a panic.
        let mut huge = vec![0x0a];
        encode::put_varint(&mut huge, u64::MAX);
        assert!(fields(&huge).is_err());
    }

    #[test]
    fn wrong_types_and_paths_read_innermost_last() {
        let e = Value::Varint(1)
            .string("key")
            .map_err(|e| e.within("tolerations").within("spec"))
            .expect_err("varint is no string");
        assert_eq!(
            e.to_string(),
            "protobuf spec.tolerations.key: expected a length-delimited value, found a varint"
        );
        let e = Value::Bytes(&[0xff]).string("name").expect_err("utf-8");
        assert_eq!(e.to_string(), "protobuf name: is not UTF-8");
        assert!(Value::Bytes(b"x").varint("n").is_err());
        assert_eq!(Value::Varint(2).bool("b"), Ok(true));
    }

    #[test]
    fn varint_limits() {
        assert_eq!(varint(&[0x01]), Some((1, 1)));
        assert_eq!(varint(&[0xac, 0x02]), Some((300, 2)));
        assert_eq!(varint(&[0x80; 10]), None);
        assert_eq!(varint(&[]), None);
    }

    proptest::proptest! {
        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..64)) {
            for field in Fields::new(&bytes) {
                if field.is_err() {
                    break;
                }
            }
        }
    }
}
