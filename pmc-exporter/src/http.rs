//! The exposition formats and the HTTP server (`tiny_http`).

use std::time::Duration;

use pmc::{Error, ErrorKind, Op};
use prometheus_client::registry::Registry;

/// The content type of OpenMetrics text 1.0.
pub(crate) const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";
/// The content type of the Prometheus text format 0.0.4.
pub(crate) const PROMETHEUS_TEXT: &str = "text/plain; version=0.0.4; charset=utf-8";

/// An exposition format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// OpenMetrics 1.0 text, as `prometheus_client` encodes it.
    OpenMetrics,
    /// The Prometheus text format 0.0.4 (what `promtool check metrics` reads).
    PrometheusText,
}

impl Format {
    /// The format an `Accept` header asks for: OpenMetrics when it names
    /// `application/openmetrics-text` (Prometheus 2.5+ does), else the text format.
    ///
    /// ```
    /// use pmc_exporter::Format;
    /// assert_eq!(Format::from_accept(Some("application/openmetrics-text;version=1.0.0,text/plain;q=0.5")), Format::OpenMetrics);
    /// assert_eq!(Format::from_accept(Some("text/plain")), Format::PrometheusText);
    /// assert_eq!(Format::from_accept(None), Format::PrometheusText);
    /// ```
    pub fn from_accept(accept: Option<&str>) -> Format {
        match accept {
            Some(a) if a.contains("application/openmetrics-text") => Format::OpenMetrics,
            _ => Format::PrometheusText,
        }
    }

    /// The `Content-Type` of this format.
    pub fn content_type(self) -> &'static str {
        match self {
            Format::OpenMetrics => OPENMETRICS,
            Format::PrometheusText => PROMETHEUS_TEXT,
        }
    }
}

/// Encodes `registry` (reading every registered [`PmcCollector`](crate::PmcCollector)).
///
/// Both formats are `prometheus_client`'s own encoders (`encoding::text` for OpenMetrics,
/// `encoding::prometheus_text` for the text format 0.0.4), which escape label values (`\`,
/// `"`, newlines): a process or cgroup name cannot end a label or inject a series.
///
/// # Errors
///
/// A collector's `fmt::Error` (prometheus_client's only encoding error).
///
/// ```
/// let mut registry = prometheus_client::registry::Registry::default();
/// let c = prometheus_client::metrics::counter::Counter::<u64>::default();
/// registry.register("jobs", "Jobs done", c.clone());
/// c.inc();
/// let om = pmc_exporter::render(&registry, pmc_exporter::Format::OpenMetrics)?;
/// assert!(om.contains("# TYPE jobs counter\njobs_total 1\n") && om.ends_with("# EOF\n"));
/// let text = pmc_exporter::render(&registry, pmc_exporter::Format::PrometheusText)?;
/// assert!(text.contains("# TYPE jobs_total counter\njobs_total 1\n") && !text.contains("EOF"));
/// # Ok::<(), std::fmt::Error>(())
/// ```
pub fn render(registry: &Registry, format: Format) -> Result<String, std::fmt::Error> {
    let mut out = String::new();
    match format {
        Format::OpenMetrics => prometheus_client::encoding::text::encode(&mut out, registry)?,
        Format::PrometheusText => {
            prometheus_client::encoding::prometheus_text::encode(&mut out, registry)?
        }
    }
    Ok(out)
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

/// Listens on `addr` (`HOST:PORT`; port 0 picks a free one, see
/// [`Listener::address`]).
///
/// # Errors
///
/// [`ErrorKind::Os`] when the address cannot be bound (in use, not local).
///
/// ```
/// let l = pmc_exporter::bind("127.0.0.1:0")?;
/// assert!(l.address().starts_with("127.0.0.1:"));
/// assert!(pmc_exporter::bind(&l.address()).is_err(), "in use");
/// # Ok::<(), pmc::Error>(())
/// ```
pub fn bind(addr: &str) -> pmc::Result<Listener> {
    let server = tiny_http::Server::http(addr).map_err(|e| {
        Error::new(
            ErrorKind::Os,
            Op::Open,
            format!("cannot listen on {addr}: {e}"),
        )
        .with_help("choose another port, or an address of this machine")
    })?;
    Ok(Listener { server })
}

/// A bound HTTP listener ([`bind`]).
pub struct Listener {
    server: tiny_http::Server,
}

impl std::fmt::Debug for Listener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Listener")
            .field("address", &self.address())
            .finish()
    }
}

impl Listener {
    /// The address listened on, `HOST:PORT`.
    pub fn address(&self) -> String {
        match self.server.server_addr().to_ip() {
            Some(a) => a.to_string(),
            None => String::new(),
        }
    }

    /// Answers requests until `stop()` is true (checked at least every 100 ms):
    /// `/metrics` in the format the `Accept` header asks for
    /// ([`Format::from_accept`]), `/` a link to it, anything else 404.
    pub fn serve(self, registry: &Registry, stop: &dyn Fn() -> bool) {
        while !stop() {
            let Ok(Some(req)) = self.server.recv_timeout(Duration::from_millis(100)) else {
                continue;
            };
            let path = req.url().split('?').next().unwrap_or("");
            let response = match path {
                "/metrics" => {
                    let accept = req
                        .headers()
                        .iter()
                        .find(|h| h.field.equiv("Accept"))
                        .map(|h| h.value.as_str());
                    let format = Format::from_accept(accept);
                    match render(registry, format) {
                        Ok(body) => response(200, body, format.content_type()),
                        Err(_) => response(500, "encoding failed\n".into(), "text/plain"),
                    }
                }
                "/" => response(
                    200,
                    "<html><body><a href=\"/metrics\">metrics</a></body></html>\n".into(),
                    "text/html",
                ),
                _ => response(404, "not found\n".into(), "text/plain"),
            };
            // A scraper that went away is its own problem.
            let _ = req.respond(response);
        }
    }
}

fn response(
    code: u16,
    body: String,
    content_type: &str,
) -> tiny_http::Response<std::io::Cursor<Vec<u8>>> {
    let mut r = tiny_http::Response::from_string(body).with_status_code(code);
    if let Ok(h) = tiny_http::Header::from_bytes("Content-Type", content_type) {
        r.add_header(h);
    }
    r
}
