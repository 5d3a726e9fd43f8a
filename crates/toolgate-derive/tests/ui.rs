//! `#[derive(Tool)]`'s compile errors, each pointing at the offending token.
//!
//! Each program names the core crate `toolgate` (`extern crate toolgate_core as
//! toolgate`), the path the derive writes by default, so trybuild builds it
//! against toolgate-core alone rather than the whole runtime.

#[test]
fn derive_errors_point_at_the_offending_token() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*.rs");
}
