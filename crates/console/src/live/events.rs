//! The gateway's server-sent events, read off a streaming response.

use countersign_proto::approvals::PlanSummary;
use reqwest::Response;

use crate::error::ConsoleError;

/// Bytes an event may take before the stream is treated as broken.
const MAX_EVENT: usize = 4 * 1024 * 1024;

#[derive(Debug, Clone, PartialEq)]
pub enum QueueEvent {
    /// A plan was created or changed; `id` is the revision to resume after, if the event had one.
    Plan {
        id: Option<String>,
        summary: Box<PlanSummary>,
    },
    /// The gateway cannot resume from where we were: list the queue again.
    Resync { id: Option<String> },
}

pub struct EventStream {
    response: Response,
    buffer: Vec<u8>,
    /// How far `buffer` is known to hold no complete event, so a trickled event is scanned once.
    scanned: usize,
    url: String,
}

impl EventStream {
    pub fn new(response: Response, url: String) -> EventStream {
        EventStream {
            response,
            buffer: Vec::new(),
            scanned: 0,
            url,
        }
    }

    /// The next event; `Ok(None)` when the gateway closed the stream. Heartbeats are skipped.
    pub async fn next(&mut self) -> Result<Option<QueueEvent>, ConsoleError> {
        loop {
            while let Some(end) = find_blank_line(&self.buffer, self.scanned) {
                let block: Vec<u8> = self.buffer.drain(..end).collect();
                self.scanned = 0;
                if let Some(event) = parse(&String::from_utf8_lossy(&block)) {
                    return Ok(Some(event));
                }
            }
            // A separator may straddle the next chunk: rescan only its last three bytes.
            self.scanned = self.buffer.len().saturating_sub(3);
            let chunk = self
                .response
                .chunk()
                .await
                .map_err(|e| ConsoleError::Unreachable {
                    url: self.url.clone(),
                    reason: e.to_string(),
                })?;
            let Some(chunk) = chunk else {
                return Ok(None);
            };
            if self.buffer.len() + chunk.len() > MAX_EVENT {
                return Err(ConsoleError::Protocol(
                    "an event larger than 4 MiB".to_owned(),
                ));
            }
            self.buffer.extend_from_slice(&chunk);
        }
    }
}

/// The end (exclusive, separator included) of the first complete event block at or after `from`.
fn find_blank_line(buffer: &[u8], from: usize) -> Option<usize> {
    let text = buffer;
    (from..text.len()).find_map(|i| {
        if text[i..].starts_with(b"\n\n") {
            Some(i + 2)
        } else if text[i..].starts_with(b"\r\n\r\n") {
            Some(i + 4)
        } else {
            None
        }
    })
}

/// The event in `block`; `None` for comments (heartbeats), unknown types, and a plan summary
/// this console cannot read (skipped, so that one bad event cannot wedge the stream).
fn parse(block: &str) -> Option<QueueEvent> {
    let (mut id, mut event, mut data) = (None, None, String::new());
    for line in block.lines() {
        let (field, value) = line.split_once(':').unwrap_or((line, ""));
        let value = value.strip_prefix(' ').unwrap_or(value);
        match field {
            "id" => id = Some(value.to_owned()),
            "event" => event = Some(value.to_owned()),
            "data" => {
                if !data.is_empty() {
                    data.push('\n');
                }
                data.push_str(value);
            }
            _ => {}
        }
    }
    match event.as_deref() {
        Some("resync") => Some(QueueEvent::Resync { id }),
        Some("plan.created" | "plan.updated") => match serde_json::from_str(&data) {
            Ok(summary) => Some(QueueEvent::Plan {
                id,
                summary: Box::new(summary),
            }),
            Err(e) => {
                tracing::warn!(error = %e, "skipped an event whose plan summary does not parse");
                None
            }
        },
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heartbeats_and_unknown_events_are_skipped() {
        assert_eq!(parse(": heartbeat\n\n"), None);
        assert_eq!(parse("event: plan.archived\ndata: {}\n\n"), None);
        assert_eq!(
            parse("id: 7\nevent: resync\ndata: {}\n\n"),
            Some(QueueEvent::Resync {
                id: Some("7".into())
            })
        );
        assert_eq!(parse("event: plan.created\ndata: {not json\n\n"), None);
        assert_eq!(find_blank_line(b"a\r\n\r\nb", 0), Some(5));
        assert_eq!(find_blank_line(b"ab\n\ncd", 3), None);
    }
}
