//! The clock snoozes and reminders are judged by: the machine's, or for end-to-end tests a clock
//! that starts ahead and runs faster (`COUNTERSIGN_TEST_CLOCK`, docs/testing.md), so a test sees
//! a fifteen-minute plan come due and a snooze end in seconds. Nothing signed reads it: decisions,
//! plan expiry and the gateway keep the real time.

use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};

use crate::error::ConsoleError;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Clock {
    test: Option<TestClock>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct TestClock {
    started: Instant,
    ahead: chrono::Duration,
    rate: u32,
}

/// The shortest wait a faster clock makes of an interval.
const SHORTEST_INTERVAL: Duration = Duration::from_millis(100);

impl Default for Clock {
    fn default() -> Clock {
        Clock::real()
    }
}

impl Clock {
    pub fn real() -> Clock {
        Clock { test: None }
    }

    /// A clock `ahead` of the real one from now on, running `rate` times as fast.
    pub fn test(ahead: Duration, rate: u32) -> Result<Clock, ConsoleError> {
        let invalid = |why: &str| ConsoleError::Invalid(format!("test clock: {why}"));
        if !(1..=3600).contains(&rate) {
            return Err(invalid("the rate is 1 to 3600 times as fast"));
        }
        if ahead > Duration::from_secs(24 * 3600) {
            return Err(invalid("at most a day ahead"));
        }
        Ok(Clock {
            test: Some(TestClock {
                started: Instant::now(),
                ahead: chrono::Duration::from_std(ahead).map_err(|_| invalid("too far ahead"))?,
                rate,
            }),
        })
    }

    /// `COUNTERSIGN_TEST_CLOCK`'s form: `<seconds ahead>,<rate>`, as in `605,5`.
    pub fn parse(setting: &str) -> Result<Clock, ConsoleError> {
        let bad = || {
            ConsoleError::Invalid(format!(
                "test clock {setting:?}: expected <seconds ahead>,<rate>, as in 605,5"
            ))
        };
        let (ahead, rate) = setting.split_once(',').ok_or_else(bad)?;
        let ahead: u64 = ahead.trim().parse().map_err(|_| bad())?;
        let rate: u32 = rate.trim().parse().map_err(|_| bad())?;
        Clock::test(Duration::from_secs(ahead), rate)
    }

    pub fn is_real(&self) -> bool {
        self.test.is_none()
    }

    pub fn now(&self) -> DateTime<Utc> {
        let real = Utc::now();
        match self.test {
            None => real,
            Some(t) => {
                let faster = t.started.elapsed() * (t.rate - 1);
                real + t.ahead + chrono::Duration::from_std(faster).unwrap_or(chrono::Duration::MAX)
            }
        }
    }

    /// How long `interval` of this clock's time lasts in real time.
    pub fn every(&self, interval: Duration) -> Duration {
        match self.test {
            None => interval,
            Some(t) => (interval / t.rate).max(SHORTEST_INTERVAL),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_real_clock_is_the_machines() {
        let clock = Clock::real();
        let (before, now, after) = (Utc::now(), clock.now(), Utc::now());
        assert!(before <= now && now <= after);
        assert_eq!(clock.every(Duration::from_secs(5)), Duration::from_secs(5));
    }

    #[test]
    fn a_test_clock_starts_ahead_and_runs_faster() {
        let clock = Clock::parse("600,10").unwrap();
        let first = clock.now() - Utc::now();
        assert!(first >= chrono::Duration::seconds(600), "{first}");
        std::thread::sleep(Duration::from_millis(200));
        let later = clock.now() - Utc::now();
        // 200 ms of real time are two seconds of its time: 1.8 s more ahead than before.
        assert!(
            later - first >= chrono::Duration::milliseconds(1800),
            "{later}"
        );
        assert_eq!(
            clock.every(Duration::from_secs(5)),
            Duration::from_millis(500)
        );
        assert_eq!(clock.every(Duration::from_millis(500)), SHORTEST_INTERVAL);
    }

    #[test]
    fn a_setting_it_cannot_read_is_refused() {
        for bad in [
            "",
            "600",
            "600,",
            "-1,5",
            "600,0",
            "600,99999",
            "99999999,5",
            "a,b",
        ] {
            let err = Clock::parse(bad).unwrap_err();
            assert!(err.to_string().contains("test clock"), "{bad}: {err}");
        }
    }
}
