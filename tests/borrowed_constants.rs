//! Constant parameters whose types borrow (`View<'a>`, `View<'_>`): they
//! work everywhere except in checkpointed calls, which keep owned copies.

use deltad::differentiate;

struct View<'a> {
    data: &'a [f64],
    scale: f64,
}

#[differentiate]
fn weighted<'a>(x: &[f64], #[no_grad] view: View<'a>) -> f64 {
    let mut s = 0.0;
    for (xi, di) in x.iter().zip(view.data) {
        s += xi * di;
    }
    s * view.scale
}

#[differentiate]
fn labelled(x: f64, #[no_grad] view: &View<'_>, #[no_grad] names: &[&str]) -> f64 {
    x * x * view.scale * names.len() as f64
}

#[test]
fn borrowed_constant_parameters() {
    let data = [1.0, -2.0, 0.5];
    let g = weighted::grad(
        &[3.0, 1.0, 4.0],
        View {
            data: &data,
            scale: 2.0,
        },
    );
    assert_eq!(g.x, vec![2.0, -4.0, 1.0]); // ∂/∂x_i = data_i · scale

    let view = View {
        data: &data,
        scale: 0.5,
    };
    let (value, g) = labelled::value_and_grad(3.0, &view, &["a", "b"]);
    assert_eq!(value, 9.0);
    assert_eq!(g.x, 6.0); // 2x · 0.5 · 2
}
