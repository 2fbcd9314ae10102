//! Legends drawn in a panel of their own beside the plot, so they never cover data.

use plotters::coord::Shift;
use plotters::element::DashedPathElement;
use plotters::prelude::*;

use super::canvas::{FONT, drawing};

/// How a legend entry shows its series.
#[derive(Debug, Clone, Copy)]
pub enum Swatch {
    /// A line, dashed or solid.
    Line { dashed: bool },
    /// A point of a shape (see [`draw_marker`]).
    Marker(u8),
    /// A filled box (bands, bars).
    Box,
}

/// One legend line.
#[derive(Debug, Clone)]
pub struct Entry {
    /// The text.
    pub label: String,
    /// Its colour.
    pub colour: RGBColor,
    /// How it is drawn.
    pub swatch: Swatch,
}

/// The height of one legend line, px.
const LINE: i32 = 20;

/// Draws `title` and `entries` top-down in `area` (a panel beside the plot). Entries that do not
/// fit are summed up in a last line ("… and 3 more"), never drawn over each other.
pub fn draw<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    title: &str,
    entries: &[Entry],
) -> Result<(), String> {
    let (w, h) = area.dim_in_pixel();
    let text = (FONT, 13).into_font();
    let mut y = 8;
    if !title.is_empty() {
        area.draw(&Text::new(
            title.to_string(),
            (4, y),
            (FONT, 13).into_font().style(FontStyle::Bold),
        ))
        .map_err(drawing)?;
        y += LINE;
    }
    let room = (w as i32 - 40).max(40) as u32;
    let bottom = h as i32 - LINE;
    for (i, e) in entries.iter().enumerate() {
        let lines = wrap(area, &e.label, &text, room);
        // What does not fit is summed up, never drawn over the panel's edge.
        if y + LINE * lines.len() as i32 > bottom && i + 1 < entries.len() {
            let more = format!("… and {} more", entries.len() - i);
            area.draw(&Text::new(more, (36, y), text.clone()))
                .map_err(drawing)?;
            break;
        }
        let mid = y + 7;
        match e.swatch {
            Swatch::Line { dashed: false } => area
                .draw(&PathElement::new(
                    vec![(4, mid), (30, mid)],
                    e.colour.stroke_width(2),
                ))
                .map_err(drawing)?,
            Swatch::Line { dashed: true } => area
                .draw(&DashedPathElement::new(
                    vec![(4, mid), (30, mid)],
                    5,
                    3,
                    e.colour.stroke_width(2),
                ))
                .map_err(drawing)?,
            Swatch::Marker(shape) => draw_marker(area, (17, mid), shape, e.colour, 4)?,
            Swatch::Box => area
                .draw(&Rectangle::new(
                    [(6, mid - 6), (28, mid + 6)],
                    e.colour.filled(),
                ))
                .map_err(drawing)?,
        }
        for line in lines {
            area.draw(&Text::new(line, (36, y), text.clone()))
                .map_err(drawing)?;
            y += LINE - 4;
        }
        y += 4;
    }
    Ok(())
}

/// `label` broken at spaces (or commas) into lines no wider than `room` pixels in `font`; a
/// word wider than `room` stands on a line of its own.
fn wrap<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    label: &str,
    font: &FontDesc<'_>,
    room: u32,
) -> Vec<String> {
    let style = TextStyle::from(font.clone());
    let width = |t: &str| area.estimate_text_size(t, &style).map_or(0, |(w, _)| w);
    let mut lines: Vec<String> = Vec::new();
    let mut current = String::new();
    for word in label.split_inclusive([' ', ',']) {
        let candidate = format!("{current}{word}");
        if !current.is_empty() && width(candidate.trim_end()) > room {
            lines.push(current.trim_end().to_string());
            current = word.to_string();
        } else {
            current = candidate;
        }
    }
    if !current.trim().is_empty() || lines.is_empty() {
        lines.push(current.trim_end().to_string());
    }
    lines
}

/// Draws a point of shape `shape` at a pixel, filled or (`hollow`) a white inside, so herd and
/// predecessor points stay apart where a single point shows no dash.
pub fn draw_point<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    at: (i32, i32),
    shape: u8,
    colour: RGBColor,
    hollow: bool,
) -> Result<(), String> {
    draw_marker(area, at, shape, colour, 6)?;
    if hollow && shape < 3 {
        // The white inside sits lower in a triangle, whose centroid is below its middle.
        let (x, y) = at;
        let inner = if shape == 1 { (x, y + 2) } else { at };
        draw_marker(area, inner, shape, WHITE, 3)?;
    }
    Ok(())
}

/// Draws a point of shape `shape` (0 circle, 1 triangle, 2 square, else a cross) at a pixel.
pub fn draw_marker<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    (x, y): (i32, i32),
    shape: u8,
    colour: RGBColor,
    size: i32,
) -> Result<(), String> {
    let style = colour.filled();
    match shape {
        0 => area.draw(&Circle::new((x, y), size, style)),
        1 => area.draw(&Polygon::new(
            vec![(x, y - size), (x - size, y + size), (x + size, y + size)],
            style,
        )),
        2 => area.draw(&Rectangle::new(
            [(x - size, y - size), (x + size, y + size)],
            style,
        )),
        _ => {
            let s = colour.stroke_width(2);
            area.draw(&PathElement::new(
                vec![(x - size, y - size), (x + size, y + size)],
                s,
            ))
            .and_then(|()| {
                area.draw(&PathElement::new(
                    vec![(x - size, y + size), (x + size, y - size)],
                    s,
                ))
            })
        }
    }
    .map_err(drawing)
}
