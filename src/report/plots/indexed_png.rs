//! The plots' PNG encoding: 8-bit indexed colour, a palette of at most 256 colours, at the
//! `png` crate's default compression. On a default run's figures this made PNGs a fifth to a
//! sixth of the size of the RGB ones `image`'s encoder wrote with its defaults (a latency over
//! time of 1 400 points: 235 KB as RGB, 42 KB indexed), in about 20 ms each.
//!
//! A figure of at most 256 colours is encoded exactly. One with more (anti-aliased text and
//! half-transparent markers blend into a few hundred) keeps its 256 most frequent colours and
//! draws every other pixel in the nearest of them: on that run those were under 0.4 % of the
//! pixels, blends at the edges of glyphs and markers, while every colour a series, a marker or
//! a legend swatch is drawn in covers more pixels than the rarest colour kept.

use std::collections::HashMap;

/// The most colours an 8-bit palette holds.
const PALETTE_SIZE: usize = 256;

/// `rgb` (8-bit RGB triples, row by row, `width` × `height`) as an indexed-colour PNG.
pub fn encode(rgb: &[u8], (width, height): (u32, u32)) -> Result<Vec<u8>, String> {
    let colours = Colours::of(rgb);
    let (palette, index_of) = colours.palette();
    let indices: Vec<u8> = colours
        .ids
        .iter()
        .map(|&id| index_of[id as usize])
        .collect();
    let mut out = Vec::new();
    let mut encoder = png::Encoder::new(&mut out, width, height);
    encoder.set_color(png::ColorType::Indexed);
    encoder.set_depth(png::BitDepth::Eight);
    encoder.set_palette(palette.iter().flatten().copied().collect::<Vec<u8>>());
    encoder.set_compression(png::Compression::Default);
    // Differences between palette indices mean nothing: no filter compresses best.
    encoder.set_filter(png::FilterType::NoFilter);
    let mut writer = encoder.write_header().map_err(|e| e.to_string())?;
    writer
        .write_image_data(&indices)
        .map_err(|e| e.to_string())?;
    writer.finish().map_err(|e| e.to_string())?;
    Ok(out)
}

/// An image's distinct colours, numbered in order of first appearance, and each pixel's number.
struct Colours {
    /// The distinct colours.
    distinct: Vec<[u8; 3]>,
    /// How many pixels have each of `distinct`.
    counts: Vec<u32>,
    /// Each pixel's colour, as its position in `distinct`.
    ids: Vec<u32>,
}

/// Slots of the small cache in front of [`Colours::of`]'s map (a power of two).
const CACHE_SLOTS: usize = 4096;

impl Colours {
    /// Numbers the colours of `rgb`. A figure has a few hundred colours and long runs of one:
    /// the pixel before and a direct-mapped cache answer most pixels without the map.
    fn of(rgb: &[u8]) -> Colours {
        let mut out = Colours {
            distinct: Vec::new(),
            counts: Vec::new(),
            ids: Vec::with_capacity(rgb.len() / 3),
        };
        let mut map: HashMap<u32, u32> = HashMap::new();
        let mut cache = vec![(u32::MAX, 0u32); CACHE_SLOTS];
        // Indexing by hand: this loop runs once a pixel, and iterator adapters cost several
        // times as much in an unoptimised (test) build.
        let (mut i, mut id) = (0, 0u32);
        let mut last = u32::MAX;
        while i + 2 < rgb.len() {
            let key =
                (u32::from(rgb[i]) << 16) | (u32::from(rgb[i + 1]) << 8) | u32::from(rgb[i + 2]);
            if key != last {
                let slot = (key.wrapping_mul(2_654_435_761) >> 20) as usize % CACHE_SLOTS;
                id = if cache[slot].0 == key {
                    cache[slot].1
                } else {
                    let next = out.distinct.len() as u32;
                    let id = *map.entry(key).or_insert_with(|| {
                        out.distinct.push([rgb[i], rgb[i + 1], rgb[i + 2]]);
                        out.counts.push(0);
                        next
                    });
                    cache[slot] = (key, id);
                    id
                };
                last = key;
            }
            out.counts[id as usize] += 1;
            out.ids.push(id);
            i += 3;
        }
        out
    }

    /// The palette, at most [`PALETTE_SIZE`] colours, most frequent first (ties by colour, so
    /// the same pixels always give the same file), and each distinct colour's index in it: its
    /// own, else the nearest one's.
    fn palette(&self) -> (Vec<[u8; 3]>, Vec<u8>) {
        let mut by_count: Vec<usize> = (0..self.distinct.len()).collect();
        by_count.sort_unstable_by(|&a, &b| {
            (self.counts[b].cmp(&self.counts[a])).then(self.distinct[a].cmp(&self.distinct[b]))
        });
        by_count.truncate(PALETTE_SIZE);
        let palette: Vec<[u8; 3]> = by_count.iter().map(|&id| self.distinct[id]).collect();
        // A colour of the palette is its own nearest (at distance 0).
        let index_of = self
            .distinct
            .iter()
            .map(|&c| nearest(&palette, c))
            .collect();
        (palette, index_of)
    }
}

/// The index of the colour of `palette` nearest to `c` (squared RGB distance; the more frequent
/// of equally near ones).
fn nearest(palette: &[[u8; 3]], c: [u8; 3]) -> u8 {
    let distance = |p: &[u8; 3]| -> i32 {
        (0..3)
            .map(|k| (i32::from(p[k]) - i32::from(c[k])).pow(2))
            .sum()
    };
    palette
        .iter()
        .enumerate()
        .min_by_key(|(i, p)| (distance(p), *i))
        .map_or(0, |(i, _)| i as u8)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The pixels of an indexed PNG as RGB triples.
    fn decode(bytes: &[u8]) -> (png::ColorType, Vec<u8>) {
        let mut reader = png::Decoder::new(bytes).read_info().unwrap();
        let color = reader.info().color_type;
        let palette = reader.info().palette.clone().unwrap().into_owned();
        let mut buf = vec![0; reader.output_buffer_size()];
        let frame = reader.next_frame(&mut buf).unwrap();
        let rgb = buf[..frame.buffer_size()]
            .iter()
            .flat_map(|&i| palette[3 * i as usize..3 * i as usize + 3].to_vec())
            .collect();
        (color, rgb)
    }

    #[test]
    fn few_colours_are_kept_exactly() {
        let rgb: Vec<u8> = (0..64u32 * 32)
            .flat_map(|i| {
                let v = (i % 64) as u8;
                [v * 4, 255 - v, 7]
            })
            .collect();
        let png = encode(&rgb, (64, 32)).unwrap();
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
        assert_eq!(decode(&png), (png::ColorType::Indexed, rgb));
    }

    #[test]
    fn past_256_colours_the_rare_ones_take_the_nearest_frequent_one() {
        // 256 colours of 100 pixels each, then one pixel of a colour next to the first.
        let mut rgb: Vec<u8> = (0..=255u8)
            .flat_map(|v| std::iter::repeat_n([v, 0, 0], 100).flatten())
            .collect();
        rgb.extend([0, 3, 0]);
        rgb.extend([9; 3 * 99]);
        let (_, back) = decode(&encode(&rgb, (100, 257)).unwrap());
        assert_eq!(
            back[..256 * 300],
            rgb[..256 * 300],
            "the frequent ones exact"
        );
        assert_eq!(back[256 * 300..256 * 300 + 3], [0, 0, 0]);
    }
}
