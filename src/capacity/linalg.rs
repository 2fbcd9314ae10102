//! The few dense linear-algebra steps the fit needs: solving and inverting small symmetric
//! positive (semi)definite systems (normal equations, at most 3 × 3).
//!
//! The USL's columns differ by many orders of magnitude (∂X/∂κ grows like N³, ∂X/∂λ like 1),
//! so every system is equilibrated first (scaled to a unit diagonal, Jacobi scaling); only then
//! is a pivot compared with a fixed threshold to call the system singular.

/// A pivot below this, on an equilibrated matrix (unit diagonal), means the columns are
/// dependent to within about eight significant digits: the data cannot separate the unknowns.
const SINGULAR_PIVOT: f64 = 1e-12;

/// Solves `a · x = b` for a symmetric matrix with a positive diagonal; `None` when a diagonal
/// entry is not positive or the system is singular after equilibration.
pub(super) fn solve<const K: usize>(a: [[f64; K]; K], b: [f64; K]) -> Option<[f64; K]> {
    let scale = equilibration(&a)?;
    let mut m = [[0.0; K]; K];
    let mut rhs = [0.0; K];
    for i in 0..K {
        for j in 0..K {
            m[i][j] = a[i][j] * scale[i] * scale[j];
        }
        rhs[i] = b[i] * scale[i];
    }
    let y = gauss(m, rhs)?;
    let mut x = [0.0; K];
    for i in 0..K {
        x[i] = y[i] * scale[i];
    }
    Some(x)
}

/// The inverse of a symmetric matrix with a positive diagonal, column by column through
/// [`solve`]; `None` when singular.
pub(super) fn inverse<const K: usize>(a: [[f64; K]; K]) -> Option<[[f64; K]; K]> {
    let mut inv = [[0.0; K]; K];
    for j in 0..K {
        let mut e = [0.0; K];
        e[j] = 1.0;
        let col = solve(a, e)?;
        for i in 0..K {
            inv[i][j] = col[i];
        }
    }
    Some(inv)
}

/// `1/√a_ii` for each row; `None` if a diagonal entry is not a positive finite number.
fn equilibration<const K: usize>(a: &[[f64; K]; K]) -> Option<[f64; K]> {
    let mut scale = [0.0; K];
    for i in 0..K {
        let d = a[i][i];
        if !(d.is_finite() && d > 0.0) {
            return None;
        }
        scale[i] = 1.0 / d.sqrt();
    }
    Some(scale)
}

/// Gaussian elimination with partial pivoting on an equilibrated system.
fn gauss<const K: usize>(mut m: [[f64; K]; K], mut rhs: [f64; K]) -> Option<[f64; K]> {
    for col in 0..K {
        let pivot_row = (col..K).max_by(|&r, &s| m[r][col].abs().total_cmp(&m[s][col].abs()))?;
        let pivot = m[pivot_row][col].abs();
        if pivot.is_nan() || pivot <= SINGULAR_PIVOT {
            return None;
        }
        m.swap(col, pivot_row);
        rhs.swap(col, pivot_row);
        let top = m[col];
        for row in col + 1..K {
            let f = m[row][col] / top[col];
            for (v, p) in m[row].iter_mut().zip(top).skip(col) {
                *v -= f * p;
            }
            rhs[row] -= f * rhs[col];
        }
    }
    let mut x = [0.0; K];
    for row in (0..K).rev() {
        let tail: f64 = (row + 1..K).map(|k| m[row][k] * x[k]).sum();
        x[row] = (rhs[row] - tail) / m[row][row];
    }
    x.iter().all(|v| v.is_finite()).then_some(x)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn solves_a_badly_scaled_system() {
        // diag(1, 1e12) coupled: x = (1, 1e-6) checked by multiplying back.
        let a = [[2.0, 1e6], [1e6, 1e12 + 1.0]];
        let x = solve(a, [2.0 + 1.0, 1e6 + 1e6 + 1e-6]).unwrap();
        assert!((x[0] - 1.0).abs() < 1e-9, "{x:?}");
        assert!((x[1] - 1e-6).abs() < 1e-15, "{x:?}");
    }

    #[test]
    fn inverse_times_matrix_is_identity() {
        let a = [[4.0, 2.0, 0.5], [2.0, 3.0, 1.0], [0.5, 1.0, 2.0]];
        let inv = inverse(a).unwrap();
        let product: [[f64; 3]; 3] = std::array::from_fn(|i| {
            std::array::from_fn(|j| (0..3).map(|k| a[i][k] * inv[k][j]).sum())
        });
        for (i, row) in product.iter().enumerate() {
            for (j, &p) in row.iter().enumerate() {
                let want = if i == j { 1.0 } else { 0.0 };
                assert!((p - want).abs() < 1e-12, "({i},{j}) = {p}");
            }
        }
    }

    #[test]
    fn dependent_columns_are_singular() {
        let a = [[1.0, 2.0], [2.0, 4.0]];
        assert_eq!(solve(a, [1.0, 2.0]), None);
        assert_eq!(inverse([[1.0, 0.0], [0.0, 0.0]]), None);
        assert_eq!(solve([[f64::NAN, 0.0], [0.0, 1.0]], [1.0, 1.0]), None);
    }
}
