//! A recorded tape as a graph (seed 001 §3.5.4: seeing the trace).
//!
//! [`TapeGraph`] is a copy of one recording: a node per Delta binding with
//! its terms (the local partial derivatives, the paper's `Scale c (Var a)`),
//! an edge from each argument to the binding that uses it, the inputs
//! labelled with their parameter (`x[3]`) and the outputs marked. It prints
//! as a listing of the bindings ([`Display`](core::fmt::Display)) and exports
//! as Graphviz DOT ([`TapeGraph::to_dot`]). Every annotated function `f` has
//! `f::tape_graph(args)`, which records `f` on `args` and returns its graph.
//!
//! Special bindings become one node each: a sum collected over a loop is an
//! ordinary node with all its terms; a loop recorded as a whole, a
//! checkpointed loop and a checkpointed call are a box reading the bindings
//! it depends on, with one node per real it produces (their partials live in
//! the loop's stored local Jacobians, which the graph does not expand).

use core::fmt;
use core::fmt::Write as _;
use core::ops::Range;

use crate::scalar::Primitive;
use crate::tape::{DeltaId, SpecialView, Tape};

/// One term of a binding: `coefficient · b{argument}`, the local partial
/// derivative of the binding with respect to an earlier one.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GraphTerm {
    /// The partial derivative (widened to `f64` for an `f32` tape).
    pub coefficient: f64,
    /// The id of the binding it multiplies.
    pub argument: usize,
}

/// What a node of a [`TapeGraph`] stands for.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum NodeKind {
    /// A binding without terms: an input (a differentiated real of an
    /// argument).
    Input,
    /// `Σ coefficient · argument` over the node's terms (a single
    /// operation, a fused expression, a custom primitive's output, or a sum
    /// collected over a loop).
    Linear,
    /// A sum collected over a loop (an accumulator or a vector primitive
    /// with more terms than fit inline): like `Linear`, with `collected` of
    /// its terms gathered during the loop.
    Accumulated {
        /// How many of the node's terms were collected over the loop.
        collected: usize,
    },
    /// A loop recorded as a whole: it reads `reads`, runs `iterations`
    /// iterations whose local Jacobians are stored compactly, and produces
    /// the bindings `outputs` (the loop's state after it).
    Loop {
        /// Iterations recorded.
        iterations: usize,
        /// The bindings the loop reads (state before the loop, invariants,
        /// elements), each once, in id order.
        reads: Vec<usize>,
        /// The bindings of its outputs.
        outputs: Range<usize>,
    },
    /// A checkpointed loop: re-run segment by segment during the sweep.
    CheckpointedLoop {
        /// The bindings the loop reads, each once, in id order.
        reads: Vec<usize>,
        /// The bindings of its outputs.
        outputs: Range<usize>,
    },
    /// A checkpointed call: re-run with recording during the sweep.
    CheckpointedCall {
        /// The bindings the call reads, each once, in id order.
        reads: Vec<usize>,
        /// The bindings of its outputs.
        outputs: Range<usize>,
    },
    /// Output `index` of the loop or call recorded at binding `by`.
    Produced {
        /// The id of the loop's or call's node.
        by: usize,
        /// Which of its outputs this is.
        index: usize,
    },
}

/// One binding of a [`TapeGraph`].
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct GraphNode {
    /// The binding's id (its position on the tape).
    pub id: usize,
    /// What the binding is.
    pub kind: NodeKind,
    /// Its terms (empty for inputs and for the nodes of loops and calls).
    pub terms: Vec<GraphTerm>,
    /// For an input: its parameter, with the index of the real within it for
    /// parameters holding several (`x[3]`).
    pub input: Option<String>,
    /// The outputs this binding is (`output`, or `output[k]` when the result
    /// has several reals); empty for the others.
    pub outputs: Vec<String>,
    /// The derivative of the output with respect to this binding (its
    /// adjoint after the reverse sweep), when the result is one real (not
    /// for the node of a loop or call, whose outputs have adjoints).
    pub adjoint: Option<f64>,
}

/// An edge of a [`TapeGraph`]: binding `to` depends on binding `from`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GraphEdge {
    /// The binding read.
    pub from: usize,
    /// The binding reading it.
    pub to: usize,
    /// The partial derivative of `to` with respect to `from`, for a term;
    /// `None` for the reads of a loop or call and for its outputs.
    pub coefficient: Option<f64>,
}

/// The inputs of one parameter, for [`TapeGraph::from_tape`]: the bindings
/// `bindings` hold the reals of parameter `name`; `indexed` labels them
/// `name[k]` (a parameter holding several reals) rather than `name`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InputLabel<'a> {
    /// The parameter's name.
    pub name: &'a str,
    /// The ids of its input bindings.
    pub bindings: Range<usize>,
    /// Label each binding with its index within the parameter.
    pub indexed: bool,
}

/// A recorded tape as a graph: nodes are Delta bindings with their
/// coefficients, edges their dependencies, inputs and outputs marked.
///
/// Made by `f::tape_graph(args)` for any `#[differentiate]` function `f`.
/// `Display` prints one line per binding; [`to_dot`](Self::to_dot) gives
/// Graphviz DOT (`dot -Tsvg graph.dot -o graph.svg` draws it).
///
/// ```
/// #[deltad::differentiate]
/// fn f(x: f64, y: f64) -> f64 {
///     x * y + x.sin()
/// }
///
/// # fn main() {
/// let graph = f::tape_graph(2.0, 3.0);
/// assert_eq!(graph.inputs().count(), 2);
/// let output = graph.node(graph.outputs()[0].unwrap()).unwrap();
/// // The adjoints of the inputs are the gradient: (y + cos x, x).
/// assert_eq!(graph.node(1).unwrap().adjoint, Some(2.0));
/// println!("{graph}");
/// assert!(graph.to_dot().starts_with("digraph"));
/// # let _ = output;
/// # }
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct TapeGraph {
    function: String,
    nodes: Vec<GraphNode>,
    outputs: Vec<Option<usize>>,
}

impl TapeGraph {
    /// The graph of what `tape` holds: `inputs` label the input bindings,
    /// `outputs` are the bindings of the result's reals in order (`None` for
    /// a real that depends on no input). When the result is one real
    /// recorded on the tape, every node also gets its adjoint (one reverse
    /// sweep over the tape).
    pub fn from_tape<P: Primitive>(
        tape: &Tape<P>,
        function: &str,
        inputs: &[InputLabel<'_>],
        outputs: &[Option<DeltaId>],
    ) -> TapeGraph {
        let mut nodes: Vec<GraphNode> = tape
            .views()
            .into_iter()
            .enumerate()
            .map(|(id, view)| {
                let terms = view
                    .terms
                    .iter()
                    .map(|&(coefficient, argument)| GraphTerm {
                        coefficient: coefficient.to_f64(),
                        argument: argument as usize,
                    })
                    .collect::<Vec<_>>();
                let outputs_after = |count: usize| id + 1..id + 1 + count;
                let widen = |reads: Vec<u32>| reads.into_iter().map(|r| r as usize).collect();
                let kind = match view.special {
                    Some(SpecialView::Accumulated { collected }) => {
                        NodeKind::Accumulated { collected }
                    }
                    Some(SpecialView::Loop {
                        iterations,
                        reads,
                        outputs,
                    }) => NodeKind::Loop {
                        iterations,
                        reads: widen(reads),
                        outputs: outputs_after(outputs),
                    },
                    Some(SpecialView::CheckpointedLoop { reads, outputs }) => {
                        NodeKind::CheckpointedLoop {
                            reads: widen(reads),
                            outputs: outputs_after(outputs),
                        }
                    }
                    Some(SpecialView::CheckpointedCall { reads, outputs }) => {
                        NodeKind::CheckpointedCall {
                            reads: widen(reads),
                            outputs: outputs_after(outputs),
                        }
                    }
                    None if terms.is_empty() => NodeKind::Input,
                    None => NodeKind::Linear,
                };
                GraphNode {
                    id,
                    kind,
                    terms,
                    input: None,
                    outputs: Vec::new(),
                    adjoint: None,
                }
            })
            .collect();
        // The outputs of loops and calls are bindings without terms: mark
        // them as produced by their loop or call.
        for id in 0..nodes.len() {
            let produced = match &nodes[id].kind {
                NodeKind::Loop { outputs, .. }
                | NodeKind::CheckpointedLoop { outputs, .. }
                | NodeKind::CheckpointedCall { outputs, .. } => outputs.clone(),
                _ => continue,
            };
            for (index, output) in produced.enumerate() {
                if let Some(node) = nodes.get_mut(output) {
                    node.kind = NodeKind::Produced { by: id, index };
                }
            }
        }
        for label in inputs {
            for (k, id) in label.bindings.clone().enumerate() {
                if let Some(node) = nodes.get_mut(id) {
                    node.input = Some(if label.indexed {
                        format!("{}[{k}]", label.name)
                    } else {
                        label.name.to_string()
                    });
                }
            }
        }
        let single = outputs.len() == 1;
        for (k, output) in outputs.iter().enumerate() {
            if let Some(node) = output.and_then(|id| nodes.get_mut(id.index())) {
                node.outputs.push(if single {
                    "output".to_string()
                } else {
                    format!("output[{k}]")
                });
            }
        }
        if let [Some(output)] = outputs {
            let mut adjoints = Vec::new();
            tape.gradient_into(Some(*output), P::ONE, &mut adjoints);
            for (node, adjoint) in nodes.iter_mut().zip(adjoints) {
                // A loop's or call's own binding only marks its place: the
                // adjoints are those of its outputs.
                if special_reads(&node.kind).is_none() {
                    node.adjoint = Some(adjoint.to_f64());
                }
            }
        }
        TapeGraph {
            function: function.to_string(),
            nodes,
            outputs: outputs.iter().map(|o| o.map(DeltaId::index)).collect(),
        }
    }

    /// The name of the function recorded.
    pub fn function(&self) -> &str {
        &self.function
    }

    /// Every binding, by id.
    pub fn nodes(&self) -> &[GraphNode] {
        &self.nodes
    }

    /// The binding `id`, if the tape has one.
    pub fn node(&self, id: usize) -> Option<&GraphNode> {
        self.nodes.get(id)
    }

    /// The number of bindings.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// True if nothing was recorded (no input is differentiated).
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// The input bindings, in id order.
    pub fn inputs(&self) -> impl Iterator<Item = &GraphNode> + '_ {
        self.nodes
            .iter()
            .filter(|node| node.kind == NodeKind::Input)
    }

    /// The binding of each real of the result, in order (`None`: the real
    /// depends on no input).
    pub fn outputs(&self) -> &[Option<usize>] {
        &self.outputs
    }

    /// The terms of all bindings (the partial derivatives recorded).
    pub fn term_count(&self) -> usize {
        self.nodes.iter().map(|node| node.terms.len()).sum()
    }

    /// Every dependency: one edge per term, one per binding a loop or call
    /// reads, and one from a loop or call to each of its outputs.
    pub fn edges(&self) -> Vec<GraphEdge> {
        let mut edges = Vec::new();
        for node in &self.nodes {
            for term in &node.terms {
                edges.push(GraphEdge {
                    from: term.argument,
                    to: node.id,
                    coefficient: Some(term.coefficient),
                });
            }
            if let Some(reads) = special_reads(&node.kind) {
                for &read in reads {
                    edges.push(GraphEdge {
                        from: read,
                        to: node.id,
                        coefficient: None,
                    });
                }
            }
            if let NodeKind::Produced { by, .. } = node.kind {
                edges.push(GraphEdge {
                    from: by,
                    to: node.id,
                    coefficient: None,
                });
            }
        }
        edges
    }

    /// The graph in Graphviz DOT: a box per binding (inputs as filled
    /// ellipses labelled with their parameter, outputs with a double border
    /// and an arrow to an `output` marker, loops and calls as 3-d boxes),
    /// an edge per dependency labelled with its coefficient, and each node's
    /// adjoint when the graph has them. Render it with
    /// `dot -Tsvg tape.dot -o tape.svg` (Debian package `graphviz`).
    pub fn to_dot(&self) -> String {
        let mut dot = String::new();
        let _ = writeln!(
            dot,
            "digraph {} {{",
            quoted(&format!("tape of {}", self.function))
        );
        dot.push_str("  rankdir=LR;\n");
        dot.push_str("  node [shape=box, fontname=\"monospace\", fontsize=11];\n");
        dot.push_str("  edge [fontname=\"monospace\", fontsize=10];\n");
        for node in &self.nodes {
            let mut label = format!("b{}", node.id);
            let mut attributes = Vec::new();
            match &node.kind {
                NodeKind::Input => {
                    if let Some(input) = &node.input {
                        let _ = write!(label, "\n{input}");
                    } else {
                        label.push_str("\ninput");
                    }
                    attributes.push("shape=ellipse, style=filled, fillcolor=\"#cfe2ff\"");
                }
                NodeKind::Linear => {}
                NodeKind::Accumulated { collected } => {
                    let _ = write!(label, "\nsum collected over a loop ({collected} terms)");
                }
                NodeKind::Loop { iterations, .. } => {
                    let _ = write!(label, "\nloop, {iterations} iterations");
                    attributes.push("shape=box3d, style=filled, fillcolor=\"#fff3cd\"");
                }
                NodeKind::CheckpointedLoop { .. } => {
                    label.push_str("\ncheckpointed loop");
                    attributes.push("shape=box3d, style=filled, fillcolor=\"#fff3cd\"");
                }
                NodeKind::CheckpointedCall { .. } => {
                    label.push_str("\ncheckpointed call");
                    attributes.push("shape=box3d, style=filled, fillcolor=\"#fff3cd\"");
                }
                NodeKind::Produced { by, index } => {
                    let _ = write!(label, "\noutput {index} of b{by}");
                }
            }
            if let Some(adjoint) = node.adjoint {
                let _ = write!(label, "\nadjoint {}", number(adjoint));
            }
            if !node.outputs.is_empty() {
                attributes.push("peripheries=2, color=\"#b02a37\"");
            }
            let mut line = format!("  b{} [label={}", node.id, quoted(&label));
            for attribute in attributes {
                let _ = write!(line, ", {attribute}");
            }
            line.push_str("];\n");
            dot.push_str(&line);
        }
        for edge in self.edges() {
            let _ = write!(dot, "  b{} -> b{}", edge.from, edge.to);
            match edge.coefficient {
                Some(coefficient) => {
                    let _ = writeln!(dot, " [label={}];", quoted(&number(coefficient)));
                }
                None => dot.push_str(" [style=dashed];\n"),
            }
        }
        let single = self.outputs.len() == 1;
        for (k, output) in self.outputs.iter().enumerate() {
            let name = if single {
                "output".to_string()
            } else {
                format!("output[{k}]")
            };
            match output {
                Some(id) => {
                    let _ = writeln!(
                        dot,
                        "  out{k} [label={}, shape=plaintext, fontcolor=\"#b02a37\"];",
                        quoted(&name)
                    );
                    let _ = writeln!(dot, "  b{id} -> out{k} [color=\"#b02a37\"];");
                }
                None => {
                    let _ = writeln!(
                        dot,
                        "  out{k} [label={}, shape=plaintext];",
                        quoted(&format!("{name}: constant"))
                    );
                }
            }
        }
        dot.push_str("}\n");
        dot
    }

    /// Writes [`to_dot`](Self::to_dot) to `path`.
    pub fn write_dot(&self, path: impl AsRef<std::path::Path>) -> std::io::Result<()> {
        std::fs::write(path, self.to_dot())
    }
}

/// The bindings a loop or call node reads.
fn special_reads(kind: &NodeKind) -> Option<&[usize]> {
    match kind {
        NodeKind::Loop { reads, .. }
        | NodeKind::CheckpointedLoop { reads, .. }
        | NodeKind::CheckpointedCall { reads, .. } => Some(reads),
        _ => None,
    }
}

/// A coefficient, short: six significant digits, exponent notation for
/// very large or small magnitudes.
fn number(x: f64) -> String {
    if x == 0.0 || !x.is_finite() {
        return format!("{x}");
    }
    let magnitude = x.abs();
    if !(1e-4..1e6).contains(&magnitude) {
        return format!("{x:.4e}");
    }
    let digits = (5 - magnitude.log10().floor() as i32).max(0) as usize;
    let text = format!("{x:.digits$}");
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        text
    }
}

/// A DOT string literal.
fn quoted(text: &str) -> String {
    let mut quoted = String::with_capacity(text.len() + 2);
    quoted.push('"');
    for c in text.chars() {
        match c {
            '"' => quoted.push_str("\\\""),
            '\\' => quoted.push_str("\\\\"),
            '\n' => quoted.push_str("\\n"),
            c => quoted.push(c),
        }
    }
    quoted.push('"');
    quoted
}

/// One line per binding:
///
/// ```text
/// tape of f: 4 bindings (2 inputs), 3 terms
///   b0 = x                          adjoint 2.58385
///   b1 = y                          adjoint 2
///   b2 = 3·b0 + 2·b1                adjoint 1
///   ...
/// ```
impl fmt::Display for TapeGraph {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "tape of {}: {} bindings ({} inputs), {} terms",
            self.function,
            self.nodes.len(),
            self.inputs().count(),
            self.term_count()
        )?;
        let lines: Vec<String> = self.nodes.iter().map(definition).collect();
        let width = lines.iter().map(|l| l.chars().count()).max().unwrap_or(0);
        for (node, line) in self.nodes.iter().zip(&lines) {
            let mut notes = Vec::new();
            if let Some(adjoint) = node.adjoint {
                notes.push(format!("adjoint {}", number(adjoint)));
            }
            if !node.outputs.is_empty() {
                notes.push(format!("→ {}", node.outputs.join(", ")));
            }
            if notes.is_empty() {
                writeln!(f, "  {line}")?;
            } else {
                let pad = width - line.chars().count();
                writeln!(f, "  {line}{:pad$}   {}", "", notes.join("   "))?;
            }
        }
        for (k, output) in self.outputs.iter().enumerate() {
            if output.is_none() {
                writeln!(f, "  output[{k}] is a constant (depends on no input)")?;
            }
        }
        Ok(())
    }
}

/// `b5 = 2·b0 + -1·b1`, `b0 = x[0]`, `b4 = loop (..) reading b0, b1`.
fn definition(node: &GraphNode) -> String {
    let id = node.id;
    let reads = |reads: &[usize]| {
        if reads.is_empty() {
            "no binding".to_string()
        } else {
            reads
                .iter()
                .map(|r| format!("b{r}"))
                .collect::<Vec<_>>()
                .join(", ")
        }
    };
    let outputs = |o: &Range<usize>| match o.len() {
        1 => format!("b{}", o.start),
        _ => format!("b{}..b{}", o.start, o.end.saturating_sub(1)),
    };
    match &node.kind {
        NodeKind::Input => match &node.input {
            Some(input) => format!("b{id} = {input}"),
            None => format!("b{id} = input"),
        },
        NodeKind::Linear | NodeKind::Accumulated { .. } => {
            let mut line = format!("b{id} = ");
            if node.terms.is_empty() {
                line.push('0');
            }
            for (k, term) in node.terms.iter().enumerate() {
                if k > 0 {
                    line.push_str(" + ");
                }
                let _ = write!(line, "{}·b{}", number(term.coefficient), term.argument);
            }
            if let NodeKind::Accumulated { collected } = node.kind {
                let _ = write!(line, "   ({collected} terms collected over a loop)");
            }
            line
        }
        NodeKind::Loop {
            iterations,
            reads: r,
            outputs: o,
        } => format!(
            "b{id} = loop of {iterations} iterations reading {}, giving {}",
            reads(r),
            outputs(o)
        ),
        NodeKind::CheckpointedLoop {
            reads: r,
            outputs: o,
        } => format!(
            "b{id} = checkpointed loop reading {}, giving {}",
            reads(r),
            outputs(o)
        ),
        NodeKind::CheckpointedCall {
            reads: r,
            outputs: o,
        } => format!(
            "b{id} = checkpointed call reading {}, giving {}",
            reads(r),
            outputs(o)
        ),
        NodeKind::Produced { by, index } => format!("b{id} = output {index} of b{by}"),
    }
}

#[cfg(test)]
mod tests {
    use super::{number, quoted};

    #[test]
    fn numbers_are_short() {
        assert_eq!(number(2.0), "2");
        assert_eq!(number(-0.5), "-0.5");
        assert_eq!(number(0.5403023058681398), "0.540302");
        assert_eq!(number(123.456789), "123.457");
        assert_eq!(number(1e-7), "1.0000e-7");
        assert_eq!(number(0.0), "0");
    }

    #[test]
    fn dot_strings_are_escaped() {
        assert_eq!(quoted("a\"b\nc"), "\"a\\\"b\\nc\"");
    }
}
