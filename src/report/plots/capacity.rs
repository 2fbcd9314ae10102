//! The capacity figure of a `lockbench capacity` sweep (from `<run>/capacity.json`): above,
//! the measured throughput against clients with the fitted USL curve and its peak `N*`
//! marked; below, the measured acquire p99 against clients with the SLO as a horizontal line
//! (and the USL's calibrated p99 prediction, dotted). Clients on a log2 axis with
//! hand-drawn ticks at powers of two.

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::canvas::{
    FONT, Figure, VIOLATION, drawing, duration_label, log_range, system_colour, x_ticks,
};
use crate::capacity::{Capacity, FitOutcome};

/// The figure's file stem for a capacity report: `capacity-<system>-<strategy>`.
pub fn stem(capacity: &Capacity) -> String {
    format!("capacity-{}-{}", capacity.system, capacity.strategy)
}

/// The figure.
#[derive(Debug, Clone)]
pub struct CapacityFigure<'a> {
    /// The report drawn.
    pub capacity: &'a Capacity,
}

/// Samples per fitted curve.
const SAMPLES: usize = 200;

impl CapacityFigure<'_> {
    /// The log2 x range and its power-of-two ticks, whole powers either side of the points.
    fn x_axis(&self) -> (f64, f64, Vec<(f64, String)>) {
        let xs = self
            .capacity
            .points
            .iter()
            .map(|p| f64::from(p.clients.max(1)).log2());
        let max_x = xs.clone().fold(0.0, f64::max);
        let min_x = xs.fold(max_x, f64::min);
        let (lo, hi) = ((min_x.floor() - 1.0).max(-0.5), max_x.ceil() + 1.0);
        let ticks = (lo.ceil() as i32..=hi.floor() as i32)
            .map(|k| (f64::from(k), format!("{}", 1u64 << k.clamp(0, 62))))
            .collect();
        (lo, hi, ticks)
    }

    /// `f(N)` sampled at [`SAMPLES`] points of the log2 axis from `lo` to `hi` (N ≥ 1), kept
    /// where finite, positive and at most `cap`.
    fn curve(lo: f64, hi: f64, cap: f64, f: impl Fn(f64) -> f64) -> Vec<(f64, f64)> {
        let start = lo.max(0.0);
        (0..=SAMPLES)
            .map(|i| start + (hi - start) * i as f64 / SAMPLES as f64)
            .map(|x| (x, f(x.exp2())))
            .filter(|(_, y)| y.is_finite() && *y > 0.0 && *y <= cap)
            .collect()
    }

    fn fit_text(&self) -> String {
        match &self.capacity.fit {
            FitOutcome::Fitted(f) => {
                let se = |v: Option<f64>| v.map(|s| format!(" ± {s:.3}")).unwrap_or_default();
                let peak = match (
                    self.capacity.peak_concurrency,
                    self.capacity.peak_throughput,
                ) {
                    (Some(n), Some(x)) => format!("; N* = {n:.1}, peak X = {x:.1}/s"),
                    _ if f.sigma >= 1.0 => "; peak at 1 client (σ ≥ 1)".to_string(),
                    _ => "; no peak within reach (κ ≤ 0)".to_string(),
                };
                format!(
                    "USL: λ = {:.2}/s{}, σ = {:.4}{}, κ = {:.5}{}, R² = {:.3}{peak}",
                    f.lambda,
                    se(f.lambda_se),
                    f.sigma,
                    se(f.sigma_se),
                    f.kappa,
                    se(f.kappa_se),
                    f.r_squared
                )
            }
            FitOutcome::Failed(why) => {
                let mut short: String = why.chars().take(110).collect();
                if short.len() < why.len() {
                    short.push('…');
                }
                format!("no USL fit: {short}")
            }
        }
    }

    fn throughput_panel<DB: DrawingBackend>(
        &self,
        area: &DrawingArea<DB, Shift>,
        (lo, hi): (f64, f64),
        ticks: &[(f64, String)],
    ) -> Result<(), String> {
        let cap = self.capacity;
        let colour = system_colour(cap.system);
        let measured: Vec<(f64, f64)> = cap
            .points
            .iter()
            .map(|p| (f64::from(p.clients.max(1)).log2(), p.throughput))
            .filter(|p| p.1.is_finite())
            .collect();
        let top = measured
            .iter()
            .map(|p| p.1)
            .chain(cap.peak_throughput)
            .filter(|v| v.is_finite())
            .fold(0.0, f64::max);
        let y_hi = (top * 1.2).max(1.0);
        let mut chart = ChartBuilder::on(area)
            .margin(15)
            .x_label_area_size(45)
            .y_label_area_size(80)
            .caption(self.fit_text(), (FONT, 14))
            .build_cartesian_2d(lo..hi, 0f64..y_hi)
            .map_err(drawing)?;
        chart
            .configure_mesh()
            .x_desc("clients (log)")
            .y_desc("throughput (acquisitions/s)")
            .disable_x_mesh()
            .x_labels(0)
            .label_style((FONT, 12))
            .draw()
            .map_err(drawing)?;
        x_ticks(area, &mut chart, ticks)?;
        if let Some(f) = cap.fitted() {
            let curve = Self::curve(lo, hi, y_hi, |n| f.predict(n));
            chart
                .draw_series(LineSeries::new(curve, colour.stroke_width(2)))
                .map_err(drawing)?;
        }
        if let (Some(n), Some(x)) = (cap.peak_concurrency, cap.peak_throughput) {
            let at = n.max(1.0).log2();
            if (lo..=hi).contains(&at) && x.is_finite() {
                chart
                    .draw_series(DashedLineSeries::new(
                        vec![(at, 0.0), (at, y_hi)],
                        6,
                        4,
                        BLACK.stroke_width(1),
                    ))
                    .map_err(drawing)?;
                chart
                    .draw_series(std::iter::once(Text::new(
                        format!(" N* = {n:.1}"),
                        (at, y_hi * 0.97),
                        (FONT, 13),
                    )))
                    .map_err(drawing)?;
            }
        }
        chart
            .draw_series(measured.iter().map(|&p| Circle::new(p, 5, colour.filled())))
            .map_err(drawing)?;
        Ok(())
    }

    fn latency_panel<DB: DrawingBackend>(
        &self,
        area: &DrawingArea<DB, Shift>,
        (lo, hi): (f64, f64),
        ticks: &[(f64, String)],
    ) -> Result<(), String> {
        let cap = self.capacity;
        let colour = system_colour(cap.system);
        let measured: Vec<(f64, f64)> = cap
            .points
            .iter()
            .filter(|p| p.acquisitions > 0 && p.p99_us > 0)
            .map(|p| (f64::from(p.clients.max(1)).log2(), p.p99_us as f64))
            .collect();
        let slo = cap.slo_p99_us.map(|s| s as f64);
        let (y_lo, y_hi) = log_range(measured.iter().map(|p| p.1).chain(slo), 2.0);
        let caption = match (cap.slo_p99_us, cap.max_clients_within_slo) {
            (None, _) => "acquire latency p99 (no SLO given)".to_string(),
            (Some(s), measured_max) => {
                let said = |n: Option<u32>| n.map_or("none".to_string(), |n| n.to_string());
                let predicted = cap
                    .usl_prediction_within_slo
                    .as_ref()
                    .map_or("no prediction".to_string(), |p| {
                        format!("USL predicts {}", said(p.max_clients))
                    });
                format!(
                    "acquire latency p99; SLO p99 ≤ {}: measured max clients {}, {predicted}",
                    duration_label(s as f64),
                    said(measured_max)
                )
            }
        };
        let mut chart = ChartBuilder::on(area)
            .margin(15)
            .x_label_area_size(45)
            .y_label_area_size(80)
            .caption(caption, (FONT, 14))
            .build_cartesian_2d(lo..hi, (y_lo..y_hi).log_scale())
            .map_err(drawing)?;
        chart
            .configure_mesh()
            .x_desc("clients (log)")
            .y_desc("acquire p99 (log)")
            .y_labels(8)
            .disable_x_mesh()
            .x_labels(0)
            .y_label_formatter(&|v| duration_label(*v))
            .label_style((FONT, 12))
            .draw()
            .map_err(drawing)?;
        x_ticks(area, &mut chart, ticks)?;
        if let (Some(f), Some(p)) = (cap.fitted(), cap.usl_prediction_within_slo.as_ref()) {
            let k = p.p99_per_cycle_time;
            let curve = Self::curve(lo, hi, y_hi, |n| k * 1e6 * n / f.predict(n))
                .into_iter()
                .filter(|p| p.1 >= y_lo)
                .collect::<Vec<_>>();
            chart
                .draw_series(DashedLineSeries::new(curve, 2, 4, colour.stroke_width(1)))
                .map_err(drawing)?;
        }
        if let Some(s) = slo {
            chart
                .draw_series(DashedLineSeries::new(
                    vec![(lo, s), (hi, s)],
                    10,
                    5,
                    VIOLATION.stroke_width(2),
                ))
                .map_err(drawing)?;
            chart
                .draw_series(std::iter::once(Text::new(
                    format!("SLO {}", duration_label(s)),
                    (lo, s),
                    TextStyle::from((FONT, 13).into_font())
                        .color(&VIOLATION)
                        .pos(Pos::new(HPos::Left, VPos::Bottom)),
                )))
                .map_err(drawing)?;
        }
        chart
            .draw_series(LineSeries::new(measured.clone(), colour.stroke_width(2)))
            .map_err(drawing)?;
        chart
            .draw_series(measured.iter().map(|&p| Circle::new(p, 5, colour.filled())))
            .map_err(drawing)?;
        Ok(())
    }
}

impl Figure for CapacityFigure<'_> {
    fn size(&self) -> (u32, u32) {
        (1200, 900)
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String> {
        let cap = self.capacity;
        let title = format!(
            "Capacity: {} {}, workload {}{}",
            cap.system,
            cap.strategy,
            cap.workload,
            if cap.chaos == crate::plan::NO_CHAOS {
                String::new()
            } else {
                format!(", chaos {}", cap.chaos)
            }
        );
        let root = root.titled(&title, (FONT, 20)).map_err(drawing)?;
        let (lo, hi, ticks) = self.x_axis();
        let (top, bottom) = root.split_vertically(440);
        self.throughput_panel(&top, (lo, hi), &ticks)?;
        self.latency_panel(&bottom, (lo, hi), &ticks)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capacity::Slo;
    use crate::capacity::report::tests::{cell, synthetic};
    use crate::capacity::report::{Capacity, Point};

    #[test]
    fn draws_the_synthetic_sweep_with_fit_peak_and_slo() {
        // The reference synthetic set, p99 = 2 × the cycle time N/X.
        let cells = synthetic();
        let cap = Capacity::of(&cells, Some(Slo { p99_us: 4_000_000 })).unwrap();
        let svg = super::super::draws(&CapacityFigure { capacity: &cap });
        assert!(svg.trim_end().ends_with("</svg>"));
        assert!(svg.contains("N* = 7.0"), "peak not marked");
        assert!(svg.contains("SLO 4 s"), "SLO line not labelled");
        assert!(svg.contains("measured max clients 6, USL predicts 7"));
        assert!(svg.contains("σ = 0.0200"), "fit not shown");
        assert_eq!(stem(&cap), "capacity-etcd-predecessor");
    }

    #[test]
    fn draws_one_point_and_an_empty_report_without_panicking() {
        let cap = Capacity::of(&[cell(4, 250.0, 900, 100)], Some(Slo { p99_us: 500 })).unwrap();
        let svg = super::super::draws(&CapacityFigure { capacity: &cap });
        assert!(svg.contains("no USL fit"), "the fit error is shown");
        assert!(svg.contains("measured max clients none"));
        let mut empty = cap.clone();
        empty.points = Vec::<Point>::new();
        empty.slo_p99_us = None;
        let svg = super::super::draws(&CapacityFigure { capacity: &empty });
        assert!(svg.contains("no SLO given"));
    }
}
