//! The file's shapes as serde reads them: every field optional and loosely typed (integers as
//! i64, durations as text), so range and unit errors come from validation with the field name.

use std::fmt;
use std::marker::PhantomData;

use serde::Deserialize;
use serde::de::{self, MapAccess, Visitor, value::MapAccessDeserializer};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawWorkload {
    pub(super) name: Option<String>,
    pub(super) clients: Option<i64>,
    pub(super) keys: Option<i64>,
    pub(super) key_distribution: Option<StrOrTable<RawKind>>,
    pub(super) hold: Option<StrOrTable<RawDist>>,
    pub(super) think: Option<StrOrTable<RawDist>>,
    pub(super) arrival: Option<StrOrTable<RawKind>>,
    pub(super) duration: Option<String>,
    pub(super) acquisitions: Option<i64>,
    pub(super) warmup: Option<String>,
    pub(super) lease_ttl: Option<String>,
    pub(super) renew: Option<bool>,
    pub(super) acquire_timeout: Option<String>,
    pub(super) retry_backoff: Option<String>,
    pub(super) retry_backoff_max: Option<String>,
    pub(super) resolve_timeout: Option<String>,
    pub(super) poll_interval: Option<String>,
    pub(super) strategies: Option<Vec<String>>,
    pub(super) seed: Option<i64>,
    pub(super) stampede: Option<RawStampede>,
    pub(super) clients_as: Option<String>,
    pub(super) clients_per_process: Option<i64>,
    pub(super) resource: Option<String>,
    pub(super) expect: Option<toml::Value>,
    pub(super) crash_between_steps_every: Option<i64>,
    pub(super) lock: Option<String>,
    pub(super) read_ratio: Option<f64>,
    pub(super) permits: Option<i64>,
    pub(super) reentry_depth: Option<i64>,
    pub(super) client_latency: Option<String>,
    pub(super) client_jitter: Option<String>,
    pub(super) peer_latency: Option<String>,
    pub(super) peer_jitter: Option<String>,
}

/// `key_distribution` and `arrival`: a bare kind (`"uniform"`) or a table with its parameter.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawKind {
    pub(super) kind: String,
    pub(super) exponent: Option<f64>,
    pub(super) rate_per_s: Option<f64>,
}

/// `hold` and `think`: a bare duration (fixed) or `{ kind = ..., ... }`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawDist {
    pub(super) kind: String,
    pub(super) value: Option<String>,
    pub(super) min: Option<String>,
    pub(super) max: Option<String>,
    pub(super) mean: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawStampede {
    pub(super) rounds: Option<i64>,
}

/// What a bare string stands for in a field that also takes a table.
pub(crate) trait FromBare {
    fn from_bare(s: String) -> Self;
}
impl FromBare for RawKind {
    fn from_bare(kind: String) -> Self {
        RawKind {
            kind,
            ..RawKind::default()
        }
    }
}
impl FromBare for RawDist {
    fn from_bare(value: String) -> Self {
        RawDist {
            kind: "fixed".into(),
            value: Some(value),
            ..RawDist::default()
        }
    }
}

#[derive(Debug)]
pub(crate) struct StrOrTable<T>(pub(crate) T);

impl<'de, T: Deserialize<'de> + FromBare> Deserialize<'de> for StrOrTable<T> {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de> + FromBare> Visitor<'de> for V<T> {
            type Value = StrOrTable<T>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string or a table such as { kind = \"...\" }")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Self::Value, E> {
                Ok(StrOrTable(T::from_bare(s.to_string())))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                T::deserialize(MapAccessDeserializer::new(map)).map(StrOrTable)
            }
        }
        d.deserialize_any(V(PhantomData))
    }
}

/// The field names serde's derive gives a struct `T` (the ones `deny_unknown_fields` accepts),
/// read by asking `T` to deserialize itself from a deserializer that only records them: the
/// guide's field tables are checked against these (`tests/docs_drift.rs`).
pub(crate) fn struct_fields<T: de::DeserializeOwned>() -> &'static [&'static str] {
    struct Capture<'a>(&'a mut &'static [&'static str]);
    impl<'de> de::Deserializer<'de> for Capture<'_> {
        type Error = de::value::Error;
        fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Self::Error> {
            Err(de::Error::custom("not a struct"))
        }
        fn deserialize_struct<V: Visitor<'de>>(
            self,
            _: &'static str,
            fields: &'static [&'static str],
            _: V,
        ) -> Result<V::Value, Self::Error> {
            *self.0 = fields;
            Err(de::Error::custom("fields recorded"))
        }
        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
            option unit unit_struct newtype_struct seq tuple tuple_struct map enum identifier
            ignored_any
        }
    }
    let mut fields: &'static [&'static str] = &[];
    let _ = T::deserialize(Capture(&mut fields));
    fields
}

/// A workload file's fields, per table: the top level, then the tables some fields take.
pub(crate) fn file_fields() -> Vec<(&'static str, &'static [&'static str])> {
    vec![
        ("workload", struct_fields::<RawWorkload>()),
        ("hold, think", struct_fields::<RawDist>()),
        ("key_distribution, arrival", struct_fields::<RawKind>()),
        ("stampede", struct_fields::<RawStampede>()),
    ]
}
