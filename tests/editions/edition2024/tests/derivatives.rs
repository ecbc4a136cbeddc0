//! The derivatives of the edition-2024 functions against hand-written ones.

use deltad_edition2024::*;

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-12 * b.abs().max(1.0)
}

#[test]
fn enum_area_matches_hand_derivative() {
    let g = area::grad(&Shape::Circle(1.5));
    assert_eq!(g.s, Shape::Circle(2.0 * std::f64::consts::PI * 1.5));
    let g = area::grad(&Shape::Rect { w: 2.0, h: 3.0 });
    assert_eq!(g.s, Shape::Rect { w: 3.0, h: 2.0 });
}

#[test]
fn quadrature_matches_hand_derivative() {
    // Trapezoid on 4 intervals of ∫_0^1 k² x² dx: k² · T, T = h (Σ x_i² - (0 + 1)/2), h = 1/4.
    let h = 0.25;
    let t = h * ((0..=4).map(|i| (i as f64 * h).powi(2)).sum::<f64>() - 0.5);
    let k = 1.7;
    assert!(close(quadrature(k, None), k * k * t));
    let g = quadrature::grad(k, None);
    assert!(close(g.k, 2.0 * k * t));
    assert_eq!(g.extra, None);
    let g = quadrature::grad(k, Some(0.4));
    assert!(close(g.k, 2.0 * k * t));
    assert!(close(g.extra.unwrap(), 0.4f64.cos()));
    let (_, tangent) = quadrature::jvp(
        k,
        Some(0.4),
        &quadrature::Grad {
            k: 1.0,
            extra: Some(0.0),
        },
    );
    assert!(close(tangent, 2.0 * k * t));
}

#[test]
fn keyword_parameters() {
    let g = keywords::grad(2.0, &[8.0, 1.0]);
    // sqrt(gen · try0): ∂/∂gen = try0 / (2 sqrt(16)), ∂/∂try0 = gen / (2 sqrt(16))
    assert!(close(g.r#gen, 8.0 / 8.0));
    assert!(close(g.r#try[0], 2.0 / 8.0));
    assert!(close(g.r#try[1], 1.0));
}
