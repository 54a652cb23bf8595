//! Requests per second (`rate_limited`, 429, with `Retry-After`), per caller: the agent or approver
//! a token belongs to, or the peer address for requests whose token is missing or unknown, so
//! inventing tokens buys no fresh buckets. Agents, peers and approvers are all limited by default,
//! approvers to a rate far above what a console needs, so one stolen approver token cannot keep
//! the store busy (`make bench` turns it off to measure the gateway itself).
//! The token is resolved here, once per request; the extractors in [`crate::auth`] read the result.
//! Serve the app with `into_make_service_with_connect_info::<SocketAddr>()` (over TCP or TLS) so
//! that requests without a token are bucketed by their peer.

use std::collections::HashSet;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use std::net::SocketAddr;

use axum::extract::{ConnectInfo, Request, State};
use axum::http::header::RETRY_AFTER;
use axum::http::{HeaderValue, Method};
use axum::middleware::Next;
use axum::response::Response;
use countersign_engine::accounts::limits::{Limits, Rate};
use countersign_engine::accounts::{self, Caller};
use countersign_engine::ApiError;
use countersign_proto::ErrorCode;
use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};
use serde_json::json;
use sha2::{Digest, Sha256};

use crate::auth;
use crate::error::respond;
use crate::AppState;

type Limiter = DefaultKeyedRateLimiter<String>;

/// Tokens remembered as valid, at most: past it the memory starts over (a token forgotten pays
/// its peer's bucket once more, nothing else).
const KNOWN_TOKENS: usize = 10_000;

pub struct Throttle {
    callers: Option<Limiter>,
    approvers: Option<Limiter>,
    clock: DefaultClock,
    /// Hashes of tokens recently found valid: any other token pays its peer's bucket before the
    /// store is asked about it, so made-up tokens cost the store nothing once the peer is over.
    known: Mutex<HashSet<[u8; 32]>>,
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
            known: Mutex::new(HashSet::new()),
        }
    }

    /// Forgets keys whose buckets are full again, so tokens seen once do not pile up in memory.
    pub fn forget_idle(&self) {
        for limiter in [&self.callers, &self.approvers].into_iter().flatten() {
            limiter.retain_recent();
            limiter.shrink_to_fit();
        }
    }

    fn is_known(&self, token: &[u8; 32]) -> bool {
        let known = self.known.lock().unwrap_or_else(|p| p.into_inner());
        known.contains(token)
    }

    fn remember(&self, token: [u8; 32]) {
        let mut known = self.known.lock().unwrap_or_else(|p| p.into_inner());
        if known.len() >= KNOWN_TOKENS {
            known.clear();
        }
        known.insert(token);
    }

    /// How long a request from `caller` must wait, if it is over its rate.
    fn wait(&self, caller: &Caller) -> Option<Duration> {
        match caller {
            Caller::Approver(approver) => Self::over(
                self.approvers.as_ref()?,
                format!("approver:{}", approver.id),
                &self.clock,
            ),
            Caller::Agent(agent) => Self::over(
                self.callers.as_ref()?,
                format!("agent:{}", agent.id),
                &self.clock,
            ),
        }
    }

    /// How long a request from `peer` that carries no known token must wait, if it is over.
    fn wait_peer(&self, peer: Option<IpAddr>) -> Option<Duration> {
        let key = peer.map_or_else(|| "unknown".to_owned(), peer_key);
        Self::over(self.callers.as_ref()?, format!("peer:{key}"), &self.clock)
    }

    fn over(limiter: &Limiter, key: String, clock: &DefaultClock) -> Option<Duration> {
        limiter
            .check_key(&key)
            .err()
            .map(|not_until| not_until.wait_time_from(clock.now()))
    }
}

/// The bucket a peer address shares: the address itself for IPv4, its /64 for IPv6, which one
/// host is usually given whole.
fn peer_key(ip: IpAddr) -> String {
    match ip {
        IpAddr::V4(v4) => v4.to_string(),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => v4.to_string(),
            None => {
                let s = v6.segments();
                format!("{:x}:{:x}:{:x}:{:x}::/64", s[0], s[1], s[2], s[3])
            }
        },
    }
}

impl Default for Throttle {
    fn default() -> Throttle {
        Throttle::new(&Limits::default())
    }
}

/// Resolves the request's token (one lookup), limits its caller, and leaves the caller in the
/// request's extensions for [`crate::auth`]'s extractors. A request without a token, or with one
/// not recently found valid, pays its peer's bucket first: past the peer's rate, made-up tokens
/// are refused without a read of the store.
pub async fn limit(
    State(state): State<Arc<AppState>>,
    mut request: Request,
    next: Next,
) -> Response {
    let peer = request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|c| c.0.ip());
    let token = auth::bearer(request.headers()).ok();
    let hash: Option<[u8; 32]> = token.map(|t| Sha256::digest(t.as_bytes()).into());
    if !hash.is_some_and(|h| state.throttle.is_known(&h)) {
        if let Some(wait) = state.throttle.wait_peer(peer) {
            return rate_limited(wait);
        }
    }
    // A read may be served the caller found for its token a moment ago; a write asks the store.
    let reads = matches!(*request.method(), Method::GET | Method::HEAD);
    let cached = hash.filter(|_| reads).and_then(|h| state.callers.get(&h));
    let caller = match (token, cached) {
        (_, Some(caller)) => Some(caller),
        (Some(token), None) => {
            let stamp = state.callers.stamp();
            match accounts::by_token(state.engine.store.pool(), token).await {
                Ok(found) => {
                    if let (Some(caller), Some(hash)) = (&found, hash) {
                        state.callers.put(hash, stamp, caller.clone());
                    }
                    found
                }
                Err(e) => return respond(ApiError::from(e)),
            }
        }
        (None, None) => None,
    };
    if let Some(caller) = caller {
        if let Some(hash) = hash {
            state.throttle.remember(hash);
        }
        if let Some(wait) = state.throttle.wait(&caller) {
            return rate_limited(wait);
        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use countersign_engine::accounts::limits::DEFAULT_APPROVER_RATE;

    #[test]
    fn ipv6_peers_share_their_64_and_v4_mapped_ones_their_v4() {
        let a: IpAddr = "2001:db8:1:2:aaaa::1".parse().unwrap();
        let b: IpAddr = "2001:db8:1:2:ffff:1:2:3".parse().unwrap();
        let c: IpAddr = "2001:db8:1:3::1".parse().unwrap();
        assert_eq!(peer_key(a), peer_key(b));
        assert_ne!(peer_key(a), peer_key(c));
        let mapped: IpAddr = "::ffff:192.0.2.7".parse().unwrap();
        assert_eq!(peer_key(mapped), "192.0.2.7");
    }

    #[test]
    fn approvers_are_limited_without_any_setting_past_a_consoles_burst() {
        let throttle = Throttle::default();
        let approvers = throttle.approvers.as_ref().expect("limited by default");
        let served = (0..3000)
            .take_while(|_| {
                Throttle::over(approvers, "approver:apr_1".into(), &throttle.clock).is_none()
            })
            .count();
        let burst = DEFAULT_APPROVER_RATE.burst.get() as usize;
        // The loop takes well under a second: at most a few requests' worth refills meanwhile.
        assert!((burst..burst + 200).contains(&served), "served {served}");
    }
}
