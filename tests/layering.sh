#!/usr/bin/env bash
# The house's layering, checked: which workspace crates each crate may depend on, what may never be
# in a crate's dependencies at all, that the modules inside each crate import each other without a
# circle, and that a folder of modules is used from outside it only through what its mod.rs exports
# (docs/architecture.md). Fails naming every breach. The checker's own tests run first.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m unittest --quiet tests/layering_test.py
host=$(rustc -vV | sed -n "s/^host: //p")
# The host platform only: no other platform's crates are fetched to be looked at.
cargo metadata --format-version 1 --filter-platform "$host" > target/metadata.json
exec python3 tests/layering.py target/metadata.json
