//! Splits the protobuf body of a Kubernetes list into its items while the body is still
//! arriving: the protobuf counterpart of [`crate::run::decode::list_split`].
//!
//! The body is the API server's envelope: the magic `k8s\0`, then a `runtime.Unknown` message
//! whose field 2 (`raw`) holds the list (`PodList`, `NodeList`: field 1 the `ListMeta`, field 2
//! each item). Every field is length-prefixed, so the splitter never looks inside an item: it
//! reads a field's key and length, and hands the item's bytes on once they are all in. Only
//! an item cut by a chunk boundary is copied (into `carry`); the rest is handed on from the
//! chunk itself.

use crate::run::decode::list_split::SplitError;
use crate::run::decode::protobuf::varint;

/// The API server's protobuf envelope starts with these four bytes.
const MAGIC: &[u8; 4] = b"k8s\0";

/// No item of a Kubernetes list comes near this (etcd refuses objects over 1.5 MB by
/// default); a larger length is a corrupt body, refused before anything is buffered for it.
const MAX_ELEMENT: usize = 64 << 20;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Magic,
    /// The envelope's own fields; `seen_list`: its `raw` field has been read.
    Envelope {
        seen_list: bool,
    },
    /// Inside `raw`: the list's fields, `remaining` bytes of them left.
    List {
        remaining: usize,
    },
}

/// One field as it starts in the buffer.
#[derive(Debug, Clone, Copy)]
struct Field {
    number: u64,
    wire_type: u64,
    /// Key and length prefix (or, for a varint, the key and the whole value).
    header: usize,
    /// Header and payload.
    total: usize,
}

/// Splits a protobuf list body fed in chunks (see the module doc).
#[derive(Debug)]
pub struct ProtoListSplitter {
    state: State,
    /// The unfinished field (or magic) a chunk ended inside.
    carry: Vec<u8>,
    /// Body bytes consumed before `carry`, for error offsets.
    offset: usize,
    list_meta: Option<Vec<u8>>,
}

impl Default for ProtoListSplitter {
    fn default() -> Self {
        ProtoListSplitter::new()
    }
}

impl ProtoListSplitter {
    pub fn new() -> ProtoListSplitter {
        ProtoListSplitter {
            state: State::Magic,
            carry: Vec::new(),
            offset: 0,
            list_meta: None,
        }
    }

    /// Feeds the next chunk of the body; `on_item` gets each item's bytes (one encoded
    /// object) as soon as they are complete.
    pub fn push(
        &mut self,
        mut chunk: &[u8],
        mut on_item: impl FnMut(&[u8]),
    ) -> Result<(), SplitError> {
        while !chunk.is_empty() {
            if self.carry.is_empty() {
                let used = self.consume(chunk, &mut on_item)?;
                self.offset += used;
                self.carry.extend_from_slice(&chunk[used..]);
                return Ok(());
            }
            // Complete the carried field: take what it still needs (or a few bytes when
            // even its header is incomplete), then consume from the carry.
            let need = match self.next_size(&self.carry, self.offset)? {
                Some(total) => total.saturating_sub(self.carry.len()).max(1),
                None => 16,
            };
            let take = need.min(chunk.len());
            self.carry.extend_from_slice(&chunk[..take]);
            chunk = &chunk[take..];
            let carry = std::mem::take(&mut self.carry);
            let used = self.consume(&carry, &mut on_item)?;
            self.offset += used;
            self.carry = carry;
            self.carry.drain(..used);
        }
        Ok(())
    }

    /// The body is complete: the list's `ListMeta` bytes (`None` if it had none), or why
    /// the body is not a whole list.
    pub fn finish(self) -> Result<Option<Vec<u8>>, SplitError> {
        let at = self.offset + self.carry.len();
        match self.state {
            State::Envelope { seen_list: true } if self.carry.is_empty() => Ok(self.list_meta),
            State::Magic => Err(ended(at, "the protobuf envelope's magic")),
            State::Envelope { seen_list: false } => Err(ended(at, "the list in the envelope")),
            State::List { .. } | State::Envelope { .. } => Err(ended(at, "the rest of a field")),
        }
    }

    /// Size of the element at the start of `buf` (the magic, or a whole field other than the
    /// envelope's `raw`), if its header is complete.
    fn next_size(&self, buf: &[u8], at: usize) -> Result<Option<usize>, SplitError> {
        match self.state {
            State::Magic => Ok(Some(MAGIC.len())),
            State::Envelope { seen_list: false } => Ok(
                field(buf, at, Some(2))?.map(|f| if f.number == 2 { f.header } else { f.total })
            ),
            State::Envelope { seen_list: true } | State::List { .. } => {
                Ok(field(buf, at, None)?.map(|f| f.total))
            }
        }
    }

    /// Consumes the whole elements at the start of `buf`; returns how many bytes it used.
    fn consume(
        &mut self,
        buf: &[u8],
        on_item: &mut impl FnMut(&[u8]),
    ) -> Result<usize, SplitError> {
        let mut pos = 0;
        loop {
            let at = self.offset + pos;
            let rest = &buf[pos..];
            match self.state {
                State::Magic => {
                    if rest.len() < MAGIC.len() {
                        // A mismatch within what is there is an error now, not later.
                        if let Some(i) = rest.iter().zip(MAGIC).position(|(a, b)| a != b) {
                            return Err(wrong(at + i, "the protobuf envelope's magic", rest[i]));
                        }
                        return Ok(pos);
                    }
                    if let Some(i) = rest.iter().zip(MAGIC).position(|(a, b)| a != b) {
                        return Err(wrong(at + i, "the protobuf envelope's magic", rest[i]));
                    }
                    pos += MAGIC.len();
                    self.state = State::Envelope { seen_list: false };
                }
                State::Envelope { seen_list } => {
                    let Some(f) = field(rest, at, (!seen_list).then_some(2))? else {
                        return Ok(pos);
                    };
                    if f.number == 2 && !seen_list {
                        if f.wire_type != 2 {
                            return Err(wrong(at, "the envelope's raw list", rest[0]));
                        }
                        pos += f.header;
                        self.state = in_list(f.total - f.header);
                        continue;
                    }
                    if rest.len() < f.total {
                        return Ok(pos);
                    }
                    pos += f.total;
                }
                State::List { remaining } => {
                    let Some(f) = field(&rest[..rest.len().min(remaining)], at, None)? else {
                        if rest.len() >= remaining {
                            return Err(ended(at + remaining, "the rest of a list field"));
                        }
                        return Ok(pos);
                    };
                    if f.total > remaining {
                        return Err(ended(at + remaining, "the rest of a list field"));
                    }
                    if rest.len() < f.total {
                        return Ok(pos);
                    }
                    let payload = &rest[f.header..f.total];
                    match (f.number, f.wire_type) {
                        (1, 2) => self.list_meta = Some(payload.to_vec()),
                        (2, 2) => on_item(payload),
                        (1 | 2, _) => {
                            return Err(wrong(at, "a length-delimited list field", rest[0]));
                        }
                        _ => {}
                    }
                    pos += f.total;
                    self.state = in_list(remaining - f.total);
                }
            }
        }
    }
}

/// The state after entering a list of `remaining` bytes, or after a field of it.
fn in_list(remaining: usize) -> State {
    match remaining {
        0 => State::Envelope { seen_list: true },
        remaining => State::List { remaining },
    }
}

/// The field starting at `buf[0]` (`at` in the body), if its header is complete. Every
/// length-delimited field but `streamed` (the envelope's list, which is never buffered) must
/// be under [`MAX_ELEMENT`].
fn field(buf: &[u8], at: usize, streamed: Option<u64>) -> Result<Option<Field>, SplitError> {
    let Some((key, key_len)) = varint(buf) else {
        return if buf.len() >= 10 {
            Err(wrong(at, "a field key", buf[0]))
        } else {
            Ok(None)
        };
    };
    let number = key >> 3;
    let wire_type = key & 7;
    if number == 0 {
        return Err(wrong(at, "a field key", buf[0]));
    }
    let rest = &buf[key_len..];
    let (header, total) = match wire_type {
        0 => match varint(rest) {
            Some((_, n)) => (key_len + n, key_len + n),
            None if rest.len() >= 10 => return Err(wrong(at + key_len, "a varint", rest[0])),
            None => return Ok(None),
        },
        1 => (key_len, key_len + 8),
        5 => (key_len, key_len + 4),
        2 => match varint(rest) {
            Some((len, n)) => {
                let len = usize::try_from(len).unwrap_or(usize::MAX);
                if len > MAX_ELEMENT && streamed != Some(number) {
                    return Err(SplitError {
                        offset: at,
                        expected: "a field under 64 MiB",
                        found: None,
                    });
                }
                (key_len + n, key_len + n + len.min(usize::MAX - key_len - n))
            }
            None if rest.len() >= 10 => return Err(wrong(at + key_len, "a length", rest[0])),
            None => return Ok(None),
        },
        _ => return Err(wrong(at, "a field of wire type 0, 1, 2 or 5", buf[0])),
    };
    Ok(Some(Field {
        number,
        wire_type,
        header,
        total,
    }))
}

fn wrong(offset: usize, expected: &'static str, found: u8) -> SplitError {
    SplitError {
        offset,
        expected,
        found: Some(found),
    }
}

fn ended(offset: usize, expected: &'static str) -> SplitError {
    SplitError {
        offset,
        expected,
        found: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::decode::protobuf::encode::Message;

    /// A list body as the API server writes it: magic, envelope, list with its metadata.
    fn body(resource_version: &str, items: &[Message]) -> Vec<u8> {
        let mut list = Message::new().message(
            1,
            Message::new()
                .string(1, "")
                .string(2, resource_version)
                .string(3, ""),
        );
        for item in items {
            list = list.message(2, item.clone());
        }
        let envelope = Message::new()
            .message(1, Message::new().string(1, "v1").string(2, "PodList"))
            .message(2, list)
            .string(3, "")
            .string(4, "");
        let mut out = MAGIC.to_vec();
        out.extend_from_slice(&envelope.0);
        out
    }

    fn item(name: &str, padding: usize) -> Message {
        Message::new().message(
            1,
            Message::new()
                .string(1, name)
                .string(6, &"x".repeat(padding)),
        )
    }

    /// The items and the list metadata.
    type Split = (Vec<Vec<u8>>, Option<Vec<u8>>);

    fn split(body: &[u8], sizes: &[usize]) -> Result<Split, SplitError> {
        let mut splitter = ProtoListSplitter::new();
        let mut items = Vec::new();
        let mut rest = body;
        let mut i = 0;
        while !rest.is_empty() {
            let n = sizes[i % sizes.len()].max(1).min(rest.len());
            splitter.push(&rest[..n], |b| items.push(b.to_vec()))?;
            rest = &rest[n..];
            i += 1;
        }
        Ok((items, splitter.finish()?))
    }

    #[test]
    fn items_and_list_meta_at_any_chunking() {
        let items = [item("a", 3), item("b", 300), item("c", 0)];
        let whole = body("65222", &items);
        for sizes in [
            vec![whole.len()],
            vec![1],
            vec![2, 3],
            vec![7],
            vec![64, 1, 5],
        ] {
            let (got, meta) = split(&whole, &sizes).expect("split");
            assert_eq!(
                got,
                items.iter().map(|m| m.0.clone()).collect::<Vec<_>>(),
                "{sizes:?}"
            );
            let meta = meta.expect("list meta");
            assert_eq!(
                meta,
                Message::new()
                    .string(1, "")
                    .string(2, "65222")
                    .string(3, "")
                    .0
            );
        }
    }

    #[test]
    fn an_empty_list_has_its_meta_and_no_items() {
        let (got, meta) = split(&body("7", &[]), &[3]).expect("split");
        assert!(got.is_empty());
        assert!(meta.is_some());
    }

    #[test]
    fn a_truncated_body_is_refused_with_its_offset() {
        let whole = body("1", &[item("a", 50), item("b", 50)]);
        for cut in [0, 2, 4, 10, whole.len() - 30, whole.len() - 1] {
            let e = split(&whole[..cut], &[5]).expect_err("truncated");
            assert_eq!(e.found, None, "cut {cut}: {e}");
            assert!(e.offset <= cut, "cut {cut}: {e}");
        }
    }

    #[test]
    fn a_json_body_is_not_a_protobuf_list() {
        let e = split(br#"{"kind":"PodList"}"#, &[4]).expect_err("json");
        assert_eq!(e.offset, 0);
        assert_eq!(e.expected, "the protobuf envelope's magic");
        assert!(e.to_string().contains("byte 0"), "{e}");
    }

    #[test]
    fn an_item_longer_than_its_list_is_refused() {
        // The list claims 3 bytes but its one field says 100.
        let mut bad = MAGIC.to_vec();
        bad.extend_from_slice(&[0x12, 0x03, 0x12, 0x64, 0x00]);
        let e = split(&bad, &[64]).expect_err("overlong");
        assert_eq!(e.expected, "the rest of a list field");
    }

    #[test]
    fn a_huge_item_length_is_refused_before_buffering() {
        let mut bad = MAGIC.to_vec();
        bad.extend_from_slice(&[0x12, 0x80, 0x80, 0x80, 0x80, 0x01]); // raw: 256 MiB list
        bad.extend_from_slice(&[0x12, 0x80, 0x80, 0x80, 0x40]); // an item of 128 MiB
        let e = split(&bad, &[3]).expect_err("huge");
        assert_eq!(e.expected, "a field under 64 MiB");
    }

    proptest::proptest! {
        #[test]
        fn chunking_never_changes_the_split(
            pads in proptest::collection::vec(0usize..400, 0..12),
            sizes in proptest::collection::vec(1usize..200, 1..6),
        ) {
            let items: Vec<Message> = pads.iter().enumerate().map(|(i, p)| item(&format!("p{i}"), *p)).collect();
            let whole = body("42", &items);
            let (got, meta) = split(&whole, &sizes).expect("split");
            proptest::prop_assert_eq!(got, items.iter().map(|m| m.0.clone()).collect::<Vec<_>>());
            proptest::prop_assert!(meta.is_some());
        }

        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..80), size in 1usize..9) {
            let mut body = MAGIC.to_vec();
            body.extend_from_slice(&bytes);
            let _ = split(&body, &[size]);
        }
    }
}
