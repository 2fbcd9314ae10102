//! Fairness, one cell: acquisitions per client as bars, with the mean, Jain's index and the
//! longest wait in the title, so a starved client stands out.

use plotters::coord::Shift;
use plotters::prelude::*;

use super::canvas::{FONT, Figure, drawing, duration_label};
use super::cell_data::{CellData, Outcome};

/// The figure.
pub struct Fairness<'a> {
    /// The cell id.
    pub title: String,
    /// The digested history.
    pub data: &'a CellData,
    /// Jain's fairness index (1 = equal shares), from the summary.
    pub jain: Option<f64>,
    /// The longest acquire wait, µs, from the summary.
    pub max_wait_us: u64,
}

impl Fairness<'_> {
    /// (client, granted acquisitions), for every client seen.
    pub fn counts(&self) -> Vec<(u32, u64)> {
        self.data
            .clients
            .iter()
            .map(|&c| {
                let n = self
                    .data
                    .acquisitions
                    .iter()
                    .filter(|a| a.client == c && a.outcome == Outcome::Ok)
                    .count();
                (c, n as u64)
            })
            .collect()
    }
}

impl Figure for Fairness<'_> {
    fn size(&self) -> (u32, u32) {
        (1000, 480)
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String> {
        let counts = self.counts();
        let total: u64 = counts.iter().map(|c| c.1).sum();
        let mean = total as f64 / counts.len().max(1) as f64;
        let jain = self
            .jain
            .map(|j| format!("{j:.3}"))
            .unwrap_or_else(|| "n/a".into());
        let title = format!(
            "Acquisitions per client: {} — mean {mean:.2} (dashed), Jain {jain}, longest wait {}",
            self.title,
            duration_label(self.max_wait_us as f64)
        );
        let root = root.titled(&title, (FONT, 17)).map_err(drawing)?;
        let max = counts.iter().map(|c| c.1).max().unwrap_or(0).max(1) as f64;
        let n = counts.len().max(1);
        let mut chart = ChartBuilder::on(&root)
            .margin(15)
            .x_label_area_size(45)
            .y_label_area_size(70)
            .build_cartesian_2d(-0.5f64..n as f64 - 0.5, 0f64..max * 1.15)
            .map_err(drawing)?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(n.min(32))
            .x_label_formatter(&|x| {
                let i = x.round();
                if (x - i).abs() < 0.01 && i >= 0.0 {
                    counts
                        .get(i as usize)
                        .map(|c| c.0.to_string())
                        .unwrap_or_default()
                } else {
                    String::new()
                }
            })
            .x_desc("client")
            .y_desc("granted acquisitions")
            // Counts are whole: label only whole values, or a low maximum (2) gets its fractional
            // ticks printed rounded, as 0, 0, 1, 2, 2, 2.
            .y_labels(((max * 1.15).floor() as usize + 1).clamp(2, 11))
            .y_label_formatter(&|v| whole_label(*v))
            .label_style((FONT, 12))
            .draw()
            .map_err(drawing)?;
        chart
            .draw_series(counts.iter().enumerate().map(|(i, c)| {
                let x = i as f64;
                Rectangle::new(
                    [(x - 0.35, 0.0), (x + 0.35, c.1 as f64)],
                    RGBColor(70, 110, 170).filled(),
                )
            }))
            .map_err(drawing)?;
        chart
            .draw_series(DashedLineSeries::new(
                vec![(-0.5, mean), (n as f64 - 0.5, mean)],
                6,
                4,
                BLACK.stroke_width(1),
            ))
            .map_err(drawing)?;
        Ok(())
    }
}

/// A tick's label on a count axis: the whole number it sits on, or nothing between two.
fn whole_label(v: f64) -> String {
    let r = v.round();
    if (v - r).abs() < 1e-6 && r >= 0.0 {
        format!("{r:.0}")
    } else {
        String::new()
    }
}

#[cfg(test)]
mod tests {
    use super::whole_label;

    #[test]
    fn a_count_axis_labels_whole_values_only() {
        let labels: Vec<String> = [0.0, 0.5, 1.0, 1.5, 2.0, 2.3]
            .into_iter()
            .map(whole_label)
            .collect();
        assert_eq!(labels, ["0", "", "1", "", "2", ""]);
    }
}
