//! Compile-time checks of `#[tool]` and `#[toolbox]`: each misuse in `ui/<topic>/` must fail with
//! the error in its `.stderr`; every supported form in `ui/pass/` must compile and run.
#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    for topic in ["attr", "signature", "types", "toolbox", "fail"] {
        t.compile_fail(format!("ui/{topic}/*.rs"));
    }
    t.pass("ui/pass/*.rs");
}
