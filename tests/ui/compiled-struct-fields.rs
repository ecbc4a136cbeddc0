use deltad::{differentiate, Differentiable};

#[derive(Differentiable, Clone, Copy)]
struct Spring {
    k: f64,
    coils: u32,
}

// The macro infers a field's type from its uses; here nothing says
// whether `coils` is a real, so the compiled path cannot take the cast.
#[differentiate(compiled)]
fn stretch(s: &Spring, x: f64) -> f64 {
    s.k * x * s.coils as f64
}

// A parameter of a user type returned whole.
#[differentiate(compiled)]
fn returned(s: &Spring) -> Spring {
    *s
}

#[differentiate]
fn tension(s: &Spring, x: f64) -> f64 {
    s.k * x
}

// A literal passed whole takes its fields' types into the callee's twin:
// `coils`, only copied here, has none the macro can see.
#[differentiate(compiled)]
fn copied_into_a_literal(s: &Spring, x: f64) -> f64 {
    tension(&Spring { k: x, coils: s.coils }, x)
}

#[differentiate]
fn make(x: f64) -> Spring {
    Spring { k: x, coils: 3 }
}

// A field of a call's result is named by the call.
#[differentiate(compiled)]
fn count(x: f64) -> f64 {
    x * make(x).coils as f64
}

fn main() {}

#[differentiate]
fn joined(a: &Spring, b: &Spring) -> f64 {
    a.k * b.k
}

// One value, or two elements of one buffer, passed to two parameters of a
// call: the callee's adjoint would add into one adjoint through two
// borrows at once.
#[differentiate(compiled)]
fn joined_with_itself(s: &Spring) -> f64 {
    joined(s, s)
}

#[differentiate(compiled)]
fn neighbours(s: &[Spring]) -> f64 {
    joined(&s[0], &s[1])
}

#[derive(Differentiable, Clone)]
struct Mesh {
    springs: Vec<Spring>,
}

// The elements of a buffer field are read by element; elements that are
// values of a user type are not on the compiled path.
#[differentiate(compiled)]
fn mesh_energy(m: &Mesh, x: f64) -> f64 {
    let mut e = 0.0;
    for s in m.springs.iter() {
        e += s.k * x;
    }
    e
}
