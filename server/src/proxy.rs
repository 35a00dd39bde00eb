//! The OpenAI-compatible proxy's machinery (SPEC.md §21.6): its settings
//! (`--upstream-*`, `--proxy-*`, the `[proxy]` table), the blocking client
//! that forwards to the upstream server (ureq, on the blocking pool), the
//! relay of a streamed answer (server-sent events passed through line by
//! line while the answer's text is collected), and the two things built
//! around an answer: the stored exchange and the `sekha_metadata` report.
//!
//! The routes themselves are in [`crate::routes::proxy`]. What the model is
//! told (the injected system message), the capture label and the context
//! itself come from the engine (`memdb::context_system_message`,
//! `memdb::capture_label`, `memdb::Sekha::assemble_context`); nothing here ranks
//! or selects.
//!
//! Upstream answers are passed through as they are: status, content type
//! and body. Only a transport failure is memdb's own answer: 502 when the
//! upstream cannot be reached, 504 when it does not answer in time.

use std::io::{BufRead, Read, Write};
use std::time::Duration;

use axum::http::StatusCode;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::error::ApiError;
use crate::error::ServerError;

/// Default seconds an upstream has to answer (a whole answer, or a
/// stream's headers): under the server's 120 s request timeout, so a slow
/// upstream is a 504, not the server's 408.
pub const DEFAULT_UPSTREAM_TIMEOUT_SECS: u64 = 100;
/// Default seconds a streamed answer may last after its headers.
pub const DEFAULT_STREAM_TIMEOUT_SECS: u64 = 600;
/// Largest upstream answer read whole (a non-streamed answer, an error).
pub const MAX_UPSTREAM_BODY: u64 = 64 * 1024 * 1024;
/// Longest line of a streamed answer.
pub const MAX_SSE_LINE: usize = 16 * 1024 * 1024;
/// Most bytes of a streamed answer kept to be stored (the engine's 1 MiB
/// message limit): the stream is relayed whole, the rest is not buffered.
pub const MAX_ANSWER_BYTES: usize = 1 << 20;
/// The request header that turns context injection off (`off`, `false`,
/// `0`, `no`) or on (`on`, `true`, `1`, `yes`; the default).
pub const CONTEXT_HEADER: &str = "x-memdb-context";
/// The response header giving the number of messages injected.
pub const CONTEXT_COUNT_HEADER: &str = "x-memdb-context-count";

/// Settings of the proxy. Every field is optional: unset flags fall back
/// to the file's `[proxy]` table, then to the defaults. Without an
/// upstream URL the proxy routes answer 503.
#[derive(Clone, Default, PartialEq, Eq, Deserialize, clap::Args)]
#[serde(default, deny_unknown_fields)]
pub struct ProxySettings {
    /// The OpenAI-compatible server `/v1/chat/completions` forwards to, its
    /// API root with `/v1` (e.g. http://localhost:11434/v1) [default: none,
    /// the proxy is off].
    #[arg(
        long = "upstream-url",
        id = "upstream_url",
        env = "MEMDB_UPSTREAM_URL",
        value_name = "URL"
    )]
    pub upstream_url: Option<String>,
    /// The upstream's API key, sent as a bearer token (the client's memdb
    /// key is never forwarded) [default: none].
    #[arg(
        long = "upstream-key",
        id = "upstream_key",
        env = "MEMDB_UPSTREAM_KEY",
        hide_env_values = true
    )]
    pub upstream_key: Option<String>,
    /// A model name replacing the request's [default: the request's].
    #[arg(
        long = "upstream-model",
        id = "upstream_model",
        env = "MEMDB_UPSTREAM_MODEL",
        value_name = "NAME"
    )]
    pub upstream_model: Option<String>,
    /// Seconds the upstream has to answer (a whole answer, or a stream's
    /// headers) [default: 100].
    #[arg(
        long = "upstream-timeout",
        id = "upstream_timeout",
        env = "MEMDB_UPSTREAM_TIMEOUT",
        value_name = "SECS"
    )]
    pub upstream_timeout_secs: Option<u64>,
    /// Seconds a streamed answer may last after its headers [default: 600].
    #[arg(
        long = "upstream-stream-timeout",
        id = "upstream_stream_timeout",
        env = "MEMDB_UPSTREAM_STREAM_TIMEOUT",
        value_name = "SECS"
    )]
    pub stream_timeout_secs: Option<u64>,
    /// Token budget of the injected context [default: 2000].
    #[arg(
        long = "proxy-context-budget",
        id = "proxy_context_budget",
        env = "MEMDB_PROXY_CONTEXT_BUDGET",
        value_name = "TOKENS"
    )]
    pub context_budget: Option<usize>,
    /// Folder of the stored exchanges [default: /auto-captured].
    #[arg(
        long = "proxy-folder",
        id = "proxy_folder",
        env = "MEMDB_PROXY_FOLDER",
        value_name = "FOLDER"
    )]
    pub folder: Option<String>,
    /// Preferred labels of the context assembly, comma-separated.
    #[arg(
        long = "proxy-preferred-labels",
        id = "proxy_preferred_labels",
        env = "MEMDB_PROXY_PREFERRED_LABELS",
        value_delimiter = ','
    )]
    pub preferred_labels: Vec<String>,
    /// Folders the injected context never comes from, comma-separated.
    #[arg(
        long = "proxy-excluded-folders",
        id = "proxy_excluded_folders",
        env = "MEMDB_PROXY_EXCLUDED_FOLDERS",
        value_delimiter = ','
    )]
    pub excluded_folders: Vec<String>,
}

impl std::fmt::Debug for ProxySettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProxySettings")
            .field("upstream_url", &self.upstream_url)
            .field(
                "upstream_key",
                &self.upstream_key.as_ref().map(|_| "<redacted>"),
            )
            .field("upstream_model", &self.upstream_model)
            .field("upstream_timeout_secs", &self.upstream_timeout_secs)
            .field("stream_timeout_secs", &self.stream_timeout_secs)
            .field("context_budget", &self.context_budget)
            .field("folder", &self.folder)
            .field("preferred_labels", &self.preferred_labels)
            .field("excluded_folders", &self.excluded_folders)
            .finish()
    }
}

impl ProxySettings {
    /// These settings, each unset one taken from `base`.
    pub fn or(&self, base: &ProxySettings) -> ProxySettings {
        let list =
            |a: &Vec<String>, b: &Vec<String>| if a.is_empty() { b.clone() } else { a.clone() };
        ProxySettings {
            upstream_url: self
                .upstream_url
                .clone()
                .or_else(|| base.upstream_url.clone()),
            upstream_key: self
                .upstream_key
                .clone()
                .or_else(|| base.upstream_key.clone()),
            upstream_model: self
                .upstream_model
                .clone()
                .or_else(|| base.upstream_model.clone()),
            upstream_timeout_secs: self.upstream_timeout_secs.or(base.upstream_timeout_secs),
            stream_timeout_secs: self.stream_timeout_secs.or(base.stream_timeout_secs),
            context_budget: self.context_budget.or(base.context_budget),
            folder: self.folder.clone().or_else(|| base.folder.clone()),
            preferred_labels: list(&self.preferred_labels, &base.preferred_labels),
            excluded_folders: list(&self.excluded_folders, &base.excluded_folders),
        }
    }

    /// The upstream client, `None` when no upstream URL is set; the error
    /// says which setting is wrong.
    pub fn build(&self) -> Result<Option<Upstream>, ServerError> {
        let Some(url) = self.upstream_url.as_deref().map(str::trim) else {
            return Ok(None);
        };
        let bad = |m: String| ServerError::Config(m);
        let base = url.trim_end_matches('/');
        let rest = base
            .strip_prefix("http://")
            .or_else(|| base.strip_prefix("https://"));
        if !matches!(rest, Some(r) if !r.is_empty() && !r.starts_with('/'))
            || base.contains(['?', '#'])
        {
            return Err(bad(format!(
                "upstream_url {url:?} is not an http(s) URL such as http://localhost:11434/v1 (MEMDB_UPSTREAM_URL, --upstream-url)"
            )));
        }
        let timeout = self
            .upstream_timeout_secs
            .unwrap_or(DEFAULT_UPSTREAM_TIMEOUT_SECS);
        let stream_timeout = self
            .stream_timeout_secs
            .unwrap_or(DEFAULT_STREAM_TIMEOUT_SECS);
        for (name, v) in [
            ("upstream_timeout_secs", timeout),
            ("stream_timeout_secs", stream_timeout),
        ] {
            if !(1..=86_400).contains(&v) {
                return Err(bad(format!("{name} must be between 1 and 86400 seconds")));
            }
        }
        let budget = self.context_budget.unwrap_or(memdb::DEFAULT_PROXY_BUDGET);
        if budget == 0 {
            return Err(bad("proxy context_budget must be at least 1 token".into()));
        }
        let folder = self
            .folder
            .clone()
            .unwrap_or_else(|| memdb::DEFAULT_CAPTURE_FOLDER.to_string());
        if !folder.starts_with('/') {
            return Err(bad(format!("proxy folder {folder:?} must start with '/'")));
        }
        let key = self
            .upstream_key
            .as_deref()
            .map(str::trim)
            .filter(|k| !k.is_empty())
            .map(str::to_string);
        if key
            .as_deref()
            .is_some_and(|k| axum::http::HeaderValue::from_str(&format!("Bearer {k}")).is_err())
        {
            return Err(bad(
                "upstream_key contains characters a header cannot carry".into(),
            ));
        }
        let timeout = Duration::from_secs(timeout);
        let agent = |recv_body: Duration| -> ureq::Agent {
            ureq::Agent::config_builder()
                .http_status_as_error(false)
                .timeout_connect(Some(Duration::from_secs(10).min(timeout)))
                .timeout_recv_response(Some(timeout))
                .timeout_recv_body(Some(recv_body))
                .user_agent(concat!("memdb-server/", env!("CARGO_PKG_VERSION")))
                .build()
                .into()
        };
        Ok(Some(Upstream {
            base: base.to_string(),
            key,
            model: self
                .upstream_model
                .as_deref()
                .map(str::trim)
                .filter(|m| !m.is_empty())
                .map(str::to_string),
            context_budget: budget,
            folder,
            preferred_labels: self.preferred_labels.clone(),
            excluded_folders: self.excluded_folders.clone(),
            agent: agent(timeout),
            stream_agent: agent(Duration::from_secs(stream_timeout)),
        }))
    }
}

/// The upstream server and what the proxy does around it.
pub struct Upstream {
    base: String,
    key: Option<String>,
    /// The model every request is sent with, when configured.
    pub model: Option<String>,
    /// Token budget of the injected context.
    pub context_budget: usize,
    /// Folder of stored exchanges.
    pub folder: String,
    /// Preferred labels of the context assembly.
    pub preferred_labels: Vec<String>,
    /// Folders the context never comes from.
    pub excluded_folders: Vec<String>,
    agent: ureq::Agent,
    stream_agent: ureq::Agent,
}

impl std::fmt::Debug for Upstream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Upstream")
            .field("base", &self.base)
            .field("model", &self.model)
            .finish_non_exhaustive()
    }
}

/// An upstream answer whose head has arrived.
pub type Answer = ureq::http::Response<ureq::Body>;

impl Upstream {
    /// `base` + `path` (`/chat/completions`, `/models`).
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// POSTs a JSON body; `stream` picks the agent whose body timeout fits
    /// a stream. Blocking: call on the blocking pool.
    pub fn post(&self, path: &str, body: &[u8], stream: bool) -> Result<Answer, ApiError> {
        let url = self.url(path);
        let agent = if stream {
            &self.stream_agent
        } else {
            &self.agent
        };
        let mut req = agent
            .post(&url)
            .header("content-type", "application/json")
            .header(
                "accept",
                if stream {
                    "text/event-stream"
                } else {
                    "application/json"
                },
            );
        if let Some(k) = &self.key {
            req = req.header("authorization", format!("Bearer {k}"));
        }
        req.send(body).map_err(|e| self.failure(&url, &e))
    }

    /// GETs `path`. Blocking.
    pub fn get(&self, path: &str) -> Result<Answer, ApiError> {
        let url = self.url(path);
        let mut req = self.agent.get(&url).header("accept", "application/json");
        if let Some(k) = &self.key {
            req = req.header("authorization", format!("Bearer {k}"));
        }
        req.call().map_err(|e| self.failure(&url, &e))
    }

    /// Reads an answer whole: status, content type, body. Blocking.
    pub fn read(&self, mut answer: Answer) -> Result<(u16, Option<String>, Vec<u8>), ApiError> {
        let status = answer.status().as_u16();
        let content_type = content_type(&answer);
        let body = answer
            .body_mut()
            .with_config()
            .limit(MAX_UPSTREAM_BODY)
            .read_to_vec()
            .map_err(|e| self.failure(&self.base, &e))?;
        Ok((status, content_type, body))
    }

    /// 504 for a timeout, 502 for anything else that kept an answer from
    /// arriving; the message names the endpoint, never the key.
    fn failure(&self, url: &str, e: &ureq::Error) -> ApiError {
        let timed_out = match e {
            ureq::Error::Timeout(_) => true,
            ureq::Error::Io(io) => matches!(
                io.kind(),
                std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock
            ),
            _ => false,
        };
        let mut said = e.to_string();
        if let Some(k) = &self.key {
            said = said.replace(k.as_str(), "<redacted>");
        }
        let endpoint = url.split(['?', '#']).next().unwrap_or(url);
        tracing::warn!(%endpoint, error = %said, "upstream failed");
        if timed_out {
            ApiError::new(
                StatusCode::GATEWAY_TIMEOUT,
                format!("the upstream {endpoint} did not answer in time ({said})"),
            )
        } else {
            ApiError::new(
                StatusCode::BAD_GATEWAY,
                format!("the upstream {endpoint} cannot be reached ({said})"),
            )
        }
    }
}

/// An answer's content type, if it names one.
pub fn content_type(answer: &Answer) -> Option<String> {
    answer
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
}

/// Whether a content type is server-sent events.
pub fn is_event_stream(content_type: Option<&str>) -> bool {
    content_type.is_some_and(|c| {
        c.split(';')
            .next()
            .is_some_and(|m| m.trim().eq_ignore_ascii_case("text/event-stream"))
    })
}

/// How a relayed stream ended.
#[derive(Debug, Default, PartialEq)]
pub struct Relayed {
    /// The answer's text: every `choices[0].delta.content`, in order.
    pub text: String,
    /// `id`, `created` and `model` of the last chunk (for the report chunk).
    pub last: Option<Value>,
    /// The upstream sent `data: [DONE]` (it is not forwarded: the caller
    /// writes the report chunk, then `[DONE]`).
    pub done: bool,
    /// The upstream stream broke (read error or timeout): what happened.
    pub error: Option<String>,
    /// The client went away.
    pub client_gone: bool,
    /// The last line written ended an event (a blank line).
    pub at_boundary: bool,
    /// The answer was longer than [`MAX_ANSWER_BYTES`]: `text` holds its
    /// start (the client got all of it).
    pub truncated: bool,
}

/// Relays server-sent events from `from` to `to` line by line, flushing
/// at each event's end, and collects the answer's text, until
/// `data: [DONE]`, the end of the stream, a read error or a write error.
pub fn relay_events(from: &mut impl BufRead, to: &mut impl Write) -> Relayed {
    let mut out = Relayed {
        at_boundary: true,
        ..Relayed::default()
    };
    let mut line = Vec::new();
    loop {
        line.clear();
        match Read::take(&mut *from, MAX_SSE_LINE as u64 + 1).read_until(b'\n', &mut line) {
            Ok(0) => return out,
            Ok(n) if n > MAX_SSE_LINE => {
                out.error = Some(format!(
                    "the upstream sent an event line over {MAX_SSE_LINE} bytes"
                ));
                return out;
            }
            Ok(_) => {}
            Err(e) => {
                out.error = Some(format!("the upstream stream broke: {e}"));
                return out;
            }
        }
        let text = String::from_utf8_lossy(&line);
        let trimmed = text.trim_end_matches(['\r', '\n']);
        if let Some(data) = trimmed.strip_prefix("data:") {
            let data = data.strip_prefix(' ').unwrap_or(data);
            if data.trim() == "[DONE]" {
                out.done = true;
                return out;
            }
            if let Ok(chunk) = serde_json::from_str::<Value>(data) {
                if let Some(piece) = chunk
                    .pointer("/choices/0/delta/content")
                    .and_then(Value::as_str)
                {
                    // The answer kept for the store is bounded (a message's
                    // limit); the stream itself is relayed whole.
                    if out.text.len() + piece.len() <= MAX_ANSWER_BYTES {
                        out.text.push_str(piece);
                    } else {
                        out.truncated = true;
                    }
                }
                if chunk.get("id").is_some() {
                    out.last = Some(json!({
                        "id": chunk.get("id"),
                        "created": chunk.get("created"),
                        "model": chunk.get("model"),
                    }));
                }
            }
        }
        let boundary = trimmed.is_empty();
        let written = to
            .write_all(&line)
            .and_then(|()| if boundary { to.flush() } else { Ok(()) });
        if written.is_err() {
            out.client_gone = true;
            return out;
        }
        out.at_boundary = boundary;
    }
}

/// One server-sent event carrying `data` (a JSON value), ended.
pub fn event(data: &Value) -> Vec<u8> {
    format!("data: {data}\n\n").into_bytes()
}

/// The end-of-stream event.
pub const DONE: &[u8] = b"data: [DONE]\n\n";

/// What the proxy did for one request: the `sekha_metadata` object of a
/// non-streamed answer and of a stream's last chunk.
#[derive(Debug, Default)]
pub struct Report {
    /// The citations of the injected messages, in rank order.
    pub citations: Vec<memdb::Citation>,
    /// Tokens of the injected messages (the context's `token_count`).
    pub context_tokens: usize,
    /// Whether a context system message was sent upstream.
    pub injected: bool,
    /// The stored exchange.
    pub stored: Option<uuid::Uuid>,
    /// What degraded (context assembly or storage failed, injection off).
    pub notes: Vec<String>,
}

impl Report {
    /// `{context_used: [{label, folder, timestamp, conversation_id,
    /// message_id}], context_count, context_tokens, injected,
    /// stored_conversation_id, notes}`.
    pub fn to_json(&self) -> Value {
        json!({
            "context_used": self.citations,
            "context_count": self.citations.len(),
            "context_tokens": self.context_tokens,
            "injected": self.injected,
            "stored_conversation_id": self.stored,
            "notes": self.notes,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_are_relayed_and_their_text_collected() {
        let input = "data: {\"id\":\"c1\",\"created\":7,\"model\":\"m\",\"choices\":[{\"delta\":{\"role\":\"assistant\"}}]}\n\n\
                     : a comment\n\
                     data: {\"id\":\"c1\",\"choices\":[{\"delta\":{\"content\":\"Hel\"}}]}\r\n\r\n\
                     data:{\"id\":\"c1\",\"choices\":[{\"delta\":{\"content\":\"lo\"}}]}\n\n\
                     data: [DONE]\n\n\
                     data: {\"never\":\"read\"}\n\n";
        let mut out = Vec::new();
        let r = relay_events(&mut input.as_bytes(), &mut out);
        assert!(r.done && r.error.is_none() && !r.client_gone);
        assert_eq!(r.text, "Hello");
        assert_eq!(r.last.unwrap()["id"], "c1");
        let out = String::from_utf8(out).unwrap();
        assert!(out.ends_with("\"lo\"}}]}\n\n"), "{out}");
        assert!(out.contains(": a comment\n"));
        assert!(!out.contains("[DONE]") && !out.contains("never"));
    }

    #[test]
    fn a_long_answer_is_relayed_whole_and_kept_bounded() {
        let piece = "x".repeat(64 << 10);
        let event =
            format!("data: {{\"choices\":[{{\"delta\":{{\"content\":\"{piece}\"}}}}]}}\n\n");
        let input = event.repeat(40); // 2.5 MiB of answer
        let mut out = Vec::new();
        let r = relay_events(&mut input.as_bytes(), &mut out);
        assert_eq!(out.len(), input.len(), "the client gets every event");
        assert!(r.truncated);
        assert_eq!(r.text.len(), MAX_ANSWER_BYTES);
    }

    #[test]
    fn a_stream_without_done_ends_at_eof_and_a_broken_client_is_noticed() {
        let mut out = Vec::new();
        let r = relay_events(&mut "data: {\"x\":1}\n".as_bytes(), &mut out);
        assert!(!r.done && r.error.is_none() && !r.at_boundary);
        struct Gone;
        impl Write for Gone {
            fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
                Err(std::io::Error::other("gone"))
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let r = relay_events(&mut "data: {}\n\n".as_bytes(), &mut Gone);
        assert!(r.client_gone);
    }

    #[test]
    fn settings_are_checked_and_merged() {
        assert!(ProxySettings::default().build().unwrap().is_none());
        let mut s = ProxySettings {
            upstream_url: Some("http://127.0.0.1:9/v1/".into()),
            ..ProxySettings::default()
        };
        let up = s.build().unwrap().unwrap();
        assert_eq!(up.url("/models"), "http://127.0.0.1:9/v1/models");
        assert_eq!(up.context_budget, 2000);
        assert_eq!(up.folder, "/auto-captured");
        s.upstream_key = Some("sk-upstream-secret".into());
        assert!(!format!("{s:?}").contains("sk-upstream"));
        for bad in ["localhost:11434", "http://", "http://h/v1?x=1"] {
            s.upstream_url = Some(bad.into());
            assert!(s.build().is_err(), "{bad}");
        }
        s.upstream_url = Some("http://h/v1".into());
        s.folder = Some("captured".into());
        assert!(s.build().is_err());
        let file: ProxySettings =
            toml::from_str("upstream_url = \"http://a/v1\"\nfolder = \"/chat\"").unwrap();
        let merged = ProxySettings {
            folder: Some("/other".into()),
            ..ProxySettings::default()
        }
        .or(&file);
        assert_eq!(merged.upstream_url.as_deref(), Some("http://a/v1"));
        assert_eq!(merged.folder.as_deref(), Some("/other"));
        assert!(toml::from_str::<ProxySettings>("upstream = 1").is_err());
    }
}
