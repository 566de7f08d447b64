//! The exposition formats; with the `server` feature, the HTTP server (`server.rs`).

use prometheus_client::registry::Registry;

/// The content type of OpenMetrics text 1.0.
pub(crate) const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";
/// The content type of the Prometheus text format 0.0.4.
pub(crate) const PROMETHEUS_TEXT: &str = prometheus_client::encoding::prometheus_text::CONTENT_TYPE;

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
    render_all(&[registry], format)
}

/// [`render`] of several registries, one exposition (their families must not collide).
pub(crate) fn render_all(
    registries: &[&Registry],
    format: Format,
) -> Result<String, std::fmt::Error> {
    let mut out = String::new();
    for r in registries {
        match format {
            Format::OpenMetrics => prometheus_client::encoding::text::encode_registry(&mut out, r)?,
            Format::PrometheusText => {
                prometheus_client::encoding::prometheus_text::encode(&mut out, r)?
            }
        }
    }
    if format == Format::OpenMetrics {
        prometheus_client::encoding::text::encode_eof(&mut out)?;
    }
    Ok(out)
}
