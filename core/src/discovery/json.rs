//! The protobuf-JSON conventions shared by every discovery record, and the decode error.
//!
//! libatapp publishes its records as protobuf JSON (original field names, enums as ints, 64-bit
//! integers unquoted), but any proto3 JSON writer may quote 64-bit integers (`"4353"`), write
//! integral floats (`4.353e3`) or write `null` for a default. The helpers here make the serde
//! derives of [`DiscoveryInfo`](super::DiscoveryInfo) and [`TopologyInfo`](super::TopologyInfo)
//! accept all of those; unknown fields are ignored by the derives themselves. [`DecodeError`]
//! turns serde_json's error into a typed category the caller can count.

use alloc::{
    string::{String, ToString},
    vec::Vec,
};
use core::{fmt, marker::PhantomData};

use serde::{
    Deserialize, Deserializer,
    de::{self, MapAccess, Unexpected, Visitor, value::MapAccessDeserializer},
};

use crate::ids::NodeId;

/// Why a discovery or topology document could not be decoded.
///
/// Decoding never panics; every malformed input ends in one of these. `line`/`column` are
/// serde_json's 1-based position of the problem (0 when it has none).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeError {
    /// Not JSON: a stray character, a bad escape, trailing data, nesting deeper than 128.
    #[error("malformed JSON at line {line} column {column}: {message}")]
    Syntax {
        /// Line of the problem.
        line: usize,
        /// Column of the problem.
        column: usize,
        /// serde_json's description.
        message: String,
    },
    /// The document ends before it is complete (a cut-off read or value).
    #[error("JSON document ends early at line {line} column {column}")]
    Truncated {
        /// Line where the input ended.
        line: usize,
        /// Column where the input ended.
        column: usize,
    },
    /// Well-formed JSON with a field of the wrong kind (`"listen": "x"`, an id that is an
    /// object, a top-level array).
    #[error("wrong JSON type at line {line} column {column}: {message}")]
    WrongType {
        /// Line of the field.
        line: usize,
        /// Column of the field.
        column: usize,
        /// serde_json's description.
        message: String,
    },
    /// The right kind of value but not an acceptable one: an integer out of range (u64
    /// overflow, a negative id, a pid beyond i32), a non-integral number, a string that is not
    /// a decimal integer, a field given twice.
    #[error("invalid value at line {line} column {column}: {message}")]
    InvalidValue {
        /// Line of the field.
        line: usize,
        /// Column of the field.
        column: usize,
        /// serde_json's description.
        message: String,
    },
    /// The record carries no identity it could be indexed by (discovery: id 0 and an empty
    /// name; topology: id 0).
    #[error("record has no identity (id 0 and no usable name)")]
    NoIdentity,
}

impl From<serde_json::Error> for DecodeError {
    fn from(err: serde_json::Error) -> DecodeError {
        use serde_json::error::Category;
        let (line, column) = (err.line(), err.column());
        let message = bare_message(&err);
        match err.classify() {
            Category::Eof => DecodeError::Truncated { line, column },
            Category::Syntax | Category::Io => DecodeError::Syntax {
                line,
                column,
                message,
            },
            // serde's `Error::invalid_type` is the only producer of this prefix; everything
            // else in the data category (invalid_value, duplicate_field, custom) is a bad value.
            Category::Data if message.starts_with("invalid type") => DecodeError::WrongType {
                line,
                column,
                message,
            },
            Category::Data => DecodeError::InvalidValue {
                line,
                column,
                message,
            },
        }
    }
}

/// serde_json's message without its trailing " at line L column C" (kept in the fields).
fn bare_message(err: &serde_json::Error) -> String {
    let mut text = err.to_string();
    let suffix = alloc::format!(" at line {} column {}", err.line(), err.column());
    if text.ends_with(&suffix) {
        text.truncate(text.len() - suffix.len());
    }
    text
}

/// Decodes one record (a JSON object), mapping serde_json errors into [`DecodeError`].
pub(crate) fn decode<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> Result<T, DecodeError> {
    serde_json::from_slice::<Object<T>>(bytes)
        .map(|object| object.0)
        .map_err(DecodeError::from)
}

/// A protobuf message in JSON: only an object is accepted (serde's derive alone would also
/// take an array and fill the fields by position).
struct Object<T>(T);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Object<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Object<T>, D::Error> {
        deserializer
            .deserialize_map(ObjectVisitor(PhantomData))
            .map(Object)
    }
}

struct ObjectVisitor<T>(PhantomData<T>);

impl<'de, T: Deserialize<'de>> Visitor<'de> for ObjectVisitor<T> {
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
        T::deserialize(MapAccessDeserializer::new(map))
    }
}

/// Field deserializer for a nested message: an object, or `null` for the default.
pub(crate) fn message<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    Option::<Object<T>>::deserialize(deserializer).map(|o| o.map(|o| o.0).unwrap_or_default())
}

/// Field deserializer for a repeated message: an array of objects, or `null` for empty
/// (into a `Vec<T>` or anything made from one, such as a [`Sparse`](super::Sparse)).
pub(crate) fn message_list<'de, D, T, L>(deserializer: D) -> Result<L, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
    L: From<Vec<T>>,
{
    let list = Option::<Vec<Object<T>>>::deserialize(deserializer)?;
    Ok(L::from(
        list.unwrap_or_default().into_iter().map(|o| o.0).collect(),
    ))
}

/// Encodes one record as compact JSON.
pub(crate) fn encode<T: serde::Serialize>(value: &T) -> Vec<u8> {
    serde_json::to_vec(value)
        .expect("discovery records hold only strings, integers and string-keyed maps")
}

/// `skip_serializing_if` helper: proto3 JSON omits fields holding their default.
pub(crate) fn is_default<T: Default + PartialEq>(value: &T) -> bool {
    *value == T::default()
}

/// Field deserializer: `null` means the default; anything else decodes as `T`.
pub(crate) fn or_default<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    Option::<T>::deserialize(deserializer).map(Option::unwrap_or_default)
}

/// Field deserializer for proto `uint64`: number, decimal string, integral float or `null`.
pub(crate) fn u64_field<'de, D: Deserializer<'de>>(deserializer: D) -> Result<u64, D::Error> {
    deserializer.deserialize_any(U64Visitor)
}

/// Field serializer for a `uint64` in proto3's canonical JSON form, a decimal string (exact
/// in every JSON reader, also above 2^53).
pub(crate) fn u64_string<S: serde::Serializer>(
    value: &u64,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    serializer.collect_str(value)
}

/// Field deserializer for a [`NodeId`] written as proto `uint64`.
pub(crate) fn node_id_field<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<NodeId, D::Error> {
    deserializer.deserialize_any(U64Visitor).map(NodeId)
}

/// Field deserializer for proto `int32`/`sint32`: number, decimal string, integral float or
/// `null`.
pub(crate) fn i32_field<'de, D: Deserializer<'de>>(deserializer: D) -> Result<i32, D::Error> {
    deserializer.deserialize_any(I32Visitor)
}

/// 2^64 as an f64 (exact): the first float above every u64.
const TWO_POW_64: f64 = 18_446_744_073_709_551_616.0;

struct U64Visitor;

impl Visitor<'_> for U64Visitor {
    type Value = u64;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an unsigned 64-bit integer (number or decimal string)")
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<u64, E> {
        Ok(v)
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<u64, E> {
        u64::try_from(v).map_err(|_| E::invalid_value(Unexpected::Signed(v), &self))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<u64, E> {
        // `as` saturates, so the round trip only holds for an integral value in range.
        let n = v as u64;
        let exact = (0.0..TWO_POW_64).contains(&v) && n as f64 == v;
        if exact {
            Ok(n)
        } else {
            Err(E::invalid_value(Unexpected::Float(v), &self))
        }
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<u64, E> {
        let digits_only = !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit());
        match v.parse::<u64>() {
            Ok(n) if digits_only => Ok(n),
            _ => Err(E::invalid_value(Unexpected::Str(v), &self)),
        }
    }

    fn visit_unit<E: de::Error>(self) -> Result<u64, E> {
        Ok(0)
    }

    fn visit_none<E: de::Error>(self) -> Result<u64, E> {
        Ok(0)
    }
}

struct I32Visitor;

impl Visitor<'_> for I32Visitor {
    type Value = i32;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a signed 32-bit integer (number or decimal string)")
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<i32, E> {
        i32::try_from(v).map_err(|_| E::invalid_value(Unexpected::Unsigned(v), &self))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<i32, E> {
        i32::try_from(v).map_err(|_| E::invalid_value(Unexpected::Signed(v), &self))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<i32, E> {
        let n = v as i32;
        let exact = (-2_147_483_648.0..2_147_483_648.0).contains(&v) && f64::from(n) == v;
        if exact {
            Ok(n)
        } else {
            Err(E::invalid_value(Unexpected::Float(v), &self))
        }
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<i32, E> {
        let body = v.strip_prefix('-').unwrap_or(v);
        let digits_only = !body.is_empty() && body.bytes().all(|b| b.is_ascii_digit());
        match v.parse::<i32>() {
            Ok(n) if digits_only => Ok(n),
            _ => Err(E::invalid_value(Unexpected::Str(v), &self)),
        }
    }

    fn visit_unit<E: de::Error>(self) -> Result<i32, E> {
        Ok(0)
    }

    fn visit_none<E: de::Error>(self) -> Result<i32, E> {
        Ok(0)
    }
}

#[cfg(test)]
mod tests {
    use alloc::string::ToString;

    use serde::Deserialize;

    use super::*;

    #[derive(Debug, Default, PartialEq, Deserialize)]
    #[serde(default)]
    struct Probe {
        #[serde(deserialize_with = "u64_field")]
        big: u64,
        #[serde(deserialize_with = "i32_field")]
        small: i32,
        #[serde(deserialize_with = "or_default")]
        text: String,
        #[serde(deserialize_with = "or_default")]
        list: Vec<String>,
    }

    fn probe(json: &str) -> Result<Probe, DecodeError> {
        decode(json.as_bytes())
    }

    #[test]
    fn u64_accepts_number_string_integral_float_and_null() {
        assert_eq!(probe(r#"{"big":4353}"#).map(|p| p.big), Ok(4353));
        assert_eq!(probe(r#"{"big":"4353"}"#).map(|p| p.big), Ok(4353));
        assert_eq!(probe(r#"{"big":4.353e3}"#).map(|p| p.big), Ok(4353));
        assert_eq!(probe(r#"{"big":null}"#).map(|p| p.big), Ok(0));
        assert_eq!(
            probe(r#"{"big":18446744073709551615}"#).map(|p| p.big),
            Ok(u64::MAX)
        );
        assert_eq!(
            probe(r#"{"big":"18446744073709551615"}"#).map(|p| p.big),
            Ok(u64::MAX)
        );
        assert_eq!(probe("{}").map(|p| p.big), Ok(0));
    }

    #[test]
    fn u64_rejects_overflow_negative_fraction_and_non_decimal_strings() {
        for bad in [
            r#"{"big":18446744073709551616}"#,
            r#"{"big":"18446744073709551616"}"#,
            r#"{"big":-1}"#,
            r#"{"big":"-1"}"#,
            r#"{"big":1.5}"#,
            r#"{"big":"+7"}"#,
            r#"{"big":" 7"}"#,
            r#"{"big":""}"#,
            r#"{"big":"0x10"}"#,
            r#"{"big":1e30}"#,
        ] {
            assert!(
                matches!(probe(bad), Err(DecodeError::InvalidValue { line: 1, .. })),
                "{bad} gave {:?}",
                probe(bad)
            );
        }
    }

    #[test]
    fn i32_accepts_signed_forms_and_rejects_out_of_range() {
        assert_eq!(probe(r#"{"small":-1}"#).map(|p| p.small), Ok(-1));
        assert_eq!(
            probe(r#"{"small":"-2147483648"}"#).map(|p| p.small),
            Ok(i32::MIN)
        );
        assert_eq!(
            probe(r#"{"small":2147483647}"#).map(|p| p.small),
            Ok(i32::MAX)
        );
        assert_eq!(probe(r#"{"small":-3.0}"#).map(|p| p.small), Ok(-3));
        for bad in [
            r#"{"small":2147483648}"#,
            r#"{"small":-2147483649}"#,
            r#"{"small":"2147483648"}"#,
            r#"{"small":"-"}"#,
            r#"{"small":0.5}"#,
        ] {
            assert!(
                matches!(probe(bad), Err(DecodeError::InvalidValue { .. })),
                "{bad}"
            );
        }
    }

    #[test]
    fn null_means_default_for_strings_and_lists() {
        assert_eq!(probe(r#"{"text":null,"list":null}"#), Ok(Probe::default()));
    }

    #[test]
    fn errors_are_categorised_with_positions() {
        assert_eq!(
            probe(""),
            Err(DecodeError::Truncated { line: 1, column: 0 })
        );
        assert_eq!(
            probe(r#"{"big":1"#),
            Err(DecodeError::Truncated { line: 1, column: 8 })
        );
        assert_eq!(
            probe("{]"),
            Err(DecodeError::Syntax {
                line: 1,
                column: 2,
                message: "key must be a string".to_string()
            })
        );
        assert_eq!(
            probe(r#"{"text":5}"#),
            Err(DecodeError::WrongType {
                line: 1,
                column: 9,
                message: "invalid type: integer `5`, expected a string".to_string()
            })
        );
        assert_eq!(
            probe(r#"{"big":-1}"#),
            Err(DecodeError::InvalidValue {
                line: 1,
                column: 9,
                message: "invalid value: integer `-1`, expected an unsigned 64-bit integer \
                          (number or decimal string)"
                    .to_string()
            })
        );
        assert!(matches!(
            probe(r#"{"big":1,"big":2}"#),
            Err(DecodeError::InvalidValue { .. })
        ));
        assert!(matches!(
            probe(r#"{"big":{}}"#),
            Err(DecodeError::WrongType { .. })
        ));
        assert!(matches!(probe("[1]"), Err(DecodeError::WrongType { .. })));
        assert!(matches!(probe("{} x"), Err(DecodeError::Syntax { .. })));
    }
}
