//! Which importer reads a model: AOE's `--framework` codes, the files each takes, and AOE's
//! rules for `--framework`, `--model` and `--weight` ([`ModelFiles::new`]).

use std::path::{Path, PathBuf};

mod folder;

use crate::{load_onnx, Model, ModelError};
use tunebank_key::ResolvedOptions;

/// A source framework, by AOE's `--framework` code.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Framework {
    /// `0`: a text `.prototxt` network with a binary `.caffemodel` (`--weight`).
    Caffe,
    /// `1`: a MindSpore `.mindir` (`.air`, an Ascend IR graph, is refused).
    MindSpore,
    /// `3`: a frozen `GraphDef` `.pb`.
    TensorFlow,
    /// `5`: an `.onnx` model.
    Onnx,
    /// A `torch.export` program (`.pt2`); AOE has no `--framework` code for it (PyTorch
    /// reaches AOE through ONNX), so the file's extension names it.
    PyTorch,
    /// `--singleop`: ATC's single-operator description (JSON), each op a unit of its own; it
    /// has no `--framework` code.
    SingleOp,
    /// `--model_path`: AOE's folder of model files, tuned as one job; it has no `--framework`
    /// code (each file's extension names its importer).
    Folder,
}

impl Framework {
    /// Every framework, in code order.
    pub(crate) const ALL: [Framework; 4] = [
        Framework::Caffe,
        Framework::MindSpore,
        Framework::TensorFlow,
        Framework::Onnx,
    ];

    /// AOE's `--framework` code.
    pub(crate) fn code(self) -> &'static str {
        match self {
            Framework::Caffe => "0",
            Framework::MindSpore => "1",
            Framework::TensorFlow => "3",
            Framework::Onnx => "5",
            Framework::PyTorch | Framework::SingleOp | Framework::Folder => "",
        }
    }

    /// The framework's name.
    pub fn name(self) -> &'static str {
        match self {
            Framework::Caffe => "Caffe",
            Framework::MindSpore => "MindSpore",
            Framework::TensorFlow => "TensorFlow",
            Framework::Onnx => "ONNX",
            Framework::PyTorch => "PyTorch",
            Framework::SingleOp => "single-operator description",
            Framework::Folder => "folder of models",
        }
    }

    /// The model-file extensions (lower case) of the framework.
    fn extensions(self) -> &'static [&'static str] {
        match self {
            Framework::Caffe => &["prototxt", "caffemodel"],
            Framework::MindSpore => &["air", "mindir"],
            Framework::TensorFlow => &["pb"],
            Framework::Onnx => &["onnx"],
            Framework::PyTorch => &["pt2"],
            Framework::SingleOp | Framework::Folder => &[],
        }
    }

    /// ATC's default `--input_format` for the framework's models: NHWC for TensorFlow,
    /// NCHW for the others.
    pub fn default_input_format(self) -> &'static str {
        match self {
            Framework::TensorFlow => "NHWC",
            _ => "NCHW",
        }
    }

    /// The framework of a `--framework` code.
    pub fn from_code(code: &str) -> Option<Framework> {
        Framework::ALL.into_iter().find(|f| f.code() == code.trim())
    }

    /// The framework whose model files have the extension of `path`.
    pub fn of_file(path: &Path) -> Option<Framework> {
        let ext = path.extension()?.to_string_lossy().to_ascii_lowercase();
        Framework::ALL
            .into_iter()
            .chain([Framework::PyTorch])
            .find(|f| f.extensions().contains(&ext.as_str()))
    }
}

impl std::fmt::Display for Framework {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Framework::SingleOp => write!(f, "--singleop"),
            Framework::PyTorch => write!(f, "PyTorch (.pt2)"),
            Framework::Folder => write!(f, "--model_path"),
            _ => write!(f, "--framework={} ({})", self.code(), self.name()),
        }
    }
}

/// The files of one model and the importer that reads them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModelFiles {
    /// The framework.
    pub framework: Framework,
    /// `--model`: the ONNX file, the Caffe prototxt, the TensorFlow `.pb` or the MindIR file.
    pub model: PathBuf,
    /// `--weight`: the Caffe caffemodel; `None` for the other frameworks.
    pub weight: Option<PathBuf>,
}

impl ModelFiles {
    /// AOE's rules: `--framework` (when given) must agree with the model file's extension and
    /// is taken from it otherwise (ONNX when the extension says nothing); a Caffe model needs
    /// `--weight` and its `--model` is the prototxt; no other framework takes `--weight`;
    /// a MindSpore model is a `.mindir` (AIR files are refused). Errors are
    /// [`ModelError::Framework`], naming the flags.
    pub fn new(
        model: &str,
        framework: Option<&str>,
        weight: Option<&str>,
    ) -> Result<ModelFiles, ModelError> {
        let err = |input: String, reason: String| ModelError::Framework { input, reason };
        let path = Path::new(model);
        let of_file = Framework::of_file(path);
        let given = match framework.map(str::trim).filter(|f| !f.is_empty()) {
            Some(code) => Some(Framework::from_code(code).ok_or_else(|| {
                err(
                    format!("--framework={code}"),
                    "expected 0 (Caffe), 1 (MindSpore), 3 (TensorFlow) or 5 (ONNX)".into(),
                )
            })?),
            None => None,
        };
        let framework = match (given, of_file) {
            (Some(g), Some(f)) if g != f => {
                return Err(err(
                    format!("{g} with --model={model}"),
                    format!(
                    "the model file is a {} model ({}); expected the flag and the file to agree",
                    f.name(),
                    f.code()
                ),
                ))
            }
            (Some(g), _) => g,
            (None, Some(f)) => f,
            (None, None) => Framework::Onnx,
        };
        let weight = weight.map(str::trim).filter(|w| !w.is_empty());
        match (framework, weight) {
            (Framework::MindSpore, _)
                if path.extension().is_some_and(|e| e.eq_ignore_ascii_case("air")) =>
            {
                Err(err(
                    format!("{framework} with --model={model}"),
                    "is an AIR file (Ascend IR, which only ATC reads): expected the MindIR export of the network (mindspore.export(..., file_format=\"MINDIR\"))".into(),
                ))
            }
            (Framework::Caffe, None) => Err(err(
                format!("{framework} with --model={model}"),
                "a Caffe model needs its weights: expected --weight=<the .caffemodel>".into(),
            )),
            (Framework::Caffe, Some(w)) => {
                if path.extension().is_some_and(|e| e.eq_ignore_ascii_case("caffemodel")) {
                    return Err(err(
                        format!("--model={model}"),
                        "is the weight file: expected --model=<the .prototxt> and the .caffemodel in --weight".into(),
                    ));
                }
                if Path::new(w).extension().is_some_and(|e| e.eq_ignore_ascii_case("prototxt")) {
                    return Err(err(format!("--weight={w}"), "is a prototxt: expected the binary .caffemodel".into()));
                }
                Ok(ModelFiles {
                    framework,
                    model: path.into(),
                    weight: Some(w.into()),
                })
            }
            (_, Some(w)) => Err(err(
                format!("--weight={w}"),
                format!("a weight file belongs to a Caffe model (--framework=0); --model={model} is {} ({}), which has none", framework.name(), framework.code()),
            )),
            (_, None) => Ok(ModelFiles {
                framework,
                model: path.into(),
                weight: None,
            }),
        }
    }

    /// [`ModelFiles::new`] on the `model`, `framework` and `weight` options; or the
    /// `singleop` file, which takes the place of all three (ATC's rule: one or the other); or
    /// AOE's `model_path` folder, each file's framework its extension's.
    pub fn from_options(options: &ResolvedOptions) -> Result<ModelFiles, ModelError> {
        let given = options.given();
        let model = given.get("model").map(String::as_str).unwrap_or("");
        if let Some(op) = given.get("singleop").filter(|s| !s.trim().is_empty()) {
            let clash = ["model", "model_path", "framework", "weight"]
                .into_iter()
                .find(|f| given.get(*f).is_some_and(|v| !v.trim().is_empty()));
            if let Some(f) = clash {
                return Err(ModelError::Framework {
                    input: format!("--singleop={op} with --{f}"),
                    reason: "a single-operator description is the whole input: expected --singleop or --model, not both".into(),
                });
            }
            return Ok(ModelFiles {
                framework: Framework::SingleOp,
                model: op.into(),
                weight: None,
            });
        }
        if let Some(dir) = given.get("model_path").filter(|s| !s.trim().is_empty()) {
            return ModelFiles::folder(dir, model, given.get("framework").map(String::as_str));
        }
        ModelFiles::new(
            model,
            given.get("framework").map(String::as_str),
            given.get("weight").map(String::as_str),
        )
    }

    /// AOE's `--model_path=DIR`: the folder's model files as one model (`folder.rs`). Given
    /// with `--model`, or with a `--framework` some model file of the folder is not of:
    /// [`ModelError::Framework`] naming the flags and the file.
    fn folder(dir: &str, model: &str, framework: Option<&str>) -> Result<ModelFiles, ModelError> {
        let err = |input: String, reason: String| ModelError::Framework { input, reason };
        if !model.trim().is_empty() {
            return Err(err(
                format!("--model_path={dir} with --model={model}"),
                "a folder of models is the whole input: expected --model_path or --model, not both"
                    .into(),
            ));
        }
        if let Some(code) = framework.map(str::trim).filter(|f| !f.is_empty()) {
            let want = Framework::from_code(code).ok_or_else(|| {
                err(
                    format!("--framework={code}"),
                    "expected 0 (Caffe), 1 (MindSpore), 3 (TensorFlow) or 5 (ONNX)".into(),
                )
            })?;
            for (file, _) in folder::model_files(Path::new(dir))? {
                let of = Framework::of_file(&file);
                if of != Some(want) {
                    return Err(err(
                        format!("{want} with --model_path={dir}"),
                        format!(
                            "{} is {}: expected every model file of the folder to be {}",
                            file.display(),
                            of.map_or("no model", Framework::name),
                            want.name()
                        ),
                    ));
                }
            }
        }
        Ok(ModelFiles {
            framework: Framework::Folder,
            model: dir.into(),
            weight: None,
        })
    }

    /// Imports the model with its framework's importer, then applies the graph optimizations
    /// ATC makes whatever the framework (`graph_opt`).
    pub fn load(&self) -> Result<Model, ModelError> {
        let mut model = self.import()?;
        crate::graph_opt::fold_atrous(&mut model.graph);
        crate::graph_opt::push_transpose_above_pad(&mut model.graph);
        crate::graph_opt::fold_pad(&mut model.graph);
        crate::graph_opt::cancel_transposes_around_elementwise(&mut model.graph);
        crate::graph_opt::fold_affine(&mut model.graph);
        Ok(model)
    }

    fn import(&self) -> Result<Model, ModelError> {
        match (self.framework, &self.weight) {
            #[cfg(feature = "caffe")]
            (Framework::Caffe, Some(w)) => crate::caffe::load_caffe(&self.model, w),
            (Framework::Onnx, _) => load_onnx(&self.model),
            #[cfg(feature = "tensorflow")]
            (Framework::TensorFlow, _) => crate::tensorflow::load_tensorflow(&self.model),
            #[cfg(feature = "mindspore")]
            (Framework::MindSpore, _) => crate::mindir::load_mindir(&self.model),
            #[cfg(feature = "pytorch")]
            (Framework::PyTorch, _) => crate::torch::load_pt2(&self.model),
            #[cfg(not(feature = "pytorch"))]
            (f @ Framework::PyTorch, _) => Err(not_built(f, "pytorch", &self.model)),
            (Framework::SingleOp, _) => crate::singleop::load_singleop(&self.model),
            (Framework::Folder, _) => folder::load_folder(&self.model),
            #[cfg(not(feature = "mindspore"))]
            (f @ Framework::MindSpore, _) => Err(not_built(f, "mindspore", &self.model)),
            #[cfg(not(feature = "caffe"))]
            (f @ Framework::Caffe, _) => Err(not_built(f, "caffe", &self.model)),
            #[cfg(not(feature = "tensorflow"))]
            (f @ Framework::TensorFlow, _) => Err(not_built(f, "tensorflow", &self.model)),
            #[cfg(feature = "caffe")]
            (f @ Framework::Caffe, None) => Err(ModelError::Framework {
                input: format!("{f} with --model={}", self.model.display()),
                reason: "a Caffe model needs its weights: expected --weight=<the .caffemodel>"
                    .into(),
            }),
        }
    }
}

/// The error for a model of framework `f` whose importer this build leaves out (cargo feature
/// `feature` of tunebank-model).
#[cfg(any(
    not(feature = "caffe"),
    not(feature = "tensorflow"),
    not(feature = "mindspore"),
    not(feature = "pytorch")
))]
fn not_built(f: Framework, feature: &str, model: &Path) -> ModelError {
    ModelError::Framework {
        input: format!("{f} with --model={}", model.display()),
        reason: format!(
            "this build has no {} importer (cargo feature `{feature}` of tunebank-model)",
            f.name()
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files(model: &str, f: Option<&str>, w: Option<&str>) -> Result<ModelFiles, String> {
        ModelFiles::new(model, f, w).map_err(|e| e.to_string())
    }

    #[test]
    fn the_framework_follows_the_flag_and_the_file_and_they_must_agree() {
        assert_eq!(
            files("m.onnx", None, None).unwrap().framework,
            Framework::Onnx
        );
        assert_eq!(
            files("m.pb", Some("3"), None).unwrap().framework,
            Framework::TensorFlow
        );
        assert_eq!(
            files("m.pb", None, None).unwrap().framework,
            Framework::TensorFlow
        );
        let caffe = files("r.prototxt", Some("0"), Some("r.caffemodel")).unwrap();
        assert_eq!(
            (caffe.framework, caffe.weight.as_deref()),
            (Framework::Caffe, Some(Path::new("r.caffemodel")))
        );
        assert_eq!(
            files("model.bin", None, None).unwrap().framework,
            Framework::Onnx
        );

        let e = files("r.prototxt", Some("3"), None).unwrap_err();
        assert!(
            e.contains("--framework=3 (TensorFlow) with --model=r.prototxt")
                && e.contains("Caffe model (0)"),
            "{e}"
        );
        let e = files("m.onnx", Some("0"), Some("w.caffemodel")).unwrap_err();
        assert!(e.contains("ONNX model (5)"), "{e}");
        let e = files("r.prototxt", Some("0"), None).unwrap_err();
        assert!(e.contains("expected --weight="), "{e}");
        let e = files("r.caffemodel", Some("0"), Some("r.prototxt")).unwrap_err();
        assert!(e.contains("is the weight file"), "{e}");
        let e = files("m.onnx", None, Some("w.caffemodel")).unwrap_err();
        assert!(
            e.contains("--weight=w.caffemodel") && e.contains("is ONNX (5)"),
            "{e}"
        );
        assert_eq!(
            files("m.mindir", None, None).unwrap().framework,
            Framework::MindSpore
        );
        let e = files("m.air", Some("1"), None).unwrap_err();
        assert!(e.contains("is an AIR file"), "{e}");
        let e = files("m.mindir", None, Some("w.caffemodel")).unwrap_err();
        assert!(e.contains("is MindSpore (1)"), "{e}");
        let e = files("m.onnx", Some("7"), None).unwrap_err();
        assert!(e.contains("--framework=7"), "{e}");
    }
}
