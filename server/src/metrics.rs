//! Prometheus metrics, hand-rolled: request counts and latency histograms
//! by method and route template, plus store gauges rendered on scrape.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Mutex;
use std::time::Instant;

/// Upper bounds (seconds) of the latency histogram buckets.
const BUCKETS: [f64; 12] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0,
];

#[derive(Debug, Default, Clone)]
struct Histogram {
    counts: [u64; BUCKETS.len()],
    count: u64,
    sum: f64,
}

#[derive(Debug, Default)]
struct Inner {
    requests: BTreeMap<(String, String, u16), u64>,
    latency: BTreeMap<(String, String), Histogram>,
}

/// Request counters and histograms.
#[derive(Debug)]
pub struct Metrics {
    inner: Mutex<Inner>,
    started: Instant,
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics {
            inner: Mutex::new(Inner::default()),
            started: Instant::now(),
        }
    }
}

/// Gauges read from the engine and the data directory at scrape time.
#[derive(Debug, Default, Clone)]
pub struct Gauges {
    /// Size of `memdb.redb`.
    pub store_bytes: u64,
    /// Size of the tantivy index directory.
    pub text_index_bytes: u64,
    /// Size of the vector index directory.
    pub vector_index_bytes: u64,
    /// Oplog entries not yet trimmed: changes some derived index may still lack.
    pub oplog_entries: u64,
    /// Messages and records waiting for a background embedding (every
    /// space, every namespace).
    pub embed_queue_entries: u64,
    /// Conversations in the store.
    pub conversations: u64,
    /// Store writes not yet visible to text search (store LSN minus the
    /// text index's committed LSN).
    pub text_index_uncommitted: u64,
    /// Text-index files held in memory until the next checkpoint.
    pub text_index_staged_bytes: u64,
    /// Row cache: estimated bytes held.
    pub row_cache_bytes: u64,
    /// Row cache lookups answered from memory, since open.
    pub row_cache_hits: u64,
    /// Row cache lookups that read the store, since open.
    pub row_cache_misses: u64,
    /// Text-index commits not yet checkpointed (committed minus durable LSN).
    pub text_index_unsynced: u64,
    /// Searchable segments in the text index.
    pub text_index_segments: u64,
    /// Derived-index maintenance steps that failed since open.
    pub maintenance_failures: u64,
}

impl Metrics {
    /// Records one finished request.
    pub fn record(&self, method: &str, route: &str, status: u16, seconds: f64) {
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        *inner
            .requests
            .entry((method.to_string(), route.to_string(), status))
            .or_default() += 1;
        let h = inner
            .latency
            .entry((method.to_string(), route.to_string()))
            .or_default();
        h.count += 1;
        h.sum += seconds;
        for (i, le) in BUCKETS.iter().enumerate() {
            if seconds <= *le {
                h.counts[i] += 1;
            }
        }
    }

    /// The Prometheus text exposition.
    pub fn render(&self, gauges: &Gauges) -> String {
        let inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let mut out = String::new();
        out.push_str(
            "# HELP memdb_http_requests_total HTTP requests by method, route and status.\n",
        );
        out.push_str("# TYPE memdb_http_requests_total counter\n");
        for ((m, r, s), n) in &inner.requests {
            let _ = writeln!(
                out,
                "memdb_http_requests_total{{method=\"{}\",route=\"{}\",status=\"{s}\"}} {n}",
                esc(m),
                esc(r)
            );
        }
        out.push_str("# HELP memdb_http_request_duration_seconds HTTP request latency by method and route.\n");
        out.push_str("# TYPE memdb_http_request_duration_seconds histogram\n");
        for ((m, r), h) in &inner.latency {
            let (m, r) = (esc(m), esc(r));
            for (i, le) in BUCKETS.iter().enumerate() {
                let _ = writeln!(
                    out,
                    "memdb_http_request_duration_seconds_bucket{{method=\"{m}\",route=\"{r}\",le=\"{le}\"}} {}",
                    h.counts[i]
                );
            }
            let _ = writeln!(
                out,
                "memdb_http_request_duration_seconds_bucket{{method=\"{m}\",route=\"{r}\",le=\"+Inf\"}} {}",
                h.count
            );
            let _ = writeln!(
                out,
                "memdb_http_request_duration_seconds_sum{{method=\"{m}\",route=\"{r}\"}} {}",
                h.sum
            );
            let _ = writeln!(
                out,
                "memdb_http_request_duration_seconds_count{{method=\"{m}\",route=\"{r}\"}} {}",
                h.count
            );
        }
        out.push_str(
            "# HELP memdb_row_cache_lookups_total Row cache lookups since open, by result.\n",
        );
        out.push_str("# TYPE memdb_row_cache_lookups_total counter\n");
        let _ = writeln!(
            out,
            "memdb_row_cache_lookups_total{{result=\"hit\"}} {}\nmemdb_row_cache_lookups_total{{result=\"miss\"}} {}",
            gauges.row_cache_hits, gauges.row_cache_misses
        );
        out.push_str("# HELP memdb_index_maintenance_failures_total Derived-index maintenance steps that failed after a durable write (replayed from the oplog; details in the log).\n");
        out.push_str("# TYPE memdb_index_maintenance_failures_total counter\n");
        let _ = writeln!(
            out,
            "memdb_index_maintenance_failures_total {}",
            gauges.maintenance_failures
        );
        let gauges = [
            (
                "memdb_store_bytes",
                "Size of the redb store file.",
                gauges.store_bytes as f64,
            ),
            (
                "memdb_text_index_bytes",
                "Size of the text index directory.",
                gauges.text_index_bytes as f64,
            ),
            (
                "memdb_vector_index_bytes",
                "Size of the vector index directories.",
                gauges.vector_index_bytes as f64,
            ),
            (
                "memdb_oplog_entries",
                "Oplog entries not yet trimmed (index lag bound).",
                gauges.oplog_entries as f64,
            ),
            (
                "memdb_embed_queue_entries",
                "Messages and records waiting for a background embedding.",
                gauges.embed_queue_entries as f64,
            ),
            (
                "memdb_conversations",
                "Conversations in the store.",
                gauges.conversations as f64,
            ),
            (
                "memdb_text_index_uncommitted_lsns",
                "Store LSNs not yet visible to text search.",
                gauges.text_index_uncommitted as f64,
            ),
            (
                "memdb_text_index_unsynced_lsns",
                "Text index LSNs committed but not yet checkpointed (fsynced).",
                gauges.text_index_unsynced as f64,
            ),
            (
                "memdb_text_index_segments",
                "Searchable segments in the text index.",
                gauges.text_index_segments as f64,
            ),
            (
                "memdb_text_index_staged_bytes",
                "Text index files held in memory until the next checkpoint.",
                gauges.text_index_staged_bytes as f64,
            ),
            (
                "memdb_row_cache_bytes",
                "Estimated bytes held by the row cache.",
                gauges.row_cache_bytes as f64,
            ),
            (
                "memdb_uptime_seconds",
                "Seconds since the server started.",
                self.started.elapsed().as_secs_f64(),
            ),
        ];
        for (name, help, v) in gauges {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} gauge\n{name} {v}");
        }
        out
    }
}

fn esc(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// Total size of the files under `path` (0 when absent).
pub fn dir_size(path: &std::path::Path) -> u64 {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return 0;
    };
    if meta.is_file() {
        return meta.len();
    }
    let Ok(entries) = std::fs::read_dir(path) else {
        return 0;
    };
    entries
        .filter_map(|e| e.ok())
        .map(|e| dir_size(&e.path()))
        .sum()
}

/// The method as a metrics label: one of the standard methods, else
/// `other`. Labels come from a closed set, so no request can grow the
/// metrics (a made-up method is any token of any length).
pub fn method_label(method: &axum::http::Method) -> &'static str {
    use axum::http::Method;
    match *method {
        Method::GET => "GET",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::DELETE => "DELETE",
        Method::PATCH => "PATCH",
        Method::HEAD => "HEAD",
        Method::OPTIONS => "OPTIONS",
        _ => "other",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn methods_outside_the_standard_set_share_one_label() {
        use axum::http::Method;
        assert_eq!(method_label(&Method::GET), "GET");
        let junk = Method::from_bytes(&[b'X'; 2000]).unwrap();
        assert_eq!(method_label(&junk), "other");
        assert_eq!(
            method_label(&Method::from_bytes(b"PROPFIND").unwrap()),
            "other"
        );
    }

    #[test]
    fn histogram_buckets_are_cumulative() {
        let m = Metrics::default();
        m.record("GET", "/a", 200, 0.003);
        m.record("GET", "/a", 404, 0.2);
        let text = m.render(&Gauges::default());
        assert!(
            text.contains(
                "memdb_http_requests_total{method=\"GET\",route=\"/a\",status=\"200\"} 1"
            )
        );
        assert!(
            text.contains(
                "memdb_http_requests_total{method=\"GET\",route=\"/a\",status=\"404\"} 1"
            )
        );
        assert!(text.contains("route=\"/a\",le=\"0.005\"} 1"));
        assert!(text.contains("route=\"/a\",le=\"0.25\"} 2"));
        assert!(
            text.contains(
                "memdb_http_request_duration_seconds_count{method=\"GET\",route=\"/a\"} 2"
            )
        );
    }
}
