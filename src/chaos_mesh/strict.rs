//! Reading a manifest strictly into a typed resource: every field of the document must be in
//! what the type writes back, with the same value (a type may add its defaults, such as a
//! nested object's `apiVersion`), so a misspelt or unknown field is an error naming its path.
//! How the rendered resources and `examples/kubernetes/` are checked against Chaos Mesh's and
//! Kubernetes' types.

use serde::Deserialize;
use serde_norway::Value;

/// The YAML documents of `text` (empty ones, such as a leading comment, left out).
pub fn documents(text: &str) -> Result<Vec<Value>, String> {
    let mut out = Vec::new();
    for d in serde_norway::Deserializer::from_str(text) {
        let v = Value::deserialize(d).map_err(|e| e.to_string())?;
        if !v.is_null() {
            out.push(v);
        }
    }
    Ok(out)
}

/// `doc` read into `T`, or the path of the first field the type does not keep.
pub fn read_strictly<T: serde::de::DeserializeOwned + serde::Serialize>(
    doc: &Value,
) -> Result<T, String> {
    let typed: T = serde_norway::from_value(doc.clone()).map_err(|e| e.to_string())?;
    let back = serde_norway::to_value(&typed).map_err(|e| e.to_string())?;
    kept(doc, &back, "").map_err(|path| {
        format!("{path}: a field the type does not know, or a value it does not keep")
    })?;
    Ok(typed)
}

/// `Ok` when every field of `doc` is in `back` with the same value; else the first path that
/// is not.
fn kept(doc: &Value, back: &Value, at: &str) -> Result<(), String> {
    match (doc, back) {
        (Value::Mapping(d), Value::Mapping(b)) => {
            for (k, v) in d {
                let path = format!("{at}.{}", k.as_str().unwrap_or("?"));
                let other = b.get(k).ok_or_else(|| path.clone())?;
                kept(v, other, &path)?;
            }
            Ok(())
        }
        (Value::Sequence(d), Value::Sequence(b)) if d.len() == b.len() => d
            .iter()
            .zip(b)
            .enumerate()
            .try_for_each(|(i, (x, y))| kept(x, y, &format!("{at}[{i}]"))),
        (d, b) if d == b => Ok(()),
        _ => Err(at.to_string()),
    }
}
