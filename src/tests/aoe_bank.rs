//! AOE's built-in bank through the library: the committed sample of AOE's Ascend910B1 MatMul
//! bank (`fixtures/ascend/Ascend910B1_matmul_unified_bank.sample.json`, eight real records)
//! parses and imports with real descriptors and mapped tilings. The command lines over it
//! (`lookup`, `convert`, `bank import|export --aoe`, `calibrate --aoe`) are `tests/it/aoe_bank.rs`.

use std::path::{Path, PathBuf};

use prost::Message;
use tunebank::bank::interchange::aoe::{import_aoe, parse_unified_bank};
use tunebank::bank::{Bank, Descriptor, Origin};
use tunebank::key::{RecordKind, SocSpec};

pub(super) const SOC: &str = "Ascend910B1";

pub(super) fn sample_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/ascend/Ascend910B1_matmul_unified_bank.sample.json")
}

#[test]
fn the_sample_imports_with_descriptors_and_tilings() {
    let dir = tempfile::tempdir().unwrap();
    let parsed = parse_unified_bank(&std::fs::read_to_string(sample_path()).unwrap()).unwrap();
    assert_eq!(parsed.accepted.len(), 8);
    let bank = Bank::builder(RecordKind::Op, SOC)
        .custom_path(dir.path().join("b.redb"))
        .open()
        .unwrap();
    let soc = SocSpec::from_version(SOC).unwrap();
    let report = import_aoe(&bank, &parsed, &soc, Origin::Imported, 0).unwrap();
    assert_eq!(report.mapped, 8, "{:?}", report.unmapped);
    assert!(report.unmapped.is_empty());
    assert_eq!(report.tilings, 8, "{:?}", report.untiled);
    assert_eq!(report.merge.added, 8);
    for (_, rec) in bank.custom_layer().unwrap().records().unwrap().records {
        let Descriptor::Op(d) = &rec.descriptor else {
            panic!("op records")
        };
        assert!(d.op_type.ends_with("MatMulV2"), "{}", d.op_type);
        assert!(!d.attrs.contains_key("aoe_info_dict_md5"), "a placeholder");
        assert!(rec.strategy.contains_key("aoe_knowledge"));
        assert!(rec.strategy["baseM"].as_i64().unwrap() % 16 == 0);
        assert_eq!(rec.performance.runner, "aoe");
    }
    // The JSON summary counts mapped and placeholder entries.
    let json = serde_json::to_value(&report).unwrap();
    assert_eq!(json["mapped"], 8);
    assert_eq!(json["placeholders"], 0);
}

#[derive(Clone, PartialEq, Message)]
struct DimProto {
    #[prost(int64, optional, tag = "1")]
    dim_value: Option<i64>,
}
