//! The parser: a small recursive descent over the characters (no separate lexer: a path and
//! a bare value are read by different rules, so `c-17` and `2026-12-01T10:00Z` need no
//! quotes).
//!
//! ```text
//! where  := or
//! or     := and ("or" and)*
//! and    := atom ("and" atom)*
//! atom   := "(" or ")" | term
//! term   := path ( cmp value | "^=" value | "starts" value | "exists" | "not" "exists"
//!                | "in" "(" value ("," value)* ")" )
//! path   := name ("." (name | "\"quoted\""))*
//! cmp    := "=" | "!=" | "<" | "<=" | ">" | ">="
//! value  := "\"json string\"" | number | true | false | null | bare word
//! ```

use super::{Cmp, Expr, Filter, Op, Path, Term, Value};
use crate::error::{Result, StoreError};

/// The longest `where` text accepted, in bytes.
pub const MAX_WHERE_BYTES: usize = 4096;
/// The most terms one filter holds.
pub const MAX_TERMS: usize = 64;
/// The deepest nesting of parentheses.
pub const MAX_DEPTH: usize = 16;
/// The longest key of a path, in bytes.
const MAX_KEY_BYTES: usize = 256;

/// Parses a `where` text. Anything that is not the language is [`StoreError::InvalidInput`]
/// on field `where`, naming the character (counted from 1) and what was expected there.
pub fn parse(text: &str) -> Result<Filter> {
    if text.len() > MAX_WHERE_BYTES {
        return Err(StoreError::invalid(
            "where",
            format!("longer than {MAX_WHERE_BYTES} bytes"),
        ));
    }
    if text.contains('\0') {
        return Err(StoreError::invalid("where", "contains a NUL character"));
    }
    let mut p = Parser {
        chars: text.chars().collect(),
        pos: 0,
        depth: 0,
        terms: 0,
    };
    p.skip_ws();
    if p.at_end() {
        return Err(StoreError::invalid(
            "where",
            "is empty: expected a term such as status = running",
        ));
    }
    let expr = p.or()?;
    p.skip_ws();
    if !p.at_end() {
        return Err(p.error("and, or or the end"));
    }
    Ok(Filter { expr })
}

struct Parser {
    chars: Vec<char>,
    pos: usize,
    depth: usize,
    terms: usize,
}

fn name_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_' || c == '-'
}

fn bare_char(c: char) -> bool {
    !c.is_whitespace() && !matches!(c, '(' | ')' | ',' | '"')
}

impl Parser {
    fn at_end(&self) -> bool {
        self.pos >= self.chars.len()
    }

    fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).copied()
    }

    fn skip_ws(&mut self) {
        while self.peek().is_some_and(char::is_whitespace) {
            self.pos += 1;
        }
    }

    /// What is at the current position, for an error.
    fn found(&self) -> String {
        if self.at_end() {
            return "the end".to_owned();
        }
        let word: String = self.chars[self.pos..]
            .iter()
            .take_while(|c| !c.is_whitespace())
            .take(20)
            .collect();
        format!("{word:?}")
    }

    fn error(&self, expected: &str) -> StoreError {
        StoreError::invalid(
            "where",
            format!(
                "at character {}: expected {expected}, found {}",
                self.pos + 1,
                self.found()
            ),
        )
    }

    /// Whether a keyword (case-insensitive, a whole word) is next; consumes it if so.
    fn keyword(&mut self, word: &str) -> bool {
        self.skip_ws();
        let n = word.chars().count();
        if self.pos + n > self.chars.len() {
            return false;
        }
        let here: String = self.chars[self.pos..self.pos + n].iter().collect();
        if !here.eq_ignore_ascii_case(word) {
            return false;
        }
        if self
            .chars
            .get(self.pos + n)
            .is_some_and(|c| name_char(*c) || *c == '.')
        {
            return false;
        }
        self.pos += n;
        true
    }

    fn symbol(&mut self, s: &str) -> bool {
        self.skip_ws();
        let n = s.chars().count();
        if self.chars.len() >= self.pos + n
            && self.chars[self.pos..self.pos + n].iter().copied().eq(s.chars())
        {
            self.pos += n;
            true
        } else {
            false
        }
    }

    fn or(&mut self) -> Result<Expr> {
        let mut parts = vec![self.and()?];
        while self.keyword("or") {
            parts.push(self.and()?);
        }
        Ok(if parts.len() == 1 {
            parts.remove(0)
        } else {
            Expr::Or(parts)
        })
    }

    fn and(&mut self) -> Result<Expr> {
        let mut parts = vec![self.atom()?];
        while self.keyword("and") {
            parts.push(self.atom()?);
        }
        Ok(if parts.len() == 1 {
            parts.remove(0)
        } else {
            // `a and (b and c)` is `a and b and c`.
            let mut flat = Vec::new();
            for p in parts {
                match p {
                    Expr::And(inner) => flat.extend(inner),
                    p => flat.push(p),
                }
            }
            Expr::And(flat)
        })
    }

    fn atom(&mut self) -> Result<Expr> {
        self.skip_ws();
        if self.symbol("(") {
            if self.depth >= MAX_DEPTH {
                return Err(self.error(&format!("at most {MAX_DEPTH} nested parentheses")));
            }
            self.depth += 1;
            let inner = self.or()?;
            self.depth -= 1;
            if !self.symbol(")") {
                return Err(self.error("and, or or )"));
            }
            return Ok(inner);
        }
        self.term().map(Expr::Term)
    }

    fn term(&mut self) -> Result<Term> {
        self.terms += 1;
        if self.terms > MAX_TERMS {
            return Err(self.error(&format!("the end (at most {MAX_TERMS} terms)")));
        }
        let path = self.path()?;
        self.skip_ws();
        let op = if self.keyword("exists") {
            Op::Exists
        } else if self.keyword("not") {
            if !self.keyword("exists") {
                return Err(self.error("exists (after not)"));
            }
            Op::Missing
        } else if self.keyword("in") {
            Op::In(self.list()?)
        } else if self.keyword("starts") || self.symbol("^=") {
            match self.value()? {
                Value::Str(s) => Op::Prefix(s),
                other => {
                    return Err(StoreError::invalid(
                        "where",
                        format!("{path}: ^= takes a text, found {other}"),
                    ))
                }
            }
        } else {
            let cmp = if self.symbol("!=") {
                Cmp::Ne
            } else if self.symbol("<=") {
                Cmp::Le
            } else if self.symbol(">=") {
                Cmp::Ge
            } else if self.symbol("<") {
                Cmp::Lt
            } else if self.symbol(">") {
                Cmp::Gt
            } else if self.symbol("=") {
                Cmp::Eq
            } else {
                return Err(self.error("an operator (=, !=, <, <=, >, >=, ^=, in, exists)"));
            };
            let value = self.value()?;
            if cmp.is_range() && matches!(value, Value::Bool(_) | Value::Null) {
                return Err(StoreError::invalid(
                    "where",
                    format!(
                        "{path}: {} takes a number, a text or a time, found {value}",
                        cmp.as_str()
                    ),
                ));
            }
            Op::Cmp(cmp, value)
        };
        Ok(Term { path, op })
    }

    fn path(&mut self) -> Result<Path> {
        self.skip_ws();
        let root = self.name();
        if root.is_empty() || !root.starts_with(|c: char| c.is_alphabetic()) {
            return Err(self.error("a path such as status or context.customer_id"));
        }
        let mut path = Path {
            root,
            keys: Vec::new(),
        };
        while self.peek() == Some('.') {
            self.pos += 1;
            let key = if self.peek() == Some('"') {
                self.quoted()?
            } else {
                let key = self.name();
                if key.is_empty() {
                    return Err(self.error("a key after . (a name, or a \"quoted\" key)"));
                }
                key
            };
            if key.is_empty() || key.len() > MAX_KEY_BYTES {
                return Err(StoreError::invalid(
                    "where",
                    format!("a key of {path} is empty or longer than {MAX_KEY_BYTES} bytes"),
                ));
            }
            path.keys.push(key);
        }
        Ok(path)
    }

    fn name(&mut self) -> String {
        let start = self.pos;
        while self.peek().is_some_and(name_char) {
            self.pos += 1;
        }
        self.chars[start..self.pos].iter().collect()
    }

    /// A JSON string literal, decoded.
    fn quoted(&mut self) -> Result<String> {
        let start = self.pos;
        self.pos += 1; // the opening quote
        loop {
            match self.peek() {
                None => {
                    self.pos = start;
                    return Err(self.error("a closing \" for the text that starts here"));
                }
                Some('\\') => self.pos += 2,
                Some('"') => {
                    self.pos += 1;
                    break;
                }
                Some(_) => self.pos += 1,
            }
        }
        let end = self.pos.min(self.chars.len());
        let literal: String = self.chars[start..end].iter().collect();
        serde_json::from_str::<String>(&literal).map_err(|e| {
            StoreError::invalid(
                "where",
                format!("at character {}: not a JSON string: {e}", start + 1),
            )
        })
    }

    fn value(&mut self) -> Result<Value> {
        self.skip_ws();
        if self.peek() == Some('"') {
            return self.quoted().map(Value::Str);
        }
        let start = self.pos;
        while self.peek().is_some_and(bare_char) {
            self.pos += 1;
        }
        let word: String = self.chars[start..self.pos].iter().collect();
        if word.is_empty() {
            return Err(self.error("a value (a number, \"text\", a word, true, false or null)"));
        }
        Ok(match word.as_str() {
            "true" => Value::Bool(true),
            "false" => Value::Bool(false),
            "null" => Value::Null,
            _ => match serde_json::from_str::<serde_json::Number>(&word) {
                Ok(n) => match n.as_f64() {
                    Some(f) if f.is_finite() => Value::Num(f),
                    _ => {
                        self.pos = start;
                        return Err(self.error("a finite number"));
                    }
                },
                Err(_) => Value::Str(word),
            },
        })
    }

    fn list(&mut self) -> Result<Vec<Value>> {
        if !self.symbol("(") {
            return Err(self.error("( after in"));
        }
        let mut values = vec![self.value()?];
        while self.symbol(",") {
            values.push(self.value()?);
        }
        if !self.symbol(")") {
            return Err(self.error(", or )"));
        }
        if values.len() > MAX_TERMS {
            return Err(StoreError::invalid(
                "where",
                format!("in (...) holds more than {MAX_TERMS} values"),
            ));
        }
        Ok(values)
    }
}
