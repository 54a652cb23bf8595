//! `countersign-fuzz` (`make fuzz`): mutation fuzzing on stable Rust, with no nightly toolchain and
//! no coverage instrumentation. It mutates each target's corpus with a seeded generator (bit flips,
//! insertions, deletions, splices, JSON tokens and extreme values) and runs the target
//! (`fuzz_targets/`) for a bounded time. A panic is a crash: the input is kept in
//! `tests/fuzz/regressions/<target>/`, where `fuzz_replay.rs` (part of `make test`) runs it from
//! then on, and the run exits with status 1.
//!
//! Only mutated inputs count toward what a run must show (the corpus itself is replayed by
//! `fuzz_replay.rs`): a share of them must get past parsing and the schema into the code behind
//! (`Depth`), and the dry-run requests must reach enough distinct outcomes. Each run draws a seed
//! and prints it; `--seed N` (`make fuzz-quick FUZZ_SEED=N`) runs the same inputs again.

use std::panic::{self, AssertUnwindSafe};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use countersign_e2e::fuzz_targets::{self, Depth, RequestTarget, TARGETS};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

/// Tokens that break parsers: structure, escapes, extremes.
const TOKENS: [&[u8]; 16] = [
    b"{",
    b"}",
    b"[",
    b"]",
    b",",
    b":",
    b"\"",
    b"\\u0000",
    b"\\ud800",
    b"1e400",
    b"-0",
    b"18446744073709551616",
    b"null",
    b"\"credits\"",
    b"-5.00",
    b"0.000000000000000000000000000001",
];

struct Options {
    seconds: u64,
    seed: u64,
    targets: Vec<String>,
}

fn options() -> Options {
    let mut options = Options {
        seconds: 60,
        seed: rand::random(),
        targets: TARGETS.iter().map(|t| (*t).to_owned()).collect(),
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || {
            args.next()
                .unwrap_or_else(|| usage(&format!("{arg} needs a value")))
        };
        match arg.as_str() {
            "--seconds" => {
                options.seconds = value().parse().unwrap_or_else(|_| usage("--seconds N"))
            }
            "--seed" => options.seed = value().parse().unwrap_or_else(|_| usage("--seed N")),
            "--target" => {
                let target = value();
                if !TARGETS.contains(&target.as_str()) {
                    usage(&format!("no target {target}"));
                }
                options.targets = vec![target];
            }
            other => usage(&format!("unknown argument {other}")),
        }
    }
    options
}

fn usage(why: &str) -> ! {
    eprintln!(
        "{why}\nusage: countersign-fuzz [--seconds N per target] [--seed N] [--target {}]",
        TARGETS.join("|")
    );
    std::process::exit(2)
}

/// One input changed: half the time as JSON (a value replaced, a member dropped or added, an item
/// copied: inputs that stay JSON and reach the code behind the parsers), otherwise as bytes.
fn mutate(dice: &mut StdRng, input: &mut Vec<u8>, others: &[(PathBuf, Vec<u8>)]) {
    if dice.gen_bool(0.5) {
        if let Ok(mut value) = serde_json::from_slice::<Value>(input) {
            for _ in 0..dice.gen_range(1..=2) {
                mutate_value(dice, &mut value, others);
            }
            *input = serde_json::to_vec(&value).unwrap();
            return;
        }
    }
    mutate_bytes(dice, input, others);
}

/// Values that break assumptions: other types, extremes, edges of the params' bounds.
fn odd_value(dice: &mut StdRng) -> Value {
    match dice.gen_range(0..12) {
        0 => Value::Null,
        1 => json!(true),
        2 => json!(-1),
        3 => json!(0),
        4 => json!(u64::MAX),
        5 => json!(1e300),
        6 => json!(""),
        7 => json!("x".repeat(dice.gen_range(900..1100))),
        8 => json!("\u{202e}\u{0000}é𝄞"),
        9 => json!([]),
        10 => json!({}),
        _ => json!(dice.gen_range(-100..100000)),
    }
}

/// Somewhere in `value`, chosen at random, changed once.
fn mutate_value(dice: &mut StdRng, value: &mut Value, others: &[(PathBuf, Vec<u8>)]) {
    let here = descend(dice, value);
    // Mostly gentle (a character, a number nudged, a value from elsewhere): an input that stays
    // within the schema reaches what is behind it.
    let change = match dice.gen_range(0..10) {
        0 => 0,
        1 => 1,
        2..=5 => 2,
        6 | 7 => 3,
        _ => 4,
    };
    match (here, change) {
        (Value::Object(map), 0) if !map.is_empty() => {
            let key = map
                .keys()
                .nth(dice.gen_range(0..map.len()))
                .cloned()
                .unwrap();
            map.remove(&key);
        }
        (Value::Object(map), 1) => {
            let name =
                ["extra", "dry", "params", "plan_id", "id", "arguments"][dice.gen_range(0..6)];
            map.insert(name.to_owned(), odd_value(dice));
        }
        (Value::Array(items), 0) if !items.is_empty() => {
            let at = dice.gen_range(0..items.len());
            let copy = items[at].clone();
            items.insert(at, copy);
        }
        (Value::Array(items), 1) if !items.is_empty() => {
            items.remove(dice.gen_range(0..items.len()));
        }
        (Value::String(text), 2) if !text.is_empty() => {
            let mut chars: Vec<char> = text.chars().collect();
            let at = dice.gen_range(0..chars.len());
            chars[at] = ['_', '0', 'Z', '/', '\u{fffd}'][dice.gen_range(0..5)];
            *text = chars.into_iter().collect();
        }
        (Value::Number(n), 2) => {
            let shifted = n
                .as_i64()
                .map_or(0, |n| n.saturating_add(dice.gen_range(-2..=2)));
            *n = shifted.into();
        }
        (here, 3) => {
            // A value of the same name from another seed: a plausible input, elsewhere.
            let (_, other) = &others[dice.gen_range(0..others.len())];
            if let Ok(other) = serde_json::from_slice::<Value>(other) {
                *here = pick(dice, other);
            }
        }
        (here, _) => *here = odd_value(dice),
    }
}

/// Down a random path of `value`, stopping on the way as often as at its end.
fn descend<'a>(dice: &mut StdRng, value: &'a mut Value) -> &'a mut Value {
    let deeper = match &*value {
        Value::Object(map) => !map.is_empty() && dice.gen_bool(0.6),
        Value::Array(items) => !items.is_empty() && dice.gen_bool(0.6),
        _ => false,
    };
    if !deeper {
        return value;
    }
    match value {
        Value::Object(map) => {
            let at = dice.gen_range(0..map.len());
            descend(dice, map.values_mut().nth(at).unwrap())
        }
        Value::Array(items) => {
            let at = dice.gen_range(0..items.len());
            descend(dice, &mut items[at])
        }
        other => other,
    }
}

/// Any value inside `value`.
fn pick(dice: &mut StdRng, value: Value) -> Value {
    match value {
        Value::Object(map) if !map.is_empty() && dice.gen_bool(0.7) => {
            let at = dice.gen_range(0..map.len());
            pick(dice, map.into_iter().nth(at).unwrap().1)
        }
        Value::Array(items) if !items.is_empty() && dice.gen_bool(0.7) => {
            let at = dice.gen_range(0..items.len());
            pick(dice, items.into_iter().nth(at).unwrap())
        }
        other => other,
    }
}

fn mutate_bytes(dice: &mut StdRng, input: &mut Vec<u8>, others: &[(PathBuf, Vec<u8>)]) {
    for _ in 0..dice.gen_range(1..=8) {
        let at = dice.gen_range(0..=input.len());
        match dice.gen_range(0..7) {
            0 if !input.is_empty() => {
                let i = at.min(input.len() - 1);
                input[i] ^= 1 << dice.gen_range(0..8);
            }
            1 => input.insert(at, dice.gen()),
            2 if at < input.len() => {
                let end = dice.gen_range(at..=input.len().min(at + 64));
                input.drain(at..end);
            }
            3 => {
                let token = TOKENS[dice.gen_range(0..TOKENS.len())];
                input.splice(at..at, token.iter().copied());
            }
            4 if at < input.len() => {
                let end = dice.gen_range(at..=input.len().min(at + 32));
                let copy = input[at..end].to_vec();
                input.splice(at..at, copy);
            }
            5 => {
                let (_, other) = &others[dice.gen_range(0..others.len())];
                let from = dice.gen_range(0..=other.len());
                let end = dice.gen_range(from..=other.len().min(from + 256));
                input.splice(at..at, other[from..end].iter().copied());
            }
            _ if at < input.len() => {
                let digit = b"0123456789"[dice.gen_range(0..10)];
                input[at] = digit;
            }
            _ => input.push(dice.gen()),
        }
    }
}

fn keep(target: &str, input: &[u8]) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/regressions")
        .join(target);
    std::fs::create_dir_all(&dir).unwrap();
    let name = format!("crash-{}", &hex::encode(Sha256::digest(input))[..16]);
    let path = dir.join(name);
    std::fs::write(&path, input).unwrap();
    path
}

fn main() {
    let options = options();
    println!(
        "countersign-fuzz: --seed {} --seconds {} per target",
        options.seed, options.seconds
    );
    let mut dice = StdRng::seed_from_u64(options.seed);
    // Crashes are reported below, once each, with the input kept.
    panic::set_hook(Box::new(|_| {}));
    let requests = RequestTarget::new();
    let (mut crashes, mut shallow) = (0, false);
    for target in &options.targets {
        let seeds = fuzz_targets::seeds(target);
        assert!(!seeds.is_empty(), "no corpus for {target}");
        let run = |bytes: &[u8]| match target.as_str() {
            "plan" => fuzz_targets::plan(bytes),
            "envelope" => fuzz_targets::envelope(bytes),
            "standing" => fuzz_targets::standing(bytes),
            "intoto" => fuzz_targets::intoto(bytes),
            "amend" => requests.amend(bytes),
            "mcp" => requests.mcp(bytes),
            _ => requests.run(bytes),
        };
        let until = Instant::now() + Duration::from_secs(options.seconds);
        let (mut runs, mut parsed, mut through) = (0u64, 0u64, 0u64);
        while Instant::now() < until {
            let mut input = seeds[dice.gen_range(0..seeds.len())].1.clone();
            mutate(&mut dice, &mut input, &seeds);
            if seeds.iter().any(|(_, seed)| *seed == input) {
                continue;
            }
            runs += 1;
            match panic::catch_unwind(AssertUnwindSafe(|| run(&input))) {
                Ok(depth) => {
                    parsed += u64::from(depth >= Depth::Parsed);
                    through += u64::from(depth == Depth::Through);
                }
                Err(panic) => {
                    let why = panic
                        .downcast_ref::<String>()
                        .cloned()
                        .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                        .unwrap_or_default();
                    let path = keep(target, &input);
                    println!("{target}: crash ({why}); input kept in {}", path.display());
                    crashes += 1;
                }
            }
        }
        let share = |n: u64| n as f64 / runs.max(1) as f64;
        println!(
            "{target}: {runs} mutated inputs in {} s: {:.0}% past parsing and the schema, {:.1}% \
             all the way through",
            options.seconds,
            100.0 * share(parsed),
            100.0 * share(through)
        );
        let floor = fuzz_targets::min_parsed_share(target);
        if share(parsed) < floor {
            println!(
                "{target}: too shallow: fewer than {:.0}% of mutated inputs got past parsing and \
                 the schema",
                100.0 * floor
            );
            shallow = true;
        }
        if target == "request" {
            let reached = requests.outcomes();
            println!("request: {} distinct outcomes", reached.len());
            if let Some(why) = fuzz_targets::too_shallow(&reached) {
                println!("request: too shallow: {why}");
                shallow = true;
            }
        }
    }
    if crashes > 0 {
        println!("{crashes} crashes: each is now a regression input for fuzz_replay.rs");
        std::process::exit(1);
    }
    if shallow {
        std::process::exit(1);
    }
}
