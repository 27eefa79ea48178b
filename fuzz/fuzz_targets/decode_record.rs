//! Arbitrary bytes as a stored record value: decoding must return a value or an error, never
//! panic. Half the inputs are sealed with a valid header and checksum (as `FORMAT.md` specifies)
//! so that the section parsing behind the checksum is exercised too.
#![no_main]
use libfuzzer_sys::fuzz_target;
use tunebank::bank::record::{decode, decode_answer, RECORD_FORMAT_VERSION, RECORD_MAGIC};
use tunebank::key::BankKey;

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let key = BankKey([mode; 32]);
    let value = if mode & 1 == 0 {
        rest.to_vec()
    } else {
        // Header: magic, version, key schema version, kind, flags, body length, checksum.
        let mut v = Vec::with_capacity(48 + rest.len());
        v.extend_from_slice(&RECORD_MAGIC);
        v.extend_from_slice(&RECORD_FORMAT_VERSION.to_le_bytes());
        v.extend_from_slice(&1u32.to_le_bytes());
        v.push((mode >> 1) % 4);
        v.push(0);
        v.extend_from_slice(&(rest.len() as u32).to_le_bytes());
        let mut hasher = blake3::Hasher::new();
        hasher.update(&key.0);
        hasher.update(&v[..16]);
        hasher.update(rest);
        v.extend_from_slice(hasher.finalize().as_bytes());
        v.extend_from_slice(rest);
        v
    };
    let full = decode(&key, &value);
    let answer = decode_answer(&key, &value);
    // A value is a record exactly when its answer is; both name the key when they fail.
    if let Ok(record) = &full {
        let answer = answer.as_ref().expect("a decodable record has a decodable answer");
        assert_eq!(answer.strategy, record.strategy);
    }
    for e in [full.err(), answer.err()].into_iter().flatten() {
        assert_eq!(e.key(), &key);
    }
});
