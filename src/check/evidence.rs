//! Evidence: a finding of a checker with the history lines behind it, in words for a reader
//! and in typed fields (class, key, clients, tokens, times) for the cell's `safety` summary.

use serde::{Deserialize, Serialize};

use super::{History, SafetyVerdict};

/// Findings kept per checker and per [`SafetyVerdict`] (violations, possible violations, notes);
/// counts are always complete.
pub const MAX_EVIDENCE: usize = 10;

/// A pointer into the history: the events behind a finding, by their line in `history.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Evidence {
    /// What the events show, in a sentence naming clients, key, tokens and times.
    pub what: String,
    /// 1-based line numbers in `history.jsonl`, ascending.
    pub lines: Vec<usize>,
    /// Which way the finding points: `invalid` a violation, `unknown` a possible violation
    /// (it needs an unknown outcome), `valid` a note that the property held where it was
    /// tested (a stale access the fenced register refused, the longest wait).
    #[serde(default = "violation")]
    pub validity: SafetyVerdict,
    /// The kind of finding, snake_case (`granted_twice`, `lost_update`, `token_regression`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub class: Option<String>,
    /// The lock key it is about.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// The clients involved, the earlier first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub clients: Vec<u32>,
    /// Their fencing tokens, in the order of `clients` where both are known.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tokens: Vec<u64>,
    /// The times (µs on the history's clock) the finding rests on, earliest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub t_us: Vec<u64>,
}

fn violation() -> SafetyVerdict {
    SafetyVerdict::Unsafe
}

impl Evidence {
    /// A finding of `class` pointing `validity`'s way, described by `what`.
    pub fn new(validity: SafetyVerdict, class: &str, what: impl Into<String>) -> Evidence {
        Evidence {
            what: what.into(),
            lines: Vec::new(),
            validity,
            class: Some(class.to_string()),
            key: None,
            clients: Vec::new(),
            tokens: Vec::new(),
            t_us: Vec::new(),
        }
    }
    /// About `key`.
    pub fn key(mut self, key: &str) -> Evidence {
        self.key = Some(key.to_string());
        self
    }
    /// Adds a client.
    pub fn client(mut self, client: u32) -> Evidence {
        self.clients.push(client);
        self
    }
    /// Adds a token, if there is one.
    pub fn token(mut self, token: Option<u64>) -> Evidence {
        self.tokens.extend(token);
        self
    }
    /// Adds the times, kept sorted.
    pub fn at(mut self, times: impl IntoIterator<Item = u64>) -> Evidence {
        self.t_us.extend(times);
        self.t_us.sort_unstable();
        self.t_us.dedup();
        self
    }
    /// Adds the lines of the events at `indices` of `history.events`.
    pub fn events(
        mut self,
        history: &History,
        indices: impl IntoIterator<Item = usize>,
    ) -> Evidence {
        self.lines
            .extend(indices.into_iter().filter_map(|i| history.lines.get(i)));
        self.lines.sort_unstable();
        self.lines.dedup();
        self
    }
}

/// One finding of a checker, complete (evidence keeps only the first [`MAX_EVIDENCE`] of each
/// validity): which way it points, its class and when it happened, so findings can be counted
/// per stretch of time (the fault windows of `check::faults`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// A violation (`invalid`), a possible violation (`unknown`) or a note (`valid`).
    pub validity: SafetyVerdict,
    /// The evidence's class.
    pub class: Option<String>,
    /// When it happened, µs: the time its checker logged it at (for an overlap, the moment it
    /// was certain; for a lost update, the second write of the value; for a token regression,
    /// the regressing grant), which is the last of the evidence's `t_us` except for a stuck
    /// lock (the start of its stretch).
    pub t_us: u64,
}

/// Collects a checker's findings, each with the time it happened, and keeps the first
/// [`MAX_EVIDENCE`] (in time, whatever order they were found in) of each validity.
///
/// Findings are all kept (small: a validity, a class and a time); evidence, which formats
/// sentences, is built only for a finding that would be kept ([`EvidenceLog::push_with`]), so
/// a history with millions of violations costs millions of findings, not millions of sentences.
#[derive(Debug, Default)]
pub struct EvidenceLog {
    /// Every finding with its push order, which breaks ties of time.
    findings: Vec<(u64, u64, Finding)>,
    /// Per validity (invalid, unknown, valid): the earliest evidence by (time, push order),
    /// sorted, at most [`MAX_EVIDENCE`].
    kept: [Vec<(u64, u64, Evidence)>; 3],
}

fn slot(validity: SafetyVerdict) -> usize {
    match validity {
        SafetyVerdict::Unsafe => 0,
        SafetyVerdict::Unknown => 1,
        SafetyVerdict::Safe => 2,
    }
}

impl EvidenceLog {
    /// Records a finding that happened at `t_us`.
    pub fn push(&mut self, t_us: u64, evidence: Evidence) {
        let (validity, class) = (evidence.validity, evidence.class.clone());
        self.record(t_us, validity, class, || evidence);
    }

    /// Records a finding of `class` pointing `validity`'s way at `t_us`; `evidence` is called
    /// only if it is among the first [`MAX_EVIDENCE`] of its validity so far.
    pub fn push_with(
        &mut self,
        t_us: u64,
        validity: SafetyVerdict,
        class: &str,
        evidence: impl FnOnce() -> Evidence,
    ) {
        self.record(t_us, validity, Some(class.to_string()), evidence);
    }

    fn record(
        &mut self,
        t_us: u64,
        validity: SafetyVerdict,
        class: Option<String>,
        evidence: impl FnOnce() -> Evidence,
    ) {
        let seq = self.findings.len() as u64;
        self.findings.push((
            t_us,
            seq,
            Finding {
                validity,
                class,
                t_us,
            },
        ));
        let kept = &mut self.kept[slot(validity)];
        let at = kept.partition_point(|(t, s, _)| (*t, *s) < (t_us, seq));
        if at < MAX_EVIDENCE {
            kept.insert(at, (t_us, seq, evidence()));
            kept.truncate(MAX_EVIDENCE);
        }
    }

    /// The kept findings (violations first, then possible violations, then notes, each in
    /// time order), and every finding in time order.
    pub fn finish(mut self) -> (Vec<Evidence>, Vec<Finding>) {
        self.findings.sort_unstable_by_key(|(t, seq, _)| (*t, *seq));
        let all = self.findings.into_iter().map(|(_, _, f)| f).collect();
        let out = self
            .kept
            .into_iter()
            .flat_map(|k| k.into_iter().map(|(_, _, e)| e))
            .collect();
        (out, all)
    }
}

/// A token in a sentence.
pub(crate) fn token_text(token: Option<u64>) -> String {
    token.map_or_else(|| "no token".to_string(), |t| format!("token {t}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn note(t: u64) -> Evidence {
        Evidence::new(SafetyVerdict::Unsafe, "c", format!("at {t}")).at([t])
    }

    #[test]
    fn every_finding_is_counted_and_only_the_kept_ones_are_built() {
        // 1 000 findings in time order: the first 10 are built, none after them.
        let mut log = EvidenceLog::default();
        let mut built = 0;
        for t in 0..1000 {
            log.push_with(t, SafetyVerdict::Unsafe, "c", || {
                built += 1;
                note(t)
            });
        }
        let (kept, all) = log.finish();
        assert_eq!((built, kept.len(), all.len()), (10, 10, 1000));
        assert_eq!(kept[9].what, "at 9");

        // Found latest first, kept earliest first; ties keep the order they were found in.
        let mut log = EvidenceLog::default();
        for t in (0..20).rev() {
            log.push(t / 2, note(t));
        }
        let (kept, all) = log.finish();
        let whats: Vec<&str> = kept.iter().map(|e| e.what.as_str()).collect();
        assert_eq!(
            whats,
            [
                "at 1", "at 0", "at 3", "at 2", "at 5", "at 4", "at 7", "at 6", "at 9", "at 8"
            ]
        );
        let times: Vec<u64> = all.iter().map(|f| f.t_us).collect();
        assert_eq!(times[..4], [0, 0, 1, 1]);
    }
}
