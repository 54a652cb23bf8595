//! Requests per second (`rate_limited`, 429, with `Retry-After`), per caller: the agent or approver
//! a token belongs to, or the peer address for requests whose token is missing or unknown, so
//! inventing tokens buys no fresh buckets. Agents and peers are limited by default; approvers only
//! when configured, since a console (and `make bench`) polls the queue thousands of times a second.
//! The token is resolved here, once per request; the extractors in [`crate::auth`] read the result.
//! Serve the app with `into_make_service_with_connect_info::<SocketAddr>()` (over TCP or TLS) so
//! that requests without a token are bucketed by their peer.

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use std::net::SocketAddr;

use axum::extract::{ConnectInfo, Request, State};
use axum::http::header::RETRY_AFTER;
use axum::http::HeaderValue;
use axum::middleware::Next;
use axum::response::Response;
use countersign_engine::accounts::{self, Caller};
use countersign_engine::limits::{Limits, Rate};
use countersign_engine::ApiError;
use countersign_proto::ErrorCode;
use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};
use serde_json::json;

use crate::auth;
use crate::error::respond;
use crate::AppState;

type Limiter = DefaultKeyedRateLimiter<String>;

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

    /// How long a request from `caller` (`None`: no known token, from `peer`) must wait, if it
    /// is over its rate.
    fn wait(&self, caller: Option<&Caller>, peer: Option<IpAddr>) -> Option<Duration> {
        let (limiter, key) = match caller {
            Some(Caller::Approver(approver)) => (
                self.approvers.as_ref()?,
                format!("approver:{}", approver.id),
            ),
            Some(Caller::Agent(agent)) => (self.callers.as_ref()?, format!("agent:{}", agent.id)),
            None => (
                self.callers.as_ref()?,
                format!(
                    "peer:{}",
                    peer.map_or_else(|| "unknown".to_owned(), |p| p.to_string())
                ),
            ),
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

/// Resolves the request's token (one lookup), limits its caller, and leaves the caller in the
/// request's extensions for [`crate::auth`]'s extractors.
pub async fn limit(
    State(state): State<Arc<AppState>>,
    mut request: Request,
    next: Next,
) -> Response {
    let caller = match auth::bearer(request.headers()) {
        Ok(token) => match accounts::by_token(state.engine.store.pool(), token).await {
            Ok(caller) => caller,
            Err(e) => return respond(ApiError::from(e)),
        },
        Err(_) => None,
    };
    let peer = request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|c| c.0.ip());
    if let Some(wait) = state.throttle.wait(caller.as_ref(), peer) {
        return rate_limited(wait);
    }
    if let Some(caller) = caller {
        request.extensions_mut().insert(caller);
    }
    next.run(request).await
}

fn rate_limited(wait: Duration) -> Response {
    let seconds = wait.as_secs_f64().ceil().max(1.0) as u64;
    let mut response = respond(
        ApiError::new(
            ErrorCode::RateLimited,
            format!("Too many requests; try again in {seconds} s."),
        )
        .with_details(json!({ "retry_after_seconds": seconds })),
    );
    response
        .headers_mut()
        .insert(RETRY_AFTER, HeaderValue::from(seconds));
    response
}
