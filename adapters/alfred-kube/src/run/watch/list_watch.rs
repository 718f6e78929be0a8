//! A list-then-watch loop for the kinds that reach tens of thousands of objects (Pods, Nodes),
//! with the initial list read in one request and decoded item by item as it streams in.
//!
//! kube's own watcher lists in pages and decodes each page whole before asking for the next.
//! At 25,000 Pods that costs the API server 25 etcd range reads and alfred ~25 round trips, and
//! a single unpaged list through kube would hold the ~60 MB body in memory. This loop instead:
//!
//! 1. lists in one request, splitting the body into items while it arrives and emitting each
//!    decoded item at once (`Init`, `InitApply`..., `InitDone`). The request asks for
//!    protobuf, as client-go does for core kinds: the server encodes a 25,000-Pod list in
//!    less time than as JSON, the body is a third smaller, and [`crate::run::decode::slim`]'s protobuf
//!    reader skips unread fields by length ([`ProtoListSplitter`]; a server that answers in
//!    JSON gets [`ListSplitter`]). A protobuf body that does not read switches the loop to
//!    JSON for good, so an encoding this reader does not know costs one failed list, not a
//!    stuck watcher.
//!    The first list may be served from the API server's watch cache (`resourceVersion=0`: no
//!    etcd read, what client-go's informers do at start); every later one is a quorum read
//!    from etcd ([`ListFrom`]), so a relist never goes back behind a version already seen;
//! 2. watches from the list's `resourceVersion` with bookmarks, re-watching from the last
//!    version seen when a watch ends or stays silent past its timeout;
//! 3. lists again after `410 Gone` or a failed list.
//!
//! It yields kube's own `watcher::Event` and `watcher::Error`, so everything downstream (the
//! backoff, the reflector store, the health tracking in [`crate::run::watch::caches`]) is the same as for
//! the kinds kube's watcher serves.

use std::collections::VecDeque;
use std::pin::Pin;
use std::time::{Duration, Instant};

use futures::stream::BoxStream;
use futures::{Stream, StreamExt};
use http_body::Body as _;
use kube::api::{Api, ListParams, WatchEvent, WatchParams};
use kube::client::Body;
use kube::core::{Request, Status};
use kube::runtime::watcher::{Error, Event};
use kube::{Client, Resource, ResourceExt};
use serde::de::DeserializeOwned;

use crate::run::decode::list_split::ListSplitter;
use crate::run::decode::proto_list::ProtoListSplitter;
use crate::run::decode::protobuf::Fields;
use crate::run::decode::slim::FromProtobuf;

/// What the list requests accept: protobuf first (the core kinds; see [`crate::run::decode::protobuf`]),
/// JSON from a server or proxy that does not offer it.
const ACCEPT_PROTOBUF: &str = "application/vnd.kubernetes.protobuf, application/json";
const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";

/// How long a watch may stay silent before it is dropped and started again: the server ends
/// a watch after its `timeoutSeconds` (290 by default), so silence beyond that means the
/// connection is gone without a close.
const WATCH_IDLE_TIMEOUT: Duration = Duration::from_secs(300);

/// Where a list is served from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListFrom {
    /// The API server's watch cache (`resourceVersion=0`): no etcd read, possibly a little
    /// behind etcd; the watch that follows catches up from the list's version.
    WatchCache,
    /// A quorum read from etcd (no `resourceVersion`): as new as the server knows.
    Etcd,
}

impl ListFrom {
    fn params(self) -> ListParams {
        match self {
            ListFrom::WatchCache => ListParams::default().at("0"),
            ListFrom::Etcd => ListParams::default(),
        }
    }
}

/// A list in progress: the response body, the splitter and the items decoded from the last
/// chunk but not yet emitted.
struct Listing<K> {
    body: Body,
    /// When the request was sent, and when its first body byte arrived: the debug log's
    /// split between the server's time to answer and the time to read and decode.
    started: Instant,
    first_byte: Option<Instant>,
    bytes: usize,
    splitter: Splitter,
    decoded: VecDeque<K>,
    /// Items split so far, to name the one that does not decode.
    items: usize,
}

impl<K> Listing<K> {
    fn new(body: Body, protobuf: bool, started: Instant) -> Listing<K> {
        Listing {
            body,
            started,
            first_byte: None,
            bytes: 0,
            splitter: if protobuf {
                Splitter::Protobuf(ProtoListSplitter::new())
            } else {
                Splitter::Json(ListSplitter::new())
            },
            decoded: VecDeque::new(),
            items: 0,
        }
    }
}

/// The body's encoding, as the response's `Content-Type` says.
enum Splitter {
    Json(ListSplitter),
    Protobuf(ProtoListSplitter),
}

/// Why an item or a body did not decode (serde_json's error, the protobuf reader's, the
/// splitters').
pub type DecodeError = Box<dyn std::error::Error + Send + Sync>;

/// An item of a list that does not decode as its kind, named by its position in the list.
/// Public so the fuzz targets check the very line a decoding failure is reported in.
#[derive(Debug)]
pub struct ItemError {
    /// Position of the item in the list (0-based).
    pub index: usize,
    /// Why it does not decode.
    pub source: DecodeError,
}

/// Longest decoder message an [`ItemError`] shows: serde's messages echo the offending value,
/// and every error line stays within 300 characters with the list's name before it.
const ITEM_ERROR_MAX: usize = 200;

impl std::fmt::Display for ItemError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let reason = alfred_sim::clip::clip(&self.source.to_string(), ITEM_ERROR_MAX);
        write!(f, "list item {}: {reason}", self.index)
    }
}

impl std::error::Error for ItemError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&*self.source)
    }
}

enum State<K> {
    /// Next: send the list request.
    Empty,
    Listing(Box<Listing<K>>),
    /// Listed (or a watch ended) at this version; next: start a watch from it.
    Listed {
        resource_version: String,
    },
    Watching {
        resource_version: String,
        stream: BoxStream<'static, kube::Result<WatchEvent<K>>>,
    },
}

/// How the next list is asked for.
#[derive(Debug, Clone, Copy)]
struct Lists {
    from: ListFrom,
    /// Ask for protobuf; cleared for good when a protobuf body does not read (a server that
    /// encodes something this reader does not know), so the loop lists in JSON instead of
    /// failing the same way again.
    protobuf: bool,
}

/// A kind the loop lists and watches: a cluster-wide core kind read from JSON or protobuf.
pub trait ListedKind:
    Resource<DynamicType = ()>
    + Clone
    + DeserializeOwned
    + FromProtobuf
    + std::fmt::Debug
    + Send
    + 'static
{
}

impl<K> ListedKind for K where
    K: Resource<DynamicType = ()>
        + Clone
        + DeserializeOwned
        + FromProtobuf
        + std::fmt::Debug
        + Send
        + 'static
{
}

/// The events of `K`'s cluster-wide collection (see the module doc): lists from `first_list`
/// until one list completes, from etcd after that. Errors do not end the stream: the next
/// poll retries (put a backoff behind it, as `WatchStreamExt::default_backoff` does).
pub fn watcher<K>(
    client: Client,
    first_list: ListFrom,
) -> impl Stream<Item = Result<Event<K>, Error>> + Send
where
    K: ListedKind,
{
    let api = Api::<K>::all(client.clone());
    let lists = Lists {
        from: first_list,
        protobuf: true,
    };
    futures::stream::unfold((State::Empty, lists), move |(mut state, mut lists)| {
        let client = client.clone();
        let api = api.clone();
        async move {
            loop {
                let (event, next) = step(&client, &api, &mut lists, state).await;
                state = next;
                if matches!(event, Some(Ok(Event::InitDone))) {
                    lists.from = ListFrom::Etcd;
                }
                if let Some(event) = event {
                    return Some((event, (state, lists)));
                }
            }
        }
    })
}

/// One transition of the loop: the event to emit, if any, and the next state.
async fn step<K>(
    client: &Client,
    api: &Api<K>,
    lists: &mut Lists,
    state: State<K>,
) -> (Option<Result<Event<K>, Error>>, State<K>)
where
    K: ListedKind,
{
    match state {
        State::Empty => {
            let started = Instant::now();
            match start_list::<K>(client, *lists).await {
                Ok((body, protobuf)) => {
                    tracing::debug!(
                        kind = %K::kind(&()),
                        protobuf,
                        headers_ms = started.elapsed().as_millis(),
                        "list answered"
                    );
                    (
                        Some(Ok(Event::Init)),
                        State::Listing(Box::new(Listing::new(body, protobuf, started))),
                    )
                }
                Err(e) => (Some(Err(Error::InitialListFailed(e))), State::Empty),
            }
        }
        State::Listing(mut listing) => {
            if let Some(object) = listing.decoded.pop_front() {
                return (Some(Ok(Event::InitApply(object))), State::Listing(listing));
            }
            let protobuf = matches!(listing.splitter, Splitter::Protobuf(_));
            let result = match next_chunk(&mut listing.body).await {
                Some(Ok(chunk)) => {
                    listing.first_byte.get_or_insert_with(Instant::now);
                    listing.bytes += chunk.len();
                    match split_chunk(&mut listing, &chunk) {
                        Ok(()) => return (None, State::Listing(listing)),
                        Err(e) => Err(Error::InitialListFailed(e)),
                    }
                }
                // The transport failed, not the body: the same encoding is tried again.
                Some(Err(e)) => return (Some(Err(Error::InitialListFailed(e))), State::Empty),
                None => {
                    let Listing {
                        splitter,
                        items,
                        bytes,
                        started,
                        first_byte,
                        ..
                    } = *listing;
                    list_version(splitter).inspect(|resource_version| {
                        tracing::debug!(
                            kind = %K::kind(&()),
                            %resource_version,
                            items,
                            bytes,
                            first_byte_ms = first_byte.map(|t| (t - started).as_millis()),
                            total_ms = started.elapsed().as_millis(),
                            "listed"
                        );
                    })
                }
            };
            match result {
                Ok(resource_version) => (
                    Some(Ok(Event::InitDone)),
                    State::Listed { resource_version },
                ),
                Err(e) => {
                    if protobuf {
                        tracing::warn!(
                            kind = %K::kind(&()),
                            error = %e,
                            "a protobuf list did not read; listing in JSON from now on"
                        );
                        lists.protobuf = false;
                    }
                    (Some(Err(e)), State::Empty)
                }
            }
        }
        State::Listed { resource_version } => {
            // Bookmarks are on by default: a quiet collection still advances the version to resume from.
            let params = WatchParams::default();
            match api.watch(&params, &resource_version).await {
                Ok(stream) => (
                    None,
                    State::Watching {
                        resource_version,
                        stream: stream.boxed(),
                    },
                ),
                Err(e) => (
                    Some(Err(Error::WatchStartFailed(e))),
                    State::Listed { resource_version },
                ),
            }
        }
        State::Watching {
            resource_version,
            mut stream,
        } => match tokio::time::timeout(WATCH_IDLE_TIMEOUT, stream.next()).await {
            Ok(Some(Ok(WatchEvent::Added(o) | WatchEvent::Modified(o)))) => {
                follow(o, stream, Event::Apply)
            }
            Ok(Some(Ok(WatchEvent::Deleted(o)))) => follow(o, stream, Event::Delete),
            Ok(Some(Ok(WatchEvent::Bookmark(b)))) => (
                None,
                State::Watching {
                    resource_version: b.metadata.resource_version,
                    stream,
                },
            ),
            Ok(Some(Ok(WatchEvent::Error(status)))) => {
                // 410 Gone: the version fell out of the server's window; only a new list
                // can say what changed since.
                let next = if status.code == 410 {
                    State::Empty
                } else {
                    State::Watching {
                        resource_version,
                        stream,
                    }
                };
                (Some(Err(Error::WatchError(status))), next)
            }
            Ok(Some(Err(e))) => (
                Some(Err(Error::WatchFailed(e))),
                State::Watching {
                    resource_version,
                    stream,
                },
            ),
            // Ended by the server's timeout, or silent too long: watch again from here.
            Ok(None) | Err(_) => (None, State::Listed { resource_version }),
        },
    }
}

/// An object event of a watch: emitted, and its version becomes the one to resume from.
fn follow<K: Resource>(
    object: K,
    stream: BoxStream<'static, kube::Result<WatchEvent<K>>>,
    event: fn(K) -> Event<K>,
) -> (Option<Result<Event<K>, Error>>, State<K>) {
    match object.resource_version().filter(|v| !v.is_empty()) {
        Some(resource_version) => (
            Some(Ok(event(object))),
            State::Watching {
                resource_version,
                stream,
            },
        ),
        None => (Some(Err(Error::NoResourceVersion)), State::Empty),
    }
}

/// Sends the list request; `Ok` with the body of a successful response and whether it is
/// protobuf, or the server's `Status` (or the transport's error) as kube reports it for its
/// own requests.
async fn start_list<K>(client: &Client, lists: Lists) -> kube::Result<(Body, bool)>
where
    K: Resource<DynamicType = ()>,
{
    let mut request = Request::new(K::url_path(&(), None))
        .list(&lists.from.params())
        .map_err(kube::Error::BuildRequest)?;
    if lists.protobuf {
        request.headers_mut().insert(
            http::header::ACCEPT,
            http::HeaderValue::from_static(ACCEPT_PROTOBUF),
        );
    }
    let response = client.send(request.map(Body::from)).await?;
    let status = response.status();
    if status.is_success() {
        let protobuf = response
            .headers()
            .get(http::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with(PROTOBUF));
        return Ok((response.into_body(), protobuf));
    }
    let text = response.into_body().collect_bytes().await?;
    let status = serde_json::from_slice::<Status>(&text).unwrap_or_else(|_| {
        Status::failure(
            String::from_utf8_lossy(&text).trim(),
            "Failed to parse error data",
        )
        .with_code(status.as_u16())
    });
    Err(kube::Error::Api(Box::new(status)))
}

/// The next data chunk of the body (trailers skipped), `None` at its end.
async fn next_chunk(body: &mut Body) -> Option<kube::Result<bytes::Bytes>> {
    loop {
        let frame = std::future::poll_fn(|cx| Pin::new(&mut *body).poll_frame(cx)).await?;
        match frame {
            Ok(frame) => {
                if let Ok(data) = frame.into_data() {
                    return Some(Ok(data));
                }
            }
            Err(e) => return Some(Err(e)),
        }
    }
}

/// Feeds one chunk to the splitter and decodes the items it completes.
fn split_chunk<K: DeserializeOwned + FromProtobuf>(
    listing: &mut Listing<K>,
    chunk: &[u8],
) -> kube::Result<()> {
    let mut decode_error = None;
    let Listing {
        splitter,
        decoded,
        items,
        ..
    } = listing;
    let mut on_item = |item: &[u8], decode: fn(&[u8]) -> Result<K, DecodeError>| {
        if decode_error.is_none() {
            match decode(item) {
                Ok(object) => decoded.push_back(object),
                Err(source) => {
                    decode_error = Some(ItemError {
                        index: *items,
                        source,
                    });
                }
            }
        }
        *items += 1;
    };
    let split = match splitter {
        Splitter::Json(s) => s.push(chunk, |item| {
            on_item(item, |b| Ok(serde_json::from_slice::<K>(b)?))
        }),
        Splitter::Protobuf(s) => s.push(chunk, |item| on_item(item, |b| Ok(K::from_protobuf(b)?))),
    };
    split.map_err(|e| kube::Error::Service(Box::new(e)))?;
    match decode_error {
        Some(e) => Err(kube::Error::Service(Box::new(e))),
        None => Ok(()),
    }
}

/// The list's `metadata.resourceVersion`, where the watch starts.
fn list_version(splitter: Splitter) -> Result<String, Error> {
    let body_error = |e: DecodeError| Error::InitialListFailed(kube::Error::Service(e));
    let resource_version =
        match splitter {
            Splitter::Json(s) => match s.finish().map_err(|e| body_error(Box::new(e)))? {
                Some(raw) => serde_json::from_slice::<
                    k8s_openapi::apimachinery::pkg::apis::meta::v1::ListMeta,
                >(&raw)
                .map_err(|e| Error::InitialListFailed(kube::Error::SerdeError(e)))?
                .resource_version,
                None => None,
            },
            Splitter::Protobuf(s) => match s.finish().map_err(|e| body_error(Box::new(e)))? {
                Some(raw) => protobuf_list_version(&raw).map_err(|e| body_error(Box::new(e)))?,
                None => None,
            },
        };
    resource_version
        .filter(|v| !v.is_empty())
        .ok_or(Error::NoResourceVersion)
}

/// `ListMeta.resourceVersion` (field 2) of a protobuf list.
fn protobuf_list_version(
    list_meta: &[u8],
) -> Result<Option<String>, crate::run::decode::protobuf::ProtoError> {
    let mut version = None;
    for field in Fields::new(list_meta) {
        let (number, value) = field.map_err(|e| e.within("metadata"))?;
        if number == 2 {
            version = Some(
                value
                    .string("resourceVersion")
                    .map_err(|e| e.within("metadata"))?,
            );
        }
    }
    Ok(version)
}

/// The encoding a list asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    /// Protobuf, or JSON from a server that does not offer it (what the watchers ask for).
    PreferProtobuf,
    Json,
}

/// Every object of `K`'s collection in one request, decoded as it streams in (the
/// execute-mode re-check's fresh read: [`ListFrom::Etcd`], [`Encoding::PreferProtobuf`]).
pub async fn list_all<K>(
    client: &Client,
    list_from: ListFrom,
    encoding: Encoding,
) -> kube::Result<Vec<K>>
where
    K: Resource<DynamicType = ()> + DeserializeOwned + FromProtobuf,
{
    let started = Instant::now();
    let lists = Lists {
        from: list_from,
        protobuf: encoding == Encoding::PreferProtobuf,
    };
    let (body, protobuf) = start_list::<K>(client, lists).await?;
    let mut listing = Listing::new(body, protobuf, started);
    let mut out = Vec::new();
    while let Some(chunk) = next_chunk(&mut listing.body).await {
        split_chunk(&mut listing, &chunk?)?;
        out.extend(listing.decoded.drain(..));
    }
    list_version(listing.splitter).map_err(|e| match e {
        Error::InitialListFailed(e) => e,
        other => kube::Error::Service(Box::new(other)),
    })?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;
    use std::pin::Pin;
    use std::sync::{Arc, Mutex};
    use std::task::{Context, Poll};

    use bytes::Bytes;
    use http::{Request, Response};
    use http_body::Frame;
    use kube::client::Body;

    use super::*;
    use crate::run::decode::protobuf::encode::Message;
    use crate::run::decode::slim::SlimPod;

    /// A response body delivered in the given chunks, as the network would.
    struct Chunks(VecDeque<Bytes>);

    impl http_body::Body for Chunks {
        type Data = Bytes;
        type Error = std::convert::Infallible;
        fn poll_frame(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
        ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
            Poll::Ready(self.0.pop_front().map(|b| Ok(Frame::data(b))))
        }
    }

    /// `body` cut into chunks of `size` bytes.
    fn chunked(status: u16, body: &str, size: usize) -> Response<Chunks> {
        let chunks = body
            .as_bytes()
            .chunks(size)
            .map(Bytes::copy_from_slice)
            .collect();
        Response::builder()
            .status(status)
            .body(Chunks(chunks))
            .expect("response")
    }

    fn pod(name: &str, rv: &str) -> String {
        format!(
            r#"{{"metadata":{{"name":"{name}","namespace":"ns","resourceVersion":"{rv}"}},"spec":{{"nodeName":"n1"}}}}"#
        )
    }

    fn list(rv: &str, pods: &[String]) -> String {
        format!(
            r#"{{"kind":"PodList","apiVersion":"v1","metadata":{{"resourceVersion":"{rv}"}},"items":[{}]}}"#,
            pods.join(",")
        )
    }

    /// A protobuf Pod with a name and a resource version.
    fn pod_pb(name: &str, rv: &str) -> Message {
        Message::new().message(
            1,
            Message::new().string(1, name).string(3, "ns").string(6, rv),
        )
    }

    /// A protobuf list body as the API server writes it, in chunks of `size` bytes.
    fn protobuf_list(rv: &str, pods: &[Message], size: usize) -> Response<Chunks> {
        let mut list = Message::new().message(1, Message::new().string(2, rv));
        for pod in pods {
            list = list.message(2, pod.clone());
        }
        let envelope = Message::new()
            .message(1, Message::new().string(1, "v1").string(2, "PodList"))
            .message(2, list);
        let mut body = b"k8s\0".to_vec();
        body.extend_from_slice(&envelope.0);
        Response::builder()
            .status(200)
            .header(http::header::CONTENT_TYPE, PROTOBUF)
            .body(Chunks(
                body.chunks(size).map(Bytes::copy_from_slice).collect(),
            ))
            .expect("response")
    }

    /// A client whose server answers the scripted responses in order and records each
    /// request's path and query, and ` (protobuf)` when it accepts protobuf.
    fn scripted(responses: Vec<Response<Chunks>>) -> (Client, Arc<Mutex<Vec<String>>>) {
        let (service, mut handle) = tower_test::mock::pair::<Request<Body>, Response<Chunks>>();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        tokio::spawn(async move {
            let mut responses = responses.into_iter();
            while let Some((request, reply)) = handle.next_request().await {
                let protobuf = request
                    .headers()
                    .get(http::header::ACCEPT)
                    .is_some_and(|a| a == ACCEPT_PROTOBUF);
                let suffix = if protobuf { " (protobuf)" } else { "" };
                log.lock()
                    .unwrap()
                    .push(format!("{}{suffix}", request.uri()));
                match responses.next() {
                    Some(response) => reply.send_response(response),
                    None => std::future::pending::<()>().await,
                }
            }
        });
        (Client::new(service, "default"), seen)
    }

    fn describe(event: &Result<Event<SlimPod>, Error>) -> String {
        let name = |p: &SlimPod| p.metadata.name.clone().unwrap_or_default();
        match event {
            Ok(Event::Init) => "Init".into(),
            Ok(Event::InitApply(p)) => format!("InitApply {}", name(p)),
            Ok(Event::InitDone) => "InitDone".into(),
            Ok(Event::Apply(p)) => format!("Apply {}", name(p)),
            Ok(Event::Delete(p)) => format!("Delete {}", name(p)),
            Err(Error::InitialListFailed(e)) => format!("list failed: {e}"),
            Err(Error::WatchError(s)) => format!("watch error {}", s.code),
            Err(e) => format!("error: {e}"),
        }
    }

    async fn take(
        stream: &mut (impl Stream<Item = Result<Event<SlimPod>, Error>> + Unpin),
        n: usize,
    ) -> Vec<String> {
        let mut out = Vec::new();
        for _ in 0..n {
            let event = tokio::time::timeout(Duration::from_secs(5), stream.next())
                .await
                .expect("an event within 5 s")
                .expect("the stream does not end");
            out.push(describe(&event));
        }
        out
    }

    #[tokio::test]
    async fn the_list_is_one_request_to_the_watch_cache_then_a_watch_from_its_version() {
        let body = list("10", &[pod("a", "8"), pod("b", "9")]);
        let watch = [
            format!(r#"{{"type":"ADDED","object":{}}}"#, pod("c", "11")),
            r#"{"type":"BOOKMARK","object":{"kind":"Pod","apiVersion":"v1","metadata":{"resourceVersion":"12"}}}"#.to_string(),
            format!(r#"{{"type":"DELETED","object":{}}}"#, pod("a", "13")),
        ]
        .join("\n")
            + "\n";
        let (client, seen) = scripted(vec![
            chunked(200, &body, 7),
            chunked(200, &watch, 5),
            chunked(200, "", 1),
        ]);
        let mut events = Box::pin(watcher::<SlimPod>(client, ListFrom::WatchCache));
        assert_eq!(
            take(&mut events, 6).await,
            [
                "Init",
                "InitApply a",
                "InitApply b",
                "InitDone",
                "Apply c",
                "Delete a"
            ]
        );
        // The watch ended: the next one resumes from the last version seen.
        tokio::time::timeout(Duration::from_secs(1), events.next())
            .await
            .expect_err("no event from an empty watch");
        let seen = seen.lock().unwrap().clone();
        assert_eq!(seen[0], "/api/v1/pods?&resourceVersion=0 (protobuf)");
        assert!(seen[1].contains("watch=true"), "{}", seen[1]);
        assert!(seen[1].contains("resourceVersion=10"), "{}", seen[1]);
        assert!(seen[1].contains("allowWatchBookmarks=true"), "{}", seen[1]);
        assert!(seen[2].contains("resourceVersion=13"), "{}", seen[2]);
    }

    #[tokio::test]
    async fn a_protobuf_list_is_read_item_by_item_and_the_watch_follows_in_json() {
        let watch = format!(r#"{{"type":"ADDED","object":{}}}"#, pod("c", "11")) + "\n";
        let (client, seen) = scripted(vec![
            protobuf_list("10", &[pod_pb("a", "8"), pod_pb("b", "9")], 5),
            chunked(200, &watch, 5),
        ]);
        let mut events = Box::pin(watcher::<SlimPod>(client, ListFrom::WatchCache));
        assert_eq!(
            take(&mut events, 5).await,
            ["Init", "InitApply a", "InitApply b", "InitDone", "Apply c"]
        );
        let seen = seen.lock().unwrap().clone();
        assert_eq!(seen[0], "/api/v1/pods?&resourceVersion=0 (protobuf)");
        assert!(seen[1].contains("resourceVersion=10"), "{}", seen[1]);
        assert!(
            !seen[1].ends_with("(protobuf)"),
            "the watch is JSON: {}",
            seen[1]
        );
    }

    #[tokio::test]
    async fn a_protobuf_list_that_does_not_read_is_listed_again_in_json() {
        // The second item's name is a number: a server encoding this reader does not know.
        let bad = Message::new().message(1, Message::new().varint(1, 7));
        let (client, seen) = scripted(vec![
            protobuf_list("10", &[pod_pb("a", "8"), bad], 64),
            chunked(200, &list("12", &[pod("a", "8"), pod("b", "9")]), 64),
        ]);
        let mut events = Box::pin(watcher::<SlimPod>(client, ListFrom::WatchCache));
        let got = take(&mut events, 6).await;
        assert_eq!(
            got,
            [
                "Init",
                "list failed: ServiceError: list item 1: protobuf Pod.metadata.name: \
                 expected a length-delimited value, found a varint",
                "Init",
                "InitApply a",
                "InitApply b",
                "InitDone"
            ]
        );
        let seen = seen.lock().unwrap().clone();
        assert_eq!(seen[0], "/api/v1/pods?&resourceVersion=0 (protobuf)");
        assert_eq!(seen[1], "/api/v1/pods?&resourceVersion=0");
    }

    #[tokio::test]
    async fn gone_starts_a_new_list_from_etcd() {
        let gone = r#"{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"too old","reason":"Expired","code":410}}"#;
        let (client, seen) = scripted(vec![
            chunked(200, &list("10", &[pod("a", "8")]), 64),
            chunked(200, &format!("{gone}\n"), 64),
            chunked(200, &list("20", &[pod("b", "19")]), 3),
        ]);
        let mut events = Box::pin(watcher::<SlimPod>(client, ListFrom::WatchCache));
        assert_eq!(
            take(&mut events, 7).await,
            [
                "Init",
                "InitApply a",
                "InitDone",
                "watch error 410",
                "Init",
                "InitApply b",
                "InitDone"
            ]
        );
        // Not from the watch cache: it could be behind the version the first list showed.
        assert_eq!(seen.lock().unwrap()[2], "/api/v1/pods? (protobuf)");
    }

    #[tokio::test]
    async fn a_refused_list_reports_the_server_s_status_and_the_next_poll_lists_again() {
        let refused = r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"pods is forbidden","reason":"Forbidden","code":403}"#;
        let (client, seen) = scripted(vec![
            chunked(403, refused, 16),
            chunked(500, "upstream broke", 16),
            chunked(200, &list("5", &[]), 16),
        ]);
        let mut events = Box::pin(watcher::<SlimPod>(client, ListFrom::WatchCache));
        let got = take(&mut events, 4).await;
        assert!(
            got[0].starts_with("list failed") && got[0].contains("pods is forbidden"),
            "{got:?}"
        );
        assert!(
            got[1].contains("upstream broke") && got[1].contains("500"),
            "{got:?}"
        );
        assert_eq!(got[2..], ["Init", "InitDone"]);
        // Until a list completes, every attempt may use the watch cache.
        let seen = seen.lock().unwrap().clone();
        assert_eq!(seen.len(), 3);
        assert!(
            seen.iter()
                .all(|q| q == "/api/v1/pods?&resourceVersion=0 (protobuf)"),
            "{seen:?}"
        );
    }

    #[test]
    fn an_item_error_echoing_a_long_value_stays_one_short_line() {
        let long = format!("\"{}\\n{}\"", "L".repeat(300), ";".repeat(300));
        let source: DecodeError = serde_json::from_str::<SlimPod>(&long).unwrap_err().into();
        let line = ItemError { index: 1, source }.to_string();
        assert!(
            line.starts_with("list item 1: invalid type: string"),
            "{line}"
        );
        assert!(
            line.chars().count() <= 220,
            "{} characters: {line}",
            line.len()
        );
        assert!(!line.contains('\n'), "{line}");
    }

    #[tokio::test]
    async fn a_list_cut_short_or_an_undecodable_item_fails_the_list_without_init_done() {
        let body = list("10", &[pod("a", "8"), pod("b", "9")]);
        let cut = &body[..body.len() - 30];
        let bad = list(
            "10",
            &[pod("a", "8"), r#"{"metadata":{"name":5}}"#.to_string()],
        );
        let (client, seen) = scripted(vec![chunked(200, cut, 10), chunked(200, &bad, 10)]);
        let mut events = Box::pin(watcher::<SlimPod>(client, ListFrom::WatchCache));
        let got = take(&mut events, 6).await;
        assert_eq!(got[..2], ["Init", "InitApply a"]);
        assert!(got[2].contains("list body ended at byte"), "{got:?}");
        assert_eq!(got[3..5], ["Init", "InitApply a"]);
        assert!(
            got[5].contains("list item 1: invalid type: integer `5`"),
            "{got:?}"
        );
        // A JSON body that fails is no reason to stop asking for protobuf.
        let seen = seen.lock().unwrap().clone();
        assert!(seen.iter().all(|q| q.ends_with("(protobuf)")), "{seen:?}");
    }

    #[tokio::test]
    async fn list_all_reads_everything_from_etcd_in_one_request() {
        let (client, seen) = scripted(vec![chunked(
            200,
            &list("10", &[pod("a", "8"), pod("b", "9")]),
            4,
        )]);
        let pods: Vec<SlimPod> = list_all(&client, ListFrom::Etcd, Encoding::PreferProtobuf)
            .await
            .expect("listed");
        let names: Vec<_> = pods
            .iter()
            .filter_map(|p| p.metadata.name.clone())
            .collect();
        assert_eq!(names, ["a", "b"]);
        assert_eq!(seen.lock().unwrap()[0], "/api/v1/pods? (protobuf)");
    }
}
