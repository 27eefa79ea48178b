//! The one way from an environment to an open bank: [`Bank::open`] with an environment
//! snapshot and a [`BankRequest`], whose fields are every choice a caller makes (which custom
//! layer, which built-in layers, read-only or writable, what must exist, error on a miss). The
//! command lines, the job API, the queue worker, the C ABI and the Python package all open
//! their banks here.

use std::path::PathBuf;

use tunebank_key::{Environment, RecordKind};

use super::{Bank, BankError};
use crate::paths::{self, BankEnv};

/// Which custom (writable) layer a bank has.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CustomLayer {
    /// The one AOE's rules name from the environment (`TUNE_BANK_PATH` >
    /// `ASCEND_CACHE_PATH/aoe_data` > the `$HOME` default, per kind and SoC); a resolution
    /// that fails (`TUNE_BANK_PATH` naming no usable directory, no variable and no `HOME`) is
    /// the open's error.
    Resolved,
    /// The one AOE's rules name, or none when the resolution fails: for a reader that consults
    /// the custom bank only if there is a usable one (the graph bank applied before OPAT).
    ResolvedIfValid,
    /// This bank file or `postgres://` URL (`--bank`), whatever the environment says.
    Path(PathBuf),
}

impl From<Option<PathBuf>> for CustomLayer {
    /// An explicit path when given (`--bank`), else AOE's resolution.
    fn from(path: Option<PathBuf>) -> CustomLayer {
        path.map_or(CustomLayer::Resolved, CustomLayer::Path)
    }
}

/// What an open may do to the custom layer (built-in layers are only ever read).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// Read only: nothing is created or written, a custom bank that does not exist yet is an
    /// absent layer, and one left by a crashed writer is an error.
    ReadOnly,
    /// Read only, but a custom bank left by a crashed writer is recovered first (redb rewrites
    /// its allocator state, never a record): for commands that may write the user's own bank.
    ReadOnlyRecovering,
    /// Read-write: the custom bank's directory and file are created if needed.
    Writable,
}

/// What to open: the bank of `kind` for `soc`, its layers and what may be done to them.
/// [`BankRequest::new`] gives the defaults; callers set the fields they decide.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BankRequest {
    /// The kind of record the bank holds.
    pub kind: RecordKind,
    /// The SoC version the bank is for (names its directory under AOE's rules).
    pub soc: String,
    /// The custom layer.
    pub custom: CustomLayer,
    /// Read-only built-in bank files, consulted after the custom layer in this order (a
    /// missing one is an absent layer unless [`BankRequest::must_exist`]).
    pub builtin: Vec<PathBuf>,
    /// Adds the default built-in bank (`TUNEBANK_BUILTIN_PATH`, else the `$HOME` default)
    /// after [`BankRequest::builtin`].
    pub default_builtin: bool,
    /// Read-only or writable.
    pub access: Access,
    /// Every path given ([`CustomLayer::Path`] and [`BankRequest::builtin`]) must hold a
    /// bank: a missing one is [`BankError::NotFound`] naming it.
    pub must_exist: bool,
    /// A bank with no layer at all is an error: [`BankError::NotFound`] naming the custom
    /// bank's location (or [`BankError::NoCustomLayer`] when it has none).
    pub require_layer: bool,
    /// A look-up no layer answers is an error ([`BankError::Miss`]).
    pub error_on_miss: bool,
}

impl BankRequest {
    /// The bank of `kind` for `soc` as AOE's rules name it: the resolved custom layer over the
    /// default built-in bank, read-only, nothing required to exist, a miss an answer.
    pub fn new(kind: RecordKind, soc: &str) -> BankRequest {
        BankRequest {
            kind,
            soc: soc.to_owned(),
            custom: CustomLayer::Resolved,
            builtin: Vec::new(),
            default_builtin: true,
            access: Access::ReadOnly,
            must_exist: false,
            require_layer: false,
            error_on_miss: false,
        }
    }
}

impl Bank {
    /// Opens the bank `request` names in the environment `env` (a snapshot: the front ends take
    /// it from the process): the custom layer, then the given built-in layers, then the
    /// default built-in one, each path resolved by AOE's rules from `env`'s bank variables,
    /// and a read-write redb bank refused on a network filesystem unless `env` allows it
    /// (`TUNEBANK_ALLOW_NETWORK_FS=1`). Errors (path resolution, a missing bank that must
    /// exist) come before anything is created.
    pub fn open(env: &Environment, request: &BankRequest) -> Result<Bank, BankError> {
        let r = request;
        if r.must_exist {
            let custom = match &r.custom {
                CustomLayer::Path(p) => Some(p),
                CustomLayer::Resolved | CustomLayer::ResolvedIfValid => None,
            };
            if let Some(p) = custom
                .into_iter()
                .chain(&r.builtin)
                .find(|p| !paths::bank_exists(p))
            {
                return Err(BankError::NotFound { path: p.clone() });
            }
        }
        let mut b = Bank::builder(r.kind, &r.soc)
            .env(BankEnv::from(env))
            .allow_network_fs(env.allow_network_fs())
            .read_only(r.access != Access::Writable)
            .recover_custom(r.access == Access::ReadOnlyRecovering)
            .error_on_miss(r.error_on_miss);
        match &r.custom {
            CustomLayer::Path(p) => b = b.custom_path(p),
            CustomLayer::Resolved => {}
            CustomLayer::ResolvedIfValid => {
                if b.custom_location().is_err() {
                    b = b.no_custom();
                }
            }
        }
        for p in &r.builtin {
            b = b.builtin_path(p);
        }
        if !r.default_builtin {
            b = b.no_default_builtin();
        }
        let bank = b.open()?;
        if r.require_layer && bank.layers.is_empty() {
            return Err(match bank.custom_file {
                Some(path) => BankError::NotFound { path },
                None => BankError::NoCustomLayer { path: None },
            });
        }
        Ok(bank)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::paths::PathError;
    use crate::LayerId;

    const SOC: &str = "Ascend910B2";

    fn op(custom: CustomLayer, access: Access) -> BankRequest {
        BankRequest {
            custom,
            access,
            ..BankRequest::new(RecordKind::Op, SOC)
        }
    }

    /// The custom layer comes from the snapshot's `TUNE_BANK_PATH`: a writable open creates
    /// it, a read-only open of a bank not there yet has no layer (an error when a layer is
    /// required, naming where it would be), an explicit path wins over the environment.
    #[test]
    fn the_custom_layer_follows_the_snapshot_and_the_access() {
        let d = tempfile::tempdir().unwrap();
        let env = Environment::empty().with("TUNE_BANK_PATH", d.path());
        let file = d.path().join(SOC).join("tunebank_op.redb");
        let read = Bank::open(&env, &op(CustomLayer::Resolved, Access::ReadOnly)).unwrap();
        assert!(read.layer_paths().is_empty());
        assert_eq!(read.custom_file(), Some(file.as_path()));
        assert!(matches!(read.write_batch(&[]), Err(BankError::NotWritable)));
        let required = BankRequest {
            require_layer: true,
            ..op(CustomLayer::Resolved, Access::ReadOnly)
        };
        match Bank::open(&env, &required) {
            Err(BankError::NotFound { path }) => assert_eq!(path, file),
            other => panic!("expected NotFound, got {other:?}"),
        }
        assert!(!file.exists(), "a read-only open creates nothing");

        let write = Bank::open(&env, &op(CustomLayer::Resolved, Access::Writable)).unwrap();
        assert_eq!(write.write_batch(&[]).unwrap(), vec![]);
        assert!(file.is_file());
        drop(write);
        let read = Bank::open(&env, &required).unwrap();
        assert_eq!(read.layer_paths(), vec![(LayerId::Custom, file.clone())]);
        let recovering = Bank::open(&env, &op(CustomLayer::Resolved, Access::ReadOnlyRecovering));
        assert_eq!(recovering.unwrap().layer_paths().len(), 1);

        let explicit = d.path().join("mine.redb");
        let bank = Bank::open(
            &env,
            &op(CustomLayer::Path(explicit.clone()), Access::Writable),
        );
        assert_eq!(bank.unwrap().custom_file(), Some(explicit.as_path()));
    }

    /// A resolution that fails is the error of [`CustomLayer::Resolved`] and no custom layer for
    /// [`CustomLayer::ResolvedIfValid`]; blank variables are unset.
    #[test]
    fn a_failed_resolution_is_an_error_or_no_custom_layer() {
        let d = tempfile::tempdir().unwrap();
        let missing = d.path().join("missing");
        let env = Environment::empty().with("TUNE_BANK_PATH", &missing);
        let err = Bank::open(&env, &op(CustomLayer::Resolved, Access::ReadOnly)).unwrap_err();
        assert!(
            matches!(err, BankError::Path(PathError::TuneBankPathMissing { .. })),
            "{err}"
        );
        let bank = Bank::open(&env, &op(CustomLayer::ResolvedIfValid, Access::ReadOnly)).unwrap();
        assert_eq!(bank.custom_file(), None);
        let blank = Environment::empty().with("TUNE_BANK_PATH", "  ");
        let err = Bank::open(&blank, &op(CustomLayer::Resolved, Access::ReadOnly)).unwrap_err();
        assert!(
            matches!(err, BankError::Path(PathError::NoLocation)),
            "{err}"
        );
        assert!(!missing.exists());
    }

    /// Built-in layers: the given ones in order, then the snapshot's default one unless left
    /// out; a missing given one is an absent layer, or [`BankError::NotFound`] when paths must
    /// exist (checked before anything is created).
    #[test]
    fn built_in_layers_come_in_order_and_may_have_to_exist() {
        let d = tempfile::tempdir().unwrap();
        let make = |path: &std::path::Path| {
            let request = op(CustomLayer::Path(path.to_path_buf()), Access::Writable);
            let bank = Bank::open(&Environment::empty(), &request).unwrap();
            bank.write_batch(&[]).unwrap();
        };
        let given = d.path().join("given.redb");
        make(&given);
        let default = d
            .path()
            .join("builtin/op")
            .join(SOC)
            .join("tunebank_op.redb");
        make(&default);
        let env = Environment::empty().with("TUNEBANK_BUILTIN_PATH", d.path().join("builtin"));
        let custom = d.path().join("custom.redb");
        let request = BankRequest {
            builtin: vec![d.path().join("absent.redb"), given.clone()],
            ..op(CustomLayer::Path(custom.clone()), Access::Writable)
        };
        let layers = Bank::open(&env, &request).unwrap().layer_paths();
        assert_eq!(
            layers,
            vec![
                (LayerId::Custom, custom.clone()),
                (LayerId::BuiltIn(1), given.clone()),
                (LayerId::BuiltIn(2), default.clone()),
            ]
        );
        let no_default = BankRequest {
            default_builtin: false,
            ..request.clone()
        };
        assert_eq!(
            Bank::open(&env, &no_default).unwrap().layer_paths().len(),
            2
        );
        std::fs::remove_file(&custom).unwrap();
        let strict = BankRequest {
            must_exist: true,
            access: Access::ReadOnly,
            ..request
        };
        match Bank::open(&env, &strict) {
            Err(BankError::NotFound { path }) => assert_eq!(path, custom),
            other => panic!("expected NotFound, got {other:?}"),
        }
        assert!(!custom.exists());
    }

    /// Error on miss is the request's.
    #[test]
    fn error_on_miss_is_a_parameter() {
        let d = tempfile::tempdir().unwrap();
        let request = BankRequest {
            error_on_miss: true,
            ..op(CustomLayer::Path(d.path().join("b.redb")), Access::Writable)
        };
        let bank = Bank::open(&Environment::empty(), &request).unwrap();
        let key = tunebank_key::BankKey([7; 32]);
        assert!(matches!(bank.lookup(&key), Err(BankError::Miss { .. })));
    }
}
