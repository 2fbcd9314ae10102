//! A semaphore's holders over time, one cell and key: the number of certain holders (acquire
//! `ok` → release invoke) as a step line against the permits N, so a semaphore that sat full,
//! idle, or above N is seen at a glance.
//!
//! The key is the busiest one (the most holds); fault windows are shaded as elsewhere.

use plotters::coord::Shift;
use plotters::element::DashedPathElement;
use plotters::prelude::*;

use super::canvas::{FONT, Figure, VIOLATION, drawing, time_label};
use super::cell_data::{CellData, fault_kinds};
use super::latency_over_time::{fault_entries, label_bands, shade};
use super::legend::{self, Entry, Swatch};
use crate::stats::occupancy::steps;

/// The figure.
pub struct SemaphoreHolders<'a> {
    /// The cell id.
    pub title: String,
    /// The digested history.
    pub data: &'a CellData,
    /// How many may hold one key at once.
    pub permits: u32,
}

/// The holders' line colour.
const HOLDERS: RGBColor = RGBColor(70, 110, 170);

impl SemaphoreHolders<'_> {
    /// The key shown (the one with the most holds) and its holders over time, `(µs, holders
    /// from then on)`, starting at 0 from the cell's start; `None` without holds.
    pub fn line(&self) -> Option<(String, Vec<(u64, u64)>)> {
        let d = self.data;
        let mut counts: std::collections::BTreeMap<&str, usize> = Default::default();
        for s in &d.sections {
            *counts.entry(s.key.as_str()).or_default() += 1;
        }
        let key = counts.into_iter().max_by_key(|&(_, n)| n)?.0.to_string();
        let holds = d
            .sections
            .iter()
            .filter(|s| s.key == key)
            .map(|s| (s.acquired_us, s.released_us.unwrap_or(d.end_us)));
        let mut line = vec![(0, 0)];
        line.extend(steps(holds));
        Some((key, line))
    }
}

impl Figure for SemaphoreHolders<'_> {
    fn size(&self) -> (u32, u32) {
        (1200, 480)
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String> {
        let root = root
            .titled(
                &format!("Semaphore holders: {} — N = {}", self.title, self.permits),
                (FONT, 18),
            )
            .map_err(drawing)?;
        let (plot, side) = root.split_horizontally(960);
        let Some((key, line)) = self.line() else {
            plot.draw(&Text::new("no holds in this cell", (380, 80), (FONT, 16)))
                .map_err(drawing)?;
            return Ok(());
        };
        let d = self.data;
        let secs = |us: u64| us as f64 / 1e6;
        let end = secs(d.end_us.max(1));
        let most = line.iter().map(|p| p.1).max().unwrap_or(0);
        let top = most.max(u64::from(self.permits)) as f64 + 1.0;
        let mut chart = ChartBuilder::on(&plot)
            .margin(15)
            .x_label_area_size(45)
            .y_label_area_size(60)
            .build_cartesian_2d(0f64..end, 0f64..top)
            .map_err(drawing)?;
        chart
            .configure_mesh()
            .x_label_formatter(&|v| time_label(*v, end))
            .x_labels(10)
            .y_labels(top as usize + 1)
            // Holders are whole: a tick between two counts says nothing.
            .y_label_formatter(&|v| {
                if (v - v.round()).abs() < 1e-9 {
                    format!("{v:.0}")
                } else {
                    String::new()
                }
            })
            .x_desc(format!("time since the cell started — key {key}"))
            .y_desc("holders")
            .label_style((FONT, 12))
            .draw()
            .map_err(drawing)?;
        let kinds = fault_kinds(&d.faults);
        shade(&mut chart, &d.faults, &kinds, (0.0, top))?;
        // A step line: each count held until the next change, then straight up or down.
        let mut points: Vec<(f64, f64)> = Vec::with_capacity(line.len() * 2 + 1);
        for (i, &(t, n)) in line.iter().enumerate() {
            if i > 0 {
                points.push((secs(t), line[i - 1].1 as f64));
            }
            points.push((secs(t), n as f64));
        }
        points.push((end, line.last().map_or(0, |p| p.1) as f64));
        chart
            .draw_series(std::iter::once(PathElement::new(
                points,
                HOLDERS.stroke_width(2),
            )))
            .map_err(drawing)?;
        let n = f64::from(self.permits);
        chart
            .draw_series(std::iter::once(DashedPathElement::new(
                vec![(0.0, n), (end, n)],
                6,
                4,
                VIOLATION.stroke_width(1),
            )))
            .map_err(drawing)?;
        let mut entries = vec![
            Entry {
                label: format!("certain holders of {key} (most {most})"),
                colour: HOLDERS,
                swatch: Swatch::Line { dashed: false },
            },
            Entry {
                label: format!("N = {} permits", self.permits),
                colour: VIOLATION,
                swatch: Swatch::Line { dashed: true },
            },
        ];
        label_bands(&plot, &chart, &d.faults)?;
        entries.extend(fault_entries(&d.faults, &kinds));
        legend::draw(&side, "Legend", &entries)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::testkit::{grant, invoke, release};

    #[test]
    fn the_busiest_key_steps_with_its_holders_and_the_figure_draws_n() {
        let events = vec![
            invoke(0, 1, "s"),
            grant(100, 1, "s", 1, 1000),
            invoke(0, 2, "s"),
            grant(200, 2, "s", 2, 1000),
            release(300, 1, "s"),
            invoke(0, 3, "other"),
            grant(50, 3, "other", 1, 1000),
            release(900, 3, "other"),
            invoke(400, 1, "s"),
            grant(500, 1, "s", 3, 1000),
        ];
        let data = CellData::of(&events, &[]);
        let figure = SemaphoreHolders {
            title: "c".into(),
            data: &data,
            permits: 2,
        };
        let (key, line) = figure.line().expect("holds");
        assert_eq!(key, "s");
        // Client 2 and client 1's second hold never release: they hold to the end (900).
        assert_eq!(
            line,
            vec![(0, 0), (100, 1), (200, 2), (300, 1), (500, 2), (900, 0)]
        );
        let svg = super::super::draws(&figure);
        assert!(svg.contains("N = 2 permits"), "the legend names the line N");
        let empty = CellData::default();
        let none = SemaphoreHolders {
            title: "e".into(),
            data: &empty,
            permits: 2,
        };
        assert!(super::super::draws(&none).contains("no holds in this cell"));
    }
}
