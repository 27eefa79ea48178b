//! The record value's byte layout (ARCHITECTURE.md, "Record value"): header, checksums and the
//! two msgpack sections; [`encode`] writes the current format, [`decode`] and [`decode_answer`]
//! read every format from 1 to [`RECORD_FORMAT_VERSION`].
//!
//! Format 2 gives the answer section (what a hit returns) a checksum of its own (CRC-32), so a
//! hit verifies and parses only the header and the answer; the record checksum (blake3) over
//! the whole value
//! is verified whenever the whole record is decoded ([`decode`]: `Hit::record`, `bank verify`,
//! export, merge). Format 1 values (one checksum over everything) are verified whole either way.

use std::collections::BTreeMap;
use tunebank_key::StrategyMap;

use serde::{Deserialize, Serialize};

use super::view::{AnswerRef, StrategyRef};
use super::{
    kind_byte, kind_from_byte, Answer, Damage, Descriptor, Performance, Provenance, Record,
    RecordError, HEADER_LEN, MAX_BODY_LEN, RECORD_FORMAT_VERSION, RECORD_MAGIC,
};
use tunebank_key::{BankKey, RecordKind};

/// Length of format 2's record checksum: the first 16 bytes of a blake3 hash.
pub(crate) const CHECKSUM_LEN: usize = 16;

/// Section 1 of the body, as encoded (borrowing).
#[derive(Serialize)]
struct AnswerOut<'a> {
    strategy: &'a StrategyMap,
    performance: &'a Performance,
}

/// Section 1 of the body, as decoded.
#[derive(Deserialize)]
struct AnswerIn {
    #[serde(deserialize_with = "strategy_in_bulk")]
    strategy: StrategyMap,
    performance: Performance,
}

/// Reads a strategy map's entries into a vector and builds the map from it in one go: the
/// writer stores the entries in key order, and building a `BTreeMap` from sorted entries costs
/// far less than inserting them one by one (a hit's largest decoding cost). Entries out of
/// order are sorted; a repeated name keeps its last value, as inserting would.
fn strategy_in_bulk<'de, D: serde::Deserializer<'de>>(d: D) -> Result<StrategyMap, D::Error> {
    struct Entries;
    impl<'de> serde::de::Visitor<'de> for Entries {
        type Value = StrategyMap;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a map of strategy parameters")
        }
        fn visit_map<A: serde::de::MapAccess<'de>>(
            self,
            mut map: A,
        ) -> Result<StrategyMap, A::Error> {
            let mut entries = Vec::with_capacity(map.size_hint().unwrap_or(0).min(64));
            while let Some(entry) = map.next_entry::<String, serde_json::Value>()? {
                entries.push(entry);
            }
            Ok(entries.into_iter().collect())
        }
    }
    d.deserialize_map(Entries)
}

/// Section 2 of the body, as encoded (borrowing).
#[derive(Serialize)]
struct DetailsOut<'a> {
    descriptor: &'a Descriptor,
    options: &'a BTreeMap<String, String>,
    provenance: &'a Provenance,
}

/// Section 2 of the body, as decoded.
#[derive(Deserialize)]
struct DetailsIn {
    descriptor: Descriptor,
    options: BTreeMap<String, String>,
    provenance: Provenance,
}

/// blake3 over the key and then each part, in order.
fn hash(key: &BankKey, parts: &[&[u8]]) -> blake3::Hash {
    let mut hasher = blake3::Hasher::new();
    hasher.update(&key.0);
    for p in parts {
        hasher.update(p);
    }
    hasher.finalize()
}

/// The first [`CHECKSUM_LEN`] bytes of [`hash`].
fn short_hash(key: &BankKey, parts: &[&[u8]]) -> [u8; CHECKSUM_LEN] {
    let mut out = [0; CHECKSUM_LEN];
    out.copy_from_slice(&hash(key, parts).as_bytes()[..CHECKSUM_LEN]);
    out
}

/// Format 2's answer checksum: CRC-32 (the IEEE polynomial, as zlib computes it) over the key
/// and then each part. It finds every error of up to three bits and every burst of up to 32 bits
/// in what a hit returns, at a tenth of blake3's cost on a few hundred bytes; the blake3 record
/// checksum stays the whole value's guard.
fn answer_crc(key: &BankKey, parts: &[&[u8]]) -> [u8; 4] {
    let mut h = crc32fast::Hasher::new();
    h.update(&key.0);
    for p in parts {
        h.update(p);
    }
    h.finalize().to_le_bytes()
}

/// Bytes of the body the format-2 answer checksum covers: the answer length and the answer,
/// cut at the body's end when the length runs past it.
fn answer_prefix(body: &[u8]) -> &[u8] {
    let Some(len) = body.get(..4) else {
        return body;
    };
    let len = u32::from_le_bytes(len.try_into().expect("4 bytes")) as usize;
    &body[..body.len().min(4usize.saturating_add(len))]
}

fn push_section(out: &mut Vec<u8>, section: &impl Serialize) {
    let start = out.len();
    out.extend_from_slice(&[0; 4]);
    // Serialising these plain data types into a Vec cannot fail: every map has a known length
    // and every key is a string.
    rmp_serde::encode::write_named(out, section).expect("record sections always serialise");
    let len = u32::try_from(out.len() - start - 4).expect("record section under 4 GiB");
    out[start..start + 4].copy_from_slice(&len.to_le_bytes());
}

/// The body of `record`: answer length, answer section, details length, details section.
fn body(record: &Record) -> Vec<u8> {
    let mut out = Vec::with_capacity(512);
    push_section(
        &mut out,
        &AnswerOut {
            strategy: &record.strategy,
            performance: &record.performance,
        },
    );
    push_section(
        &mut out,
        &DetailsOut {
            descriptor: &record.descriptor,
            options: &record.options,
            provenance: &record.provenance,
        },
    );
    out
}

/// Wraps `body` in a valid header of record format `version` for `key`: format 1's checksum
/// when `version` is 1, format 2's answer and record checksums for any other version (the body is not
/// checked: the answer checksum covers what the answer length claims, cut at the body's end).
/// [`encode`] is `seal` over a well-formed body; the fuzz target and the tests seal arbitrary
/// bodies to reach the section parsing behind the checksums.
pub fn seal(
    key: &BankKey,
    version: u16,
    key_schema_version: u32,
    kind: u8,
    body: &[u8],
) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER_LEN + body.len());
    out.extend_from_slice(&RECORD_MAGIC);
    out.extend_from_slice(&version.to_le_bytes());
    out.extend_from_slice(&key_schema_version.to_le_bytes());
    out.push(kind);
    out.push(0); // reserved flags
    let body_len = u32::try_from(body.len()).expect("record body under 4 GiB");
    out.extend_from_slice(&body_len.to_le_bytes());
    if version == 1 {
        out.extend_from_slice(hash(key, &[&out[..16], body]).as_bytes());
    } else {
        let answer = answer_crc(key, &[&out[..16], answer_prefix(body)]);
        out.extend_from_slice(&answer);
        out.extend_from_slice(&[0; 12]); // reserved
        let whole = short_hash(key, &[&out[..32], body]);
        out.extend_from_slice(&whole);
    }
    debug_assert_eq!(out.len(), HEADER_LEN);
    out.extend_from_slice(body);
    out
}

/// Encodes `record`, stored under `key`, in the current format ([`RECORD_FORMAT_VERSION`]).
///
/// Both checksums cover `key`, so the value only decodes under the key it was encoded for.
pub fn encode(key: &BankKey, record: &Record) -> Vec<u8> {
    seal(
        key,
        RECORD_FORMAT_VERSION,
        record.key_schema_version,
        kind_byte(record.kind),
        &body(record),
    )
}

/// Encodes `record` in record format 1 (one checksum over the whole value), as tunebank wrote
/// it before format 2: for tests and fixtures that check older records still read.
pub fn encode_v1(key: &BankKey, record: &Record) -> Vec<u8> {
    seal(
        key,
        1,
        record.key_schema_version,
        kind_byte(record.kind),
        &body(record),
    )
}

fn damaged(key: &BankKey, reason: Damage) -> RecordError {
    RecordError::Damaged { key: *key, reason }
}

/// The header facts every reader checks before trusting a byte of the body.
struct Header<'a> {
    version: u16,
    key_schema_version: u32,
    kind: u8,
    body: &'a [u8],
}

/// Checks magic, version and lengths (steps 1–3 of "Reading a value").
fn header<'a>(key: &BankKey, value: &'a [u8]) -> Result<Header<'a>, RecordError> {
    if value.len() < 6 {
        return Err(damaged(
            key,
            if value.len() >= 4 && value[..4] != RECORD_MAGIC {
                Damage::BadMagic
            } else {
                Damage::Truncated {
                    len: value.len(),
                    needed: HEADER_LEN,
                }
            },
        ));
    }
    if value[..4] != RECORD_MAGIC {
        return Err(damaged(key, Damage::BadMagic));
    }
    let version = u16::from_le_bytes([value[4], value[5]]);
    if version == 0 {
        return Err(damaged(key, Damage::BadVersion));
    }
    if version > RECORD_FORMAT_VERSION {
        return Err(RecordError::UnsupportedVersion {
            key: *key,
            found: version,
            supported: RECORD_FORMAT_VERSION,
        });
    }
    if value.len() < HEADER_LEN {
        return Err(damaged(
            key,
            Damage::Truncated {
                len: value.len(),
                needed: HEADER_LEN,
            },
        ));
    }
    let body_len = u32::from_le_bytes(value[12..16].try_into().expect("4 bytes"));
    let body = &value[HEADER_LEN..];
    if body_len > MAX_BODY_LEN || body_len as usize != body.len() {
        return Err(damaged(
            key,
            Damage::BadLength {
                declared: u64::from(body_len),
                actual: body.len() as u64,
            },
        ));
    }
    Ok(Header {
        version,
        key_schema_version: u32::from_le_bytes(value[6..10].try_into().expect("4 bytes")),
        kind: value[10],
        body,
    })
}

/// The kind byte as a kind: checked after a checksum matched, since the writer may be a
/// different (buggy or hostile) program.
fn kind(key: &BankKey, h: &Header<'_>) -> Result<RecordKind, RecordError> {
    kind_from_byte(h.kind).ok_or_else(|| damaged(key, Damage::BadKind(h.kind)))
}

fn split_section<'a>(
    key: &BankKey,
    bytes: &'a [u8],
    offset: usize,
    total: usize,
) -> Result<(&'a [u8], &'a [u8]), RecordError> {
    if bytes.len() < 4 {
        return Err(damaged(
            key,
            Damage::Truncated {
                len: total,
                needed: offset + 4,
            },
        ));
    }
    let len = u32::from_le_bytes(bytes[..4].try_into().expect("4 bytes")) as usize;
    let rest = &bytes[4..];
    if rest.len() < len {
        return Err(damaged(
            key,
            Damage::Truncated {
                len: total,
                needed: offset + 4 + len,
            },
        ));
    }
    Ok(rest.split_at(len))
}

/// The whole value's checksum: format 1's one checksum, or format 2's record checksum.
fn check_whole(key: &BankKey, value: &[u8], h: &Header<'_>) -> Result<(), RecordError> {
    let sound = if h.version == 1 {
        hash(key, &[&value[..16], h.body]).as_bytes()[..] == value[16..48]
    } else {
        short_hash(key, &[&value[..32], h.body])[..] == value[32..48]
    };
    if sound {
        Ok(())
    } else {
        Err(damaged(key, Damage::ChecksumMismatch))
    }
}

/// Format 2's answer checksum, after checking that the answer lies inside the body.
fn check_answer(key: &BankKey, value: &[u8], h: &Header<'_>) -> Result<(), RecordError> {
    let (answer, _) = split_section(key, h.body, HEADER_LEN, value.len())?;
    let prefix = &h.body[..4 + answer.len()];
    if answer_crc(key, &[&value[..16], prefix])[..] != value[16..20] {
        return Err(damaged(key, Damage::ChecksumMismatch));
    }
    Ok(())
}

/// Verifies every checksum of the value and splits the body into its two sections.
fn verify_whole<'a>(
    key: &BankKey,
    value: &'a [u8],
) -> Result<(Header<'a>, &'a [u8], &'a [u8]), RecordError> {
    let h = header(key, value)?;
    check_whole(key, value, &h)?;
    if h.version >= 2 {
        check_answer(key, value, &h)?;
    }
    let (answer, rest) = split_section(key, h.body, HEADER_LEN, value.len())?;
    let (details, tail) = split_section(key, rest, HEADER_LEN + 4 + answer.len(), value.len())?;
    if !tail.is_empty() {
        return Err(damaged(
            key,
            Damage::Malformed(format!("{} bytes after the last section", tail.len())),
        ));
    }
    Ok((h, answer, details))
}

/// Nesting limit for msgpack sections: deep enough for any strategy, shallow enough that hostile
/// input cannot exhaust the stack.
const MAX_DEPTH: usize = 64;

/// Length in bytes of the one msgpack value at the start of `bytes`, or `None` when it is
/// truncated or holds a byte that starts no value (0xc1). Walks markers without recursion.
fn msgpack_len(bytes: &[u8]) -> Option<usize> {
    let uint = |at: usize, n: usize| -> Option<u64> {
        let b = bytes.get(at..at.checked_add(n)?)?;
        Some(b.iter().fold(0u64, |acc, &x| (acc << 8) | u64::from(x)))
    };
    let (mut at, mut pending) = (0usize, 1u64);
    while pending > 0 {
        pending -= 1;
        let m = *bytes.get(at)?;
        // (bytes of marker and length fields, payload bytes, values that follow)
        let (head, payload, values): (usize, u64, u64) = match m {
            0x00..=0x7f | 0xe0..=0xff | 0xc0 | 0xc2 | 0xc3 => (1, 0, 0),
            0x80..=0x8f => (1, 0, 2 * u64::from(m & 0x0f)),
            0x90..=0x9f => (1, 0, u64::from(m & 0x0f)),
            0xa0..=0xbf => (1, u64::from(m & 0x1f), 0),
            0xc1 => return None,
            0xc4 | 0xd9 => (2, uint(at + 1, 1)?, 0),
            0xc5 | 0xda => (3, uint(at + 1, 2)?, 0),
            0xc6 | 0xdb => (5, uint(at + 1, 4)?, 0),
            0xc7 => (3, uint(at + 1, 1)?, 0),
            0xc8 => (4, uint(at + 1, 2)?, 0),
            0xc9 => (6, uint(at + 1, 4)?, 0),
            0xca => (5, 0, 0),
            0xcb => (9, 0, 0),
            0xcc | 0xd0 => (2, 0, 0),
            0xcd | 0xd1 => (3, 0, 0),
            0xce | 0xd2 => (5, 0, 0),
            0xcf | 0xd3 => (9, 0, 0),
            0xd4 => (3, 0, 0),
            0xd5 => (4, 0, 0),
            0xd6 => (6, 0, 0),
            0xd7 => (10, 0, 0),
            0xd8 => (18, 0, 0),
            0xdc => (3, 0, uint(at + 1, 2)?),
            0xdd => (5, 0, uint(at + 1, 4)?),
            0xde => (3, 0, 2 * uint(at + 1, 2)?),
            0xdf => (5, 0, 2 * uint(at + 1, 4)?),
        };
        at = at
            .checked_add(head)?
            .checked_add(usize::try_from(payload).ok()?)?;
        if at > bytes.len() {
            return None;
        }
        pending = pending.checked_add(values)?;
        // Every value takes at least one byte: more pending values than bytes left is truncation.
        if pending > (bytes.len() - at) as u64 {
            return None;
        }
    }
    Some(at)
}

fn from_section<T: serde::de::DeserializeOwned>(
    key: &BankKey,
    name: &str,
    bytes: &[u8],
) -> Result<T, RecordError> {
    // The value's extent first, so that the parser reads the slice in place (no copy of each
    // string into a buffer) and trailing bytes are still found.
    let end = msgpack_len(bytes).unwrap_or(bytes.len());
    let mut de = rmp_serde::Deserializer::from_read_ref(&bytes[..end]);
    de.set_max_depth(MAX_DEPTH);
    let value = T::deserialize(&mut de)
        .map_err(|e| damaged(key, Damage::Malformed(format!("{name} section: {e}"))))?;
    if end != bytes.len() {
        return Err(damaged(
            key,
            Damage::Malformed(format!("{name} section has trailing bytes")),
        ));
    }
    Ok(value)
}

/// The answer section: the writer's own encoding through the fast parser, anything else through
/// serde.
fn answer_section(key: &BankKey, bytes: &[u8]) -> Result<(StrategyMap, Performance), RecordError> {
    match super::fast::answer(bytes) {
        Some(parts) => Ok(parts),
        None => {
            let a: AnswerIn = from_section(key, "answer", bytes)?;
            Ok((a.strategy, a.performance))
        }
    }
}

/// The answer section through serde alone, never the fast parser: what the fast parser must
/// agree with wherever it answers (for tests and the `decode_record` fuzz target).
pub fn decode_answer_section_generic(
    key: &BankKey,
    bytes: &[u8],
) -> Result<(StrategyMap, Performance), RecordError> {
    let a: AnswerIn = from_section(key, "answer", bytes)?;
    Ok((a.strategy, a.performance))
}

/// The answer section through the fast parser alone: `None` where it declines (for tests and
/// the `decode_record` fuzz target).
pub fn decode_answer_section_fast(bytes: &[u8]) -> Option<(StrategyMap, Performance)> {
    super::fast::answer(bytes)
}

/// Decodes the whole record stored under `key`, verifying every checksum first.
///
/// Errors name `key`: [`RecordError::Damaged`] for any altered, truncated or misplaced value,
/// [`RecordError::UnsupportedVersion`] for a value written in a newer format.
pub fn decode(key: &BankKey, value: &[u8]) -> Result<Record, RecordError> {
    let (h, answer, details) = verify_whole(key, value)?;
    let kind = kind(key, &h)?;
    let (strategy, performance) = answer_section(key, answer)?;
    let details: DetailsIn = from_section(key, "details", details)?;
    let descriptor_kind = match details.descriptor {
        Descriptor::Op(_) => RecordKind::Op,
        Descriptor::Graph(_) => RecordKind::Graph,
        Descriptor::Gradient(_) => RecordKind::Gradient,
    };
    if descriptor_kind != kind {
        return Err(damaged(key, Damage::KindMismatch));
    }
    Ok(Record {
        key_schema_version: h.key_schema_version,
        kind,
        descriptor: details.descriptor,
        options: details.options,
        strategy,
        performance,
        provenance: details.provenance,
    })
}

/// Decodes only the strategy and performance of the record stored under `key`: what a hit
/// returns. A format-2 value is verified by its header and its answer checksum, which covers
/// the key, the header's first 16 bytes and the answer section; the details section is neither read nor
/// verified ([`decode`] does both). A format-1 value is verified whole. Every bit this returns
/// (and every header byte it relies on) is covered by a checksum it verifies.
///
/// Errors are those of [`decode`]; a value whose damage lies only in the details section
/// decodes here and fails in [`decode`].
pub fn decode_answer(key: &BankKey, value: &[u8]) -> Result<Answer, RecordError> {
    let (key_schema_version, kind, answer) = verified_answer(key, value)?;
    let (strategy, performance) = answer_section(key, answer)?;
    Ok(Answer {
        key_schema_version,
        kind,
        strategy,
        performance,
    })
}

/// [`decode_answer`] in place: the same verification, the same answer, with the strategy left
/// in the value's bytes where the hit path's parser knows the encoding (see
/// [`AnswerRef`]). Errors are those of [`decode_answer`].
pub fn decode_answer_ref<'a>(key: &BankKey, value: &'a [u8]) -> Result<AnswerRef<'a>, RecordError> {
    let (key_schema_version, kind, answer) = verified_answer(key, value)?;
    let (strategy, performance) = match super::fast::answer_packed(answer) {
        Some((packed, performance)) => (StrategyRef::Packed(packed), performance),
        None => {
            let a: AnswerIn = from_section(key, "answer", answer)?;
            (StrategyRef::Owned(a.strategy), a.performance)
        }
    };
    Ok(AnswerRef {
        key_schema_version,
        kind,
        strategy,
        performance,
    })
}

/// The header facts and the answer section of `value`, after verifying what covers them: the
/// answer checksum of format 2, the whole value of format 1.
fn verified_answer<'a>(
    key: &BankKey,
    value: &'a [u8],
) -> Result<(u32, RecordKind, &'a [u8]), RecordError> {
    let h = header(key, value)?;
    if h.version == 1 {
        check_whole(key, value, &h)?;
    } else {
        check_answer(key, value, &h)?;
    }
    let kind = kind(key, &h)?;
    let (answer, _) = split_section(key, h.body, HEADER_LEN, value.len())?;
    Ok((h.key_schema_version, kind, answer))
}
