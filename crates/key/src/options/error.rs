//! [`OptionError`], the one error type of option parsing and resolution, and how values appear
//! in its messages.

use super::table::OPTIONS;
use tunebank_failure::FailureKind;

/// An option list or option value that cannot be used. Every variant names the option and says
/// what was expected.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum OptionError {
    /// The name is not in the option table.
    #[error("unknown option `--{name}`: expected one of {}", known_options())]
    Unknown {
        /// The name as given (dashes stripped).
        name: String,
    },
    /// A value that does not have the expected form.
    #[error("--{name}={}: expected {expected}", shown(value))]
    InvalidValue {
        /// Option name.
        name: String,
        /// The value given.
        value: String,
        /// The expected form.
        expected: String,
    },
    /// An option given more than once.
    #[error(
        "--{name} given twice ({} and {}): expected it at most once",
        shown(first),
        shown(second)
    )]
    Duplicate {
        /// Option name.
        name: String,
        /// First value.
        first: String,
        /// Second value.
        second: String,
    },
    /// `--name` at the end of an argument list, with no value.
    #[error("--{name} has no value: expected `--{name}=VALUE` or `--{name} VALUE`")]
    MissingValue {
        /// Option name.
        name: String,
    },
    /// An argument that is not `--name=value` or `--name value`.
    #[error(
        "argument {}: expected an option `--name=value` or `--name value`",
        shown(arg)
    )]
    UnexpectedArgument {
        /// The argument.
        arg: String,
    },
    /// Two options that cannot be combined.
    #[error("--{first} and --{second} cannot be combined: {why}")]
    Conflict {
        /// One option.
        first: String,
        /// The other.
        second: String,
        /// The rule.
        why: String,
    },
    /// A file-valued option whose file cannot be read.
    #[error("--{name}={}: cannot read the file: {reason}", shown(path))]
    FileUnreadable {
        /// Option name.
        name: String,
        /// The path.
        path: String,
        /// The I/O error.
        reason: String,
    },
    /// A file-valued option whose content is malformed.
    #[error(
        "--{name}={}: line {line} {}: expected {expected}",
        shown(path),
        shown(text)
    )]
    FileContent {
        /// Option name.
        name: String,
        /// The path.
        path: String,
        /// 1-based line (0 when the whole file is at fault).
        line: usize,
        /// The offending text.
        text: String,
        /// The expected form.
        expected: String,
    },
    /// An option whose value (any but its default) would change ops or shapes in a way
    /// tunebank does not model: refused rather than accepted and ignored.
    #[error(
        "--{name}={}: not modelled by tunebank: {why}; expected it unset{}",
        shown(value),
        if default.is_empty() { String::new() } else { format!(" or {default}") }
    )]
    NotModelled {
        /// Option name.
        name: String,
        /// The value given.
        value: String,
        /// What is not modelled.
        why: String,
        /// The default, the one value accepted (`""`: none).
        default: String,
    },
    /// A SoC is needed but `--soc_version` was not given.
    #[error(
        "--soc_version is required here: expected one of {}",
        crate::soc::known_socs()
    )]
    MissingSoc,
}

fn known_options() -> String {
    OPTIONS
        .iter()
        .map(|s| s.name)
        .collect::<Vec<_>>()
        .join(", ")
}

/// A value as it appears in messages: bare when it is a plain word, quoted otherwise.
pub(super) fn shown(v: &str) -> String {
    if !v.is_empty()
        && v.chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-./+,".contains(c))
    {
        v.to_string()
    } else {
        format!("{v:?}")
    }
}

impl OptionError {
    /// Every option error is the request's, an option file that cannot be read included (the
    /// option names it).
    pub fn kind(&self) -> FailureKind {
        match self {
            OptionError::Unknown { .. }
            | OptionError::InvalidValue { .. }
            | OptionError::Duplicate { .. }
            | OptionError::MissingValue { .. }
            | OptionError::UnexpectedArgument { .. }
            | OptionError::Conflict { .. }
            | OptionError::FileUnreadable { .. }
            | OptionError::FileContent { .. }
            | OptionError::NotModelled { .. }
            | OptionError::MissingSoc => FailureKind::Input,
        }
    }
}
