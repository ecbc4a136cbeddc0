//! CI's fuzz batch: a fixed seed, 40 random programs compiled as one crate,
//! each checked at 3 points (gradient against finite differences, `jvp`
//! against `vjp`, values against the function). The full run is documented
//! in README.md (Fuzzing).

use deltad_fuzz::{run, Config};

#[test]
fn a_fixed_seed_batch_of_random_programs_passes_every_check() {
    let config = Config {
        seed: 5,
        programs: 40,
        batch: 40,
        points: 3,
        shrink: false,
        dir: "quick".into(),
        replay: None,
    };
    let summary = run(&config, &mut |line| eprintln!("{line}")).expect("the batch runs");
    eprintln!("{}", summary.report());
    assert_eq!(summary.generated, 40);
    assert!(
        summary.failures.is_empty(),
        "failing programs (replay one with `cargo run -p deltad-fuzz --release -- --replay SEED`):\n{:#?}",
        summary.failures
    );
    assert_eq!(summary.compiled, 40);
    assert_eq!(summary.points, 120);
    // Most points are checked in full; a few may have a branch within the
    // finite-difference step.
    assert!(summary.checked >= 100, "{}", summary.report());
}
