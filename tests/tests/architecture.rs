//! The house's shape, checked: the core's modules form no cycle, and no source file passes
//! the size at which it should have been split along its seams.
//!
//! A cycle is counted between modules that are not one inside the other: a module and its
//! own children are one unit (a child reading its parent's items is how Rust splits a
//! file), but two siblings that import each other, or a contract's files that import one
//! another round a loop, are the tangle the layout forbids. Paths are resolved through
//! `pub use` re-exports to the file that defines the item.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

use syn::visit::Visit;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// `a/b/mod.rs` and `a/b.rs` are module `a::b`; `lib.rs` is the root (``).
fn module_of(src: &Path, file: &Path) -> Option<String> {
    let rel = file.strip_prefix(src).ok()?.with_extension("");
    let mut parts: Vec<String> = rel.iter().map(|p| p.to_string_lossy().into_owned()).collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib")) {
        parts.pop();
    }
    if parts.last().is_some_and(|p| p == "tests") {
        return None; // a test module: not part of the house's dependencies
    }
    Some(parts.join("::"))
}

fn is_cfg_test(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("cfg")
            && a.meta
                .require_list()
                .is_ok_and(|l| l.tokens.to_string() == "test")
    })
}

#[derive(Default)]
struct Module {
    /// Names an item of this file defines.
    defines: BTreeSet<String>,
    /// Names this file re-exports, with the absolute path they come from.
    reexports: BTreeMap<String, Vec<String>>,
    /// `pub use x::*` sources.
    globs: Vec<Vec<String>>,
    /// Every absolute path this file names.
    paths: Vec<Vec<String>>,
}

struct Collect<'a> {
    module: &'a str,
    m: Module,
}

/// Makes `path` (as written in `module`) absolute from the crate root.
fn absolute(module: &str, path: &[String], children: &BTreeSet<String>) -> Option<Vec<String>> {
    let mut base: Vec<String> = if module.is_empty() {
        Vec::new()
    } else {
        module.split("::").map(str::to_owned).collect()
    };
    let mut rest = path;
    match path.first().map(String::as_str) {
        Some("crate" | "$crate") => {
            base.clear();
            rest = &path[1..];
        }
        Some("self") => rest = &path[1..],
        Some("super") => {
            while rest.first().is_some_and(|s| s == "super") {
                base.pop();
                rest = &rest[1..];
            }
        }
        Some(first) => {
            let mut child = base.clone();
            child.push(first.to_owned());
            if !children.contains(&child.join("::")) {
                return None; // an extern crate, a local item or std
            }
        }
        None => return None,
    }
    base.extend(rest.iter().cloned());
    Some(base)
}

fn use_paths(tree: &syn::UseTree, prefix: &mut Vec<String>, out: &mut Vec<(Vec<String>, Option<String>)>) {
    match tree {
        syn::UseTree::Path(p) => {
            prefix.push(p.ident.to_string());
            use_paths(&p.tree, prefix, out);
            prefix.pop();
        }
        syn::UseTree::Name(n) => {
            let mut path = prefix.clone();
            let name = n.ident.to_string();
            if name != "self" {
                path.push(name.clone());
            }
            let as_name = if name == "self" {
                prefix.last().cloned()
            } else {
                Some(name)
            };
            out.push((path, as_name));
        }
        syn::UseTree::Rename(r) => {
            let mut path = prefix.clone();
            path.push(r.ident.to_string());
            out.push((path, Some(r.rename.to_string())));
        }
        syn::UseTree::Glob(_) => out.push((prefix.clone(), None)),
        syn::UseTree::Group(g) => {
            for t in &g.items {
                use_paths(t, prefix, out);
            }
        }
    }
}

impl<'ast> Visit<'ast> for Collect<'_> {
    fn visit_item(&mut self, item: &'ast syn::Item) {
        let (attrs, ident) = match item {
            syn::Item::Struct(i) => (&i.attrs, Some(&i.ident)),
            syn::Item::Enum(i) => (&i.attrs, Some(&i.ident)),
            syn::Item::Fn(i) => (&i.attrs, Some(&i.sig.ident)),
            syn::Item::Trait(i) => (&i.attrs, Some(&i.ident)),
            syn::Item::Type(i) => (&i.attrs, Some(&i.ident)),
            syn::Item::Const(i) => (&i.attrs, Some(&i.ident)),
            syn::Item::Static(i) => (&i.attrs, Some(&i.ident)),
            syn::Item::Macro(i) => (&i.attrs, i.ident.as_ref()),
            syn::Item::Mod(i) => (&i.attrs, None),
            syn::Item::Impl(i) => (&i.attrs, None),
            syn::Item::Use(i) => (&i.attrs, None),
            _ => return syn::visit::visit_item(self, item),
        };
        if is_cfg_test(attrs) {
            return;
        }
        if let Some(ident) = ident {
            self.m.defines.insert(ident.to_string());
        }
        syn::visit::visit_item(self, item);
    }

    fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
        let mut found = Vec::new();
        use_paths(&u.tree, &mut Vec::new(), &mut found);
        let public = !matches!(u.vis, syn::Visibility::Inherited);
        for (path, name) in found {
            if public {
                match &name {
                    Some(n) => {
                        self.m.reexports.insert(n.clone(), path.clone());
                    }
                    None => self.m.globs.push(path.clone()),
                }
            }
            self.m.paths.push(path);
        }
    }

    fn visit_path(&mut self, p: &'ast syn::Path) {
        let segs: Vec<String> = p.segments.iter().map(|s| s.ident.to_string()).collect();
        if segs.len() > 1 {
            self.m.paths.push(segs);
        }
        syn::visit::visit_path(self, p);
    }

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        // `$crate::a::b` inside macro bodies: read the tokens as text.
        let text = mac.tokens.to_string().replace(' ', "");
        for (i, _) in text.match_indices("$crate::") {
            let rest = &text[i + "$crate::".len()..];
            let path: Vec<String> = std::iter::once("crate".to_owned())
                .chain(
                    rest.split("::")
                        .map(|s| {
                            s.chars()
                                .take_while(|c| c.is_alphanumeric() || *c == '_')
                                .collect::<String>()
                        })
                        .take_while(|s| !s.is_empty()),
                )
                .collect();
            self.m.paths.push(path);
        }
        syn::visit::visit_macro(self, mac);
    }
}

/// The module (file) that defines what `path` names, following re-exports.
fn resolve(mods: &BTreeMap<String, Module>, path: &[String], depth: usize) -> Option<String> {
    if depth > 16 {
        return None;
    }
    for k in (0..=path.len()).rev() {
        let module = path[..k].join("::");
        let Some(m) = mods.get(&module) else { continue };
        let Some(name) = path.get(k) else {
            return Some(module);
        };
        if m.defines.contains(name) {
            return Some(module);
        }
        if let Some(target) = m.reexports.get(name) {
            let mut full = target.clone();
            full.extend(path[k + 1..].iter().cloned());
            return resolve(mods, &full, depth + 1).or(Some(module));
        }
        for glob in &m.globs {
            let mut full = glob.clone();
            full.extend(path[k..].iter().cloned());
            if let Some(found) = resolve(mods, &full, depth + 1) {
                if found != glob.join("::") || mods.get(&found).is_some_and(|f| f.defines.contains(name)) {
                    return Some(found);
                }
            }
        }
        return Some(module);
    }
    None
}

fn nested(a: &str, b: &str) -> bool {
    a.is_empty() || b.is_empty() || b.starts_with(&format!("{a}::")) || a.starts_with(&format!("{b}::"))
}

/// The crate's module graph: module -> the modules it uses (nesting excluded).
fn module_graph(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let mut modules: BTreeMap<String, syn::File> = BTreeMap::new();
    for file in files {
        let Some(module) = module_of(src, &file) else {
            continue;
        };
        let text = fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let parsed = syn::parse_file(&text).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        modules.insert(module, parsed);
    }
    let children: BTreeSet<String> = modules.keys().cloned().collect();
    let mut mods: BTreeMap<String, Module> = BTreeMap::new();
    for (name, file) in &modules {
        let mut c = Collect {
            module: name,
            m: Module::default(),
        };
        c.visit_file(file);
        let mut m = c.m;
        let module = c.module;
        m.paths = m
            .paths
            .iter()
            .filter_map(|p| absolute(module, p, &children))
            .collect();
        m.reexports = m
            .reexports
            .into_iter()
            .filter_map(|(n, p)| absolute(module, &p, &children).map(|p| (n, p)))
            .collect();
        m.globs = m
            .globs
            .iter()
            .filter_map(|p| absolute(module, p, &children))
            .collect();
        mods.insert(name.clone(), m);
    }
    let mut graph = BTreeMap::new();
    for (name, m) in &mods {
        let uses: BTreeSet<String> = m
            .paths
            .iter()
            .filter_map(|p| resolve(&mods, p, 0))
            .filter(|target| !nested(name, target))
            .collect();
        graph.insert(name.clone(), uses);
    }
    graph
}

/// The strongly connected components with more than one module (Tarjan).
fn cycles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct T<'a> {
        g: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on: BTreeSet<&'a str>,
        out: Vec<Vec<String>>,
    }
    fn visit<'a>(t: &mut T<'a>, v: &'a str) {
        let n = t.index.len();
        t.index.insert(v, n);
        t.low.insert(v, n);
        t.stack.push(v);
        t.on.insert(v);
        for w in t.g.get(v).into_iter().flatten() {
            let w = w.as_str();
            if !t.g.contains_key(w) {
                continue;
            }
            if !t.index.contains_key(w) {
                visit(t, w);
                let lw = t.low[w];
                let lv = t.low.get_mut(v).expect("visited");
                *lv = (*lv).min(lw);
            } else if t.on.contains(w) {
                let iw = t.index[w];
                let lv = t.low.get_mut(v).expect("visited");
                *lv = (*lv).min(iw);
            }
        }
        if t.low[v] == t.index[v] {
            let mut comp = Vec::new();
            while let Some(w) = t.stack.pop() {
                t.on.remove(w);
                comp.push(w.to_owned());
                if w == v {
                    break;
                }
            }
            if comp.len() > 1 {
                comp.sort();
                t.out.push(comp);
            }
        }
    }
    let mut t = T {
        g: graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        out: Vec::new(),
    };
    for v in graph.keys() {
        if !t.index.contains_key(v.as_str()) {
            visit(&mut t, v);
        }
    }
    t.out
}

#[test]
fn the_cores_modules_form_no_cycle() {
    let graph = module_graph(&repo().join("crates/execstore/src"));
    assert!(
        graph.contains_key("executions::model"),
        "the graph reads the core: {:?}",
        graph.keys()
    );
    let found = cycles(&graph);
    let explain: Vec<String> = found
        .iter()
        .map(|c| {
            let edges: Vec<String> = c
                .iter()
                .flat_map(|a| {
                    graph[a]
                        .iter()
                        .filter(|b| c.contains(b))
                        .map(move |b| format!("{a} -> {b}"))
                })
                .collect();
            edges.join(", ")
        })
        .collect();
    assert!(
        found.is_empty(),
        "module cycles in crates/execstore/src: {explain:#?}"
    );
}

#[test]
fn the_checker_sees_a_cycle_between_siblings() {
    // The checker itself: two sibling files that import each other are found.
    let dir = tempfile::tempdir().expect("tempdir");
    let src = dir.path();
    fs::write(src.join("lib.rs"), "mod a;\nmod b;\npub use a::A;\n").expect("write");
    fs::write(
        src.join("a.rs"),
        "use crate::b::B;\npub struct A(pub Option<Box<B>>);\n",
    )
    .expect("write");
    fs::write(src.join("b.rs"), "pub struct B(pub Option<Box<crate::A>>);\n").expect("write");
    let graph = module_graph(src);
    assert_eq!(cycles(&graph), vec![vec!["a".to_owned(), "b".to_owned()]]);
    // ...and a child using its parent is not one.
    fs::write(src.join("b.rs"), "pub struct B;\n").expect("write");
    assert!(cycles(&module_graph(src)).is_empty());
}

/// Source files past this many lines should have been split along their seams.
const MAX_LINES: usize = 800;

#[test]
fn no_source_file_passes_the_split_size() {
    let root = repo();
    let files = sources(&root);
    assert!(
        files.len() > 100,
        "the check reads the tree: {} files",
        files.len()
    );
    let mut long: Vec<String> = files
        .iter()
        .filter_map(|f| {
            let n = fs::read_to_string(f).ok()?.lines().count();
            (n > MAX_LINES).then(|| format!("{} ({n} lines)", f.strip_prefix(&root).unwrap_or(f).display()))
        })
        .collect();
    long.sort();
    assert!(long.is_empty(), "files over {MAX_LINES} lines: {long:#?}");
}

const SOURCE_EXTENSIONS: [&str; 6] = ["rs", "js", "mjs", "py", "html", "css"];
const SOURCE_DIRS: [&str; 3] = ["crates/", "bench/", "tests/"];

/// The tree's source files: what git tracks or would track (built output such as the npm
/// package's generated `wasm/` is ignored), or, outside a git checkout, every file below the
/// source folders but build and vendored ones.
fn sources(root: &Path) -> Vec<PathBuf> {
    let listed = std::process::Command::new("git")
        .arg("-C")
        .arg(root)
        .args(["ls-files", "--cached", "--others", "--exclude-standard"])
        .output()
        .ok()
        .filter(|out| out.status.success());
    let is_source = |name: &str| SOURCE_EXTENSIONS.iter().any(|e| name.ends_with(&format!(".{e}")));
    match listed {
        Some(out) => String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter(|l| {
                SOURCE_DIRS.iter().any(|d| l.starts_with(d)) && !l.contains("/vendor/") && is_source(l)
            })
            .map(|l| root.join(l))
            .filter(|p| p.is_file())
            .collect(),
        None => {
            let mut files = Vec::new();
            for dir in SOURCE_DIRS {
                collect_sources(&root.join(dir), &mut files);
            }
            files
        }
    }
}

fn collect_sources(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if path.is_dir() {
            if !matches!(
                name.as_str(),
                "target" | "node_modules" | "vendor" | "pkg" | "wasm" | ".venv" | "__pycache__"
            ) {
                collect_sources(&path, out);
            }
        } else if SOURCE_EXTENSIONS.iter().any(|e| name.ends_with(&format!(".{e}"))) {
            out.push(path);
        }
    }
}
