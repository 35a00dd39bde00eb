//! Streamed response bodies written by blocking code: a bounded channel of
//! chunks between a `spawn_blocking` writer and the connection, so a large
//! export never sits in memory whole (at most [`CHUNKS`] chunks of
//! [`CHUNK_BYTES`] are in flight; the writer waits for the client).
//!
//! If the writer fails midway, the body ends with an error: the connection
//! is aborted and the client sees a truncated transfer, never a complete
//! but partial document.

use std::io::Write;
use std::pin::Pin;
use std::task::{Context, Poll};

use axum::body::{Body, Bytes};
use tokio::sync::mpsc;

/// Bytes buffered before a chunk is sent.
pub const CHUNK_BYTES: usize = 64 * 1024;
/// Chunks in flight between the writer and the connection.
pub const CHUNKS: usize = 4;

type Chunk = Result<Bytes, std::io::Error>;

/// The writing end: an `io::Write` that sends full chunks, blocking while
/// the channel is full. Use it on a blocking thread only.
pub struct ChannelWriter {
    tx: mpsc::Sender<Chunk>,
    buf: Vec<u8>,
}

impl ChannelWriter {
    fn send(&mut self) -> std::io::Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let chunk = Bytes::from(std::mem::replace(
            &mut self.buf,
            Vec::with_capacity(CHUNK_BYTES),
        ));
        self.tx
            .blocking_send(Ok(chunk))
            .map_err(|_| std::io::Error::other("the client went away"))
    }

    /// Sends what is buffered and ends the body.
    pub fn finish(mut self) -> std::io::Result<()> {
        self.send()
    }

    /// Ends the body with an error (the connection is aborted).
    pub fn fail(self, why: String) {
        let _ = self.tx.blocking_send(Err(std::io::Error::other(why)));
    }
}

impl Write for ChannelWriter {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        self.buf.extend_from_slice(data);
        if self.buf.len() >= CHUNK_BYTES {
            self.send()?;
        }
        Ok(data.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.send()
    }
}

/// The reading end as a response body.
struct ChannelBody(mpsc::Receiver<Chunk>);

impl http_body::Body for ChannelBody {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, std::io::Error>>> {
        self.0
            .poll_recv(cx)
            .map(|c| c.map(|c| c.map(http_body::Frame::data)))
    }
}

/// A body and the writer that feeds it.
pub fn channel() -> (ChannelWriter, Body) {
    let (tx, rx) = mpsc::channel(CHUNKS);
    (
        ChannelWriter {
            tx,
            buf: Vec::with_capacity(CHUNK_BYTES),
        },
        Body::new(ChannelBody(rx)),
    )
}

/// Writes what it is given as the inside of a JSON string (escaped, no
/// quotes), so a document can be streamed as one string field. Input must
/// be UTF-8 (split anywhere: escaping works byte by byte, and only ASCII
/// bytes are ever escaped).
pub struct JsonStringWriter<'a, W: Write>(pub &'a mut W);

impl<W: Write> Write for JsonStringWriter<'_, W> {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        let mut start = 0;
        for (i, &b) in data.iter().enumerate() {
            let esc: &[u8] = match b {
                b'"' => b"\\\"",
                b'\\' => b"\\\\",
                b'\n' => b"\\n",
                b'\r' => b"\\r",
                b'\t' => b"\\t",
                0..=0x1f => {
                    self.0.write_all(&data[start..i])?;
                    write!(self.0, "\\u{b:04x}")?;
                    start = i + 1;
                    continue;
                }
                _ => continue,
            };
            self.0.write_all(&data[start..i])?;
            self.0.write_all(esc)?;
            start = i + 1;
        }
        self.0.write_all(&data[start..])?;
        Ok(data.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaped_text_reads_back_as_the_json_string() {
        let text = "line \"one\"\n\ttab \\ back\u{1} é 日本";
        let mut out = Vec::new();
        out.push(b'"');
        // Split in odd places, even inside a multi-byte character.
        for piece in text.as_bytes().chunks(3) {
            JsonStringWriter(&mut out).write_all(piece).unwrap();
        }
        out.push(b'"');
        let back: String = serde_json::from_slice(&out).unwrap();
        assert_eq!(back, text);
    }
}
