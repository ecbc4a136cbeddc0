//! The benchmark suite: every program as the plain primal, a hand-written
//! adjoint, deltad, and the peer crates that express it, measured in one run.
//! Each program's gradients are checked against the hand-written one first.
//!     cargo bench --manifest-path benches/suite/Cargo.toml

use std::hint::black_box;
use std::time::Duration;

use criterion::measurement::WallTime;
use criterion::{criterion_group, BenchmarkGroup, BenchmarkId, Criterion};
use deltad_bench_suite::{branches, call, gmm, quaternion, rosenbrock, taylor};

fn group<'c>(c: &'c mut Criterion, name: &str) -> BenchmarkGroup<'c, WallTime> {
    let mut group = c.benchmark_group(name);
    group.warm_up_time(Duration::from_millis(300));
    group.measurement_time(Duration::from_secs(2));
    group.sample_size(10);
    group
}

fn bench_taylor(c: &mut Criterion) {
    taylor::check();
    let mut g = group(c, "taylor");
    for n in deltad_bench_suite::TAYLOR_ITERATIONS {
        let x = 0.5;
        g.bench_with_input(BenchmarkId::new("primal", n), &n, |b, &n| {
            b.iter(|| taylor::taylor(black_box(x), n))
        });
        g.bench_with_input(BenchmarkId::new("hand-written", n), &n, |b, &n| {
            b.iter(|| taylor::hand(black_box(x), n))
        });
        g.bench_with_input(BenchmarkId::new("deltad", n), &n, |b, &n| {
            b.iter(|| taylor::taylor::grad(black_box(x), n))
        });
        g.bench_with_input(BenchmarkId::new("deltad-tape", n), &n, |b, &n| {
            b.iter(|| taylor::taylor_tape::grad(black_box(x), n))
        });
        g.bench_with_input(BenchmarkId::new("reverse", n), &n, |b, &n| {
            b.iter(|| taylor::with_reverse(black_box(x), n))
        });
        g.bench_with_input(BenchmarkId::new("ad_trait", n), &n, |b, &n| {
            b.iter(|| taylor::with_ad_trait(black_box(x), n))
        });
        g.bench_with_input(BenchmarkId::new("num-dual", n), &n, |b, &n| {
            b.iter(|| taylor::with_num_dual(black_box(x), n))
        });
    }
    g.finish();
}

fn bench_rosenbrock(c: &mut Criterion) {
    rosenbrock::check();
    let mut g = group(c, "rosenbrock");
    for n in deltad_bench_suite::ROSENBROCK_DIMENSIONS {
        let x = rosenbrock::input(n);
        g.bench_with_input(BenchmarkId::new("primal", n), &x, |b, x| {
            b.iter(|| rosenbrock::rosenbrock(black_box(x)))
        });
        g.bench_with_input(BenchmarkId::new("hand-written", n), &x, |b, x| {
            b.iter(|| rosenbrock::hand(black_box(x)))
        });
        g.bench_with_input(BenchmarkId::new("deltad", n), &x, |b, x| {
            b.iter(|| rosenbrock::rosenbrock::grad(black_box(x)))
        });
        g.bench_with_input(BenchmarkId::new("deltad-generic", n), &x, |b, x| {
            b.iter(|| rosenbrock::rosenbrock_generic::grad(black_box(x)))
        });
        g.bench_with_input(BenchmarkId::new("deltad-tape", n), &x, |b, x| {
            b.iter(|| rosenbrock::rosenbrock_tape::grad(black_box(x)))
        });
        g.bench_with_input(BenchmarkId::new("reverse", n), &x, |b, x| {
            b.iter(|| rosenbrock::with_reverse(black_box(x)))
        });
        g.bench_with_input(BenchmarkId::new("ad_trait", n), &x, |b, x| {
            b.iter(|| rosenbrock::with_ad_trait(black_box(x)))
        });
    }
    g.finish();
}

fn bench_gmm(c: &mut Criterion) {
    gmm::check();
    let mut g = group(c, "gmm");
    for shape in deltad_bench_suite::GMM_SHAPES {
        let p = gmm::problem(shape.0, shape.1, deltad_bench_suite::GMM_POINTS);
        let id = |f: &str| BenchmarkId::new(f, deltad_bench_suite::gmm_parameter(shape));
        g.bench_with_input(id("primal"), &p, |b, p| {
            b.iter(|| gmm::primal(black_box(p)))
        });
        g.bench_with_input(id("hand-written"), &p, |b, p| {
            b.iter(|| gmm::hand(black_box(p)))
        });
        g.bench_with_input(id("deltad"), &p, |b, p| {
            b.iter(|| gmm::deltad_gradient(black_box(p)))
        });
        g.bench_with_input(id("deltad-plain-loops"), &p, |b, p| {
            b.iter(|| gmm::deltad_plain_loops_gradient(black_box(p)))
        });
        g.bench_with_input(id("deltad-tape"), &p, |b, p| {
            b.iter(|| gmm::deltad_tape_gradient(black_box(p)))
        });
        g.bench_with_input(id("reverse"), &p, |b, p| {
            b.iter(|| gmm::with_reverse(black_box(p)))
        });
        g.bench_with_input(id("ad_trait"), &p, |b, p| {
            b.iter(|| gmm::with_ad_trait(black_box(p)))
        });
        if p.alpha.len() + p.mu.len() + p.q.len() + p.l.len() <= 40 {
            g.bench_with_input(id("num-dual"), &p, |b, p| {
                b.iter(|| gmm::with_num_dual(black_box(p)))
            });
        }
    }
    g.finish();
}

fn bench_quaternion(c: &mut Criterion) {
    quaternion::check();
    let mut g = group(c, "quaternion");
    let n = deltad_bench_suite::QUATERNION_SAMPLES;
    let (qs, vs, w) = quaternion::input(n);
    let input = (qs.as_slice(), vs.as_slice(), &w);
    let id = |f: &str| BenchmarkId::new(f, n);
    g.bench_with_input(id("primal"), &input, |b, &(qs, vs, w)| {
        b.iter(|| quaternion::batch(black_box(qs), vs, w))
    });
    g.bench_with_input(id("hand-written"), &input, |b, &(qs, vs, w)| {
        b.iter(|| quaternion::hand(black_box(qs), vs, w))
    });
    g.bench_with_input(id("deltad"), &input, |b, &(qs, vs, w)| {
        b.iter(|| quaternion::batch::grad(black_box(qs), vs, w))
    });
    g.bench_with_input(id("deltad-tape"), &input, |b, &(qs, vs, w)| {
        b.iter(|| quaternion::batch_tape::grad(black_box(qs), vs, w))
    });
    g.bench_with_input(id("reverse"), &input, |b, &(qs, vs, w)| {
        b.iter(|| quaternion::with_reverse(black_box(qs), vs, w))
    });
    g.bench_with_input(id("ad_trait"), &input, |b, &(qs, vs, w)| {
        b.iter(|| quaternion::with_ad_trait(black_box(qs), vs, w))
    });
    g.bench_with_input(id("num-dual"), &input, |b, &(qs, vs, w)| {
        b.iter(|| quaternion::with_num_dual(black_box(qs), vs, w))
    });
    g.finish();
}

fn bench_branches(c: &mut Criterion) {
    branches::check();
    let mut g = group(c, "branches");
    let n = branches::ITERATIONS;
    let id = |f: &str| BenchmarkId::new(f, n);
    let x = 3.0;
    g.bench_function(id("primal"), |b| {
        b.iter(|| branches::branches(black_box(x), n))
    });
    g.bench_function(id("hand-written"), |b| {
        b.iter(|| branches::hand(black_box(x), n))
    });
    g.bench_function(id("deltad"), |b| {
        b.iter(|| branches::branches::grad(black_box(x), n))
    });
    g.bench_function(id("deltad-tape"), |b| {
        b.iter(|| branches::branches_tape::grad(black_box(x), n))
    });
    g.bench_function(id("reverse"), |b| {
        b.iter(|| branches::with_reverse(black_box(x), n))
    });
    g.bench_function(id("ad_trait"), |b| {
        b.iter(|| branches::with_ad_trait(black_box(x), n))
    });
    g.bench_function(id("num-dual"), |b| {
        b.iter(|| branches::with_num_dual(black_box(x), n))
    });
    g.finish();
}

fn bench_call(c: &mut Criterion) {
    call::check();
    let mut g = group(c, "call");
    let id = |f: &str| BenchmarkId::new(f, "xy");
    let (x, y) = (0.7, -1.3);
    g.bench_function(id("primal"), |b| {
        b.iter(|| call::product(black_box(x), black_box(y)))
    });
    g.bench_function(id("hand-written"), |b| {
        b.iter(|| call::hand(black_box(x), black_box(y)))
    });
    g.bench_function(id("deltad"), |b| {
        b.iter(|| call::product::grad(black_box(x), black_box(y)))
    });
    g.bench_function(id("deltad-tape"), |b| {
        b.iter(|| call::product_tape::grad(black_box(x), black_box(y)))
    });
    g.bench_function(id("reverse"), |b| {
        b.iter(|| call::with_reverse(black_box(x), black_box(y)))
    });
    g.bench_function(id("ad_trait"), |b| {
        b.iter(|| call::with_ad_trait(black_box(x), black_box(y)))
    });
    g.finish();
}

criterion_group!(
    suite,
    bench_taylor,
    bench_rosenbrock,
    bench_gmm,
    bench_quaternion,
    bench_branches,
    bench_call
);

fn main() {
    suite();
    Criterion::default().configure_from_args().final_summary();
    deltad_bench_suite::print_summary();
}
