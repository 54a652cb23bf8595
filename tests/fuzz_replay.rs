//! Every input `make fuzz` starts from or ever crashed on (`tests/fuzz/`), run once through its
//! target: what crashed once is a regression test from then on. A target with no inputs fails:
//! it would pass having run nothing.

use countersign_e2e::fuzz_targets::{self, Depth, RequestTarget};

fn inputs(target: &str) -> Vec<(std::path::PathBuf, Vec<u8>)> {
    let seeds = fuzz_targets::seeds(target);
    assert!(!seeds.is_empty(), "no inputs for the {target} target");
    seeds
}

/// Runs every input of `target` through `run`; how many got all the way through.
fn replay(target: &str, run: impl Fn(&[u8]) -> Depth) -> usize {
    let mut through = 0;
    for (path, bytes) in inputs(target) {
        println!("{}", path.display());
        through += usize::from(run(&bytes) == Depth::Through);
    }
    through
}

#[test]
fn plan_inputs_end_in_an_error_or_a_sound_view() {
    assert!(
        replay("plan", fuzz_targets::plan) > 0,
        "no plan input is whole"
    );
}

#[test]
fn envelope_inputs_end_in_an_error_or_a_verified_statement() {
    let opened = replay("envelope", fuzz_targets::envelope);
    assert!(
        opened > 0,
        "no envelope input opens: the seal is never checked"
    );
}

#[test]
fn standing_inputs_end_in_an_error_or_a_verified_statement() {
    let opened = replay("standing", fuzz_targets::standing);
    assert!(
        opened > 0,
        "no standing approval opens: the seal is never checked"
    );
}

#[test]
fn intoto_lines_end_in_an_error_or_a_verified_entry() {
    let verified = replay("intoto", fuzz_targets::intoto);
    assert_eq!(
        verified, 3,
        "a decision, a standing approval and a use verify"
    );
}

#[test]
fn amendments_and_mcp_calls_are_answered_in_the_contract() {
    let target = RequestTarget::new();
    assert!(
        replay("amend", |bytes| target.amend(bytes)) > 0,
        "no amendment previewed"
    );
    assert!(
        replay("mcp", |bytes| target.mcp(bytes)) > 0,
        "no MCP call made a plan"
    );
}

#[test]
fn request_inputs_are_answered_in_the_contract_and_reach_the_parsers() {
    let target = RequestTarget::new();
    for (path, bytes) in inputs("request") {
        println!("{}", path.display());
        target.run(&bytes);
    }
    let reached = target.outcomes();
    println!("{} outcomes: {}", reached.len(), reached.join(", "));
    if let Some(why) = fuzz_targets::too_shallow(&reached) {
        panic!("the request corpus went too shallow: {why}");
    }
}
