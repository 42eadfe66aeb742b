//! Replay: rebuilds a recorded response, re-framing server-sent events one by
//! one, instantly or at their recorded offsets.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body::{Body as HttpBody, Frame};

use super::body::body_to_bytes;
use super::cassette::Exchange;
use super::recorder::BoxError;
use super::sse::encode_event;

/// How fast replay serves a response.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Pace {
    /// As fast as possible.
    #[default]
    Instant,
    /// Headers after the recorded time to first byte, each event at its recorded offset.
    Recorded,
}

/// The body of a replayed response.
pub struct ReplayBody {
    exchange: Arc<Exchange>,
    /// Next event to send; for a plain body, 0 until it is sent.
    next: usize,
    pace: Pace,
    origin: tokio::time::Instant,
    sleep: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl ReplayBody {
    /// The body of `exchange`'s response, starting now.
    pub fn new(exchange: Arc<Exchange>, pace: Pace) -> Self {
        ReplayBody {
            exchange,
            next: 0,
            pace,
            origin: tokio::time::Instant::now(),
            sleep: None,
        }
    }
}

impl HttpBody for ReplayBody {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = &mut *self;
        let response = &this.exchange.response;
        if let Some(events) = &response.events {
            if let Some(event) = events.get(this.next) {
                if this.pace == Pace::Recorded {
                    let due = this.origin + Duration::from_millis(event.t_ms);
                    if due > tokio::time::Instant::now() {
                        let sleep = this
                            .sleep
                            .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(due)));
                        if sleep.as_mut().poll(cx).is_pending() {
                            return Poll::Pending;
                        }
                    }
                    this.sleep = None;
                }
                this.next += 1;
                return Poll::Ready(Some(Ok(Frame::data(Bytes::from(encode_event(event))))));
            }
        } else if this.next == 0 {
            this.next = 1;
            if let Some(body) = &response.body {
                return Poll::Ready(Some(Ok(Frame::data(Bytes::from(body_to_bytes(body))))));
            }
        }
        if response.truncated {
            // Reproduce the cut: the client sees the stream end abnormally, as recorded.
            return Poll::Ready(Some(Err(
                "recorded response was cut short by the upstream".into()
            )));
        }
        Poll::Ready(None)
    }

    fn is_end_stream(&self) -> bool {
        let response = &self.exchange.response;
        !response.truncated
            && match &response.events {
                Some(events) => self.next >= events.len(),
                None => self.next > 0 || response.body.is_none(),
            }
    }
}
