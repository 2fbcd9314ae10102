//! What every plot shares: the embedded font, rendering one drawing to both PNG and SVG, the
//! palette, and turning plotters' errors into the exporter's.
//!
//! The font is DejaVu Sans from the `dejavu` crate, registered with plotters' `ab_glyph`
//! backend, so text is laid out (and rasterised into the PNG) with no font installed on the
//! machine. The SVG names the family `sans-serif` and leaves drawing the glyphs to the viewer.

use std::path::Path;
use std::sync::OnceLock;

use plotters::coord::Shift;
use plotters::prelude::*;

use crate::report::ExportError;
use crate::report::writer::OutFile;
use crate::system::System;

/// The exporter's name in errors.
pub const EXPORTER: &str = "plots";

/// The family every plot's text uses (registered by `ensure_font`).
pub const FONT: &str = "sans-serif";

/// A figure that can draw itself on any plotters backend: the same code makes the PNG and the
/// SVG, so the two never disagree.
pub trait Figure {
    /// Width and height in pixels.
    fn size(&self) -> (u32, u32);

    /// Draws the whole figure on `area` (already filled white).
    fn draw<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> Result<(), String>;
}

/// Registers the embedded font once; an error says the font could not be read.
pub(crate) fn ensure_font() -> Result<(), String> {
    static REGISTERED: OnceLock<Result<(), String>> = OnceLock::new();
    REGISTERED
        .get_or_init(|| {
            let regular = dejavu::sans::regular();
            plotters::style::register_font(FONT, FontStyle::Normal, regular)
                .and_then(|()| {
                    plotters::style::register_font(FONT, FontStyle::Bold, dejavu::sans::bold())
                })
                .map_err(|_| "the embedded DejaVu Sans font could not be read".to_string())
        })
        .clone()
}

/// Draws `figure` as `<dir>/<stem>.png` and `<dir>/<stem>.svg`, in memory; returns the two
/// files, PNG first (`dir` only names them).
pub fn render(figure: &impl Figure, dir: &Path, stem: &str) -> Result<[OutFile; 2], ExportError> {
    let (png_path, svg_path) = (
        dir.join(format!("{stem}.png")),
        dir.join(format!("{stem}.svg")),
    );
    let fail = |path: &Path, why: String| ExportError {
        exporter: EXPORTER,
        path: path.to_path_buf(),
        source: std::io::Error::other(why),
    };
    ensure_font().map_err(|why| fail(&png_path, why))?;
    let size = figure.size();

    let mut pixels = vec![0u8; size.0 as usize * size.1 as usize * 3];
    {
        let area = BitMapBackend::with_buffer(&mut pixels, size).into_drawing_area();
        paint(figure, &area).map_err(|why| fail(&png_path, why))?;
        area.present()
            .map_err(|e| fail(&png_path, format!("drawing the PNG: {e}")))?;
    }
    let png = super::indexed_png::encode(&pixels, size)
        .map_err(|e| fail(&png_path, format!("encoding the PNG: {e}")))?;

    let mut text = String::new();
    {
        let area = SVGBackend::with_string(&mut text, size).into_drawing_area();
        paint(figure, &area).map_err(|why| fail(&svg_path, why))?;
        area.present()
            .map_err(|e| fail(&svg_path, format!("finishing the SVG: {e}")))?;
    }
    Ok([OutFile::new(png_path, png), OutFile::new(svg_path, text)])
}

fn paint<DB: DrawingBackend>(
    figure: &impl Figure,
    area: &DrawingArea<DB, Shift>,
) -> Result<(), String> {
    area.fill(&WHITE).map_err(|e| e.to_string())?;
    figure.draw(area)
}

/// Draws x-axis ticks by hand at `ticks` (position, label): a light grid line each, the label
/// centred under the axis. For axes whose labels are not their coordinates (percentiles on the
/// nines axis, client counts on a log2 axis), where plotters' own key points would not fall on
/// the values worth labelling.
pub fn x_ticks<DB: DrawingBackend, Y>(
    plot: &DrawingArea<DB, Shift>,
    chart: &mut ChartContext<'_, DB, Cartesian2d<plotters::coord::types::RangedCoordf64, Y>>,
    ticks: &[(f64, String)],
) -> Result<(), String>
where
    Y: Ranged<ValueType = f64>,
{
    use plotters::style::text_anchor::{HPos, Pos, VPos};
    let y = chart.y_range();
    let (ox, oy) = plot.get_base_pixel();
    for (x, label) in ticks {
        chart
            .draw_series(std::iter::once(PathElement::new(
                vec![(*x, y.start), (*x, y.end)],
                RGBColor(200, 200, 200).stroke_width(1),
            )))
            .map_err(drawing)?;
        let (px, py) = chart.backend_coord(&(*x, y.start));
        let style = TextStyle::from((FONT, 12).into_font()).pos(Pos::new(HPos::Center, VPos::Top));
        plot.draw(&Text::new(label.clone(), (px - ox, py - oy + 6), style))
            .map_err(drawing)?;
    }
    Ok(())
}

/// Draws y-axis ticks by hand at `ticks` (position, label), right-aligned left of the axis.
pub fn y_ticks<DB: DrawingBackend, X, Y>(
    plot: &DrawingArea<DB, Shift>,
    chart: &mut ChartContext<'_, DB, Cartesian2d<X, Y>>,
    ticks: &[(f64, String)],
) -> Result<(), String>
where
    X: Ranged<ValueType = f64>,
    Y: Ranged<ValueType = f64>,
{
    use plotters::style::text_anchor::{HPos, Pos, VPos};
    let x = chart.x_range();
    let (ox, oy) = plot.get_base_pixel();
    for (y, label) in ticks {
        chart
            .draw_series(std::iter::once(PathElement::new(
                vec![(x.start, *y), (x.end, *y)],
                RGBColor(200, 200, 200).stroke_width(1),
            )))
            .map_err(drawing)?;
        let (px, py) = chart.backend_coord(&(x.start, *y));
        let style =
            TextStyle::from((FONT, 12).into_font()).pos(Pos::new(HPos::Right, VPos::Center));
        plot.draw(&Text::new(label.clone(), (px - ox - 6, py - oy), style))
            .map_err(drawing)?;
    }
    Ok(())
}

/// The 1–2–5 steps of each decade between `lo` and `hi` (a log axis's ticks), as (value,
/// duration label); plotters' own log ticks gave one label on a 2–30 ms axis.
pub fn log_ticks(lo: f64, hi: f64) -> Vec<(f64, String)> {
    let mut out = Vec::new();
    let mut decade = 10f64.powf(lo.max(1e-9).log10().floor());
    while decade <= hi {
        for m in [1.0, 2.0, 5.0] {
            let v = decade * m;
            if (lo..=hi).contains(&v) {
                out.push((v, duration_label(v)));
            }
        }
        decade *= 10.0;
    }
    out
}

/// Turns a plotters error into the text of an [`ExportError`].
pub fn drawing<E: std::fmt::Display>(e: E) -> String {
    format!("drawing: {e}")
}

/// One colour per system, from the Okabe–Ito palette (safe for colour-blind readers), chosen
/// far apart in lightness so they stay apart in greyscale; [`system_marker`] tells them apart
/// too.
pub fn system_colour(system: System) -> RGBColor {
    let (r, g, b) = system.facts().colour;
    RGBColor(r, g, b)
}

/// `c` mixed with white: 18 % of the way for `nth` = 1, 36 % for 2, at most 55 % (paler
/// etcd orange was hard to see on white).
pub fn paler(c: RGBColor, nth: usize) -> RGBColor {
    let f = (nth as f64 * 0.18).min(0.55);
    let mix = |v: u8| (f64::from(v) + (255.0 - f64::from(v)) * f).round() as u8;
    RGBColor(mix(c.0), mix(c.1), mix(c.2))
}

/// A cell's series name in a legend: its system and, where known, the version it measured
/// (`etcd 3.5.16`, `redis valkey 8.1.1`).
pub fn series_name(c: &crate::results::CellSummary) -> String {
    match crate::report::table::version(c) {
        Some(v) => format!("{} {v}", c.id.system),
        None => c.id.system.to_string(),
    }
}

/// Each system's versions in a run, in the order cells first show them: the first is drawn in
/// the system's colour and marker, each further one paler and with the next marker.
#[derive(Debug, Default)]
pub struct VersionShades(Vec<(System, Option<String>)>);

impl VersionShades {
    /// The versions of `cells`.
    pub fn of(cells: &[crate::results::CellSummary]) -> VersionShades {
        let mut seen = Vec::new();
        for c in cells {
            let key = (c.id.system, c.id.version.clone());
            if !seen.contains(&key) {
                seen.push(key);
            }
        }
        VersionShades(seen)
    }

    /// Which version of its system `c` ran (0 for the first seen).
    pub fn of_cell(&self, c: &crate::results::CellSummary) -> usize {
        self.0
            .iter()
            .filter(|(s, _)| *s == c.id.system)
            .position(|(_, v)| *v == c.id.version)
            .unwrap_or(0)
    }
}

/// A point shape per system (0 circle, 1 triangle, 2 square, 3 cross), for greyscale prints.
pub fn system_marker(system: System) -> u8 {
    (system.position() % 4) as u8
}

/// The colour of violations and refused stale accesses.
pub const VIOLATION: RGBColor = RGBColor(213, 0, 0);

/// Colours for fault kinds, in order of first appearance; light enough to lie under the data.
pub const FAULT_COLOURS: [RGBColor; 6] = [
    RGBColor(255, 176, 59),
    RGBColor(120, 160, 230),
    RGBColor(180, 120, 220),
    RGBColor(120, 200, 140),
    RGBColor(240, 120, 120),
    RGBColor(160, 160, 160),
];

/// The colour of the fault kind `kind` among `kinds` (the kinds in order of first appearance).
pub fn fault_colour(kinds: &[String], kind: &str) -> RGBColor {
    let i = kinds.iter().position(|k| k == kind).unwrap_or(kinds.len());
    FAULT_COLOURS[i % FAULT_COLOURS.len()]
}

/// The range of a log axis showing `values` (µs) with a factor `pad` of room either side;
/// 1 µs to 1 s when there is nothing to show (no value, or all equal and zero).
pub fn log_range(values: impl Iterator<Item = f64>, pad: f64) -> (f64, f64) {
    let (lo, hi) = values.fold((f64::INFINITY, 0f64), |(lo, hi), v| (lo.min(v), hi.max(v)));
    if lo.is_finite() && hi > 0.0 {
        (lo.max(1.0) / pad, hi.max(1.0) * pad)
    } else {
        (1.0, 1e6)
    }
}

/// A microsecond count as a short label: 850 µs, 12.5 ms, 3.2 s.
pub fn duration_label(us: f64) -> String {
    if us < 1_000.0 {
        format!("{us:.0} µs")
    } else if us < 1_000_000.0 {
        trim(format!("{:.1}", us / 1_000.0)) + " ms"
    } else {
        trim(format!("{:.1}", us / 1_000_000.0)) + " s"
    }
}

/// A time axis tick, `v` seconds, precise enough to tell ticks apart on an axis `span` seconds
/// long: 12.5 ms on a 50 ms axis, 1.5 s on a 5 s one, 20 s on a 60 s one.
pub fn time_label(v: f64, span: f64) -> String {
    if span <= 0.05 {
        format!("{:.1} ms", v * 1e3)
    } else if span <= 0.5 {
        format!("{:.0} ms", v * 1e3)
    } else if span <= 10.0 {
        trim(format!("{v:.1}")) + " s"
    } else {
        format!("{v:.0} s")
    }
}

fn trim(s: String) -> String {
    s.strip_suffix(".0").map(str::to_string).unwrap_or(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_in_their_unit() {
        assert_eq!(duration_label(850.0), "850 µs");
        assert_eq!(duration_label(12_500.0), "12.5 ms");
        assert_eq!(duration_label(2_000_000.0), "2 s");
    }

    #[test]
    fn time_ticks_are_told_apart_on_any_axis() {
        assert_eq!(time_label(0.0125, 0.05), "12.5 ms");
        assert_eq!(time_label(0.25, 0.4), "250 ms");
        assert_eq!(time_label(1.5, 5.0), "1.5 s");
        assert_eq!(time_label(20.0, 60.0), "20 s");
    }

    #[test]
    fn log_ticks_step_one_two_five() {
        let t: Vec<f64> = log_ticks(1_500.0, 30_000.0).iter().map(|t| t.0).collect();
        assert_eq!(t, vec![2_000.0, 5_000.0, 10_000.0, 20_000.0]);
    }

    #[test]
    fn fault_kinds_keep_their_colour() {
        let kinds = vec!["kill".to_string(), "partition".to_string()];
        assert_eq!(fault_colour(&kinds, "partition"), FAULT_COLOURS[1]);
        assert_ne!(
            fault_colour(&kinds, "kill"),
            fault_colour(&kinds, "partition")
        );
    }
}
