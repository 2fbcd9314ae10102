//! The reports' **Rates** section: each chaos cell run more than once (`--repeat N`, each
//! repetition on seeds of its own) as how often the faults broke it: the verdicts as "unsafe in
//! k of n" with the 95 % Wilson interval, the classes of finding that showed the same way, and
//! the recovery after the faults as median and range ([`crate::stats::rates`]).

use super::table::{Table, number, text};
use crate::gate::aggregate;
use crate::results::CellSummary;

/// What the rates table shows, in both reports.
pub const RATES_TEXT: &str = "Each cell run under a fault schedule more than once, every \
     repetition on seeds of its own and fresh clusters: in how many repetitions it was unsafe, \
     with the 95 % Wilson score interval of that share (a few seeds leave it wide: 0 of 5 is \
     0–43 %), the repetitions each class of finding showed in (only classes that showed), and \
     the recovery after the faults (a fault's end → the first grant) over every window of every \
     repetition. `lockbench gate` fails a rate only when its interval lies wholly above the \
     baseline's.";

/// The rates of the cells of `cells` that ran under a fault schedule in more than one
/// repetition; `None` when there is none.
pub fn table(cells: &[CellSummary]) -> Option<Table> {
    let rows: Vec<Vec<String>> = aggregate(cells)
        .into_iter()
        .filter(|a| a.under_faults() && a.repetitions > 1)
        .filter_map(|a| {
            let r = a.rates?;
            let classes: Vec<String> = r
                .classes
                .iter()
                .filter(|(_, c)| c.rate.k > 0)
                .map(|(name, c)| {
                    format!(
                        "{} {} of {} ({}; {} in all)",
                        name.replace('_', " "),
                        c.rate.k,
                        c.rate.n,
                        c.rate.interval(),
                        c.total
                    )
                })
                .collect();
            Some(vec![
                a.cell,
                a.safety.expected.name().to_string(),
                a.repetitions.to_string(),
                r.unsafe_rate.describe("unsafe"),
                r.unknown.to_string(),
                if classes.is_empty() {
                    "none".into()
                } else {
                    classes.join("; ")
                },
                r.recovery
                    .map_or("no fault window".into(), |x| x.describe()),
            ])
        })
        .collect();
    if rows.is_empty() {
        return None;
    }
    let columns = vec![
        text("cell"),
        text("expected"),
        number("runs"),
        text("verdict rate"),
        number("unknown"),
        text("findings by class"),
        text("recovery"),
    ];
    Some(Table { columns, rows })
}
