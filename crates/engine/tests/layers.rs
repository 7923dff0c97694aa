//! The engine's modules import downward only (docs/engine.md, "Layers"). The crate's
//! source is parsed (syn) from `lib.rs` down its `mod` declarations, leaving out
//! `#[cfg(test)]` items; every path a file names (`use` lines, paths in code and in macro
//! arguments such as a `const` assertion) is resolved to the module file it lands in.
//! Two rules, each a graph that must have no loop:
//!
//! - between files: a folder's `mod.rs` (or `virtio.rs` beside `virtio/`) declares its
//!   children, so it sits above them, and a child naming one of its items (`super::Gro`)
//!   closes a loop just as two siblings naming each other do;
//! - between the sub-trees of every folder, the crate root included: `chain` naming
//!   anything of `gro` while anything in `gro` names `chain` is a loop, whichever files.
//!
//! A loop means a shared definition should move down a layer.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use proc_macro2::{TokenStream, TokenTree};
use syn::visit::Visit;

/// A module's path from the crate root: `[]` for `lib.rs`, `["gro", "facts"]`.
type ModPath = Vec<String>;

/// One module file of the crate: where it is, and the modules it declares.
struct ModFile {
    file: PathBuf,
    children: Vec<String>,
    /// The names its own `use` lines bring in (`pub use error::GsoError` gives
    /// `GsoError -> [error, GsoError]`), so that a path through a re-export lands in
    /// the file that defines the item.
    imports: BTreeMap<String, Vec<String>>,
    syntax: syn::File,
}

/// One edge of the graph, with the first reference that made it (for the message).
#[derive(Clone)]
struct Witness {
    file: String,
    path: String,
}

fn is_cfg_test(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|attr| {
        attr.path().is_ident("cfg")
            && attr.parse_args::<syn::Ident>().is_ok_and(|ident| ident == "test")
    })
}

fn path_attr(attrs: &[syn::Attribute]) -> Option<String> {
    attrs.iter().find(|a| a.path().is_ident("path")).map(|attr| match &attr.meta {
        syn::Meta::NameValue(syn::MetaNameValue {
            value: syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(s), .. }),
            ..
        }) => s.value(),
        _ => panic!("a #[path] attribute that is not `#[path = \"...\"]`"),
    })
}

/// A `use` tree as the names it binds, each with the path it names: `use a::{b, c as d,
/// self}` gives `b -> a::b`, `d -> a::c`, `a -> a`; a glob `a::*` gives `* -> a`.
fn flatten_use(tree: &syn::UseTree) -> Vec<(String, Vec<String>)> {
    fn walk(prefix: &mut Vec<String>, tree: &syn::UseTree, out: &mut Vec<(String, Vec<String>)>) {
        let mut bind = |name: &syn::Ident, alias: &syn::Ident, prefix: &[String]| {
            let mut path = prefix.to_vec();
            if name != "self" {
                path.push(name.to_string());
            }
            let alias = if alias == "self" { prefix.last().cloned().unwrap_or_default() } else { alias.to_string() };
            out.push((alias, path));
        };
        match tree {
            syn::UseTree::Path(p) => {
                prefix.push(p.ident.to_string());
                walk(prefix, &p.tree, out);
                prefix.pop();
            }
            syn::UseTree::Name(n) => bind(&n.ident, &n.ident, prefix),
            syn::UseTree::Rename(r) => bind(&r.ident, &r.rename, prefix),
            syn::UseTree::Glob(_) => out.push(("*".to_string(), prefix.clone())),
            syn::UseTree::Group(g) => g.items.iter().for_each(|item| walk(prefix, item, out)),
        }
    }
    let mut out = Vec::new();
    walk(&mut Vec::new(), tree, &mut out);
    out
}

/// The names a file's top-level non-test `use` lines bring in, each with its path.
fn imports(syntax: &syn::File) -> BTreeMap<String, Vec<String>> {
    syntax
        .items
        .iter()
        .filter_map(|item| match item {
            syn::Item::Use(u) if !is_cfg_test(&u.attrs) => Some(flatten_use(&u.tree)),
            _ => None,
        })
        .flatten()
        .filter(|(name, _)| name != "*")
        .collect()
}

/// Every non-test module file of the crate, found from `lib.rs` through its `mod x;`
/// declarations (inline `mod x { .. }` blocks count as part of their file).
fn module_files(src: &Path) -> BTreeMap<ModPath, ModFile> {
    let mut modules = BTreeMap::new();
    let mut pending = vec![(Vec::new(), src.join("lib.rs"))];
    while let Some((path, file)) = pending.pop() {
        let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let syntax = syn::parse_file(&text).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let here = file.parent().unwrap();
        let stem = file.file_stem().unwrap().to_string_lossy().into_owned();
        // Children of `lib.rs` and `mod.rs` sit beside them; those of `x.rs` in `x/`.
        let child_dir = if path.is_empty() || stem == "mod" { here.to_path_buf() } else { here.join(&stem) };
        let mut children = Vec::new();
        for item in &syntax.items {
            let syn::Item::Mod(decl) = item else { continue };
            if decl.content.is_some() || is_cfg_test(&decl.attrs) {
                continue;
            }
            let name = decl.ident.to_string();
            let child = match path_attr(&decl.attrs) {
                Some(relative) => here.join(relative),
                None if child_dir.join(format!("{name}.rs")).is_file() => child_dir.join(format!("{name}.rs")),
                None => child_dir.join(&name).join("mod.rs"),
            };
            let mut child_path = path.clone();
            child_path.push(name.clone());
            pending.push((child_path, child));
            children.push(name);
        }
        let imports = imports(&syntax);
        modules.insert(path, ModFile { file, children, imports, syntax });
    }
    modules
}

/// The paths a file names outside `#[cfg(test)]` items: `use` trees flattened, paths in
/// types and expressions, and `a::b` runs in macro arguments. Doc links are comments
/// (attributes' strings), so they are not paths.
#[derive(Default)]
struct Paths {
    found: Vec<Vec<String>>,
}

impl Paths {
    fn tokens(&mut self, tokens: TokenStream) {
        let mut run: Vec<String> = Vec::new();
        let mut colons = 0;
        for token in tokens {
            match token {
                TokenTree::Ident(ident) if run.is_empty() || colons == 2 => {
                    run.push(ident.to_string());
                    colons = 0;
                    continue;
                }
                TokenTree::Punct(p) if p.as_char() == ':' && !run.is_empty() && colons < 2 => {
                    colons += 1;
                    continue;
                }
                _ => {}
            }
            // The run ended here: keep it if it was a path, and let this token start the next.
            if run.len() > 1 {
                self.found.push(std::mem::take(&mut run));
            }
            run.clear();
            colons = 0;
            match token {
                TokenTree::Ident(ident) => run.push(ident.to_string()),
                TokenTree::Group(group) => self.tokens(group.stream()),
                _ => {}
            }
        }
        if run.len() > 1 {
            self.found.push(run);
        }
    }
}

impl<'ast> Visit<'ast> for Paths {
    fn visit_item(&mut self, item: &'ast syn::Item) {
        let attrs = match item {
            syn::Item::Const(i) => &i.attrs,
            syn::Item::Enum(i) => &i.attrs,
            syn::Item::Fn(i) => &i.attrs,
            syn::Item::Impl(i) => &i.attrs,
            syn::Item::Mod(i) => &i.attrs,
            syn::Item::Static(i) => &i.attrs,
            syn::Item::Struct(i) => &i.attrs,
            syn::Item::Trait(i) => &i.attrs,
            syn::Item::Type(i) => &i.attrs,
            syn::Item::Use(i) => &i.attrs,
            syn::Item::Macro(i) => &i.attrs,
            _ => return syn::visit::visit_item(self, item),
        };
        if !is_cfg_test(attrs) {
            syn::visit::visit_item(self, item);
        }
    }

    fn visit_impl_item_fn(&mut self, f: &'ast syn::ImplItemFn) {
        if !is_cfg_test(&f.attrs) {
            syn::visit::visit_impl_item_fn(self, f);
        }
    }

    fn visit_item_use(&mut self, item: &'ast syn::ItemUse) {
        self.found.extend(flatten_use(&item.tree).into_iter().map(|(_, path)| path));
    }

    fn visit_path(&mut self, path: &'ast syn::Path) {
        self.found.push(path.segments.iter().map(|s| s.ident.to_string()).collect());
        syn::visit::visit_path(self, path);
    }

    /// `pub(crate)`, `pub(super)`: a visibility names where an item may be seen, not
    /// something it uses.
    fn visit_visibility(&mut self, _: &'ast syn::Visibility) {}

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        self.tokens(mac.tokens.clone());
    }
}

/// Where a path written in module `from` lands: the module file, and the item of it
/// the path names next (`None` for the module itself). `crate::`, `super::` and
/// `self::` are resolved, a leading name is taken as a child module of `from` when it is
/// one (`use coalesce::Run` in `gro/mod.rs`), then the longest prefix that is a module,
/// following the re-exports of the module it reaches. `None` for paths outside the
/// crate (`core::`, local names).
fn resolve(from: &ModPath, path: &[String], modules: &BTreeMap<ModPath, ModFile>) -> Option<(ModPath, Option<String>)> {
    let mut at: ModPath = from.clone();
    let mut rest = path;
    match rest.first().map(String::as_str) {
        Some("crate") => {
            at.clear();
            rest = &rest[1..];
        }
        Some("self") => rest = &rest[1..],
        Some("super") => {
            while rest.first().is_some_and(|s| s == "super") {
                at.pop();
                rest = &rest[1..];
            }
        }
        Some(first) if modules[from].children.iter().any(|c| c == first) => {}
        _ => return None,
    }
    while let Some(segment) = rest.first() {
        let mut next = at.clone();
        next.push(segment.clone());
        if modules.contains_key(&next) {
            at = next;
            rest = &rest[1..];
            continue;
        }
        // `at` does not define `segment` if one of its `use` lines brought it in.
        if let Some(import) = modules[&at].imports.get(segment) {
            let mut through: Vec<String> = import.clone();
            through.extend_from_slice(&rest[1..]);
            if let Some(landed) = resolve(&at, &through, modules) {
                return Some(landed);
            }
        }
        break;
    }
    Some((at, rest.first().cloned()))
}

/// The file graph: each module to the modules it names, and to the children it declares.
fn file_graph(modules: &BTreeMap<ModPath, ModFile>, src: &Path) -> BTreeMap<ModPath, BTreeMap<ModPath, Witness>> {
    let mut graph = BTreeMap::new();
    for (from, module) in modules {
        let mut edges: BTreeMap<ModPath, Witness> = BTreeMap::new();
        let file = module.file.strip_prefix(src.parent().unwrap()).unwrap().display().to_string();
        for child in &module.children {
            let mut to = from.clone();
            to.push(child.clone());
            edges.insert(to, Witness { file: file.clone(), path: format!("mod {child}") });
        }
        let mut paths = Paths::default();
        paths.visit_file(&module.syntax);
        for path in &paths.found {
            let Some((to, _)) = resolve(from, path, modules) else { continue };
            if &to == from {
                continue;
            }
            edges.entry(to).or_insert_with(|| Witness { file: file.clone(), path: path.join("::") });
        }
        graph.insert(from.clone(), edges);
    }
    graph
}

/// A loop in `graph`, as the nodes along it (first one repeated at the end).
fn find_loop<N: Ord + Clone, W>(graph: &BTreeMap<N, BTreeMap<N, W>>) -> Option<Vec<N>> {
    fn visit<N: Ord + Clone, W>(
        node: &N,
        graph: &BTreeMap<N, BTreeMap<N, W>>,
        path: &mut Vec<N>,
        done: &mut BTreeSet<N>,
    ) -> Option<Vec<N>> {
        if let Some(at) = path.iter().position(|n| n == node) {
            let mut cycle = path[at..].to_vec();
            cycle.push(node.clone());
            return Some(cycle);
        }
        if done.contains(node) {
            return None;
        }
        path.push(node.clone());
        for next in graph.get(node).into_iter().flat_map(|edges| edges.keys()) {
            if let Some(cycle) = visit(next, graph, path, done) {
                return Some(cycle);
            }
        }
        path.pop();
        done.insert(node.clone());
        None
    }
    let mut done = BTreeSet::new();
    graph.keys().find_map(|node| visit(node, graph, &mut Vec::new(), &mut done))
}

fn name(path: &ModPath) -> String {
    if path.is_empty() { "crate".to_string() } else { path.join("::") }
}

/// The loop as `a -> b (src/x.rs: crate::b::Thing) -> a (...)`.
fn describe<W: std::borrow::Borrow<Witness>>(cycle: &[ModPath], graph: &BTreeMap<ModPath, BTreeMap<ModPath, W>>) -> String {
    let mut text = name(&cycle[0]);
    for pair in cycle.windows(2) {
        let witness = graph[&pair[0]][&pair[1]].borrow();
        text += &format!("\n  -> {} ({}: {})", name(&pair[1]), witness.file, witness.path);
    }
    text
}

/// The fix a failure names: what `docs/engine.md` ("Layers") says to do with a loop.
const FIX: &str = "move the definition both ends use down a layer (into the child that uses it, \
or a leaf module both import), not behind a late import; docs/engine.md, \"Layers\"";

fn crate_graph() -> BTreeMap<ModPath, BTreeMap<ModPath, Witness>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let modules = module_files(&src);
    for expected in [&["chain"][..], &["gro"], &["gro", "facts"], &["virtio", "validate"]] {
        let expected: ModPath = expected.iter().map(|s| s.to_string()).collect();
        assert!(modules.contains_key(&expected), "{} not found from lib.rs", name(&expected));
    }
    file_graph(&modules, &src)
}

#[test]
fn module_files_import_downward_only() {
    let graph = crate_graph();
    if let Some(cycle) = find_loop(&graph) {
        panic!("import loop between module files: {}\n{FIX}", describe(&cycle, &graph));
    }
}

#[test]
fn the_subtrees_of_every_folder_import_downward_only() {
    let graph = crate_graph();
    let parents: BTreeSet<ModPath> = graph.keys().filter(|m| !m.is_empty()).map(|m| m[..m.len() - 1].to_vec()).collect();
    for parent in parents {
        // Each module below `parent` stands for its sub-tree: the child of `parent` it is in.
        let subtree = |m: &ModPath| (m.len() > parent.len() && m.starts_with(&parent)).then(|| m[..=parent.len()].to_vec());
        let mut folder: BTreeMap<ModPath, BTreeMap<ModPath, &Witness>> = BTreeMap::new();
        for (from, edges) in &graph {
            let Some(from_tree) = subtree(from) else { continue };
            let entry = folder.entry(from_tree.clone()).or_default();
            for (to, witness) in edges {
                if let Some(to_tree) = subtree(to).filter(|t| *t != from_tree) {
                    entry.entry(to_tree).or_insert(witness);
                }
            }
        }
        if let Some(cycle) = find_loop(&folder) {
            panic!("import loop between the sub-trees of {}: {}\n{FIX}", name(&parent), describe(&cycle, &folder));
        }
    }
}
