//! What `make fuzz` throws bytes at, and what `fuzz_replay.rs` runs every kept input through:
//! plan parsing and the review model, decision and standing-approval envelopes, exported in-toto
//! lines (`statements`), and the gateway's request parsing: dry runs, amendments and MCP tool
//! calls (`requests`). A target panics only on a bug: any input must end in an error value or a
//! sound result. Each says how far an input got ([`Depth`]), so a run can tell inputs that reached
//! the code behind the parsers from inputs refused at the door.

mod requests;
mod signed;
mod statements;

use std::path::{Path, PathBuf};

pub use requests::{too_shallow, RequestTarget, OUTCOME_FLOOR};
pub use statements::{envelope, intoto, plan, standing};

pub const TARGETS: [&str; 7] = [
    "plan", "envelope", "standing", "intoto", "request", "amend", "mcp",
];

/// How far one input got into its target.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Depth {
    /// Not the JSON, or not the shape, the target reads: refused at the door.
    Refused,
    /// Past parsing and the schema: the code behind them ran (a request's checks, a plan's
    /// review, a statement's fields), and refused it or not.
    Parsed,
    /// All the way: a plan made, an amendment previewed, a signed statement opened.
    Through,
}

/// The share of a target's mutated inputs that must get past parsing and the schema: fewer, and
/// the mutations (or a door that refuses everything) keep the run from the code it is for. About
/// a third of what a ten-second run reaches (docs/testing.md), so that only a real loss of depth
/// fails it: a dry run's body goes to every capability and must fit one of their schemas, and an
/// amendment must change the request and still fit its capability's.
pub fn min_parsed_share(target: &str) -> f64 {
    match target {
        "request" | "amend" => 0.01,
        "plan" | "intoto" | "mcp" => 0.04,
        _ => 0.08,
    }
}

/// The inputs a target starts from: its corpus in `tests/fuzz/corpus/<target>` (and, for dry-run
/// requests, the gateway's hostile corpus; for signed statements, the ones made here with the
/// fixed test keys), then every crash kept in `tests/fuzz/regressions/<target>`.
pub fn seeds(target: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut dirs = vec![
        root.join("fuzz/corpus").join(target),
        root.join("fuzz/regressions").join(target),
    ];
    if target == "request" {
        dirs.push(root.join("../crates/gateway/tests/hostile"));
    }
    let mut out: Vec<(PathBuf, Vec<u8>)> = signed::seeds(target)
        .into_iter()
        .map(|(name, bytes)| (PathBuf::from(format!("(made) {target}/{name}")), bytes))
        .collect();
    for dir in dirs {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut paths: Vec<PathBuf> = entries.map(|e| e.unwrap().path()).collect();
        paths.sort();
        for path in paths.into_iter().filter(|p| p.is_file()) {
            let bytes = std::fs::read(&path).unwrap();
            out.push((path, bytes));
        }
    }
    out
}
