//! Acquire latency by percentile, on HdrHistogram's "nines" axis: x = 1/(1−p) on a log scale,
//! labelled 50 %, 90 %, 99 %, 99.9 %, 99.99 %; one line per cell (system × strategy, and
//! workload, chaos and clients when the run has more than one); one colour per system, herd
//! dashed, predecessor solid. The points come from each cell's `acquire.hgrm`.

use plotters::coord::Shift;
use plotters::prelude::*;

use super::canvas::{
    FONT, Figure, drawing, duration_label, log_range, system_colour, system_marker, x_ticks,
};
use super::legend::{self, Entry, Swatch};
use crate::recipe::Strategy;
use crate::results::CellSummary;
use crate::system::System;

/// One cell's curve.
#[derive(Debug, Clone)]
pub struct Curve {
    /// The legend text.
    pub label: String,
    /// Its system (colour and marker).
    pub system: System,
    /// Herd curves are dashed.
    pub strategy: Strategy,
    /// (log10(1/(1−p)), latency µs), by growing percentile.
    pub points: Vec<(f64, f64)>,
}

/// The figure.
#[derive(Debug, Clone, Default)]
pub struct LatencyDistribution {
    /// One curve per cell that has a histogram.
    pub curves: Vec<Curve>,
}

/// The axis goes to 99.999 % at most; points past it are left out.
const MAX_NINES: f64 = 5.0;

/// The tick marks: (log10(1/(1−p)), label).
const TICKS: [(f64, &str); 6] = [
    (0.0, "0 %"),
    (std::f64::consts::LOG10_2, "50 %"),
    (1.0, "90 %"),
    (2.0, "99 %"),
    (3.0, "99.9 %"),
    (4.0, "99.99 %"),
];

/// Reads HdrHistogram's percentile text (`Value Percentile TotalCount 1/(1-Percentile)`, values
/// in ms) into (percentile in 0..=1, value µs); header, footer and malformed lines are skipped.
/// (`#[Mean = …` has four fields too, but its first is not a number.)
pub fn parse_hgrm(text: &str) -> Vec<(f64, f64)> {
    text.lines()
        .filter_map(|line| {
            let cols: Vec<&str> = line.split_whitespace().collect();
            // The p = 1 row has no fourth column (1/(1−p) is infinite).
            if !(3..=4).contains(&cols.len()) {
                return None;
            }
            let value_ms: f64 = cols[0].parse().ok()?;
            let p: f64 = cols[1].parse().ok()?;
            cols[2].parse::<u64>().ok()?;
            (0.0..=1.0).contains(&p).then_some((p, value_ms * 1000.0))
        })
        .collect()
}

impl LatencyDistribution {
    /// The curves of `cells`, from each one's `acquire.hgrm` text in `histograms` (by cell id);
    /// cells without a histogram or with no acquisition have no curve.
    pub fn of_run(
        cells: &[CellSummary],
        histograms: &std::collections::BTreeMap<String, String>,
    ) -> LatencyDistribution {
        let varies = |f: fn(&CellSummary) -> String| {
            cells
                .iter()
                .map(f)
                .collect::<std::collections::BTreeSet<_>>()
                .len()
                > 1
        };
        let (by_workload, by_chaos, by_clients) = (
            varies(|c| c.id.workload.clone()),
            varies(|c| c.id.chaos.clone()),
            varies(|c| c.id.clients.to_string()),
        );
        let curves = cells
            .iter()
            .filter_map(|c| {
                let text = histograms.get(&c.id.to_string())?;
                let mut label = format!("{} {}", super::canvas::series_name(c), c.id.waiting());
                if by_workload {
                    label += &format!(" {}", c.id.workload);
                }
                if by_chaos {
                    label += &format!(" {}", c.id.chaos);
                }
                if by_clients {
                    label += &format!(" c{}", c.id.clients);
                }
                let points = to_nines(&parse_hgrm(text));
                (!points.is_empty()).then_some(Curve {
                    label,
                    system: c.id.system,
                    strategy: c.id.strategy,
                    points,
                })
            })
            .collect();
        LatencyDistribution { curves }
    }
}

/// (percentile, µs) → (log10(1/(1−p)), µs), leaving out p = 1 (infinitely far right) and what
/// lies past `MAX_NINES`.
pub fn to_nines(points: &[(f64, f64)]) -> Vec<(f64, f64)> {
    points
        .iter()
        .filter(|(p, _)| *p < 1.0)
        .map(|(p, v)| ((1.0 / (1.0 - p)).log10(), v.max(1.0)))
        .filter(|(x, _)| *x <= MAX_NINES)
        .collect()
}

impl LatencyDistribution {
    /// Each curve's colour: its system's, lighter for each further curve of the same system and
    /// strategy (other client counts, workloads or schedules), so they stay apart.
    fn colours(&self) -> Vec<RGBColor> {
        let mut seen: Vec<(System, Strategy)> = Vec::new();
        self.curves
            .iter()
            .map(|c| {
                let nth = seen
                    .iter()
                    .filter(|s| **s == (c.system, c.strategy))
                    .count();
                seen.push((c.system, c.strategy));
                super::canvas::paler(system_colour(c.system), nth)
            })
            .collect()
    }
}

impl Figure for LatencyDistribution {
    fn size(&self) -> (u32, u32) {
        (1200, 640)
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String> {
        let root = root
            .titled("Acquire latency by percentile", (FONT, 20))
            .map_err(drawing)?;
        let (plot, side) = root.split_horizontally(900);
        let all = self.curves.iter().flat_map(|c| c.points.iter());
        let right = all
            .clone()
            .map(|p| p.0)
            .fold(0.0, f64::max)
            .clamp(2.0, MAX_NINES)
            .ceil();
        let (lo, hi) = log_range(all.map(|p| p.1), 1.5);
        let mut chart = ChartBuilder::on(&plot)
            .margin(15)
            .x_label_area_size(45)
            .y_label_area_size(80)
            .build_cartesian_2d(0f64..right, (lo..hi).log_scale())
            .map_err(drawing)?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(0)
            .x_desc("percentile (nines: 1/(1−p), log)")
            .y_desc("acquire latency (log)")
            .y_label_formatter(&|v| duration_label(*v))
            .label_style((FONT, 12))
            .draw()
            .map_err(drawing)?;
        // The nines ticks by hand: the axis is linear in log10(1/(1−p)), the labels are
        // percentiles.
        let ticks: Vec<(f64, String)> = TICKS
            .iter()
            .filter(|t| t.0 <= right)
            .map(|t| (t.0, t.1.to_string()))
            .collect();
        x_ticks(&plot, &mut chart, &ticks)?;
        for (c, colour) in self.curves.iter().zip(self.colours()) {
            let style = colour.stroke_width(2);
            let pts = c.points.clone();
            if c.strategy == Strategy::Herd {
                chart.draw_series(DashedLineSeries::new(pts, 8, 5, style))
            } else {
                chart.draw_series(LineSeries::new(pts, style))
            }
            .map_err(drawing)?;
            // A marker at the curve's end tells systems apart in greyscale and shows a
            // single-point curve at all.
            if let Some(&(x, y)) = c.points.last() {
                let px = chart.backend_coord(&(x, y));
                let (ox, oy) = plot.get_base_pixel();
                legend::draw_point(
                    &plot,
                    (px.0 - ox, px.1 - oy),
                    system_marker(c.system),
                    colour,
                    c.strategy == Strategy::Herd,
                )?;
            }
        }
        if self.curves.is_empty() {
            plot.draw(&Text::new("no acquisitions yet", (400, 250), (FONT, 16)))
                .map_err(drawing)?;
        }
        let entries: Vec<Entry> = self
            .curves
            .iter()
            .zip(self.colours())
            .map(|(c, colour)| Entry {
                label: c.label.clone(),
                colour,
                swatch: Swatch::Line {
                    dashed: c.strategy == Strategy::Herd,
                },
            })
            .collect();
        legend::draw(&side, "herd: dashed, hollow end", &entries)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HGRM: &str = "       Value     Percentile TotalCount 1/(1-Percentile)\n\n       0.100 0.000000000000          1           1.00\n       1.000 0.500000000000         50           2.00\n      10.000 0.990000000000         99         100.00\n      20.000 1.000000000000        100\n#[Mean    =        1.000, StdDeviation   =        0.500]\n";

    #[test]
    fn hgrm_rows_become_percentiles_in_microseconds() {
        let rows = parse_hgrm(HGRM);
        assert_eq!(
            rows,
            vec![
                (0.0, 100.0),
                (0.5, 1000.0),
                (0.99, 10_000.0),
                (1.0, 20_000.0)
            ]
        );
        let nines = to_nines(&rows);
        assert_eq!(nines.len(), 3, "p = 1 has no place on the axis");
        assert!((nines[1].0 - std::f64::consts::LOG10_2).abs() < 1e-4);
        assert!((nines[2].0 - 2.0).abs() < 1e-9);
    }
}
