//! Reducing repeated measurements to what a row prints: one statistic and the range it came from.

use std::time::Duration;

/// Durations are kept as nanoseconds, the unit of criterion's results.
pub fn ns(duration: Duration) -> f64 {
    duration.as_nanos() as f64
}

/// What a row shows of its samples: the statistic its bar names (median, p50, p99, a ratio) and
/// the smallest and largest sample behind it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Summary {
    pub value: f64,
    pub min: f64,
    pub max: f64,
}

impl Summary {
    /// The median of `samples`, or `None` when there are none.
    pub fn median(samples: &[f64]) -> Option<Summary> {
        Summary::percentile(samples, 50.0)
    }

    /// The median, or an error saying that nothing was measured.
    pub fn of(samples: &[f64]) -> anyhow::Result<Summary> {
        Summary::median(samples).ok_or_else(|| anyhow::anyhow!("no samples"))
    }

    /// The `p`th percentile (nearest rank) of `samples`.
    pub fn percentile(samples: &[f64], p: f64) -> Option<Summary> {
        let mut sorted: Vec<f64> = samples.iter().copied().filter(|v| v.is_finite()).collect();
        if sorted.is_empty() {
            return None;
        }
        sorted.sort_by(f64::total_cmp);
        let value = if p == 50.0 && sorted.len().is_multiple_of(2) {
            let upper = sorted.len() / 2;
            (sorted[upper - 1] + sorted[upper]) / 2.0
        } else {
            let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
            sorted[rank.clamp(1, sorted.len()) - 1]
        };
        Some(Summary {
            value,
            min: sorted[0],
            max: sorted[sorted.len() - 1],
        })
    }

    /// One measurement that has no spread (a count, a ratio of medians).
    pub fn single(value: f64) -> Summary {
        Summary {
            value,
            min: value,
            max: value,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians_and_percentiles_use_every_sample() {
        let odd = Summary::median(&[5.0, 1.0, 3.0]).unwrap();
        assert_eq!((odd.value, odd.min, odd.max), (3.0, 1.0, 5.0));
        assert_eq!(Summary::median(&[4.0, 1.0, 3.0, 2.0]).unwrap().value, 2.5);
        let hundred: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(Summary::percentile(&hundred, 99.0).unwrap().value, 99.0);
        assert_eq!(Summary::percentile(&hundred, 50.0).unwrap().value, 50.5);
        assert_eq!(Summary::percentile(&[7.0], 99.0).unwrap().value, 7.0);
        assert_eq!(Summary::median(&[]), None);
        assert_eq!(Summary::median(&[f64::NAN]), None);
    }
}
