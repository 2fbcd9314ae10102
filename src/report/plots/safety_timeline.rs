//! The safety timeline of one cell and key: each client's holds as bars over time, lease-lost
//! signals marked, fault windows shaded, overlapping holds and refused stale accesses in red,
//! and the checker's violations as red lines labelled with their history line, so a violation
//! is seen, not only counted.
//!
//! A read-write lock's read holds are drawn in a colour of their own, and only overlaps with a
//! writer among them are red: readers sharing the lock is what it is for. In a semaphore's cell
//! only the stretches with more holders than its permits are red.
//!
//! The key is the one of the first violation (else of the first possible violation, else the
//! one with the most refused accesses, else the busiest). With a violation the time axis zooms
//! to the holds around it (a 1 ms overlap is invisible on a 30 s axis); otherwise it shows the
//! whole cell.

use std::collections::{BTreeMap, HashSet};

use plotters::coord::Shift;
use plotters::coord::types::RangedCoordf64;
use plotters::element::DashedPathElement;
use plotters::prelude::*;

use super::canvas::{FONT, Figure, VIOLATION, drawing, time_label};
use super::cell_data::{CellData, fault_kinds};
use super::latency_over_time::{fault_entries, label_bands, shade};
use super::legend::{self, Entry, Swatch};
use crate::history::CriticalSection;
use crate::results::Safety;

/// A hold on the plotted key, in µs since the cell's start.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Bar {
    client: u32,
    start_us: u64,
    end_us: u64,
    /// A read-write lock's read hold.
    reads: bool,
}

/// The figure.
pub struct SafetyTimeline<'a> {
    /// The cell id.
    pub title: String,
    /// The digested history.
    pub data: &'a CellData,
    /// The cell's verdict and evidence, if it was checked.
    pub safety: Option<&'a Safety>,
    /// How many may hold a key at once: a semaphore's permits, 1 for every other kind.
    pub permits: u32,
}

/// The plotted key, and the time window (µs) shown.
#[derive(Debug, Clone, PartialEq)]
pub struct View {
    /// The key.
    pub key: String,
    /// The window shown, µs since the cell's start.
    pub from_us: u64,
    pub to_us: u64,
}

impl SafetyTimeline<'_> {
    /// Which key and window to show (see the module docs).
    pub fn view(&self) -> Option<View> {
        let d = self.data;
        let evidence = self.safety.and_then(|s| {
            s.violations
                .iter()
                .chain(s.possible_violations.iter())
                .find(|v| v.key.is_some())
        });
        let key = evidence
            .and_then(|v| v.key.clone())
            .or_else(|| most(d.stale_refused.iter().map(|r| r.2.clone())))
            .or_else(|| most(d.sections.iter().map(|s| s.key.clone())))?;
        let (mut from, mut to) = (0, d.end_us.max(1));
        if let Some(v) = evidence.filter(|v| !v.t_us.is_empty()) {
            let lo = v.t_us.iter().copied().min().unwrap_or(0);
            let hi = v.t_us.iter().copied().max().unwrap_or(lo);
            // The holds that contain the violation's instants, whole.
            let (mut a, mut b) = (lo, hi);
            for s in d.sections.iter().filter(|s| s.key == key) {
                let end = s.released_us.unwrap_or(d.end_us);
                if v.t_us.iter().any(|t| (s.acquired_us..=end).contains(t)) {
                    a = a.min(s.acquired_us);
                    b = b.max(end);
                }
            }
            let pad = ((b - a) / 4).max(50_000);
            from = a.saturating_sub(pad);
            to = (b + pad).min(d.end_us.max(b + 1));
        }
        Some(View {
            key,
            from_us: from,
            to_us: to.max(from + 1),
        })
    }
}

/// The most frequent of `items`.
fn most(items: impl Iterator<Item = String>) -> Option<String> {
    let mut n: BTreeMap<String, usize> = BTreeMap::new();
    for i in items {
        *n.entry(i).or_default() += 1;
    }
    n.into_iter().max_by_key(|(_, c)| *c).map(|(k, _)| k)
}

/// The stretches where two clients' holds of `held` (each with whether it reads) overlap
/// with a writer among them: (from, to, the two clients). Two readers overlapping is allowed.
fn overlaps(held: &[(&CriticalSection, bool)], end_us: u64) -> Vec<(u64, u64, u32, u32)> {
    let mut by_start: Vec<(u64, u64, u32, bool)> = held
        .iter()
        .map(|(s, reads)| {
            let end = s.released_us.unwrap_or(end_us);
            (s.acquired_us, end, s.client, *reads)
        })
        .collect();
    by_start.sort_unstable();
    let mut out = Vec::new();
    for (i, &(_, e, c, r)) in by_start.iter().enumerate() {
        for &(s2, e2, c2, r2) in &by_start[i + 1..] {
            if s2 >= e {
                break;
            }
            if c2 != c && !(r && r2) {
                out.push((s2, e.min(e2), c, c2));
            }
        }
    }
    out
}

/// The stretches where more than `permits` clients of `held` hold at once, each client then
/// holding as one red stretch `(from, to, client)`, and how many such runs there are.
fn over_permits(
    held: &[(&CriticalSection, bool)],
    end_us: u64,
    permits: u32,
) -> (Vec<(u64, u64, u32)>, usize) {
    let spans: Vec<(u64, u64, u32)> = held
        .iter()
        .map(|(s, _)| (s.acquired_us, s.released_us.unwrap_or(end_us), s.client))
        .collect();
    let steps = crate::stats::occupancy::steps(spans.iter().map(|&(a, b, _)| (a, b)));
    let (mut red, mut runs, mut over_before) = (Vec::new(), 0, false);
    for (i, &(t, n)) in steps.iter().enumerate() {
        let over = n > u64::from(permits);
        runs += usize::from(over && !over_before);
        over_before = over;
        let Some(&(next, _)) = steps.get(i + 1).filter(|_| over) else {
            continue;
        };
        // Holders change only at steps: a hold covers this stretch whole or not at all.
        red.extend(
            spans
                .iter()
                .filter(|&&(a, b, _)| a <= t && b >= next)
                .map(|&(_, _, c)| (t, next, c)),
        );
    }
    (red, runs)
}

/// The pixel columns of the plotting area across the window shown.
#[derive(Debug, Clone, Copy)]
struct Columns {
    /// The window's start, µs.
    from_us: u64,
    /// How long one column lasts, µs.
    us_per_px: f64,
}

impl Columns {
    /// The columns of `chart` across `view`.
    fn of_chart<DB: DrawingBackend>(chart: &Chart<'_, DB>, view: &View) -> Columns {
        let width = chart.plotting_area().get_pixel_range().0.len().max(1);
        Columns {
            from_us: view.from_us,
            us_per_px: (view.to_us - view.from_us) as f64 / width as f64,
        }
    }

    /// The column of the time `t_us` (0 before the window).
    fn at(&self, t_us: u64) -> i64 {
        (t_us.saturating_sub(self.from_us) as f64 / self.us_per_px) as i64
    }
}

/// Widens each bar to at least a column, so none is narrower than a pixel (a rectangle of
/// width 0 is drawn neither in the PNG nor in the SVG), then merges each client's bars (its
/// read and its write holds apart) that touch in the raster: a bar covers the columns from its
/// start's to the one before its end's, and the next one merges into it when it starts no
/// later than the column after those, so every empty column between two holds stays empty.
/// A client's lane keeps at most half as many bars as the plot has columns, so a cell of
/// 200 000 holds makes a figure of a few thousand rectangles at most.
fn merge(mut bars: Vec<Bar>, columns: Columns) -> Vec<Bar> {
    let column_us = columns.us_per_px.ceil() as u64;
    for b in &mut bars {
        b.end_us = b.end_us.max(b.start_us + column_us);
    }
    bars.sort_by_key(|b| (b.client, b.reads, b.start_us));
    let mut out: Vec<Bar> = Vec::new();
    for b in bars {
        match out.last_mut() {
            Some(last)
                if last.client == b.client
                    && last.reads == b.reads
                    && columns.at(b.start_us) <= columns.at(last.end_us) =>
            {
                last.end_us = last.end_us.max(b.end_us);
            }
            _ => out.push(b),
        }
    }
    out
}

/// The chart of the timeline: seconds across, one row per client.
type Chart<'a, DB> = ChartContext<'a, DB, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

/// What the figure's parts share: the key and window shown and the holds on that key.
struct Scene<'a> {
    view: View,
    data: &'a CellData,
    on_key: Vec<&'a CriticalSection>,
    /// Whether each of `on_key` is a read hold.
    reading: Vec<bool>,
    /// Whether the cell has read holds at all (a read-write lock's): the legend says so.
    has_reads: bool,
    /// How many may hold a key at once.
    permits: u32,
    /// Fault kinds in colour order.
    kinds: Vec<String>,
}

impl Scene<'_> {
    fn rows(&self) -> f64 {
        self.data.clients.len().max(1) as f64
    }

    /// The row of client `c`.
    fn row(&self, c: u32) -> f64 {
        self.data.clients.iter().position(|x| *x == c).unwrap_or(0) as f64
    }

    /// Whether `a..=b` (µs) meets the window shown.
    fn in_view(&self, a: u64, b: u64) -> bool {
        b >= self.view.from_us && a <= self.view.to_us
    }
}

fn secs(us: u64) -> f64 {
    us as f64 / 1e6
}

const HOLD: RGBColor = RGBColor(70, 110, 170);
/// A read hold's colour (Okabe–Ito bluish green, apart from `HOLD` in greyscale too).
const READ_HOLD: RGBColor = RGBColor(0, 158, 115);

impl Figure for SafetyTimeline<'_> {
    fn size(&self) -> (u32, u32) {
        let rows = self.data.clients.len().max(1) as u32;
        (1200, 260 + 34 * rows.min(64))
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String> {
        let root = root
            .titled(
                &format!("Safety timeline: {}{}", self.title, self.verdict_note()),
                (FONT, 18),
            )
            .map_err(drawing)?;
        let (plot, side) = root.split_horizontally(960);
        let Some(view) = self.view() else {
            plot.draw(&Text::new("no holds in this cell", (380, 80), (FONT, 16)))
                .map_err(drawing)?;
            return Ok(());
        };
        let d = self.data;
        let reads = d.reads.iter().copied().chain(std::iter::repeat(false));
        let (on_key, reading) = d
            .sections
            .iter()
            .zip(reads)
            .filter(|(s, _)| s.key == view.key)
            .unzip();
        let scene = Scene {
            on_key,
            reading,
            has_reads: d.reads.iter().any(|r| *r),
            permits: self.permits,
            kinds: fault_kinds(&d.faults),
            view,
            data: d,
        };
        let mut chart = axes(&plot, &scene)?;
        shade(
            &mut chart,
            &d.faults,
            &scene.kinds,
            (-0.5, scene.rows() - 0.5),
        )?;
        let overlapping = draw_holds(&mut chart, &scene)?;
        draw_lost_and_stale(&mut chart, &scene)?;
        self.draw_violations(&plot, &mut chart, &scene)?;
        label_bands(&plot, &chart, &d.faults)?;
        legend::draw(&side, "Legend", &legend_entries(&scene, overlapping))
    }
}

impl SafetyTimeline<'_> {
    /// The verdict and its counts, for the title; empty when the cell was not checked.
    fn verdict_note(&self) -> String {
        self.safety
            .map(|s| {
                // A semaphore's exclusion is counted as grants beyond its permits.
                let exclusion = if self.permits > 1 {
                    format!("{} over permits", s.over_permits.unwrap_or(0))
                } else {
                    let o = &s.overlaps;
                    let n = o.granted_twice + o.told_and_went_on + o.expired_untold + o.unknown;
                    format!("{n} overlaps")
                };
                format!(
                    " — {}: {exclusion}, {} lost updates, {} stale refused",
                    s.verdict.name(),
                    s.lost_updates,
                    s.stale_accesses_rejected
                )
            })
            .unwrap_or_default()
    }

    /// The checker's violations on the key as dashed lines, each labelled with its history
    /// line (at most one label per 60 px).
    fn draw_violations<DB: DrawingBackend>(
        &self,
        plot: &DrawingArea<DB, Shift>,
        chart: &mut Chart<'_, DB>,
        scene: &Scene,
    ) -> Result<(), String> {
        let rows = scene.rows();
        let marked: Vec<(u64, usize)> = self
            .safety
            .map(|s| {
                s.violations
                    .iter()
                    .filter(|v| v.key.as_deref() == Some(scene.view.key.as_str()))
                    .filter_map(|v| Some((*v.t_us.first()?, *v.lines.first()?)))
                    .filter(|(t, _)| scene.in_view(*t, *t))
                    .collect()
            })
            .unwrap_or_default();
        chart
            .draw_series(marked.iter().map(|&(t, _)| {
                DashedPathElement::new(
                    vec![(secs(t), -0.5), (secs(t), rows - 0.5)],
                    4,
                    3,
                    VIOLATION.stroke_width(1),
                )
            }))
            .map_err(drawing)?;
        let (ox, oy) = plot.get_base_pixel();
        let mut last_x: Option<i32> = None;
        for &(t, line) in &marked {
            let (x, y) = chart.backend_coord(&(secs(t), rows - 0.5));
            if last_x.is_some_and(|l| x - l < 60) {
                continue;
            }
            last_x = Some(x);
            plot.draw(&Text::new(
                format!("line {line}"),
                (x - ox + 3, y - oy + 2),
                (FONT, 12).into_font().color(&VIOLATION),
            ))
            .map_err(drawing)?;
        }
        Ok(())
    }
}

/// The chart over the window shown, one labelled row per client.
fn axes<'a, DB: DrawingBackend>(
    plot: &'a DrawingArea<DB, Shift>,
    scene: &Scene,
) -> Result<Chart<'a, DB>, String> {
    let clients = &scene.data.clients;
    let (from, to) = (secs(scene.view.from_us), secs(scene.view.to_us));
    let mut chart = ChartBuilder::on(plot)
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(80)
        .build_cartesian_2d(from..to, -0.5f64..scene.rows() - 0.5)
        .map_err(drawing)?;
    let labels = clients.len().clamp(1, 64);
    chart
        .configure_mesh()
        .disable_y_mesh()
        .y_labels(labels)
        .y_label_formatter(&|y| {
            let i = y.round();
            if (y - i).abs() < 0.01 && i >= 0.0 {
                clients
                    .get(i as usize)
                    .map(|c| format!("client {c}"))
                    .unwrap_or_default()
            } else {
                String::new()
            }
        })
        .x_label_formatter(&|v| time_label(*v, to - from))
        .x_labels(10)
        .x_desc(format!(
            "time since the cell started — key {}",
            scene.view.key
        ))
        .label_style((FONT, 12))
        .draw()
        .map_err(drawing)?;
    Ok(chart)
}

/// Each client's holds as bars (merged below a pixel) and, over them in red, the stretches
/// where two clients held at once; returns how many such stretches the key has in all.
fn draw_holds<DB: DrawingBackend>(
    chart: &mut Chart<'_, DB>,
    scene: &Scene,
) -> Result<usize, String> {
    let end_us = scene.data.end_us;
    let held: Vec<(&CriticalSection, bool)> = scene
        .on_key
        .iter()
        .copied()
        .zip(scene.reading.iter().copied())
        .collect();
    let bars: Vec<Bar> = held
        .iter()
        .map(|&(s, reads)| Bar {
            client: s.client,
            start_us: s.acquired_us,
            end_us: s.released_us.unwrap_or(end_us),
            reads,
        })
        .filter(|b| scene.in_view(b.start_us, b.end_us))
        .collect();
    let columns = Columns::of_chart(chart, &scene.view);
    chart
        .draw_series(merge(bars, columns).into_iter().map(|b| {
            let y = scene.row(b.client);
            let colour = if b.reads { READ_HOLD } else { HOLD };
            Rectangle::new(
                [(secs(b.start_us), y - 0.3), (secs(b.end_us), y + 0.3)],
                colour.filled(),
            )
        }))
        .map_err(drawing)?;
    let (red, count) = if scene.permits > 1 {
        over_permits(&held, end_us, scene.permits)
    } else {
        let twice = overlaps(&held, end_us);
        let red = twice
            .iter()
            .flat_map(|&(a, b, c1, c2)| [(a, b, c1), (a, b, c2)])
            .collect();
        (red, twice.len())
    };
    // Merged and widened as the holds are: every red stretch stays at least a pixel wide.
    let red: Vec<Bar> = red
        .into_iter()
        .filter(|r| scene.in_view(r.0, r.1))
        .map(|(start_us, end_us, client)| Bar {
            client,
            start_us,
            end_us,
            reads: false,
        })
        .collect();
    chart
        .draw_series(merge(red, columns).into_iter().map(|b| {
            let y = scene.row(b.client);
            Rectangle::new(
                [(secs(b.start_us), y - 0.42), (secs(b.end_us), y + 0.42)],
                VIOLATION.filled(),
            )
        }))
        .map_err(drawing)?;
    Ok(count)
}

/// Lease-lost signals as black triangles and refused stale accesses as red crosses.
fn draw_lost_and_stale<DB: DrawingBackend>(
    chart: &mut Chart<'_, DB>,
    scene: &Scene,
) -> Result<(), String> {
    let columns = Columns::of_chart(chart, &scene.view);
    let lost = one_per_column(
        scene
            .on_key
            .iter()
            .filter_map(|s| s.lost_us.map(|t| (t, s.client))),
        scene,
        columns,
    );
    chart
        .draw_series(
            lost.iter()
                .map(|&p| TriangleMarker::new(p, 7, BLACK.filled())),
        )
        .map_err(drawing)?;
    let stale = one_per_column(
        scene
            .data
            .stale_refused
            .iter()
            .filter(|(_, _, k)| *k == scene.view.key)
            .map(|&(t, c, _)| (t, c)),
        scene,
        columns,
    );
    chart
        .draw_series(
            stale
                .iter()
                .map(|&p| Cross::new(p, 7, VIOLATION.stroke_width(3))),
        )
        .map_err(drawing)?;
    Ok(())
}

/// Where to draw the marks `(time µs, client)` in view: one per pixel column and lane, as more
/// would be drawn over each other.
fn one_per_column(
    marks: impl Iterator<Item = (u64, u32)>,
    scene: &Scene,
    columns: Columns,
) -> Vec<(f64, f64)> {
    let mut seen = HashSet::new();
    marks
        .filter(|&(t, c)| scene.in_view(t, t) && seen.insert((columns.at(t), c)))
        .map(|(t, c)| (secs(t), scene.row(c)))
        .collect()
}

/// The legend: what each mark is, with its count on the key, then the numbered fault bands.
fn legend_entries(scene: &Scene, overlapping: usize) -> Vec<Entry> {
    let d = scene.data;
    let key = &scene.view.key;
    let mut entries = if scene.has_reads {
        vec![
            Entry {
                label: "write hold".into(),
                colour: HOLD,
                swatch: Swatch::Box,
            },
            Entry {
                label: "read hold (shared)".into(),
                colour: READ_HOLD,
                swatch: Swatch::Box,
            },
            Entry {
                label: format!("overlaps with a writer: {overlapping}"),
                colour: VIOLATION,
                swatch: Swatch::Box,
            },
        ]
    } else {
        let red = if scene.permits > 1 {
            format!("more than {} holders: {overlapping}", scene.permits)
        } else {
            format!("overlapping holds: {overlapping}")
        };
        vec![
            Entry {
                label: "hold (grant → release)".into(),
                colour: HOLD,
                swatch: Swatch::Box,
            },
            Entry {
                label: red,
                colour: VIOLATION,
                swatch: Swatch::Box,
            },
        ]
    };
    entries.extend([
        Entry {
            label: format!(
                "refused stale access: {}",
                d.stale_refused.iter().filter(|r| &r.2 == key).count()
            ),
            colour: VIOLATION,
            swatch: Swatch::Marker(3),
        },
        Entry {
            label: format!(
                "lease lost: {}",
                scene.on_key.iter().filter(|s| s.lost_us.is_some()).count()
            ),
            colour: BLACK,
            swatch: Swatch::Marker(1),
        },
        Entry {
            label: "violation (history line)".into(),
            colour: VIOLATION,
            swatch: Swatch::Line { dashed: true },
        },
    ]);
    entries.extend(fault_entries(&d.faults, &scene.kinds));
    entries
}

#[cfg(test)]
mod tests {
    use super::*;

    fn section(client: u32, from: u64, to: u64) -> CriticalSection {
        CriticalSection {
            client,
            key: "k".into(),
            token: None,
            ttl_ms: None,
            acquired_us: from,
            acquired_at: 0,
            released_us: Some(to),
            released_at: None,
            lost_us: None,
            lost_at: None,
        }
    }

    #[test]
    fn overlapping_holds_of_two_clients_are_found_and_back_to_back_ones_are_not() {
        let (a, b, c) = (
            section(1, 0, 100),
            section(2, 50, 150),
            section(3, 150, 200),
        );
        let writers = [(&a, false), (&b, false), (&c, false)];
        assert_eq!(overlaps(&writers, 1000), vec![(50, 100, 1, 2)]);
        // Two readers overlapping is allowed; a reader beside a writer is not.
        assert!(overlaps(&[(&a, true), (&b, true)], 1000).is_empty());
        assert_eq!(
            overlaps(&[(&a, true), (&b, false)], 1000),
            vec![(50, 100, 1, 2)]
        );
    }

    #[test]
    fn bars_meeting_in_a_column_merge_per_client_and_mode_and_are_a_column_wide() {
        let bar = |client, start_us, end_us, reads| Bar {
            client,
            start_us,
            end_us,
            reads,
        };
        // Columns of 10 µs, each bar widened to one: client 1's first three writes touch and
        // merge; the one after an empty column, its read and client 2's stay apart.
        let bars = vec![
            bar(1, 0, 3, false),
            bar(1, 7, 12, false),
            bar(1, 14, 16, false),
            bar(2, 15, 18, false),
            bar(1, 35, 36, false),
            bar(1, 5, 6, true),
        ];
        let columns = Columns {
            from_us: 0,
            us_per_px: 10.0,
        };
        assert_eq!(
            merge(bars, columns),
            vec![
                bar(1, 0, 24, false),
                bar(1, 35, 45, false),
                bar(1, 5, 15, true),
                bar(2, 15, 25, false),
            ]
        );
    }

    /// 200 000 holds of 40 µs on one key over 10 s, handed round 16 clients; with `overlap`,
    /// client 7 is granted 10 µs into client 3's hold at 5.00015 s and holds 25 µs (a pixel is
    /// about 12 ms).
    fn busy_key(overlap: bool) -> CellData {
        let mut sections: Vec<CriticalSection> = (0..200_000u64)
            .map(|i| section((i % 16) as u32, i * 50, i * 50 + 40))
            .collect();
        if overlap {
            sections.push(section(7, 5_000_160, 5_000_185));
        }
        CellData {
            sections,
            clients: (0..16).collect(),
            end_us: 10_000_000,
            ..CellData::default()
        }
    }

    #[test]
    fn a_busy_keys_timeline_is_bounded_and_shows_a_sub_pixel_overlap() {
        let svg_of = |data: &CellData| {
            super::super::draws(&SafetyTimeline {
                title: "busy".into(),
                data,
                safety: None,
                permits: 1,
            })
        };
        let (calm, overlapping) = (busy_key(false), busy_key(true));
        let (without, with) = (svg_of(&calm), svg_of(&overlapping));
        for svg in [&without, &with] {
            // The legend's box, then one bar a lane: each client holds in every pixel column.
            let holds = super::super::rects_filled(svg, HOLD);
            assert_eq!(holds.len(), 1 + 16, "{holds:?}");
            assert!(svg.len() < 50 * 1024, "{} bytes", svg.len());
        }
        assert!(
            with.contains("overlapping holds: 1"),
            "the legend counts it"
        );
        // Both clients' lanes get a red stretch at least a pixel wide (the legend's box aside).
        let red = |svg: &str| -> Vec<f64> {
            super::super::rects_filled(svg, VIOLATION)
                .into_iter()
                .map(|(width, _)| width)
                .filter(|w| *w > 0.0)
                .collect()
        };
        assert_eq!(
            red(&with).len(),
            red(&without).len() + 2,
            "{:?}",
            red(&with)
        );
    }

    /// A hand-made history with one double grant at 1.5 s, checked by the real checkers.
    fn double_grant() -> (CellData, Safety) {
        use crate::check::testkit::{cell, grant, invoke, release};
        let events = vec![
            invoke(900_000, 1, "k"),
            grant(1_000_000, 1, "k", 1, 10_000),
            invoke(1_400_000, 2, "k"),
            grant(1_500_000, 2, "k", 2, 10_000),
            release(1_600_000, 2, "k"),
            release(2_000_000, 1, "k"),
            invoke(8_900_000, 1, "k"),
            grant(9_000_000, 1, "k", 3, 10_000),
            release(9_100_000, 1, "k"),
        ];
        let mut data = CellData::of(&events, &[]);
        data.end_us = 30_000_000;
        let result = crate::check::evaluate_history(&crate::check::History::new(events), cell(2));
        (data, result.analysis.summary.safety.expect("checked"))
    }

    #[test]
    fn the_view_zooms_to_the_holds_around_the_first_violation() {
        let (data, safety) = double_grant();
        assert!(!safety.violations.is_empty(), "{safety:#?}");
        let t = SafetyTimeline {
            title: "c".into(),
            data: &data,
            safety: Some(&safety),
            permits: 1,
        };
        let v = t.view().unwrap();
        assert_eq!(v.key, "k");
        // Both holds around the violation, whole, and not the lone hold at 9 s.
        assert!((500_000..=1_000_000).contains(&v.from_us), "{v:?}");
        assert!((2_000_000..9_000_000).contains(&v.to_us), "{v:?}");
    }

    #[test]
    fn without_a_violation_the_whole_cell_is_shown() {
        let (data, _) = double_grant();
        let t = SafetyTimeline {
            title: "c".into(),
            data: &data,
            safety: None,
            permits: 1,
        };
        assert_eq!(
            t.view().unwrap(),
            View {
                key: "k".into(),
                from_us: 0,
                to_us: 30_000_000
            }
        );
    }

    #[test]
    fn read_holds_get_their_own_colour_and_legend_and_share_without_red() {
        use crate::check::testkit::{grant, invoke, reading, release, writing};
        // Clients 1 and 2 read together over [100, 300); client 3 writes after them.
        let events = vec![
            reading(invoke(0, 1, "k")),
            reading(grant(100, 1, "k", 1, 1000)),
            reading(invoke(0, 2, "k")),
            reading(grant(150, 2, "k", 2, 1000)),
            release(300, 1, "k"),
            release(320, 2, "k"),
            writing(invoke(0, 3, "k")),
            writing(grant(400, 3, "k", 3, 1000)),
            release(500, 3, "k"),
        ];
        let data = CellData::of(&events, &[]);
        assert_eq!(data.reads, vec![true, true, false]);
        let svg = super::super::draws(&SafetyTimeline {
            title: "rw".into(),
            data: &data,
            safety: None,
            permits: 1,
        });
        assert!(
            svg.contains("read hold (shared)"),
            "the legend names read holds"
        );
        assert!(
            svg.contains("overlaps with a writer: 0"),
            "readers sharing is not red"
        );
        let RGBColor(r, g, b) = READ_HOLD;
        assert!(
            svg.to_uppercase()
                .contains(&format!("#{r:02X}{g:02X}{b:02X}")),
            "no read hold drawn in its colour"
        );
        // A mutex's timeline keeps its one kind of hold.
        let plain: Vec<_> = events
            .into_iter()
            .map(|mut e| {
                e.mode = None;
                e
            })
            .collect();
        let data = CellData::of(&plain, &[]);
        let svg = super::super::draws(&SafetyTimeline {
            title: "m".into(),
            data: &data,
            safety: None,
            permits: 1,
        });
        assert!(!svg.contains("read hold") && svg.contains("overlapping holds: 1"));
    }

    #[test]
    fn a_semaphore_reddens_only_what_is_beyond_its_permits() {
        let (a, b, c) = (section(1, 0, 100), section(2, 50, 150), section(3, 80, 120));
        let held = [(&a, false), (&b, false), (&c, false)];
        // Three hold over [80, 100): one run, each of the three red there.
        assert_eq!(
            over_permits(&held, 1000, 2),
            (vec![(80, 100, 1), (80, 100, 2), (80, 100, 3)], 1)
        );
        assert_eq!(over_permits(&held, 1000, 3), (vec![], 0));
    }
}
