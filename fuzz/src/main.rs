//! `cargo run -p deltad-fuzz --release -- --seed S --programs N --batch B`
use deltad_fuzz::{run, Config};

const USAGE: &str = "usage: deltad-fuzz [--seed S] [--programs N] [--batch B] [--points P] \
[--no-shrink] [--dir NAME] [--replay PROGRAM_SEED]\n\
Generates N random #[differentiate] programs from seed S, compiles them B per crate under \
target/fuzz-programs/NAME, and checks each at P random points (gradient against finite \
differences, jvp against vjp, the two engines' gradients and hvps against each other, values \
against the function). Failing programs are shrunk and \
written as reproducers under target/fuzz-programs/reproducers/. --replay checks (and shrinks) \
the one program with that program seed, as printed with each failure.";

fn main() {
    let mut config = Config {
        seed: 1,
        programs: 100,
        batch: 100,
        points: 3,
        shrink: true,
        dir: "batch".into(),
        replay: None,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = |what: &str| -> String {
            args.next().unwrap_or_else(|| {
                eprintln!("{what} needs a value\n{USAGE}");
                std::process::exit(2)
            })
        };
        let number = |text: String| -> u64 {
            text.parse().unwrap_or_else(|_| {
                eprintln!("not a number: {text}\n{USAGE}");
                std::process::exit(2)
            })
        };
        match arg.as_str() {
            "--seed" => config.seed = number(value("--seed")),
            "--programs" => config.programs = number(value("--programs")) as usize,
            "--batch" => config.batch = (number(value("--batch")) as usize).max(1),
            "--points" => config.points = (number(value("--points")) as usize).max(1),
            "--dir" => config.dir = value("--dir"),
            "--no-shrink" => config.shrink = false,
            "--replay" => config.replay = Some(number(value("--replay"))),
            "--help" | "-h" => {
                println!("{USAGE}");
                return;
            }
            other => {
                eprintln!("unknown argument {other}\n{USAGE}");
                std::process::exit(2)
            }
        }
    }
    let summary = match run(&config, &mut |line| eprintln!("{line}")) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(1)
        }
    };
    println!("{}", summary.report());
    for f in &summary.failures {
        println!("FAILURE {} (seed {}): {:?}", f.name, f.seed, f.status);
        if let Some(r) = &f.reproducer {
            println!("  reproducer: {}", r.display());
        }
    }
    if !summary.failures.is_empty() {
        std::process::exit(1);
    }
}
