//! Arbitrary bytes as a stored record value: decoding must return a value or an error, never
//! panic. Odd first bytes seal the rest with a valid header and checksums (ARCHITECTURE.md,
//! "Record value"; format 1 when bit 3 is set, else the current format) so that the section
//! parsing behind the checksums is exercised too. The rest is also fed to the hit path's fast
//! answer parser, which must agree with the generic (serde) decoding wherever it answers, and
//! the in-place answer must say what the owned answer says.
#![no_main]
use libfuzzer_sys::fuzz_target;
use tunebank::bank::{
    decode, decode_answer, decode_answer_ref, decode_answer_section_fast, decode_answer_section_generic, seal,
    RECORD_FORMAT_VERSION,
};
use tunebank::key::BankKey;

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let key = BankKey([mode; 32]);
    let value = if mode & 1 == 0 {
        rest.to_vec()
    } else {
        let version = if mode & 8 != 0 { 1 } else { RECORD_FORMAT_VERSION };
        seal(&key, version, 1, (mode >> 1) % 4, rest)
    };
    let full = decode(&key, &value);
    let answer = decode_answer(&key, &value);
    match (decode_answer_ref(&key, &value), &answer) {
        (Ok(inplace), Ok(owned)) => {
            // Compared as text: a NaN sample is equal to itself only there.
            assert_eq!(format!("{:?}", inplace.to_answer()), format!("{owned:?}"));
            let mut json = Vec::new();
            inplace.strategy.write_json(&mut json);
            assert_eq!(json, serde_json::to_vec(&owned.strategy).unwrap());
        }
        (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string()),
        (a, b) => panic!("in place {a:?}, owned {b:?}"),
    }
    // A decodable record has a decodable answer, the same one; both name the key when they
    // fail. (A hit verifies only what it returns, so an answer may decode where the record
    // does not.)
    if let Ok(record) = &full {
        let answer = answer.as_ref().expect("a decodable record has a decodable answer");
        assert_eq!(answer.strategy, record.strategy);
        assert_eq!(answer.performance, record.performance);
    }
    for e in [full.err(), answer.err()].into_iter().flatten() {
        assert_eq!(e.key(), &key);
    }
    if let Some(fast) = decode_answer_section_fast(rest) {
        assert_eq!(Ok(fast), decode_answer_section_generic(&key, rest));
    }
});
