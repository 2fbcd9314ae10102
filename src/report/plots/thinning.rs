//! Thinning a figure's markers to what its pixels can show, so a cell of 200 000 acquisitions
//! draws a few thousand markers that look the same as all of them would: markers binned to
//! about their own size, never across classes (a failure is never merged into an ok). The
//! safety timeline thins its bars its own way (`safety_timeline::merge`).

use std::collections::HashMap;
use std::hash::Hash;

/// The largest bin [`thin_markers`] grows to, px: past it a figure has too few bins to need
/// thinning further.
const MAX_BIN_PX: f64 = 64.0;

/// A marker kept: the first item of its bin, how many items of its class the bin held, and
/// the bin.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Kept<T> {
    /// The bin's first item.
    pub item: T,
    /// How many items it stands for (itself included).
    pub count: usize,
    /// The side of the bins its class was binned with, px.
    pub bin_px: f64,
    /// The bin's centre, px (where a marker standing for several items is drawn).
    pub centre_px: (f64, f64),
}

/// `items` thinned per class to at most `max_per_class` markers each: the first item of each
/// class in each square bin of `bin_px` pixels is kept, and a class with more bins than
/// `max_per_class` is binned again with bins a quarter wider, until it fits. `place` gives
/// an item's position in pixels and its class (e.g. an outcome: items of different classes never
/// share a bin). Returns the items kept, in their order within each class and classes in order
/// of first appearance.
pub fn thin_markers<T: Copy, C: Copy + Eq + Hash>(
    items: &[T],
    place: impl Fn(&T) -> (f64, f64, C),
    bin_px: f64,
    max_per_class: usize,
) -> Vec<Kept<T>> {
    let mut classes: Vec<C> = Vec::new();
    for i in items {
        let c = place(i).2;
        if !classes.contains(&c) {
            classes.push(c);
        }
    }
    let mut out = Vec::new();
    for class in classes {
        let mine: Vec<T> = items
            .iter()
            .copied()
            .filter(|i| place(i).2 == class)
            .collect();
        let mut bin = bin_px.max(1.0);
        loop {
            let kept = first_per_bin(&mine, &place, bin);
            if kept.len() <= max_per_class || bin >= MAX_BIN_PX {
                out.extend(kept);
                break;
            }
            bin = (bin * 1.25).min(MAX_BIN_PX);
        }
    }
    out
}

/// The first of `items` in each square bin of `bin_px` pixels, with how many the bin holds.
fn first_per_bin<T: Copy, C>(
    items: &[T],
    place: impl Fn(&T) -> (f64, f64, C),
    bin_px: f64,
) -> Vec<Kept<T>> {
    let mut bins: HashMap<(i64, i64), usize> = HashMap::new();
    let mut out: Vec<Kept<T>> = Vec::new();
    for &item in items {
        let (x, y, _) = place(&item);
        let bin = ((x / bin_px).floor() as i64, (y / bin_px).floor() as i64);
        match bins.get(&bin) {
            Some(&at) => out[at].count += 1,
            None => {
                bins.insert(bin, out.len());
                out.push(Kept {
                    item,
                    count: 1,
                    bin_px,
                    centre_px: ((bin.0 as f64 + 0.5) * bin_px, (bin.1 as f64 + 0.5) * bin_px),
                });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_bin_per_class_and_a_lone_one_survives() {
        // 10 000 oks on one 10 × 10 px square, one fail in the middle of them.
        let mut items: Vec<(f64, f64, bool)> = (0..10_000)
            .map(|i| ((i % 100) as f64 / 10.0, (i / 100) as f64 / 10.0, false))
            .collect();
        items.insert(5_000, (5.0, 5.0, true));
        let kept = thin_markers(&items, |&(x, y, c)| (x, y, c), 4.0, 1_000);
        // 3 × 3 bins of 4 px over 10 px for the oks, the one fail kept apart.
        let oks: Vec<&Kept<_>> = kept.iter().filter(|k| !k.item.2).collect();
        assert_eq!(oks.len(), 9);
        assert_eq!(oks.iter().map(|k| k.count).sum::<usize>(), 10_000);
        assert_eq!(
            kept.iter().filter(|k| k.item.2).collect::<Vec<_>>(),
            vec![&Kept {
                item: (5.0, 5.0, true),
                count: 1,
                bin_px: 4.0,
                centre_px: (6.0, 6.0),
            }]
        );
    }

    #[test]
    fn bins_grow_until_a_class_fits() {
        let items: Vec<(f64, f64, u8)> = (0..100_000)
            .map(|i| ((i % 1000) as f64, (i / 1000) as f64 * 4.0, 0))
            .collect();
        let kept = thin_markers(&items, |&(x, y, c)| (x, y, c), 3.0, 2_000);
        assert!(kept.len() <= 2_000, "{}", kept.len());
        assert!(kept.len() > 500, "not thinned past need: {}", kept.len());
        assert!(kept[0].bin_px > 3.0, "the bin grew");
    }
}
