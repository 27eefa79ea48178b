use std::path::Path;

use super::*;
use crate::Environment;

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

/// A process environment in a test: a snapshot, and where the default install lives (a
/// temporary folder standing for `/usr/local/Ascend/ascend-toolkit/latest`).
struct Machine {
    env: Environment,
    system: PathBuf,
}

impl Machine {
    fn set(&mut self, name: &str, value: &Path) {
        self.env = self.env.clone().with(name, value);
    }

    /// The search of this machine: the snapshot's toolkit roots, the default install moved.
    fn search(&self, given: Option<&Path>) -> PlatformSearch {
        let roots = self
            .env
            .toolkit_roots()
            .into_iter()
            .map(|r| {
                if r == Path::new(crate::DEFAULT_TOOLKIT_ROOT) {
                    self.system.clone()
                } else {
                    r
                }
            })
            .collect();
        PlatformSearch::with_roots(given, roots)
    }
}

fn env(root: &Path) -> Machine {
    Machine {
        env: Environment::empty(),
        system: root.join("system/ascend-toolkit/latest"),
    }
}

/// ATC's search as [`search`] runs it under `m` (uncached).
fn find(v: &str, given: Option<&Path>, m: &Machine) -> Result<Found, PlatformError> {
    search(v, &m.search(given))
}

fn mhz(f: &Found) -> (u64, PlatformSource) {
    (f.platform().cube_mhz, f.platform().source.clone())
}

/// AOE's order, the one `aoe.ini` is searched in: a named file or folder, then the first
/// toolkit root holding the SoC's file of `$ASCEND_TOOLKIT_HOME`, `$ASCEND_HOME_PATH`,
/// `$HOME/Ascend/ascend-toolkit/latest` and the default install, each under `<arch>-linux/`,
/// then the built-in copy. Each step is shown by a file that beats the ones before it, and a
/// root without the file passes on to the next.
#[test]
fn the_search_follows_aoes_order() {
    let d = tempfile::tempdir().unwrap();
    let root = d.path();
    let v = "Ascend910B2";
    let mut m = env(root);
    assert_eq!(
        mhz(&find(v, None, &m).unwrap()),
        (1800, PlatformSource::Embedded)
    );

    let system = install(&m.system, "aarch64", v, 1001);
    assert_eq!(
        mhz(&find(v, None, &m).unwrap()),
        (1001, PlatformSource::Installed(system.clone()))
    );
    m.set("HOME", &root.join("home"));
    let user = install(
        &root.join("home/Ascend/ascend-toolkit/latest"),
        "x86_64",
        v,
        1002,
    );
    // The user's install comes before the default one.
    assert_eq!(
        mhz(&find(v, None, &m).unwrap()),
        (1002, PlatformSource::Installed(user.clone()))
    );
    let home = install(&root.join("ascend_home"), "aarch64", v, 1003);
    m.set("ASCEND_HOME_PATH", &root.join("ascend_home"));
    assert_eq!(
        mhz(&find(v, None, &m).unwrap()),
        (1003, PlatformSource::Installed(home))
    );
    let tk = install(&root.join("toolkit"), "x86_64", v, 1004);
    m.set("ASCEND_TOOLKIT_HOME", &root.join("toolkit"));
    assert_eq!(
        mhz(&find(v, None, &m).unwrap()),
        (1004, PlatformSource::Installed(tk))
    );
    // A root without the SoC's file passes on to the next: the 910B3's is only the user's.
    install(
        &root.join("home/Ascend/ascend-toolkit/latest"),
        "aarch64",
        "Ascend910B3",
        1005,
    );
    assert_eq!(
        find("Ascend910B3", None, &m).unwrap().platform().cube_mhz,
        1005
    );
    std::fs::remove_dir_all(root.join("home")).unwrap();
    assert_eq!(
        mhz(&find("Ascend910B3", None, &m).unwrap()),
        (1800, PlatformSource::Embedded)
    );

    // A named file wins; a named folder without the file falls through to the roots.
    let given = install(&root.join("given"), "x86_64", v, 1006);
    assert_eq!(
        mhz(&find(v, Some(&given), &m).unwrap()),
        (1006, PlatformSource::Given(given.clone()))
    );
    let folder = given.parent().unwrap();
    assert_eq!(find(v, Some(folder), &m).unwrap().platform().cube_mhz, 1006);
    assert_eq!(
        find("Ascend910B3", Some(folder), &m)
            .unwrap()
            .platform()
            .source,
        PlatformSource::Embedded
    );
    std::fs::remove_dir_all(root.join("toolkit")).unwrap();
    assert_eq!(
        find(v, Some(&root.join("nothing")), &m).unwrap_err().kind(),
        FailureKind::Io
    );
    assert_eq!(find(v, None, &m).unwrap().platform().cube_mhz, 1003);
}

/// A job selects what its search finds for its SoC before the simulator models it: the same
/// answer again is fine, another one is refused with both origins named; a SoC nobody selected
/// is read under an empty environment. The search caches per search and version.
#[test]
fn the_simulator_keeps_the_facts_a_job_selected() {
    let d = tempfile::tempdir().unwrap();
    let m = env(d.path());
    let v = "Ascend910B3";
    let given = install(&d.path().join("given"), "x86_64", v, 1000);
    let named = m.search(Some(&given));
    assert!(std::ptr::eq(
        named.resolve(v).unwrap(),
        named.resolve(v).unwrap()
    ));
    select(v, &named).unwrap();
    select(v, &named).unwrap();
    assert_eq!(resolve(v).unwrap().cube_mhz, 1000);
    assert_eq!(
        platform_source(v).unwrap(),
        PlatformSource::Given(given.clone())
    );
    let conflict = select(v, &m.search(None)).unwrap_err();
    assert_eq!(conflict.version, v);
    assert_eq!(conflict.in_use, given.display().to_string());
    assert_eq!(conflict.wanted, PlatformSource::Embedded.to_string());
    assert!(
        conflict.to_string().contains("a process of its own"),
        "{conflict}"
    );
    // Another SoC, never selected: the built-in copy (no toolkit at the default install here),
    // which a search finding the same file may select again.
    let other = "Ascend910B4";
    if !Path::new(crate::DEFAULT_TOOLKIT_ROOT).exists() {
        assert_eq!(platform_source(other).unwrap(), PlatformSource::Embedded);
        select(other, &m.search(None)).unwrap();
    }
}

/// Bad files are errors naming the file and what is wrong: a syntax error with its line, a
/// missing figure with its section and key, a file of another SoC, an unknown SoC listing the
/// known ones, an unreadable path.
#[test]
fn bad_files_are_named() {
    let d = tempfile::tempdir().unwrap();
    let e = env(d.path());
    let search = |v: &str, given: Option<&Path>, e: &Machine| find(v, given, e);
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

/// Each framework's training default per SoC, against what each source states of named
/// products: TF Adapter sets `allow_fp32_to_fp16` for every training graph; MindSpore's
/// documentation names the Atlas training series (the 910A family) `allow_fp32_to_fp16` and
/// Atlas A2 (the 910B family) and other products `must_keep_origin_dtype`; GE's training
/// default follows the cube's high-precision float32 (`f322f32`), which the 910B and 910_93
/// families and the 310B have and the 910A and 310P do not (torch_npu's own rule, "Ascend910B1
/// and later", gives the same answers on these).
#[test]
fn each_framework_trains_under_its_own_default_per_soc() {
    use TrainingRun::*;
    let mode = |run, soc: &str| training_precision_mode(run, soc).unwrap();
    for soc in [
        "Ascend910A",
        "Ascend910ProB",
        "Ascend910B2",
        "Ascend910_9392",
        "Ascend310P3",
    ] {
        assert_eq!(mode(TensorFlow, soc), "allow_fp32_to_fp16", "{soc}");
    }
    for (soc, ms, ge) in [
        ("Ascend910A", "allow_fp32_to_fp16", "allow_fp32_to_fp16"),
        (
            "Ascend910PremiumA",
            "allow_fp32_to_fp16",
            "allow_fp32_to_fp16",
        ),
        ("Ascend910ProB", "allow_fp32_to_fp16", "allow_fp32_to_fp16"),
        (
            "Ascend910B1",
            "must_keep_origin_dtype",
            "must_keep_origin_dtype",
        ),
        (
            "Ascend910B2",
            "must_keep_origin_dtype",
            "must_keep_origin_dtype",
        ),
        (
            "Ascend910B4",
            "must_keep_origin_dtype",
            "must_keep_origin_dtype",
        ),
        (
            "Ascend910_9392",
            "must_keep_origin_dtype",
            "must_keep_origin_dtype",
        ),
        (
            "Ascend310B1",
            "must_keep_origin_dtype",
            "must_keep_origin_dtype",
        ),
        (
            "Ascend310P3",
            "must_keep_origin_dtype",
            "allow_fp32_to_fp16",
        ),
    ] {
        assert_eq!(mode(MindSpore, soc), ms, "MindSpore on {soc}");
        assert_eq!(mode(GeGraph, soc), ge, "GE graph mode on {soc}");
    }
    // The high-precision flag is read from the AI core's table only: the 310B's cube lists
    // f322f32 but not f32f32f32.
    let b = embedded_for("Ascend310B1").unwrap();
    assert!(b.cube_high_precision && !b.cube_fp32);
    assert_eq!(TrainingRun::parse("MindSpore"), Some(MindSpore));
    assert_eq!(TrainingRun::parse("torch"), Some(GeGraph));
    assert_eq!(TrainingRun::parse("caffe"), None);
    let err = training_precision_mode(MindSpore, "Ascend920")
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("Ascend920") && err.contains("Ascend910B2"),
        "{err}"
    );
}
