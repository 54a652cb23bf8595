//! `countersign-fuzz` (`make fuzz`): mutation fuzzing on stable Rust, with no nightly toolchain and
//! no coverage instrumentation. It starts from each target's corpus, mutates bytes with a seeded
//! generator (bit flips, insertions, deletions, splices, JSON tokens and extreme values), and
//! runs the target (`fuzz_targets.rs`) for a bounded time. A panic is a crash: the input is kept in
//! `tests/fuzz/regressions/<target>/`, where `fuzz_replay.rs` (part of `make test`) runs it from
//! then on, and the run exits with status 1.

use std::panic::{self, AssertUnwindSafe};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use countersign_e2e::fuzz_targets::{self, RequestTarget, TARGETS};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
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

fn mutate(dice: &mut StdRng, input: &mut Vec<u8>, others: &[(PathBuf, Vec<u8>)]) {
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
            "envelope" => {
                fuzz_targets::envelope(bytes);
            }
            _ => requests.run(bytes),
        };
        let until = Instant::now() + Duration::from_secs(options.seconds);
        let mut runs = 0u64;
        // The corpus as it is first, as libFuzzer does: then every outcome it reaches counts
        // toward the floor whatever the mutations hit in the time given.
        let mut unmutated = seeds.iter().map(|(_, bytes)| bytes.clone());
        while Instant::now() < until {
            let input = unmutated.next().unwrap_or_else(|| {
                let mut input = seeds[dice.gen_range(0..seeds.len())].1.clone();
                mutate(&mut dice, &mut input, &seeds);
                input
            });
            runs += 1;
            if let Err(panic) = panic::catch_unwind(AssertUnwindSafe(|| run(&input))) {
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
        println!("{target}: {runs} inputs in {} s", options.seconds);
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
