//! Latency over time, one cell: every acquisition a point (colour and shape by outcome) at its
//! intended start, p50 and p99 per second as lines, on a log axis; throughput per second below
//! (a second the measured window cuts drawn over its measured part, at its rate there);
//! fault windows shaded in both, one colour per kind (as Jepsen's perf plots do); the warm-up
//! shaded grey, as its acquisitions are drawn but no per-second line or bar is (the summary's
//! figures leave it out, `CellSummary::warmup_us`). Points of one
//! outcome that would land on the same few pixels are drawn once (see `LatencyOverTime::points`),
//! so the figure stays small however many acquisitions the cell made.

use plotters::coord::Shift;
use plotters::prelude::*;

use super::canvas::{FONT, Figure, drawing, duration_label, fault_colour, log_range, time_label};
use super::cell_data::{CellData, FaultBand, Outcome, fault_kinds};
use super::legend::{self, Entry, Swatch};
use super::thinning::thin_markers;
use crate::results::SecondStats;

/// The figure.
pub struct LatencyOverTime<'a> {
    /// The cell's id, the title.
    pub title: String,
    /// The digested history.
    pub data: &'a CellData,
    /// Acquisitions and latency percentiles per second (the summary's `per_second`).
    pub per_second: &'a [SecondStats],
    /// The warm-up's end, µs (the summary's `warmup_us`; 0: none).
    pub warmup_us: u64,
    /// The measured window's end, µs (the summary's `warmup_us` + `duration_s`; 0: unknown,
    /// every second is drawn whole). A second cut by the window's start or end is drawn over
    /// its measured part only, its rate its acquisitions ÷ that part.
    pub measured_end_us: u64,
}

/// The warm-up's shade.
const WARMUP: RGBColor = RGBColor(150, 150, 150);

/// The side of a point's bin to start with, px: about a marker's size (ok circles have a
/// radius of 2), so binned points still touch where the acquisitions were dense.
const MARKER_BIN_PX: f64 = 4.0;

/// The most points one outcome draws; past it its bins grow (see `LatencyOverTime::points`).
pub const MAX_MARKERS_PER_OUTCOME: usize = 4_000;

/// One drawn point: where (seconds, µs), how the acquisitions it stands for ended, how many
/// they are, and the radius of an ok's circle, px.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Marker {
    x: f64,
    y: f64,
    outcome: Outcome,
    count: usize,
    radius: i32,
}

impl Marker {
    /// How opaque the point is drawn: an ok as opaque as its `count` half-transparent points
    /// drawn over each other would be (so dense stretches stay darker, as when every
    /// acquisition was a point), a failure or an unknown nearly opaque.
    fn opacity(&self) -> f64 {
        match self.outcome {
            Outcome::Ok => 1.0 - 0.5f64.powi(self.count.min(8) as i32),
            Outcome::Fail | Outcome::Info => 0.9,
        }
    }
}

/// The outcome's colour, shape and name.
fn outcome_style(o: Outcome) -> (RGBColor, u8, &'static str) {
    match o {
        Outcome::Ok => (RGBColor(40, 80, 160), 0, "acquired (ok)"),
        Outcome::Fail => (RGBColor(213, 0, 0), 3, "failed (fail)"),
        Outcome::Info => (RGBColor(230, 140, 0), 1, "unknown (info)"),
    }
}

impl LatencyOverTime<'_> {
    fn duration_s(&self) -> f64 {
        let last_second = self
            .per_second
            .iter()
            .map(|s| s.second + 1)
            .max()
            .unwrap_or(0) as f64;
        (self.data.end_us as f64 / 1e6).max(last_second).max(1.0)
    }

    /// The points to draw on a plotting area of `plot_px` (width, height) pixels, with the
    /// radius of their circles: per outcome, one per bin of about a marker's size
    /// ([`MARKER_BIN_PX`]), the bins growing until the outcome has at most
    /// [`MAX_MARKERS_PER_OUTCOME`]; so a cell of 200 000 acquisitions draws a few thousand
    /// points that look the same. Outcomes never share a bin: a failure among thousands of oks
    /// keeps its own marker, drawn over them.
    fn points(
        &self,
        duration_s: f64,
        (lo, hi): (f64, f64),
        (width_px, height_px): (f64, f64),
    ) -> Vec<Marker> {
        let (llo, lhi) = (lo.log10(), hi.log10());
        let placed: Vec<(f64, f64, Outcome)> = self
            .data
            .acquisitions
            .iter()
            .map(|a| {
                (
                    a.start_us as f64 / 1e6,
                    (a.latency_us as f64).max(lo),
                    a.outcome,
                )
            })
            .collect();
        let place = |&(x, y, o): &(f64, f64, Outcome)| {
            let px = x / duration_s * width_px;
            let py = (y.log10() - llo) / (lhi - llo) * height_px;
            (px, py, o)
        };
        let mut out: Vec<Marker> =
            thin_markers(&placed, place, MARKER_BIN_PX, MAX_MARKERS_PER_OUTCOME)
                .into_iter()
                .map(|k| {
                    // A lone point where it is; one standing for several in its bin's centre,
                    // so a dense stretch is drawn as an even texture.
                    let (x, y, outcome) = k.item;
                    let (x, y) = if k.count == 1 {
                        (x, y)
                    } else {
                        let (cx, cy) = (k.centre_px.0.min(width_px), k.centre_px.1.min(height_px));
                        let y_log = llo + cy / height_px * (lhi - llo);
                        (cx / width_px * duration_s, 10f64.powf(y_log))
                    };
                    Marker {
                        x,
                        y,
                        outcome,
                        count: k.count,
                        // Bins grown past a marker's size get markers as wide.
                        radius: ((k.bin_px / 2.0).round() as i32).max(2),
                    }
                })
                .collect();
        // Failures and unknowns on top of the many oks.
        out.sort_by_key(|p| match p.outcome {
            Outcome::Ok => 0,
            Outcome::Info => 1,
            Outcome::Fail => 2,
        });
        out
    }

    /// The part of second `s` inside the measured window, seconds: the whole second unless the
    /// warm-up ends or the cell ends inside it.
    fn measured_part(&self, s: &SecondStats) -> (f64, f64) {
        let (second, warmup_s) = (s.second as f64, self.warmup_us as f64 / 1e6);
        let from = second.max(warmup_s);
        let to = if self.measured_end_us > 0 {
            (second + 1.0).min(self.measured_end_us as f64 / 1e6)
        } else {
            second + 1.0
        };
        (from, to.max(from))
    }

    /// Second `s`'s acquisitions per second of its measured part; its count where that part is
    /// empty.
    fn rate(&self, s: &SecondStats) -> f64 {
        let (from, to) = self.measured_part(s);
        if to > from {
            s.acquisitions as f64 / (to - from)
        } else {
            s.acquisitions as f64
        }
    }

    /// The rate axis's top: the highest rate over seconds measured for at least half their
    /// length (a few acquisitions in a sliver of a second make a rate too noisy to set the
    /// scale; such a bar is cut at the top), over every second when none is.
    fn max_rate(&self) -> f64 {
        let top = |long_only: bool| {
            self.per_second
                .iter()
                .filter(|s| {
                    let (from, to) = self.measured_part(s);
                    !long_only || to - from >= 0.5
                })
                .map(|s| self.rate(s))
                .fold(0.0, f64::max)
        };
        let long = top(true);
        if long > 0.0 { long } else { top(false) }.max(1.0)
    }

    fn latency_range(&self) -> (f64, f64) {
        log_range(
            self.data.acquisitions.iter().map(|a| a.latency_us as f64),
            2.0,
        )
    }
}

impl Figure for LatencyOverTime<'_> {
    fn size(&self) -> (u32, u32) {
        (1200, 760)
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String> {
        let root = root
            .titled(
                &format!("Acquire latency over time: {}", self.title),
                (FONT, 20),
            )
            .map_err(drawing)?;
        let (plots, side) = root.split_horizontally(960);
        let (top, bottom) = plots.split_vertically(500);
        let kinds = fault_kinds(&self.data.faults);
        self.draw_latency(&top, &kinds)?;
        self.draw_rate(&bottom, &kinds)?;
        legend::draw(&side, "Legend", &self.legend_entries(&kinds))
    }
}

impl LatencyOverTime<'_> {
    /// The top chart: the acquisitions as points (thinned to the pixels), p50 and p99 per
    /// second as lines.
    fn draw_latency<DB: DrawingBackend>(
        &self,
        area: &DrawingArea<DB, Shift>,
        kinds: &[String],
    ) -> Result<(), String> {
        let duration_s = self.duration_s();
        let (lo, hi) = self.latency_range();
        let mut chart = ChartBuilder::on(area)
            .margin(10)
            .x_label_area_size(30)
            .y_label_area_size(80)
            .build_cartesian_2d(0f64..duration_s, (lo..hi).log_scale())
            .map_err(drawing)?;
        chart
            .configure_mesh()
            .y_desc("acquire latency (log)")
            .y_label_formatter(&|v| duration_label(*v))
            .x_label_formatter(&|v| time_label(*v, duration_s))
            .label_style((FONT, 12))
            .draw()
            .map_err(drawing)?;
        self.shade_warmup(&mut chart, (lo, hi))?;
        shade(&mut chart, &self.data.faults, kinds, (lo, hi))?;
        let (xs, ys) = chart.plotting_area().get_pixel_range();
        let plot_px = (f64::from(xs.end - xs.start), f64::from(ys.end - ys.start));
        for m in self.points(duration_s, (lo, hi), plot_px) {
            let (x, y, o) = (m.x, m.y, m.outcome);
            let (colour, shape, _) = outcome_style(o);
            let style = colour.mix(m.opacity()).filled();
            match shape {
                0 => chart.draw_series(std::iter::once(Circle::new((x, y), m.radius, style))),
                1 => chart.draw_series(std::iter::once(TriangleMarker::new((x, y), 4, style))),
                _ => chart.draw_series(std::iter::once(Cross::new(
                    (x, y),
                    4,
                    colour.stroke_width(2),
                ))),
            }
            .map_err(drawing)?;
        }
        let line = |pick: fn(&SecondStats) -> u64| -> Vec<(f64, f64)> {
            self.per_second
                .iter()
                .filter(|s| s.acquisitions > 0)
                .map(|s| {
                    let (from, to) = self.measured_part(s);
                    ((from + to) / 2.0, (pick(s) as f64).clamp(lo, hi))
                })
                .collect()
        };
        let p50 = line(|s| s.p50_acquire_us);
        let p99 = line(|s| s.p99_acquire_us);
        chart
            .draw_series(LineSeries::new(p50, BLACK.stroke_width(2)))
            .map_err(drawing)?;
        chart
            .draw_series(DashedLineSeries::new(p99, 6, 4, BLACK.stroke_width(2)))
            .map_err(drawing)?;
        label_bands(area, &chart, &self.data.faults)
    }

    /// The bottom chart: acquisitions per second as bars.
    fn draw_rate<DB: DrawingBackend>(
        &self,
        area: &DrawingArea<DB, Shift>,
        kinds: &[String],
    ) -> Result<(), String> {
        let duration_s = self.duration_s();
        let max_rate = self.max_rate();
        let mut rate = ChartBuilder::on(area)
            .margin(10)
            .x_label_area_size(40)
            .y_label_area_size(80)
            .build_cartesian_2d(0f64..duration_s, 0f64..max_rate * 1.1)
            .map_err(drawing)?;
        rate.configure_mesh()
            .x_desc("time since the cell started")
            .y_desc("acquisitions/s")
            .x_label_formatter(&|v| time_label(*v, duration_s))
            // Whole numbers unless the rate is too low for them to tell ticks apart.
            .y_label_formatter(&|v| {
                if max_rate >= 5.0 {
                    format!("{v:.0}")
                } else {
                    format!("{v:.1}")
                }
            })
            .label_style((FONT, 12))
            .draw()
            .map_err(drawing)?;
        self.shade_warmup(&mut rate, (0.0, max_rate * 1.1))?;
        shade(&mut rate, &self.data.faults, kinds, (0.0, max_rate * 1.1))?;
        rate.draw_series(self.per_second.iter().map(|s| {
            // A twentieth of a second's gap each side, less for a sliver of a second.
            let (from, to) = self.measured_part(s);
            let gap = 0.05f64.min((to - from) / 4.0);
            Rectangle::new(
                [
                    (from + gap, 0.0),
                    (to - gap, self.rate(s).min(max_rate * 1.1)),
                ],
                RATE.filled(),
            )
        }))
        .map_err(drawing)?;
        Ok(())
    }

    /// Shades the warm-up over the chart's full height (nothing when there is none).
    fn shade_warmup<DB: DrawingBackend, Y>(
        &self,
        chart: &mut ChartContext<'_, DB, Cartesian2d<plotters::coord::types::RangedCoordf64, Y>>,
        (lo, hi): (f64, f64),
    ) -> Result<(), String>
    where
        Y: Ranged<ValueType = f64>,
    {
        if self.warmup_us == 0 {
            return Ok(());
        }
        let end = self.warmup_us as f64 / 1e6;
        chart
            .draw_series(std::iter::once(Rectangle::new(
                [(0.0, lo), (end, hi)],
                WARMUP.mix(0.2).filled(),
            )))
            .map_err(drawing)?;
        Ok(())
    }

    /// The legend: each outcome with its count, the lines, the bars, the warm-up, then the
    /// fault bands.
    fn legend_entries(&self, kinds: &[String]) -> Vec<Entry> {
        let mut entries = Vec::new();
        for o in [Outcome::Ok, Outcome::Fail, Outcome::Info] {
            let (colour, shape, name) = outcome_style(o);
            let n = self
                .data
                .acquisitions
                .iter()
                .filter(|a| a.outcome == o)
                .count();
            entries.push(Entry {
                label: format!("{name}: {n}"),
                colour,
                swatch: Swatch::Marker(shape),
            });
        }
        entries.push(Entry {
            label: "p50 per second".into(),
            colour: BLACK,
            swatch: Swatch::Line { dashed: false },
        });
        entries.push(Entry {
            label: "p99 per second".into(),
            colour: BLACK,
            swatch: Swatch::Line { dashed: true },
        });
        entries.push(Entry {
            label: "acquisitions/s".into(),
            colour: RATE,
            swatch: Swatch::Box,
        });
        if self.warmup_us > 0 {
            entries.push(Entry {
                label: format!(
                    "warm-up, not measured (0–{:.1} s)",
                    self.warmup_us as f64 / 1e6
                ),
                colour: WARMUP,
                swatch: Swatch::Box,
            });
        }
        entries.extend(fault_entries(&self.data.faults, kinds));
        entries
    }
}

/// The colour of the acquisitions-per-second bars.
pub(super) const RATE: RGBColor = RGBColor(60, 60, 60);

/// One legend entry per fault band, numbered as [`label_bands`] numbers them on the plot.
pub fn fault_entries(bands: &[FaultBand], kinds: &[String]) -> Vec<Entry> {
    bands
        .iter()
        .enumerate()
        .map(|(i, b)| Entry {
            label: format!(
                "{} {} ({:.1}–{:.1} s)",
                i + 1,
                b.label,
                b.start_us as f64 / 1e6,
                b.end_us as f64 / 1e6
            ),
            colour: fault_colour(kinds, &b.kind),
            swatch: Swatch::Box,
        })
        .collect()
}

/// Shades every fault window over the chart's full height: dark while the fault is in effect,
/// light while it is being applied (its request → its effect) and undone (the undo's request →
/// done; for a kill, until the node serves its cluster again).
pub fn shade<DB: DrawingBackend, Y>(
    chart: &mut ChartContext<'_, DB, Cartesian2d<plotters::coord::types::RangedCoordf64, Y>>,
    bands: &[FaultBand],
    kinds: &[String],
    (lo, hi): (f64, f64),
) -> Result<(), String>
where
    Y: Ranged<ValueType = f64>,
{
    let secs = |us: u64| us as f64 / 1e6;
    let parts = bands.iter().flat_map(|b| {
        let colour = fault_colour(kinds, &b.kind);
        [
            (b.start_us, b.effect_us, colour.mix(0.15)),
            (b.effect_us, b.undo_us, colour.mix(0.35)),
            (b.undo_us, b.end_us, colour.mix(0.15)),
        ]
    });
    chart
        .draw_series(
            parts
                .filter(|(from, to, _)| to > from)
                .map(|(from, to, c)| {
                    Rectangle::new([(secs(from), lo), (secs(to), hi)], c.filled())
                }),
        )
        .map_err(drawing)?;
    Ok(())
}

/// Numbers each fault band at the bottom of the plot (the legend says what each number is);
/// a number that would touch the previous one is left out rather than drawn over it.
pub fn label_bands<DB: DrawingBackend, Y>(
    area: &DrawingArea<DB, Shift>,
    chart: &ChartContext<'_, DB, Cartesian2d<plotters::coord::types::RangedCoordf64, Y>>,
    bands: &[FaultBand],
) -> Result<(), String>
where
    Y: Ranged<ValueType = f64>,
{
    let plot = chart.plotting_area();
    let (x_range, y_range) = plot.get_pixel_range();
    let (ox, oy) = area.get_base_pixel();
    let mut last_x: Option<i32> = None;
    for (i, b) in bands.iter().enumerate() {
        let start = chart
            .backend_coord(&(b.start_us as f64 / 1e6, chart.y_range().start))
            .0;
        let end = chart
            .backend_coord(&(b.end_us as f64 / 1e6, chart.y_range().start))
            .0;
        // A band that starts left of the view is numbered at the view's edge.
        let x = start.max(x_range.start);
        if end < x_range.start || x >= x_range.end || last_x.is_some_and(|l| x - l < 24) {
            continue;
        }
        last_x = Some(x);
        // At the bottom of the band: the top is where violations are labelled.
        area.draw(&Text::new(
            format!("{}", i + 1),
            (x - ox + 3, y_range.end - oy - 18),
            (FONT, 13).into_font().style(FontStyle::Bold),
        ))
        .map_err(drawing)?;
    }
    Ok(())
}
