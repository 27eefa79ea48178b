//! The kind (hence the exit code, C status and Python exception, from the library's error
//! table `failure::TABLE`) of every variant of every library error type, each classified
//! explicitly, and the table against the C header and the Python package; the binaries' exit
//! codes themselves are `tests/it/cli_exit_codes.rs`.

use std::path::PathBuf;

mod scan;

/// One constructed error: `Type::Variant` as written, the error, the kind it must have.
type Case = (
    &'static str,
    Box<dyn std::error::Error + Send + Sync + 'static>,
    tunebank::failure::FailureKind,
);

/// `case!(Kind, Type::Variant …)`: a [`Case`] named by its type and variant; `case!(Kind,
/// struct Type …)` for a struct error.
macro_rules! case {
    ($kind:ident, struct $t:ident $($body:tt)*) => {
        (
            stringify!($t),
            Box::new($t $($body)*) as Box<dyn std::error::Error + Send + Sync>,
            tunebank::failure::FailureKind::$kind,
        )
    };
    ($kind:ident, $t:ident :: $v:ident $($body:tt)*) => {
        (
            concat!(stringify!($t), "::", stringify!($v)),
            Box::new($t::$v $($body)*) as Box<dyn std::error::Error + Send + Sync>,
            tunebank::failure::FailureKind::$kind,
        )
    };
}

/// Every variant of every error type of the tunebank crate (search-strategies' errors
/// reach a command only inside `MeasureError`), constructed, with the kind it must have:
/// the reference table, written from the error's meaning (its doc), not from `kind()`. A
/// wrapper holding a busy, damaged or unreachable bank must say so, so wrappers are built
/// around those, not around bad input (which a fall-through default would also give).
#[rustfmt::skip]
fn every_variant() -> Vec<Case> {
    use std::io::{Error as IoError, ErrorKind};
    use tunebank::bank::interchange::aoe_graph::AoeGraphError;
    use tunebank::bank::interchange::InterchangeError;
    use tunebank::bank::paths::PathError;
    use tunebank::bank::Damage;
    use tunebank::bank::store::StoreError;
    use tunebank::bank::{Backend, BankError, MaintenanceError, RecordError};
    use tunebank::tune::gdat::GdatError;
    use tunebank::inspect::InspectError;
    use tunebank::job::JobError;
    use tunebank::key::{
        BankKey, Format, KeyError, NodeError, OptionError, ParseKeyError, RecordKind, ResolveError, UnknownSoc,
    };
    use tunebank::key::platform::PlatformError;
    use tunebank::bank::interchange::aoe::NotMapped;
    use tunebank::bank::migrate::MigrateError;
    use tunebank::measure::cpu::{InvalidTiling, OutputMismatch};
    use tunebank::measure::exec::{CommandLineError, ProtocolError};
    use tunebank::measure::sim::cube::TooLarge;
    use tunebank::measure::sim::SocModelError;
    use tunebank::measure::sim::graph::GraphModelError;
    use tunebank::measure::MeasureError;
    use tunebank::model::partition::PartitionError;
    use tunebank::model::ModelError;
    use tunebank::pg::PgError;
    use tunebank::queue::QueueError;
    use tunebank::tune::sgat::{ApplyError, SgatBestError, SgatError, SpaceBuildError};
    use tunebank::tune::TuneError;

    let path = || PathBuf::from("bank.redb");
    let s = |x: &str| x.to_owned();
    let key = BankKey([3; 32]);
    let io = IoError::from;
    let busy = || StoreError::Busy {
        path: path(),
        reason: "held exclusively",
    };
    let damaged = || RecordError::Damaged {
        key,
        reason: Damage::BadMagic,
    };
    let unreachable = || PgError::Unreachable {
        url: s("postgres://db.example/tunebank"),
        detail: s("connection refused"),
    };
    let url = || s("postgres://db.example/tunebank");
    let key_err = || KeyError::NanAttr { attr: s("alpha") };
    let measure = || MeasureError::UnknownRunner(s("board"));
    // A real driver error of a statement whose connection is gone (nothing listens there).
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let lost = postgres::Client::connect(
        &format!("host=127.0.0.1 port={port} user=t connect_timeout=5"),
        postgres::NoTls,
    )
    .err()
    .expect("nothing listens on a port just freed");
    let interchange_busy = || InterchangeError::Store(busy());
    vec![
        // StoreError
        case!(Busy, StoreError::Busy { path: path(), reason: "held" }),
        case!(Io, StoreError::Io { path: path(), source: io(ErrorKind::StorageFull) }),
        case!(Input, StoreError::Io { path: path(), source: io(ErrorKind::NotFound) }),
        case!(Damaged, StoreError::Corrupted { path: path(), detail: s("bad magic") }),
        case!(Input, StoreError::Backend { path: path(), detail: s("table layout 9") }),
        case!(Damaged, StoreError::NeedsRecovery { path: path() }),
        case!(Unreachable, StoreError::Postgres(unreachable())),
        case!(Input, StoreError::ReadOnly { path: path() }),
        // RecordError
        case!(Damaged, RecordError::Damaged { key, reason: Damage::BadVersion }),
        case!(Input, RecordError::UnsupportedVersion { key, found: 9, supported: 1 }),
        // PathError
        case!(Input, PathError::TuneBankPathMissing { path: path() }),
        case!(Input, PathError::TuneBankPathNotDir { path: path() }),
        case!(Io, PathError::TuneBankPathPermission { path: path() }),
        case!(Input, PathError::NoLocation),
        case!(Input, PathError::BadSoc { soc: s("../x") }),
        // BankError
        case!(Io, BankError::Path(PathError::TuneBankPathPermission { path: path() })),
        case!(Busy, BankError::Store(busy())),
        case!(Damaged, BankError::Record(damaged())),
        case!(Input, BankError::Key(key_err())),
        case!(Input, BankError::Miss { key }),
        case!(Input, BankError::NotWritable),
        case!(Input, BankError::WrongKind { expected: RecordKind::Op, found: RecordKind::Graph }),
        case!(Input, BankError::NotFound { path: path() }),
        case!(Input, BankError::Unavailable { path: path(), backend: Backend::Sled }),
        case!(Input, BankError::NoCustomLayer { path: None }),
        case!(Input, BankError::NetworkFilesystem { path: path(), fs: "nfs" }),
        case!(Io, BankError::CreateDir { path: path(), source: io(ErrorKind::PermissionDenied) }),
        // InterchangeError
        case!(Io, InterchangeError::Io { what: s("writing"), source: io(ErrorKind::StorageFull) }),
        case!(Damaged, InterchangeError::Store(StoreError::NeedsRecovery { path: path() })),
        case!(Busy, InterchangeError::Bank(BankError::Store(busy()))),
        case!(Input, InterchangeError::Line { line: 2, detail: s("not JSON") }),
        case!(Input, InterchangeError::KeyMismatch { line: 1, given: key, derived: BankKey([4; 32]) }),
        case!(Input, InterchangeError::WrongKind { key, expected: RecordKind::Op, found: RecordKind::Gradient }),
        case!(Input, InterchangeError::Aoe { detail: s("no ops") }),
        // AoeGraphError
        case!(Io, AoeGraphError::Read { path: path(), source: io(ErrorKind::PermissionDenied) }),
        case!(Io, AoeGraphError::File {
            path: path(),
            source: Box::new(AoeGraphError::Read { path: path(), source: io(ErrorKind::Other) }),
        }),
        case!(Input, AoeGraphError::Line { line: 4, detail: s("three fields") }),
        // MaintenanceError
        case!(Io, MaintenanceError::Read { path: path(), source: io(ErrorKind::Other) }),
        case!(Busy, MaintenanceError::ExportFile { path: path(), source: interchange_busy() }),
        case!(Damaged, MaintenanceError::AoeFile {
            path: path(),
            source: InterchangeError::Bank(BankError::Record(damaged())),
        }),
        case!(Busy, MaintenanceError::Interchange(interchange_busy())),
        case!(Unreachable, MaintenanceError::Bank(BankError::Store(StoreError::Postgres(unreachable())))),
        case!(Input, MaintenanceError::Resolve(ResolveError::Options(OptionError::MissingSoc))),
        case!(Input, MaintenanceError::AoeFileName {
            path: path(),
            found: s("SoC \"Ascend910B2\""),
            expected: s("Ascend910B1 (--soc_version)"),
        }),
        // InspectError
        case!(Busy, InspectError::Bank(BankError::Store(busy()))),
        case!(Damaged, InspectError::Store(StoreError::Corrupted { path: path(), detail: s("x") })),
        case!(Damaged, InspectError::Record(damaged())),
        case!(Input, InspectError::Options(OptionError::MissingSoc)),
        case!(Input, InspectError::Resolve(ResolveError::Key { node: s("n"), source: key_err() })),
        case!(Input, InspectError::Key(key_err())),
        // ModelError
        case!(Input, ModelError::Read { path: s("m.onnx"), source: io(ErrorKind::NotFound) }),
        case!(Io, ModelError::Read { path: s("m.onnx"), source: io(ErrorKind::PermissionDenied) }),
        case!(Input, ModelError::NotOnnx { path: s("m"), reason: s("protobuf") }),
        case!(Input, ModelError::Truncated { path: s("m"), len: 3, reason: s("eof") }),
        case!(Input, ModelError::UnsupportedOpset { path: s("m"), found: Some(3) }),
        case!(Input, ModelError::Invalid { path: s("m"), reason: s("edge") }),
        case!(Input, ModelError::InputShape { path: s("m"), input: s("x"), reason: s("rank") }),
        case!(Input, ModelError::OutNodes { path: s("m"), node: s("y"), index: 1, reason: s("no") }),
        case!(Input, ModelError::Dynamic { path: s("m"), reason: s("-1") }),
        case!(Input, ModelError::Malformed { path: s("m.caffemodel"), expected: "a caffemodel", reason: s("x") }),
        case!(Input, ModelError::TruncatedFile { path: s("m.pb"), expected: "a GraphDef", len: 3, reason: s("eof") }),
        case!(Input, ModelError::Syntax { path: s("m.prototxt"), line: 1, column: 2, reason: s("x") }),
        case!(Input, ModelError::Weights { weight: s("w"), layer: s("c"), layer_type: s("Convolution"), reason: s("x") }),
        case!(Input, ModelError::Framework { input: s("--framework=3"), reason: s("x") }),
        // TuneError
        case!(Io, TuneError::Model(ModelError::Read { path: s("m"), source: io(ErrorKind::Other) })),
        case!(Input, TuneError::Resolve(ResolveError::Options(OptionError::MissingSoc))),
        case!(Damaged, TuneError::Bank(BankError::Record(damaged()))),
        case!(Input, TuneError::Runner(measure())),
        case!(Input, TuneError::UnknownStrategy { name: s("annealing2") }),
        case!(Input, TuneError::UnsupportedSoc { soc: s("Ascend310P3"), runner: s("cpu"), why: s("no model"), supported: vec![] }),
        case!(Io, TuneError::Report { path: s("r.json"), source: io(ErrorKind::StorageFull) }),
        // PgError
        case!(Input, PgError::BadUrl { url: url(), reason: s("no host") }),
        case!(Unreachable, PgError::Unreachable { url: url(), detail: s("refused") }),
        case!(Unreachable, PgError::Timeout { url: url(), detail: s("10 s") }),
        case!(Input, PgError::Auth { url: url(), detail: s("password") }),
        case!(Input, PgError::Tls { url: url(), detail: s("untrusted") }),
        case!(Input, PgError::Denied { url: url(), detail: s("INSERT") }),
        case!(Busy, PgError::Conflict { url: url(), detail: s("40001") }),
        case!(Input, PgError::Schema { url: url(), detail: s("schema 9") }),
        case!(Io, PgError::Server { url: url(), code: Some(s("53100")), detail: s("disk full") }),
        // QueueError (a `Db` error with a server's answer, an I/O failure, needs a server)
        case!(Unreachable, QueueError::Pg(unreachable())),
        case!(Unreachable, QueueError::Db(lost)),
        case!(Input, QueueError::UnknownJob { id: 7 }),
        case!(Damaged, QueueError::Row { what: s("settings"), detail: s("not JSON") }),
        case!(Busy, QueueError::Tune(TuneError::Bank(BankError::Store(busy())))),
        case!(Damaged, QueueError::Bank(BankError::Record(damaged()))),
        case!(Io, QueueError::Report { path: s("r.json"), source: io(ErrorKind::Other) }),
        // SgatError
        case!(Busy, SgatError::Tune(TuneError::Bank(BankError::Store(busy())))),
        case!(Input, SgatError::Partition(PartitionError::Key { name: s("sg"), source: key_err() })),
        case!(Damaged, SgatError::Apply(ApplyError::Bank(BankError::Record(damaged())))),
        case!(Input, SgatError::Runner(s("cpu"))),
        // SgatBestError
        case!(Input, SgatBestError::Key(key_err())),
        case!(Input, SgatBestError::Model(GraphModelError::Soc(s("Ascend310B1")))),
        case!(Input, SgatBestError::Space(SpaceBuildError(s("too many")))),
        case!(Input, SgatBestError::Strategy(s("x"))),
        case!(Input, SgatBestError::NoCandidate),
        // ApplyError
        case!(Unreachable, ApplyError::Bank(BankError::Store(StoreError::Postgres(unreachable())))),
        case!(Input, ApplyError::Key { name: s("sg0"), source: key_err() }),
        case!(Input, ApplyError::Subgraph { name: s("sg0"), what: s("no node 9") }),
        case!(Input, struct SpaceBuildError(s("over the limit"))),
        // GdatError
        case!(Input, GdatError::NoParameters),
        case!(Input, GdatError::NoGradients { backward: vec![] }),
        case!(Input, GdatError::Cluster(s("rank 0"))),
        case!(Input, GdatError::ClusterFile { path: s("c.json"), problem: s("field") }),
        case!(Input, GdatError::Segments(9)),
        case!(Input, GdatError::Simulator(s("op"))),
        case!(Input, GdatError::Measure(measure())),
        case!(Busy, GdatError::Tune(TuneError::Bank(BankError::Store(busy())))),
        case!(Input, GdatError::Strategy(s("x"))),
        case!(Input, GdatError::NothingMeasured),
        case!(Input, GdatError::Key(key_err())),
        case!(Unreachable, GdatError::Bank(BankError::Store(StoreError::Postgres(unreachable())))),
        // JobError
        case!(Input, JobError::Invalid { input: s("AOE_MODE=3"), expected: s("1, 2 or 4") }),
        case!(Input, JobError::Unsupported { input: s("--runner cpu"), reason: s("SGAT: sim") }),
        case!(Input, JobError::Read { input: s("--config x"), what: s("aoe.ini"), source: io(ErrorKind::NotFound) }),
        case!(Io, JobError::ResultDir { path: path(), source: io(ErrorKind::PermissionDenied) }),
        case!(Io, JobError::ResultFile { path: path(), source: io(ErrorKind::Other) }),
        case!(Input, JobError::Options(OptionError::MissingSoc)),
        case!(Input, JobError::Resolve(ResolveError::Options(OptionError::MissingSoc))),
        case!(Input, JobError::Model(ModelError::Read { path: s("m.onnx"), source: io(ErrorKind::NotFound) })),
        case!(Damaged, JobError::Bank(BankError::Record(damaged()))),
        case!(Busy, JobError::Tune(TuneError::Bank(BankError::Store(busy())))),
        case!(Input, JobError::Sgat(SgatError::Runner(s("cpu")))),
        case!(Unreachable, JobError::Gdat(GdatError::Bank(BankError::Store(StoreError::Postgres(unreachable()))))),
        case!(Damaged, JobError::Inspect(InspectError::Bank(BankError::Record(damaged())))),
        case!(Unreachable, JobError::Queue(QueueError::Pg(unreachable()))),
        // MeasureError
        case!(Input, MeasureError::Unsupported { runner: s("cpu"), what: s("Conv") }),
        case!(Input, MeasureError::InvalidTask(s("no inputs"))),
        case!(Input, MeasureError::Space(search_strategies::SpaceError::BadParameter(s("b1")))),
        case!(Input, MeasureError::Runner { command: s("./run"), problem: s("exit 3") }),
        case!(Input, MeasureError::TooLarge(s("2^40"))),
        case!(Input, MeasureError::UnknownRunner(s("board"))),
        // GraphModelError
        case!(Input, GraphModelError::Strategy(s("cut 9"))),
        case!(Input, GraphModelError::Node(NodeError { node: 1, what: s("x") })),
        case!(Input, GraphModelError::Soc(s("Ascend310B1"))),
        case!(Input, GraphModelError::Op { node: 2, source: measure() }),
        // CommandLineError
        case!(Input, CommandLineError::UnterminatedSingleQuote),
        case!(Input, CommandLineError::UnterminatedDoubleQuote),
        case!(Input, CommandLineError::TrailingBackslash),
        case!(Input, CommandLineError::Empty),
        // NotMapped, InvalidTiling, OutputMismatch, TooLarge
        case!(Input, struct NotMapped { reason: s("op_type: missing") }),
        case!(Input, struct InvalidTiling { reason: s("mc: missing") }),
        case!(Input, struct OutputMismatch { reason: s("output[1]") }),
        case!(Input, struct TooLarge { what: s("A bytes") }),
        // MigrateError
        case!(Input, MigrateError::UnknownSchema { version: 9 }),
        case!(Input, MigrateError::Gradient { from: 2 }),
        // ProtocolError
        case!(Input, ProtocolError::NotJson(s("["))),
        case!(Input, ProtocolError::Version(s("9"))),
        case!(Input, ProtocolError::WrongId { got: s("2"), expected: 1 }),
        case!(Input, ProtocolError::Malformed(s("no results"))),
        case!(Input, ProtocolError::WrongCount { got: 1, expected: 2 }),
        // PartitionError
        case!(Input, PartitionError::Key { name: s("sg"), source: key_err() }),
        // NodeError
        case!(Input, struct NodeError { node: 0, what: s("x") }),
        // ResolveError
        case!(Input, ResolveError::Options(OptionError::MissingSoc)),
        case!(Input, ResolveError::Key { node: s("n"), source: key_err() }),
        case!(Input, ResolveError::UnresolvedDim { node: s("n"), tensor: s("x"), dim: 0, expected: s("a dim") }),
        case!(Input, ResolveError::RankMismatch {
            node: s("n"), input: 0, graph_input: s("x"), given: vec![1], rank: 2, model: vec![1, 2],
        }),
        case!(Input, ResolveError::Layout {
            node: s("n"), tensor: s("x"), shape: vec![1], from: Format::NCHW, to: Format::NHWC, expected: s("rank 4"),
        }),
        // OptionError
        case!(Input, OptionError::Unknown { name: s("x") }),
        case!(Input, OptionError::InvalidValue { name: s("x"), value: s("y"), expected: s("z") }),
        case!(Input, OptionError::Duplicate { name: s("x"), first: s("1"), second: s("2") }),
        case!(Input, OptionError::MissingValue { name: s("x") }),
        case!(Input, OptionError::UnexpectedArgument { arg: s("x") }),
        case!(Input, OptionError::Conflict { first: s("a"), second: s("b"), why: s("c") }),
        case!(Input, OptionError::FileUnreadable { name: s("x"), path: s("p"), reason: s("r") }),
        case!(Input, OptionError::FileContent { name: s("x"), path: s("p"), line: 1, text: s("t"), expected: s("e") }),
        case!(Input, OptionError::NotModelled { name: s("x"), value: s("v"), why: s("w"), default: s("") }),
        case!(Input, OptionError::MissingSoc),
        // KeyError
        case!(Input, KeyError::NanAttr { attr: s("a") }),
        case!(Input, KeyError::DynamicDim { tensor: s("x"), dim: 0, value: -1 }),
        case!(Input, KeyError::DanglingEdge { at: s("n1"), source_desc: s("n9") }),
        case!(Input, KeyError::Cycle { node: 1, op_type: s("Add") }),
        case!(Input, KeyError::UnknownGraphOption { name: s("x"), expected: s("y") }),
        // Struct errors
        case!(Input, struct ParseKeyError { given: s("zz"), problem: s("not hex") }),
        case!(Input, struct UnknownSoc { given: s("Ascend999") }),
        // PlatformError
        case!(Input, PlatformError::Syntax { origin: s("a.ini"), line: 1, what: s("w") }),
        case!(Input, PlatformError::Value { origin: s("a.ini"), section: "SoCInfo", key: "ai_core_cnt", what: s("w") }),
        case!(Io, PlatformError::Read { path: s("a.ini"), error: s("e") }),
        case!(Input, PlatformError::OtherSoc { path: s("a.ini"), found: s("A"), wanted: s("B") }),
        case!(Input, PlatformError::Unknown { given: s("A"), where_: s(""), known: s("B") }),
        // SocModelError
        case!(Io, SocModelError::Platform(PlatformError::Read { path: s("a.ini"), error: s("e") })),
        case!(Input, SocModelError::Lacks { version: s("A"), what: "L2", file: s("f") }),
    ]
}

/// Public error types of the library that no caller can meet as a typed error, with why.
const NOT_PUBLIC: [(&str, &str); 1] = [(
    "InferError",
    "in the private module model::infer; it becomes a skipped op's reason text",
)];

/// Every error type of the library, counted by hand (a pinned list, not read by [`scan`]): the
/// scanner must find exactly these, so a derive form it cannot read fails the test, and so
/// does a new error type until it is added here (and given its cases above).
const ERROR_TYPES: [&str; 37] = [
    "AoeGraphError",
    "ApplyError",
    "BankError",
    "CommandLineError",
    "GdatError",
    "GraphModelError",
    "InferError",
    "InspectError",
    "InterchangeError",
    "InvalidTiling",
    "JobError",
    "KeyError",
    "MaintenanceError",
    "MeasureError",
    "MigrateError",
    "ModelError",
    "NodeError",
    "NotMapped",
    "OptionError",
    "OutputMismatch",
    "ParseKeyError",
    "PartitionError",
    "PathError",
    "PgError",
    "PlatformError",
    "ProtocolError",
    "QueueError",
    "RecordError",
    "ResolveError",
    "SgatBestError",
    "SgatError",
    "SocModelError",
    "SpaceBuildError",
    "StoreError",
    "TooLarge",
    "TuneError",
    "UnknownSoc",
];

/// Every error type (a derive of thiserror's `Error`, in any form: [`scan`]) under `src/`
/// outside the binaries, and for an enum every variant: (type, variants; empty for a struct).
fn library_error_types() -> Vec<scan::ErrorType> {
    scan::error_types_under(&PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/crates"
    )))
}

/// Each variant of each library error type is classified explicitly: `library_kind` knows the
/// type (none falls through to "bad input" as an unknown type would) and gives the kind its
/// meaning calls for; and the table here covers every type and variant in the source, so a new
/// one fails this test until it is given its kind here (its `kind()` match, having no
/// catch-all arm, fails to compile until it is given one there).
#[test]
fn every_library_error_variant_has_its_kind() {
    use tunebank::classify::library_kind;
    let cases = every_variant();
    for (name, e, want) in &cases {
        let err: &(dyn std::error::Error + 'static) = &**e;
        assert_eq!(library_kind(err), Some(*want), "{name}: {e}");
    }
    let covered: std::collections::BTreeSet<&str> = cases.iter().map(|c| c.0).collect();
    let mut missing = Vec::new();
    let types = library_error_types();
    let mut read: Vec<&str> = types.iter().map(|(t, _)| t.as_str()).collect();
    read.sort_unstable();
    assert_eq!(read, ERROR_TYPES, "the error types read from the source");
    for (ty, variants) in &types {
        if NOT_PUBLIC.iter().any(|(t, _)| t == ty) {
            continue;
        }
        if variants.is_empty() && !covered.contains(ty.as_str()) {
            missing.push(ty.clone());
        }
        for v in variants {
            let name = format!("{ty}::{v}");
            if !covered.contains(name.as_str()) {
                missing.push(name);
            }
        }
    }
    assert!(missing.is_empty(), "variants without a case: {missing:?}");
    // And nothing in the table names a type or variant that is gone.
    for name in &covered {
        let (ty, v) = name.split_once("::").unwrap_or((name, ""));
        let found = types
            .iter()
            .any(|(t, vs)| t == ty && (v.is_empty() || vs.iter().any(|x| x == v)));
        assert!(found, "{name} is not in the source");
    }
}

/// Every variant gets the same kind however a front end finds it: the cause-chain walk of the
/// command lines (`classify::error_kind`) gives the error's own kind, which the C ABI's
/// statuses and Python's exceptions answer by; so every front end answers a variant from the
/// same row of the error table. And the reference table meets every kind.
#[test]
fn every_front_end_finds_the_same_kind_for_every_variant() {
    use tunebank::classify::error_kind;
    use tunebank::failure::FailureKind;
    let cases = every_variant();
    for (name, e, want) in &cases {
        let err: &(dyn std::error::Error + 'static) = &**e;
        assert_eq!(error_kind(err), *want, "{name}: {e}");
        assert_eq!(want.answer().kind, *want, "{name}");
    }
    for kind in FailureKind::ALL {
        assert!(cases.iter().any(|c| c.2 == kind), "no case of {kind:?}");
    }
}

/// The error table's C statuses are the C header's (name and value), its Python exceptions are
/// classes of the Python package under `TunebankError`, exported by `tunebank`, and README shows
/// the table as it is.
#[test]
fn the_error_table_is_the_c_headers_the_python_packages_and_readmes() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let read = |p: &str| std::fs::read_to_string(root.join(p)).unwrap();
    let header = read("capi/include/tunebank.h");
    let errors_py = read("python/tunebank/errors.py");
    let init_py = read("python/tunebank/__init__.py");
    let readme = read("README.md").replace('`', "");
    for a in tunebank::failure::TABLE {
        let row = format!(
            "({:?}) | {} | {} ({}) | tunebank.{} |",
            a.kind, a.exit_code, a.c_status_name, a.c_status, a.python_exception
        );
        assert!(readme.contains(&row), "README's error table lacks {row}");
        let enumerator = format!("\n  {} = {},\n", a.c_status_name, a.c_status);
        assert!(header.contains(&enumerator), "{a:?}: not in tunebank.h");
        let class = format!("\nclass {}(TunebankError", a.python_exception);
        assert!(
            errors_py.contains(&class),
            "{a:?}: not in tunebank/errors.py"
        );
        let quoted = format!("\"{}\"", a.python_exception);
        assert!(
            errors_py.contains(&quoted) && init_py.contains(&quoted),
            "{a:?}: not in the __all__ of tunebank.errors and tunebank"
        );
    }
}

/// The scanner reads every form a derive of thiserror's `Error` takes, and nothing quoted.
#[test]
fn the_scanner_reads_every_derive_form() {
    let src = r##"
use thiserror::Error;
use thiserror::{Error as ThisError};
/// `#[derive(thiserror::Error)] pub enum InDoc { A }` is a doc, not code.
#[derive(Debug, thiserror::Error)]
pub enum OneLine { A, #[error("b")] B(#[from] std::io::Error), C { x: Vec<(u8, u8)> } }
#[derive(
    Clone,
    Debug,
    thiserror::Error,
)]
pub(crate) enum MultiLine {
    /// A doc with a comma, and a brace {.
    #[error("a, {0}")]
    A(String),
    B = 2,
}
mod inner {
    #[derive(Debug, Error)]
    #[error("indented")]
    pub(in crate::x) struct Indented;
}
#[derive(Debug, super::Error)] struct NotThiserrors;
#[cfg_attr(test, derive(Debug, ThisError))]
enum Renamed { Only }
const QUOTED: &str = "#[derive(thiserror::Error)] struct InString;";
const RAW: &str = r#"#[derive(Error)] struct InRawString; "#;
fn f<'a>(c: char) -> bool { c == '"' || c == '\'' }
/* #[derive(Error)] struct InBlockComment; /* nested */ */
#[derive(Error, Debug)]
#[error("x")]
pub struct Last(pub u8);
"##;
    let types = scan::error_types(src).unwrap();
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    assert_eq!(
        types,
        [
            ("OneLine".to_owned(), s(&["A", "B", "C"])),
            ("MultiLine".to_owned(), s(&["A", "B"])),
            ("Indented".to_owned(), vec![]),
            ("Renamed".to_owned(), s(&["Only"])),
            ("Last".to_owned(), vec![]),
        ]
    );
    // Without the `use`, a bare `Error` is some other derive.
    let other = src.replace("use thiserror::Error;", "use std::error::Error;");
    let names: Vec<String> = (scan::error_types(&other).unwrap().into_iter())
        .map(|t| t.0)
        .collect();
    assert_eq!(names, ["OneLine", "MultiLine", "Renamed"]);
}
