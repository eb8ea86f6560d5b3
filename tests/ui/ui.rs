//! Compile-time checks of `#[tool]` and `#[toolbox]`: each misuse in `<topic>/` must fail with
//! the error in its `.stderr`; every supported form in `pass/` must compile and run.
#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    for topic in ["attr", "signature", "types", "toolbox", "usage"] {
        t.compile_fail(format!("{topic}/*.rs"));
    }
    t.pass("pass/*.rs");
}
