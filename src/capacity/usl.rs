//! The Universal Scalability Law fitted to measured throughput.
//!
//! Model: `X(N) = λN / (1 + σ(N−1) + κN(N−1))`, where `N` is the concurrency (clients), `X`
//! the throughput, `λ` the throughput of one client, `σ` contention (the serial fraction) and
//! `κ` coherency (crosstalk between every pair of clients, which makes throughput fall past a
//! peak).
//!
//! # Method
//! Nonlinear least squares on the throughput residuals `X_i − X(N_i)` over all three
//! parameters, solved by Levenberg–Marquardt (Marquardt's diagonal scaling), with no
//! dependency. Why this and not only Gunther's transform:
//! - the transform fixes `λ = X(1)`, so one noisy single-client run tilts the whole curve, and
//!   it cannot be used at all without a measurement at `N = 1`; fitting `λ` with `σ`, `κ` uses
//!   every point (this is also what Gunther's R package `usl` does, and what its published SPEC
//!   SDM91 numbers come from);
//! - residuals in throughput, the measured quantity, give standard errors with a plain
//!   meaning: `s² (JᵀJ)⁻¹`, with `s² = RSS / (n − 3)` and `J` the Jacobian at the optimum;
//! - three parameters and tens of points need a 3 × 3 solve per step, which a crate would not
//!   make simpler (`levenberg-marquardt` would pull in nalgebra).
//!
//! Levenberg–Marquardt needs a start close enough to the optimum; two linear least-squares
//! solutions give one, and each is refined (the lower residual wins):
//! - Gunther's transform, when `N = 1` was measured: with `λ = mean X(1)`, the efficiency
//!   `C = X/λ` satisfies `N/C − 1 = (σ+κ)(N−1) + κ(N−1)²`, a quadratic with no constant term;
//! - `N/X` is itself a quadratic in `N`: `N/X = ((1−σ) + (σ−κ)N + κN²) / λ`, so ordinary least
//!   squares on `c₀ + c₁N + c₂N²` gives `λ = 1/(c₀+c₁+c₂)`, `σ = λ(c₁+c₂)`, `κ = λc₂`, with or
//!   without a point at `N = 1`.
//!
//! Both are exact on exact data, so the refinement starts at the optimum there. The fit is not
//! constrained: `κ < 0` or `σ < 0` are reported as found (they mean the data show no
//! retrograde region, or better than linear scaling), and [`UslFit::peak_concurrency`] then
//! says there is no peak.

use serde::{Deserialize, Serialize};

use super::linalg;

/// Why [`fit`] refused the points; each message says what would make them fittable.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum FitError {
    /// A client count or throughput that is zero, negative, infinite or NaN.
    #[error(
        "point {index}: {field} = {value} is not a positive finite number (drop the point or fix the measurement; a cell with no completed acquisition has no throughput to fit)"
    )]
    BadPoint {
        /// Position of the point in the input, from 0.
        index: usize,
        /// `"clients (N)"` or `"throughput (X)"`.
        field: &'static str,
        /// The offending value.
        value: f64,
    },
    /// Three parameters need at least three concurrency levels.
    #[error(
        "the USL has three parameters and needs throughput at 3 or more distinct client counts, got {distinct} (sweep more levels, e.g. --clients 1,2,4,8,16)"
    )]
    TooFewLevels {
        /// How many distinct client counts the points have.
        distinct: usize,
    },
    /// No single-client measurement, and the other points put `N/X` on a curve that gives no
    /// positive `λ`.
    #[error(
        "no measurement at N = 1 and the other points do not determine the single-client throughput λ (add a run with 1 client)"
    )]
    NoLambda,
    /// The least-squares system could not be solved: the points do not separate λ, σ and κ.
    #[error(
        "the least-squares system is singular ({stage}): the points do not determine λ, σ and κ separately (spread the client counts wider, from 1 past the expected peak)"
    )]
    Singular {
        /// Which step met the singular system.
        stage: &'static str,
    },
    /// Levenberg–Marquardt did not settle.
    #[error(
        "the fit did not converge in {iterations} iterations (the data may not follow the USL; check the points for outliers)"
    )]
    NoConvergence {
        /// Iterations run.
        iterations: usize,
    },
}

/// A fitted Universal Scalability Law, `X(N) = λN / (1 + σ(N−1) + κN(N−1))`, with the
/// uncertainty of each parameter; serialized as is into `capacity.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UslFit {
    /// Throughput of one client (in the unit of the input throughput, e.g. acquisitions/s).
    pub lambda: f64,
    /// Contention: the fraction of the work that is serialized.
    pub sigma: f64,
    /// Coherency: the cost of every pair of clients keeping each other consistent.
    pub kappa: f64,
    /// Standard error of [`UslFit::lambda`]; `None` with exactly three points (no residual
    /// degrees of freedom to estimate the noise from).
    pub lambda_se: Option<f64>,
    /// Standard error of [`UslFit::sigma`]; `None` as for `lambda_se`.
    pub sigma_se: Option<f64>,
    /// Standard error of [`UslFit::kappa`]; `None` as for `lambda_se`.
    pub kappa_se: Option<f64>,
    /// `1 − RSS/TSS` on throughput; 1 for a perfect fit, and by convention 1 when every
    /// throughput is the same and the fit reproduces it (else 0).
    pub r_squared: f64,
    /// How many measurements were fitted.
    pub points: usize,
}

impl UslFit {
    /// The model's throughput at concurrency `n`. Beyond the data it is an extrapolation, and
    /// with `σ < 0` or `κ < 0` the denominator can reach zero, where this is infinite or negative.
    pub fn predict(&self, n: f64) -> f64 {
        model(Params::new(self.lambda, self.sigma, self.kappa), n)
    }

    /// The concurrency of peak throughput, `N* = √((1−σ)/κ)`; `None` when there is no peak
    /// past one client: `κ ≤ 0` (throughput rises forever, towards `λ/σ`) or `σ ≥ 1` (it never
    /// rises above one client's).
    pub fn peak_concurrency(&self) -> Option<f64> {
        (self.kappa > 0.0 && self.sigma < 1.0).then(|| ((1.0 - self.sigma) / self.kappa).sqrt())
    }

    /// The predicted throughput at [`UslFit::peak_concurrency`]; `None` when there is no peak.
    pub fn peak_throughput(&self) -> Option<f64> {
        self.peak_concurrency().map(|n| self.predict(n))
    }

    /// The mean time one operation takes at concurrency `n` in a closed loop with no think
    /// time, by Little's law: `R(N) = N / X(N)` (in the inverse of the throughput's unit).
    pub fn response_time(&self, n: f64) -> f64 {
        n / self.predict(n)
    }

    /// The highest whole concurrency `n` in `1..=limit` such that `ok(m, X(m))` holds for every
    /// `m` from 1 to `n` (so a limit met again past a violation does not count); `None` when it
    /// fails already at one client or `limit` is 0. For a latency SLO pass e.g.
    /// `|n, _| fit.response_time(n) <= 0.05`.
    pub fn max_clients_within(&self, limit: u32, ok: impl Fn(f64, f64) -> bool) -> Option<u32> {
        (1..=limit)
            .take_while(|&n| ok(n as f64, self.predict(n as f64)))
            .last()
    }
}

/// Fits the USL to `(N, X)` points (client count, throughput). Several points may share a
/// client count (repetitions); all are fitted. See the module documentation for the method.
pub fn fit(points: &[(f64, f64)]) -> Result<UslFit, FitError> {
    validate(points)?;
    let mut best: Option<(Params, f64)> = None;
    let mut first_error = None;
    for start in [gunther_start(points), quadratic_start(points)]
        .into_iter()
        .flatten()
    {
        match refine(points, start) {
            Ok((p, rss)) if best.is_none_or(|(_, b)| rss < b) => best = Some((p, rss)),
            Ok(_) => {}
            Err(e) => first_error = first_error.or(Some(e)),
        }
    }
    let Some((p, rss)) = best else {
        return Err(first_error.unwrap_or(if has_single_client(points) {
            FitError::Singular {
                stage: "initial linear estimate",
            }
        } else {
            FitError::NoLambda
        }));
    };
    summarize(points, p, rss)
}

/// The three parameters, `[λ, σ, κ]`.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Params([f64; 3]);

impl Params {
    fn new(lambda: f64, sigma: f64, kappa: f64) -> Self {
        Params([lambda, sigma, kappa])
    }
    fn lambda(self) -> f64 {
        self.0[0]
    }
    fn sigma(self) -> f64 {
        self.0[1]
    }
    fn kappa(self) -> f64 {
        self.0[2]
    }
}

/// The USL's denominator `1 + σ(N−1) + κN(N−1)`.
fn denominator(p: Params, n: f64) -> f64 {
    1.0 + p.sigma() * (n - 1.0) + p.kappa() * n * (n - 1.0)
}

fn model(p: Params, n: f64) -> f64 {
    p.lambda() * n / denominator(p, n)
}

/// `∂X/∂(λ, σ, κ)` at `n`.
fn gradient(p: Params, n: f64) -> [f64; 3] {
    let d = denominator(p, n);
    let common = -p.lambda() * n * (n - 1.0) / (d * d);
    [n / d, common, common * n]
}

/// Parameters the model can be evaluated with at every measured `N`: a positive single-client
/// throughput and a positive denominator (else the predicted throughput has the wrong sign or
/// a pole between the points).
fn admissible(points: &[(f64, f64)], p: Params) -> bool {
    p.0.iter().all(|v| v.is_finite())
        && p.lambda() > 0.0
        && points.iter().all(|&(n, _)| denominator(p, n) > 0.0)
}

fn rss(points: &[(f64, f64)], p: Params) -> f64 {
    points.iter().map(|&(n, x)| (x - model(p, n)).powi(2)).sum()
}

fn validate(points: &[(f64, f64)]) -> Result<(), FitError> {
    for (index, &(n, x)) in points.iter().enumerate() {
        for (field, value) in [("clients (N)", n), ("throughput (X)", x)] {
            if !(value.is_finite() && value > 0.0) {
                return Err(FitError::BadPoint {
                    index,
                    field,
                    value,
                });
            }
        }
    }
    let mut levels: Vec<f64> = points.iter().map(|&(n, _)| n).collect();
    levels.sort_by(f64::total_cmp);
    levels.dedup();
    if levels.len() < 3 {
        return Err(FitError::TooFewLevels {
            distinct: levels.len(),
        });
    }
    Ok(())
}

fn has_single_client(points: &[(f64, f64)]) -> bool {
    points.iter().any(|&(n, _)| n == 1.0)
}

/// Gunther's transform: `λ` from the single-client points, then `σ`, `κ` by ordinary least
/// squares on `N/C − 1 = (σ+κ)(N−1) + κ(N−1)²`. `None` without a point at `N = 1`.
fn gunther_start(points: &[(f64, f64)]) -> Option<Params> {
    let singles: Vec<f64> = points
        .iter()
        .filter(|&&(n, _)| n == 1.0)
        .map(|&(_, x)| x)
        .collect();
    if singles.is_empty() {
        return None;
    }
    let lambda = singles.iter().sum::<f64>() / singles.len() as f64;
    let mut a = [[0.0; 2]; 2];
    let mut b = [0.0; 2];
    for &(n, x) in points {
        let (u, y) = (n - 1.0, n * lambda / x - 1.0);
        let row = [u, u * u];
        for i in 0..2 {
            for j in 0..2 {
                a[i][j] += row[i] * row[j];
            }
            b[i] += row[i] * y;
        }
    }
    let [slope, kappa] = linalg::solve(a, b)?;
    Some(Params::new(lambda, slope - kappa, kappa))
}

/// Ordinary least squares on `N/X = c₀ + c₁N + c₂N²`; `None` when singular or when
/// `c₀ + c₁ + c₂ = 1/λ` is not positive.
fn quadratic_start(points: &[(f64, f64)]) -> Option<Params> {
    let mut a = [[0.0; 3]; 3];
    let mut b = [0.0; 3];
    for &(n, x) in points {
        let row = [1.0, n, n * n];
        for i in 0..3 {
            for j in 0..3 {
                a[i][j] += row[i] * row[j];
            }
            b[i] += row[i] * (n / x);
        }
    }
    let [c0, c1, c2] = linalg::solve(a, b)?;
    let inv_lambda = c0 + c1 + c2;
    (inv_lambda > 0.0).then(|| {
        let lambda = 1.0 / inv_lambda;
        Params::new(lambda, lambda * (c1 + c2), lambda * c2)
    })
}

/// Iteration cap; Levenberg–Marquardt on three parameters from a linear start settles in a
/// handful of steps, so reaching this means the data do not look like the USL.
const MAX_ITERATIONS: usize = 200;
/// Converged when an accepted step lowers the residual by less than this fraction of it.
const RELATIVE_TOLERANCE: f64 = 1e-13;
/// Converged when no damping, however strong, finds a lower residual: the start is the optimum
/// to within rounding.
const MAX_DAMPING: f64 = 1e16;

/// Levenberg–Marquardt on the throughput residuals from `start`; the parameters and residual
/// sum of squares at the optimum.
fn refine(points: &[(f64, f64)], start: Params) -> Result<(Params, f64), FitError> {
    if !admissible(points, start) {
        return Err(FitError::Singular {
            stage: "initial linear estimate is outside the model's domain",
        });
    }
    let mut p = start;
    let mut current = rss(points, p);
    let mut damping = 1e-3;
    for _ in 0..MAX_ITERATIONS {
        if current == 0.0 {
            return Ok((p, current));
        }
        let (jtj, jtr) = normal_equations(points, p);
        let accepted = loop {
            let mut damped = jtj;
            for (i, row) in damped.iter_mut().enumerate() {
                row[i] *= 1.0 + damping;
            }
            let step = linalg::solve(damped, jtr).ok_or(FitError::Singular {
                stage: "Levenberg–Marquardt step",
            })?;
            let next = Params(std::array::from_fn(|i| p.0[i] + step[i]));
            if admissible(points, next) {
                let next_rss = rss(points, next);
                if next_rss < current {
                    damping = (damping / 10.0).max(1e-12);
                    break Some((next, next_rss));
                }
            }
            damping *= 10.0;
            if damping > MAX_DAMPING {
                break None;
            }
        };
        let Some((next, next_rss)) = accepted else {
            return Ok((p, current));
        };
        let gain = current - next_rss;
        (p, current) = (next, next_rss);
        if gain <= RELATIVE_TOLERANCE * current {
            return Ok((p, current));
        }
    }
    Err(FitError::NoConvergence {
        iterations: MAX_ITERATIONS,
    })
}

/// `JᵀJ` and `Jᵀr`, with `J` the Jacobian of the model and `r` the residuals `X − X(N)`.
fn normal_equations(points: &[(f64, f64)], p: Params) -> ([[f64; 3]; 3], [f64; 3]) {
    let mut jtj = [[0.0; 3]; 3];
    let mut jtr = [0.0; 3];
    for &(n, x) in points {
        let g = gradient(p, n);
        let r = x - model(p, n);
        for i in 0..3 {
            for j in 0..3 {
                jtj[i][j] += g[i] * g[j];
            }
            jtr[i] += g[i] * r;
        }
    }
    (jtj, jtr)
}

/// Standard errors (`s² (JᵀJ)⁻¹`) and R² at the optimum.
fn summarize(points: &[(f64, f64)], p: Params, rss: f64) -> Result<UslFit, FitError> {
    let count = points.len();
    let dof = count.saturating_sub(3);
    let (jtj, _) = normal_equations(points, p);
    let cov = linalg::inverse(jtj).ok_or(FitError::Singular {
        stage: "covariance at the optimum",
    })?;
    let se = |i: usize| (dof > 0).then(|| (rss / dof as f64 * cov[i][i]).max(0.0).sqrt());
    let mean = points.iter().map(|&(_, x)| x).sum::<f64>() / count as f64;
    let tss: f64 = points.iter().map(|&(_, x)| (x - mean).powi(2)).sum();
    // A flat series (a fully serialized lock, σ = 1) has TSS = 0; R² is then 1 only if the fit
    // reproduces it to rounding.
    let r_squared = if tss > 0.0 {
        1.0 - rss / tss
    } else if rss <= 1e-24 * mean * mean * count as f64 {
        1.0
    } else {
        0.0
    };
    Ok(UslFit {
        lambda: p.lambda(),
        sigma: p.sigma(),
        kappa: p.kappa(),
        lambda_se: se(0),
        sigma_se: se(1),
        kappa_se: se(2),
        r_squared,
        points: count,
    })
}

#[cfg(test)]
#[path = "usl_tests.rs"]
mod tests;
