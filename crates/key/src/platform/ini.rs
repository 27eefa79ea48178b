//! The reader of CANN's `platform_config/<SoC>.ini` format: `[section]` headers, `key=value`
//! lines, `#` and `;` comment lines and blank lines. Keys and values are trimmed; a key given
//! twice in a section keeps its last value (as CANN's own reader does when it fills a map).

use std::collections::BTreeMap;

use super::PlatformError;

/// One parsed file: its sections, each a map of keys to raw values.
#[derive(Debug, Clone, Default)]
pub(crate) struct Ini {
    sections: BTreeMap<String, BTreeMap<String, String>>,
}

impl Ini {
    /// Parses `text`, read from `origin` (named in errors). A line that is neither a header, a
    /// `key=value` pair, a comment nor blank, a key outside any section, an empty key or an
    /// unclosed header is an error naming the line.
    pub(crate) fn parse(text: &str, origin: &str) -> Result<Ini, PlatformError> {
        let mut ini = Ini::default();
        let mut current: Option<String> = None;
        for (n, raw) in text.lines().enumerate() {
            let line = raw.trim();
            let at = |what: String| PlatformError::Syntax {
                origin: origin.to_string(),
                line: n + 1,
                what,
            };
            if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
                continue;
            }
            if let Some(rest) = line.strip_prefix('[') {
                let name = rest
                    .strip_suffix(']')
                    .ok_or_else(|| {
                        at(format!(
                            "unclosed section header {line:?}: expected `[name]`"
                        ))
                    })?
                    .trim();
                if name.is_empty() {
                    return Err(at("empty section name: expected `[name]`".into()));
                }
                ini.sections.entry(name.to_string()).or_default();
                current = Some(name.to_string());
                continue;
            }
            let Some((key, value)) = line.split_once('=') else {
                return Err(at(format!(
                    "{line:?}: expected `[section]`, `key=value` or a `#` comment"
                )));
            };
            let key = key.trim();
            if key.is_empty() {
                return Err(at(format!("{line:?}: empty key before `=`")));
            }
            let Some(section) = &current else {
                return Err(at(format!("{key:?} comes before any `[section]` header")));
            };
            ini.sections
                .entry(section.clone())
                .or_default()
                .insert(key.to_string(), value.trim().to_string());
        }
        Ok(ini)
    }

    /// The raw value of `key` in `section`.
    pub fn get(&self, section: &str, key: &str) -> Option<&str> {
        self.sections.get(section)?.get(key).map(String::as_str)
    }

    /// The entries of `section` (empty when absent), in key order.
    pub(crate) fn section(&self, section: &str) -> impl Iterator<Item = (&str, &str)> {
        self.sections
            .get(section)
            .into_iter()
            .flatten()
            .map(|(k, v)| (k.as_str(), v.as_str()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sections_keys_comments_and_last_value_wins() {
        let ini = Ini::parse(
            "# head\n[version]\nSoC_version = Ascend910B2 \n; note\n\n[SoCInfo]\nai_core_cnt=20\nai_core_cnt=24\nmemory_type=\n",
            "t.ini",
        )
        .unwrap();
        assert_eq!(ini.get("version", "SoC_version"), Some("Ascend910B2"));
        assert_eq!(ini.get("SoCInfo", "ai_core_cnt"), Some("24"));
        assert_eq!(ini.get("SoCInfo", "memory_type"), Some(""));
        assert_eq!(ini.get("SoCInfo", "nope"), None);
        assert_eq!(ini.section("version").count(), 1);
        assert_eq!(ini.section("AICoreSpec").count(), 0);
    }

    #[test]
    fn malformed_lines_are_named() {
        for (text, line, needle) in [
            ("[version\n", 1, "unclosed"),
            ("[a]\nx=1\njunk\n", 3, "expected `[section]`"),
            ("x=1\n", 1, "before any `[section]`"),
            ("[a]\n=3\n", 2, "empty key"),
            ("[ ]\n", 1, "empty section"),
        ] {
            let e = Ini::parse(text, "bad.ini").unwrap_err().to_string();
            assert!(
                e.contains("bad.ini") && e.contains(&format!("line {line}")) && e.contains(needle),
                "{text:?}: {e}"
            );
        }
    }
}
