//! The tape graph (`f::tape_graph`): the structure of small recordings
//! (node and edge counts), coefficients against hand-computed partial
//! derivatives, adjoints against the gradient and against a sweep over the
//! graph's own edges, special bindings (accumulated sums, loops recorded as
//! a whole, checkpointed loops and calls), and DOT that is well formed.
#![allow(clippy::all)]

mod common;
use common::*;
use deltad::{differentiate, Differentiable, NodeKind, TapeGraph};

#[differentiate(tape)]
fn product(x: f64, y: f64) -> f64 {
    x * y
}

#[differentiate(tape)]
fn squares(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for v in x {
        s += v * v;
    }
    s
}

#[differentiate(tape)]
fn square(x: f64) -> f64 {
    x * x
}

/// a = x², b = sin(a)·y, a + b: the call to `square` is its own binding.
#[differentiate(tape)]
fn chain(x: f64, y: f64) -> f64 {
    let a = square(x);
    let b = a.sin() * y;
    b + a
}

#[differentiate(tape)]
fn whole_loop(x: f64, p: f64, n: usize) -> f64 {
    let mut a = x;
    let mut b = 1.0;
    for _ in 0..n {
        let t = a * p;
        a = t.sin() + b;
        b = b * 0.5 + t;
    }
    a * b
}

#[differentiate(tape)]
fn oscillator(x0: f64, k: f64, steps: usize) -> f64 {
    let mut x = x0;
    let mut v = 0.0;
    #[checkpoint]
    for _ in 0..steps {
        let a = -k * x;
        x += 0.01 * v;
        v += 0.01 * a;
    }
    x * x + v
}

#[differentiate(tape)]
fn checkpointed_call(x: f64, k: f64) -> f64 {
    #[checkpoint]
    let y = oscillator(x, k, 10);
    y * x
}

#[differentiate(tape)]
fn pair(x: f64, y: f64) -> (f64, f64) {
    (x * y, x.exp())
}

#[differentiate(tape)]
fn gemv(a: &[f64], x: &[f64], y: &mut [f64]) {
    for i in 0..y.len() {
        for j in 0..x.len() {
            y[i] += a[i * x.len() + j] * x[j];
        }
    }
}

#[derive(Differentiable, Clone, Copy, Debug)]
pub struct Point {
    pub x: f64,
    pub y: f64,
}

#[differentiate(tape)]
fn norm2(p: &Point, #[no_grad] scale: f64) -> f64 {
    scale * (p.x * p.x + p.y * p.y)
}

#[differentiate(tape)]
fn single_precision(x: f32, y: f32) -> f32 {
    x * y + x
}

/// The local Jacobian row of a node: its coefficients summed per argument.
fn partial(graph: &TapeGraph, node: usize, argument: usize) -> f64 {
    graph.nodes()[node]
        .terms
        .iter()
        .filter(|t| t.argument == argument)
        .map(|t| t.coefficient)
        .sum()
}

/// The derivative of binding `node` with respect to binding `input`
/// through the graph's terms (chain rule, forward): Σ coefficient ·
/// ∂argument/∂input.
fn derivative(graph: &TapeGraph, node: usize, input: usize) -> f64 {
    if node == input {
        return 1.0;
    }
    graph.nodes()[node]
        .terms
        .iter()
        .map(|t| t.coefficient * derivative(graph, t.argument, input))
        .sum()
}

/// The reverse sweep redone over the graph's own terms (for graphs without
/// loops or calls): the adjoints it gives must be the recorded ones.
fn sweep_over_edges(graph: &TapeGraph) -> Vec<f64> {
    let mut adjoints = vec![0.0; graph.len()];
    adjoints[graph.outputs()[0].unwrap()] = 1.0;
    for node in graph.nodes().iter().rev() {
        for term in &node.terms {
            adjoints[term.argument] += term.coefficient * adjoints[node.id];
        }
    }
    adjoints
}

/// The DOT text is well formed enough for Graphviz: one `digraph` block,
/// balanced braces and quotes, every edge endpoint declared as a node, one
/// edge line per dependency and per output recorded on the tape.
fn check_dot(graph: &TapeGraph) {
    let dot = graph.to_dot();
    assert!(dot.starts_with("digraph \"tape of "), "{dot}");
    assert!(dot.trim_end().ends_with('}'), "{dot}");
    // Outside quoted strings, braces balance (and only the outer pair).
    let (mut depth, mut in_string, mut escaped) = (0i32, false, false);
    let mut outer = 0;
    for c in dot.chars() {
        if in_string {
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => in_string = true,
            '{' => {
                depth += 1;
                outer += 1;
            }
            '}' => depth -= 1,
            _ => {}
        }
        assert!(depth >= 0, "unbalanced braces:\n{dot}");
    }
    assert_eq!((depth, in_string, outer), (0, false, 1), "{dot}");
    let mut declared = std::collections::HashSet::new();
    let mut edges = Vec::new();
    for line in dot.lines().map(str::trim) {
        let name = line.split([' ', '[', ';']).next().unwrap_or("");
        if let Some((from, rest)) = line.split_once(" -> ") {
            let to = rest.split([' ', '[', ';']).next().unwrap();
            edges.push((from.to_string(), to.to_string()));
        } else if line.contains("[label=") {
            assert!(declared.insert(name.to_string()), "{name} declared twice");
        }
    }
    for (from, to) in &edges {
        assert!(
            declared.contains(from),
            "edge from undeclared {from}:\n{dot}"
        );
        assert!(declared.contains(to), "edge to undeclared {to}:\n{dot}");
    }
    let recorded_outputs = graph.outputs().iter().flatten().count();
    assert_eq!(edges.len(), graph.edges().len() + recorded_outputs, "{dot}");
    assert_eq!(declared.len(), graph.len() + graph.outputs().len(), "{dot}");
}

#[test]
fn a_product_is_one_binding_with_both_partials() {
    let graph = product::tape_graph(2.0, 3.0);
    assert_eq!(graph.function(), "product");
    assert_eq!(
        (graph.len(), graph.inputs().count(), graph.term_count()),
        (3, 2, 2)
    );
    assert_eq!(graph.edges().len(), 2);
    let labels: Vec<_> = graph.inputs().map(|n| n.input.clone().unwrap()).collect();
    assert_eq!(labels, ["x", "y"]);
    assert_eq!(graph.outputs(), &[Some(2)]);
    assert_eq!(graph.nodes()[2].kind, NodeKind::Linear);
    assert_eq!(graph.nodes()[2].outputs, ["output"]);
    // ∂(xy)/∂x = y, ∂(xy)/∂y = x.
    assert_eq!(partial(&graph, 2, 0), 3.0);
    assert_eq!(partial(&graph, 2, 1), 2.0);
    let adjoints: Vec<_> = graph.nodes().iter().map(|n| n.adjoint.unwrap()).collect();
    assert_eq!(adjoints, [3.0, 2.0, 1.0]);
    check_dot(&graph);
}

#[test]
fn a_sum_over_a_slice_has_one_term_per_element() {
    // 40 terms are copied inline; 300 stay in the accumulator's buffer.
    for n in [40, 300] {
        sum_of_squares(n);
    }
}

fn sum_of_squares(n: usize) {
    let x: Vec<f64> = (0..n).map(|i| (i as f64 * 0.37).sin()).collect();
    let graph = squares::tape_graph(&x);
    let expected_kind = if n > 256 {
        NodeKind::Accumulated { collected: n }
    } else {
        NodeKind::Linear
    };
    assert_eq!(graph.nodes()[n].kind, expected_kind);
    assert_eq!(graph.len(), x.len() + 1);
    assert_eq!(graph.inputs().count(), x.len());
    assert_eq!(graph.nodes()[7].input.as_deref(), Some("x[7]"));
    let sum = x.len();
    assert_eq!(graph.edges().len(), x.len());
    for (i, xi) in x.iter().enumerate() {
        // ∂(Σ x²)/∂x_i = 2 x_i.
        assert_close(&[partial(&graph, sum, i)], &[2.0 * xi], "∂s/∂x_i");
        assert_close(&[graph.nodes()[i].adjoint.unwrap()], &[2.0 * xi], "adjoint");
    }
    check_dot(&graph);
}

#[test]
fn a_call_and_a_fused_statement_give_the_hand_computed_partials() {
    let (x, y) = (0.7, 3.0);
    let graph = chain::tape_graph(x, y);
    // x, y, a = x² (the call), b = sin(a)·y fused with nothing else, a + b.
    assert_eq!((graph.len(), graph.inputs().count()), (5, 2));
    assert_eq!((graph.term_count(), graph.edges().len()), (5, 5));
    let a = x * x;
    assert_close(&[partial(&graph, 2, 0)], &[2.0 * x], "∂a/∂x");
    assert_close(&[partial(&graph, 3, 2)], &[a.cos() * y], "∂b/∂a");
    assert_close(&[partial(&graph, 3, 1)], &[a.sin()], "∂b/∂y");
    assert_eq!(partial(&graph, 4, 3), 1.0);
    assert_eq!(partial(&graph, 4, 2), 1.0);
    // The adjoints are a reverse sweep over exactly these edges, and those
    // of the inputs are the gradient, derived by hand.
    let recorded: Vec<f64> = graph.nodes().iter().map(|n| n.adjoint.unwrap()).collect();
    assert_close(&recorded, &sweep_over_edges(&graph), "sweep over the edges");
    let hand = [(a.cos() * y + 1.0) * 2.0 * x, a.sin()];
    assert_close(&recorded[..2], &hand, "input adjoints");
    let g = chain::grad(x, y);
    assert_close(&recorded[..2], &[g.x, g.y], "input adjoints vs grad");
    check_dot(&graph);
}

#[test]
fn a_loop_recorded_as_a_whole_is_one_node_with_its_outputs() {
    let (x, p, n) = (0.5, 0.7, 4);
    let graph = whole_loop::tape_graph(x, p, n);
    // x, p, the loop, its two states after it, a·b.
    assert_eq!(graph.len(), 6);
    assert_eq!(
        graph.nodes()[2].kind,
        NodeKind::Loop {
            iterations: 4,
            reads: vec![0, 1],
            outputs: 3..5
        }
    );
    assert_eq!(
        graph.nodes()[3].kind,
        NodeKind::Produced { by: 2, index: 0 }
    );
    assert_eq!(
        graph.nodes()[4].kind,
        NodeKind::Produced { by: 2, index: 1 }
    );
    assert_eq!(graph.inputs().count(), 2);
    // Reads x and p, gives 2 outputs, and a·b has two terms.
    assert_eq!(graph.edges().len(), 2 + 2 + 2);
    assert_eq!(graph.nodes()[2].adjoint, None);
    // The states after the loop, by running the loop by hand.
    let (mut a, mut b) = (x, 1.0);
    for _ in 0..n {
        let t: f64 = a * p;
        a = t.sin() + b;
        b = b * 0.5 + t;
    }
    assert_close(&[partial(&graph, 5, 3)], &[b], "∂(ab)/∂a");
    assert_close(&[partial(&graph, 5, 4)], &[a], "∂(ab)/∂b");
    let adjoints: Vec<f64> = graph.inputs().map(|n| n.adjoint.unwrap()).collect();
    let reference = finite_difference(|v| whole_loop(v[0], v[1], n), &[x, p]);
    assert_close(
        &adjoints,
        &reference,
        "input adjoints vs finite differences",
    );
    check_dot(&graph);
}

#[test]
fn checkpointed_loops_and_calls_are_nodes_reading_their_inputs() {
    let graph = oscillator::tape_graph(0.5, 0.7, 20);
    assert!(
        matches!(&graph.nodes()[2].kind, NodeKind::CheckpointedLoop { reads, outputs }
            if reads == &[0, 1] && outputs == &(3..5)),
        "{graph}"
    );
    let adjoints: Vec<f64> = graph.inputs().map(|n| n.adjoint.unwrap()).collect();
    let reference = finite_difference(|v| oscillator(v[0], v[1], 20), &[0.5, 0.7]);
    assert_close(&adjoints, &reference, "checkpointed loop");
    check_dot(&graph);

    let graph = checkpointed_call::tape_graph(0.5, 0.7);
    assert_eq!(graph.len(), 5, "{graph}");
    assert!(
        matches!(&graph.nodes()[2].kind, NodeKind::CheckpointedCall { reads, outputs }
            if reads == &[0, 1] && outputs == &(3..4)),
        "{graph}"
    );
    assert_eq!(
        graph.nodes()[3].kind,
        NodeKind::Produced { by: 2, index: 0 }
    );
    // y·x: ∂/∂y = x, ∂/∂x = y.
    let y = oscillator(0.5, 0.7, 10);
    assert_close(&[partial(&graph, 4, 3)], &[0.5], "∂(yx)/∂y");
    assert_close(&[partial(&graph, 4, 0)], &[y], "∂(yx)/∂x");
    let adjoints: Vec<f64> = graph.inputs().map(|n| n.adjoint.unwrap()).collect();
    let reference = finite_difference(|v| checkpointed_call(v[0], v[1]), &[0.5, 0.7]);
    assert_close(&adjoints, &reference, "checkpointed call");
    check_dot(&graph);
}

#[test]
fn several_outputs_are_numbered_and_have_no_adjoints() {
    let (x, y) = (0.5, 0.7);
    let graph = pair::tape_graph(x, y);
    assert_eq!((graph.len(), graph.edges().len()), (4, 3));
    assert_eq!(graph.outputs(), &[Some(2), Some(3)]);
    assert_eq!(graph.nodes()[2].outputs, ["output[0]"]);
    assert_eq!(graph.nodes()[3].outputs, ["output[1]"]);
    assert!(graph.nodes().iter().all(|n| n.adjoint.is_none()));
    assert_eq!(partial(&graph, 2, 0), y);
    assert_eq!(partial(&graph, 2, 1), x);
    assert_close(&[partial(&graph, 3, 0)], &[x.exp()], "∂exp(x)/∂x");
    check_dot(&graph);
}

#[test]
fn mut_parameters_are_inputs_and_outputs() {
    let (a, x) = ([1.0, 2.0, 3.0, 4.0], [0.5, -1.0]);
    let mut y = [10.0, 20.0];
    let graph = gemv::tape_graph(&a, &x, &mut y);
    let labels: Vec<_> = graph.inputs().map(|n| n.input.clone().unwrap()).collect();
    assert_eq!(
        labels,
        ["a[0]", "a[1]", "a[2]", "a[3]", "x[0]", "x[1]", "y[0]", "y[1]"]
    );
    assert_eq!(graph.outputs().len(), 2);
    for (i, output) in graph.outputs().iter().enumerate() {
        let node = output.unwrap();
        // ∂y_i/∂y_i(before) = 1, ∂y_i/∂a_ij = x_j, ∂y_i/∂x_j = a_ij.
        for k in 0..2 {
            let expected = if k == i { 1.0 } else { 0.0 };
            assert_eq!(derivative(&graph, node, 6 + k), expected, "{graph}");
        }
        for j in 0..2 {
            assert_eq!(derivative(&graph, node, 2 * i + j), x[j], "{graph}");
            assert_eq!(derivative(&graph, node, 4 + j), a[2 * i + j], "{graph}");
        }
    }
    check_dot(&graph);
}

#[test]
fn structured_parameters_are_labelled_by_leaf() {
    let graph = norm2::tape_graph(&Point { x: 3.0, y: -4.0 }, 2.0);
    let labels: Vec<_> = graph.inputs().map(|n| n.input.clone().unwrap()).collect();
    assert_eq!(labels, ["p[0]", "p[1]"]);
    let output = graph.outputs()[0].unwrap();
    assert_eq!(partial(&graph, output, 0), 2.0 * 2.0 * 3.0);
    assert_eq!(partial(&graph, output, 1), 2.0 * 2.0 * -4.0);
    check_dot(&graph);
}

#[test]
fn f32_tapes_are_widened() {
    let graph = single_precision::tape_graph(1.5, 2.5);
    let output = graph.outputs()[0].unwrap();
    assert_eq!(partial(&graph, output, 0), 3.5);
    assert_eq!(partial(&graph, output, 1), 1.5);
    check_dot(&graph);
}

#[test]
fn the_listing_has_one_line_per_binding() {
    let graph = chain::tape_graph(0.7, 3.0);
    let listing = graph.to_string();
    let lines: Vec<&str> = listing.lines().collect();
    assert_eq!(lines[0], "tape of chain: 5 bindings (2 inputs), 5 terms");
    assert_eq!(lines.len(), 1 + graph.len());
    assert!(lines[1].trim_start().starts_with("b0 = x"), "{listing}");
    assert!(
        lines[3].trim_start().starts_with("b2 = 1.4·b0"),
        "{listing}"
    );
    assert!(lines[5].contains("→ output"), "{listing}");
    let listing = whole_loop::tape_graph(0.5, 0.7, 4).to_string();
    assert!(
        listing.contains("b2 = loop of 4 iterations reading b0, b1, giving b3..b4"),
        "{listing}"
    );
    assert!(listing.contains("b3 = output 0 of b2"), "{listing}");
}

/// log Σ exp(x_i) with a user-given gradient (softmax).
#[differentiate(custom = logsumexp_gradient)]
fn logsumexp(x: &[f64]) -> f64 {
    let m = x.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    m + x.iter().map(|v| (v - m).exp()).sum::<f64>().ln()
}

fn logsumexp_gradient(x: &[f64]) -> logsumexp::Grad {
    let value = logsumexp(x);
    logsumexp::Grad {
        x: x.iter().map(|v| (v - value).exp()).collect(),
    }
}

#[differentiate(tape)]
fn through_custom(w: &[f64], scale: f64) -> f64 {
    let mut z = Vec::new();
    for v in w {
        z.push(v * scale);
    }
    logsumexp(&z) * scale
}

#[differentiate(tape)]
fn preaccumulated(w: &[f64], #[no_grad] x: &[f64]) -> f64 {
    let mut total = 0.0;
    #[preaccumulate]
    for i in 0..x.len() {
        let t = (w[0] * x[i] + w[1]).tanh();
        total += t * t;
    }
    total
}

#[differentiate(tape)]
fn primitives(a: &[f64], b: &[f64]) -> f64 {
    deltad::dot(a, b) + deltad::sum(a) * deltad::log_sum_exp(b)
}

/// Custom derivatives, preaccumulated loops and vector primitives are
/// ordinary bindings on the tape: the graph shows them without panicking,
/// its adjoints are a sweep over its own edges, and the inputs' adjoints
/// are the gradient (itself checked against finite differences elsewhere:
/// tests/custom.rs, tests/preaccumulate.rs, tests/vector_primitives.rs).
#[test]
fn custom_preaccumulated_and_vector_primitive_bindings() {
    let w = [0.3, -0.5, 0.9];
    let graph = through_custom::tape_graph(&w, 1.5);
    let g = through_custom::grad(&w, 1.5);
    let mut gradient = g.w.clone();
    gradient.push(g.scale);
    let adjoints: Vec<f64> = graph.inputs().map(|n| n.adjoint.unwrap()).collect();
    assert_close(&adjoints, &gradient, "custom");
    let recorded: Vec<f64> = graph.nodes().iter().map(|n| n.adjoint.unwrap()).collect();
    assert_close(
        &recorded,
        &sweep_over_edges(&graph),
        "custom: sweep over the edges",
    );
    check_dot(&graph);

    let x: Vec<f64> = (0..30).map(|i| (i as f64 * 0.21).cos()).collect();
    let graph = preaccumulated::tape_graph(&w[..2], &x);
    let g = preaccumulated::grad(&w[..2], &x);
    let adjoints: Vec<f64> = graph.inputs().map(|n| n.adjoint.unwrap()).collect();
    assert_close(&adjoints, &g.w, "preaccumulated");
    // One iteration at a time is kept: the tape is far shorter than 30
    // iterations of bindings.
    assert!(graph.len() < 10, "{graph}");
    check_dot(&graph);

    let (a, b) = ([1.0, -2.0, 0.5], [0.25, 0.75, -1.0]);
    let graph = primitives::tape_graph(&a, &b);
    let g = primitives::grad(&a, &b);
    let mut gradient = g.a.clone();
    gradient.extend(&g.b);
    let adjoints: Vec<f64> = graph.inputs().map(|n| n.adjoint.unwrap()).collect();
    assert_close(&adjoints, &gradient, "vector primitives");
    let recorded: Vec<f64> = graph.nodes().iter().map(|n| n.adjoint.unwrap()).collect();
    assert_close(
        &recorded,
        &sweep_over_edges(&graph),
        "primitives: sweep over the edges",
    );
    check_dot(&graph);
}

/// Compiled (no `tape` argument): on a caller's tape it is one binding whose
/// terms are its partial derivatives.
#[differentiate]
fn compiled_cube(x: f64, w: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..w.len() {
        s += w[i] * x * x * x;
    }
    s
}

#[differentiate(tape)]
fn calls_compiled(x: f64, w: &[f64], y: f64) -> f64 {
    compiled_cube(x, w) * y
}

#[test]
fn a_compiled_function_is_one_node_on_a_tape() {
    let (x, w, y) = (0.6, [1.5, -0.5], 2.0);
    let graph = calls_compiled::tape_graph(x, &w, y);
    // x, w[0], w[1], y, the compiled call, the product.
    assert_eq!((graph.len(), graph.inputs().count()), (6, 4));
    let total: f64 = w.iter().sum();
    assert_close(&[partial(&graph, 4, 0)], &[3.0 * x * x * total], "∂call/∂x");
    assert_close(&[partial(&graph, 4, 1)], &[x * x * x], "∂call/∂w[0]");
    assert_close(&[partial(&graph, 4, 2)], &[x * x * x], "∂call/∂w[1]");
    let g = calls_compiled::grad(x, &w, y);
    assert_close(
        &[g.x, g.y],
        &[3.0 * x * x * total * y, x * x * x * total],
        "gradient",
    );
    // The compiled function's own graph: its inputs and one node.
    let own = compiled_cube::tape_graph(x, &w);
    assert_eq!((own.len(), own.inputs().count()), (4, 3));
    check_dot(&graph);
}
