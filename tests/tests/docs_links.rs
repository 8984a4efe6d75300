//! The documents match the tree: every relative link of README.md and docs/*.md resolves (the
//! file or folder exists, and a `#fragment` names a heading of the Markdown file it points
//! into), and every repository path they name in code (`crates/...`, `web/...`, the first
//! column of README's Layout) exists. A file moved or renamed without its documents fails here.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Component, Path, PathBuf};

use pulldown_cmark::{CodeBlockKind, Event, HeadingLevel, Options, Parser, Tag, TagEnd};

/// The repository's root (this crate is its `tests/`).
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ has a parent")
        .to_path_buf()
}

/// README.md and every Markdown file of docs/, relative to the root.
fn documents(root: &Path) -> Vec<PathBuf> {
    let mut docs = vec![PathBuf::from("README.md")];
    if let Ok(entries) = fs::read_dir(root.join("docs")) {
        let mut md: Vec<PathBuf> = entries
            .filter_map(|e| e.ok())
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "md"))
            .map(|p| p.strip_prefix(root).expect("under the root").to_path_buf())
            .collect();
        md.sort();
        docs.extend(md);
    }
    docs
}

/// GitHub's anchor of a heading: lower case, only letters, digits, `-`, `_` and spaces kept,
/// spaces made `-`.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == '-' || *c == '_' || *c == ' ')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// What one document says: its links, the repository paths its code names, its anchors.
#[derive(Default)]
struct Scan {
    links: Vec<String>,
    code_paths: Vec<String>,
    anchors: BTreeSet<String>,
}

/// The folders at the root whose paths the documents name in code.
const TOP: &[&str] = &[
    "crates/",
    "tests/",
    "web/",
    "bench/",
    "scripts/",
    "wit/",
    "fuzz/",
    "docs/",
    ".ci/",
    "examples/",
];

/// Paths the documents name that a build or a run makes, never committed.
const MADE_BY_RUNS: &[&str] = &["fuzz/target", "fuzz/artifacts"];

/// A repository path in a piece of code, or `None`: a word starting with one of [`TOP`] made
/// only of path characters, with no placeholder (`NAME`, `{a,b}`, `*`), and not one of
/// [`MADE_BY_RUNS`].
fn repo_path(word: &str) -> Option<String> {
    let word = word
        .trim_start_matches(['(', '"', '\''])
        .trim_end_matches([',', ';', ':', '(', ')', '"', '\'', '.']);
    let word = word.strip_prefix("./").unwrap_or(word);
    if !TOP.iter().any(|t| word.starts_with(t)) {
        return None;
    }
    let plain = word
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '/' | '.' | '_' | '-'));
    let made = MADE_BY_RUNS
        .iter()
        .any(|m| word.trim_end_matches('/').starts_with(m));
    if !plain || made || word.contains("NAME") || word.contains("..") {
        return None;
    }
    Some(word.to_owned())
}

fn scan(text: &str) -> Scan {
    let mut out = Scan::default();
    let mut heading: Option<String> = None;
    let mut seen: BTreeSet<String> = BTreeSet::new();
    // Inside README's Layout section, its code block's first column is a list of paths.
    let mut last_heading = String::new();
    let mut in_layout_block = false;
    for event in Parser::new_ext(text, Options::ENABLE_TABLES) {
        match event {
            Event::Start(Tag::Heading { .. }) => heading = Some(String::new()),
            Event::End(TagEnd::Heading(level)) => {
                let h = heading.take().unwrap_or_default();
                let base = slug(&h);
                let mut anchor = base.clone();
                let mut n = 0;
                while seen.contains(&anchor) {
                    n += 1;
                    anchor = format!("{base}-{n}");
                }
                seen.insert(anchor.clone());
                out.anchors.insert(anchor);
                if level <= HeadingLevel::H2 {
                    last_heading = h;
                }
            }
            Event::Text(t) | Event::Code(t) if heading.is_some() => {
                if let Some(h) = heading.as_mut() {
                    h.push_str(&t);
                }
            }
            Event::Start(Tag::Link { dest_url, .. }) | Event::Start(Tag::Image { dest_url, .. }) => {
                out.links.push(dest_url.to_string())
            }
            Event::Code(code) => out
                .code_paths
                .extend(code.split_whitespace().filter_map(repo_path)),
            Event::Start(Tag::CodeBlock(CodeBlockKind::Fenced(_))) => {
                in_layout_block = last_heading == "Layout"
            }
            Event::End(TagEnd::CodeBlock) => in_layout_block = false,
            Event::Text(block) if in_layout_block => {
                for line in block.lines() {
                    if let Some(first) = line.split_whitespace().next().filter(|_| !line.starts_with(' ')) {
                        match repo_path(first) {
                            Some(p) => out.code_paths.push(p),
                            None => out
                                .code_paths
                                .push(format!("{first} (a Layout entry that is no repository path)")),
                        }
                    }
                }
            }
            _ => {}
        }
    }
    out
}

/// `base`'s folder joined with a relative `target`, normalized (`..` taken out), relative to
/// the root; `None` if it leaves the repository.
fn resolve(doc: &Path, target: &str) -> Option<PathBuf> {
    let mut parts: Vec<Component<'_>> = doc.parent().map(|p| p.components().collect()).unwrap_or_default();
    for c in Path::new(target).components() {
        match c {
            Component::ParentDir => {
                parts.pop()?;
            }
            Component::CurDir => {}
            other => parts.push(other),
        }
    }
    Some(parts.iter().collect())
}

/// Every problem of the documents under `root`, as text.
fn problems(root: &Path) -> Vec<String> {
    let docs = documents(root);
    let scans: Vec<(PathBuf, Scan)> = docs
        .iter()
        .map(|d| {
            let text =
                fs::read_to_string(root.join(d)).unwrap_or_else(|e| panic!("read {}: {e}", d.display()));
            (d.clone(), scan(&text))
        })
        .collect();
    let mut found = Vec::new();
    for (doc, s) in &scans {
        for link in &s.links {
            if link.contains("://") || link.starts_with("mailto:") {
                continue;
            }
            let (file, fragment) = match link.split_once('#') {
                Some((f, frag)) => (f, Some(frag)),
                None => (link.as_str(), None),
            };
            let target = if file.is_empty() {
                Some(doc.clone())
            } else {
                resolve(doc, file)
            };
            let Some(target) = target else {
                found.push(format!("{}: link {link} leaves the repository", doc.display()));
                continue;
            };
            if !root.join(&target).exists() {
                found.push(format!("{}: link {link}: no {}", doc.display(), target.display()));
                continue;
            }
            if let Some(fragment) = fragment {
                let anchors = match scans.iter().find(|(d, _)| *d == target) {
                    Some((_, t)) => t.anchors.clone(),
                    None if target.extension().is_some_and(|x| x == "md") => {
                        scan(&fs::read_to_string(root.join(&target)).unwrap_or_default()).anchors
                    }
                    None => {
                        found.push(format!(
                            "{}: link {link}: a fragment into a file that is not Markdown",
                            doc.display()
                        ));
                        continue;
                    }
                };
                if !anchors.contains(fragment) {
                    found.push(format!(
                        "{}: link {link}: {} has no heading #{fragment}",
                        doc.display(),
                        target.display()
                    ));
                }
            }
        }
        for path in &s.code_paths {
            if !root.join(path).exists() {
                found.push(format!("{}: names {path}, which does not exist", doc.display()));
            }
        }
    }
    found
}

#[test]
fn documents_link_and_name_what_exists() {
    let root = root();
    let found = problems(&root);
    assert!(
        found.is_empty(),
        "the documents do not match the tree:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_check_sees_what_it_checks() {
    // The documents hold links and paths, so the test above did look at something.
    let root = root();
    let docs = documents(&root);
    assert!(docs.len() > 1, "README.md and docs/*.md: {docs:?}");
    let readme = scan(&fs::read_to_string(root.join("README.md")).expect("README.md"));
    assert!(
        readme.links.iter().any(|l| l.starts_with("docs/")),
        "README links docs/"
    );
    assert!(
        readme.code_paths.iter().any(|p| p == "crates/execstore"),
        "the Layout's first column is read"
    );

    // A broken link, a missing heading, a stale path and a stale Layout entry are each found.
    let dir = tempfile::tempdir().expect("temporary directory");
    fs::create_dir_all(dir.path().join("docs")).expect("docs/");
    fs::create_dir_all(dir.path().join("crates/a")).expect("crates/a");
    fs::write(
        dir.path().join("README.md"),
        "# R\n\n## Layout\n\n```\ncrates/a   here\ncrates/b   gone\n```\n\n[ok](docs/x.md#one) \
         [bad](docs/y.md) [anchor](docs/x.md#two) [self](#layout) `crates/a` `crates/c/d.rs` \
         `crates/{a,b}` `fuzz/corpus/NAME/`\n",
    )
    .expect("README");
    fs::write(dir.path().join("docs/x.md"), "# One\n\n[up](../README.md#r)\n").expect("x.md");
    let found = problems(dir.path());
    let expected = [
        "README.md: link docs/y.md: no docs/y.md",
        "README.md: link docs/x.md#two: docs/x.md has no heading #two",
        "README.md: names crates/b, which does not exist",
        "README.md: names crates/c/d.rs, which does not exist",
    ];
    assert_eq!(found, expected, "what the check finds in a made-up tree");
}

#[test]
fn anchors_are_githubs() {
    assert_eq!(slug("SQLite, and harel's files"), "sqlite-and-harels-files");
    assert_eq!(
        slug("W2: the workspace log against reflexr 0.1.1"),
        "w2-the-workspace-log-against-reflexr-011"
    );
    assert_eq!(
        slug("Python's sqlite3 in the same process"),
        "pythons-sqlite3-in-the-same-process"
    );
}
