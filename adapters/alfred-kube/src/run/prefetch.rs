//! Pipelined list pages: a transparent prefetch service under the watches' [`Client`].
//!
//! kube's watcher lists a kind page by page and decodes page *n* before it requests page
//! *n + 1*, so at 25,000 Pods in pages of 1,000 the decoding of every page adds to the
//! transfer (issue 7's cold start: the Pod list ended ~0.3–0.5 s after one plain list). This
//! service sits between that client and kube's own HTTP stack: when the response to a
//! paginated list (`limit=` present, no `watch=`) starts to arrive, it reads
//! `metadata.continue` from the head of the body (the API server writes `metadata` before
//! `items`) and at once sends the request for the next page, exactly as kube will build it;
//! that response is read whole into memory. When kube then asks for that exact URI it gets the
//! prefetched response (and the page after it is requested in turn), so the server reads page
//! *n + 1* while alfred decodes page *n*.
//!
//! Transparency: every other request, and a list request nothing was prefetched for, goes to
//! the inner service unchanged; a prefetched response is handed over as it came (status,
//! headers, body, and its error if sending or reading it failed: a 410 Gone for an expired
//! token reaches the watcher exactly as its own request's would). At most one prefetch per
//! collection path is kept (a new one replaces it), and one nobody claims within
//! [`UNCLAIMED_FOR`] is dropped, which aborts it: one extra page (~2.4 MB of Pods) is the bound.
//!
//! After starting a prefetch the service yields once: tokio puts a task spawned from a worker
//! in that worker's LIFO slot, which other workers do not steal, so without the yield the
//! prefetch's request left only after kube's synchronous decode of the page (no overlap).
//!
//! Measured (`BENCH-LIVE.md`, fifth measurement): every page after the first is served from
//! its prefetch, no page is requested twice, and the gap between the end of one page and the
//! request of the next went from ~12 ms (kube decoding) to ~0; the Pod list ended 0.25–0.45 s
//! sooner (medians), within the bench machine's run-to-run spread.

use std::fmt::Write as _;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, ready};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{Method, Request, Response};
use http_body::{Body as HttpBody, Frame, SizeHint};
use kube::Client;
use kube::client::Body;
use serde::de::{DeserializeSeed, Error as _, IgnoredAny, MapAccess, Visitor};
use tower::{BoxError, Service};

/// How long an unclaimed prefetched page is kept (the watcher asks within milliseconds; one
/// that restarted its list from the start never will).
const UNCLAIMED_FOR: Duration = Duration::from_secs(60);

/// How much of a body's head is searched for `metadata.continue` before giving up (the API
/// server's list metadata is a few hundred bytes at the start).
const HEAD_LIMIT: usize = 64 * 1024;

/// `client` with list pages pipelined: a new [`Client`] (same default namespace) whose
/// requests go through [`Prefetch`] to `client`.
pub fn client(client: Client) -> Client {
    let ns = client.default_namespace().to_owned();
    Client::new(Prefetch::new(Sender(client)), ns)
}

/// [`Client::send`] as a [`Service`]: its errors are boxed `kube::Error`s, which the outer
/// client unboxes again, so a caller sees the same error as without the layer.
#[derive(Clone)]
struct Sender(Client);

impl Service<Request<Body>> for Sender {
    type Response = Response<Body>;
    type Error = BoxError;
    type Future =
        Pin<Box<dyn Future<Output = Result<Response<Body>, BoxError>> + std::marker::Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: Request<Body>) -> Self::Future {
        let client = self.0.clone();
        Box::pin(async move { client.send(req).await.map_err(BoxError::from) })
    }
}

/// The prefetching service around `S` (see the module documentation).
#[derive(Clone)]
pub struct Prefetch<S> {
    inner: S,
    slots: Arc<Mutex<Vec<Slot>>>,
}

/// A prefetched response: its head, its body as read, and the error that ended the body early;
/// or the error of sending the request.
type Fetched = Result<(http::response::Parts, Bytes, Option<BoxError>), BoxError>;

/// One prefetch in flight or done, waiting for its request.
struct Slot {
    /// The collection path (`/api/v1/pods`): one slot per path.
    path: String,
    /// The path and query kube will ask for.
    uri: String,
    born: Instant,
    task: Task,
}

/// A spawned prefetch, aborted when dropped (evicted, expired, or its claimant cancelled).
struct Task(tokio::task::JoinHandle<Fetched>);

impl Drop for Task {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl Future for Task {
    type Output = Result<Fetched, tokio::task::JoinError>;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        Pin::new(&mut self.0).poll(cx)
    }
}

impl<S> Prefetch<S> {
    /// Wraps `inner`.
    pub fn new(inner: S) -> Prefetch<S> {
        Prefetch {
            inner,
            slots: Arc::new(Mutex::new(Vec::new())),
        }
    }

    /// The slot waiting for `uri`, taken out; drops expired slots on the way.
    fn claim(&self, uri: &str) -> Option<Task> {
        let mut slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
        slots.retain(|s| s.born.elapsed() < UNCLAIMED_FOR);
        let i = slots.iter().position(|s| s.uri == uri)?;
        Some(slots.swap_remove(i).task)
    }

    /// Number of prefetches held (tests).
    #[cfg(test)]
    fn held(&self) -> usize {
        self.slots.lock().map(|s| s.len()).unwrap_or(0)
    }
}

/// Whether `req` asks for one page of a list: a GET with `limit=` and without `watch=`.
fn is_paged_list<B>(req: &Request<B>) -> bool {
    if req.method() != Method::GET {
        return false;
    }
    let Some(query) = req.uri().query() else {
        return false;
    };
    let keys = || {
        query
            .split('&')
            .map(|p| p.split_once('=').map_or(p, |(k, _)| k))
    };
    keys().any(|k| k == "limit") && !keys().any(|k| k == "watch" || k == "sendInitialEvents")
}

/// The path and query kube's `ListParams` produce for the page after `uri` (same selectors and
/// limit; `continue` replaces `resourceVersion`/`resourceVersionMatch`, which kube omits
/// when continuing), or `None` without a query.
fn next_uri(uri: &str, token: &str) -> Option<String> {
    let (path, query) = uri.split_once('?')?;
    // The pairs kept as they are, empty ones included: kube's query starts with `&`.
    let kept: Vec<&str> = query
        .split('&')
        .filter(|pair| {
            let key = pair.split_once('=').map_or(*pair, |(k, _)| k);
            !matches!(key, "continue" | "resourceVersion" | "resourceVersionMatch")
        })
        .collect();
    let mut out = format!("{path}?{}&continue=", kept.join("&"));
    // `application/x-www-form-urlencoded`, as `form_urlencoded::byte_serialize` (kube's).
    for &b in token.as_bytes() {
        match b {
            b'*' | b'-' | b'.' | b'_' | b'0'..=b'9' | b'A'..=b'Z' | b'a'..=b'z' => {
                out.push(char::from(b));
            }
            b' ' => out.push('+'),
            _ => {
                let _ = write!(out, "%{b:02X}");
            }
        }
    }
    Some(out)
}

/// What the head of a list body says about `metadata.continue`.
#[derive(Debug, PartialEq)]
enum Head {
    /// The token (`None`: last page).
    Found(Option<String>),
    /// The head ends before `metadata` does.
    NeedMore,
    /// Not a list body as the API server writes it (no prefetch).
    Unknown,
}

/// Parses only the top-level keys up to and including `metadata` of a JSON list body's head
/// (serde, so escapes and key order within `metadata` do not matter); stops there.
fn scan_head(head: &[u8]) -> Head {
    #[derive(serde::Deserialize)]
    struct ListMeta {
        #[serde(rename = "continue")]
        continue_: Option<String>,
    }
    struct Top<'a>(&'a mut Option<Option<String>>);
    impl<'de> DeserializeSeed<'de> for Top<'_> {
        type Value = ();
        fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
            d.deserialize_map(self)
        }
    }
    impl<'de> Visitor<'de> for Top<'_> {
        type Value = ();
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a list object")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
            while let Some(key) = map.next_key::<String>()? {
                match key.as_str() {
                    "metadata" => {
                        let meta: ListMeta = map.next_value()?;
                        *self.0 = Some(meta.continue_.filter(|c| !c.is_empty()));
                        // Found: stop reading (the error is discarded).
                        return Err(A::Error::custom("stop"));
                    }
                    "items" => return Err(A::Error::custom("items before metadata")),
                    _ => {
                        map.next_value::<IgnoredAny>()?;
                    }
                }
            }
            Ok(())
        }
    }
    let mut found = None;
    let mut de = serde_json::Deserializer::from_slice(head);
    let result = Top(&mut found).deserialize(&mut de);
    match (found, result) {
        (Some(token), _) => Head::Found(token),
        (None, Err(e)) if e.is_eof() => Head::NeedMore,
        _ => Head::Unknown,
    }
}

/// `e` as the outer client would have wrapped it without the layer: kube wraps a body error
/// in `kube::Error::Service`, so one already wrapped by the inner client is unwrapped once.
fn unwrap_service(e: BoxError) -> BoxError {
    match e.downcast::<kube::Error>() {
        Ok(k) => match *k {
            kube::Error::Service(inner) => inner,
            other => Box::new(other),
        },
        Err(e) => e,
    }
}

/// What starts the prefetch of the page after one response.
struct Next<S> {
    inner: S,
    slots: Arc<Mutex<Vec<Slot>>>,
    /// The request the response answers (its body left out).
    request: http::request::Parts,
}

impl<S, B> Next<S>
where
    S: Service<Request<Body>, Response = Response<B>> + std::marker::Send + 'static,
    S::Future: std::marker::Send,
    S::Error: Into<BoxError>,
    B: HttpBody<Data = Bytes> + Unpin + std::marker::Send + 'static,
    B::Error: Into<BoxError>,
{
    /// Spawns the request for the page `token` continues and keeps it in its path's slot.
    fn start(self, token: &str) {
        let current = self
            .request
            .uri
            .path_and_query()
            .map_or("", http::uri::PathAndQuery::as_str);
        let Some(uri) = next_uri(current, token) else {
            return;
        };
        let Ok(parsed) = uri.parse::<http::Uri>() else {
            return;
        };
        let path = self.request.uri.path().to_owned();
        let mut parts = self.request;
        parts.uri = parsed;
        let request = Request::from_parts(parts, Body::empty());
        let mut inner = self.inner;
        let task = Task(tokio::spawn(async move {
            std::future::poll_fn(|cx| inner.poll_ready(cx))
                .await
                .map_err(Into::into)?;
            let response = inner.call(request).await.map_err(Into::into)?;
            let (head, mut body) = response.into_parts();
            let mut data = Vec::new();
            let mut error = None;
            while let Some(frame) =
                std::future::poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await
            {
                match frame {
                    Ok(frame) => {
                        if let Some(d) = frame.data_ref() {
                            data.extend_from_slice(d);
                        }
                    }
                    Err(e) => {
                        error = Some(unwrap_service(e.into()));
                        break;
                    }
                }
            }
            Ok((head, Bytes::from(data), error))
        }));
        tracing::trace!(uri = %uri, "list page prefetch");
        let mut slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
        slots.retain(|s| s.path != path && s.born.elapsed() < UNCLAIMED_FOR);
        slots.push(Slot {
            path,
            uri,
            born: Instant::now(),
            task,
        });
    }
}

/// The response body handed to kube: the inner body passed through (its head searched for
/// the continue token, which starts the next page's prefetch), or a prefetched body.
pub struct PageBody<B> {
    kind: Kind<B>,
}

enum Kind<B> {
    Live {
        inner: B,
        scan: Option<Scan>,
        /// A frame held back for one poll after it started a prefetch (see `poll_frame`).
        held: Option<Frame<Bytes>>,
    },
    Buffered {
        data: Option<Bytes>,
        error: Option<BoxError>,
    },
}

/// The search of a live body's head.
struct Scan {
    head: Vec<u8>,
    /// Whether the search found a token and started the prefetch.
    started: bool,
    start: Box<dyn FnOnce(&str) + std::marker::Send>,
}

impl Scan {
    /// Adds `data` to the head; `true` when the search is over.
    fn feed(&mut self, data: &[u8]) -> bool {
        self.head.extend_from_slice(data);
        match scan_head(&self.head) {
            Head::NeedMore => self.head.len() >= HEAD_LIMIT,
            Head::Found(token) => {
                if let Some(token) = token {
                    let start = std::mem::replace(&mut self.start, Box::new(|_| {}));
                    start(&token);
                    self.started = true;
                }
                true
            }
            Head::Unknown => true,
        }
    }
}

impl<B> HttpBody for PageBody<B>
where
    B: HttpBody<Data = Bytes> + Unpin,
    B::Error: Into<BoxError>,
{
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        match &mut self.kind {
            Kind::Live { inner, scan, held } => {
                if let Some(frame) = held.take() {
                    return Poll::Ready(Some(Ok(frame)));
                }
                match ready!(Pin::new(inner).poll_frame(cx)) {
                    Some(Ok(frame)) => {
                        if let (Some(s), Some(data)) = (scan.as_mut(), frame.data_ref())
                            && s.feed(data)
                        {
                            let started = scan.take().is_some_and(|s| s.started);
                            if started {
                                // Yield once, so that the prefetch just spawned on this worker
                                // sends its request before kube reads on and decodes the page.
                                *held = Some(frame);
                                cx.waker().wake_by_ref();
                                return Poll::Pending;
                            }
                        }
                        Poll::Ready(Some(Ok(frame)))
                    }
                    Some(Err(e)) => {
                        *scan = None;
                        Poll::Ready(Some(Err(unwrap_service(e.into()))))
                    }
                    None => {
                        *scan = None;
                        Poll::Ready(None)
                    }
                }
            }
            Kind::Buffered { data, error } => Poll::Ready(match data.take() {
                Some(d) if !d.is_empty() => Some(Ok(Frame::data(d))),
                _ => error.take().map(Err),
            }),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match &self.kind {
            Kind::Live { inner, held, .. } => {
                let mut hint = inner.size_hint();
                let extra = held
                    .as_ref()
                    .and_then(Frame::data_ref)
                    .map_or(0, |d| d.len() as u64);
                // Upper first: `set_lower` asserts lower <= upper.
                if let Some(upper) = hint.upper() {
                    hint.set_upper(upper + extra);
                }
                hint.set_lower(hint.lower() + extra);
                hint
            }
            Kind::Buffered { data, error: None } => {
                SizeHint::with_exact(data.as_ref().map_or(0, |d| d.len() as u64))
            }
            Kind::Buffered { .. } => SizeHint::default(),
        }
    }

    fn is_end_stream(&self) -> bool {
        match &self.kind {
            Kind::Live { inner, held, .. } => held.is_none() && inner.is_end_stream(),
            Kind::Buffered { data, error } => {
                data.as_ref().is_none_or(Bytes::is_empty) && error.is_none()
            }
        }
    }
}

impl<S, B> Service<Request<Body>> for Prefetch<S>
where
    S: Service<Request<Body>, Response = Response<B>> + Clone + std::marker::Send + 'static,
    S::Future: std::marker::Send,
    S::Error: Into<BoxError>,
    B: HttpBody<Data = Bytes> + Unpin + std::marker::Send + 'static,
    B::Error: Into<BoxError>,
{
    type Response = Response<PageBody<B>>;
    type Error = BoxError;
    type Future =
        Pin<Box<dyn Future<Output = Result<Self::Response, BoxError>> + std::marker::Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, req: Request<Body>) -> Self::Future {
        // The instance `poll_ready` readied serves this call; a clone stays for the next.
        let clone = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, clone);
        if !is_paged_list(&req) {
            let fut = inner.call(req);
            return Box::pin(async move {
                let response = fut.await.map_err(Into::into)?;
                Ok(response.map(|inner| PageBody {
                    kind: Kind::Live {
                        inner,
                        scan: None,
                        held: None,
                    },
                }))
            });
        }
        let uri = req
            .uri()
            .path_and_query()
            .map_or_else(String::new, |p| p.as_str().to_owned());
        let claimed = self.claim(&uri);
        tracing::trace!(uri = %uri, claimed = claimed.is_some(), "list page requested");
        let (parts, body) = req.into_parts();
        let next = Next {
            inner: self.inner.clone(),
            slots: self.slots.clone(),
            request: parts.clone(),
        };
        let req = Request::from_parts(parts, body);
        Box::pin(async move {
            if let Some(task) = claimed {
                match task.await {
                    Ok(Ok((head, data, error))) => {
                        if head.status.is_success()
                            && let Head::Found(Some(token)) =
                                scan_head(&data[..data.len().min(HEAD_LIMIT)])
                        {
                            next.start(&token);
                            // Let the prefetch go out before kube decodes this page: tokio
                            // runs the spawned task on this worker (its LIFO slot, which
                            // other workers do not steal), which kube's synchronous decode
                            // would otherwise hold up until the decode is over.
                            tokio::task::yield_now().await;
                        }
                        tracing::trace!(uri = %uri, "list page served from its prefetch");
                        return Ok(Response::from_parts(
                            head,
                            PageBody {
                                kind: Kind::Buffered {
                                    data: Some(data),
                                    error,
                                },
                            },
                        ));
                    }
                    Ok(Err(e)) => return Err(e),
                    // Never expected (the task neither panics nor is aborted while claimed):
                    // send the request itself.
                    Err(e) => tracing::debug!(uri = %uri, error = %e, "list page prefetch lost"),
                }
            }
            let response = inner.call(req).await.map_err(Into::into)?;
            let scan = response.status().is_success().then(|| Scan {
                head: Vec::new(),
                started: false,
                start: Box::new(move |token: &str| next.start(token)),
            });
            Ok(response.map(|inner| PageBody {
                kind: Kind::Live {
                    inner,
                    scan,
                    held: None,
                },
            }))
        })
    }
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;

    use super::*;
    use kube::api::ListParams;

    /// A body of several frames, optionally ending with an error.
    struct Frames(VecDeque<Result<Bytes, String>>);

    impl HttpBody for Frames {
        type Data = Bytes;
        type Error = BoxError;
        fn poll_frame(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
        ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
            Poll::Ready(
                self.0
                    .pop_front()
                    .map(|r| r.map(Frame::data).map_err(BoxError::from)),
            )
        }
    }

    fn frames(parts: &[&str]) -> Frames {
        Frames(
            parts
                .iter()
                .map(|p| Ok(Bytes::from(p.to_string())))
                .collect(),
        )
    }

    fn page(token: &str, item: &str) -> Vec<String> {
        vec![
            format!(
                r#"{{"kind":"PodList","apiVersion":"v1","metadata":{{"resourceVersion":"7","continue":"{token}"}},"#
            ),
            format!(r#""items":[{{"metadata":{{"name":"{item}"}}}}]}}"#),
        ]
    }

    fn response(status: u16, parts: &[String]) -> Response<Frames> {
        let refs: Vec<&str> = parts.iter().map(String::as_str).collect();
        Response::builder()
            .status(status)
            .body(frames(&refs))
            .expect("response")
    }

    fn get(uri: &str) -> Request<Body> {
        Request::get(uri).body(Body::empty()).expect("request")
    }

    async fn read(body: PageBody<Frames>) -> Result<String, BoxError> {
        let mut body = body;
        let mut out = Vec::new();
        while let Some(f) = std::future::poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await {
            if let Some(d) = f?.data_ref() {
                out.extend_from_slice(d);
            }
        }
        Ok(String::from_utf8(out).expect("utf-8"))
    }

    type Mock = tower_test::mock::Mock<Request<Body>, Response<Frames>>;
    type Handle = tower_test::mock::Handle<Request<Body>, Response<Frames>>;

    fn service() -> (Prefetch<Mock>, Handle) {
        let (mock, handle) = tower_test::mock::pair();
        (Prefetch::new(mock), handle)
    }

    async fn call(
        svc: &mut Prefetch<Mock>,
        uri: &str,
    ) -> Result<Response<PageBody<Frames>>, BoxError> {
        std::future::poll_fn(|cx| svc.poll_ready(cx)).await?;
        svc.call(get(uri)).await
    }

    /// kube's own URI for these list parameters.
    fn kube_uri(lp: &ListParams) -> String {
        kube::core::Request::new("/api/v1/pods")
            .list(lp)
            .expect("list request")
            .uri()
            .to_string()
    }

    #[test]
    fn next_uri_is_the_one_kube_builds() {
        let first = ListParams::default()
            .labels("app=x,tier in (a b)")
            .fields("spec.nodeName!=")
            .limit(1000)
            .match_any();
        for token in ["eyJ2IjoibWV0YS5rOHMuaW8vdjEifQ", "a+b/c= d~é"] {
            let next = first.clone().continue_token(token);
            assert_eq!(
                next_uri(&kube_uri(&first), token).as_deref(),
                Some(kube_uri(&next).as_str())
            );
            // From a continued page too.
            assert_eq!(
                next_uri(&kube_uri(&first.clone().continue_token("old")), token).as_deref(),
                Some(kube_uri(&next).as_str())
            );
        }
        let exact = ListParams::default()
            .limit(10)
            .at("123")
            .matching(kube::api::VersionMatch::NotOlderThan);
        assert_eq!(
            next_uri(&kube_uri(&exact), "t").as_deref(),
            Some(kube_uri(&exact.clone().continue_token("t")).as_str())
        );
    }

    #[test]
    fn head_scan() {
        let body = page("tok", "a").concat();
        assert_eq!(scan_head(body.as_bytes()), Head::Found(Some("tok".into())));
        assert_eq!(scan_head(&body.as_bytes()[..40]), Head::NeedMore);
        assert_eq!(
            scan_head(br#"{"kind":"PodList","metadata":{"continue":""},"items":[]}"#),
            Head::Found(None)
        );
        assert_eq!(
            scan_head(br#"{"metadata":{"resourceVersion":"1"},"items":[]}"#),
            Head::Found(None)
        );
        assert_eq!(
            scan_head(br#"{"metadata":{"continue":"a\"b\u0041"}}"#),
            Head::Found(Some("a\"bA".into()))
        );
        assert_eq!(scan_head(br#"{"items":[],"metadata":{}}"#), Head::Unknown);
        assert_eq!(scan_head(b"[1,2]"), Head::Unknown);
        assert_eq!(scan_head(b"404 page not found"), Head::Unknown);
    }

    #[tokio::test]
    async fn next_page_is_requested_on_the_head_and_served_from_the_prefetch() {
        let (mut svc, mut handle) = service();
        let first = tokio::spawn({
            let mut svc = svc.clone();
            async move { call(&mut svc, "/api/v1/pods?limit=1").await }
        });
        let (req, send) = handle.next_request().await.expect("first request");
        assert_eq!(req.uri(), "/api/v1/pods?limit=1");
        send.send_response(response(200, &page("t1", "a")));
        let mut body = first
            .await
            .expect("join")
            .expect("first response")
            .into_body();
        // The first frame (the head) starts the prefetch; the rest of the body is not read.
        let head = std::future::poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await;
        assert!(head.is_some());
        let (req, send) = handle.next_request().await.expect("prefetch");
        assert_eq!(req.uri(), "/api/v1/pods?limit=1&continue=t1");
        send.send_response(response(200, &page("", "b")));
        assert!(read(body).await.expect("rest").ends_with(r#""a"}}]}"#));

        // kube asks for page 2: served without a request of its own.
        let second = call(&mut svc, "/api/v1/pods?limit=1&continue=t1")
            .await
            .expect("second");
        assert_eq!(second.status(), 200);
        assert_eq!(
            read(second.into_body()).await.expect("body"),
            page("", "b").concat()
        );
        assert_eq!(svc.held(), 0);
        // Last page: nothing more was requested.
        tokio::task::yield_now().await;
        assert!(futures::poll!(Box::pin(handle.next_request())).is_pending());
    }

    #[tokio::test]
    async fn a_served_prefetch_starts_the_next_one() {
        let (mut svc, mut handle) = service();
        let server = tokio::spawn(async move {
            let mut seen = Vec::new();
            for (token, next) in [("", "t1"), ("t1", "t2"), ("t2", "")] {
                let (req, send) = handle.next_request().await.expect("request");
                seen.push((token, req.uri().to_string()));
                send.send_response(response(200, &page(next, token)));
            }
            // Kept: the mock's `poll_ready` fails once its handle is gone.
            (seen, handle)
        });
        for uri in [
            "/api/v1/pods?limit=1",
            "/api/v1/pods?limit=1&continue=t1",
            "/api/v1/pods?limit=1&continue=t2",
        ] {
            let r = call(&mut svc, uri).await.expect("page");
            read(r.into_body()).await.expect("body");
        }
        let (seen, _handle) = server.await.expect("server");
        assert_eq!(
            seen.iter().map(|(_, u)| u.as_str()).collect::<Vec<_>>(),
            [
                "/api/v1/pods?limit=1",
                "/api/v1/pods?limit=1&continue=t1",
                "/api/v1/pods?limit=1&continue=t2"
            ]
        );
    }

    #[tokio::test]
    async fn a_non_matching_request_passes_through_and_keeps_the_prefetch() {
        let (svc, mut handle) = service();
        let first = tokio::spawn({
            let mut svc = svc.clone();
            async move { read(call(&mut svc, "/api/v1/pods?limit=1").await?.into_body()).await }
        });
        let (_, send) = handle.next_request().await.expect("first");
        send.send_response(response(200, &page("t1", "a")));
        first.await.expect("join").expect("first body");
        let (req, _prefetch) = handle.next_request().await.expect("prefetch");
        assert_eq!(req.uri(), "/api/v1/pods?limit=1&continue=t1");

        let other = tokio::spawn({
            let mut svc = svc.clone();
            async move {
                read(
                    call(&mut svc, "/api/v1/pods?limit=1&continue=zz")
                        .await?
                        .into_body(),
                )
                .await
            }
        });
        let (req, send) = handle.next_request().await.expect("passed through");
        assert_eq!(req.uri(), "/api/v1/pods?limit=1&continue=zz");
        send.send_response(response(200, &page("", "z")));
        assert_eq!(
            other.await.expect("join").expect("body"),
            page("", "z").concat()
        );
        assert_eq!(svc.held(), 1);
        // A new list of the same path replaces the held prefetch.
        let again = tokio::spawn({
            let mut svc = svc.clone();
            async move { read(call(&mut svc, "/api/v1/pods?limit=1").await?.into_body()).await }
        });
        let (_, send) = handle.next_request().await.expect("relist");
        send.send_response(response(200, &page("t9", "a")));
        again.await.expect("join").expect("relist body");
        let (req, _) = handle.next_request().await.expect("new prefetch");
        assert_eq!(req.uri(), "/api/v1/pods?limit=1&continue=t9");
        assert_eq!(svc.held(), 1);
    }

    #[tokio::test]
    async fn errors_of_the_prefetch_reach_the_caller_unchanged() {
        let (mut svc, mut handle) = service();
        let gone = r#"{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Expired","code":410}"#;
        for case in ["410", "send", "body"] {
            let first = tokio::spawn({
                let mut svc = svc.clone();
                async move { read(call(&mut svc, "/api/v1/pods?limit=1").await?.into_body()).await }
            });
            let (_, send) = handle.next_request().await.expect("first");
            send.send_response(response(200, &page("t1", "a")));
            first.await.expect("join").expect("first body");
            let (_, send) = handle.next_request().await.expect("prefetch");
            match case {
                "410" => send.send_response(response(410, &[gone.to_owned()])),
                "send" => send.send_error("connection reset"),
                _ => send.send_response(
                    Response::builder()
                        .status(200)
                        .body(Frames(
                            [
                                Ok(Bytes::from_static(b"{\"metadata\"")),
                                Err("eof".to_owned()),
                            ]
                            .into(),
                        ))
                        .expect("response"),
                ),
            }
            let second = call(&mut svc, "/api/v1/pods?limit=1&continue=t1").await;
            match case {
                "410" => {
                    let r = second.expect("410 response");
                    assert_eq!(r.status(), 410);
                    assert_eq!(read(r.into_body()).await.expect("status body"), gone);
                }
                "send" => {
                    assert_eq!(
                        second.err().map(|e| e.to_string()).as_deref(),
                        Some("connection reset")
                    );
                }
                _ => {
                    let body = second.expect("response").into_body();
                    assert_eq!(
                        read(body).await.err().map(|e| e.to_string()).as_deref(),
                        Some("eof")
                    );
                }
            }
            assert_eq!(svc.held(), 0);
        }
        // A 410 on kube's own request is not scanned.
        let first = tokio::spawn({
            let mut svc = svc.clone();
            async move { call(&mut svc, "/api/v1/pods?limit=1&continue=old").await }
        });
        let (_, send) = handle.next_request().await.expect("own");
        send.send_response(response(410, &[gone.to_owned()]));
        let r = first.await.expect("join").expect("410");
        assert_eq!(r.status(), 410);
        read(r.into_body()).await.expect("body");
        assert_eq!(svc.held(), 0);
    }

    #[tokio::test]
    async fn watches_and_other_requests_are_untouched() {
        let (svc, mut handle) = service();
        for (method, uri) in [
            (
                Method::GET,
                "/api/v1/pods?watch=true&timeoutSeconds=290&limit=1",
            ),
            (Method::GET, "/api/v1/pods?&watch=true&resourceVersion=5"),
            (Method::GET, "/api/v1/namespaces/a/pods/p"),
            (Method::GET, "/api/v1/pods"),
            (Method::POST, "/api/v1/namespaces/a/pods?limit=1"),
        ] {
            let mut s = svc.clone();
            let m = method.clone();
            let task = tokio::spawn(async move {
                std::future::poll_fn(|cx| s.poll_ready(cx)).await?;
                let r = s
                    .call(
                        Request::builder()
                            .method(m)
                            .uri(uri)
                            .body(Body::empty())
                            .expect("request"),
                    )
                    .await?;
                read(r.into_body()).await
            });
            let (req, send) = handle.next_request().await.expect("request");
            assert_eq!(
                (req.method(), req.uri().to_string().as_str()),
                (&method, uri)
            );
            send.send_response(response(200, &page("t1", "a")));
            assert_eq!(
                task.await.expect("join").expect("body"),
                page("t1", "a").concat()
            );
            tokio::task::yield_now().await;
            assert!(
                futures::poll!(Box::pin(handle.next_request())).is_pending(),
                "{uri}"
            );
            assert_eq!(svc.held(), 0);
        }
    }
}
