//! What one gateway allows each caller: live plans and stored subject rows per agent (refused with
//! `quota_exceeded`), and requests per second per token (refused with `rate_limited`).

use std::fmt;
use std::num::NonZeroU32;
use std::str::FromStr;

/// Plans of one agent waiting in the approval queue (pending or stale, not expired).
pub const DEFAULT_MAX_PENDING_PLANS: u32 = 1_000;
/// Subject rows one agent's plans may hold: room for PROTOCOL section 4's million-subject plan
/// (a few effects over the same set) and more besides.
pub const DEFAULT_MAX_SUBJECT_ROWS: u64 = 5_000_000;
/// Agent tokens and unauthenticated callers: far above what an agent or the test suites send,
/// far below what would crowd approvers out of the writer.
pub const DEFAULT_RATE: Rate = Rate {
    per_second: NonZeroU32::new(200).unwrap(),
    burst: NonZeroU32::new(1000).unwrap(),
};

/// Approver tokens: a console polls every few seconds and follows one event stream; this leaves
/// room for a queue of thousands read at start, and none for a token used to flood the writer.
pub const DEFAULT_APPROVER_RATE: Rate = Rate {
    per_second: NonZeroU32::new(200).unwrap(),
    burst: NonZeroU32::new(2000).unwrap(),
};
/// Previews of one agent evaluated at once: each may read a hundred thousand subjects.
pub const DEFAULT_MAX_PREVIEWS_IN_FLIGHT: usize = 2;
/// Event streams one approver may hold open (a console holds one).
pub const DEFAULT_MAX_STREAMS: usize = 8;
/// `countersign_wait` calls one agent may have open.
pub const DEFAULT_MAX_WAITS: usize = 8;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub max_pending_plans: u32,
    pub max_subject_rows: u64,
    /// Per agent token, and per peer address for requests without a token; `None`: unlimited.
    pub rate: Option<Rate>,
    /// Per approver token; `None`: unlimited (benchmarks that poll as hard as they can).
    pub approver_rate: Option<Rate>,
    /// Previews (dry runs and refreshes) of one agent evaluated at once.
    pub max_previews_in_flight: usize,
    /// Event streams one approver may hold open.
    pub max_streams: usize,
    /// MCP waits one agent may hold open.
    pub max_waits: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_pending_plans: DEFAULT_MAX_PENDING_PLANS,
            max_subject_rows: DEFAULT_MAX_SUBJECT_ROWS,
            rate: Some(DEFAULT_RATE),
            approver_rate: Some(DEFAULT_APPROVER_RATE),
            max_previews_in_flight: DEFAULT_MAX_PREVIEWS_IN_FLIGHT,
            max_streams: DEFAULT_MAX_STREAMS,
            max_waits: DEFAULT_MAX_WAITS,
        }
    }
}

/// A sustained rate with a burst: `PER_SECOND` or `PER_SECOND/BURST` (burst defaults to the rate).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rate {
    pub per_second: NonZeroU32,
    pub burst: NonZeroU32,
}

impl FromStr for Rate {
    type Err = String;

    fn from_str(text: &str) -> Result<Rate, String> {
        let number = |part: &str| {
            part.trim()
                .parse::<NonZeroU32>()
                .map_err(|_| format!("{part:?} is not a positive whole number"))
        };
        let (per_second, burst) = match text.split_once('/') {
            Some((rate, burst)) => (number(rate)?, number(burst)?),
            None => (number(text)?, number(text)?),
        };
        Ok(Rate { per_second, burst })
    }
}

impl fmt::Display for Rate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.per_second, self.burst)
    }
}

/// A rate flag's value: a [`Rate`], or `off`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateSetting(pub Option<Rate>);

impl FromStr for RateSetting {
    type Err = String;

    fn from_str(text: &str) -> Result<RateSetting, String> {
        if text.eq_ignore_ascii_case("off") {
            return Ok(RateSetting(None));
        }
        text.parse().map(|rate| RateSetting(Some(rate)))
    }
}

impl fmt::Display for RateSetting {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(rate) => rate.fmt(f),
            None => f.write_str("off"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_parse_with_and_without_a_burst() {
        let parse = |text: &str| text.parse::<RateSetting>().map(|s| s.0);
        assert_eq!(parse("off"), Ok(None));
        assert_eq!(parse("200/1000"), Ok(Some(DEFAULT_RATE)));
        assert_eq!(RateSetting(Some(DEFAULT_RATE)).to_string(), "200/1000");
        let flat = parse("7").unwrap().unwrap();
        assert_eq!((flat.per_second.get(), flat.burst.get()), (7, 7));
        for bad in ["0", "-1", "1/0", "fast", "1/2/3"] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }
}
