//! The median and spread of a metric over a cell's repetitions.

use serde::{Deserialize, Serialize};

/// A metric's values over repetitions, with their median and quartiles (linear interpolation
/// between order statistics, R's type 7: with one value all three are that value).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Spread {
    /// Every repetition's value, in repetition order.
    pub values: Vec<f64>,
    /// The median.
    pub median: f64,
    /// The first quartile.
    pub q1: f64,
    /// The third quartile.
    pub q3: f64,
}

impl Spread {
    /// The spread of `values`; `None` when there is none.
    pub fn of(values: Vec<f64>) -> Option<Spread> {
        if values.is_empty() || values.iter().any(|v| !v.is_finite()) {
            return None;
        }
        let mut sorted = values.clone();
        sorted.sort_by(f64::total_cmp);
        Some(Spread {
            median: quantile(&sorted, 0.5),
            q1: quantile(&sorted, 0.25),
            q3: quantile(&sorted, 0.75),
            values,
        })
    }

    /// The interquartile range, q3 − q1.
    pub fn iqr(&self) -> f64 {
        self.q3 - self.q1
    }

    /// The interquartile range as a fraction of the median (0 when the median is 0).
    pub fn relative_iqr(&self) -> f64 {
        if self.median == 0.0 {
            0.0
        } else {
            self.iqr() / self.median.abs()
        }
    }
}

/// The `p` quantile of sorted, non-empty `v`, interpolating linearly.
fn quantile(v: &[f64], p: f64) -> f64 {
    let h = (v.len() - 1) as f64 * p;
    let (lo, hi) = (h.floor() as usize, h.ceil() as usize);
    v[lo] + (h - lo as f64) * (v[hi] - v[lo])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quartiles_interpolate_like_r_type_7() {
        // R: quantile(c(7, 1, 3, 9, 5), c(.25, .5, .75)) = 3, 5, 7.
        let s = Spread::of(vec![7.0, 1.0, 3.0, 9.0, 5.0]).unwrap();
        assert_eq!((s.q1, s.median, s.q3), (3.0, 5.0, 7.0));
        assert_eq!(
            s.values,
            [7.0, 1.0, 3.0, 9.0, 5.0],
            "kept in repetition order"
        );
        // quantile(c(1, 2, 4, 10), ...) = 1.75, 3, 5.5.
        let s = Spread::of(vec![10.0, 4.0, 2.0, 1.0]).unwrap();
        assert_eq!((s.q1, s.median, s.q3), (1.75, 3.0, 5.5));
        assert!((s.relative_iqr() - 3.75 / 3.0).abs() < 1e-12);
        let one = Spread::of(vec![4.0]).unwrap();
        assert_eq!(
            (one.q1, one.median, one.q3, one.iqr()),
            (4.0, 4.0, 4.0, 0.0)
        );
        assert!(Spread::of(vec![]).is_none());
        assert!(Spread::of(vec![1.0, f64::NAN]).is_none());
        assert_eq!(Spread::of(vec![0.0, 0.0]).unwrap().relative_iqr(), 0.0);
    }
}
