//! What network latency costs a handoff: the handoff latency (release → next grant, p50)
//! against the round trip the relays added, herd dashed against predecessor solid, one colour
//! per system. Two figures, one per [`Link`]: between clients and servers (a `--client-latency`
//! sweep: twice the one-way `client_latency`), and between the servers themselves (a
//! `--peer-latency` sweep: twice `peer_latency`). A recipe whose handoff takes k sequential
//! round trips climbs k ms per added ms. Each is drawn when the run has cells at two or more
//! latencies of its link.

use std::collections::{BTreeMap, BTreeSet};

use plotters::coord::Shift;
use plotters::prelude::*;

use super::canvas::{FONT, Figure, drawing};
use super::herd::{HerdLine, lines_on};
use super::legend::{self, Entry, Swatch};
use crate::recipe::Strategy;
use crate::results::CellSummary;
use crate::system::System;

/// One line: a system × strategy × workload × chaos × clients across client latencies, its
/// points (added round trip ms, handoff p50 ms) by growing latency.
pub type CostLine = HerdLine;

/// Which links the relays slowed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Link {
    /// Between every client and every server (`client_latency`).
    Clients,
    /// Between every two servers (`peer_latency`).
    Peers,
}

impl Link {
    /// The figure's file name.
    pub fn plot_name(self) -> &'static str {
        match self {
            Link::Clients => "latency-cost",
            Link::Peers => "peer-latency-cost",
        }
    }

    /// The one-way delay the relays added to `c`'s links of this kind, µs.
    fn one_way_us(self, c: &CellSummary) -> u64 {
        match self {
            Link::Clients => c.client_latency_us,
            Link::Peers => c.peer_latency_us,
        }
        .unwrap_or(0)
    }

    /// What a sweep adds to a workload's name (`-lat1ms`, `-peer1ms`).
    fn tag(self) -> &'static str {
        match self {
            Link::Clients => "lat",
            Link::Peers => "peer",
        }
    }

    fn between(self) -> &'static str {
        match self {
            Link::Clients => "between clients and servers",
            Link::Peers => "between the servers",
        }
    }

    fn field(self) -> &'static str {
        match self {
            Link::Clients => "client_latency",
            Link::Peers => "peer_latency",
        }
    }
}

/// The figure.
#[derive(Debug, Clone)]
pub struct LatencyCost {
    /// The links whose latency it is against.
    pub link: Link,
    /// Its lines, each of two or more points.
    pub lines: Vec<CostLine>,
}

/// The workload's name without the `-lat<latency>` (or `-peer<latency>`) a sweep of `link`
/// gave it.
pub fn base_workload(c: &CellSummary, link: Link) -> String {
    let us = link.one_way_us(c);
    let label = crate::plan::latency_label(std::time::Duration::from_micros(us));
    let name = &c.id.workload;
    name.strip_suffix(&format!("-{}{label}", link.tag()))
        .unwrap_or(name)
        .to_string()
}

impl LatencyCost {
    /// The lines of `cells`: cells alike but for their latency on `link` make one line; lines
    /// of one latency only, and cells with no handoff, are left out.
    pub fn of_run(cells: &[CellSummary], link: Link) -> LatencyCost {
        type Key = (System, String, String, String, u32);
        let mut groups: BTreeMap<Key, (Strategy, Vec<(f64, f64)>)> = BTreeMap::new();
        for c in cells {
            if c.handoff_latency_us.count == 0 {
                continue;
            }
            let id = &c.id;
            let key = (
                id.system,
                id.waiting(),
                base_workload(c, link),
                id.chaos.clone(),
                id.clients,
            );
            let rtt_ms = 2.0 * link.one_way_us(c) as f64 / 1000.0;
            let handoff_ms = c.handoff_latency_us.p50 as f64 / 1000.0;
            groups
                .entry(key)
                .or_insert_with(|| (id.strategy, Vec::new()))
                .1
                .push((rtt_ms, handoff_ms));
        }
        groups.retain(|_, (_, pts)| {
            pts.iter()
                .map(|p| p.0.to_bits())
                .collect::<BTreeSet<_>>()
                .len()
                > 1
        });
        let many = groups
            .keys()
            .map(|k| (&k.2, &k.3, k.4))
            .collect::<BTreeSet<_>>()
            .len()
            > 1;
        let lines = groups
            .into_iter()
            .map(
                |((system, strategy, workload, chaos, clients), (s, mut points))| {
                    points.sort_by(|a, b| a.0.total_cmp(&b.0));
                    let mut label = format!("{system} {strategy}");
                    if many {
                        label += &format!(" {workload} {chaos} c{clients}");
                    }
                    CostLine {
                        label,
                        system,
                        shade: 0,
                        strategy: s,
                        points,
                    }
                },
            )
            .collect();
        LatencyCost { link, lines }
    }

    /// True when some line has two latencies to compare.
    pub fn has_data(&self) -> bool {
        !self.lines.is_empty()
    }
}

impl Figure for LatencyCost {
    fn size(&self) -> (u32, u32) {
        (1200, 600)
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String> {
        let title = format!(
            "Handoff latency (p50) against the round trip added {}",
            self.link.between()
        );
        let root = root.titled(&title, (FONT, 20)).map_err(drawing)?;
        let (plot, side) = root.split_horizontally(900);
        let pts = self.lines.iter().flat_map(|l| l.points.iter());
        let max_x = pts.clone().map(|p| p.0).fold(0.0, f64::max);
        let max_y = pts.map(|p| p.1).fold(0.0, f64::max);
        let mut chart = ChartBuilder::on(&plot)
            .margin(15)
            .x_label_area_size(45)
            .y_label_area_size(70)
            .build_cartesian_2d(0f64..(max_x * 1.05).max(1.0), 0f64..(max_y * 1.15).max(1.0))
            .map_err(drawing)?;
        chart
            .configure_mesh()
            .x_desc(format!(
                "added round trip, ms (twice {})",
                self.link.field()
            ))
            .y_desc("handoff latency p50, ms")
            .label_style((FONT, 12))
            .draw()
            .map_err(drawing)?;
        lines_on(&self.lines, &mut chart, &plot)?;
        let entries: Vec<Entry> = self
            .lines
            .iter()
            .map(|l| Entry {
                label: l.label.clone(),
                colour: l.colour(),
                swatch: Swatch::Line {
                    dashed: l.strategy == Strategy::Herd,
                },
            })
            .collect();
        if !self.has_data() {
            let note = format!("no cells at two values of {}", self.link.field());
            plot.draw(&Text::new(note, (330, 250), (FONT, 16)))
                .map_err(drawing)?;
        }
        legend::draw(&side, "herd: dashed, hollow points", &entries)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(system: System, strategy: Strategy, lat_us: u64, p50_us: u64) -> CellSummary {
        let mut c = crate::capacity::report::tests::cell(8, 100.0, 1_000, 10);
        c.id.system = system;
        c.id.strategy = strategy;
        c.id.workload = if lat_us == 0 {
            "hot-lock-lat0ms".into()
        } else {
            format!(
                "hot-lock-lat{}",
                crate::plan::latency_label(std::time::Duration::from_micros(lat_us))
            )
        };
        c.client_latency_us = (lat_us > 0).then_some(lat_us);
        c.handoff_latency_us.count = 100;
        c.handoff_latency_us.p50 = p50_us;
        c
    }

    #[test]
    fn cells_alike_but_for_latency_make_one_line_each() {
        let cells = [
            cell(System::Etcd, Strategy::Predecessor, 0, 2_000),
            cell(System::Etcd, Strategy::Predecessor, 1_000, 6_000),
            cell(System::Etcd, Strategy::Herd, 2_000, 20_000),
            cell(System::Etcd, Strategy::Herd, 0, 4_000),
            // One latency only: no line.
            cell(System::Redis, Strategy::Herd, 0, 1_000),
        ];
        let fig = LatencyCost::of_run(&cells, Link::Clients);
        assert_eq!(fig.lines.len(), 2, "{fig:?}");
        let pred = fig
            .lines
            .iter()
            .find(|l| l.strategy == Strategy::Predecessor)
            .unwrap();
        // x is the added round trip: twice the one-way latency.
        assert_eq!(pred.points, vec![(0.0, 2.0), (2.0, 6.0)]);
        let herd = fig
            .lines
            .iter()
            .find(|l| l.strategy == Strategy::Herd)
            .unwrap();
        assert_eq!(herd.points, vec![(0.0, 4.0), (4.0, 20.0)]);
        // How much each line's handoff grew per added round-trip ms, first point to last.
        let slopes: BTreeMap<_, _> = fig
            .lines
            .iter()
            .map(|l| {
                let (a, b) = (l.points[0], l.points[l.points.len() - 1]);
                (l.label.as_str(), (b.1 - a.1) / (b.0 - a.0))
            })
            .collect();
        assert_eq!(slopes["etcd predecessor"], 2.0);
        assert_eq!(slopes["etcd herd"], 4.0);
        assert_eq!(base_workload(&cells[1], Link::Clients), "hot-lock");
        assert_eq!(base_workload(&cells[0], Link::Clients), "hot-lock");
        // The same cells hold no peer-latency sweep.
        assert!(!LatencyCost::of_run(&cells, Link::Peers).has_data());
        let svg = super::super::draws(&fig);
        assert!(svg.contains("etcd herd") && svg.contains("added round trip"));
    }

    #[test]
    fn a_run_at_one_latency_draws_the_empty_note() {
        let one = [cell(System::Etcd, Strategy::Herd, 0, 1_000)];
        let fig = LatencyCost::of_run(&one, Link::Clients);
        assert!(!fig.has_data());
        assert!(super::super::draws(&fig).contains("no cells at two values of client_latency"));
    }

    /// `cell` swept between the servers instead (`-peer<latency>`, `peer_latency_us`).
    fn peer_cell(system: System, strategy: Strategy, lat_us: u64, p50_us: u64) -> CellSummary {
        let mut c = cell(system, strategy, 0, p50_us);
        c.client_latency_us = None;
        let label = crate::plan::latency_label(std::time::Duration::from_micros(lat_us));
        c.id.workload = format!("hot-lock-peer{label}");
        c.peer_latency_us = (lat_us > 0).then_some(lat_us);
        c
    }

    #[test]
    fn a_peer_latency_sweep_makes_its_own_figure() {
        let cells = [
            peer_cell(System::Zookeeper, Strategy::Predecessor, 0, 3_000),
            peer_cell(System::Zookeeper, Strategy::Predecessor, 2_000, 11_000),
            // The client figure would see these as two workloads of one latency each.
            peer_cell(System::Redis, Strategy::Predecessor, 0, 1_000),
            peer_cell(System::Redis, Strategy::Predecessor, 2_000, 1_100),
        ];
        assert!(!LatencyCost::of_run(&cells, Link::Clients).has_data());
        let fig = LatencyCost::of_run(&cells, Link::Peers);
        let lines: BTreeMap<&str, &[(f64, f64)]> = fig
            .lines
            .iter()
            .map(|l| (l.label.as_str(), l.points.as_slice()))
            .collect();
        assert_eq!(
            lines,
            BTreeMap::from([
                ("zookeeper predecessor", &[(0.0, 3.0), (4.0, 11.0)][..]),
                ("redis predecessor", &[(0.0, 1.0), (4.0, 1.1)][..]),
            ])
        );
        assert_eq!(base_workload(&cells[1], Link::Peers), "hot-lock");
        let svg = super::super::draws(&fig);
        assert!(svg.contains("between the servers") && svg.contains("twice peer_latency"));
    }
}
