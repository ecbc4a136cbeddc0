//! Every gradient of the suite against the hand-written one (the benchmarks
//! run these checks too, before timing).

#[test]
fn taylor() {
    deltad_bench_suite::taylor::check();
}

#[test]
fn rosenbrock() {
    deltad_bench_suite::rosenbrock::check();
}

#[test]
fn gmm() {
    deltad_bench_suite::gmm::check();
}

#[test]
fn quaternion() {
    deltad_bench_suite::quaternion::check();
}

#[test]
fn branches() {
    deltad_bench_suite::branches::check();
}

#[test]
fn call() {
    deltad_bench_suite::call::check();
}

#[test]
fn jacobians() {
    deltad_bench_suite::jacobians::check();
    deltad_bench_suite::jacobians::check_hessians();
}
