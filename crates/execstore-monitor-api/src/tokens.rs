//! Who is calling: the monitor's tokens, each with a name and a [`Role`].
//!
//! A token is kept as its SHA-256 only; a request's bearer token is hashed and compared with
//! every known digest in constant time (each comparison runs whatever the answer, so the time
//! says nothing about which token, or how much of one, matched). A token never appears in an
//! answer, an error or the audit log: only its name does.

use std::fmt;
use std::str::FromStr;

use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

/// What a token may do. Reads need no token; a token's role says which writes it may make
/// (docs/operators.md, "Roles"): `read` none, `act` the recovery and control actions except
/// purge and its own saved views, `admin` everything.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Role {
    /// Identifies its holder; makes no write.
    Read,
    /// Recovery and control actions (suspend, resume, terminate, acks, timers, retries,
    /// sending events), saved views.
    Act,
    /// Everything `act` may, plus purges, declaring search attributes and deleting another's
    /// saved view.
    Admin,
}

impl Role {
    /// Every role, weakest first.
    pub const ALL: [Role; 3] = [Role::Read, Role::Act, Role::Admin];

    /// Its name: `read`, `act`, `admin`.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Read => "read",
            Role::Act => "act",
            Role::Admin => "admin",
        }
    }

    /// Whether this role may do what `needed` may.
    pub fn allows(self, needed: Role) -> bool {
        self >= needed
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A role's name that is none of `read`, `act`, `admin`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownRole(pub String);

impl fmt::Display for UnknownRole {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unknown role {:?} (the roles are read, act, admin)", self.0)
    }
}

impl std::error::Error for UnknownRole {}

impl FromStr for Role {
    type Err = UnknownRole;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Role::ALL
            .into_iter()
            .find(|r| r.as_str() == s)
            .ok_or_else(|| UnknownRole(s.to_owned()))
    }
}

/// How a token is given: as sent in the header, or as its SHA-256.
#[derive(Clone, PartialEq, Eq)]
pub enum Secret {
    /// The token itself.
    Plain(String),
    /// The token's SHA-256.
    Sha256([u8; 32]),
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(..)")
    }
}

impl Secret {
    /// A SHA-256 written as 64 hexadecimal digits.
    pub fn sha256_hex(hex: &str) -> Result<Secret, String> {
        let hex = hex.trim();
        if hex.len() != 64 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err("sha256 must be 64 hexadecimal digits (`sha256sum` of the token)".into());
        }
        let mut out = [0u8; 32];
        for (i, byte) in out.iter_mut().enumerate() {
            *byte = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).map_err(|e| e.to_string())?;
        }
        Ok(Secret::Sha256(out))
    }

    fn digest(&self) -> [u8; 32] {
        match self {
            Secret::Plain(token) => digest(token),
            Secret::Sha256(d) => *d,
        }
    }
}

/// One token: its name (what the audit log records), its role, and the secret.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TokenEntry {
    /// Its name, unique among the tokens.
    pub name: String,
    /// What it may do.
    pub role: Role,
    /// The token, or its SHA-256.
    pub secret: Secret,
}

/// The longest token name, in characters.
pub const MAX_TOKEN_NAME: usize = 64;

/// Why a set of tokens was refused (`index`: the entry's place, from 0).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TokensError {
    /// Which entry.
    pub index: usize,
    /// What is wrong with it.
    pub message: String,
}

impl fmt::Display for TokensError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "token {}: {}", self.index + 1, self.message)
    }
}

impl std::error::Error for TokensError {}

/// Checks a token's name: 1..=64 characters of letters, digits, `-`, `_`, `.`, `@`.
pub fn check_token_name(name: &str) -> Result<(), String> {
    if name.is_empty() || name.chars().count() > MAX_TOKEN_NAME {
        return Err(format!("a name has 1 to {MAX_TOKEN_NAME} characters"));
    }
    if name == "anonymous" {
        return Err("\"anonymous\" names the callers without a token".into());
    }
    if !name.chars().all(|c| c.is_alphanumeric() || "-_.@".contains(c)) {
        return Err(format!(
            "{name:?}: a name has letters, digits, '-', '_', '.' and '@' only"
        ));
    }
    Ok(())
}

/// The monitor's tokens (none: the monitor is read-only).
#[derive(Clone, Default)]
pub struct Tokens {
    entries: Vec<(String, Role, [u8; 32])>,
}

impl fmt::Debug for Tokens {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.entries.iter().map(|(n, r, _)| (n, r)))
            .finish()
    }
}

/// Who a request comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Caller {
    /// No `Authorization` header.
    Anonymous,
    /// A header that names no known token (or is not `Bearer <token>`).
    Unknown,
    /// A known token.
    Known {
        /// The token's name.
        name: String,
        /// Its role.
        role: Role,
    },
}

impl Caller {
    /// The name the audit log records: the token's, or `anonymous`.
    pub fn name(&self) -> &str {
        match self {
            Caller::Known { name, .. } => name,
            _ => "anonymous",
        }
    }

    /// The role the audit log records (empty: none).
    pub fn role_name(&self) -> &'static str {
        match self {
            Caller::Known { role, .. } => role.as_str(),
            _ => "",
        }
    }
}

impl Tokens {
    /// No token: every write is refused.
    pub fn none() -> Self {
        Self::default()
    }

    /// One `admin` token named `token` (the monitor's `--token`).
    pub fn single(token: &str) -> Self {
        Tokens {
            entries: vec![("token".into(), Role::Admin, digest(token))],
        }
    }

    /// `entries`, checked: names valid and unique, secrets not empty and unique.
    pub fn new(entries: Vec<TokenEntry>) -> Result<Self, TokensError> {
        let mut out: Vec<(String, Role, [u8; 32])> = Vec::with_capacity(entries.len());
        for (index, e) in entries.into_iter().enumerate() {
            let err = |message: String| TokensError { index, message };
            check_token_name(&e.name).map_err(err)?;
            if let Secret::Plain(t) = &e.secret {
                if t.trim().is_empty() || t.trim() != t {
                    return Err(err(
                        "a token must not be empty or start or end with white space".into()
                    ));
                }
            }
            if out.iter().any(|(n, _, _)| *n == e.name) {
                return Err(err(format!("the name {:?} is given twice", e.name)));
            }
            let d = e.secret.digest();
            if out.iter().any(|(_, _, o)| *o == d) {
                return Err(err(format!("{:?} has the same token as another entry", e.name)));
            }
            out.push((e.name, e.role, d));
        }
        Ok(Tokens { entries: out })
    }

    /// Whether there is any token (writes are possible).
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// How many tokens there are.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Who sends `authorization` (the header's value).
    pub fn identify(&self, authorization: Option<&str>) -> Caller {
        let Some(header) = authorization else {
            return Caller::Anonymous;
        };
        let Some(token) = header.strip_prefix("Bearer ").map(str::trim) else {
            return Caller::Unknown;
        };
        let given = digest(token);
        let mut found: Option<usize> = None;
        for (i, (_, _, expected)) in self.entries.iter().enumerate() {
            // Every entry is compared, whichever matched.
            if bool::from(given.ct_eq(expected)) {
                found = Some(i);
            }
        }
        match found {
            Some(i) => Caller::Known {
                name: self.entries[i].0.clone(),
                role: self.entries[i].1,
            },
            None => Caller::Unknown,
        }
    }
}

/// A token's SHA-256.
pub fn digest(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(name: &str, role: Role, secret: Secret) -> TokenEntry {
        TokenEntry {
            name: name.into(),
            role,
            secret,
        }
    }

    #[test]
    fn tokens_are_known_by_plain_text_or_digest() {
        let hex: String = digest("s3cret").iter().map(|b| format!("{b:02x}")).collect();
        let tokens = Tokens::new(vec![
            entry("alice", Role::Admin, Secret::Sha256(digest("a-token"))),
            entry(
                "bob",
                Role::Act,
                Secret::sha256_hex(&hex.to_uppercase()).expect("hex"),
            ),
            entry("carol", Role::Read, Secret::Plain("c-token".into())),
        ])
        .expect("tokens");
        let who = |h: &str| tokens.identify(Some(h));
        assert_eq!(
            who("Bearer a-token"),
            Caller::Known {
                name: "alice".into(),
                role: Role::Admin
            }
        );
        assert_eq!(
            who("Bearer s3cret"),
            Caller::Known {
                name: "bob".into(),
                role: Role::Act
            }
        );
        assert_eq!(
            who("Bearer c-token"),
            Caller::Known {
                name: "carol".into(),
                role: Role::Read
            }
        );
        assert_eq!(who("Bearer nope"), Caller::Unknown);
        assert_eq!(who("Basic a-token"), Caller::Unknown);
        assert_eq!(tokens.identify(None), Caller::Anonymous);
        assert!(!format!("{tokens:?}").contains("token\""), "{tokens:?}");
        assert_eq!(
            Tokens::single("x").identify(Some("Bearer x")).role_name(),
            "admin"
        );
    }

    #[test]
    fn bad_entries_are_refused_naming_the_entry() {
        let plain = |t: &str| Secret::Plain(t.into());
        for (entries, index, needle) in [
            (vec![entry("", Role::Act, plain("t"))], 0, "1 to 64"),
            (vec![entry("a b", Role::Act, plain("t"))], 0, "letters"),
            (vec![entry("anonymous", Role::Act, plain("t"))], 0, "anonymous"),
            (
                vec![
                    entry("a", Role::Act, plain("t")),
                    entry("a", Role::Read, plain("u")),
                ],
                1,
                "twice",
            ),
            (
                vec![
                    entry("a", Role::Act, plain("t")),
                    entry("b", Role::Read, plain("t")),
                ],
                1,
                "same token",
            ),
            (vec![entry("a", Role::Act, plain(" "))], 0, "empty"),
        ] {
            let e = Tokens::new(entries).expect_err(needle);
            assert_eq!(e.index, index);
            assert!(e.message.contains(needle), "{e}");
        }
        assert!(Secret::sha256_hex("abc").is_err());
        assert!("boss".parse::<Role>().is_err());
        assert_eq!("act".parse::<Role>(), Ok(Role::Act));
        assert!(Role::Admin.allows(Role::Act) && !Role::Act.allows(Role::Admin));
    }
}
