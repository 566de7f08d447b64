//! `--metrics [ADDR:]PORT`: a Prometheus / OpenMetrics exporter (pmc-exporter),
//! counters read at each scrape, until SIGINT/SIGTERM.

use std::sync::Arc;

use pmc_exporter::{PmcCollector, Selector};
use prometheus_client::registry::Registry;

use crate::cli::{AttachSpec, DEFAULT_EVENTS};
use crate::config::Metrics;
use crate::error::Failure;
use crate::run;

/// `PORT` or `:PORT` is 127.0.0.1:PORT; `ADDR:PORT` (`[::1]:PORT`) as given; port 0 is any free one (printed).
fn listen_address(s: &str) -> Result<String, Failure> {
    let usage = || {
        Failure::Usage(format!(
            "--metrics `{s}`: give a port (9464), or an address and a port (0.0.0.0:9464)"
        ))
    };
    let (host, port) = match s.rsplit_once(':') {
        Some((h, p)) => (h, p),
        None => ("", s),
    };
    port.parse::<u16>().map_err(|_| usage())?;
    let host = if host.is_empty() { "127.0.0.1" } else { host };
    Ok(format!("{host}:{port}"))
}

fn event_list(given: &[String], system: bool) -> Vec<String> {
    let list: Vec<String> = given
        .iter()
        .flat_map(|e| e.split(','))
        .filter(|e| !e.is_empty())
        .map(str::to_owned)
        .collect();
    if !list.is_empty() {
        return list;
    }
    // System-wide, perf stat -a counts cpu-clock where it counts task-clock for a command.
    DEFAULT_EVENTS
        .iter()
        .map(|e| {
            if system && *e == "task-clock" {
                "cpu-clock"
            } else {
                e
            }
        })
        .map(|e| e.to_string())
        .collect()
}

fn refs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

/// Runs the exporter; the exit status is 128 + the stop signal.
pub fn run(args: &Metrics) -> Result<u8, Failure> {
    let addr = listen_address(&args.addr)?;
    // Read first: a bad file is a usage error before any counter is opened.
    let web = args
        .web_config
        .as_ref()
        .map(pmc_exporter::WebConfig::load)
        .transpose()?;
    let mut registry = Registry::default();
    registry.register_collector(Box::new(pmc_exporter::SelfCollector::default()));
    let mut per_process = None;
    if !args.system.is_empty() || args.attach.is_none() {
        let events = event_list(&args.system, true);
        let c = match &args.cgroup {
            Some(cg) => PmcCollector::system_cgroup(&refs(&events), cg)?,
            None => PmcCollector::system(&refs(&events))?,
        };
        note_unsupported(&c);
        registry.register_collector(Box::new(c));
    }
    if let Some((root, max)) = &args.cgroups {
        let events = event_list(&args.system, true);
        let c = PmcCollector::cgroups(&refs(&events), root)?.max_targets(*max);
        note_unsupported(&c);
        registry.register_collector(Box::new(c));
    }
    if let Some(spec) = &args.attach {
        let given = args.process.clone();
        let events = event_list(&given, false);
        let selector = match spec {
            AttachSpec::Pid(p) => Selector::Pid(*p),
            AttachSpec::Regex(re) => {
                let re = re.clone();
                Selector::Comm(Box::new(move |comm| re.is_match(comm)))
            }
        };
        let c = Arc::new(
            PmcCollector::processes(&refs(&events), selector)?.max_targets(args.max_targets),
        );
        note_unsupported(&c);
        registry.register_collector(Box::new(Arc::clone(&c)));
        per_process = Some(c);
    }
    let mut listener = pmc_exporter::bind(&addr)?;
    let scheme = match &web {
        Some(w) if w.has_tls() => "https",
        _ => "http",
    };
    if let Some(w) = web {
        listener = listener.web_config(w);
    }
    diag!(
        "pmcstat: serving {scheme}://{}/metrics until SIGINT/SIGTERM",
        listener.address()
    );
    listener.serve(&registry, &|| run::stop_signal().is_some());
    if let Some(c) = per_process {
        let refused = c.refused();
        if refused > 0 {
            diag!(
                "pmcstat: the --metrics-max-targets cap ({}) refused a matching process {refused} time(s)",
                args.max_targets
            );
        }
    }
    Ok(run::final_status(None))
}

fn note_unsupported(c: &PmcCollector) {
    for e in c.unsupported() {
        diag!("pmcstat: {e} cannot be counted here; not exported");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses() {
        assert_eq!(listen_address("9464").ok(), Some("127.0.0.1:9464".into()));
        assert_eq!(listen_address(":9464").ok(), Some("127.0.0.1:9464".into()));
        assert_eq!(listen_address("0.0.0.0:80").ok(), Some("0.0.0.0:80".into()));
        assert_eq!(listen_address("[::1]:80").ok(), Some("[::1]:80".into()));
        assert!(listen_address("host:port").is_err());
        assert!(listen_address("99999").is_err());
    }
}
