//! Every input `make fuzz` starts from or ever crashed on (`tests/fuzz/`), run once through its
//! target: what crashed once is a regression test from then on. A target with no inputs fails:
//! it would pass having run nothing.

use countersign_e2e::fuzz_targets::{self, RequestTarget};

fn inputs(target: &str) -> Vec<(std::path::PathBuf, Vec<u8>)> {
    let seeds = fuzz_targets::seeds(target);
    assert!(!seeds.is_empty(), "no inputs for the {target} target");
    seeds
}

#[test]
fn plan_inputs_end_in_an_error_or_a_sound_view() {
    for (path, bytes) in inputs("plan") {
        println!("{}", path.display());
        fuzz_targets::plan(&bytes);
    }
}

#[test]
fn envelope_inputs_end_in_an_error_or_a_verified_statement() {
    let mut opened = 0;
    for (path, bytes) in inputs("envelope") {
        println!("{}", path.display());
        opened += usize::from(fuzz_targets::envelope(&bytes));
    }
    assert!(
        opened > 0,
        "no envelope input opens: the seal is never checked"
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
