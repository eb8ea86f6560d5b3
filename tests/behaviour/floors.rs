//! Floors: a file of `tool-core/src` or `tool-macros/src` uses only what lies below it.
//!
//! The check reads each crate's sources with `syn`, follows its `mod` declarations to files
//! (`foo.rs`, `foo/mod.rs`, `#[path]`), and draws an edge from a file to another wherever the
//! first names something the second defines: a `use` of `crate::`, `super::`, `self::` or a
//! child module (nested groups included), or such a path anywhere in the code (types,
//! expressions, patterns, fn bodies, `#[cfg(test)]` modules, macro invocations). A name is
//! followed through re-exports to the file that defines it, so `crate::Agent` is a use of
//! `agent/mod.rs`; a re-export (`pub use`) on its own is not a use, unless the file also uses
//! the name it re-exports. A file naming the modules of its own folder (`lib.rs` any module,
//! `agent/mod.rs` the files of `agent/`) reads its table of contents, which is no use either.
//! Doc comments and their links are text, and count for nothing. The same edges, read as edges
//! between the crate's top-level modules, make the second graph.
//! Either graph with a circle fails the check, naming the files (or modules) of each circle and
//! the paths that tie them.

use std::{
    collections::{BTreeMap, BTreeSet},
    fmt,
    path::{Path, PathBuf},
};

use proc_macro2::{TokenStream, TokenTree};
use syn::visit::{self, Visit};

#[test]
fn tool_core_has_floors() {
    let report = floors(&crate_source("tool-core"));
    assert!(report.is_clean(), "tool-core/src has circles:\n{report}");
}

#[test]
fn tool_macros_has_floors() {
    let report = floors(&crate_source("tool-macros"));
    assert!(report.is_clean(), "tool-macros/src has circles:\n{report}");
}

/// The "Architecture Invariant" notes of ARCHITECTURE.md that no circle would reveal: which
/// floors a module may stand on. Moving a module to another floor means changing both.
#[test]
fn the_architecture_invariants_hold() {
    let (files, modules) = graphs(&crate_source("tool-core"));
    let mut broken = Vec::new();
    let mut only = |module: &str, allowed: &[&str], why: &str| {
        for (used, path) in modules.uses(module) {
            if !allowed.contains(&used) {
                broken.push(format!("`{module}` uses `{used}` ({path}): {why}"));
            }
        }
    };
    only(
        "message",
        &[],
        "the conversation's types import nothing of the crate",
    );
    only(
        "context",
        &["message"],
        "the context knows no tool, registry or model",
    );
    only(
        "call",
        &["message", "context"],
        "a call knows no tool, registry or model",
    );
    let contract = ["message", "context", "call"];
    only(
        "tool",
        &contract,
        "the tool contract knows no registry, format or model",
    );
    let schema = ["message", "context", "call", "tool"];
    only(
        "schema",
        &schema,
        "schemas know tools, not who holds or sends them",
    );
    only(
        "search",
        &["tool"],
        "search indexes tool definitions, whoever holds them",
    );
    let execute = ["message", "context", "call", "tool", "schema"];
    only(
        "execute",
        &execute,
        "execution knows tools, not the registry",
    );
    only(
        "model",
        &["message", "tool", "schema", "secrets", "tls"],
        "models take tools as data",
    );
    only(
        "otel",
        &["message", "tool", "schema"],
        "telemetry records what the agent and MCP give it, and names neither",
    );
    for module in [
        "registry",
        "__private",
        "builtin",
        "config",
        "session",
        "store",
        "mcp",
        "gateway",
    ] {
        for (used, path) in modules.uses(module) {
            if matches!(used, "model" | "agent") {
                broken.push(format!(
                    "`{module}` uses `{used}` ({path}): only the agent joins tools and models"
                ));
            }
        }
    }
    for file in files.edges.keys() {
        for (used, path) in files.uses(file) {
            let provider = [
                "openai.rs",
                "anthropic.rs",
                "gemini.rs",
                "ollama.rs",
                "env.rs",
            ]
            .iter()
            .any(|client| used == format!("model/{client}"))
                || used.starts_with("model/offline/");
            if file.starts_with("model/wire/") && provider {
                broken.push(format!(
                    "{file} uses {used} ({path}): the wire layer knows no provider"
                ));
            }
        }
    }

    // The macro crate's stages form a line.
    let (files, _) = graphs(&crate_source("tool-macros"));
    let line = [
        "errors.rs",
        "attr.rs",
        "ast.rs",
        "valid.rs",
        "fallback.rs",
        "expand.rs",
    ];
    for (at, file) in line.iter().enumerate() {
        for (used, path) in files.uses(file) {
            if !line[..at].contains(&used) {
                broken.push(format!(
                    "tool-macros: {file} uses {used} ({path}): a stage uses only those before it"
                ));
            }
        }
    }
    assert!(broken.is_empty(), "{}", broken.join("\n"));
}

/// The check itself, on a small tree with one circle of each kind and every way of naming a
/// file that it must see or ignore.
#[test]
fn a_circle_is_named_with_its_files_and_modules() {
    let dir = tempfile::tempdir().unwrap();
    let write = |path: &str, text: &str| {
        let path = dir.path().join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    write(
        "lib.rs",
        "//! Links in docs are no uses: [`crate::bottom::Free`].\n\
         mod bottom;\nmod top;\n#[path = \"odd_place.rs\"]\nmod middle;\n\
         pub use top::Top;\npub use bottom::{Bottom, Free};\n",
    );
    // `bottom` calls up into `top` from inside a fn body, through the crate root's re-export.
    write(
        "bottom/mod.rs",
        "mod leaf;\npub use leaf::Free;\n\
         /// See [`crate::top::Top`].\npub struct Bottom;\n\
         pub fn reach_up() { let _ = crate::Top::new(); }\n",
    );
    write("bottom/leaf.rs", "pub struct Free;\n");
    // `top` uses `middle` in a nested group; `middle` uses `bottom` in a test module.
    write(
        "top.rs",
        "use crate::{middle::{self, Middle}};\npub struct Top(Middle);\n\
         impl Top { pub fn new() -> Self { Top(middle::make()) } }\n",
    );
    write(
        "odd_place.rs",
        "pub struct Middle;\npub fn make() -> Middle { Middle }\n\
         #[cfg(test)]\nmod tests {\n    use super::super::bottom::Bottom;\n}\n",
    );

    let report = floors(dir.path());
    assert!(!report.is_clean());
    assert_eq!(
        report.to_string(),
        "a circle of 3 files: bottom/mod.rs, odd_place.rs, top.rs\n\
         \x20 bottom/mod.rs -> top.rs (crate::Top::new)\n\
         \x20 odd_place.rs -> bottom/mod.rs (super::super::bottom::Bottom)\n\
         \x20 top.rs -> odd_place.rs (crate::middle::Middle)\n\
         a circle of 3 modules: bottom, middle, top\n\
         \x20 bottom -> top (crate::Top::new)\n\
         \x20 middle -> bottom (super::super::bottom::Bottom)\n\
         \x20 top -> middle (crate::middle::Middle)\n"
    );

    // Without the call up, the same tree has floors: `leaf`, the doc links and the crate
    // root's re-exports make no circle.
    write(
        "bottom/mod.rs",
        "mod leaf;\npub use leaf::Free;\n/// See [`crate::top::Top`].\npub struct Bottom;\n",
    );
    let report = floors(dir.path());
    assert!(report.is_clean(), "{report}");
}

/// A re-export that its own file uses is a use, and a circle if the other side uses it back;
/// a folder's front file naming the files of its folder is not (`a/child.rs` may use `a/mod.rs`,
/// which re-exports and uses `a/child.rs`).
#[test]
fn a_re_export_used_by_its_own_file_is_a_use() {
    let dir = tempfile::tempdir().unwrap();
    let write = |path: &str, text: &str| std::fs::write(dir.path().join(path), text).unwrap();
    std::fs::create_dir(dir.path().join("a")).unwrap();
    write("lib.rs", "pub mod a;\npub mod b;\n");
    write(
        "a/mod.rs",
        "mod child;\npub use child::Child;\npub use crate::b::B;\npub struct A;\n\
         pub fn make() -> (Child, B) { (Child, B) }\n",
    );
    write(
        "a/child.rs",
        "pub struct Child;\nfn parent() -> super::A { super::A }\n",
    );
    write(
        "b.rs",
        "pub struct B;\nmacro_rules! a { () => { $crate::a::A } }\nfn a() { let _ = a!(); }\n",
    );
    assert_eq!(
        floors(dir.path()).to_string(),
        "a circle of 2 files: a/mod.rs, b.rs\n\
         \x20 a/mod.rs -> b.rs (crate::b::B)\n\
         \x20 b.rs -> a/mod.rs ($crate::a::A)\n\
         a circle of 2 modules: a, b\n\
         \x20 a -> b (crate::b::B)\n\
         \x20 b -> a ($crate::a::A)\n"
    );

    // Re-exported and not used: no circle.
    write(
        "a/mod.rs",
        "mod child;\npub use child::Child;\npub use crate::b::B;\npub struct A;\n\
         pub fn make() -> Child { Child }\n",
    );
    let report = floors(dir.path());
    assert!(report.is_clean(), "{report}");
}

fn crate_source(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(name)
        .join("src")
}

/// The circles of one crate whose root file is `src/lib.rs`.
fn floors(src: &Path) -> Report {
    let (files, modules) = graphs(src);
    Report {
        files: files.circles("files"),
        modules: modules.circles("modules"),
    }
}

/// Which file uses which, and which top-level module uses which, in the crate at `src`.
fn graphs(src: &Path) -> (Graph, Graph) {
    let tree = Tree::load(src);
    let mut files = Graph::default();
    let mut modules = Graph::default();
    for (scope, reference) in tree.references() {
        let Some(Target { module: target, .. }) = tree.resolve(scope, &reference.segments, 0)
        else {
            continue;
        };
        let (from, to) = (&tree.modules[scope], &tree.modules[target]);
        // A file heads the modules below it (`lib.rs` the crate, `agent/mod.rs` the `agent/`
        // folder): naming them is reading its own table of contents, not standing on them.
        if !to.path.starts_with(&tree.modules[from.home].path) {
            files.add(&from.file, &to.file, &reference.text);
        }
        if !from.path.is_empty() {
            modules.add(from.top(), to.top(), &reference.text);
        }
    }
    (files, modules)
}

/// Every module of a crate, inline ones included, with the names each defines and imports.
#[derive(Default)]
struct Tree {
    src: PathBuf,
    modules: Vec<Module>,
    /// Each file's syntax tree, by path relative to `src`.
    files: BTreeMap<String, syn::File>,
}

struct Module {
    /// Its path from the crate root (empty for the root).
    path: Vec<String>,
    /// The file its items are written in, relative to `src`.
    file: String,
    parent: Option<usize>,
    /// The module its file is the file of (itself, unless it is an inline module).
    home: usize,
    children: BTreeMap<String, usize>,
    /// The names of the items it defines.
    items: BTreeSet<String>,
    /// The names its `use` items bring in, with the path each stands for.
    imports: BTreeMap<String, Vec<String>>,
    /// The paths of its glob imports.
    globs: Vec<Vec<String>>,
}

impl Module {
    /// The top-level module it belongs to (`crate` for the root's own items).
    fn top(&self) -> &str {
        self.path.first().map_or("crate", String::as_str)
    }
}

/// A path found in a module's code or `use` items.
struct Reference {
    segments: Vec<String>,
    text: String,
}

impl Tree {
    fn load(src: &Path) -> Self {
        let mut tree = Tree {
            src: src.to_path_buf(),
            ..Tree::default()
        };
        tree.load_file("lib.rs".into(), Vec::new(), None);
        tree
    }

    /// Reads `file` as the module at `path` and, recursively, the modules it declares.
    fn load_file(&mut self, file: String, path: Vec<String>, parent: Option<usize>) -> usize {
        let text = std::fs::read_to_string(self.src.join(&file)).unwrap_or_else(|error| {
            panic!("cannot read {}: {error}", self.src.join(&file).display())
        });
        let ast =
            syn::parse_file(&text).unwrap_or_else(|error| panic!("cannot parse {file}: {error}"));
        let stem = Path::new(&file)
            .file_stem()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let parent_dir = Path::new(&file).parent().unwrap().to_path_buf();
        // Where `mod child;` looks: beside a `lib.rs` or `mod.rs`, in a folder named after any
        // other file (`a.rs` declares `a/child.rs`).
        let children_dir = if matches!(stem.as_str(), "lib" | "main" | "mod") {
            parent_dir.clone()
        } else {
            parent_dir.join(&stem)
        };
        let items = ast.items.clone();
        self.files.insert(file.clone(), ast);
        let dirs = Dirs {
            children: children_dir,
            paths: parent_dir,
        };
        self.load_items(&file, path, parent, None, &items, &dirs)
    }

    fn load_items(
        &mut self,
        file: &str,
        path: Vec<String>,
        parent: Option<usize>,
        home: Option<usize>,
        items: &[syn::Item],
        dirs: &Dirs,
    ) -> usize {
        let id = self.modules.len();
        let home = home.unwrap_or(id);
        self.modules.push(Module {
            path: path.clone(),
            file: file.to_owned(),
            parent,
            home,
            children: BTreeMap::new(),
            items: BTreeSet::new(),
            imports: BTreeMap::new(),
            globs: Vec::new(),
        });
        for item in items {
            let defined = match item {
                syn::Item::Mod(module) => {
                    let name = module.ident.to_string();
                    let mut child_path = path.clone();
                    child_path.push(name.clone());
                    let child = match &module.content {
                        Some((_, inner)) => {
                            let inner_dirs = Dirs {
                                children: dirs.children.join(&name),
                                paths: dirs.children.join(&name),
                            };
                            self.load_items(
                                file,
                                child_path,
                                Some(id),
                                Some(home),
                                inner,
                                &inner_dirs,
                            )
                        }
                        None => {
                            let child_file = match path_attribute(&module.attrs) {
                                Some(explicit) => dirs.paths.join(explicit),
                                None => {
                                    let flat = dirs.children.join(format!("{name}.rs"));
                                    if self.src.join(&flat).exists() {
                                        flat
                                    } else {
                                        dirs.children.join(&name).join("mod.rs")
                                    }
                                }
                            };
                            self.load_file(slashed(&child_file), child_path, Some(id))
                        }
                    };
                    self.modules[id].children.insert(name, child);
                    None
                }
                syn::Item::Use(item) => {
                    let module = &mut self.modules[id];
                    for_each_leaf(&item.tree, &mut Vec::new(), &mut |leaf| match leaf {
                        Leaf::Name(name, path) => {
                            module.imports.insert(name, path);
                        }
                        Leaf::Glob(path) => module.globs.push(path),
                    });
                    None
                }
                syn::Item::Const(item) => Some(&item.ident),
                syn::Item::Enum(item) => Some(&item.ident),
                syn::Item::Fn(item) => Some(&item.sig.ident),
                syn::Item::Macro(item) => item.ident.as_ref(),
                syn::Item::Static(item) => Some(&item.ident),
                syn::Item::Struct(item) => Some(&item.ident),
                syn::Item::Trait(item) => Some(&item.ident),
                syn::Item::TraitAlias(item) => Some(&item.ident),
                syn::Item::Type(item) => Some(&item.ident),
                syn::Item::Union(item) => Some(&item.ident),
                _ => None,
            };
            if let Some(ident) = defined {
                self.modules[id].items.insert(ident.to_string());
            }
        }
        id
    }

    /// Every path each module names, with the module it is named in.
    fn references(&self) -> Vec<(usize, Reference)> {
        let mut found = Vec::new();
        for (file, ast) in &self.files {
            let root = self
                .modules
                .iter()
                .position(|module| &module.file == file)
                .expect("every file read is a module");
            let mut names = Names::default();
            names.visit_file(ast);
            let mut collector = Collector {
                tree: self,
                scope: root,
                used_names: &names.0,
                found: &mut found,
            };
            collector.visit_file(ast);
        }
        found
    }

    /// The module whose file defines what `segments`, written in module `scope`, names; `None`
    /// for a path outside the crate (`std::…`, `serde::…`).
    fn resolve(&self, scope: usize, segments: &[String], depth: usize) -> Option<Target> {
        if depth > 32 {
            return None;
        }
        let mut module = scope;
        let mut rest = segments;
        match segments.first()?.as_str() {
            "crate" | "$crate" => {
                module = 0;
                rest = &segments[1..];
            }
            "self" => rest = &segments[1..],
            "super" => {
                while rest.first().is_some_and(|s| s == "super") {
                    module = self.modules[module].parent?;
                    rest = &rest[1..];
                }
            }
            first => {
                // A relative path: a child module, an item, or a name imported here.
                if !self.knows(scope, first, depth) {
                    return None;
                }
            }
        }
        self.locate(module, rest, depth)
    }

    /// Whether `name` means something of this crate in module `scope`.
    fn knows(&self, scope: usize, name: &str, depth: usize) -> bool {
        if depth > 32 {
            return false;
        }
        let module = &self.modules[scope];
        module.children.contains_key(name)
            || module.items.contains(name)
            || module
                .imports
                .get(name)
                .is_some_and(|path| self.resolve(scope, path, depth + 1).is_some())
            || module.globs.iter().any(|glob| {
                self.resolve(scope, glob, depth + 1).is_some_and(|source| {
                    source.module != scope && self.knows(source.module, name, depth + 1)
                })
            })
    }

    /// Walks `rest` down from `module` to the module defining its first item.
    fn locate(&self, module: usize, rest: &[String], depth: usize) -> Option<Target> {
        let Some(name) = rest.first() else {
            return Some(Target {
                module,
                is_module: true,
            });
        };
        let item = Some(Target {
            module,
            is_module: false,
        });
        let here = &self.modules[module];
        if let Some(&child) = here.children.get(name) {
            return self.locate(child, &rest[1..], depth);
        }
        if here.items.contains(name) {
            return item;
        }
        if let Some(import) = here.imports.get(name) {
            let mut path = import.clone();
            path.extend_from_slice(&rest[1..]);
            return self.resolve(module, &path, depth + 1);
        }
        for glob in &here.globs {
            if let Some(source) = self.resolve(module, glob, depth + 1)
                && source.module != module
                && self.knows(source.module, name, depth + 1)
            {
                return self.locate(source.module, rest, depth + 1);
            }
        }
        // A name the check cannot see defined (made by a macro): the module's own.
        item
    }
}

/// What a path names: the module defining it, and whether it is that module itself.
#[derive(Clone, Copy)]
struct Target {
    module: usize,
    is_module: bool,
}

/// Where a module's `mod` declarations look for files.
struct Dirs {
    /// Without `#[path]`.
    children: PathBuf,
    /// With `#[path]`.
    paths: PathBuf,
}

fn path_attribute(attrs: &[syn::Attribute]) -> Option<String> {
    attrs.iter().find_map(|attr| match &attr.meta {
        syn::Meta::NameValue(pair) if pair.path.is_ident("path") => match &pair.value {
            syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Str(text),
                ..
            }) => Some(text.value()),
            _ => None,
        },
        _ => None,
    })
}

fn slashed(path: &Path) -> String {
    path.components()
        .map(|part| part.as_os_str().to_string_lossy())
        .collect::<Vec<_>>()
        .join("/")
}

enum Leaf {
    /// A name brought in, and the path it stands for.
    Name(String, Vec<String>),
    /// `path::*`.
    Glob(Vec<String>),
}

fn for_each_leaf(tree: &syn::UseTree, prefix: &mut Vec<String>, each: &mut impl FnMut(Leaf)) {
    match tree {
        syn::UseTree::Path(path) => {
            prefix.push(path.ident.to_string());
            for_each_leaf(&path.tree, prefix, each);
            prefix.pop();
        }
        syn::UseTree::Name(name) if name.ident == "self" => {
            if let Some(last) = prefix.last() {
                each(Leaf::Name(last.clone(), prefix.clone()));
            }
        }
        syn::UseTree::Name(name) => {
            let mut path = prefix.clone();
            path.push(name.ident.to_string());
            each(Leaf::Name(name.ident.to_string(), path));
        }
        syn::UseTree::Rename(rename) => {
            let mut path = prefix.clone();
            if rename.ident != "self" {
                path.push(rename.ident.to_string());
            }
            each(Leaf::Name(rename.rename.to_string(), path));
        }
        syn::UseTree::Glob(_) => each(Leaf::Glob(prefix.clone())),
        syn::UseTree::Group(group) => {
            for tree in &group.items {
                for_each_leaf(tree, prefix, each);
            }
        }
    }
}

/// Every identifier of a file outside its `use` items (macro tokens included).
#[derive(Default)]
struct Names(BTreeSet<String>);

impl Visit<'_> for Names {
    fn visit_item_use(&mut self, _: &syn::ItemUse) {}

    fn visit_ident(&mut self, ident: &proc_macro2::Ident) {
        self.0.insert(ident.to_string());
    }

    fn visit_macro(&mut self, mac: &syn::Macro) {
        visit::visit_macro(self, mac);
        each_ident(mac.tokens.clone(), &mut |ident| {
            self.0.insert(ident);
        });
    }
}

fn each_ident(tokens: TokenStream, each: &mut impl FnMut(String)) {
    for token in tokens {
        match token {
            TokenTree::Ident(ident) => each(ident.to_string()),
            TokenTree::Group(group) => each_ident(group.stream(), each),
            _ => {}
        }
    }
}

/// Collects the paths a file names, each with the module it is written in.
struct Collector<'a> {
    tree: &'a Tree,
    scope: usize,
    /// The identifiers the file uses outside `use` items.
    used_names: &'a BTreeSet<String>,
    found: &'a mut Vec<(usize, Reference)>,
}

impl Collector<'_> {
    fn add(&mut self, segments: Vec<String>) {
        let text = segments.join("::");
        self.found.push((self.scope, Reference { segments, text }));
    }

    /// A name a glob brings in counts when the file uses it.
    fn add_glob(&mut self, path: Vec<String>) {
        let Some(Target { module: source, .. }) = self.tree.resolve(self.scope, &path, 0) else {
            return;
        };
        if self.tree.modules[source].file == self.tree.modules[self.scope].file {
            return;
        }
        let module = &self.tree.modules[source];
        let names = module.items.iter().chain(module.imports.keys());
        for name in names
            .filter(|name| self.used_names.contains(*name))
            .cloned()
            .collect::<Vec<_>>()
        {
            let mut segments = path.clone();
            segments.push(name);
            self.add(segments);
        }
    }
}

impl Visit<'_> for Collector<'_> {
    fn visit_item_mod(&mut self, module: &syn::ItemMod) {
        let Some((_, items)) = &module.content else {
            return;
        };
        let outer = self.scope;
        self.scope = self.tree.modules[outer].children[&module.ident.to_string()];
        for attr in &module.attrs {
            self.visit_attribute(attr);
        }
        for item in items {
            self.visit_item(item);
        }
        self.scope = outer;
    }

    fn visit_item_use(&mut self, item: &syn::ItemUse) {
        let public = !matches!(item.vis, syn::Visibility::Inherited);
        let mut leaves = Vec::new();
        for_each_leaf(&item.tree, &mut Vec::new(), &mut |leaf| leaves.push(leaf));
        for leaf in leaves {
            match leaf {
                Leaf::Name(name, path) => {
                    // Bringing in a module is no use of its file (the paths through it are);
                    // a re-export is a use only when the file uses the name too.
                    let target = self.tree.resolve(self.scope, &path, 0);
                    let names_a_module = target.is_some_and(|target| target.is_module);
                    if names_a_module || (public && !self.used_names.contains(&name)) {
                        continue;
                    }
                    self.add(path);
                }
                Leaf::Glob(path) if !public => self.add_glob(path),
                Leaf::Glob(_) => {}
            }
        }
    }

    // `pub(in crate::a)` says who may see an item, and uses nothing.
    fn visit_vis_restricted(&mut self, _: &syn::VisRestricted) {}

    fn visit_path(&mut self, path: &syn::Path) {
        if path.leading_colon.is_none() && path.segments.len() > 1 {
            self.add(path.segments.iter().map(|s| s.ident.to_string()).collect());
        }
        visit::visit_path(self, path);
    }

    fn visit_macro(&mut self, mac: &syn::Macro) {
        visit::visit_macro(self, mac);
        for segments in token_paths(mac.tokens.clone()) {
            self.add(segments);
        }
    }
}

/// The `crate::a::b`, `$crate::a`, `super::a` and `self::a` paths written in macro tokens.
fn token_paths(tokens: TokenStream) -> Vec<Vec<String>> {
    let mut paths = Vec::new();
    let tokens: Vec<TokenTree> = tokens.into_iter().collect();
    let mut i = 0;
    while i < tokens.len() {
        if let TokenTree::Group(group) = &tokens[i] {
            paths.extend(token_paths(group.stream()));
            i += 1;
            continue;
        }
        let start = match &tokens[i] {
            TokenTree::Ident(ident)
                if matches!(ident.to_string().as_str(), "crate" | "super" | "self") =>
            {
                let dollar =
                    i > 0 && matches!(&tokens[i - 1], TokenTree::Punct(p) if p.as_char() == '$');
                let preceded_by_path = i > 1
                    && matches!(&tokens[i - 1], TokenTree::Punct(p) if p.as_char() == ':')
                    && matches!(&tokens[i - 2], TokenTree::Punct(p) if p.as_char() == ':');
                (!preceded_by_path).then(|| {
                    if dollar {
                        "$crate".to_owned()
                    } else {
                        ident.to_string()
                    }
                })
            }
            _ => None,
        };
        let Some(first) = start else {
            i += 1;
            continue;
        };
        let mut segments = vec![first];
        let mut j = i + 1;
        while j + 2 < tokens.len()
            && matches!(&tokens[j], TokenTree::Punct(p) if p.as_char() == ':')
            && matches!(&tokens[j + 1], TokenTree::Punct(p) if p.as_char() == ':')
        {
            match &tokens[j + 2] {
                TokenTree::Ident(ident) => segments.push(ident.to_string()),
                _ => break,
            }
            j += 3;
        }
        if segments.len() > 1 {
            paths.push(segments);
        }
        i = j;
    }
    paths
}

/// A directed graph with the first path seen for each edge.
#[derive(Default)]
struct Graph {
    edges: BTreeMap<String, BTreeMap<String, String>>,
}

impl Graph {
    fn add(&mut self, from: &str, to: &str, why: &str) {
        self.edges.entry(to.to_owned()).or_default();
        if from != to {
            self.edges
                .entry(from.to_owned())
                .or_default()
                .entry(to.to_owned())
                .or_insert_with(|| why.to_owned());
        }
    }

    /// What `node` uses, each with the first path seen that makes the use.
    fn uses(&self, node: &str) -> Vec<(&str, &str)> {
        self.edges.get(node).map_or_else(Vec::new, |targets| {
            targets
                .iter()
                .map(|(to, why)| (to.as_str(), why.as_str()))
                .collect()
        })
    }

    /// The strongly connected components with more than one node (Tarjan's algorithm).
    fn circles(&self, kind: &'static str) -> Vec<Circle> {
        let nodes: Vec<&String> = self.edges.keys().collect();
        let index_of: BTreeMap<&String, usize> =
            nodes.iter().enumerate().map(|(i, n)| (*n, i)).collect();
        let mut state = Tarjan {
            index: vec![None; nodes.len()],
            low: vec![0; nodes.len()],
            on_stack: vec![false; nodes.len()],
            stack: Vec::new(),
            next: 0,
            components: Vec::new(),
        };
        let successors: Vec<Vec<usize>> = nodes
            .iter()
            .map(|node| self.edges[*node].keys().map(|to| index_of[to]).collect())
            .collect();
        for node in 0..nodes.len() {
            if state.index[node].is_none() {
                state.connect(node, &successors);
            }
        }
        let mut circles: Vec<Circle> = state
            .components
            .into_iter()
            .filter(|component| component.len() > 1)
            .map(|component| {
                let members: BTreeSet<String> =
                    component.iter().map(|&i| nodes[i].clone()).collect();
                let edges = members
                    .iter()
                    .flat_map(|from| {
                        self.edges[from]
                            .iter()
                            .filter(|(to, _)| members.contains(*to))
                            .map(move |(to, why)| (from.clone(), to.clone(), why.clone()))
                    })
                    .collect();
                Circle {
                    kind,
                    members,
                    edges,
                }
            })
            .collect();
        circles.sort_by(|a, b| a.members.cmp(&b.members));
        circles
    }
}

struct Tarjan {
    index: Vec<Option<usize>>,
    low: Vec<usize>,
    on_stack: Vec<bool>,
    stack: Vec<usize>,
    next: usize,
    components: Vec<Vec<usize>>,
}

impl Tarjan {
    fn connect(&mut self, node: usize, successors: &[Vec<usize>]) {
        self.index[node] = Some(self.next);
        self.low[node] = self.next;
        self.next += 1;
        self.stack.push(node);
        self.on_stack[node] = true;
        for &next in &successors[node] {
            match self.index[next] {
                None => {
                    self.connect(next, successors);
                    self.low[node] = self.low[node].min(self.low[next]);
                }
                Some(index) if self.on_stack[next] => self.low[node] = self.low[node].min(index),
                Some(_) => {}
            }
        }
        if Some(self.low[node]) == self.index[node] {
            let mut component = Vec::new();
            while let Some(member) = self.stack.pop() {
                self.on_stack[member] = false;
                component.push(member);
                if member == node {
                    break;
                }
            }
            self.components.push(component);
        }
    }
}

struct Circle {
    kind: &'static str,
    members: BTreeSet<String>,
    /// The edges inside the circle: from, to, and the path that makes the edge.
    edges: Vec<(String, String, String)>,
}

struct Report {
    files: Vec<Circle>,
    modules: Vec<Circle>,
}

impl Report {
    fn is_clean(&self) -> bool {
        self.files.is_empty() && self.modules.is_empty()
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for circle in self.files.iter().chain(&self.modules) {
            let members: Vec<&str> = circle.members.iter().map(String::as_str).collect();
            writeln!(
                f,
                "a circle of {} {}: {}",
                members.len(),
                circle.kind,
                members.join(", ")
            )?;
            for (from, to, why) in &circle.edges {
                writeln!(f, "  {from} -> {to} ({why})")?;
            }
        }
        Ok(())
    }
}
