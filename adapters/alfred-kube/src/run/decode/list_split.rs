//! Splits the JSON body of a Kubernetes list into its items while the body is still arriving.
//!
//! A list of 25,000 Pods is a ~60 MB body. Read whole, it would be held in memory beside the
//! objects decoded from it; paged, it costs the API server one etcd range read per page. The
//! splitter lets [`crate::run::watch::list_watch`] ask for the whole list in one request and decode each
//! item the moment its last byte is in, so at most one network chunk and one item are buffered.
//!
//! It checks only the structure it needs (a top-level object whose `items` is an array of JSON
//! values, strings and escapes tracked so a `}` inside a string is not taken for the end of an
//! item); each item's own syntax is checked by the decoder it is handed to. The top-level
//! `metadata` is kept as raw bytes for the caller (the list's `resourceVersion`); every other
//! top-level member is skipped.

use std::fmt;

/// Why a body is not a list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SplitError {
    /// Offset in the whole body of the byte that did not fit, or the body's length when it
    /// ended early.
    pub offset: usize,
    /// What was expected there.
    pub expected: &'static str,
    /// The byte found instead, if any.
    pub found: Option<u8>,
}

impl fmt::Display for SplitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.found {
            Some(b) => write!(
                f,
                "list body: expected {} at byte {}, found {:?}",
                self.expected,
                self.offset,
                char::from(b)
            ),
            None => write!(
                f,
                "list body ended at byte {} where {} was expected",
                self.offset, self.expected
            ),
        }
    }
}

impl std::error::Error for SplitError {}

/// Where the splitter is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Place {
    /// Reading the list's own structure, byte by byte.
    At(At),
    /// Inside a value: an item (`item`), or a top-level member other than `items`.
    Scanning { scan: Scan, item: bool },
}

/// A point in the list's own structure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum At {
    /// Before the top-level `{`.
    Start,
    /// After `{` or `,` at the top level: a member name, or `}` right after `{`.
    Name { first: bool },
    /// Inside a member name.
    InName { escape: bool },
    /// After a member name.
    Colon,
    /// After `:`.
    Value,
    /// After a member's value.
    AfterValue,
    /// After `[` of `items` (`first`) or a `,` between items.
    Item { first: bool },
    /// After an item.
    AfterItem,
    /// After the top-level `}`: only whitespace may follow.
    Done,
}

/// Progress through one JSON value whose first byte was at `start` (an offset into the buffer).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Scan {
    start: usize,
    /// Open objects and arrays.
    depth: u32,
    in_string: bool,
    escape: bool,
    /// A number, `true`, `false` or `null`: ends before the first delimiter.
    scalar: bool,
}

impl Scan {
    fn new(start: usize, first: u8) -> Scan {
        Scan {
            start,
            depth: u32::from(matches!(first, b'{' | b'[')),
            in_string: first == b'"',
            escape: false,
            scalar: !matches!(first, b'{' | b'[' | b'"'),
        }
    }

    /// Reads on from the byte after the value's first, through `bytes`: `Some((i, true))` when
    /// `bytes[i]` is the value's last byte, `Some((i, false))` when the value ended just before
    /// it (scalars end at a delimiter), `None` when the value goes on past `bytes`. Strings are
    /// skipped with `memchr`: most of a Kubernetes object's bytes are inside strings.
    fn run(&mut self, bytes: &[u8]) -> Option<(usize, bool)> {
        if self.scalar {
            return bytes
                .iter()
                .position(|&b| matches!(b, b',' | b'}' | b']') || is_space(b))
                .map(|i| (i, false));
        }
        let mut i = 0;
        while i < bytes.len() {
            if self.in_string {
                if self.escape {
                    self.escape = false;
                    i += 1;
                    continue;
                }
                i += memchr::memchr2(b'"', b'\\', &bytes[i..])?;
                if bytes[i] == b'\\' {
                    self.escape = true;
                } else {
                    self.in_string = false;
                    if self.depth == 0 {
                        return Some((i, true));
                    }
                }
            } else {
                match bytes[i] {
                    b'"' => self.in_string = true,
                    b'{' | b'[' => self.depth += 1,
                    b'}' | b']' => {
                        self.depth = self.depth.saturating_sub(1);
                        if self.depth == 0 {
                            return Some((i, true));
                        }
                    }
                    _ => {}
                }
            }
            i += 1;
        }
        None
    }
}

/// A resumable splitter of one list body: feed it the body's chunks in order with
/// [`ListSplitter::push`], then call [`ListSplitter::finish`].
#[derive(Debug)]
pub struct ListSplitter {
    /// Bytes not yet consumed; `buf[..pos]` has been scanned.
    buf: Vec<u8>,
    pos: usize,
    /// Body offset of `buf[0]`, for error offsets.
    consumed: usize,
    place: Place,
    /// The member name being read or whose value is being scanned.
    name: Vec<u8>,
    /// The raw top-level `metadata` value.
    metadata: Option<Vec<u8>>,
}

impl Default for ListSplitter {
    fn default() -> Self {
        ListSplitter::new()
    }
}

fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

impl ListSplitter {
    /// A splitter at the start of a body.
    pub fn new() -> ListSplitter {
        ListSplitter {
            buf: Vec::new(),
            pos: 0,
            consumed: 0,
            place: Place::At(At::Start),
            name: Vec::new(),
            metadata: None,
        }
    }

    fn error(&self, expected: &'static str, found: u8) -> SplitError {
        SplitError {
            offset: self.consumed + self.pos,
            expected,
            found: Some(found),
        }
    }

    /// Scans `chunk`, calling `on_item` with the bytes of every item completed in it, in
    /// body order. A `SplitError` leaves the splitter unusable.
    pub fn push(&mut self, chunk: &[u8], mut on_item: impl FnMut(&[u8])) -> Result<(), SplitError> {
        self.buf.extend_from_slice(chunk);
        while self.pos < self.buf.len() {
            let (mut scan, item) = match self.place {
                Place::Scanning { scan, item } => (scan, item),
                Place::At(at) => {
                    self.place = self.read_structure(at, self.buf[self.pos])?;
                    self.pos += 1;
                    continue;
                }
            };
            let Some((i, last)) = scan.run(&self.buf[self.pos..]) else {
                self.place = Place::Scanning { scan, item };
                self.pos = self.buf.len();
                break;
            };
            // A scalar's delimiter is not part of it: it is read again as structure.
            let end = self.pos + i + usize::from(last);
            let value = &self.buf[scan.start..end];
            if item {
                on_item(value);
                self.place = Place::At(At::AfterItem);
            } else {
                if self.name == b"metadata" {
                    self.metadata = Some(value.to_vec());
                }
                self.place = Place::At(At::AfterValue);
            }
            self.pos = end;
        }
        self.compact();
        Ok(())
    }

    /// Where byte `b` of the list's own structure, read at `at`, leads.
    fn read_structure(&mut self, at: At, b: u8) -> Result<Place, SplitError> {
        let next = match at {
            At::Start if is_space(b) => At::Start,
            At::Start if b == b'{' => At::Name { first: true },
            At::Start => return Err(self.error("'{' opening the list", b)),
            At::Name { first } if is_space(b) => At::Name { first },
            At::Name { .. } if b == b'"' => {
                self.name.clear();
                At::InName { escape: false }
            }
            At::Name { first: true } if b == b'}' => At::Done,
            At::Name { .. } => return Err(self.error("a member name", b)),
            At::InName { escape: true } => {
                self.name.push(b);
                At::InName { escape: false }
            }
            At::InName { escape: false } if b == b'"' => At::Colon,
            At::InName { escape: false } => {
                self.name.push(b);
                At::InName { escape: b == b'\\' }
            }
            At::Colon if is_space(b) => At::Colon,
            At::Colon if b == b':' => At::Value,
            At::Colon => return Err(self.error("':'", b)),
            At::Value if is_space(b) => At::Value,
            At::Value if b == b'[' && self.name == b"items" => At::Item { first: true },
            At::Value | At::Item { .. } if matches!(b, b',' | b'}' | b']' | b':') => {
                if at == (At::Item { first: true }) && b == b']' {
                    At::AfterValue
                } else {
                    return Err(self.error(
                        if at == At::Value {
                            "a value"
                        } else {
                            "an item"
                        },
                        b,
                    ));
                }
            }
            At::Item { first } if is_space(b) => At::Item { first },
            At::Value | At::Item { .. } => {
                return Ok(Place::Scanning {
                    scan: Scan::new(self.pos, b),
                    item: at != At::Value,
                });
            }
            At::AfterValue if is_space(b) => At::AfterValue,
            At::AfterValue if b == b',' => At::Name { first: false },
            At::AfterValue if b == b'}' => At::Done,
            At::AfterValue => return Err(self.error("',' or '}' after a member", b)),
            At::AfterItem if is_space(b) => At::AfterItem,
            At::AfterItem if b == b',' => At::Item { first: false },
            At::AfterItem if b == b']' => At::AfterValue,
            At::AfterItem => return Err(self.error("',' or ']' after an item", b)),
            At::Done if is_space(b) => At::Done,
            At::Done => return Err(self.error("the end of the body", b)),
        };
        Ok(Place::At(next))
    }

    /// Drops the bytes no value in progress still needs, so the buffer holds at most the
    /// current item (or `metadata`) and the rest of the last chunk.
    fn compact(&mut self) {
        let keep_from = match self.place {
            Place::Scanning { scan, .. } => scan.start,
            Place::At(_) => self.pos,
        };
        if keep_from == 0 {
            return;
        }
        self.buf.drain(..keep_from);
        self.pos -= keep_from;
        self.consumed += keep_from;
        if let Place::Scanning { scan, .. } = &mut self.place {
            scan.start -= keep_from;
        }
    }

    /// Ends the body: `Ok` with the raw top-level `metadata` (if the list had one) when the
    /// body was one whole object, or where it stopped short.
    pub fn finish(self) -> Result<Option<Vec<u8>>, SplitError> {
        let expected = match self.place {
            Place::At(At::Done) => return Ok(self.metadata),
            Place::At(At::Start) => "a list object",
            Place::Scanning { item: true, .. } | Place::At(At::Item { .. } | At::AfterItem) => {
                "the rest of the items"
            }
            _ => "the rest of the list object",
        };
        Err(SplitError {
            offset: self.consumed + self.buf.len(),
            expected,
            found: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::{Value, json};

    /// Splits `body` delivered in chunks of at most `chunk` bytes.
    fn split(body: &[u8], chunk: usize) -> Result<(Vec<Value>, Option<Value>), SplitError> {
        let mut splitter = ListSplitter::new();
        let mut items = Vec::new();
        for part in body.chunks(chunk.max(1)) {
            splitter.push(part, |item| {
                items.push(serde_json::from_slice(item).expect("an item is one JSON value"));
            })?;
        }
        let metadata = splitter
            .finish()?
            .map(|m| serde_json::from_slice(&m).expect("metadata is one JSON value"));
        Ok((items, metadata))
    }

    #[test]
    fn a_list_body_splits_into_its_items_and_keeps_its_metadata() {
        let body = br#"{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"42"},"items":[{"metadata":{"name":"a"}},{"metadata":{"name":"b}{]["}}]}"#;
        for chunk in [1, 2, 7, body.len()] {
            let (items, metadata) = split(body, chunk).unwrap();
            assert_eq!(
                items,
                vec![
                    json!({"metadata": {"name": "a"}}),
                    json!({"metadata": {"name": "b}{]["}})
                ],
                "chunks of {chunk}"
            );
            assert_eq!(metadata, Some(json!({"resourceVersion": "42"})));
        }
    }

    #[test]
    fn metadata_after_the_items_escaped_quotes_and_whitespace_are_read() {
        let body = b" {\n \"items\" : [ {\"a\":\"q\\\"}\"} , 7 ,\"s\\\\\",null ] ,\n \"metadata\" : {\"continue\":\"\"} , \"x\":-1.5e3 }\n";
        let (items, metadata) = split(body, 3).unwrap();
        assert_eq!(
            items,
            vec![json!({"a": "q\"}"}), json!(7), json!("s\\"), Value::Null]
        );
        assert_eq!(metadata, Some(json!({"continue": ""})));
    }

    #[test]
    fn empty_and_null_items_give_no_items() {
        for body in [
            &br#"{"metadata":{},"items":[]}"#[..],
            br#"{"items":null}"#,
            b"{}",
        ] {
            let (items, _) = split(body, 4).unwrap();
            assert!(items.is_empty(), "{}", String::from_utf8_lossy(body));
        }
    }

    #[test]
    fn a_body_cut_short_or_not_a_list_is_an_error_that_says_where() {
        let cut = br#"{"metadata":{},"items":[{"a":1},{"b"#;
        let err = split(cut, 5).unwrap_err();
        assert_eq!(err.offset, cut.len());
        assert_eq!(err.expected, "the rest of the items");
        assert!(err.to_string().contains("ended at byte 35"), "{err}");

        let err = split(b"[1,2]", 5).unwrap_err();
        assert_eq!((err.offset, err.found), (0, Some(b'[')));
        assert!(
            err.to_string()
                .contains("expected '{' opening the list at byte 0"),
            "{err}"
        );

        let err = split(br#"{"items":[1 2]}"#, 100).unwrap_err();
        assert_eq!((err.offset, err.found), (12, Some(b'2')));

        let err = split(br#"{"items":[]} x"#, 100).unwrap_err();
        assert_eq!(err.expected, "the end of the body");

        assert_eq!(split(b"", 1).unwrap_err().expected, "a list object");
    }

    #[test]
    fn the_buffer_holds_at_most_the_current_item_and_the_chunk() {
        let item = json!({"metadata": {"name": "x".repeat(100)}});
        let body = serde_json::to_vec(&json!({"metadata": {}, "items": vec![item; 200]})).unwrap();
        let mut splitter = ListSplitter::new();
        let mut largest = 0;
        for part in body.chunks(64) {
            splitter.push(part, |_| {}).unwrap();
            largest = largest.max(splitter.buf.len());
        }
        assert!(splitter.finish().is_ok());
        assert!(largest < 200, "buffer grew to {largest} bytes");
    }

    fn json_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            "[ -~\\\\\"{}\\[\\],:é]{0,8}".prop_map(Value::from),
        ];
        leaf.prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
                prop::collection::btree_map("[a-z\"\\\\{}]{0,4}", inner, 0..4)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        /// Whatever the items and however the body is cut into chunks, the splitter hands out
        /// exactly the items a whole-body parse finds, in order, and the same metadata.
        #[test]
        fn splitting_agrees_with_a_whole_body_parse(
            items in prop::collection::vec(json_value(), 0..8),
            metadata in json_value(),
            pretty in any::<bool>(),
            chunk in 1usize..40,
        ) {
            let list = json!({"kind": "List", "metadata": metadata, "items": items});
            let body = if pretty {
                serde_json::to_vec_pretty(&list).unwrap()
            } else {
                serde_json::to_vec(&list).unwrap()
            };
            let (got, got_metadata) = split(&body, chunk).unwrap();
            prop_assert_eq!(got, items);
            prop_assert_eq!(got_metadata, Some(metadata));
        }
    }
}
