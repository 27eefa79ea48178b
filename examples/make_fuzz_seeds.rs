//! Writes the committed seed corpora under `fuzz/seeds/<target>/` from the project's fixtures:
//! every record of `fixtures/banks/v1.redb` (for `decode_record`, in the target's sealed form),
//! every ONNX fixture model (`load_onnx`), the Caffe, TensorFlow and MindIR fixtures
//! (`load_caffe`, `load_tensorflow`, `load_mindir`), the single-operator descriptions
//! (`load_singleop`), the restrictions of the committed replay spaces and a
//! few integer ones (`parse_restriction`), ATC option lists (`parse_options`) and runner protocol
//! responses (`parse_response`).
//!
//! Usage, from the repository root: `cargo run --release --example make_fuzz_seeds`. Seeds are
//! small and deterministic; rerun after a fixture changes and commit the result.

use std::path::Path;

use tunebank::bank::store::{RedbStore, Store};
use tunebank::bank::{decode, encode, HEADER_LEN, RECORD_FORMAT_VERSION, RECORD_MAGIC};

fn write(target: &str, name: &str, bytes: &[u8]) -> std::io::Result<()> {
    let dir = Path::new("fuzz/seeds").join(target);
    std::fs::create_dir_all(&dir)?;
    std::fs::write(dir.join(name), bytes)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // decode_record: an odd first byte asks the target to seal the rest with a valid header
    // (kind = (mode >> 1) % 4; format 1 when bit 3 is set, else the current format); the seeds
    // are the fixture records' bodies behind their headers, sealed both ways, and the fixture's
    // format-1 values and their current-format re-encodings, raw.
    let kind_at = RECORD_MAGIC.len() + std::mem::size_of_val(&RECORD_FORMAT_VERSION) + 4;
    let store = RedbStore::open_read_only("fixtures/banks/v1.redb")?;
    let mut n = 0;
    store.scan(&mut |key, value| {
        let mode = 1 | (value[kind_at] << 1);
        for (name, mode) in [("v1_record", mode | 8), ("record", mode)] {
            let mut seed = vec![mode];
            seed.extend_from_slice(&value[HEADER_LEN..]);
            write("decode_record", &format!("{name}_{n}"), &seed).expect("write seed");
        }
        let record = decode(key, value).expect("the fixture bank is sound");
        for (name, value) in [("v1_raw", value.to_vec()), ("raw", encode(key, &record))] {
            let mut raw = vec![0u8];
            raw.extend_from_slice(&value);
            write("decode_record", &format!("{name}_{n}"), &raw).expect("write seed");
        }
        n += 1;
        std::ops::ControlFlow::Continue(())
    })?;

    for entry in std::fs::read_dir("fixtures/models")? {
        let p = entry?.path();
        if p.extension().is_some_and(|e| e == "onnx") {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            write("load_onnx", &name, &std::fs::read(&p)?)?;
        }
    }

    // Caffe: the prototxt, `\0\0`, the caffemodel (the load_caffe target's input format);
    // TensorFlow: each frozen graph; MindSpore: each MindIR file.
    let frameworks = Path::new("fixtures/models/frameworks");
    for entry in std::fs::read_dir(frameworks)? {
        let p = entry?.path();
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        match p.extension().and_then(|e| e.to_str()) {
            Some("prototxt") => {
                let mut seed = std::fs::read(&p)?;
                seed.extend_from_slice(b"\0\0");
                seed.extend(std::fs::read(p.with_extension("caffemodel"))?);
                write("load_caffe", &name, &seed)?;
            }
            Some("pb") => write("load_tensorflow", &name, &std::fs::read(&p)?)?,
            Some("mindir") => write("load_mindir", &name, &std::fs::read(&p)?)?,
            _ => {}
        }
    }

    // MindSpore training steps (TrainOneStepCells): their backward and optimizer primitives.
    for entry in std::fs::read_dir("fixtures/models/training")? {
        let p = entry?.path();
        if p.extension().and_then(|e| e.to_str()) == Some("mindir") {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            write("load_mindir", &name, &std::fs::read(&p)?)?;
        }
    }

    // PyTorch: each `.pt2` fixture's program JSON (the load_pt2 target stores non-ZIP input
    // as the archive's program).
    for entry in std::fs::read_dir("fixtures/models/pytorch")? {
        let p = entry?.path();
        if p.extension().and_then(|e| e.to_str()) == Some("pt2") {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            let mut zip = zip::ZipArchive::new(std::fs::File::open(&p)?)?;
            let entry = zip
                .file_names()
                .find(|n| n.ends_with("models/model.json"))
                .map(str::to_string)
                .ok_or("no models/model.json")?;
            let mut program = Vec::new();
            std::io::Read::read_to_end(&mut zip.by_name(&entry)?, &mut program)?;
            write("load_pt2", &format!("{name}.json"), &program)?;
        }
    }

    // Single-operator descriptions: each fixture file.
    for entry in std::fs::read_dir("fixtures/models/singleop")? {
        let p = entry?.path();
        if p.extension().and_then(|e| e.to_str()) == Some("json") {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            write("load_singleop", &name, &std::fs::read(&p)?)?;
        }
    }

    let mut restrictions: Vec<String> = vec![
        "baseM * baseN * 4 <= L0C".into(),
        "block_size_x * block_size_y >= 32 and block_size_x % 16 == 0".into(),
        "(a ** 2 + b // 3) % 7 != 0 or c in [1, 2, 4]".into(),
        "x < y <= z".into(),
    ];
    let replay = Path::new("search-strategies/fixtures/replay/benchmark_hub");
    if let Ok(dir) = std::fs::read_dir(replay) {
        for entry in dir {
            let p = entry?.path();
            if p.to_string_lossy().ends_with(".restrictions.json") {
                let list: Vec<String> = serde_json::from_str(&std::fs::read_to_string(&p)?)?;
                restrictions.extend(list);
            }
        }
    }
    for (i, r) in restrictions.iter().enumerate() {
        write("parse_restriction", &format!("r{i}"), r.as_bytes())?;
    }

    let options = [
        "--soc_version=Ascend910B2 --precision_mode=allow_fp32_to_fp16",
        "--soc_version=Ascend310P3 --input_shape=data:-1,64 --dynamic_batch_size=1,8",
        "--precision_mode=must_keep_origin_dtype --op_select_implmode=high_precision --input_format=NHWC",
        "--keep_dtype=keep.cfg --modify_mixlist=mix.json --op_precision_mode=opp.ini",
        "--input_shape=img:1,3,-1,-1 --dynamic_image_size=224,224;448,448",
        "042b6c51b06100d2fd5daf45f4d025622ef88b0bea3b20e05134fb5031ece7d3",
    ];
    for (i, o) in options.iter().enumerate() {
        write("parse_options", &format!("o{i}"), o.as_bytes())?;
    }

    let responses = [
        (
            0u8,
            r#"{"version":1,"id":0,"type":"describe","params":[{"name":"baseM","values":[16,32,64,128,256]},{"name":"baseN","values":[16,32,64,128,256]}],"restrictions":["baseM * baseN * 4 <= L0C"],"constants":{"L0C":131072},"default":{"baseM":128,"baseN":256},"device":{"soc_version":"Ascend910B2"}}"#,
        ),
        (
            2,
            r#"{"version":1,"id":2,"type":"measure","results":[{"status":"ok","samples_us":[12.1,12.0,12.3]},{"status":"build_fail","reason":"L0C overflow"}],"device":{"soc_version":"Ascend910B2"}}"#,
        ),
        (
            1,
            r#"{"version":1,"id":1,"type":"measure","results":[{"status":"run_timeout","reason":"10 s"}]}"#,
        ),
        (
            3,
            r#"{"version":1,"id":3,"type":"error","message":"device 0 is busy"}"#,
        ),
    ];
    for (i, (n, line)) in responses.iter().enumerate() {
        let mut seed = vec![*n];
        seed.extend_from_slice(line.as_bytes());
        write("parse_response", &format!("p{i}"), &seed)?;
    }
    println!("seeds written under fuzz/seeds/");
    Ok(())
}
