//! Blocking JSON over HTTP for the remote providers (OpenAI-compatible
//! embeddings and chat).
//!
//! One job: send a request, retry what is worth retrying, and turn every
//! failure into an [`Error::Remote`] whose message says what to fix. Built on
//! `ureq` 3 (blocking, rustls; proxies from the usual environment variables).
//!
//! Retries: a request is tried `1 + max_retries` times when it fails with 429,
//! 408, any 5xx, a connection error or a timeout. The wait before retry `n`
//! (from 0) is `backoff * 2^n`, capped at `max_backoff`, times a random factor
//! in `[0.5, 1)` (jitter, so clients that failed together do not retry
//! together). A `Retry-After` header (seconds or an HTTP date) replaces that wait; one
//! longer than `max_backoff` ends the retries at once (the error says how long
//! the server asked to wait). Other 4xx answers are final.
//!
//! Key handling: the API key is read once from the named environment variable,
//! sent only as `Authorization: Bearer ...`, and never formatted into an error
//! or log; server messages quoted in errors are scrubbed of it.
//!
//! What it is not: no async, no streaming, no connection to the store.

use std::io::ErrorKind;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The environment variable OpenAI-compatible clients read their key from
/// by default.
pub(crate) const OPENAI_KEY_ENV: &str = "OPENAI_API_KEY";

use crate::error::{Error, RemoteFailure, Result};

/// Largest JSON response read (an embeddings batch of 256 x 3072 floats is
/// about 16 MB of JSON).
const JSON_LIMIT: u64 = 64 * 1024 * 1024;
/// Longest server message quoted in an error.
const QUOTE_LIMIT: usize = 300;

/// Timeouts and retry policy of one client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct HttpPolicy {
    /// Whole-request budget: connect, send, wait, read the body.
    pub timeout: Duration,
    /// Connection setup budget (TCP and TLS).
    pub connect_timeout: Duration,
    /// Retries after the first attempt.
    pub max_retries: u32,
    /// Wait before the first retry (doubled each time).
    pub backoff: Duration,
    /// Longest wait between attempts.
    pub max_backoff: Duration,
}

impl HttpPolicy {
    /// Checks the settings every remote provider shares.
    pub(crate) fn checked(
        timeout: Duration,
        connect_timeout: Duration,
        max_retries: u32,
        backoff: Duration,
        max_backoff: Duration,
    ) -> Result<Self> {
        if timeout.is_zero() || connect_timeout.is_zero() {
            return Err(Error::invalid("timeout", "must be more than zero"));
        }
        if max_retries > 20 {
            return Err(Error::invalid("max_retries", "must be at most 20"));
        }
        Ok(HttpPolicy {
            timeout,
            connect_timeout,
            max_retries,
            backoff,
            max_backoff: max_backoff.max(backoff),
        })
    }
}

/// A blocking JSON client with a bearer key and a retry policy.
pub(crate) struct JsonClient {
    agent: ureq::Agent,
    policy: HttpPolicy,
    api_key: Option<String>,
    /// The environment variable the key came from (named in 401 errors).
    key_env: Option<String>,
}

impl std::fmt::Debug for JsonClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JsonClient")
            .field("policy", &self.policy)
            .field("key_env", &self.key_env)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .finish_non_exhaustive()
    }
}

/// One attempt's failure, before retries are decided.
struct Attempt {
    kind: RemoteFailure,
    status: Option<u16>,
    /// What happened, without the remedy.
    detail: String,
    /// Seconds from a `Retry-After` header.
    retry_after: Option<u64>,
}

impl JsonClient {
    /// A client reading its key from `key_env` (unset or empty: no key is
    /// sent, as local servers such as Ollama expect).
    pub(crate) fn new(policy: HttpPolicy, key_env: Option<&str>) -> Self {
        Self::with_key(policy, None, key_env)
    }

    /// A client sending `key` when it is given (and not blank), else the
    /// key read from `key_env` as [`JsonClient::new`] does.
    pub(crate) fn with_key(policy: HttpPolicy, key: Option<&str>, key_env: Option<&str>) -> Self {
        let given = key
            .map(str::trim)
            .filter(|k| !k.is_empty())
            .map(str::to_string);
        let (api_key, key_env) = match given {
            Some(k) => (Some(k), None),
            None => (
                key_env
                    .and_then(|name| std::env::var(name).ok())
                    .filter(|k| !k.trim().is_empty())
                    .map(|k| k.trim().to_string()),
                key_env,
            ),
        };
        JsonClient {
            agent: agent(&policy),
            policy,
            api_key,
            key_env: key_env.map(str::to_string),
        }
    }

    /// POSTs `body` as JSON to `url` and decodes the 2xx answer as `T`,
    /// retrying per the policy. A body that is not JSON, or not shaped like
    /// `T`, is [`RemoteFailure::Malformed`].
    pub(crate) fn post_json<T: serde::de::DeserializeOwned>(
        &self,
        url: &str,
        body: &serde_json::Value,
    ) -> Result<T> {
        let payload = serde_json::to_vec(body)
            .map_err(|e| Error::Embedding(format!("cannot encode the request: {e}")))?;
        let bytes = self.with_retries(url, || {
            let mut req = self
                .agent
                .post(url)
                .header("content-type", "application/json")
                .header("accept", "application/json");
            if let Some(key) = &self.api_key {
                req = req.header("authorization", format!("Bearer {key}"));
            }
            read_response(req.send(&payload[..]), JSON_LIMIT, self.api_key.as_deref())
        })?;
        serde_json::from_slice(&bytes).map_err(|e| {
            let what = if e.is_syntax() || e.is_eof() {
                "is not valid JSON"
            } else {
                "is not shaped as the API defines"
            };
            remote(
                url,
                RemoteFailure::Malformed,
                None,
                format!(
                    "the response {what} ({e}): {}; is the base URL an OpenAI-compatible API?",
                    quote(&String::from_utf8_lossy(&bytes), self.api_key.as_deref())
                ),
            )
        })
    }

    /// Calls `attempt` until it succeeds, fails for good, or the retries run out.
    fn with_retries(
        &self,
        url: &str,
        mut attempt: impl FnMut() -> std::result::Result<Vec<u8>, Attempt>,
    ) -> Result<Vec<u8>> {
        let mut n = 0u32;
        loop {
            let failure = match attempt() {
                Ok(bytes) => return Ok(bytes),
                Err(f) => f,
            };
            let retryable = matches!(
                failure.kind,
                RemoteFailure::RateLimited
                    | RemoteFailure::Server
                    | RemoteFailure::Unreachable
                    | RemoteFailure::Timeout
            );
            let attempts = n + 1;
            if !retryable || n >= self.policy.max_retries {
                return Err(self.final_error(url, failure, attempts, None));
            }
            let wait = match failure.retry_after {
                Some(secs) => {
                    let asked = Duration::from_secs(secs);
                    if asked > self.policy.max_backoff {
                        return Err(self.final_error(url, failure, attempts, Some(secs)));
                    }
                    asked
                }
                None => jittered(self.policy.backoff, self.policy.max_backoff, n),
            };
            std::thread::sleep(wait);
            n += 1;
        }
    }

    /// The error for a failure that is not retried (any more).
    fn final_error(
        &self,
        url: &str,
        f: Attempt,
        attempts: u32,
        too_long_wait: Option<u64>,
    ) -> Error {
        let tries = if attempts == 1 {
            "1 attempt".to_string()
        } else {
            format!("{attempts} attempts")
        };
        let message = match f.kind {
            RemoteFailure::Unauthorized => match (&self.api_key, &self.key_env) {
                (None, Some(env)) => format!(
                    "{}: no API key was sent because ${env} is unset or empty; set it to the provider's key",
                    f.detail
                ),
                (None, None) => format!(
                    "{}: the server wants an API key; configure the environment variable that holds it",
                    f.detail
                ),
                (Some(_), env) => format!(
                    "{}: the API key{} was refused (wrong, revoked or without access to this model)",
                    f.detail,
                    env.as_ref()
                        .map_or_else(String::new, |e| format!(" from ${e}"))
                ),
            },
            RemoteFailure::NotFound => format!(
                "{}: check the base URL (OpenAI-compatible servers serve under /v1, e.g. http://localhost:11434/v1) and the model name",
                f.detail
            ),
            RemoteFailure::RateLimited => match too_long_wait {
                Some(secs) => format!(
                    "{}: rate limited, and the server asks to wait {secs} s, longer than the {} s this client waits; retry later",
                    f.detail,
                    self.policy.max_backoff.as_secs()
                ),
                None => format!(
                    "{}: still rate limited after {tries}; retry later, lower the batch size or raise max_retries",
                    f.detail
                ),
            },
            RemoteFailure::Server => format!(
                "{}: server error on all {tries}; the provider is failing, retry later",
                f.detail
            ),
            RemoteFailure::Rejected => format!("{}: the server rejected the request", f.detail),
            RemoteFailure::Unreachable => format!(
                "cannot reach the server ({}) after {tries}; is it running, and is the base URL right?",
                f.detail
            ),
            RemoteFailure::Timeout => format!(
                "no complete answer within the {} ms timeout ({}) after {tries}; raise the timeout or check the server",
                self.policy.timeout.as_millis(),
                f.detail
            ),
            RemoteFailure::Malformed => f.detail,
        };
        remote(url, f.kind, f.status, message)
    }
}

/// Checks a provider's base URL (`http://` or `https://`, a host) and
/// returns it without trailing slashes.
pub(crate) fn base_url(url: &str) -> Result<String> {
    let url = url.trim().trim_end_matches('/');
    let rest = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"));
    match rest {
        Some(rest) if !rest.is_empty() && !rest.starts_with('/') && !url.contains(['?', '#']) => {
            Ok(url.to_string())
        }
        _ => Err(Error::invalid(
            "base_url",
            format!(
                "`{}` is not an http(s) URL such as https://api.openai.com/v1 or http://localhost:11434/v1",
                endpoint(url)
            ),
        )),
    }
}

fn agent(policy: &HttpPolicy) -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(policy.timeout))
        .timeout_connect(Some(policy.connect_timeout))
        .user_agent(concat!("memdb/", env!("CARGO_PKG_VERSION")))
        .build()
        .into()
}

/// Reads a response: the body of a 2xx, or the failure.
fn read_response(
    sent: std::result::Result<ureq::http::Response<ureq::Body>, ureq::Error>,
    limit: u64,
    key: Option<&str>,
) -> std::result::Result<Vec<u8>, Attempt> {
    let mut resp = sent.map_err(transport)?;
    let status = resp.status().as_u16();
    let retry_after = resp
        .headers()
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| retry_after_secs(v, SystemTime::now()));
    let body = resp.body_mut().with_config().limit(limit).read_to_vec();
    if (200..300).contains(&status) {
        return body.map_err(transport);
    }
    let text = body
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .unwrap_or_default();
    let kind = match status {
        401 | 403 => RemoteFailure::Unauthorized,
        404 => RemoteFailure::NotFound,
        429 => RemoteFailure::RateLimited,
        408 => RemoteFailure::Timeout,
        500..=599 => RemoteFailure::Server,
        _ => RemoteFailure::Rejected,
    };
    let said = server_message(&text, key);
    Err(Attempt {
        kind,
        status: Some(status),
        detail: if said.is_empty() {
            format!("HTTP {status}")
        } else {
            format!("HTTP {status} ({said})")
        },
        retry_after,
    })
}

/// The wait a `Retry-After` value asks for, in whole seconds: either
/// delay-seconds, or an HTTP date (IMF-fixdate such as `Wed, 21 Oct 2015
/// 07:28:00 GMT`, or the obsolete RFC 850 and asctime forms recipients must
/// accept) counted from `now` and rounded up; a date already past is 0.
/// `None` when the value is neither.
fn retry_after_secs(value: &str, now: SystemTime) -> Option<u64> {
    let value = value.trim();
    if let Ok(secs) = value.parse::<u64>() {
        return Some(secs);
    }
    let at = httpdate::parse_http_date(value).ok()?;
    Some(match at.duration_since(now) {
        Ok(d) => d.as_secs() + u64::from(d.subsec_nanos() > 0),
        Err(_) => 0,
    })
}

/// Classifies a transport-level failure (no HTTP status).
fn transport(e: ureq::Error) -> Attempt {
    let (kind, detail) = match &e {
        ureq::Error::Timeout(t) => (RemoteFailure::Timeout, format!("timed out: {t}")),
        ureq::Error::Io(io) if matches!(io.kind(), ErrorKind::TimedOut | ErrorKind::WouldBlock) => {
            (RemoteFailure::Timeout, format!("timed out: {io}"))
        }
        ureq::Error::Io(io) => (RemoteFailure::Unreachable, io.to_string()),
        ureq::Error::HostNotFound => (RemoteFailure::Unreachable, "host not found".to_string()),
        ureq::Error::ConnectionFailed => {
            (RemoteFailure::Unreachable, "connection failed".to_string())
        }
        ureq::Error::BadUri(u) => (RemoteFailure::Unreachable, format!("bad URL: {u}")),
        ureq::Error::Protocol(p) => (
            RemoteFailure::Malformed,
            format!("the server does not speak HTTP/1.1 correctly: {p}"),
        ),
        ureq::Error::BodyExceedsLimit(n) => (
            RemoteFailure::Malformed,
            format!("the response is larger than {n} bytes"),
        ),
        other => (RemoteFailure::Unreachable, other.to_string()),
    };
    Attempt {
        kind,
        status: None,
        detail,
        retry_after: None,
    }
}

/// The message an error body carries (`{"error": {"message": ...}}` as
/// OpenAI sends it, `{"error": "..."}` as Ollama does, else the text),
/// shortened and scrubbed of the key.
fn server_message(text: &str, key: Option<&str>) -> String {
    let parsed: Option<serde_json::Value> = serde_json::from_str(text).ok();
    let said = parsed
        .as_ref()
        .and_then(|v| {
            v.pointer("/error/message")
                .or_else(|| v.get("error"))
                .or_else(|| v.get("message"))
                .or_else(|| v.get("detail"))
        })
        .and_then(|m| m.as_str())
        .map(str::to_string)
        .unwrap_or_else(|| text.to_string());
    quote(&said, key)
}

/// `s` on one line, at most [`QUOTE_LIMIT`] characters, without the key.
fn quote(s: &str, key: Option<&str>) -> String {
    let mut s: String = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if let Some(key) = key.filter(|k| !k.is_empty()) {
        s = s.replace(key, "<redacted>");
    }
    if s.chars().count() > QUOTE_LIMIT {
        s = s.chars().take(QUOTE_LIMIT).collect::<String>() + "...";
    }
    s
}

/// `url` without credentials or query string, for error messages.
pub(crate) fn endpoint(url: &str) -> String {
    let no_query = url.split(['?', '#']).next().unwrap_or(url);
    match no_query.split_once("://") {
        Some((scheme, rest)) => {
            let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
            let host = authority.rsplit('@').next().unwrap_or(authority);
            format!("{scheme}://{host}{path}")
        }
        None => no_query.to_string(),
    }
}

pub(crate) fn remote(
    url: &str,
    kind: RemoteFailure,
    status: Option<u16>,
    message: String,
) -> Error {
    Error::Remote {
        endpoint: endpoint(url),
        kind,
        status,
        message,
    }
}

/// `backoff * 2^n` capped at `max`, times a random factor in `[0.5, 1)`.
fn jittered(backoff: Duration, max: Duration, n: u32) -> Duration {
    let base = backoff.saturating_mul(1u32.checked_shl(n.min(20)).unwrap_or(u32::MAX));
    let capped = base.min(max);
    capped.mul_f64(0.5 + 0.5 * unit_random())
}

/// A float in `[0, 1)` from SplitMix64 over the clock and a counter: enough
/// to spread retries, not for anything secret.
fn unit_random() -> f64 {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    let mut z = nanos
        .wrapping_add(COUNTER.fetch_add(1, Ordering::Relaxed))
        .wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    (z >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoint_drops_credentials_and_query() {
        assert_eq!(
            endpoint("https://user:secret@api.example.com/v1/embeddings?key=abc"),
            "https://api.example.com/v1/embeddings"
        );
        assert_eq!(
            endpoint("http://127.0.0.1:8080/v1"),
            "http://127.0.0.1:8080/v1"
        );
        assert_eq!(endpoint("http://host"), "http://host");
    }

    #[test]
    fn server_messages_are_extracted_and_scrubbed() {
        let body = r#"{"error":{"message":"Incorrect API key provided: sk-secret","type":"invalid_request_error"}}"#;
        let m = server_message(body, Some("sk-secret"));
        assert_eq!(m, "Incorrect API key provided: <redacted>");
        assert_eq!(
            server_message(r#"{"error":"model not found"}"#, None),
            "model not found"
        );
        assert_eq!(server_message("plain\n text", None), "plain text");
        let long = "x".repeat(1000);
        assert_eq!(server_message(&long, None).len(), QUOTE_LIMIT + 3);
    }

    #[test]
    fn retry_after_is_seconds_or_an_http_date() {
        // 2015-10-21 07:28:00 UTC.
        let date = UNIX_EPOCH + Duration::from_secs(1_445_412_480);
        assert_eq!(retry_after_secs("120", date), Some(120));
        assert_eq!(retry_after_secs(" 0 ", date), Some(0));
        // IMF-fixdate, 90 s after `now`.
        let now = date - Duration::from_secs(90);
        assert_eq!(
            retry_after_secs("Wed, 21 Oct 2015 07:28:00 GMT", now),
            Some(90)
        );
        // A fraction of a second left rounds up, never down to "now".
        let now = date - Duration::from_millis(1500);
        assert_eq!(
            retry_after_secs("Wed, 21 Oct 2015 07:28:00 GMT", now),
            Some(2)
        );
        // The obsolete forms HTTP recipients must accept.
        let now = date - Duration::from_secs(5);
        assert_eq!(
            retry_after_secs("Wednesday, 21-Oct-15 07:28:00 GMT", now),
            Some(5)
        );
        assert_eq!(retry_after_secs("Wed Oct 21 07:28:00 2015", now), Some(5));
        // A date in the past: retry at once.
        let later = date + Duration::from_secs(3600);
        assert_eq!(
            retry_after_secs("Wed, 21 Oct 2015 07:28:00 GMT", later),
            Some(0)
        );
        // Neither: no header value to honour.
        for bad in ["", "soon", "-5", "1.5", "Wed, 32 Oct 2015 07:28:00 GMT"] {
            assert_eq!(retry_after_secs(bad, date), None, "{bad:?}");
        }
    }

    #[test]
    fn backoff_doubles_is_capped_and_jittered() {
        let b = Duration::from_millis(100);
        let max = Duration::from_millis(1000);
        for n in 0..8 {
            let w = jittered(b, max, n);
            let full = (b * 2u32.pow(n)).min(max);
            assert!(w >= full / 2 && w < full, "retry {n}: {w:?} vs {full:?}");
        }
        // Huge retry counts do not overflow.
        assert!(jittered(b, max, 1000) <= max);
    }
}
