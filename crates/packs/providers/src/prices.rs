//! The price table: what each model costs in credits, and the range a request can cost before
//! it is sent. Every amount is rounded to the hundredth a wallet keeps: a minimum down, a
//! maximum and a charge up; a charge is then capped at the maximum, which is what was approved.

use countersign_proto::Credits;
use rust_decimal::{Decimal, RoundingStrategy};

/// A chat model: credits per 1,000 tokens in and out.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ChatPrice {
    pub model: &'static str,
    pub input_per_1k: Decimal,
    pub output_per_1k: Decimal,
}

/// A speech model: credits per 1,000 characters read.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SpeechPrice {
    pub model: &'static str,
    pub per_1k_chars: Decimal,
}

/// A predictions model, billed by the provider's `predict_time`: credits per second of it, and
/// how many seconds one unit of output (an image, a second of video) takes at least and at most.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PredictPrice {
    pub model: &'static str,
    pub per_second: Decimal,
    pub seconds_per_unit: (Decimal, Decimal),
}

fn d(mantissa: i64, scale: u32) -> Decimal {
    Decimal::new(mantissa, scale)
}

pub fn chat_models() -> [ChatPrice; 2] {
    [
        ChatPrice {
            model: "gpt-4o-mini",
            input_per_1k: d(15, 3),
            output_per_1k: d(60, 3),
        },
        ChatPrice {
            model: "gpt-4o",
            input_per_1k: d(250, 3),
            output_per_1k: d(1000, 3),
        },
    ]
}

pub fn speech_models() -> [SpeechPrice; 2] {
    [
        SpeechPrice {
            model: "tts-1",
            per_1k_chars: d(150, 3),
        },
        SpeechPrice {
            model: "tts-1-hd",
            per_1k_chars: d(300, 3),
        },
    ]
}

pub fn image_models() -> [PredictPrice; 2] {
    [
        PredictPrice {
            model: "black-forest-labs/flux-schnell",
            per_second: d(10, 2),
            seconds_per_unit: (d(1, 0), d(4, 0)),
        },
        PredictPrice {
            model: "stability-ai/sdxl",
            per_second: d(15, 2),
            seconds_per_unit: (d(3, 0), d(12, 0)),
        },
    ]
}

pub fn video_models() -> [PredictPrice; 1] {
    [PredictPrice {
        model: "minimax/video-01",
        per_second: d(20, 2),
        seconds_per_unit: (d(6, 0), d(30, 0)),
    }]
}

fn hundredths(amount: Decimal, strategy: RoundingStrategy) -> Credits {
    let mut rounded = amount.round_dp_with_strategy(Credits::DECIMALS, strategy);
    rounded.rescale(Credits::DECIMALS);
    Credits::new(rounded)
}

pub fn down(amount: Decimal) -> Credits {
    hundredths(amount, RoundingStrategy::ToNegativeInfinity)
}

pub fn up(amount: Decimal) -> Credits {
    hundredths(amount, RoundingStrategy::ToPositiveInfinity)
}

/// The lesser of what usage says and what was approved.
pub fn capped(amount: Decimal, budget: Credits) -> Credits {
    at_most(up(amount), budget)
}

pub fn at_most(charge: Credits, budget: Credits) -> Credits {
    if charge.value() > budget.value() {
        budget
    } else {
        charge
    }
}

impl ChatPrice {
    pub fn cost(&self, input_tokens: u64, output_tokens: u64) -> Decimal {
        (Decimal::from(input_tokens) * self.input_per_1k
            + Decimal::from(output_tokens) * self.output_per_1k)
            / Decimal::from(1000)
    }
}

impl SpeechPrice {
    pub fn cost(&self, characters: u64) -> Decimal {
        Decimal::from(characters) * self.per_1k_chars / Decimal::from(1000)
    }
}

impl PredictPrice {
    pub fn cost_of_ms(&self, predict_ms: u64) -> Decimal {
        Decimal::from(predict_ms) * self.per_second / Decimal::from(1000)
    }

    /// The range of `units` of output, and the most seconds of prediction that range allows.
    pub fn range(&self, units: u64) -> (Credits, Credits, Decimal) {
        let (low, high) = self.seconds_per_unit;
        let units = Decimal::from(units);
        (
            down(low * units * self.per_second),
            up(high * units * self.per_second),
            high * units,
        )
    }
}

/// Tokens a chat request's input counts: about one per four characters of English (an estimate:
/// a token can be longer), and at most one per byte plus a few per message of framing (a bound).
pub fn chat_input_tokens(messages: &[(&str, &str)]) -> (u64, u64) {
    let chars: usize = messages.iter().map(|(_, text)| text.chars().count()).sum();
    let bytes: usize = messages.iter().map(|(_, text)| text.len()).sum();
    let framing = 4 * messages.len() + 3;
    (chars.div_ceil(4) as u64, (bytes + framing) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_charge_inside_the_range_stays_inside_it() {
        let price = chat_models()[0];
        let (low, high) = chat_input_tokens(&[("user", "Write a haiku about approvals.")]);
        let min = down(price.cost(low, 0));
        let max = up(price.cost(high, 64));
        for (input, output) in [(low, 0), (low, 64), (high, 64), ((low + high) / 2, 10)] {
            let charge = capped(price.cost(input, output), max);
            assert!(min.value() <= charge.value() && charge.value() <= max.value());
        }
        assert_eq!(capped(price.cost(high * 10, 640), max), max);
    }

    #[test]
    fn amounts_round_away_from_the_wallet_for_maxima_and_toward_it_for_minima() {
        assert_eq!(up(d(1001, 4)).to_string(), "0.11");
        assert_eq!(down(d(1099, 4)).to_string(), "0.10");
        let (min, max, seconds) = video_models()[0].range(5);
        assert_eq!(
            (min.to_string(), max.to_string(), seconds),
            ("6.00".to_owned(), "30.00".to_owned(), d(150, 0))
        );
    }
}
