//! Command-line splitting: option lists as `--name=value` / `--name value` pairs
//! ([`parse_args`]), and a tool's own flags told apart from ATC options ([`split_atc_args`]).
//! Names are canonicalised here (dashes stripped, `-` read as `_`); values are checked elsewhere.

use super::error::OptionError;
use super::table::OPTIONS;

/// Splits an argument list into (name, value) pairs: `--name=value` or `--name value`, names
/// with one or two leading dashes, `-` and `_` interchangeable in names. Does not check names.
pub fn parse_args<I, S>(args: I) -> Result<Vec<(String, String)>, OptionError>
where
    I: IntoIterator<Item = S>,
    S: AsRef<str>,
{
    let mut out = Vec::new();
    let mut it = args.into_iter();
    while let Some(arg) = it.next() {
        let arg = arg.as_ref();
        let Some(body) = arg.strip_prefix("--").or_else(|| arg.strip_prefix('-')) else {
            return Err(OptionError::UnexpectedArgument {
                arg: arg.to_string(),
            });
        };
        if let Some((name, value)) = body.split_once('=') {
            out.push((canonical_name(name), value.to_string()));
        } else {
            let name = canonical_name(body);
            match it.next() {
                Some(v) => out.push((name, v.as_ref().to_string())),
                None => return Err(OptionError::MissingValue { name }),
            }
        }
    }
    Ok(out)
}

/// An option name without leading dashes, `-` read as `_`.
pub(super) fn canonical_name(name: &str) -> String {
    name.trim_start_matches('-').replace('-', "_")
}

/// Splits a command line into a tool's own arguments and ATC options: an argument
/// `--name[=value]` is an ATC option when `name` (with `-` read as `_`) is in [`OPTIONS`] and not
/// in `own_flags`; `--name value` takes the next argument as its value. Everything else stays in
/// the tool's own list, in order. Tools whose flags share a name with an ATC option (`--model`,
/// for instance) list it in `own_flags`.
pub fn split_atc_args(args: Vec<String>, own_flags: &[&str]) -> (Vec<String>, Vec<String>) {
    let is_atc = |a: &str| {
        let Some(body) = a.strip_prefix("--") else {
            return false;
        };
        let name = canonical_name(body.split('=').next().unwrap_or(""));
        !own_flags.contains(&name.as_str()) && OPTIONS.iter().any(|o| o.name == name)
    };
    let (mut own, mut atc) = (Vec::new(), Vec::new());
    let mut it = args.into_iter();
    while let Some(a) = it.next() {
        if is_atc(&a) {
            let needs_value = !a.contains('=');
            atc.push(a);
            if needs_value {
                atc.extend(it.next());
            }
        } else {
            own.push(a);
        }
    }
    (own, atc)
}
