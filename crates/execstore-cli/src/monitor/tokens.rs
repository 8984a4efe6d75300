//! The monitor's tokens file (`--tokens FILE`, `EXECSTORE_MONITOR_TOKENS`): TOML, one
//! `[[token]]` table per token with its `name`, its `role` (`read`, `act`, `admin`) and
//! either `sha256` (the token's SHA-256 in hex, preferred) or `token` (the token itself):
//!
//! ```toml
//! [[token]]
//! name = "ada"
//! role = "admin"
//! sha256 = "2bb80d537b1da3e38bd30361aa855686bde0eacd7162fef6a25fe97bf527a25b"
//! ```
//!
//! A malformed file is refused with the line it fails at; no token ever appears in a message.

use std::path::Path;

use execstore_monitor_api::{Role, Secret, TokenEntry, Tokens};
use serde::Deserialize;

use crate::error::CliError;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    token: Vec<toml::Spanned<Entry>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    name: String,
    role: String,
    sha256: Option<String>,
    token: Option<String>,
}

/// The line (from 1) of byte offset `at` in `text`.
fn line_of(text: &str, at: usize) -> usize {
    text[..at.min(text.len())].bytes().filter(|b| *b == b'\n').count() + 1
}

/// Parses a tokens file's text; `shown` names it in errors.
pub fn parse(text: &str, shown: &str) -> Result<Tokens, CliError> {
    let file: File = toml::from_str(text).map_err(|e| {
        let line = e
            .span()
            .map(|s| format!("line {}: ", line_of(text, s.start)))
            .unwrap_or_default();
        // toml's message quotes the offending line, which may hold a token: only its own words.
        CliError::Input(format!("{shown}: {line}{}", e.message()))
    })?;
    if file.token.is_empty() {
        return Err(CliError::Input(format!(
            "{shown}: no [[token]] table: give at least one token (name, role, sha256)"
        )));
    }
    let mut lines = Vec::new();
    let mut entries = Vec::new();
    for spanned in file.token {
        let line = line_of(text, spanned.span().start);
        let at = |message: String| CliError::Input(format!("{shown}: line {line}: {message}"));
        let e = spanned.into_inner();
        let role: Role = e
            .role
            .parse()
            .map_err(|r: execstore_monitor_api::UnknownRole| at(r.to_string()))?;
        let secret = match (e.sha256, e.token) {
            (Some(hex), None) => Secret::sha256_hex(&hex).map_err(at)?,
            (None, Some(token)) => Secret::Plain(token),
            (Some(_), Some(_)) => return Err(at("give sha256 or token, not both".into())),
            (None, None) => return Err(at("no sha256 (or token)".into())),
        };
        lines.push(line);
        entries.push(TokenEntry {
            name: e.name,
            role,
            secret,
        });
    }
    Tokens::new(entries)
        .map_err(|e| CliError::Input(format!("{shown}: line {}: {}", lines[e.index], e.message)))
}

/// Reads and parses the tokens file at `path`.
pub fn load(path: &Path) -> Result<Tokens, CliError> {
    let shown = path.display().to_string();
    let text = std::fs::read_to_string(path)
        .map_err(|e| CliError::Input(format!("cannot read the tokens file {shown}: {e}")))?;
    parse(&text, &shown)
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEX: &str = "2bb80d537b1da3e38bd30361aa855686bde0eacd7162fef6a25fe97bf527a25b";

    #[test]
    fn a_good_file_gives_named_tokens_with_roles() {
        let text = format!(
            "[[token]]\nname = \"ada\"\nrole = \"admin\"\nsha256 = \"{HEX}\"\n\n\
             [[token]]\nname = \"otto\"\nrole = \"act\"\ntoken = \"plain-one\"\n"
        );
        let tokens = parse(&text, "t.toml").expect("parse");
        assert_eq!(tokens.len(), 2);
        let who = tokens.identify(Some("Bearer secret"));
        assert_eq!(who.name(), "ada");
        assert_eq!(who.role_name(), "admin");
        assert_eq!(tokens.identify(Some("Bearer plain-one")).role_name(), "act");
    }

    #[test]
    fn a_malformed_file_is_refused_naming_the_line_and_never_the_token() {
        let cases = [
            ("[[token]]\nname = \"a\"\nrole = \"boss\"\ntoken = \"tok-1\"\n", "line 1: unknown role \"boss\""),
            ("[[token]]\nname = \"a\"\nrole = \"act\"\ntoken = \"tok-1\"\n[[token]]\nname = \"a\"\nrole = \"act\"\ntoken = \"tok-2\"\n", "line 5: the name \"a\" is given twice"),
            ("[[token]]\nname = \"a\"\nrole = \"act\"\n", "line 1: no sha256"),
            ("[[token]]\nname = \"a\"\nrole = \"act\"\nsha256 = \"abc\"\n", "line 1: sha256 must be 64"),
            ("\n\n[[token]]\nname = \"a\"\nrole = \"act\"\ntoken = \"tok-1\"\nbroken\n", "line 7: "),
            ("[[token]]\nname = \"a\"\nrole = \"act\"\ntoken = \"tok-1\"\ncolour = \"red\"\n", "unknown field `colour`"),
            ("", "no [[token]]"),
        ];
        for (text, want) in cases {
            let e = parse(text, "t.toml").expect_err(want).to_string();
            assert!(e.starts_with("t.toml: "), "{e}");
            assert!(e.contains(want), "{want}: {e}");
            assert!(!e.contains("tok-1") && !e.contains("tok-2"), "a token in {e}");
        }
    }
}
