//! The core count an AOE `unified_bank` file was tuned on: provenance of its records, not key.
//!
//! AOE keeps its op banks per core count: a SoC's built-in file is named
//! `<SoC>_<N>_AiCore_<op>.json` (`_<N>_VectorCore_` for the vector cores), `N` the cores it was
//! tuned on, which need not be the SoC description file's count (Ascend910B1's shared MatMul
//! bank is `Ascend910B1_25_AiCore_matmul.json` while `Ascend910B1.ini` says `ai_core_cnt=24`).
//! An import records `N` (from the name, or given when a copy was renamed) in each record's
//! options as [`CORE_COUNT_OPTION`], beside `soc_version`, so the record format does not change.
//!
//! The records stay keyed by the import's SoC spec (the built-in description file's
//! `ai_core_cnt`, or `--aicore_num`), never by `N`: a converter on the 24-core part derives its
//! keys with 24 cores, so records keyed for 25 would never be hit; and a tiling split over more
//! blocks than there are cores still runs, its blocks in waves (the simulator models that, see
//! `CoreShare` in `measure::sim::cube::pipeline`), so the board's tiling is an answer for the
//! cores the key names. `N` is kept for people and for calibration: `bank-inspect show` prints
//! it beside the count the record is keyed for.

use std::num::NonZeroU32;
use std::path::Path;

use serde::Serialize;

use crate::record::Record;
use crate::MaintenanceError;
use tunebank_key::SocSpec;

/// The record option holding the core count of the bank file an AOE record was imported from
/// (decimal, ≥ 1); absent when the file did not say and none was given.
pub(crate) const CORE_COUNT_OPTION: &str = "aoe_core_count";

/// The core types AOE names its bank files by (`key::soc`'s `core_type` values).
const CORE_TYPES: [&str; 2] = [tunebank_key::AI_CORE, tunebank_key::VECTOR_CORE];

/// What a file name in AOE's pattern `<SoC>_<N>_<core type>_…` says, as written: `soc` and
/// `count` are empty when the name has nothing before the core type.
#[derive(Debug, PartialEq, Eq)]
struct Named {
    soc: String,
    count: String,
    core_type: &'static str,
}

/// The parts of `file_name` when it follows AOE's pattern: the first `_`-separated part that is a
/// core type and is followed by another part. `None` when no part is (a renamed copy).
fn named(file_name: &str) -> Option<Named> {
    let parts: Vec<&str> = file_name.split('_').collect();
    let (i, core_type) = parts
        .iter()
        .enumerate()
        .take(parts.len().saturating_sub(1))
        .find_map(|(i, p)| CORE_TYPES.iter().find(|t| *t == p).map(|t| (i, *t)))?;
    Some(Named {
        soc: parts[..i.saturating_sub(1)].join("_"),
        count: if i == 0 {
            String::new()
        } else {
            parts[i - 1].to_owned()
        },
        core_type,
    })
}

/// The core count of the AOE bank file at `path`, imported for `soc`: `given` when it is, else
/// what the file name says, else `None` (a name that does not follow AOE's pattern). A name in
/// the pattern must name `soc`'s version (ASCII case aside) and core type, and, when `given` is
/// `None`, a decimal count ≥ 1; otherwise [`MaintenanceError::AoeFileName`] names the file, what
/// its name says and what was expected. Only the name is read.
pub fn file_core_count(
    path: &Path,
    soc: &SocSpec,
    given: Option<NonZeroU32>,
) -> Result<Option<u32>, MaintenanceError> {
    let Some(n) = path.file_name().and_then(|f| f.to_str()).and_then(named) else {
        return Ok(given.map(NonZeroU32::get));
    };
    let refuse = |found: String, expected: String| MaintenanceError::AoeFileName {
        path: path.to_owned(),
        found,
        expected,
    };
    let pattern = format!("{}_<N>_{}_…", soc.version, soc.core_type);
    if n.soc.is_empty() || !n.soc.eq_ignore_ascii_case(&soc.version) {
        return Err(refuse(
            format!("SoC {:?}", n.soc),
            format!("{} (--soc_version), as in {pattern}", soc.version),
        ));
    }
    if n.core_type != soc.core_type {
        return Err(refuse(
            format!("core type {}", n.core_type),
            format!("{} (--core_type), as in {pattern}", soc.core_type),
        ));
    }
    if let Some(g) = given {
        return Ok(Some(g.get()));
    }
    match n.count.parse::<NonZeroU32>() {
        Ok(c) if n.count.bytes().all(|b| b.is_ascii_digit()) => Ok(Some(c.get())),
        _ => Err(refuse(
            format!("core count {:?}", n.count),
            format!(
                "a core count of at least 1, as in {pattern} (or --aoe-core-count N to give it)"
            ),
        )),
    }
}

/// The core counts of an AOE record or import, as `bank-inspect show` and the import report's
/// JSON write them: `{"bank_file", "core_type", "keyed"}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Cores<'a> {
    /// The count the bank file was tuned on.
    pub(crate) bank_file: u32,
    /// The core type both counts are of.
    pub(crate) core_type: &'a str,
    /// The count the records are keyed for (the SoC spec's).
    pub(crate) keyed: u32,
}

impl Cores<'_> {
    /// The bank-file core count recorded in `record` (`CORE_COUNT_OPTION`) with the count its
    /// descriptor is keyed for; `None` for a record without one (or not an op record).
    pub fn of_record(record: &Record) -> Option<Cores<'_>> {
        let crate::record::Descriptor::Op(d) = &record.descriptor else {
            return None;
        };
        let bank_file = record.options.get(CORE_COUNT_OPTION)?.parse().ok()?;
        Some(Cores {
            bank_file,
            core_type: &d.soc.core_type,
            keyed: d.soc.core_count,
        })
    }
}

impl std::fmt::Display for Cores<'_> {
    /// `tuned on 25 AiCore (bank file); keyed for 24`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "tuned on {} {} (bank file); keyed for {}",
            self.bank_file, self.core_type, self.keyed
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn soc() -> SocSpec {
        SocSpec::from_version("Ascend910B1").unwrap()
    }

    fn count(name: &str, given: Option<u32>) -> Result<Option<u32>, String> {
        let path = Path::new("/banks").join(name);
        file_core_count(&path, &soc(), given.and_then(NonZeroU32::new)).map_err(|e| e.to_string())
    }

    #[test]
    fn names_in_the_pattern_give_their_count() {
        assert_eq!(
            count("Ascend910B1_25_AiCore_matmul.json", None),
            Ok(Some(25))
        );
        assert_eq!(count("ascend910b1_7_AiCore_conv2d.json", None), Ok(Some(7)));
        assert_eq!(
            count("Ascend910B1_25_AiCore_matmul.json", Some(20)),
            Ok(Some(20))
        );
    }

    #[test]
    fn other_names_give_nothing_or_what_is_given() {
        assert_eq!(
            count("Ascend910B1_matmul_unified_bank.dev.json", None),
            Ok(None)
        );
        assert_eq!(
            count("Ascend910B1_matmul_unified_bank.dev.json", Some(25)),
            Ok(Some(25))
        );
        // The core type must be a whole part followed by another.
        assert_eq!(count("Ascend910B1_25_AiCore.json", None), Ok(None));
        assert_eq!(count("Ascend910B1_25_AiCores_mm.json", None), Ok(None));
    }

    #[test]
    fn a_name_that_does_not_fit_is_refused_naming_the_file() {
        let e = count("Ascend910B2_24_AiCore_matmul.json", None).unwrap_err();
        assert!(e.contains("Ascend910B2_24_AiCore_matmul.json"), "{e}");
        assert!(
            e.contains("\"Ascend910B2\"") && e.contains("Ascend910B1 (--soc_version)"),
            "{e}"
        );
        // The SoC is checked even when the count is given.
        assert!(count("Ascend910B2_24_AiCore_matmul.json", Some(24)).is_err());
        for bad in ["0", "x", "-3", "+3", ""] {
            let e = count(&format!("Ascend910B1_{bad}_AiCore_mm.json"), None).unwrap_err();
            assert!(e.contains(&format!("core count {bad:?}")), "{e}");
        }
        // A given count stands in for a malformed one.
        assert_eq!(count("Ascend910B1_x_AiCore_mm.json", Some(3)), Ok(Some(3)));
        let e = count("Ascend910B1_25_VectorCore_add.json", None).unwrap_err();
        assert!(
            e.contains("core type VectorCore") && e.contains("AiCore (--core_type)"),
            "{e}"
        );
        assert!(count("25_AiCore_mm.json", None)
            .unwrap_err()
            .contains("SoC \"\""));
        assert!(count("AiCore_mm.json", None)
            .unwrap_err()
            .contains("SoC \"\""));
    }

    #[test]
    fn the_record_text_names_both_counts() {
        let c = Cores {
            bank_file: 25,
            core_type: "AiCore",
            keyed: 24,
        };
        assert_eq!(
            c.to_string(),
            "tuned on 25 AiCore (bank file); keyed for 24"
        );
    }
}
