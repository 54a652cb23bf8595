//! Every input `make fuzz` starts from or ever crashed on (`tests/fuzz/`), run once through its
//! target: what crashed once is a regression test from then on.

use countersign_e2e::fuzz_targets::{self, RequestTarget};

#[test]
fn plan_inputs_end_in_an_error_or_a_sound_view() {
    for (path, bytes) in fuzz_targets::seeds("plan") {
        println!("{}", path.display());
        fuzz_targets::plan(&bytes);
    }
}

#[test]
fn envelope_inputs_end_in_an_error_or_a_verified_statement() {
    for (path, bytes) in fuzz_targets::seeds("envelope") {
        println!("{}", path.display());
        fuzz_targets::envelope(&bytes);
    }
}

#[test]
fn request_inputs_are_answered_in_the_contract() {
    let target = RequestTarget::new();
    for (path, bytes) in fuzz_targets::seeds("request") {
        println!("{}", path.display());
        target.run(&bytes);
    }
}
