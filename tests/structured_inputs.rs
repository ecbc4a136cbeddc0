//! Structured inputs: nested collections, tuples, `Option`, user structs and
//! enums, as parameters, locals and return values. Every gradient is checked
//! against central finite differences of the plain function, computed here
//! by hand-written flattening of each input.
#![allow(clippy::all)]

mod common;
use common::*;
use deltad::{differentiate, Differentiable};

// ----- nested collections -------------------------------------------------

/// A mixture-model-like objective over `&[Vec<f64>]` means.
#[differentiate]
fn nearest_mean_loss(means: &[Vec<f64>], #[no_grad] points: &[Vec<f64>]) -> f64 {
    let mut total = 0.0;
    for p in points {
        let mut best = f64::INFINITY;
        for m in means {
            let mut d = 0.0;
            for k in 0..p.len() {
                d += (p[k] - m[k]) * (p[k] - m[k]);
            }
            best = best.min(d);
        }
        total += best;
    }
    total
}

#[test]
fn slices_of_vecs_get_nested_gradients() {
    let means = vec![vec![0.0, 1.0], vec![2.0, -1.0], vec![-1.5, 0.5]];
    let points = vec![
        vec![0.2, 0.9],
        vec![1.8, -0.7],
        vec![-1.0, 1.0],
        vec![2.2, -1.3],
    ];
    let (value, g) = nearest_mean_loss::value_and_grad(&means, &points);
    assert_eq!(value, nearest_mean_loss(&means, &points));
    assert_eq!(g.means.len(), 3);
    assert!(g.means.iter().all(|row| row.len() == 2));
    let flat: Vec<f64> = means.iter().flatten().copied().collect();
    let reference = finite_difference(
        |x| {
            let m: Vec<Vec<f64>> = x.chunks(2).map(|c| c.to_vec()).collect();
            nearest_mean_loss(&m, &points)
        },
        &flat,
    );
    let got: Vec<f64> = g.means.iter().flatten().copied().collect();
    assert_close(&got, &reference, "∂/∂means");
}

/// Bundle-adjustment-like: cameras as `&[[f64; 3]]`, owned `Vec<Vec<f64>>`.
#[differentiate]
fn reprojection(cameras: &[[f64; 3]], points: Vec<Vec<f64>>, #[no_grad] observed: &[f64]) -> f64 {
    let mut error = 0.0;
    for (i, cam) in cameras.iter().enumerate() {
        let p = &points[i % points.len()];
        let projected = cam[0] * p[0] / (p[1] + cam[2]) + cam[1];
        let r = projected - observed[i];
        error += r * r;
    }
    error
}

#[test]
fn slices_of_arrays_and_owned_nested_vecs() {
    let cameras = [[1.0, 0.1, 3.0], [0.9, -0.2, 2.5], [1.1, 0.0, 4.0]];
    let points = vec![vec![0.5, 1.0], vec![-0.3, 2.0]];
    let observed = [0.3, -0.1, 0.2];
    let (value, g) = reprojection::value_and_grad(&cameras, points.clone(), &observed);
    assert_eq!(value, reprojection(&cameras, points.clone(), &observed));
    let mut flat: Vec<f64> = cameras.iter().flatten().copied().collect();
    flat.extend(points.iter().flatten());
    let reference = finite_difference(
        |x| {
            let cams: Vec<[f64; 3]> = x[..9].chunks(3).map(|c| [c[0], c[1], c[2]]).collect();
            let pts: Vec<Vec<f64>> = x[9..].chunks(2).map(|c| c.to_vec()).collect();
            reprojection(&cams, pts, &observed)
        },
        &flat,
    );
    let mut got: Vec<f64> = g.cameras.iter().flatten().copied().collect();
    got.extend(g.points.iter().flatten());
    assert_close(&got, &reference, "∂/∂(cameras, points)");
    reprojection::check_derivatives(&cameras, points, &observed).assert_within(1e-6);
}

// ----- tuples and Option ---------------------------------------------------

#[differentiate]
fn tuples(pair: (f64, f64), weighted: &(Vec<f64>, f64), n: usize) -> f64 {
    let (a, b) = pair;
    let (values, w) = weighted;
    let mut s = a * b;
    for i in 0..n {
        s += values[i] * w;
    }
    s
}

#[test]
fn tuples_by_value_and_by_reference() {
    let weighted = (vec![1.0, 2.0, 3.0], 0.5);
    let (value, g) = tuples::value_and_grad((2.0, 3.0), &weighted, 3);
    assert_eq!(value, tuples((2.0, 3.0), &weighted, 3));
    // Hand-written: ∂/∂a = b, ∂/∂b = a, ∂/∂values = w, ∂/∂w = Σ values.
    assert_eq!(g.pair, (3.0, 2.0));
    assert_eq!(g.weighted, (vec![0.5, 0.5, 0.5], 6.0));
}

#[differentiate]
fn optional_offset(x: f64, offset: Option<f64>) -> f64 {
    match offset {
        Some(o) => x * x + o * x,
        None => x * x,
    }
}

#[test]
fn an_option_gets_a_gradient_of_the_variant_it_had() {
    let g = optional_offset::grad(3.0, Some(2.0));
    assert_eq!((g.x, g.offset), (8.0, Some(3.0)));
    let g = optional_offset::grad(3.0, None);
    assert_eq!((g.x, g.offset), (6.0, None));
}

// ----- user structs and enums ---------------------------------------------

#[derive(Differentiable, Clone, Debug, PartialEq)]
pub struct Layer {
    pub weights: Vec<f64>,
    pub bias: f64,
    #[no_grad]
    pub name: String,
}

#[derive(Differentiable, Clone, Debug, PartialEq)]
pub struct Network {
    pub layers: Vec<Layer>,
    pub scale: f64,
}

#[differentiate]
fn forward(net: &Network, #[no_grad] input: &[f64]) -> f64 {
    let mut out = 0.0;
    for layer in &net.layers {
        let mut z = layer.bias;
        for (w, x) in layer.weights.iter().zip(input) {
            z += w * x;
        }
        out += z.tanh();
    }
    out * net.scale
}

fn network() -> Network {
    Network {
        layers: vec![
            Layer {
                weights: vec![0.5, -0.2],
                bias: 0.1,
                name: "a".into(),
            },
            Layer {
                weights: vec![-0.3, 0.8],
                bias: -0.4,
                name: "b".into(),
            },
        ],
        scale: 1.5,
    }
}

fn network_from(x: &[f64], names: &Network) -> Network {
    Network {
        layers: vec![
            Layer {
                weights: vec![x[0], x[1]],
                bias: x[2],
                name: names.layers[0].name.clone(),
            },
            Layer {
                weights: vec![x[3], x[4]],
                bias: x[5],
                name: names.layers[1].name.clone(),
            },
        ],
        scale: x[6],
    }
}

#[test]
fn nested_user_structs_get_their_gradient_in_their_own_type() {
    let net = network();
    let input = [1.0, 2.0];
    let (value, g) = forward::value_and_grad(&net, &input);
    assert_eq!(value, forward(&net, &input));
    let flat = [0.5, -0.2, 0.1, -0.3, 0.8, -0.4, 1.5];
    let reference = finite_difference(|x| forward(&network_from(x, &net), &input), &flat);
    let g = g.net;
    assert_eq!(g.layers[0].name, "a", "constant fields keep their value");
    let got = [
        g.layers[0].weights[0],
        g.layers[0].weights[1],
        g.layers[0].bias,
        g.layers[1].weights[0],
        g.layers[1].weights[1],
        g.layers[1].bias,
        g.scale,
    ];
    assert_close(&got, &reference, "∂/∂net");
}

/// A struct built, returned and passed on inside differentiated code.
#[differentiate]
fn shifted(layer: &Layer, by: f64) -> Layer {
    let mut weights = Vec::new();
    for w in &layer.weights {
        weights.push(w + by);
    }
    Layer {
        weights,
        bias: layer.bias * by,
        name: layer.name.clone(),
    }
}

#[differentiate]
fn shifted_sum(layer: &Layer, by: f64) -> f64 {
    let moved = shifted(layer, by);
    let Layer { weights, bias, .. } = moved;
    weights.iter().sum::<f64>() + bias
}

#[test]
fn structs_as_locals_and_return_values() {
    let layer = Layer {
        weights: vec![1.0, 2.0, 3.0],
        bias: 0.5,
        name: "l".into(),
    };
    let (value, g) = shifted_sum::value_and_grad(&layer, 2.0);
    assert_eq!(value, shifted_sum(&layer, 2.0));
    // Hand-written: Σ(w + by) + bias·by.
    assert_eq!(g.layer.weights, vec![1.0, 1.0, 1.0]);
    assert_eq!(g.layer.bias, 2.0);
    assert_eq!(g.by, 3.0 + 0.5);
    let (out, rows) = shifted::jacobian(&layer, 2.0);
    assert_eq!(out, shifted(&layer, 2.0));
    assert_eq!(
        rows.len(),
        4,
        "one row per real of the output, in leaf order"
    );
    assert_eq!(rows[3].by, 0.5, "the bias comes after the weights");
}

#[derive(Differentiable, Clone, Debug, PartialEq)]
pub enum Shape {
    Circle { radius: f64 },
    Rectangle(f64, f64),
    Point,
}

#[differentiate]
fn area(shape: &Shape, scale: f64) -> f64 {
    match shape {
        Shape::Circle { radius } => std::f64::consts::PI * radius * radius * scale,
        Shape::Rectangle(w, h) => w * h * scale,
        Shape::Point => scale,
    }
}

#[differentiate]
fn grown(shape: &Shape, by: f64) -> Shape {
    match shape {
        Shape::Circle { radius } => Shape::Circle {
            radius: radius + by,
        },
        Shape::Rectangle(w, h) => Shape::Rectangle(w + by, h * by),
        Shape::Point => Shape::Point,
    }
}

#[differentiate]
fn grown_area(shape: &Shape, by: f64) -> f64 {
    area(&grown(shape, by), 1.0)
}

#[test]
fn enum_gradients_follow_the_variant_the_input_had() {
    let circle = Shape::Circle { radius: 2.0 };
    let g = area::grad(&circle, 3.0);
    assert_eq!(
        g.shape,
        Shape::Circle {
            radius: 2.0 * std::f64::consts::PI * 2.0 * 3.0
        }
    );
    let g = area::grad(&Shape::Rectangle(2.0, 5.0), 1.5);
    assert_eq!(g.shape, Shape::Rectangle(5.0 * 1.5, 2.0 * 1.5));
    assert_eq!(g.scale, 10.0);
    let g = area::grad(&Shape::Point, 1.5);
    assert_eq!((g.shape, g.scale), (Shape::Point, 1.0));
    // Built inside differentiated code: (w + by)·(h·by).
    let (value, g) = grown_area::value_and_grad(&Shape::Rectangle(2.0, 5.0), 3.0);
    assert_eq!(value, 5.0 * 15.0);
    assert_eq!(g.shape, Shape::Rectangle(15.0, 5.0 * 3.0));
    assert_eq!(g.by, 15.0 + 5.0 * 5.0);
}

// ----- nested collections passed on to other differentiated functions -----

#[differentiate]
fn corner_product(w: &Vec<Vec<f64>>) -> f64 {
    w[0][0] * w[1][1]
}

#[differentiate]
fn corner_product_of_slice(w: &[Vec<f64>]) -> f64 {
    w[0][0] * w[1][1]
}

#[differentiate]
fn pair_product(w: &Vec<[f64; 2]>) -> f64 {
    w[0][0] * w[1][1]
}

/// `&Vec<Vec<f64>>` passed to callees taking `&Vec<Vec<f64>>` and
/// `&[Vec<f64>]`, and `&Vec<[f64; 2]>` to `&Vec<[f64; 2]>`.
#[differentiate]
fn passes_nested_on(w: &Vec<Vec<f64>>, v: &Vec<[f64; 2]>) -> f64 {
    corner_product(w) + 3.0 * corner_product_of_slice(w) + pair_product(v) * w[0][1]
}

#[test]
fn nested_collections_passed_on_to_differentiated_callees() {
    let w = vec![vec![1.5, -0.5], vec![2.0, 0.25]];
    let v = vec![[0.75, 1.25], [-1.0, 2.5]];
    let g = passes_nested_on::grad(&w, &v);
    // f = 4 w00 w11 + v00 v11 w01.
    let (w00, w01, w11) = (w[0][0], w[0][1], w[1][1]);
    let (v00, v11) = (v[0][0], v[1][1]);
    assert_eq!(g.w, vec![vec![4.0 * w11, v00 * v11], vec![0.0, 4.0 * w00]]);
    assert_eq!(g.v, vec![[v11 * w01, 0.0], [0.0, v00 * w01]]);
}

/// A constant nested collection and a constant struct passed from a
/// function on the compiled path to callees that differentiate them (the
/// callees stay on the tape).
#[differentiate]
fn scaled_corner(w: &Vec<Vec<f64>>, s: f64) -> f64 {
    w[0][0] * w[1][1] * s * s
}

#[differentiate]
fn constants_passed_on(s: f64, #[no_grad] data: &Vec<Vec<f64>>, #[no_grad] p: &Point) -> f64 {
    scaled_corner(data, s) + scaled_distance(p, s)
}

#[derive(Differentiable, Clone, Debug, PartialEq)]
pub struct Point {
    pub x: f64,
    pub y: f64,
}

#[differentiate]
fn scaled_distance(p: &Point, s: f64) -> f64 {
    (p.x * p.x + p.y * p.y) * s
}

#[test]
fn constants_of_structured_types_passed_from_the_compiled_path() {
    let data = vec![vec![2.0, 0.0], vec![0.0, 3.0]];
    let p = Point { x: 0.5, y: -1.5 };
    let s = 1.25;
    let g = constants_passed_on::grad(s, &data, &p);
    // f = 6 s² + 2.5 s.
    assert_eq!(g.s, 12.0 * s + 2.5);
    let (value, tangent) =
        constants_passed_on::jvp(s, &data, &p, &constants_passed_on::Grad { s: 1.0 });
    assert_eq!((value, tangent), (6.0 * s * s + 2.5 * s, 12.0 * s + 2.5));
    assert_eq!(constants_passed_on::hessian(s, &data, &p)[0].s, 12.0);
}

/// A `collect()` whose type only the derived struct's field gives.
#[derive(Differentiable, Clone, Debug, PartialEq)]
pub struct Poly {
    pub coeffs: Vec<f64>,
    pub scale: f64,
}

#[differentiate]
fn collected_into_a_field(x: &[f64], s: f64) -> f64 {
    let p = Poly {
        coeffs: x.iter().map(|v| v * s).collect(),
        scale: s,
    };
    let total: f64 = p.coeffs.iter().sum();
    total * p.scale
}

#[test]
fn collect_typed_by_a_struct_field() {
    let (x, s) = ([1.0, 2.0, -0.5], 3.0);
    let g = collected_into_a_field::grad(&x, s);
    // s² Σx.
    let sum: f64 = x.iter().sum();
    assert_eq!(g.x, vec![s * s; 3]);
    assert_eq!(g.s, 2.0 * s * sum);
}
