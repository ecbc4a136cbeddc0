//! Differentiated functions and derived types in a `#[no_implicit_prelude]`
//! module: the generated code names everything by absolute paths.
#![allow(clippy::all)]

#[no_implicit_prelude]
mod bare {
    use ::deltad::{differentiate, Differentiable};
    use ::std::option::Option::{None, Some};
    use ::std::vec::Vec;

    #[derive(Differentiable, Debug, PartialEq)]
    pub struct Particle {
        pub position: [f64; 2],
        pub weights: Vec<f64>,
        #[no_grad]
        pub id: usize,
    }

    impl ::std::clone::Clone for Particle {
        fn clone(&self) -> Self {
            Particle {
                position: self.position,
                weights: ::std::clone::Clone::clone(&self.weights),
                id: self.id,
            }
        }
    }

    #[differentiate]
    pub fn energy(p: &Particle, k: f64, data: Vec<f64>) -> f64 {
        let mut e = 0.5 * k * (p.position[0] * p.position[0] + p.position[1] * p.position[1]);
        for i in 0..data.len() {
            e += p.weights[i] * data[i];
        }
        if e > 100.0 {
            return e.ln();
        }
        match data.first() {
            Some(d) => e * d,
            None => e,
        }
    }

    #[differentiate]
    pub fn outputs(x: &[f64]) -> (f64, Vec<f64>) {
        let mut squares = Vec::new();
        for v in x.iter() {
            squares.push(v * v);
        }
        (x[0] * x[1], squares)
    }
}

fn main() {
    let p = bare::Particle {
        position: [1.0, 2.0],
        weights: vec![0.5, -1.0],
        id: 7,
    };
    let data = vec![2.0, 3.0];
    let k = 3.0;
    // e = k/2 |pos|² + w·data = 7.5 - 2.0 = 5.5; value e * data[0]
    assert_eq!(bare::energy(&p, k, data.clone()), 11.0);
    let g = bare::energy::grad(&p, k, data.clone());
    assert_eq!(g.p.position, [2.0 * k * 1.0, 2.0 * k * 2.0]);
    assert_eq!(g.p.weights, vec![4.0, 6.0]);
    assert_eq!(g.p.id, 7);
    assert_eq!(g.k, 2.0 * 0.5 * 5.0);
    let (value, rows) = bare::outputs::jacobian(&[1.0, -2.0, 3.0]);
    assert_eq!(value, (-2.0, vec![1.0, 4.0, 9.0]));
    assert_eq!(rows.len(), 4);
    assert_eq!(rows[0].x, vec![-2.0, 1.0, 0.0]);
    assert_eq!(rows[1].x, vec![2.0, 0.0, 0.0]);
    assert_eq!(rows[2].x, vec![0.0, -4.0, 0.0]);
    assert_eq!(rows[3].x, vec![0.0, 0.0, 6.0]);
}
