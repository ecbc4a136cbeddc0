//! Hygiene: user code that reuses the generated code's internal names,
//! shadows standard names, has its own `deltad` module or no implicit
//! prelude still expands, compiles and gives the right derivatives. Each
//! case is a program that calls the derivatives and checks values
//! (editions 2018 and 2024: the crates under `tests/editions/`).

#[test]
fn hygiene() {
    let cases = trybuild::TestCases::new();
    cases.pass("tests/hygiene/*.rs");
}
