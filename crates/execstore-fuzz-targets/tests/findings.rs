//! Findings of the fuzz targets that are not fixed yet, each reproduced directly and
//! ignored with its reason (docs/testing.md, "Fuzzing"). A fixed finding moves to
//! `fuzz/regressions/NAME/` (its input, replayed by `tests/replay.rs`) or to its crate's tests.
//!
//! None is open. The last one (an update that changed an execution's `definition_id` was
//! listed under its first definition on SQLite) is fixed on every backend and checked by the
//! behaviour suite's `an_update_moves_the_execution_to_its_new_definition`.
