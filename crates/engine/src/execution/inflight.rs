//! How many of one caller's slow requests may run at once: previews per agent, event streams per
//! approver, waits per agent. A request over the bound is refused at once (`rate_limited`, 429)
//! instead of queueing behind the others.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use countersign_proto::ErrorCode;
use serde_json::json;

use crate::ApiError;

/// Open requests per key, at most `max` of each.
pub struct InFlight {
    what: &'static str,
    max: usize,
    open: Mutex<HashMap<String, usize>>,
}

/// One open request; it closes when dropped.
pub struct Slot {
    of: Arc<InFlight>,
    key: String,
}

impl InFlight {
    /// A bound of `max` open `what` (say, "previews") per key.
    pub fn new(what: &'static str, max: usize) -> Arc<InFlight> {
        Arc::new(InFlight {
            what,
            max,
            open: Mutex::new(HashMap::new()),
        })
    }

    /// A slot for `key`, or `rate_limited` when `key` has its `max` open already.
    pub fn enter(self: &Arc<Self>, key: &str) -> Result<Slot, ApiError> {
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        let count = open.entry(key.to_owned()).or_insert(0);
        if *count >= self.max {
            return Err(ApiError::new(
                ErrorCode::RateLimited,
                format!(
                    "{} {} are open for this caller already, the most it may have at once; \
                     wait for one to end.",
                    self.max, self.what
                ),
            )
            .with_details(json!({ "in_flight": self.what, "limit": self.max })));
        }
        *count += 1;
        Ok(Slot {
            of: self.clone(),
            key: key.to_owned(),
        })
    }

    /// Open requests of every key now.
    pub fn total(&self) -> usize {
        let open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        open.values().sum()
    }

    /// Open requests of `key` now.
    pub fn open(&self, key: &str) -> usize {
        let open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        open.get(key).copied().unwrap_or(0)
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut open = self.of.open.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(count) = open.get_mut(&self.key) {
            *count -= 1;
            if *count == 0 {
                open.remove(&self.key);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_holds_at_most_its_bound_and_a_closed_slot_frees_its_place() {
        let flights = InFlight::new("previews", 2);
        let a = flights.enter("agt_a").unwrap();
        let _b = flights.enter("agt_a").unwrap();
        let refused = flights.enter("agt_a").err().unwrap();
        assert_eq!(refused.code, ErrorCode::RateLimited);
        assert!(flights.enter("agt_other").is_ok(), "per key");
        drop(a);
        assert!(flights.enter("agt_a").is_ok());
        assert_eq!(flights.open("agt_a"), 1);
    }
}
