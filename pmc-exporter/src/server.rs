//! The HTTP server (feature `server`): hyper 1's HTTP/1.1 server on a current-thread tokio
//! runtime, made to stay up beside clients nobody controls.
//!
//! - Connections are bounded ([`Limits::max_connections`]). A connection past the bound
//!   evicts the one that has waited longest without a request in progress (idle before its
//!   first request, between keep-alive requests, slow with its headers, or stuck writing to a
//!   client that does not read); when every one has a request in progress the newcomer is
//!   closed. Either way it is counted.
//! - A request head must arrive whole within [`Limits::header_timeout`] of the connection or
//!   of the previous response (hyper's `header_read_timeout`): slowloris headers and idle
//!   keep-alive connections end there. No request body is read: a request with one is answered
//!   413 and the connection closed.
//! - A write or a read that makes no progress for [`Limits::io_timeout`] ends its connection,
//!   so a client that never reads holds its connection (evictable) at most that long. Writes
//!   never wait on each other: one stalled client cannot delay another's scrape.
//! - Responses go out with `TCP_NODELAY`; only `GET` and `HEAD` are served (405 with `Allow`).
//! - The listener never stops on an accept error (EMFILE, ENFILE, ECONNABORTED): it is
//!   counted, an idle connection is closed to free a descriptor, and accepting goes on.
//! - Scrapes are encoded one at a time on the runtime's own thread, between its turns (a
//!   hand-off to a thread of their own and back cost more than the encoding: 2 context
//!   switches and 2 wake-ups per scrape), gzip-compressed when the client accepts it; the
//!   scrapes waiting together share one encoding, so a flood of scrapes costs one read of
//!   the counters per round; at most [`Limits::max_pending`] wait, further ones are
//!   answered 503.
//!
//! One thread in all, the caller's (the runtime), and the blocking thread bcrypt uses.

use std::collections::HashMap;
use std::convert::Infallible;
use std::future::Future;
use std::io::Write as _;
use std::net::{SocketAddr, ToSocketAddrs};
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::header::{self, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use pmc::{Error, ErrorKind, Op};
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, NoLabelSet};
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::{mpsc, oneshot, Notify};

use crate::http::{render_all, Format};

/// The server's bounds ([`Listener::limits`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Connections open at once (default 256); past it the longest-idle one is closed.
    pub max_connections: usize,
    /// Time for a whole request head, from the connection or the previous response (default
    /// 10 s): also the idle keep-alive timeout.
    pub header_timeout: Duration,
    /// Time a read or write may wait without progress (default 10 s).
    pub io_timeout: Duration,
    /// Scrapes waiting for the encoder (default 256, one per connection: a connection has one
    /// request in progress at a time); more are answered 503. The scrapes waiting together
    /// share one encoding.
    pub max_pending: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_connections: 256,
            header_timeout: Duration::from_secs(10),
            io_timeout: Duration::from_secs(10),
            max_pending: 256,
        }
    }
}

/// Serves `registry` on `addr` (`HOST:PORT`) until `stop()` is true: [`bind`]
/// then [`Listener::serve`].
///
/// # Errors
///
/// As [`bind`].
///
/// ```no_run
/// use std::sync::atomic::{AtomicBool, Ordering};
/// let mut registry = prometheus_client::registry::Registry::default();
/// registry.register_collector(Box::new(pmc_exporter::PmcCollector::this_process(&["task-clock"])?));
/// let stop = AtomicBool::new(false);
/// pmc_exporter::serve(&registry, "127.0.0.1:9464", &|| stop.load(Ordering::Relaxed))?;
/// # Ok::<(), pmc::Error>(())
/// ```
pub fn serve(registry: &Registry, addr: &str, stop: &dyn Fn() -> bool) -> pmc::Result<()> {
    bind(addr)?.serve(registry, stop);
    Ok(())
}

fn os_error(what: String, e: std::io::Error) -> Error {
    Error::new(ErrorKind::Os, Op::Open, format!("{what}: {e}"))
        .with_help("choose another port, or an address of this machine")
}

/// Listens on `addr` (`HOST:PORT`; port 0 picks a free one, see
/// [`Listener::address`]), with a backlog of 1024.
///
/// # Errors
///
/// [`ErrorKind::Os`] when the address cannot be bound (in use, not local) or the runtime
/// cannot be made.
///
/// ```
/// let l = pmc_exporter::bind("127.0.0.1:0")?;
/// assert!(l.address().starts_with("127.0.0.1:"));
/// assert!(pmc_exporter::bind(&l.address()).is_err(), "in use");
/// # Ok::<(), pmc::Error>(())
/// ```
pub fn bind(addr: &str) -> pmc::Result<Listener> {
    let cannot = |e| os_error(format!("cannot listen on {addr}"), e);
    let sock: SocketAddr = addr
        .to_socket_addrs()
        .map_err(cannot)?
        .next()
        .ok_or_else(|| cannot(std::io::ErrorKind::NotFound.into()))?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .max_blocking_threads(1)
        .build()
        .map_err(|e| os_error("cannot start the HTTP runtime".into(), e))?;
    let listener = rt
        .block_on(async {
            let s = if sock.is_ipv4() {
                tokio::net::TcpSocket::new_v4()?
            } else {
                tokio::net::TcpSocket::new_v6()?
            };
            s.set_reuseaddr(true)?;
            s.bind(sock)?;
            s.listen(1024)
        })
        .map_err(cannot)?;
    let local = listener.local_addr().map_err(cannot)?;
    Ok(Listener {
        rt,
        listener,
        local,
        limits: Limits::default(),
        #[cfg(feature = "tls")]
        web: None,
    })
}

/// A bound HTTP listener ([`bind`]).
pub struct Listener {
    rt: tokio::runtime::Runtime,
    listener: tokio::net::TcpListener,
    local: SocketAddr,
    limits: Limits,
    #[cfg(feature = "tls")]
    web: Option<Arc<crate::WebConfig>>,
}

impl std::fmt::Debug for Listener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Listener")
            .field("address", &self.address())
            .field("limits", &self.limits)
            .finish()
    }
}

/// The server's own counts, exported as `pmc_exporter_http_*` beside the registry's.
#[derive(Debug, Default)]
struct Stats {
    accepted: AtomicU64,
    accept_errors: AtomicU64,
    evicted: AtomicU64,
    refused: AtomicU64,
    busy: AtomicU64,
    requests: AtomicU64,
    open: AtomicU64,
}

#[derive(Debug)]
struct StatsCollector(Arc<Stats>);

impl Collector for StatsCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let s = &self.0;
        for (name, help, v) in [
            ("pmc_exporter_http_connections_accepted", "Connections accepted", &s.accepted),
            (
                "pmc_exporter_http_accept_errors",
                "Accept errors survived (EMFILE, ENFILE, ECONNABORTED, ...)",
                &s.accept_errors,
            ),
            (
                "pmc_exporter_http_connections_evicted",
                "Connections closed to make room (at the connection cap or out of descriptors): the longest idle",
                &s.evicted,
            ),
            (
                "pmc_exporter_http_connections_refused",
                "Connections closed at once: the cap reached with a request in progress on each",
                &s.refused,
            ),
            (
                "pmc_exporter_http_scrapes_refused",
                "Scrapes answered 503: too many waiting for the encoder",
                &s.busy,
            ),
            ("pmc_exporter_http_requests", "HTTP requests answered", &s.requests),
        ] {
            let mut m = encoder.encode_descriptor(name, help, None, MetricType::Counter)?;
            m.encode_counter::<NoLabelSet, u64, f64>(&v.load(Ordering::Relaxed), None)?;
        }
        let mut m = encoder.encode_descriptor(
            "pmc_exporter_http_connections_open",
            "Connections open",
            None,
            MetricType::Gauge,
        )?;
        m.encode_gauge(&(s.open.load(Ordering::Relaxed) as i64))?;
        Ok(())
    }
}

/// One connection's entry in the table the cap is kept with.
struct Conn {
    /// A request is being answered.
    busy: bool,
    /// Since when it has been idle (accepted, or its last request answered).
    since: Instant,
    kill: Arc<Notify>,
}

#[derive(Default)]
struct Table {
    next: u64,
    conns: HashMap<u64, Conn>,
}

struct Shared {
    table: Mutex<Table>,
    stats: Arc<Stats>,
    jobs: mpsc::Sender<Job>,
    limits: Limits,
    #[cfg(feature = "tls")]
    web: Option<Arc<crate::WebConfig>>,
}

impl Shared {
    fn table(&self) -> MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn set_busy(&self, id: u64, busy: bool) {
        if let Some(c) = self.table().conns.get_mut(&id) {
            c.busy = busy;
            c.since = Instant::now();
        }
    }

    /// Closes the connection idle the longest; false when every one is busy.
    fn evict_one(&self) -> bool {
        let mut t = self.table();
        let oldest = t
            .conns
            .iter()
            .filter(|(_, c)| !c.busy)
            .min_by_key(|(_, c)| c.since)
            .map(|(id, _)| *id);
        match oldest.and_then(|id| t.conns.remove(&id)) {
            Some(c) => {
                c.kill.notify_one();
                self.stats.evicted.fetch_add(1, Ordering::Relaxed);
                self.stats.open.fetch_sub(1, Ordering::Relaxed);
                true
            }
            None => false,
        }
    }
}

/// A scrape for the encoder (on the runtime's thread).
struct Job {
    format: Format,
    gzip: bool,
    reply: oneshot::Sender<Option<Bytes>>,
}

impl Listener {
    /// The address listened on, `HOST:PORT`.
    pub fn address(&self) -> String {
        self.local.to_string()
    }

    /// Sets the server's bounds (default [`Limits::default`]).
    pub fn limits(mut self, limits: Limits) -> Listener {
        self.limits = limits;
        self
    }

    /// Serves with TLS and/or basic auth as a web config file says ([`WebConfig`](crate::WebConfig),
    /// feature `tls`). A TLS handshake must end within [`Limits::header_timeout`]; a request
    /// without valid credentials is answered 401 (`WWW-Authenticate: Basic`). bcrypt runs on
    /// one blocking thread of its own, never on the connections' thread; credentials
    /// verified once are remembered (a SHA-256 of them), so a scraper costs one bcrypt.
    #[cfg(feature = "tls")]
    pub fn web_config(mut self, web: crate::WebConfig) -> Listener {
        self.web = Some(Arc::new(web));
        self
    }

    /// Answers requests until `stop()` is true (checked every 100 ms): `/metrics` in the
    /// format the `Accept` header asks for ([`Format::from_accept`]), gzip-compressed when
    /// `Accept-Encoding` allows it, followed by the server's own `pmc_exporter_http_*`
    /// counts; `/` a link to it; anything else 404. See the module's bounds.
    pub fn serve(self, registry: &Registry, stop: &dyn Fn() -> bool) {
        let Listener {
            rt,
            listener,
            limits,
            #[cfg(feature = "tls")]
            web,
            ..
        } = self;
        let stats = Arc::new(Stats::default());
        let (jobs, mut queue) = mpsc::channel::<Job>(limits.max_pending.max(1));
        let own = {
            let mut r = Registry::default();
            r.register_collector(Box::new(StatsCollector(Arc::clone(&stats))));
            r
        };
        let shared = Arc::new(Shared {
            table: Mutex::new(Table::default()),
            stats,
            jobs,
            limits,
            #[cfg(feature = "tls")]
            web,
        });
        // The scrapes are encoded here, on the runtime's thread, between its turns (no
        // hand-off to another thread and back per scrape); the scrapes waiting together share
        // one encoding per format: a flood of scrapes costs one read of the counters per
        // round, not one each.
        let encoder = async {
            // The last exposition's size: the next one starts with room for it.
            let mut room = 0;
            while let Some(first) = queue.recv().await {
                // Turns of the runtime first (yield_now defers to its I/O poll), as long as
                // they bring more scrapes (at most 64): the requests that arrived meanwhile,
                // a flood's whole round, queue theirs too and share this encoding. One turn
                // when a scraper is alone.
                for _ in 0..64 {
                    let queued = queue.len();
                    tokio::task::yield_now().await;
                    if queue.len() == queued {
                        break;
                    }
                }
                let mut waiting = vec![first];
                while let Ok(job) = queue.try_recv() {
                    waiting.push(job);
                }
                while let Some(key) = waiting.first().map(|j| (j.format, j.gzip)) {
                    let body = encode(&[registry, &own], key.0, key.1, &mut room);
                    let (now, later): (Vec<Job>, Vec<Job>) =
                        waiting.into_iter().partition(|j| (j.format, j.gzip) == key);
                    for job in now {
                        let _ = job.reply.send(body.clone());
                    }
                    waiting = later;
                }
            }
        };
        rt.block_on(async {
            tokio::select! {
                () = accept_loop(listener, Arc::clone(&shared), stop) => {}
                () = encoder => {}
            }
        });
        // Ends every connection task.
        drop(rt);
        drop(shared);
    }
}

/// One exposition, gzip-compressed or not; `room`: the size of the last one's text (the
/// text starts with that much room, plus an eighth), updated.
fn encode(registries: &[&Registry], format: Format, gzip: bool, room: &mut usize) -> Option<Bytes> {
    let text = render_all(registries, format, *room + *room / 8).ok()?;
    *room = text.len();
    if !gzip {
        return Some(Bytes::from(text));
    }
    let mut z = flate2::write::GzEncoder::new(
        Vec::with_capacity(text.len() / 4),
        flate2::Compression::fast(),
    );
    z.write_all(text.as_bytes()).ok()?;
    z.finish().ok().map(Bytes::from)
}

async fn accept_loop(
    listener: tokio::net::TcpListener,
    shared: Arc<Shared>,
    stop: &dyn Fn() -> bool,
) {
    let mut tick = tokio::time::interval(Duration::from_millis(100));
    loop {
        let accepted = tokio::select! {
            _ = tick.tick() => {
                if stop() {
                    return;
                }
                continue;
            }
            r = listener.accept() => r,
        };
        match accepted {
            Ok((stream, _)) => {
                start(stream, &shared);
                // Let the new connection read its request (and so stop being idle) before
                // the next accept: under a flood of new connections, a client that sent its
                // request at once is not the longest idle when the cap evicts.
                tokio::task::yield_now().await;
            }
            Err(e) => {
                shared.stats.accept_errors.fetch_add(1, Ordering::Relaxed);
                if matches!(e.raw_os_error(), Some(EMFILE | ENFILE)) && shared.evict_one() {
                    // The evicted connection's task closes its socket when it next runs:
                    // let it, then accept again at once. Each round frees one descriptor,
                    // so this ends when the scrapes waiting in the backlog are accepted or
                    // nothing is left to evict. (A 10 ms sleep per round kept a scrape
                    // queued behind 30 others waiting 293 ms.)
                    tokio::task::yield_now().await;
                    continue;
                }
                // Not a busy loop on a lasting error.
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
    }
}

/// EMFILE and ENFILE, the same on Linux and FreeBSD.
const EMFILE: i32 = 24;
const ENFILE: i32 = 23;

fn start(stream: tokio::net::TcpStream, shared: &Arc<Shared>) {
    shared.stats.accepted.fetch_add(1, Ordering::Relaxed);
    let _ = stream.set_nodelay(true);
    let open = shared.table().conns.len();
    if open >= shared.limits.max_connections && !shared.evict_one() {
        shared.stats.refused.fetch_add(1, Ordering::Relaxed);
        return; // dropped: closed
    }
    let kill = Arc::new(Notify::new());
    let id = {
        let mut t = shared.table();
        t.next += 1;
        let id = t.next;
        t.conns.insert(
            id,
            Conn {
                busy: false,
                since: Instant::now(),
                kill: Arc::clone(&kill),
            },
        );
        id
    };
    shared.stats.open.fetch_add(1, Ordering::Relaxed);
    let shared = Arc::clone(shared);
    tokio::spawn(async move {
        let io = Deadline::new(stream, shared.limits.io_timeout);
        tokio::select! {
            _ = connection(io, &shared, id) => {}
            _ = kill.notified() => {}
        }
        if shared.table().conns.remove(&id).is_some() {
            shared.stats.open.fetch_sub(1, Ordering::Relaxed);
        }
    });
}

/// Serves one connection: its TLS handshake first (within the header timeout) when the
/// web config has TLS.
async fn connection(io: Deadline<tokio::net::TcpStream>, shared: &Arc<Shared>, id: u64) {
    #[cfg(feature = "tls")]
    if let Some(tls) = shared.web.as_ref().and_then(|w| w.tls.clone()) {
        let acceptor = tokio_rustls::TlsAcceptor::from(tls);
        let handshake = tokio::time::timeout(shared.limits.header_timeout, acceptor.accept(io));
        if let Ok(Ok(stream)) = handshake.await {
            http(TokioIo::new(stream), shared, id).await;
        }
        return;
    }
    http(TokioIo::new(io), shared, id).await;
}

async fn http<I>(io: I, shared: &Arc<Shared>, id: u64)
where
    I: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
{
    let s = Arc::clone(shared);
    let service = hyper::service::service_fn(move |req| {
        let s = Arc::clone(&s);
        async move { Ok::<_, Infallible>(answer(req, &s, id).await) }
    });
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(shared.limits.header_timeout)
        .keep_alive(true)
        .max_buf_size(16 * 1024);
    let _ = builder.serve_connection(io, service).await;
}

fn plain(code: StatusCode, text: &'static str) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(Bytes::from_static(text.as_bytes())));
    *r.status_mut() = code;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    r
}

/// Whether an `Accept-Encoding` value accepts gzip (a `gzip` or `*` coding without `q=0`).
fn accepts_gzip(v: &str) -> bool {
    v.split(',').any(|coding| {
        let mut parts = coding.split(';');
        let name = parts.next().unwrap_or("").trim();
        let refused = parts.any(|p| {
            let p = p.trim();
            p.strip_prefix("q=")
                .and_then(|q| q.trim().parse::<f32>().ok())
                .is_some_and(|q| q <= 0.0)
        });
        (name.eq_ignore_ascii_case("gzip") || name == "*") && !refused
    })
}

async fn answer(req: Request<Incoming>, shared: &Shared, id: u64) -> Response<Full<Bytes>> {
    shared.set_busy(id, true);
    shared.stats.requests.fetch_add(1, Ordering::Relaxed);
    let r = respond(req, shared).await;
    shared.set_busy(id, false);
    r
}

async fn respond(req: Request<Incoming>, shared: &Shared) -> Response<Full<Bytes>> {
    if req.method() != Method::GET && req.method() != Method::HEAD {
        let mut r = plain(StatusCode::METHOD_NOT_ALLOWED, "only GET and HEAD\n");
        r.headers_mut()
            .insert(header::ALLOW, HeaderValue::from_static("GET, HEAD"));
        return r;
    }
    #[cfg(feature = "tls")]
    if let Some(web) = shared.web.as_ref().filter(|w| w.needs_auth()) {
        let web = Arc::clone(web);
        let given = req
            .headers()
            .get(header::AUTHORIZATION)
            .map(|v| v.as_bytes().to_vec());
        let ok = tokio::task::spawn_blocking(move || web.authorized(given.as_deref()))
            .await
            .unwrap_or(false);
        if !ok {
            let mut r = plain(StatusCode::UNAUTHORIZED, "Unauthorized\n");
            r.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Basic realm=\"pmc\""),
            );
            return r;
        }
    }
    let has_body = req.headers().contains_key(header::TRANSFER_ENCODING)
        || req
            .headers()
            .get(header::CONTENT_LENGTH)
            .is_some_and(|v| v.as_bytes() != b"0");
    if has_body {
        let mut r = plain(
            StatusCode::PAYLOAD_TOO_LARGE,
            "no request body is read here\n",
        );
        r.headers_mut()
            .insert(header::CONNECTION, HeaderValue::from_static("close"));
        return r;
    }
    match req.uri().path() {
        "/metrics" => {}
        "/" => {
            let mut r = plain(
                StatusCode::OK,
                "<html><body><a href=\"/metrics\">metrics</a></body></html>\n",
            );
            r.headers_mut()
                .insert(header::CONTENT_TYPE, HeaderValue::from_static("text/html"));
            return r;
        }
        _ => return plain(StatusCode::NOT_FOUND, "not found\n"),
    }
    let format = Format::from_accept(
        req.headers()
            .get(header::ACCEPT)
            .and_then(|v| v.to_str().ok()),
    );
    let gzip = req
        .headers()
        .get_all(header::ACCEPT_ENCODING)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(accepts_gzip);
    let (reply, answer) = oneshot::channel();
    let job = Job {
        format,
        gzip,
        reply,
    };
    if shared.jobs.try_send(job).is_err() {
        shared.stats.busy.fetch_add(1, Ordering::Relaxed);
        return plain(
            StatusCode::SERVICE_UNAVAILABLE,
            "too many scrapes at once\n",
        );
    }
    let Ok(Some(body)) = answer.await else {
        return plain(StatusCode::INTERNAL_SERVER_ERROR, "encoding failed\n");
    };
    let mut r = Response::new(Full::new(body));
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(format.content_type()),
    );
    h.insert(
        header::VARY,
        HeaderValue::from_static("Accept, Accept-Encoding"),
    );
    if gzip {
        h.insert(header::CONTENT_ENCODING, HeaderValue::from_static("gzip"));
    }
    r
}

/// A stream whose reads and writes fail with `TimedOut` after waiting `timeout` without
/// progress.
struct Deadline<S> {
    inner: S,
    timeout: Duration,
    read: Option<Pin<Box<tokio::time::Sleep>>>,
    write: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl<S> Deadline<S> {
    fn new(inner: S, timeout: Duration) -> Deadline<S> {
        Deadline {
            inner,
            timeout,
            read: None,
            write: None,
        }
    }
}

/// After a `Pending` from the stream: arms `timer` if it is not, and fails once it fires.
fn wait<T>(
    timer: &mut Option<Pin<Box<tokio::time::Sleep>>>,
    timeout: Duration,
    cx: &mut Context<'_>,
) -> Poll<std::io::Result<T>> {
    let t = timer.get_or_insert_with(|| Box::pin(tokio::time::sleep(timeout)));
    match t.as_mut().poll(cx) {
        Poll::Ready(()) => {
            *timer = None;
            Poll::Ready(Err(std::io::ErrorKind::TimedOut.into()))
        }
        Poll::Pending => Poll::Pending,
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Deadline<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = &mut *self;
        match Pin::new(&mut this.inner).poll_read(cx, buf) {
            Poll::Pending => wait(&mut this.read, this.timeout, cx),
            done => {
                this.read = None;
                done
            }
        }
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Deadline<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let this = &mut *self;
        match Pin::new(&mut this.inner).poll_write(cx, buf) {
            Poll::Pending => wait(&mut this.write, this.timeout, cx),
            done => {
                this.write = None;
                done
            }
        }
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        let this = &mut *self;
        match Pin::new(&mut this.inner).poll_write_vectored(cx, bufs) {
            Poll::Pending => wait(&mut this.write, this.timeout, cx),
            done => {
                this.write = None;
                done
            }
        }
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let this = &mut *self;
        match Pin::new(&mut this.inner).poll_flush(cx) {
            Poll::Pending => wait(&mut this.write, this.timeout, cx),
            done => {
                this.write = None;
                done
            }
        }
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let this = &mut *self;
        match Pin::new(&mut this.inner).poll_shutdown(cx) {
            Poll::Pending => wait(&mut this.write, this.timeout, cx),
            done => {
                this.write = None;
                done
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::accepts_gzip;

    #[test]
    fn gzip_is_taken_when_accepted() {
        assert!(accepts_gzip("gzip"));
        assert!(accepts_gzip("deflate, GZIP;q=0.5"));
        assert!(accepts_gzip("*"));
        assert!(!accepts_gzip("gzip;q=0"));
        assert!(!accepts_gzip("identity, br"));
        assert!(!accepts_gzip(""));
    }
}
