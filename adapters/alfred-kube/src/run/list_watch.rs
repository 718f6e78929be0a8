//! A list-then-watch loop for the kinds that reach tens of thousands of objects (Pods, Nodes),
//! with the initial list read in one request and decoded item by item as it streams in.
//!
//! kube's own watcher lists in pages and decodes each page whole before asking for the next.
//! At 25,000 Pods that costs the API server 25 etcd range reads and alfred ~25 round trips, and
//! a single unpaged list through kube would hold the ~60 MB body in memory. This loop instead:
//!
//! 1. lists in one request, splitting the body into items with [`ListSplitter`] while it
//!    arrives and emitting each decoded item at once (`Init`, `InitApply`..., `InitDone`).
//!    The first list may be served from the API server's watch cache (`resourceVersion=0`: no
//!    etcd read, what client-go's informers do at start); every later one is a quorum read
//!    from etcd ([`ListFrom`]), so a relist never goes back behind a version already seen;
//! 2. watches from the list's `resourceVersion` with bookmarks, re-watching from the last
//!    version seen when a watch ends or stays silent past its timeout;
//! 3. lists again after `410 Gone` or a failed list.
//!
//! It yields kube's own `watcher::Event` and `watcher::Error`, so everything downstream (the
//! backoff, the reflector store, the health tracking in [`super::watch`]) is the same as for
//! the kinds kube's watcher serves.

use std::collections::VecDeque;
use std::pin::Pin;
use std::time::Duration;

use futures::stream::BoxStream;
use futures::{Stream, StreamExt};
use http_body::Body as _;
use kube::api::{Api, ListParams, WatchEvent, WatchParams};
use kube::client::Body;
use kube::core::{Request, Status};
use kube::runtime::watcher::{Error, Event};
use kube::{Client, Resource, ResourceExt};
use serde::de::DeserializeOwned;

use super::list_split::ListSplitter;

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
    splitter: ListSplitter,
    decoded: VecDeque<K>,
    /// Items split so far, to name the one that does not decode.
    items: usize,
}

impl<K> Listing<K> {
    fn new(body: Body) -> Listing<K> {
        Listing {
            body,
            splitter: ListSplitter::new(),
            decoded: VecDeque::new(),
            items: 0,
        }
    }
}

/// An item of a list that does not decode as its kind, named by its position in the list.
#[derive(Debug)]
struct ItemError {
    index: usize,
    source: serde_json::Error,
}

impl std::fmt::Display for ItemError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "list item {}: {}", self.index, self.source)
    }
}

impl std::error::Error for ItemError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.source)
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

/// The events of `K`'s cluster-wide collection (see the module doc): lists from `first_list`
/// until one list completes, from etcd after that. Errors do not end the stream: the next
/// poll retries (put a backoff behind it, as `WatchStreamExt::default_backoff` does).
pub fn watcher<K>(
    client: Client,
    first_list: ListFrom,
) -> impl Stream<Item = Result<Event<K>, Error>> + Send
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + std::fmt::Debug + Send + 'static,
{
    let api = Api::<K>::all(client.clone());
    futures::stream::unfold(
        (State::Empty, first_list),
        move |(mut state, mut list_from)| {
            let client = client.clone();
            let api = api.clone();
            async move {
                loop {
                    let (event, next) = step(&client, &api, list_from, state).await;
                    state = next;
                    if matches!(event, Some(Ok(Event::InitDone))) {
                        list_from = ListFrom::Etcd;
                    }
                    if let Some(event) = event {
                        return Some((event, (state, list_from)));
                    }
                }
            }
        },
    )
}

/// One transition of the loop: the event to emit, if any, and the next state.
async fn step<K>(
    client: &Client,
    api: &Api<K>,
    list_from: ListFrom,
    state: State<K>,
) -> (Option<Result<Event<K>, Error>>, State<K>)
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + std::fmt::Debug + Send + 'static,
{
    match state {
        State::Empty => match start_list::<K>(client, list_from).await {
            Ok(body) => (
                Some(Ok(Event::Init)),
                State::Listing(Box::new(Listing::new(body))),
            ),
            Err(e) => (Some(Err(Error::InitialListFailed(e))), State::Empty),
        },
        State::Listing(mut listing) => {
            if let Some(object) = listing.decoded.pop_front() {
                return (Some(Ok(Event::InitApply(object))), State::Listing(listing));
            }
            match next_chunk(&mut listing.body).await {
                Some(Ok(chunk)) => match split_chunk(&mut listing, &chunk) {
                    Ok(()) => (None, State::Listing(listing)),
                    Err(e) => (Some(Err(Error::InitialListFailed(e))), State::Empty),
                },
                Some(Err(e)) => (Some(Err(Error::InitialListFailed(e))), State::Empty),
                None => match list_version(listing.splitter) {
                    Ok(resource_version) => {
                        tracing::debug!(kind = %K::kind(&()), %resource_version, "listed");
                        (
                            Some(Ok(Event::InitDone)),
                            State::Listed { resource_version },
                        )
                    }
                    Err(e) => (Some(Err(e)), State::Empty),
                },
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

/// Sends the list request; `Ok` with the body of a successful response, or the server's
/// `Status` (or the transport's error) as kube reports it for its own requests.
async fn start_list<K>(client: &Client, list_from: ListFrom) -> kube::Result<Body>
where
    K: Resource<DynamicType = ()>,
{
    let request = Request::new(K::url_path(&(), None))
        .list(&list_from.params())
        .map_err(kube::Error::BuildRequest)?;
    let response = client.send(request.map(Body::from)).await?;
    let status = response.status();
    if status.is_success() {
        return Ok(response.into_body());
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
fn split_chunk<K: DeserializeOwned>(listing: &mut Listing<K>, chunk: &[u8]) -> kube::Result<()> {
    let mut decode_error = None;
    let Listing {
        splitter,
        decoded,
        items,
        ..
    } = listing;
    splitter
        .push(chunk, |item| {
            if decode_error.is_none() {
                match serde_json::from_slice::<K>(item) {
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
        })
        .map_err(|e| kube::Error::Service(Box::new(e)))?;
    match decode_error {
        Some(e) => Err(kube::Error::Service(Box::new(e))),
        None => Ok(()),
    }
}

/// The list's `metadata.resourceVersion`, where the watch starts.
fn list_version(splitter: ListSplitter) -> Result<String, Error> {
    let metadata = splitter
        .finish()
        .map_err(|e| Error::InitialListFailed(kube::Error::Service(Box::new(e))))?;
    let metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ListMeta = match metadata {
        Some(raw) => serde_json::from_slice(&raw)
            .map_err(|e| Error::InitialListFailed(kube::Error::SerdeError(e)))?,
        None => return Err(Error::NoResourceVersion),
    };
    metadata
        .resource_version
        .filter(|v| !v.is_empty())
        .ok_or(Error::NoResourceVersion)
}

/// Every object of `K`'s collection in one request, decoded as it streams in (the
/// execute-mode re-check's fresh read: [`ListFrom::Etcd`]).
pub async fn list_all<K>(client: &Client, list_from: ListFrom) -> kube::Result<Vec<K>>
where
    K: Resource<DynamicType = ()> + DeserializeOwned,
{
    let mut listing = Listing::new(start_list::<K>(client, list_from).await?);
    let mut out = Vec::new();
    while let Some(chunk) = next_chunk(&mut listing.body).await {
        split_chunk(&mut listing, &chunk?)?;
        out.extend(listing.decoded.drain(..));
    }
    listing
        .splitter
        .finish()
        .map_err(|e| kube::Error::Service(Box::new(e)))?;
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
    use crate::run::slim::SlimPod;

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

    /// A client whose server answers the scripted responses in order and records each
    /// request's path and query.
    fn scripted(responses: Vec<Response<Chunks>>) -> (Client, Arc<Mutex<Vec<String>>>) {
        let (service, mut handle) = tower_test::mock::pair::<Request<Body>, Response<Chunks>>();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        tokio::spawn(async move {
            let mut responses = responses.into_iter();
            while let Some((request, reply)) = handle.next_request().await {
                log.lock().unwrap().push(request.uri().to_string());
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
        assert_eq!(seen[0], "/api/v1/pods?&resourceVersion=0");
        assert!(seen[1].contains("watch=true"), "{}", seen[1]);
        assert!(seen[1].contains("resourceVersion=10"), "{}", seen[1]);
        assert!(seen[1].contains("allowWatchBookmarks=true"), "{}", seen[1]);
        assert!(seen[2].contains("resourceVersion=13"), "{}", seen[2]);
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
        assert_eq!(seen.lock().unwrap()[2], "/api/v1/pods?");
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
            seen.iter().all(|q| q == "/api/v1/pods?&resourceVersion=0"),
            "{seen:?}"
        );
    }

    #[tokio::test]
    async fn a_list_cut_short_or_an_undecodable_item_fails_the_list_without_init_done() {
        let body = list("10", &[pod("a", "8"), pod("b", "9")]);
        let cut = &body[..body.len() - 30];
        let bad = list(
            "10",
            &[pod("a", "8"), r#"{"metadata":{"name":5}}"#.to_string()],
        );
        let (client, _) = scripted(vec![chunked(200, cut, 10), chunked(200, &bad, 10)]);
        let mut events = Box::pin(watcher::<SlimPod>(client, ListFrom::WatchCache));
        let got = take(&mut events, 6).await;
        assert_eq!(got[..2], ["Init", "InitApply a"]);
        assert!(got[2].contains("list body ended at byte"), "{got:?}");
        assert_eq!(got[3..5], ["Init", "InitApply a"]);
        assert!(
            got[5].contains("list item 1: invalid type: integer `5`"),
            "{got:?}"
        );
    }

    #[tokio::test]
    async fn list_all_reads_everything_from_etcd_in_one_request() {
        let (client, seen) = scripted(vec![chunked(
            200,
            &list("10", &[pod("a", "8"), pod("b", "9")]),
            4,
        )]);
        let pods: Vec<SlimPod> = list_all(&client, ListFrom::Etcd).await.expect("listed");
        let names: Vec<_> = pods
            .iter()
            .filter_map(|p| p.metadata.name.clone())
            .collect();
        assert_eq!(names, ["a", "b"]);
        assert_eq!(seen.lock().unwrap()[0], "/api/v1/pods?");
    }
}
