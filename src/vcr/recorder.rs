//! Recording: the collector of finished exchanges and the tee body that
//! streams an upstream response to the client while copying each chunk, with
//! its time offset, for the cassette.

use std::future::Future as _;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use http::HeaderMap;
use http_body::{Body as HttpBody, Frame};
use hyper::body::Incoming;

use super::body::{body_from_bytes, decode_content_encoding};
use super::cassette::{Body, Exchange, RecordedRequest, RecordedResponse, Timing};
use super::redact::Redactor;
use super::sse::{SseParser, is_event_stream};

/// The boxed error type of proxy bodies.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Collects finished exchanges; seqs follow request start order.
#[derive(Debug)]
pub struct Recorder {
    started: Instant,
    next_seq: AtomicU64,
    exchanges: Mutex<Vec<Exchange>>,
}

impl Recorder {
    /// A recorder whose first seq is `first_seq` (after an existing cassette's exchanges).
    pub fn new(first_seq: u64) -> Self {
        Recorder {
            started: Instant::now(),
            next_seq: AtomicU64::new(first_seq),
            exchanges: Mutex::new(Vec::new()),
        }
    }

    /// Reserves the next seq and returns it with the start offset in ms.
    pub fn begin(&self) -> (u64, u64) {
        let seq = self.next_seq.fetch_add(1, Ordering::Relaxed);
        (seq, millis(self.started.elapsed()))
    }

    /// Stores a finished exchange.
    pub fn push(&self, exchange: Exchange) {
        // A poisoned lock only means another request panicked mid-push; keep its data.
        let mut all = self.exchanges.lock().unwrap_or_else(|p| p.into_inner());
        all.push(exchange);
    }

    /// Every finished exchange, ordered by seq.
    pub fn take_all(&self) -> Vec<Exchange> {
        let mut all =
            std::mem::take(&mut *self.exchanges.lock().unwrap_or_else(|p| p.into_inner()));
        all.sort_by_key(|e| e.seq);
        all
    }
}

/// Milliseconds, saturating.
pub fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// What is known about an exchange when its response headers arrive.
pub struct PendingExchange {
    /// Reserved seq.
    pub seq: u64,
    /// Start offset from the recording start.
    pub start_ms: u64,
    /// When the request started.
    pub started: Instant,
    /// Time to the response headers.
    pub ttfb_ms: u64,
    /// The request as it will be stored.
    pub request: RecordedRequest,
    /// The match key of the request.
    pub match_key: String,
    /// Response status.
    pub status: u16,
    /// Response headers as received (filtered when stored).
    pub headers: HeaderMap,
}

impl PendingExchange {
    /// The exchange for a request that never got a response (refused, TLS error, timeout).
    pub fn failed(self, error: String, redactor: &Redactor) -> Exchange {
        let total = millis(self.started.elapsed());
        let mut exchange = Exchange {
            seq: self.seq,
            request: self.request,
            response: RecordedResponse {
                status: 0,
                headers: Default::default(),
                body: None,
                events: None,
                truncated: false,
                error: Some(error),
            },
            timing: Timing {
                start_ms: self.start_ms,
                ttfb_ms: total,
                total_ms: total,
            },
            match_key: self.match_key,
        };
        redactor.scrub_exchange(&mut exchange);
        exchange
    }

    /// The exchange for a response whose body arrived as `chunks` (offset ms after headers).
    fn finish(
        self,
        chunks: Vec<(u64, Bytes)>,
        truncated: bool,
        error: Option<String>,
        redactor: &Redactor,
    ) -> Exchange {
        let total_ms = millis(self.started.elapsed());
        let header = |name: &str| self.headers.get(name).and_then(|v| v.to_str().ok());
        let content_type = header("content-type");
        let encoding = header("content-encoding").filter(|e| !e.eq_ignore_ascii_case("identity"));
        let mut error = error;
        let (body, events) = if is_event_stream(content_type) && encoding.is_none() {
            let mut parser = SseParser::new();
            let mut events = Vec::new();
            let mut last = 0;
            for (t, chunk) in &chunks {
                events.extend(parser.push(chunk, *t));
                last = *t;
            }
            // An event cut in half by the upstream was never delivered whole: drop it.
            if !truncated {
                events.extend(parser.finish(last));
            }
            (None, Some(events))
        } else {
            let mut raw = BytesMut::new();
            for (_, chunk) in &chunks {
                raw.extend_from_slice(chunk);
            }
            let body = match decode_content_encoding(encoding, &raw) {
                Ok(decoded) => body_from_bytes(content_type, &decoded),
                // A compressed body cut short cannot be decoded; keep the bytes.
                Err(e) => {
                    error.get_or_insert(format!("cannot decode {encoding:?} body: {e}"));
                    body_from_bytes(None, &raw)
                }
            };
            if is_event_stream(content_type) {
                // Compressed event streams lose per-event timing: parse the whole body at the end.
                let text = match &body {
                    Some(Body::Text(t)) => t.clone().into_bytes(),
                    _ => Vec::new(),
                };
                let mut parser = SseParser::new();
                let mut events = parser.push(&text, total_ms);
                events.extend(parser.finish(total_ms));
                (None, Some(events))
            } else {
                (body, None)
            }
        };
        let mut exchange = Exchange {
            seq: self.seq,
            response: RecordedResponse {
                status: self.status,
                headers: redactor.response_headers(&self.headers),
                body,
                events,
                truncated,
                error,
            },
            request: self.request,
            timing: Timing {
                start_ms: self.start_ms,
                ttfb_ms: self.ttfb_ms,
                total_ms,
            },
            match_key: self.match_key,
        };
        redactor.scrub_exchange(&mut exchange);
        exchange
    }
}

/// Streams an upstream body to the client frame by frame (never buffered) and
/// hands a copy to the recorder when it ends, fails, times out or is dropped.
pub struct TeeBody {
    inner: Incoming,
    pending: Option<PendingExchange>,
    chunks: Vec<(u64, Bytes)>,
    headers_at: Instant,
    read_timeout: Duration,
    idle: Pin<Box<tokio::time::Sleep>>,
    sink: Arc<dyn ExchangeSink>,
}

/// Where finished exchanges go (the proxy's recorder plus its redactor).
pub trait ExchangeSink: Send + Sync {
    /// The redactor to scrub with.
    fn redactor(&self) -> &Redactor;
    /// Stores a finished exchange.
    fn store(&self, exchange: Exchange);
}

impl TeeBody {
    /// Wraps `inner`; `pending` describes the exchange being recorded.
    pub fn new(
        inner: Incoming,
        pending: PendingExchange,
        read_timeout: Duration,
        sink: Arc<dyn ExchangeSink>,
    ) -> Self {
        TeeBody {
            inner,
            pending: Some(pending),
            chunks: Vec::new(),
            headers_at: Instant::now(),
            read_timeout,
            idle: Box::pin(tokio::time::sleep(read_timeout)),
            sink,
        }
    }

    fn complete(&mut self, truncated: bool, error: Option<String>) {
        if let Some(pending) = self.pending.take() {
            let chunks = std::mem::take(&mut self.chunks);
            let exchange = pending.finish(chunks, truncated, error, self.sink.redactor());
            self.sink.store(exchange);
        }
    }
}

impl HttpBody for TeeBody {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = &mut *self;
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(data) = frame.data_ref() {
                    this.chunks
                        .push((millis(this.headers_at.elapsed()), data.clone()));
                }
                let deadline = tokio::time::Instant::now() + this.read_timeout;
                this.idle.as_mut().reset(deadline);
                // hyper may stop polling once the length is reached; record now.
                if this.inner.is_end_stream() {
                    this.complete(false, None);
                }
                Poll::Ready(Some(Ok(frame)))
            }
            Poll::Ready(Some(Err(e))) => {
                let message = super::upstream::error_chain(&e);
                this.complete(true, Some(message));
                Poll::Ready(Some(Err(Box::new(e))))
            }
            Poll::Ready(None) => {
                this.complete(false, None);
                Poll::Ready(None)
            }
            Poll::Pending => {
                if this.idle.as_mut().poll(cx).is_ready() {
                    let message = format!(
                        "upstream sent nothing for {}s mid-body",
                        this.read_timeout.as_secs()
                    );
                    this.complete(true, Some(message.clone()));
                    return Poll::Ready(Some(Err(message.into())));
                }
                Poll::Pending
            }
        }
    }
}

impl Drop for TeeBody {
    fn drop(&mut self) {
        // The client went away, or the proxy stopped, before the body ended.
        self.complete(
            true,
            Some("response not finished: client disconnected or proxy stopped".into()),
        );
    }
}
