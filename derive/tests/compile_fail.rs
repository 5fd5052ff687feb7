//! Misuse of the derives is a compile error with a message that says what to
//! do: padding in a blittable type, a blittable type without zerocopy's
//! proof, a platform-sized field in one, a message without an id, an enum
//! variant without a tag, a tag used twice.

// Test code: a panic is a failed test, so indexing and unwrap are fine here.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

// trybuild builds zao again in a target of its own (about 20 s of a fresh
// `cargo test`): `.ci/run` runs it by name.
#[test]
#[ignore = "builds zao again in its own target: .ci/run runs it (cargo test -p zao-derive -- --ignored --exact misuse_does_not_compile)"]
fn misuse_does_not_compile() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("tests/ui/*.rs");
}
