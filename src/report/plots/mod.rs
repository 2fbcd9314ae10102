//! The plots exporter: PNG and SVG figures of a run under `<run>/plots/`, listed in
//! `plots/index.json` (see [`crate::report::plot_index`]) for the reports to show.
//!
//! Per run (redrawn after every cell): the latency distribution on the nines axis, the
//! herd's wake-ups and handoff latency against clients, the handoff against added client
//! latency (when the run swept `--client-latency`), and, when the run has a
//! `capacity.json` (a `lockbench capacity` sweep), its capacity figure. Per cell (drawn once, when the cell
//! finishes, or by `run_updated` when missing, e.g. after `lockbench report` cleared them):
//! latency over time, the safety timeline and fairness, and for a semaphore's cell its holders
//! over time against N. One file per figure in this folder;
//! [`canvas`] holds what they share.

pub mod canvas;
pub mod capacity;
pub mod cell_data;
pub mod fairness;
pub mod herd;
pub mod indexed_png;
pub mod latency_cost;
pub mod latency_distribution;
pub mod latency_over_time;
pub mod legend;
pub mod safety_timeline;
pub mod semaphore_holders;
pub mod thinning;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use super::model::{CellView, RunView};
use super::plot_index::{PLOTS_DIR, PlotEntry, PlotIndex};
use super::writer::OutFile;
use super::{ExportError, Exporter};
use crate::history::Event;
use crate::results::CellSummary;
#[cfg(test)]
use canvas::Figure;
use canvas::{EXPORTER, render};
use cell_data::CellData;

/// The plots exporter.
pub struct Plots;

/// A per-cell plot kind, its title and caption.
struct CellKind {
    kind: &'static str,
    title: &'static str,
    caption: &'static str,
}

const CELL_KINDS: [CellKind; 3] = [
    CellKind {
        kind: "latency-over-time",
        title: "Acquire latency over time",
        caption: "every acquisition a point at its intended start (blue ok, red × fail, orange ▲ unknown; those of one outcome within a few pixels drawn as one, darker the more it stands for); black lines p50 (solid) and p99 (dashed) per second; throughput per second below; grey: the warm-up, drawn but left out of every figure; numbered bands are fault windows (dark while in effect, light while being applied and undone)",
    },
    CellKind {
        kind: "safety-timeline",
        title: "Safety timeline",
        caption: "each client's holds of one key as bars; red: overlapping holds and refused stale accesses (×); ▲ lease lost; dashed red lines: the checker's violations with their history line; bands: fault windows (dark while in effect, light while being applied and undone)",
    },
    CellKind {
        kind: "fairness",
        title: "Acquisitions per client",
        caption: "granted acquisitions per client, the dashed line their mean; Jain's index and the longest wait in the title",
    },
];

/// The plot only a semaphore's cells get.
const SEMAPHORE_KIND: CellKind = CellKind {
    kind: "semaphore-holders",
    title: "Semaphore holders",
    caption: "the certain holders (grant → release) of the busiest key over time as a step line, against the permits N (red dashed): above N is a violation; bands: fault windows",
};

/// The plots of the cell `summary`: those of every cell, then those of its kind of lock.
fn cell_kinds(summary: &CellSummary) -> Vec<&'static CellKind> {
    let mut kinds: Vec<&CellKind> = CELL_KINDS.iter().collect();
    if summary.semaphore.is_some() {
        kinds.push(&SEMAPHORE_KIND);
    }
    kinds
}

fn stem(cell: &str, kind: &str) -> String {
    format!("{cell}.{kind}")
}

/// Whether a plot of the cell `summary` is missing from `names` (the files of a run's
/// `plots/`): such a cell's plots are drawn again from its history when the run's plots are.
pub fn cell_plots_missing(names: &BTreeSet<String>, summary: &CellSummary) -> bool {
    let id = summary.id.to_string();
    cell_kinds(summary)
        .iter()
        .any(|k| !names.contains(&format!("{}.svg", stem(&id, k.kind))))
}

/// The plots of one cell (three, and a semaphore's holders over time), from its history
/// `events` and summary, as files in `plots`.
pub fn draw_cell(
    plots: &Path,
    events: &[Event],
    summary: &CellSummary,
) -> Result<Vec<OutFile>, ExportError> {
    let data = CellData::of(events, &summary.faults);
    let id = summary.id.to_string();
    let over_time = latency_over_time::LatencyOverTime {
        title: id.clone(),
        data: &data,
        per_second: &summary.per_second,
        warmup_us: summary.warmup_us,
        measured_end_us: summary.warmup_us + (summary.duration_s * 1e6).round() as u64,
    };
    let mut files = Vec::with_capacity(6);
    files.extend(render(&over_time, plots, &stem(&id, CELL_KINDS[0].kind))?);
    let timeline = safety_timeline::SafetyTimeline {
        title: id.clone(),
        data: &data,
        safety: summary.safety.as_ref(),
        permits: summary.semaphore.as_ref().map_or(1, |s| s.permits),
    };
    files.extend(render(&timeline, plots, &stem(&id, CELL_KINDS[1].kind))?);
    let fair = fairness::Fairness {
        title: id.clone(),
        data: &data,
        jain: summary.jain_fairness,
        max_wait_us: summary.max_wait_us,
    };
    files.extend(render(&fair, plots, &stem(&id, CELL_KINDS[2].kind))?);
    if let Some(s) = &summary.semaphore {
        let holders = semaphore_holders::SemaphoreHolders {
            title: id.clone(),
            data: &data,
            permits: s.permits,
        };
        files.extend(render(&holders, plots, &stem(&id, SEMAPHORE_KIND.kind))?);
    }
    Ok(files)
}

/// The run-level plots of `run`, as files in `plots`, and their index entries.
fn draw_run(run: &RunView, plots: &Path) -> Result<(Vec<OutFile>, Vec<PlotEntry>), ExportError> {
    let mut files = Vec::new();
    let mut entries = Vec::new();
    let mut add = |kind: &str,
                   title: &str,
                   caption: &str,
                   figure: &dyn Fn() -> Result<[OutFile; 2], ExportError>| {
        let [png, svg] = figure()?;
        entries.push(PlotEntry {
            kind: kind.into(),
            title: title.into(),
            caption: caption.into(),
            svg: file_name(&svg),
            png: file_name(&png),
            cell: None,
        });
        files.extend([png, svg]);
        Ok::<(), ExportError>(())
    };
    let dist = latency_distribution::LatencyDistribution::of_run(&run.cells, &run.histograms);
    add(
        "latency-distribution",
        "Acquire latency by percentile",
        "x: percentile on HdrHistogram's nines axis (1/(1−p), log); one line per cell, one colour per system, herd dashed, predecessor solid",
        &|| render(&dist, plots, "latency-distribution"),
    )?;
    let wake = herd::Herd::of_run(&run.cells, herd::HerdMeasure::Wakeups);
    add(
        "herd-wakeups",
        "The herd: wake-ups per acquisition against clients",
        "how many waiters each release wakes, by number of contending clients (the default run's 2, 8 and 32, or a --clients sweep, draws the curve); herd dashed, predecessor solid",
        &|| render(&wake, plots, "herd-wakeups"),
    )?;
    let handoff = herd::Herd::of_run(&run.cells, herd::HerdMeasure::Handoff);
    add(
        "herd-handoff",
        "Handoff latency against clients",
        "release → next grant on the same key, p50, by number of contending clients; herd dashed, predecessor solid",
        &|| render(&handoff, plots, "herd-handoff"),
    )?;
    let throughput = herd::Herd::of_run(&run.cells, herd::HerdMeasure::Throughput);
    add(
        "herd-throughput",
        "Throughput against clients",
        "granted acquisitions per second, by number of contending clients; herd dashed, predecessor solid",
        &|| render(&throughput, plots, "herd-throughput"),
    )?;
    use latency_cost::{LatencyCost, Link};
    let cost = LatencyCost::of_run(&run.cells, Link::Clients);
    if cost.has_data() {
        add(
            Link::Clients.plot_name(),
            "Handoff latency against added network latency",
            "release → next grant on the same key, p50, against the round trip the relays added between every client and every server (a --client-latency sweep; twice the one-way client_latency); herd dashed, predecessor solid. A handoff of k sequential round trips climbs k ms per added ms",
            &|| render(&cost, plots, Link::Clients.plot_name()),
        )?;
    }
    let peer_cost = LatencyCost::of_run(&run.cells, Link::Peers);
    if peer_cost.has_data() {
        add(
            Link::Peers.plot_name(),
            "Handoff latency against latency between the servers",
            "release → next grant on the same key, p50, against the round trip the relays added between every two servers of the cluster (a --peer-latency sweep; twice the one-way peer_latency); herd dashed, predecessor solid. A handoff that waits for k sequential exchanges between servers (a quorum's acknowledgement, a forwarded write) climbs k ms per added ms; one that never waits for a peer (Redis's asynchronous replication, Redlock's independent masters) stays flat",
            &|| render(&peer_cost, plots, Link::Peers.plot_name()),
        )?;
    }
    let report = run.capacity.as_ref().map_err(|e| ExportError {
        exporter: EXPORTER,
        path: crate::capacity::file::path(&run.dir),
        source: std::io::Error::other(e.clone()),
    })?;
    if let Some(report) = report {
        let figure = capacity::CapacityFigure { capacity: report };
        add(
            "capacity",
            &format!("Capacity: {} {}", report.system, report.strategy),
            "from capacity.json; above: measured throughput (points) against clients, the fitted USL curve and its peak N* (dashed); below: measured acquire p99, the SLO (red dashed) and the USL's calibrated p99 prediction (dotted)",
            &|| render(&figure, plots, &capacity::stem(report)),
        )?;
    }
    Ok((files, entries))
}

fn file_name(f: &OutFile) -> String {
    f.path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// A cell's history as the view holds it, or the error naming its file.
fn history<'a>(
    histories: &'a BTreeMap<String, Result<Vec<Event>, String>>,
    cell_dir: &Path,
    id: &str,
) -> Result<&'a [Event], ExportError> {
    let fail = |why: String| ExportError {
        exporter: EXPORTER,
        path: cell_dir.join(crate::results::HISTORY_FILE),
        source: std::io::Error::other(why),
    };
    match histories.get(id) {
        Some(Ok(events)) => Ok(events),
        Some(Err(why)) => Err(fail(why.clone())),
        None => Err(fail("not loaded".into())),
    }
}

impl Exporter for Plots {
    fn name(&self) -> &'static str {
        EXPORTER
    }

    fn cell_files(&self, cell: &CellView<'_>) -> Result<Vec<OutFile>, ExportError> {
        let Some(run) = cell.run_dir() else {
            return Ok(Vec::new());
        };
        let events = cell.events.as_ref().map_err(|why| ExportError {
            exporter: EXPORTER,
            path: cell.dir.join(crate::results::HISTORY_FILE),
            source: std::io::Error::other(why.clone()),
        })?;
        draw_cell(&run.join(PLOTS_DIR), events, &cell.result.analysis.summary)
    }

    fn run_files(&self, run: &RunView) -> Result<Vec<OutFile>, ExportError> {
        let plots = run.dir.join(PLOTS_DIR);
        let (mut files, entries) = draw_run(run, &plots)?;
        let mut index = PlotIndex { plots: entries };
        for cell in &run.cells {
            let id = cell.id.to_string();
            if cell_plots_missing(&run.plots.names, cell) {
                let cell_dir = run.dir.join("cells").join(&id);
                let events = history(&run.histories, &cell_dir, &id)?;
                files.extend(draw_cell(&plots, events, cell)?);
            }
            for k in cell_kinds(cell) {
                let s = stem(&id, k.kind);
                index.plots.push(PlotEntry {
                    kind: k.kind.into(),
                    title: format!("{}: {id}", k.title),
                    caption: k.caption.into(),
                    svg: format!("{s}.svg"),
                    png: format!("{s}.png"),
                    cell: Some(id.clone()),
                });
            }
        }
        files.push(index.to_file(&run.dir)?);
        Ok(files)
    }
}

/// Checks that a figure draws (used by tests of empty and one-point inputs).
#[cfg(test)]
pub(crate) fn draws(figure: &impl Figure) -> String {
    let mut text = String::new();
    {
        use plotters::prelude::*;
        let area = SVGBackend::with_string(&mut text, figure.size()).into_drawing_area();
        area.fill(&WHITE).unwrap();
        canvas::ensure_font().unwrap();
        figure.draw(&area).expect("the figure draws");
        area.present().unwrap();
    }
    text
}

/// Width and height of every `<rect>` of `svg` filled with `colour`, in order (for tests that
/// measure what a figure drew).
#[cfg(test)]
pub(crate) fn rects_filled(
    svg: &str,
    plotters::style::RGBColor(r, g, b): plotters::style::RGBColor,
) -> Vec<(f64, f64)> {
    let fill = format!("FILL=\"#{r:02X}{g:02X}{b:02X}\"");
    let attr = |rect: &str, name: &str| -> f64 {
        let at = rect.find(&format!(" {name}=\"")).unwrap() + name.len() + 3;
        rect[at..].split('"').next().unwrap().parse().unwrap()
    };
    svg.to_uppercase()
        .split("<RECT")
        .skip(1)
        .map(|r| r.split("/>").next().unwrap())
        .filter(|r| r.contains(&fill))
        .map(|r| (attr(r, "WIDTH"), attr(r, "HEIGHT")))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::cell_data::CellData;
    use super::*;
    use crate::recipe::Strategy;
    use crate::system::System;

    fn svg_ok(text: &str) {
        assert!(
            text.starts_with("<svg") || text.contains("<svg"),
            "{text:.200}"
        );
        assert!(text.trim_end().ends_with("</svg>"));
    }

    #[test]
    fn only_a_semaphores_cell_gets_the_holders_plot() {
        let mut c = crate::capacity::report::tests::cell(2, 10.0, 1_000, 10);
        let kinds =
            |c: &CellSummary| -> Vec<&str> { cell_kinds(c).iter().map(|k| k.kind).collect() };
        assert_eq!(
            kinds(&c),
            ["latency-over-time", "safety-timeline", "fairness"]
        );
        let id = c.id.to_string();
        let names: BTreeSet<String> = CELL_KINDS
            .iter()
            .map(|k| format!("{}.svg", stem(&id, k.kind)))
            .collect();
        assert!(!cell_plots_missing(&names, &c));
        c.semaphore = Some(crate::results::SemaphoreFigures {
            permits: 2,
            utilisation: 0.5,
            holders_max: 2,
            wakeups_per_grant: None,
        });
        assert_eq!(kinds(&c)[3], "semaphore-holders");
        assert!(
            cell_plots_missing(&names, &c),
            "its holders plot is missing"
        );
    }

    #[test]
    fn empty_inputs_draw_without_panicking() {
        let data = CellData::default();
        svg_ok(&draws(&latency_distribution::LatencyDistribution::default()));
        svg_ok(&draws(&herd::Herd::of_run(&[], herd::HerdMeasure::Wakeups)));
        svg_ok(&draws(&herd::Herd::of_run(&[], herd::HerdMeasure::Handoff)));
        svg_ok(&draws(&herd::Herd::of_run(
            &[],
            herd::HerdMeasure::Throughput,
        )));
        svg_ok(&draws(&latency_over_time::LatencyOverTime {
            title: "empty".into(),
            data: &data,
            per_second: &[],
            warmup_us: 0,
            measured_end_us: 0,
        }));
        let timeline = draws(&safety_timeline::SafetyTimeline {
            title: "empty".into(),
            data: &data,
            safety: None,
            permits: 1,
        });
        assert!(timeline.contains("no holds in this cell"));
        svg_ok(&draws(&fairness::Fairness {
            title: "empty".into(),
            data: &data,
            jain: None,
            max_wait_us: 0,
        }));
    }

    #[test]
    fn the_warm_up_is_shaded_and_named_only_when_the_cell_had_one() {
        let data = busy_cell(2_000, 0);
        // The summary's seconds start where the warm-up ends (`Series::finish`).
        let per_second = seconds(2..10, 200);
        let svg_of = |warmup_us| {
            draws(&latency_over_time::LatencyOverTime {
                title: "warm".into(),
                data: &data,
                per_second: &per_second,
                warmup_us,
                measured_end_us: 10_000_000,
            })
        };
        let grey = |svg: &str| svg.to_uppercase().matches("#969696").count();
        let (with, without) = (svg_of(2_500_000), svg_of(0));
        svg_ok(&with);
        assert!(
            with.contains("warm-up, not measured (0–2.5 s)"),
            "no legend entry"
        );
        // Both charts' shades and the legend's box.
        assert_eq!(grey(&with), 3, "the warm-up's shades");
        assert!(!without.contains("warm-up"));
        assert_eq!(grey(&without), 0);
    }

    #[test]
    fn a_second_cut_by_the_cells_end_is_drawn_over_its_part_at_its_rate() {
        let data = busy_cell(2_000, 0);
        // 230 a second for 5 s, then 16 in the 70 ms the cell ran into its sixth second.
        let mut per_second = seconds(0..6, 230);
        per_second[5].acquisitions = 16;
        let bars_of = |measured_end_us| {
            let svg = draws(&latency_over_time::LatencyOverTime {
                title: "cut".into(),
                data: &data,
                per_second: &per_second,
                warmup_us: 0,
                measured_end_us,
            });
            svg_ok(&svg);
            // The six bars, then the legend's box of their colour.
            let mut rects = rects_filled(&svg, latency_over_time::RATE);
            assert_eq!(rects.pop(), Some((22.0, 12.0)), "the legend's box");
            assert_eq!(rects.len(), 6, "{rects:?}");
            rects
        };
        let (cut, whole) = (bars_of(5_070_000), bars_of(0));
        let (full, last) = (cut[0], cut[5]);
        // As wide as the 70 ms it covers (within a pixel or two of the plot's 1 s width ÷ 14),
        // and as tall as a full second of the same rate (16 / 0.07 = 229 a second).
        assert!(
            last.0 * 8.0 < full.0,
            "the last bar {last:?} against {full:?}"
        );
        assert!(
            (last.1 - full.1).abs() <= full.1 * 0.05,
            "the last bar {last:?} against {full:?}"
        );
        // Unknown where the cell ended: every second whole, the last one a fourteenth as tall.
        let (full, last) = (whole[0], whole[5]);
        assert!((last.0 - full.0).abs() <= 1.0, "{whole:?}");
        assert!(last.1 * 10.0 < full.1, "{whole:?}");
    }

    /// The summary's `per_second` for `range`, `acquisitions` a second, p50 10 ms, p99 800 ms.
    fn seconds(range: std::ops::Range<u64>, acquisitions: u64) -> Vec<crate::results::SecondStats> {
        range
            .map(|second| crate::results::SecondStats {
                second,
                acquisitions,
                p50_acquire_us: 10_000,
                p99_acquire_us: 800_000,
                failures: 0,
            })
            .collect()
    }

    /// A cell of `n` oks over 10 s, latencies spread log-uniformly over 100 µs – 1 s (a
    /// deterministic xorshift), with `failures` failed acquisitions at 5 s, 20 ms.
    fn busy_cell(n: u64, failures: usize) -> CellData {
        use cell_data::{Acquisition, Outcome};
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 11) as f64 / (1u64 << 53) as f64
        };
        let mut acquisitions: Vec<Acquisition> = (0..n)
            .map(|i| Acquisition {
                start_us: i * 10_000_000 / n,
                latency_us: 10f64.powf(2.0 + 4.0 * next()) as u64,
                outcome: Outcome::Ok,
                client: (i % 16) as u32,
            })
            .collect();
        let fail = Acquisition {
            start_us: 5_000_000,
            latency_us: 20_000,
            outcome: Outcome::Fail,
            client: 3,
        };
        acquisitions.splice(n as usize / 2..n as usize / 2, vec![fail; failures]);
        CellData {
            acquisitions,
            end_us: 10_000_000,
            clients: (0..16).collect(),
            ..CellData::default()
        }
    }

    #[test]
    fn a_busy_cells_latency_over_time_is_thinned_and_keeps_its_one_failure() {
        let per_second = seconds(0..10, 20_000);
        let svg_of = |data: &CellData| {
            draws(&latency_over_time::LatencyOverTime {
                title: "busy".into(),
                data,
                per_second: &per_second,
                warmup_us: 0,
                measured_end_us: 10_000_000,
            })
        };
        let (calm, failing) = (busy_cell(200_000, 0), busy_cell(200_000, 1));
        let (without, with) = (svg_of(&calm), svg_of(&failing));
        for svg in [&without, &with] {
            svg_ok(svg);
            // The oks' points, and the legend's one circle.
            let circles = svg.matches("<circle").count();
            assert!(
                (500..=latency_over_time::MAX_MARKERS_PER_OUTCOME + 1).contains(&circles),
                "{circles} circles"
            );
            assert!(svg.len() < 600 * 1024, "{} bytes", svg.len());
        }
        // The one failure is drawn, in its own colour, over the oks around it.
        let red = |svg: &str| svg.to_uppercase().matches("#D50000").count();
        assert!(red(&with) > red(&without), "the failure is not drawn");
        assert!(with.contains("failed (fail): 1"));
        // And a second failure in the same place is drawn once.
        let twice = svg_of(&busy_cell(200_000, 2));
        assert_eq!(red(&twice), red(&with));
    }

    #[test]
    fn single_points_draw_and_show() {
        let dist = latency_distribution::LatencyDistribution {
            curves: vec![latency_distribution::Curve {
                label: "redis herd".into(),
                system: System::Redis,
                strategy: Strategy::Herd,
                points: vec![(0.3, 1500.0)],
            }],
        };
        let svg = draws(&dist);
        svg_ok(&svg);
        assert!(svg.contains("redis herd"), "the legend names the curve");
        let herd = herd::Herd {
            measure: herd::HerdMeasure::Handoff,
            lines: vec![herd::HerdLine {
                label: "etcd predecessor".into(),
                system: System::Etcd,
                shade: 0,
                strategy: Strategy::Predecessor,
                points: vec![(16.0, 800.0)],
            }],
        };
        let svg = draws(&herd);
        assert!(svg.contains("etcd predecessor"));
        // The one point is drawn as a marker (etcd's is a triangle: a polygon).
        assert!(svg.contains("<polygon"), "no marker for the single point");
    }
}
