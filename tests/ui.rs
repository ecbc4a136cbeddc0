//! Compile errors: every construct `#[differentiate]` does not support is
//! rejected with a message at the construct. The expected messages are in
//! `tests/ui/*.stderr` (regenerate with `TRYBUILD=overwrite cargo test --test ui`
//! and review the diff).

#[test]
fn ui() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("tests/ui/*.rs");
}

/// Misuses of the closure entry points (`deltad::gradient(|x| f(x), ..)`):
/// rustc's own trait errors, which name `Real`, the type the closure is
/// documented to receive (so they are not held to the rule below, which is
/// about the code `#[differentiate]` generates).
#[test]
fn ui_closures() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("tests/ui_closures/*.rs");
}

/// No expected message names deltad's internals (its dual value type, its
/// generated items, its runtime crate): the user's code is at fault in
/// every case, and a message must speak of the user's code.
#[test]
fn messages_do_not_name_internals() {
    const INTERNALS: &[&str] = &["Real<'", "__Deltad", "__deltad", "deltad_runtime"];
    let mut offenders = Vec::new();
    for dir in ["tests/ui", "tests/ui_linalg"] {
        let Ok(entries) = std::fs::read_dir(dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.extension().is_some_and(|e| e == "stderr") {
                let text = std::fs::read_to_string(&path).expect("readable");
                for name in INTERNALS {
                    if text.contains(name) {
                        offenders.push(format!("{}: {name}", path.display()));
                    }
                }
            }
        }
    }
    assert!(
        offenders.is_empty(),
        "messages naming internals:\n{}",
        offenders.join("\n")
    );
}
