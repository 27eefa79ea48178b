//! The layered bank: a writable custom layer consulted before read-only built-in layers, with
//! look-up answers that say which layer answered and what it shadowed.

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::backend::Backend;
use crate::paths::{self, BankEnv, BankLocation, PathError};
use crate::record::{self, Answer, Descriptor, Record, RecordError};
use crate::store::{IndexKey, Store, StoreEntry, StoreError};
use crate::verify::{verify_store, BankVerification, VerifyReport};
use tunebank_key::{BankKey, KeyError, RecordKind};

mod batch;
mod group;
mod inplace;
mod open;
mod stores;

pub use group::{GroupRecord, IndexGroup, LayerRecords};
pub use inplace::{Found, HitRef};
pub use open::{Access, BankRequest, CustomLayer};
use stores::open_store;
use tunebank_failure::FailureKind;

/// Which layer of a [`Bank`] a record came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LayerId {
    /// The user's writable bank.
    Custom,
    /// The n-th read-only built-in bank (0 is consulted first).
    BuiltIn(usize),
}

impl fmt::Display for LayerId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LayerId::Custom => f.write_str("custom"),
            LayerId::BuiltIn(0) => f.write_str("built-in"),
            LayerId::BuiltIn(n) => write!(f, "built-in#{n}"),
        }
    }
}

/// One opened layer.
struct Layer {
    id: LayerId,
    store: Box<dyn Store>,
    writable: bool,
}

/// A successful look-up.
#[derive(Clone, Debug, PartialEq)]
pub struct Hit {
    /// The key looked up.
    pub key: BankKey,
    /// The layer that answered.
    pub layer: LayerId,
    /// What a converter needs: the strategy and its performance (checksum-verified).
    pub answer: Answer,
    /// The stored value, already verified; [`Hit::record`] decodes the rest on demand.
    value: Vec<u8>,
    /// Lower layers that also hold this key and were shadowed by `layer`.
    pub shadowed: Vec<LayerId>,
    /// Higher layers whose entry for this key was rejected by the caller's validity check.
    pub rejected_above: Vec<LayerId>,
}

/// The answer to a look-up.
#[derive(Clone, Debug, PartialEq)]
pub enum Lookup {
    /// A layer holds a (valid) record for the key.
    Hit(Box<Hit>),
    /// No layer holds a usable record. `rejected` lists layers whose entry the validity check
    /// refused (a "rejected hit": the stored strategy is no longer valid on the target).
    Miss {
        /// Layers with a rejected entry.
        rejected: Vec<LayerId>,
    },
}

impl Hit {
    /// Decodes the whole record (descriptor, options as given, provenance): what diagnosis and
    /// export need, and a look-up does not pay for.
    pub fn record(&self) -> Result<Record, RecordError> {
        record::decode(&self.key, &self.value)
    }
}

impl Lookup {
    /// The hit, if any.
    pub fn hit(&self) -> Option<&Hit> {
        match self {
            Lookup::Hit(h) => Some(h),
            Lookup::Miss { .. } => None,
        }
    }
}

/// Running totals of a bank handle's look-ups.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// Look-ups answered by some layer.
    pub hits: u64,
    /// Look-ups no layer answered.
    pub misses: u64,
    /// Entries found but refused by the caller's validity check.
    pub rejected: u64,
}

/// Errors of the layered bank. Every message names the bank file or key involved.
#[derive(Debug, thiserror::Error)]
pub enum BankError {
    /// Path resolution failed (bad `TUNE_BANK_PATH`, no location …).
    #[error(transparent)]
    Path(#[from] PathError),
    /// A storage backend failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A stored record is damaged or undecodable.
    #[error(transparent)]
    Record(#[from] RecordError),
    /// A descriptor could not be keyed.
    #[error(transparent)]
    Key(#[from] KeyError),
    /// Error-on-miss mode and no layer answered.
    #[error("bank miss for key {key} (error-on-miss is set)")]
    Miss {
        /// The key looked up.
        key: BankKey,
    },
    /// A write was attempted but the bank has no writable layer.
    #[error("the bank has no writable custom layer (opened read-only or without one)")]
    NotWritable,
    /// A record of another kind was written to a bank of this kind.
    #[error("record of kind {found:?} written to a {expected:?} bank")]
    WrongKind {
        /// The bank's kind.
        expected: RecordKind,
        /// The record's kind.
        found: RecordKind,
    },
    /// A bank file that was to be opened alone does not exist.
    #[error("bank file {} does not exist", path.display())]
    NotFound {
        /// The path.
        path: PathBuf,
    },
    /// The bank at this path is of a backend this build does not include.
    #[error("bank {} is a {backend} bank, which this build cannot open (cargo feature `{backend}`)", path.display())]
    Unavailable {
        /// The path.
        path: PathBuf,
        /// Its backend.
        backend: Backend,
    },
    /// The operation needs the bank's custom layer, and it does not exist.
    #[error("no custom bank at {}", path.as_deref().map(|p| p.display().to_string()).unwrap_or_default())]
    NoCustomLayer {
        /// Where the custom layer would be, if the bank has one.
        path: Option<PathBuf>,
    },
    /// A read-write redb bank on a network filesystem, where its multi-process locking is not
    /// safe (see `bank::netfs`).
    #[error("bank {} is on a network filesystem ({fs}), where a redb bank shared by several writers can be damaged; share a bank between hosts through PostgreSQL (--bank postgres://…, `tunebank bank init`), or set TUNEBANK_ALLOW_NETWORK_FS=1 if only one process on one host writes it", path.display())]
    NetworkFilesystem {
        /// The bank file.
        path: PathBuf,
        /// The filesystem's name.
        fs: &'static str,
    },
    /// The directory for a new bank file could not be created.
    #[error("cannot create bank directory {path}: {source}")]
    CreateDir {
        /// Directory.
        path: PathBuf,
        /// Cause.
        #[source]
        source: std::io::Error,
    },
}

/// Derives the key of a record's descriptor.
pub fn descriptor_key(d: &Descriptor) -> Result<BankKey, KeyError> {
    match d {
        Descriptor::Op(op) => op.key(),
        Descriptor::Graph(g) => g.key(),
        Descriptor::Gradient(g) => g.key(),
    }
}

/// The secondary-index entry of a record: (SoC, kind, case-folded op type).
pub fn index_key(r: &Record) -> IndexKey {
    let (soc, op_type) = match &r.descriptor {
        Descriptor::Op(op) => (&op.soc.version, op.op_type.to_lowercase()),
        Descriptor::Graph(g) => (&g.soc.version, "graph".to_owned()),
        Descriptor::Gradient(g) => (&g.soc.version, "gradient".to_owned()),
    };
    IndexKey {
        soc: soc.clone(),
        kind: r.kind,
        op_type,
    }
}

/// How to open a [`Bank`]; see [`Bank::builder`].
#[derive(Clone, Debug)]
pub struct BankBuilder {
    kind: RecordKind,
    soc: String,
    env: BankEnv,
    custom: Option<Option<PathBuf>>,
    builtin: Vec<PathBuf>,
    default_builtin: bool,
    read_only: bool,
    recover: bool,
    error_on_miss: bool,
    allow_network_fs: bool,
}

impl BankBuilder {
    /// Resolves the custom and default built-in layers with these environment values (none by
    /// default; [`Bank::open`] takes them from an environment snapshot).
    pub fn env(mut self, env: BankEnv) -> Self {
        self.env = env;
        self
    }

    /// Opens a read-write redb custom layer on a network filesystem too (see `bank::netfs`);
    /// by default that is [`BankError::NetworkFilesystem`].
    pub fn allow_network_fs(mut self, yes: bool) -> Self {
        self.allow_network_fs = yes;
        self
    }

    /// Uses this bank file as the custom layer, overriding the environment (`--bank`); a
    /// `postgres://` URL names a database, whose bank of this kind and SoC is the layer (or the
    /// bank the URL's `#NAME` names; see `bank::store::postgres`).
    pub fn custom_path(mut self, file: impl Into<PathBuf>) -> Self {
        self.custom = Some(Some(file.into()));
        self
    }

    /// Opens no custom layer (only built-in layers answer).
    pub fn no_custom(mut self) -> Self {
        self.custom = None;
        self
    }

    /// Adds a read-only built-in layer from this bank file, consulted after the custom layer and
    /// after built-in layers added before it. A missing file is an absent layer. A
    /// `postgres://` URL names a database: the layer is its bank of this kind and SoC (or the
    /// bank the URL's `#NAME` names).
    pub fn builtin_path(mut self, file: impl Into<PathBuf>) -> Self {
        self.builtin.push(file.into());
        self
    }

    /// Does not add the default built-in bank (`TUNEBANK_BUILTIN_PATH` or the `$HOME` default).
    pub fn no_default_builtin(mut self) -> Self {
        self.default_builtin = false;
        self
    }

    /// Opens the custom layer read-only: nothing is created and writes fail. This is what a
    /// converter wants.
    pub fn read_only(mut self, yes: bool) -> Self {
        self.read_only = yes;
        self
    }

    /// With [`Self::read_only`]: the caller may write the custom bank, so a custom bank left by
    /// a crashed writer is recovered before it is read (redb rewrites its allocator state, never
    /// a record). Without it a read-only open never writes and such a bank is an error
    /// ([`StoreError::NeedsRecovery`](crate::store::StoreError::NeedsRecovery)).
    /// Built-in layers are never recovered.
    pub fn recover_custom(mut self, yes: bool) -> Self {
        self.recover = yes;
        self
    }

    /// Makes a look-up that no layer answers an error ([`BankError::Miss`]).
    pub fn error_on_miss(mut self, yes: bool) -> Self {
        self.error_on_miss = yes;
        self
    }

    /// The custom bank file this builder would open, and the rule that chose it.
    pub fn custom_location(&self) -> Result<Option<BankLocation>, PathError> {
        match &self.custom {
            None => Ok(None),
            Some(explicit) => {
                paths::resolve_custom(self.kind, &self.soc, explicit.as_deref(), &self.env)
                    .map(Some)
            }
        }
    }

    /// Opens the layers. Path errors are reported before anything is created. A read-write open
    /// creates the custom bank's directory and file if needed; a read-only open of a bank that
    /// does not exist yet gives an empty layer.
    pub fn open(self) -> Result<Bank, BankError> {
        let location = self.custom_location()?;
        let mut layers = Vec::new();
        if let Some(loc) = &location {
            if self.read_only {
                if paths::bank_exists(&loc.file) {
                    layers.push(Layer {
                        id: LayerId::Custom,
                        store: open_store(&loc.file, true, self.recover, false)?,
                        writable: false,
                    });
                }
            } else {
                let is_url = tunebank_pg::is_url_path(&loc.file);
                if let Some(dir) = loc
                    .file
                    .parent()
                    .filter(|d| !is_url && !d.as_os_str().is_empty())
                {
                    std::fs::create_dir_all(dir).map_err(|source| BankError::CreateDir {
                        path: dir.to_owned(),
                        source,
                    })?;
                }
                layers.push(Layer {
                    id: LayerId::Custom,
                    store: open_store(&loc.file, false, false, self.allow_network_fs)?,
                    writable: true,
                });
            }
        }
        let mut builtin = self.builtin.clone();
        if self.default_builtin {
            if let Some(p) = paths::resolve_builtin(self.kind, &self.soc, &self.env) {
                builtin.push(p);
            }
        }
        for (n, file) in builtin.iter().enumerate() {
            let file = match file.to_str().filter(|f| tunebank_pg::is_url(f)) {
                Some(url) => paths::pg_bank_url(url, self.kind, &self.soc),
                None => file.clone(),
            };
            let file = &file;
            if paths::bank_exists(file) {
                layers.push(Layer {
                    id: LayerId::BuiltIn(n),
                    store: open_store(file, true, false, false)?,
                    writable: false,
                });
            }
        }
        Ok(Bank {
            kind: self.kind,
            custom_file: location.map(|l| paths::redacted(&l.file)),
            layers,
            error_on_miss: self.error_on_miss,
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
            rejected: AtomicU64::new(0),
        })
    }
}

/// A layered bank handle for one kind and SoC. Shareable between threads (`Sync`); several
/// processes may open the same bank files at once.
pub struct Bank {
    kind: RecordKind,
    custom_file: Option<PathBuf>,
    layers: Vec<Layer>,
    error_on_miss: bool,
    hits: AtomicU64,
    misses: AtomicU64,
    rejected: AtomicU64,
}

impl fmt::Debug for Bank {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Bank")
            .field("kind", &self.kind)
            .field("layers", &self.layer_paths())
            .finish()
    }
}

impl Bank {
    /// Starts opening a bank of `kind` for `soc` (e.g. `Ascend910B2`) from explicit values:
    /// the custom layer and the default built-in layer are resolved by AOE's rules from the
    /// [`BankBuilder::env`] given, and with none (the default) only from explicit paths. The
    /// way from an environment snapshot and a request is [`Bank::open`].
    pub fn builder(kind: RecordKind, soc: &str) -> BankBuilder {
        BankBuilder {
            kind,
            soc: soc.to_owned(),
            env: BankEnv::default(),
            custom: Some(None),
            builtin: Vec::new(),
            default_builtin: true,
            read_only: false,
            recover: false,
            error_on_miss: false,
            allow_network_fs: false,
        }
    }

    /// Opens the bank at `path` alone, read-only, whichever backend holds it (a redb file or a
    /// sled directory): for tools that read one bank file as a whole (merge sources, diff). Its
    /// one layer is [`LayerId::Custom`]; no environment is consulted and no built-in layer is
    /// added. A path holding nothing is [`BankError::NotFound`]. A `postgres://` URL must name
    /// its bank (`#op/<soc>`).
    pub fn open_file(kind: RecordKind, path: impl AsRef<Path>) -> Result<Bank, BankError> {
        let path = path.as_ref();
        if !paths::bank_exists(path) {
            return Err(BankError::NotFound {
                path: path.to_owned(),
            });
        }
        Ok(Bank {
            kind,
            custom_file: Some(paths::redacted(path)),
            layers: vec![Layer {
                id: LayerId::Custom,
                store: open_store(path, true, false, false)?,
                writable: false,
            }],
            error_on_miss: false,
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
            rejected: AtomicU64::new(0),
        })
    }

    /// The kind of record this bank holds.
    pub fn kind(&self) -> RecordKind {
        self.kind
    }

    /// The custom bank file (whether or not it exists yet); a PostgreSQL URL without its
    /// password.
    pub fn custom_file(&self) -> Option<&Path> {
        self.custom_file.as_deref()
    }

    /// The opened layers, in look-up order, with their files.
    pub fn layer_paths(&self) -> Vec<(LayerId, PathBuf)> {
        self.layers
            .iter()
            .map(|l| (l.id, l.store.path().to_owned()))
            .collect()
    }

    /// The store of one layer, for tools that inspect a bank (export, verify, near-miss search).
    pub fn layer_store(&self, id: LayerId) -> Option<&dyn Store> {
        self.layers
            .iter()
            .find(|l| l.id == id)
            .map(|l| l.store.as_ref())
    }

    /// Looks `key` up in every layer, custom first; see [`Bank::lookup_checked`].
    pub fn lookup(&self, key: &BankKey) -> Result<Lookup, BankError> {
        self.lookup_checked(key, |_| true)
    }

    /// The full record under `key` in one layer, checksum-verified; `None` if the layer is not
    /// open or does not hold the key.
    pub fn get_record(&self, layer: LayerId, key: &BankKey) -> Result<Option<Record>, BankError> {
        let Some(store) = self.layer_store(layer) else {
            return Ok(None);
        };
        let mut out = None;
        store.get_with(key, &mut |bytes| out = Some(record::decode(key, bytes)))?;
        Ok(out.transpose()?)
    }

    /// Looks `key` up, custom layer first. The first layer whose answer passes `valid` answers;
    /// an entry that fails it is a rejected hit and the next layer is tried. Lower layers that
    /// also hold the key are reported as shadowed. Every stored value read is checksum-verified:
    /// a damaged record is an error naming the key, never a wrong strategy.
    pub fn lookup_checked(
        &self,
        key: &BankKey,
        valid: impl Fn(&Answer) -> bool,
    ) -> Result<Lookup, BankError> {
        // The walk is `lookup_with`'s; the answer the check saw becomes the hit's, decoded once.
        let checked = std::cell::RefCell::new(None);
        let found = self.lookup_with(
            key,
            |a| {
                let answer = a.to_answer();
                let ok = valid(&answer);
                *checked.borrow_mut() = Some(answer);
                ok
            },
            |h| Hit {
                key: h.key,
                layer: h.layer,
                answer: checked.borrow_mut().take().expect("checked before the hit"),
                value: h.value.to_vec(),
                shadowed: h.shadowed,
                rejected_above: h.rejected_above,
            },
        )?;
        Ok(match found {
            Found::Hit(hit) => Lookup::Hit(Box::new(hit)),
            Found::Miss { rejected } => Lookup::Miss { rejected },
        })
    }

    /// Writes `records` to the custom layer in one atomic, durable transaction, each under the
    /// key derived from its own descriptor (so a record can never sit under a wrong key), and
    /// returns those keys. Either every record is written or none.
    pub fn write_batch(&self, records: &[Record]) -> Result<Vec<BankKey>, BankError> {
        self.write(records, None).map(|(keys, _)| keys)
    }

    /// Like [`Bank::write_batch`], but where the custom layer already holds the record's key
    /// when the transaction commits, the record is written only if `replace(record, current)`
    /// says so; `current` is the stored answer, or the error that names its damage. Decision
    /// and writes are one transaction, so a record another process wrote since this one looked
    /// the key up is seen and judged, never blindly overwritten. Returns how many records were
    /// written. `replace` may be called more than once per record and must answer the same.
    pub(crate) fn write_batch_if(
        &self,
        records: &[Record],
        replace: &dyn Fn(&Record, Result<Answer, RecordError>) -> bool,
    ) -> Result<usize, BankError> {
        let keyed: HashMap<BankKey, &Record> = records
            .iter()
            .filter_map(|r| Some((descriptor_key(&r.descriptor).ok()?, r)))
            .collect();
        let decide = |key: &BankKey, old: &[u8]| {
            keyed
                .get(key)
                .is_some_and(|r| replace(r, record::decode_answer(key, old)))
        };
        self.write(records, Some(&decide))
            .map(|(_, written)| written)
    }

    /// `Bank::write_batch_if` that never replaces: only keys the custom layer does not hold
    /// are written.
    pub fn write_batch_if_absent(&self, records: &[Record]) -> Result<usize, BankError> {
        self.write_batch_if(records, &|_, _| false)
    }

    fn write(
        &self,
        records: &[Record],
        replace: Option<&crate::store::Replace<'_>>,
    ) -> Result<(Vec<BankKey>, usize), BankError> {
        let layer = self
            .layers
            .iter()
            .find(|l| l.writable)
            .ok_or(BankError::NotWritable)?;
        let mut keys = Vec::with_capacity(records.len());
        let mut values = Vec::with_capacity(records.len());
        for r in records {
            if r.kind != self.kind {
                return Err(BankError::WrongKind {
                    expected: self.kind,
                    found: r.kind,
                });
            }
            let key = descriptor_key(&r.descriptor)?;
            values.push((key, record::encode(&key, r), index_key(r)));
            keys.push(key);
        }
        let entries: Vec<StoreEntry<'_>> = values
            .iter()
            .map(|(key, value, index)| StoreEntry {
                key: *key,
                value,
                index: index.clone(),
            })
            .collect();
        let written = if let Some(replace) = replace {
            layer.store.put_batch_if(&entries, replace)?
        } else {
            layer.store.put_batch(&entries)?;
            entries.len()
        };
        Ok((keys, written))
    }

    /// Checks every layer: record checksums and decoding, and index consistency.
    pub fn verify(&self) -> Vec<(LayerId, VerifyReport)> {
        self.layers
            .iter()
            .map(|l| (l.id, verify_store(l.store.as_ref())))
            .collect()
    }

    /// [`Bank::verify`] as one report for every layer, rendered as `bank verify` prints it.
    pub fn verification(&self) -> BankVerification {
        BankVerification {
            layers: self.verify(),
        }
    }

    /// The counters since this handle was opened.
    pub fn counters(&self) -> Counters {
        Counters {
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
            rejected: self.rejected.load(Ordering::Relaxed),
        }
    }
}

impl BankError {
    /// The kind of the store, record or path error it wraps; a directory that cannot be created
    /// is an I/O failure; the rest (a miss under error-on-miss, a missing bank file, a bank
    /// without a writable layer …) are the request's.
    pub fn kind(&self) -> FailureKind {
        match self {
            BankError::Path(e) => e.kind(),
            BankError::Store(e) => e.kind(),
            BankError::Record(e) => e.kind(),
            BankError::Key(e) => e.kind(),
            BankError::CreateDir { .. } => FailureKind::Io,
            BankError::Miss { .. }
            | BankError::NotWritable
            | BankError::WrongKind { .. }
            | BankError::NotFound { .. }
            | BankError::Unavailable { .. }
            | BankError::NetworkFilesystem { .. }
            | BankError::NoCustomLayer { .. } => FailureKind::Input,
        }
    }
}
