//! Requests per second per token (`rate_limited`, 429, with `Retry-After`). Agent tokens and
//! requests without a token are limited by default; approver tokens only when configured, since a
//! console (and `make bench`) polls the queue thousands of times a second with one token.

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::connect_info::Connected;
use axum::extract::{ConnectInfo, Request, State};
use axum::http::header::RETRY_AFTER;
use axum::http::HeaderValue;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::serve::IncomingStream;
use countersign_proto::ErrorCode;
use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};
use serde_json::json;
use tokio::net::TcpListener;

use crate::error::ApiError;
use crate::limits::{Limits, Rate};
use crate::tls::TlsListener;
use crate::{auth, AppState};

/// The prefix of the tokens `enroll` issues to approvers. Telling them apart by prefix costs no
/// lookup; a forged `csp_` token gains nothing but the `unauthenticated` answer.
const APPROVER_TOKEN_PREFIX: &str = "csp_";

type Limiter = DefaultKeyedRateLimiter<String>;

/// The address a connection comes from, over plain TCP and over TLS alike: the bucket of the
/// requests on it that carry no token. Serve the app with
/// `into_make_service_with_connect_info::<Peer>()`.
#[derive(Debug, Clone, Copy)]
pub struct Peer(pub IpAddr);

impl Connected<IncomingStream<'_, TcpListener>> for Peer {
    fn connect_info(stream: IncomingStream<'_, TcpListener>) -> Peer {
        Peer(stream.remote_addr().ip())
    }
}

impl Connected<IncomingStream<'_, TlsListener>> for Peer {
    fn connect_info(stream: IncomingStream<'_, TlsListener>) -> Peer {
        Peer(stream.remote_addr().ip())
    }
}

pub struct Throttle {
    callers: Option<Limiter>,
    approvers: Option<Limiter>,
    clock: DefaultClock,
}

impl Throttle {
    pub fn new(limits: &Limits) -> Throttle {
        let limiter = |rate: Option<Rate>| {
            rate.map(|r| RateLimiter::keyed(Quota::per_second(r.per_second).allow_burst(r.burst)))
        };
        Throttle {
            callers: limiter(limits.rate),
            approvers: limiter(limits.approver_rate),
            clock: DefaultClock::default(),
        }
    }

    /// Forgets keys whose buckets are full again, so tokens seen once do not pile up in memory.
    pub fn forget_idle(&self) {
        for limiter in [&self.callers, &self.approvers].into_iter().flatten() {
            limiter.retain_recent();
            limiter.shrink_to_fit();
        }
    }

    /// How long the caller of `request` must wait, if it is over its rate.
    fn wait(&self, request: &Request) -> Option<Duration> {
        let (limiter, key) = match auth::bearer(request.headers()) {
            Ok(token) if token.starts_with(APPROVER_TOKEN_PREFIX) => {
                (self.approvers.as_ref()?, format!("token:{token}"))
            }
            Ok(token) => (self.callers.as_ref()?, format!("token:{token}")),
            Err(_) => {
                let peer = request
                    .extensions()
                    .get::<ConnectInfo<Peer>>()
                    .map_or_else(|| "unknown".to_owned(), |c| c.0 .0.to_string());
                (self.callers.as_ref()?, format!("peer:{peer}"))
            }
        };
        limiter
            .check_key(&key)
            .err()
            .map(|not_until| not_until.wait_time_from(self.clock.now()))
    }
}

impl Default for Throttle {
    fn default() -> Throttle {
        Throttle::new(&Limits::default())
    }
}

pub async fn limit(State(state): State<Arc<AppState>>, request: Request, next: Next) -> Response {
    let Some(wait) = state.throttle.wait(&request) else {
        return next.run(request).await;
    };
    let seconds = wait.as_secs_f64().ceil().max(1.0) as u64;
    let mut response = ApiError::new(
        ErrorCode::RateLimited,
        format!("Too many requests with this token; try again in {seconds} s."),
    )
    .with_details(json!({ "retry_after_seconds": seconds }))
    .into_response();
    response
        .headers_mut()
        .insert(RETRY_AFTER, HeaderValue::from(seconds));
    response
}
