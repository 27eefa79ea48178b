use std::path::Path;

use super::*;

/// A deliberately naive reader (no sections merged, no trimming rules shared with `Ini`): the
/// value of `key` in `[section]` of `text`.
fn naive(text: &str, section: &str, key: &str) -> Option<String> {
    let mut inside = false;
    let mut found = None;
    for line in text.lines() {
        let l = line.trim();
        if l.starts_with('[') {
            inside = l == format!("[{section}]");
        } else if inside {
            if let Some(v) = l.strip_prefix(&format!("{key}=")) {
                found = Some(v.to_string());
            }
        }
    }
    found
}

fn num(text: &str, section: &str, key: &str) -> Option<u64> {
    naive(text, section, key).and_then(|v| v.parse().ok())
}

/// Every embedded file parses, is named by its `SoC_version`, and the figures the key table
/// and the simulator read are the file's own (checked against a naive reader of the same
/// text): 45 SoCs of CANN 8.1.
#[test]
fn every_embedded_file_parses_and_gives_its_own_figures() {
    assert_eq!(embedded::EMBEDDED.len(), 45);
    assert_eq!(embedded().len(), 45);
    for ((name, text), p) in embedded::EMBEDDED.iter().zip(embedded()) {
        assert_eq!(&p.version, name, "file named by its SoC_version");
        assert_eq!(p.source, PlatformSource::Embedded);
        let n = |s, k| num(text, s, k);
        assert_eq!(
            Some(u64::from(p.ai_cores)),
            n("SoCInfo", "ai_core_cnt"),
            "{name}"
        );
        assert_eq!(
            u64::from(p.vector_cores),
            n("SoCInfo", "vector_core_cnt").unwrap_or(0),
            "{name}"
        );
        assert_eq!(Some(p.cube_mhz), n("AICoreSpec", "cube_freq"), "{name}");
        assert_eq!(p.vector_mhz, n("VectorCoreSpec", "vec_freq"), "{name}");
        for (got, key) in [
            (p.l0a, "l0_a_size"),
            (p.l0b, "l0_b_size"),
            (p.l0c, "l0_c_size"),
            (p.l1, "l1_size"),
            (p.ub, "ub_size"),
        ] {
            assert_eq!(Some(got), n("AICoreSpec", key), "{name} {key}");
        }
        assert_eq!(p.l2, n("SoCInfo", "l2_size").unwrap_or(0), "{name}");
        for (got, key) in [
            (p.rates.ddr_read, "ddr_read_rate"),
            (p.rates.ddr_write, "ddr_write_rate"),
            (p.rates.l2_read, "l2_read_rate"),
            (p.rates.l2_write, "l2_write_rate"),
            (p.rates.l1_to_l0a, "l1_to_l0_a_rate"),
            (p.rates.l1_to_l0b, "l1_to_l0_b_rate"),
        ] {
            assert_eq!(
                got,
                n("AICoreMemoryRates", key).map(|v| v as f64),
                "{name} {key}"
            );
        }
        let mmad = text
            .lines()
            .find(|l| l.contains("=Intrinsic_mmad|"))
            .unwrap_or("");
        assert_eq!(p.cube_fp32, mmad.contains("f32f32f32"), "{name}");
        assert_eq!(
            p.cube_nd,
            text.contains("Intrinsic_data_move_out2l1_nd2nz"),
            "{name}"
        );
        assert_eq!(
            p.fixpipe,
            text.contains("=Intrinsic_fix_pipe_l0c2out|"),
            "{name}"
        );
        let short = naive(text, "version", "Short_SoC_version").unwrap_or_default();
        assert_eq!(p.family, short.to_lowercase(), "{name}");
    }
}

/// The capabilities the key table had before it was read from the files hold for the SoCs
/// it had (so their keys do not move), except the 310B1's, whose file gives the v300 core's
/// bf16 conversions and ND→NZ loads.
#[test]
fn capabilities_of_the_known_socs() {
    let caps = |v: &str| {
        let p = embedded_for(v).unwrap();
        (p.ai_cores, p.cube_fp32, p.bf16, p.cube_nd)
    };
    for v in ["Ascend910B1", "Ascend910B2", "Ascend910B2C", "Ascend910B3"] {
        assert!(matches!(caps(v), (20 | 24, true, true, true)), "{v}");
    }
    assert_eq!(caps("Ascend910B4"), (20, true, true, true));
    for v in ["Ascend910A", "Ascend910ProA", "Ascend910PremiumA"] {
        assert_eq!(caps(v), (32, false, false, false), "{v}");
    }
    assert_eq!(caps("Ascend310"), (2, false, false, false));
    assert_eq!(caps("Ascend310P1"), (10, false, false, false));
    assert_eq!(caps("Ascend310P3"), (8, false, false, false));
    assert_eq!(caps("Ascend310B1"), (1, false, true, true));
    // The fixpipe (CANN's MatMulV2 bias rule) and the op-information family.
    let facts = |v: &str| {
        let p = embedded_for(v).unwrap();
        (p.fixpipe, p.family.as_str())
    };
    assert_eq!(facts("Ascend910B2"), (true, "ascend910b"));
    assert_eq!(facts("Ascend910_9382"), (true, "ascend910_93"));
    assert_eq!(facts("Ascend310B1"), (true, "ascend310b"));
    assert_eq!(facts("Ascend310P3"), (false, "ascend310p"));
    assert_eq!(facts("Ascend910A"), (false, "ascend910"));
    assert_eq!(facts("Ascend610"), (false, "ascend610"));
    assert_eq!(embedded_for("ascend910b2").unwrap().version, "Ascend910B2");
    assert!(embedded_for("Ascend920").is_none());
}

/// A fake install tree holding one SoC's file with a changed clock.
fn install(root: &Path, arch: &str, version: &str, mhz: u64) -> PathBuf {
    let dir = root.join(format!("{arch}-linux/data/platform_config"));
    std::fs::create_dir_all(&dir).unwrap();
    let text = embedded::EMBEDDED
        .iter()
        .find(|(n, _)| *n == version)
        .unwrap()
        .1
        .replace("cube_freq=1800", &format!("cube_freq={mhz}"));
    let path = dir.join(format!("{version}.ini"));
    std::fs::write(&path, text).unwrap();
    path
}

fn env(root: &Path) -> Env {
    Env {
        ascend_home_path: None,
        ascend_toolkit_home: None,
        home: None,
        system_root: root.join("system"),
    }
}

fn mhz(f: &Found) -> (u64, PlatformSource) {
    (f.platform().cube_mhz, f.platform().source.clone())
}

/// ATC's order: a named file or folder, then `ASCEND_HOME_PATH`, else `ASCEND_TOOLKIT_HOME`,
/// else the default install paths (system, then the user's), each under `<arch>-linux/`, then
/// the built-in copy.
#[test]
fn the_search_follows_atcs_order() {
    let d = tempfile::tempdir().unwrap();
    let root = d.path();
    let v = "Ascend910B2";
    let mut e = env(root);
    let f = search(v, None, &e).unwrap();
    assert_eq!(mhz(&f), (1800, PlatformSource::Embedded));

    let system = install(
        &root.join("system/ascend-toolkit/latest"),
        "aarch64",
        v,
        1001,
    );
    assert_eq!(
        mhz(&search(v, None, &e).unwrap()),
        (1001, PlatformSource::Installed(system))
    );
    e.home = Some(root.join("home"));
    let user = install(
        &root.join("home/Ascend/ascend-toolkit/latest"),
        "x86_64",
        v,
        1002,
    );
    // The system install comes first.
    assert_eq!(search(v, None, &e).unwrap().platform().cube_mhz, 1001);
    std::fs::remove_dir_all(root.join("system")).unwrap();
    assert_eq!(
        mhz(&search(v, None, &e).unwrap()),
        (1002, PlatformSource::Installed(user))
    );

    let tk = install(&root.join("toolkit"), "x86_64", v, 1003);
    e.ascend_toolkit_home = Some(root.join("toolkit"));
    assert_eq!(
        mhz(&search(v, None, &e).unwrap()),
        (1003, PlatformSource::Installed(tk))
    );
    let home = install(&root.join("ascend_home"), "aarch64", v, 1004);
    e.ascend_home_path = Some(root.join("ascend_home"));
    assert_eq!(
        mhz(&search(v, None, &e).unwrap()),
        (1004, PlatformSource::Installed(home))
    );
    // ASCEND_HOME_PATH without the SoC's file: the built-in copy, not the toolkit home.
    assert_eq!(
        mhz(&search("Ascend910B3", None, &e).unwrap()),
        (1800, PlatformSource::Embedded)
    );

    // A named file wins; a named folder without the file falls through.
    let given = install(&root.join("given"), "x86_64", v, 1005);
    assert_eq!(
        mhz(&search(v, Some(&given), &e).unwrap()),
        (1005, PlatformSource::Given(given.clone()))
    );
    let folder = given.parent().unwrap();
    assert_eq!(
        search(v, Some(folder), &e).unwrap().platform().cube_mhz,
        1005
    );
    assert_eq!(
        search("Ascend910B3", Some(folder), &e)
            .unwrap()
            .platform()
            .source,
        PlatformSource::Embedded
    );
}

/// Bad files are errors naming the file and what is wrong: a syntax error with its line, a
/// missing figure with its section and key, a file of another SoC, an unknown SoC listing the
/// known ones, an unreadable path.
#[test]
fn bad_files_are_named() {
    let d = tempfile::tempdir().unwrap();
    let e = env(d.path());
    let v = "Ascend910B2";
    let bad = d.path().join("bad.ini");
    std::fs::write(
        &bad,
        "[version]\nSoC_version=Ascend910B2\nthis line is wrong\n",
    )
    .unwrap();
    let m = search(v, Some(&bad), &e).err().unwrap().to_string();
    assert!(
        m.contains("bad.ini: line 3") && m.contains("key=value"),
        "{m}"
    );

    std::fs::write(
        &bad,
        "[version]\nSoC_version=Ascend910B2\n[SoCInfo]\nai_core_cnt=x\n",
    )
    .unwrap();
    let m = search(v, Some(&bad), &e).err().unwrap().to_string();
    assert!(
        m.contains("[SoCInfo] ai_core_cnt") && m.contains("\"x\""),
        "{m}"
    );

    let b3 = install(&d.path().join("t"), "x86_64", "Ascend910B3", 1800);
    let err = search(v, Some(&b3), &e).err().unwrap();
    assert!(
        matches!(&err, PlatformError::OtherSoc { found, .. } if found == "Ascend910B3"),
        "{err}"
    );
    assert_eq!(err.kind(), FailureKind::Input);

    let err = search("Ascend920", None, &e).err().unwrap();
    let m = err.to_string();
    assert!(
        m.contains("Ascend920") && m.contains("Ascend910_9391") && m.contains("SD3403"),
        "{m}"
    );

    let err = search(v, Some(&d.path().join("missing.ini")), &e)
        .err()
        .unwrap();
    assert_eq!(err.kind(), FailureKind::Io);
    assert!(err.to_string().contains("missing.ini"), "{err}");
}
