//! The herd, seen: wake-ups per acquisition against the number of clients (from a `--clients`
//! sweep, as the default run's 2, 8 and 32), herd dashed against predecessor solid, one colour
//! per system; and the handoff latency (release → next grant, p50) and the throughput against
//! clients, the same way. Repetitions of a cell are one point, their median. A run with one
//! client count draws one point per line.

use std::collections::BTreeMap;

use plotters::coord::Shift;
use plotters::prelude::*;

use super::canvas::{
    FONT, Figure, drawing, log_range, log_ticks, system_colour, system_marker, x_ticks, y_ticks,
};
use super::legend::{self, Entry, Swatch};
use crate::recipe::Strategy;
use crate::results::CellSummary;
use crate::system::System;

/// What the y axis shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HerdMeasure {
    /// Wake-ups per acquisition (linear axis).
    Wakeups,
    /// Handoff latency p50 (log axis).
    Handoff,
    /// Granted acquisitions per second (linear axis).
    Throughput,
}

/// One line: a system × strategy (× workload × chaos) across client counts.
#[derive(Debug, Clone)]
pub struct HerdLine {
    /// The legend text.
    pub label: String,
    /// Colour and marker.
    pub system: System,
    /// Which version of its system in the figure (0 for the first): each further version is
    /// drawn paler and with the next marker, so versions differ by more than the colour.
    pub shade: usize,
    /// Herd dashed.
    pub strategy: Strategy,
    /// (log2 of clients, value), by growing clients, one point per client count.
    pub points: Vec<(f64, f64)>,
}

impl HerdLine {
    /// Its system's colour, paler for each further version of the system.
    pub fn colour(&self) -> RGBColor {
        super::canvas::paler(system_colour(self.system), self.shade * 2)
    }

    /// Its system's marker, the next one for each further version of the system.
    pub fn marker(&self) -> u8 {
        (system_marker(self.system) + self.shade as u8) % 4
    }
}

/// The figure.
#[derive(Debug, Clone)]
pub struct Herd {
    /// Which measure.
    pub measure: HerdMeasure,
    /// Its lines.
    pub lines: Vec<HerdLine>,
}

impl Herd {
    /// The lines of `cells` for `measure`; cells without the measure (a recipe that cannot
    /// count wake-ups, no handoff yet) are left out.
    pub fn of_run(cells: &[CellSummary], measure: HerdMeasure) -> Herd {
        let mut groups: BTreeMap<(String, String, String, String, String), HerdLine> =
            BTreeMap::new();
        let shades = super::canvas::VersionShades::of(cells);
        for c in cells {
            let value = match measure {
                HerdMeasure::Wakeups => c.wakeups_per_acquisition,
                HerdMeasure::Handoff => {
                    (c.handoff_latency_us.count > 0).then_some(c.handoff_latency_us.p50 as f64)
                }
                HerdMeasure::Throughput => Some(c.throughput_per_s),
            };
            let Some(value) = value.filter(|v| v.is_finite()) else {
                continue;
            };
            let id = &c.id;
            let key = (
                id.system.to_string(),
                crate::report::table::version(c).unwrap_or_default(),
                id.waiting(),
                id.workload.clone(),
                id.chaos.clone(),
            );
            groups
                .entry(key)
                .or_insert_with(|| HerdLine {
                    label: format!("{} {}", super::canvas::series_name(c), id.waiting()),
                    system: id.system,
                    shade: shades.of_cell(c),
                    strategy: id.strategy,
                    points: Vec::new(),
                })
                .points
                .push((f64::from(id.clients).log2(), value));
        }
        let workloads: std::collections::BTreeSet<(&str, &str)> = groups
            .keys()
            .map(|k| (k.3.as_str(), k.4.as_str()))
            .collect();
        let many = workloads.len() > 1;
        let lines = groups
            .into_iter()
            .map(|(k, mut line)| {
                if many {
                    line.label += &format!(" {} {}", k.3, k.4);
                }
                line.points = medians_by_x(std::mem::take(&mut line.points));
                line
            })
            .collect();
        Herd { measure, lines }
    }

    /// True when some line has a point.
    pub fn has_data(&self) -> bool {
        self.lines.iter().any(|l| !l.points.is_empty())
    }
}

impl Figure for Herd {
    fn size(&self) -> (u32, u32) {
        (1200, 600)
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String> {
        let title = match self.measure {
            HerdMeasure::Wakeups => "The herd: wake-ups per acquisition against clients",
            HerdMeasure::Handoff => "Handoff latency (release → next grant, p50) against clients",
            HerdMeasure::Throughput => {
                "Throughput (granted acquisitions per second) against clients"
            }
        };
        let root = root.titled(title, (FONT, 20)).map_err(drawing)?;
        let (plot, side) = root.split_horizontally(900);
        let pts = self.lines.iter().flat_map(|l| l.points.iter());
        let max_x = pts.clone().map(|p| p.0).fold(0.0, f64::max);
        // Whole powers of two either side, so the ticks read 8, 16, 32 even for one point.
        let min_x = pts.clone().map(|p| p.0).fold(max_x, f64::min);
        let (x_lo, x_hi) = ((min_x.floor() - 1.0).max(-0.5), max_x.ceil() + 1.0);
        let ticks: Vec<(f64, String)> = (x_lo.ceil() as i32..=x_hi.floor() as i32)
            .map(|k| (f64::from(k), format!("{}", 1u64 << k.clamp(0, 62))))
            .collect();
        let max_y = pts.map(|p| p.1).fold(0.0, f64::max);
        let x_axis = x_lo..x_hi;
        let mut entries = Vec::new();
        for l in &self.lines {
            entries.push(Entry {
                label: l.label.clone(),
                colour: l.colour(),
                swatch: Swatch::Line {
                    dashed: l.strategy == Strategy::Herd,
                },
            });
        }
        match self.measure {
            HerdMeasure::Wakeups | HerdMeasure::Throughput => {
                let mut chart = ChartBuilder::on(&plot)
                    .margin(15)
                    .x_label_area_size(45)
                    .y_label_area_size(70)
                    .build_cartesian_2d(x_axis, 0f64..(max_y * 1.15).max(1.0))
                    .map_err(drawing)?;
                chart
                    .configure_mesh()
                    .x_desc("clients contending (log)")
                    .y_desc(if self.measure == HerdMeasure::Wakeups {
                        "wake-ups per acquisition"
                    } else {
                        "acquisitions per second"
                    })
                    .disable_x_mesh()
                    .x_labels(0)
                    .label_style((FONT, 12))
                    .draw()
                    .map_err(drawing)?;
                x_ticks(&plot, &mut chart, &ticks)?;
                lines_on(&self.lines, &mut chart, &plot)?;
            }
            HerdMeasure::Handoff => {
                let values = self.lines.iter().flat_map(|l| l.points.iter().map(|p| p.1));
                let (lo, hi) = log_range(values, 2.0);
                let mut chart = ChartBuilder::on(&plot)
                    .margin(15)
                    .x_label_area_size(45)
                    .y_label_area_size(80)
                    .build_cartesian_2d(x_axis, (lo..hi).log_scale())
                    .map_err(drawing)?;
                chart
                    .configure_mesh()
                    .x_desc("clients contending (log)")
                    .y_desc("handoff latency p50 (log)")
                    .disable_y_mesh()
                    // Labels drawn by hand below (plotters still labels 10 ms with 0 labels).
                    .y_label_formatter(&|_| String::new())
                    .disable_x_mesh()
                    .x_labels(0)
                    .label_style((FONT, 12))
                    .draw()
                    .map_err(drawing)?;
                y_ticks(&plot, &mut chart, &log_ticks(lo, hi))?;
                x_ticks(&plot, &mut chart, &ticks)?;
                lines_on(&self.lines, &mut chart, &plot)?;
            }
        }
        if !self.has_data() {
            plot.draw(&Text::new("nothing measured yet", (380, 250), (FONT, 16)))
                .map_err(drawing)?;
        }
        legend::draw(&side, "herd: dashed, hollow points", &entries)
    }
}

/// `points` (x, value) as one point per x, the median of its values, by growing x: the
/// repetitions of a cell make one point of the curve, not a zigzag at one x.
fn medians_by_x(mut points: Vec<(f64, f64)>) -> Vec<(f64, f64)> {
    points.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.total_cmp(&b.1)));
    let mut out: Vec<(f64, f64)> = Vec::new();
    for group in points.chunk_by(|a, b| a.0 == b.0) {
        let n = group.len();
        let median = if n % 2 == 1 {
            group[n / 2].1
        } else {
            (group[n / 2 - 1].1 + group[n / 2].1) / 2.0
        };
        out.push((group[0].0, median));
    }
    out
}

/// Draws `lines` on `chart`: herd dashed with hollow points, predecessor solid, one colour
/// and marker per system (the figures that compare strategies share it).
pub(super) fn lines_on<DB: DrawingBackend, X, Y>(
    lines: &[HerdLine],
    chart: &mut ChartContext<'_, DB, Cartesian2d<X, Y>>,
    plot: &DrawingArea<DB, Shift>,
) -> Result<(), String>
where
    X: Ranged<ValueType = f64>,
    Y: Ranged<ValueType = f64>,
{
    let (ox, oy) = plot.get_base_pixel();
    for l in lines {
        let colour = l.colour();
        let style = colour.stroke_width(2);
        if l.strategy == Strategy::Herd {
            chart.draw_series(DashedLineSeries::new(l.points.clone(), 8, 5, style))
        } else {
            chart.draw_series(LineSeries::new(l.points.clone(), style))
        }
        .map_err(drawing)?;
        for p in &l.points {
            let (x, y) = chart.backend_coord(p);
            legend::draw_point(
                plot,
                (x - ox, y - oy),
                l.marker(),
                colour,
                l.strategy == Strategy::Herd,
            )?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sweep_is_one_line_per_system_and_strategy_through_each_count_median() {
        let mut cells = Vec::new();
        for (clients, reps) in [(32u32, [30.0, 10.0, 20.0]), (2, [100.0, 120.0, 110.0])] {
            for (k, tput) in reps.into_iter().enumerate() {
                let mut c = crate::capacity::report::tests::cell(clients, tput, 1000, 10);
                c.id.repetition = Some(k as u32 + 1);
                cells.push(c);
            }
        }
        let h = Herd::of_run(&cells, HerdMeasure::Throughput);
        assert_eq!(h.lines.len(), 1);
        // log2 2 = 1 and log2 32 = 5, each at its repetitions' median, by growing clients.
        assert_eq!(h.lines[0].points, [(1.0, 110.0), (5.0, 20.0)]);
        assert_eq!(medians_by_x(vec![(1.0, 4.0), (1.0, 2.0)]), [(1.0, 3.0)]);
    }
}
