//! Front-end fuzzing: arbitrary and mutated token streams through every
//! expansion entry point (`#[differentiate]` on functions and `impl` blocks,
//! with random attribute arguments, and `#[derive(Differentiable)]`).
//!
//! The oracle is the macro's contract: it never panics, and an input it
//! rejects comes back with a well-formed `compile_error! { "..." }`
//! invocation; an input it accepts expands to code that parses.
//!
//! The inputs are (1) random token trees (identifiers drawn from Rust
//! keywords, std names and the macro's own internal names, every punctuation
//! character, literals of every kind, nested groups of every delimiter),
//! (2) random trees shaped like a function, an `impl` block or a type
//! definition, so the input gets past parsing into the analysis, and
//! (3) mutations and crossovers of every function, `impl` block, struct and
//! enum in the repository's tests, examples and GradBench evals (the
//! compile-fail cases of `tests/ui` included).
//!
//! `DELTAD_FRONTEND_FUZZ=<count>` sets the number of inputs (default 3000,
//! a few seconds); `DELTAD_FRONTEND_FUZZ_SEED=<n>` the seed. A large run:
//!     DELTAD_FRONTEND_FUZZ=100000 cargo test -p deltad-macros --release \
//!         frontend_fuzz -- --nocapture

use std::path::{Path, PathBuf};

use proc_macro2::{Delimiter, Group, Ident, Literal, Punct, Spacing, Span, TokenStream, TokenTree};
use quote::ToTokens;
use syn::visit::Visit;

use super::robustness::Rng;

/// Words the random streams are built from: keywords, std names the
/// generated code relies on, the macro's internal names and markers.
const WORDS: &[&str] = &[
    "fn",
    "let",
    "mut",
    "ref",
    "if",
    "else",
    "match",
    "for",
    "in",
    "while",
    "loop",
    "break",
    "continue",
    "return",
    "impl",
    "struct",
    "enum",
    "union",
    "trait",
    "type",
    "pub",
    "crate",
    "self",
    "Self",
    "super",
    "mod",
    "use",
    "as",
    "where",
    "const",
    "static",
    "unsafe",
    "async",
    "await",
    "move",
    "dyn",
    "extern",
    "yield",
    "try",
    "macro_rules",
    "_",
    "f64",
    "f32",
    "usize",
    "i32",
    "u8",
    "bool",
    "str",
    "Vec",
    "Option",
    "Some",
    "None",
    "Box",
    "String",
    "std",
    "core",
    "x",
    "y",
    "z",
    "w",
    "b",
    "n",
    "i",
    "s",
    "v",
    "out",
    "grad",
    "tape",
    "deltad",
    "differentiate",
    "no_grad",
    "checkpoint",
    "preaccumulate",
    "custom",
    "derive",
    "Differentiable",
    "Grad",
    "__record",
    "__deltad_tape",
    "__DeltadS",
    "__DeltadT",
    "__deltad_impl",
    "__deltad_primal",
    "__private",
    "Real",
    "sqrt",
    "exp",
    "ln",
    "powi",
    "powf",
    "max",
    "min",
    "abs",
    "iter",
    "map",
    "sum",
    "zip",
    "fold",
    "collect",
    "len",
    "push",
    "vec",
    "println",
    "assert",
    "format",
    "Vec3",
    "Shape",
    "F",
    "Fn",
    "FnMut",
    "FnOnce",
    "T",
    "N",
    "r#type",
    "r#fn",
    "raw",
];

const PUNCTS: &[char] = &[
    '+', '-', '*', '/', '%', '^', '!', '&', '|', '=', '<', '>', '@', '.', ',', ';', ':', '#', '$',
    '?', '~', '\'',
];

/// One item of the real-code corpus, with the attribute arguments it had.
struct Seed {
    entry: Entry,
    attr: TokenStream,
    item: TokenStream,
}

#[derive(Clone, Copy, Debug)]
enum Entry {
    Differentiate,
    Derive,
}

fn random_ident(rng: &mut Rng) -> Ident {
    let word = WORDS[rng.below(WORDS.len())];
    if let Some(raw) = word.strip_prefix("r#") {
        return Ident::new_raw(raw, Span::call_site());
    }
    if rng.below(8) == 0 {
        let name = format!(
            "{}{}",
            ["a", "_b", "__deltad_", "x_"][rng.below(4)],
            rng.below(100)
        );
        return Ident::new(&name, Span::call_site());
    }
    let span = if rng.below(2) == 0 {
        Span::call_site()
    } else {
        Span::mixed_site()
    };
    Ident::new(word, span)
}

fn random_literal(rng: &mut Rng) -> Literal {
    match rng.below(12) {
        0 => Literal::f64_unsuffixed([0.0, 1.0, 0.5, 1e300, 1e-300, 2.5][rng.below(6)]),
        1 => Literal::f64_suffixed(rng.below(1000) as f64 / 7.0),
        2 => Literal::f32_suffixed(rng.below(10) as f32),
        3 => Literal::usize_unsuffixed(rng.below(5)),
        4 => Literal::usize_suffixed(rng.below(5)),
        5 => Literal::i32_suffixed(-(rng.below(5) as i32)),
        6 => Literal::u128_unsuffixed(u128::MAX),
        7 => Literal::string(["", "{}", "{} {}", "x", "\u{0}"][rng.below(5)]),
        8 => Literal::character(['a', '\'', '\n'][rng.below(3)]),
        9 => Literal::byte_string(b"abc"),
        10 => "1e999".parse().unwrap(),
        _ => "0x10u8".parse().unwrap(),
    }
}

fn random_tree(rng: &mut Rng, depth: usize) -> TokenTree {
    let choice = rng.below(if depth == 0 { 9 } else { 12 });
    match choice {
        0..=3 => TokenTree::Ident(random_ident(rng)),
        4..=6 => {
            let spacing = if rng.below(3) == 0 {
                Spacing::Joint
            } else {
                Spacing::Alone
            };
            TokenTree::Punct(Punct::new(PUNCTS[rng.below(PUNCTS.len())], spacing))
        }
        7 | 8 => TokenTree::Literal(random_literal(rng)),
        _ => {
            let delimiter = [
                Delimiter::Parenthesis,
                Delimiter::Brace,
                Delimiter::Bracket,
                Delimiter::None,
            ][rng.below(4)];
            TokenTree::Group(Group::new(delimiter, random_stream(rng, depth - 1, 6)))
        }
    }
}

fn random_stream(rng: &mut Rng, depth: usize, max_len: usize) -> TokenStream {
    let len = rng.below(max_len + 1);
    (0..len).map(|_| random_tree(rng, depth)).collect()
}

/// Random trees in the shape of an item, so that parsing often succeeds
/// and the analysis sees odd bodies and signatures.
fn random_item(rng: &mut Rng) -> (Entry, TokenStream) {
    let body = |rng: &mut Rng| Group::new(Delimiter::Brace, random_stream(rng, 4, 16));
    let params = |rng: &mut Rng| Group::new(Delimiter::Parenthesis, random_stream(rng, 3, 10));
    let name = random_ident(rng);
    match rng.below(4) {
        0 => {
            let (p, b) = (params(rng), body(rng));
            (Entry::Differentiate, quote::quote!(fn #name #p -> f64 #b))
        }
        1 => {
            let (p, r, b) = (params(rng), random_stream(rng, 2, 3), body(rng));
            (Entry::Differentiate, quote::quote!(fn #name #p -> #r #b))
        }
        2 => {
            let (p, r, b) = (params(rng), random_stream(rng, 1, 2), body(rng));
            let method = random_ident(rng);
            (
                Entry::Differentiate,
                quote::quote!(impl #name { fn #method #p -> #r #b }),
            )
        }
        _ => {
            let keyword = ["struct", "enum", "union"][rng.below(3)];
            let keyword = Ident::new(keyword, Span::call_site());
            let b = body(rng);
            (Entry::Derive, quote::quote!(#keyword #name #b))
        }
    }
}

fn flatten(tokens: &TokenStream) -> Vec<TokenTree> {
    tokens.clone().into_iter().collect()
}

/// A random subtree of `tokens` (for crossover).
fn subtree(tokens: &TokenStream, rng: &mut Rng) -> TokenStream {
    let trees = flatten(tokens);
    if trees.is_empty() {
        return TokenStream::new();
    }
    let start = rng.below(trees.len());
    if let TokenTree::Group(group) = &trees[start] {
        if rng.below(2) == 0 {
            return subtree(&group.stream(), rng);
        }
    }
    let len = 1 + rng.below(4);
    trees.into_iter().skip(start).take(len).collect()
}

/// One random edit anywhere in the tree: delete, duplicate, swap, replace
/// with a random token, insert a random token or a piece of `donor`,
/// change a group's delimiter, truncate.
fn mutate(tokens: &TokenStream, donor: &TokenStream, rng: &mut Rng) -> TokenStream {
    let mut trees = flatten(tokens);
    if trees.is_empty() {
        return random_stream(rng, 2, 4);
    }
    let at = rng.below(trees.len());
    // Descend into groups half of the time, so deep edits are common.
    if let TokenTree::Group(group) = &trees[at] {
        if rng.below(2) == 0 {
            let inner = mutate(&group.stream(), donor, rng);
            let mut replaced = Group::new(group.delimiter(), inner);
            replaced.set_span(group.span());
            trees[at] = TokenTree::Group(replaced);
            return trees.into_iter().collect();
        }
    }
    match rng.below(9) {
        0 => {
            trees.remove(at);
        }
        1 => {
            let copy = trees[at].clone();
            trees.insert(at, copy);
        }
        2 if at + 1 < trees.len() => trees.swap(at, at + 1),
        3 => trees[at] = random_tree(rng, 2),
        4 => trees.insert(at, random_tree(rng, 2)),
        5 => {
            let piece = flatten(&subtree(donor, rng));
            trees.splice(at..at, piece);
        }
        6 => {
            if let TokenTree::Group(group) = &trees[at] {
                let delimiter = [
                    Delimiter::Parenthesis,
                    Delimiter::Brace,
                    Delimiter::Bracket,
                    Delimiter::None,
                ][rng.below(4)];
                trees[at] = TokenTree::Group(Group::new(delimiter, group.stream()));
            }
        }
        7 => {
            if let TokenTree::Ident(_) = &trees[at] {
                trees[at] = TokenTree::Ident(random_ident(rng));
            } else if let TokenTree::Literal(_) = &trees[at] {
                trees[at] = TokenTree::Literal(random_literal(rng));
            }
        }
        _ => trees.truncate(at),
    }
    trees.into_iter().collect()
}

/// Random attribute arguments: mostly valid, sometimes odd, sometimes junk.
fn random_attr(seed_attr: &TokenStream, rng: &mut Rng) -> TokenStream {
    match rng.below(8) {
        0..=3 => seed_attr.clone(),
        4 => quote::quote!(custom = some::path),
        5 => mutate(&quote::quote!(custom = d_f, custom = e), seed_attr, rng),
        _ => random_stream(rng, 2, 5),
    }
}

/// Every `.rs` file of the repository's tests, examples and evals.
fn corpus_files() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files = Vec::new();
    for dir in ["tests", "tests/ui", "examples", "gradbench/src/evals"] {
        let Ok(entries) = std::fs::read_dir(root.join(dir)) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.extension().is_some_and(|e| e == "rs") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// Collects every function, `impl` block, struct and enum, at any depth.
#[derive(Default)]
struct Collector {
    seeds: Vec<Seed>,
}

fn differentiate_args(attrs: &mut Vec<syn::Attribute>) -> Option<TokenStream> {
    let at = attrs
        .iter()
        .position(|a| a.path().is_ident("differentiate"))?;
    let attr = attrs.remove(at);
    Some(match attr.meta {
        syn::Meta::List(list) => list.tokens,
        _ => TokenStream::new(),
    })
}

impl<'a> Visit<'a> for Collector {
    fn visit_item_fn(&mut self, item: &'a syn::ItemFn) {
        let mut copy = item.clone();
        let attr = differentiate_args(&mut copy.attrs).unwrap_or_default();
        self.seeds.push(Seed {
            entry: Entry::Differentiate,
            attr,
            item: copy.into_token_stream(),
        });
        syn::visit::visit_item_fn(self, item);
    }
    fn visit_item_impl(&mut self, item: &'a syn::ItemImpl) {
        let mut copy = item.clone();
        let attr = differentiate_args(&mut copy.attrs).unwrap_or_default();
        self.seeds.push(Seed {
            entry: Entry::Differentiate,
            attr,
            item: copy.into_token_stream(),
        });
        syn::visit::visit_item_impl(self, item);
    }
    fn visit_item_struct(&mut self, item: &'a syn::ItemStruct) {
        let mut copy = item.clone();
        copy.attrs.retain(|a| !a.path().is_ident("derive"));
        self.seeds.push(Seed {
            entry: Entry::Derive,
            attr: TokenStream::new(),
            item: copy.into_token_stream(),
        });
    }
    fn visit_item_enum(&mut self, item: &'a syn::ItemEnum) {
        let mut copy = item.clone();
        copy.attrs.retain(|a| !a.path().is_ident("derive"));
        self.seeds.push(Seed {
            entry: Entry::Derive,
            attr: TokenStream::new(),
            item: copy.into_token_stream(),
        });
    }
}

fn corpus() -> Vec<Seed> {
    let mut collector = Collector::default();
    for path in corpus_files() {
        let text = std::fs::read_to_string(&path).expect("corpus file readable");
        // Every corpus file is a Rust file; the tests/ui cases too (their
        // errors are deltad's, not the parser's).
        let file = syn::parse_file(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        collector.visit_file(&file);
    }
    for source in super::robustness::CORPUS {
        collector.seeds.push(Seed {
            entry: Entry::Differentiate,
            attr: TokenStream::new(),
            item: source.parse().expect("corpus parses"),
        });
    }
    collector.seeds
}

/// Whether `tokens` holds, at its top level, an invocation
/// `[::core::]compile_error! { "message" }` (or with parentheses).
fn has_compile_error(tokens: &TokenStream) -> bool {
    let trees = flatten(tokens);
    trees.windows(3).any(|w| match w {
        [TokenTree::Ident(name), TokenTree::Punct(bang), TokenTree::Group(args)] => {
            name == "compile_error"
                && bang.as_char() == '!'
                && args.delimiter() != Delimiter::None
                && syn::parse2::<syn::LitStr>(args.stream()).is_ok()
        }
        _ => false,
    })
}

fn expand(entry: Entry, attr: &TokenStream, item: &TokenStream) -> TokenStream {
    match entry {
        Entry::Differentiate => super::differentiate(attr.clone(), item.clone()),
        Entry::Derive => crate::derive::derive(item.clone()),
    }
}

/// Runs one input; `Err` describes a violation of the contract.
fn check(entry: Entry, attr: &TokenStream, item: &TokenStream) -> Result<bool, String> {
    let result = std::panic::catch_unwind(|| expand(entry, attr, item));
    let output = result.map_err(|_| "the expansion panicked".to_string())?;
    if has_compile_error(&output) {
        return Ok(false);
    }
    match syn::parse2::<syn::File>(output) {
        Ok(_) => Ok(true),
        Err(e) => Err(format!(
            "no compile_error! and the output does not parse: {e}"
        )),
    }
}

fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn run(count: u64, seed: u64) {
    let seeds = corpus();
    assert!(seeds.len() > 100, "corpus found: {}", seeds.len());
    // Every seed itself: accepted or rejected with a compile_error!.
    for s in &seeds {
        if let Err(problem) = check(s.entry, &s.attr, &s.item) {
            panic!(
                "{problem}\n{:?} attr: {}\nitem: {}",
                s.entry, s.attr, s.item
            );
        }
    }
    let mut rng = Rng(seed);
    let (mut accepted, mut rejected) = (0u64, 0u64);
    let start = std::time::Instant::now();
    for _ in 0..count {
        let (entry, attr, item) = match rng.below(10) {
            // Pure noise, into a random entry point.
            0 => {
                let entry = if rng.below(4) == 0 {
                    Entry::Derive
                } else {
                    Entry::Differentiate
                };
                (
                    entry,
                    random_stream(&mut rng, 2, 3),
                    random_stream(&mut rng, 4, 24),
                )
            }
            // Item-shaped noise.
            1 | 2 => {
                let (entry, item) = random_item(&mut rng);
                (entry, random_attr(&TokenStream::new(), &mut rng), item)
            }
            // Mutated real code.
            _ => {
                let s = &seeds[rng.below(seeds.len())];
                let donor = &seeds[rng.below(seeds.len())].item;
                let mut item = s.item.clone();
                // Mostly one edit, so that many inputs still parse and reach
                // the analysis; sometimes several.
                let edits = [1, 1, 1, 2, 3, 5][rng.below(6)];
                for _ in 0..edits {
                    item = mutate(&item, donor, &mut rng);
                }
                let attr = if rng.below(8) == 0 {
                    random_attr(&s.attr, &mut rng)
                } else {
                    s.attr.clone()
                };
                (s.entry, attr, item)
            }
        };
        match check(entry, &attr, &item) {
            Ok(true) => accepted += 1,
            Ok(false) => rejected += 1,
            Err(problem) => panic!("{problem}\n{entry:?} attr: {attr}\nitem: {item}"),
        }
    }
    println!(
        "front-end fuzz: {count} inputs ({accepted} accepted, {rejected} rejected with compile_error!) + {} corpus items, seed {seed:#x}, in {:.1?}",
        seeds.len(),
        start.elapsed()
    );
}

#[test]
fn frontend_fuzz() {
    let count = env_number("DELTAD_FRONTEND_FUZZ", 3000);
    let seed = env_number("DELTAD_FRONTEND_FUZZ_SEED", 0xf022_de17);
    // syn parses recursively: give the expansion the stack a compiler
    // thread has, not a test thread's.
    std::thread::Builder::new()
        .stack_size(64 << 20)
        .spawn(move || run(count, seed))
        .expect("thread spawned")
        .join()
        .unwrap_or_else(|e| std::panic::resume_unwind(e));
}
