//! The crate's module graph, parsed: every file under `src/` read with `syn` by walking the
//! module tree from `src/lib.rs` (and from each binary's root), `#[cfg(test)]` modules and
//! items left out. For each module, every path it names: `use` trees, paths in expressions,
//! types and patterns, and `a::b` sequences inside macro calls and attributes; paths that
//! start at `crate`, `self`, `super`, a child module or a `use` alias are resolved to the
//! absolute path in the library (or the binary) they name.

use proc_macro2::{Spacing, TokenStream, TokenTree};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use syn::visit::Visit;

/// Which crate a module or a path belongs to: the library, or the binary with this root file
/// (relative to `src/`).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Krate {
    Lib,
    Bin(String),
}

/// One module: its crate, its path below the crate root and the file it is in (relative to
/// `src/`; an inline module shares its parent's file).
#[derive(Clone, Debug)]
pub struct Module {
    pub krate: Krate,
    pub path: Vec<String>,
    pub file: String,
}

impl Module {
    /// Where the module sits, as the architecture rules name it: `render::view::scenario`
    /// (`crate` for `lib.rs`) in the library, `bin` for every module of a binary.
    pub fn place(&self) -> String {
        match self.krate {
            Krate::Bin(_) => "bin".to_string(),
            Krate::Lib if self.path.is_empty() => "crate".to_string(),
            Krate::Lib => self.path.join("::"),
        }
    }

    /// The library's top-level room (`render`, `kernel`, …), or `bin`.
    pub fn room(&self) -> String {
        self.place().split("::").next().unwrap().to_string()
    }
}

/// One path into the library that a module names: `from` (an index into
/// [`Graph::modules`]) names `path` (below the library's root) on `line`; `to` is the module
/// `path` lies in.
#[derive(Clone, Debug)]
pub struct Edge {
    pub from: usize,
    pub line: usize,
    pub to: usize,
    pub path: Vec<String>,
}

impl Edge {
    /// `crate::golden::check_paths`.
    pub fn shown(&self) -> String {
        std::iter::once("crate")
            .chain(self.path.iter().map(String::as_str))
            .collect::<Vec<_>>()
            .join("::")
    }
}

/// A path a module names, where it names it.
#[derive(Clone, Debug)]
pub struct Named {
    /// Index into [`Graph::modules`] of the module that names it.
    pub from: usize,
    pub line: usize,
    /// Resolved: the crate it is in and the segments below that crate's root (`golden`,
    /// `check_paths`). `None` for a path outside the crate (std, a dependency) or one not
    /// resolved (a local name).
    pub target: Option<(Krate, Vec<String>)>,
    /// The segments as written (`super::columns::wrap`, `std::fs::read_dir`).
    pub written: Vec<String>,
    /// For a `use`, the name it brings in (`*` for a glob); `None` for any other path.
    pub alias: Option<String>,
    /// The blocks (numbered within the module) it is written in, outermost first: a `use` in
    /// a function body holds in that body only.
    pub scope: Vec<usize>,
}

/// What a module's `use` items and child modules bring in: each name, the blocks where it
/// holds (as [`Named::scope`]) and what it stands for.
type Aliases = BTreeMap<String, Vec<(Vec<usize>, (Krate, Vec<String>))>>;

/// A function's length: where its `fn` keyword and its closing brace are.
#[derive(Clone, Debug)]
pub struct FnSpan {
    pub from: usize,
    pub name: String,
    pub first_line: usize,
    pub last_line: usize,
}

#[derive(Debug, Default)]
pub struct Graph {
    pub modules: Vec<Module>,
    pub named: Vec<Named>,
    /// Names of methods called (`.read_dir()`), with the module and line.
    pub method_calls: Vec<(usize, usize, String)>,
    pub fns: Vec<FnSpan>,
    /// The files of `#[cfg(test)] mod x;` declarations (relative to `src/`), left out.
    pub test_files: Vec<String>,
}

impl Graph {
    /// The graph of the crate whose sources are in `src`: the library from `lib.rs`, the
    /// binaries from `main.rs` and `bin/*.rs`.
    pub fn parse(src: &Path) -> Graph {
        let mut g = Graph::default();
        g.walk_file(src, Krate::Lib, Vec::new(), &src.join("lib.rs"), true);
        let mut bins = vec![src.join("main.rs")];
        if let Ok(dir) = std::fs::read_dir(src.join("bin")) {
            let mut more: Vec<PathBuf> = dir.map(|e| e.unwrap().path()).collect();
            more.sort();
            bins.extend(more.into_iter().filter(|p| p.extension().is_some_and(|e| e == "rs")));
        }
        for root in bins {
            let rel = rel(src, &root);
            g.walk_file(src, Krate::Bin(rel), Vec::new(), &root, true);
        }
        g.resolve_all();
        g
    }

    /// The module a resolved target lies in: the longest prefix of its segments that is a
    /// module of that crate.
    pub fn module_of(&self, krate: &Krate, path: &[String]) -> Option<usize> {
        (0..=path.len()).rev().find_map(|n| {
            self.modules
                .iter()
                .position(|m| &m.krate == krate && m.path == path[..n])
        })
    }

    /// Every resolved path into the library below its root (`pub(crate)` and the like name
    /// no dependency and are not collected).
    pub fn lib_edges(&self) -> Vec<Edge> {
        self.named
            .iter()
            .filter_map(|n| {
                let (Krate::Lib, path) = n.target.as_ref()? else {
                    return None;
                };
                let to = self.module_of(&Krate::Lib, path)?;
                (!path.is_empty()).then(|| Edge {
                    from: n.from,
                    line: n.line,
                    to,
                    path: path.clone(),
                })
            })
            .collect()
    }

    fn walk_file(&mut self, src: &Path, krate: Krate, path: Vec<String>, file: &Path, mod_rs: bool) {
        let text = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let ast = syn::parse_file(&text).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        // The directory a file's `mod x;` declarations look in: beside `lib.rs`, `main.rs`,
        // `mod.rs` (and a binary's root), inside `x/` for `x.rs`.
        let dir = if mod_rs {
            file.parent().unwrap().to_path_buf()
        } else {
            file.with_extension("")
        };
        let rel_file = rel(src, file);
        self.walk_items(src, &krate, path, &rel_file, &dir, file.parent().unwrap(), &ast.items);
    }

    #[allow(clippy::too_many_arguments)]
    fn walk_items(
        &mut self,
        src: &Path,
        krate: &Krate,
        path: Vec<String>,
        file: &str,
        dir: &Path,
        file_dir: &Path,
        items: &[syn::Item],
    ) {
        let at = self.modules.len();
        self.modules.push(Module {
            krate: krate.clone(),
            path: path.clone(),
            file: file.to_string(),
        });
        let mut collector = Collector {
            at,
            named: Vec::new(),
            method_calls: Vec::new(),
            fns: Vec::new(),
            scope: Vec::new(),
            blocks: 0,
        };
        for item in items {
            let test = is_cfg_test(item_attrs(item));
            if let syn::Item::Mod(m) = item {
                let mut child = path.clone();
                child.push(m.ident.to_string());
                if let Some((_, inner)) = &m.content {
                    if !test {
                        let inner_dir = dir.join(m.ident.to_string());
                        self.walk_items(src, krate, child, file, &inner_dir, file_dir, inner);
                    }
                    continue;
                }
                let (child_file, mod_rs) = module_file(m, dir, file_dir);
                if test {
                    self.test_files.push(rel(src, &child_file));
                } else {
                    self.walk_file(src, krate.clone(), child, &child_file, mod_rs);
                }
                continue;
            }
            if test {
                continue;
            }
            collector.visit_item(item);
        }
        self.named.extend(collector.named);
        self.method_calls.extend(collector.method_calls);
        self.fns.extend(collector.fns);
    }

    /// Resolves every path named: `crate`/`self`/`super` and the library's name from a
    /// binary, then a module's child modules and its `use` aliases (to a fixed point, as an
    /// alias may itself start at another alias).
    fn resolve_all(&mut self) {
        let mut aliases: Vec<Aliases> = vec![Aliases::new(); self.modules.len()];
        for (i, m) in self.modules.iter().enumerate() {
            for c in &self.modules {
                if c.krate == m.krate && c.path.len() == m.path.len() + 1 && c.path.starts_with(&m.path) {
                    let name = c.path.last().unwrap().clone();
                    aliases[i]
                        .entry(name)
                        .or_default()
                        .push((Vec::new(), (c.krate.clone(), c.path.clone())));
                }
            }
        }
        loop {
            let mut changed = false;
            for k in 0..self.named.len() {
                let n = &self.named[k];
                if n.target.is_some() {
                    continue;
                }
                let Some(t) = self.resolve(n, &aliases[n.from]) else {
                    continue;
                };
                if let Some(alias) = n.alias.as_ref().filter(|a| *a != "*") {
                    let held = aliases[n.from].entry(alias.clone()).or_default();
                    held.push((n.scope.clone(), t.clone()));
                }
                self.named[k].target = Some(t);
                changed = true;
            }
            if !changed {
                break;
            }
        }
    }

    fn resolve(&self, n: &Named, aliases: &Aliases) -> Option<(Krate, Vec<String>)> {
        let m = &self.modules[n.from];
        let written = &n.written;
        let first = written.first()?.as_str();
        let (krate, mut base, rest) = match first {
            "crate" => (m.krate.clone(), Vec::new(), &written[1..]),
            "irqscope" if matches!(m.krate, Krate::Bin(_)) => (Krate::Lib, Vec::new(), &written[1..]),
            "self" => (m.krate.clone(), m.path.clone(), &written[1..]),
            "super" => {
                let ups = written.iter().take_while(|s| *s == "super").count();
                let base = m.path[..m.path.len().checked_sub(ups)?].to_vec();
                (m.krate.clone(), base, &written[ups..])
            }
            // A single name outside a `use` is a local item, a variable or a prelude name.
            _ if written.len() >= 2 || n.alias.is_some() => {
                // The innermost block's `use` of the name where the path is written.
                let (_, (k, p)) = aliases
                    .get(first)?
                    .iter()
                    .filter(|(scope, _)| n.scope.starts_with(scope))
                    .max_by_key(|(scope, _)| scope.len())?;
                (k.clone(), p.clone(), &written[1..])
            }
            _ => return None,
        };
        base.extend(rest.iter().cloned());
        Some((krate, base))
    }
}

/// The file a `mod x;` declaration names, and whether its own `mod` declarations look beside
/// it (as `mod.rs` and `#[path]` files do) rather than in `x/`.
fn module_file(m: &syn::ItemMod, dir: &Path, file_dir: &Path) -> (PathBuf, bool) {
    if let Some(p) = path_attr(&m.attrs) {
        return (file_dir.join(p), true);
    }
    let name = m.ident.to_string();
    let flat = dir.join(format!("{name}.rs"));
    if flat.exists() {
        (flat, false)
    } else {
        (dir.join(name).join("mod.rs"), true)
    }
}

fn rel(src: &Path, p: &Path) -> String {
    p.strip_prefix(src).unwrap().to_string_lossy().into_owned()
}

fn item_attrs(item: &syn::Item) -> &[syn::Attribute] {
    use syn::Item::*;
    match item {
        Const(i) => &i.attrs,
        Enum(i) => &i.attrs,
        ExternCrate(i) => &i.attrs,
        Fn(i) => &i.attrs,
        ForeignMod(i) => &i.attrs,
        Impl(i) => &i.attrs,
        Macro(i) => &i.attrs,
        Mod(i) => &i.attrs,
        Static(i) => &i.attrs,
        Struct(i) => &i.attrs,
        Trait(i) => &i.attrs,
        TraitAlias(i) => &i.attrs,
        Type(i) => &i.attrs,
        Union(i) => &i.attrs,
        Use(i) => &i.attrs,
        _ => &[],
    }
}

/// `#[cfg(test)]` exactly.
fn is_cfg_test(attrs: &[syn::Attribute]) -> bool {
    attrs
        .iter()
        .any(|a| a.path().is_ident("cfg") && matches!(&a.meta, syn::Meta::List(l) if l.tokens.to_string() == "test"))
}

/// The file a `#[path = "…"]` attribute names.
fn path_attr(attrs: &[syn::Attribute]) -> Option<String> {
    attrs.iter().find_map(|a| match &a.meta {
        syn::Meta::NameValue(nv) if nv.path.is_ident("path") => match &nv.value {
            syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Str(s), ..
            }) => Some(s.value()),
            _ => None,
        },
        _ => None,
    })
}

/// Collects what one module's items (not its child modules) name.
struct Collector {
    at: usize,
    named: Vec<Named>,
    method_calls: Vec<(usize, usize, String)>,
    fns: Vec<FnSpan>,
    /// The blocks the walk is in, and the number of blocks seen.
    scope: Vec<usize>,
    blocks: usize,
}

impl Collector {
    fn push(&mut self, line: usize, written: Vec<String>, alias: Option<String>) {
        self.named.push(Named {
            from: self.at,
            line,
            target: None,
            written,
            alias,
            scope: self.scope.clone(),
        });
    }

    /// Every path of a `use` tree, with the name it brings in.
    fn use_tree(&mut self, prefix: &mut Vec<String>, tree: &syn::UseTree) {
        match tree {
            syn::UseTree::Path(p) => {
                prefix.push(p.ident.to_string());
                self.use_tree(prefix, &p.tree);
                prefix.pop();
            }
            syn::UseTree::Name(n) => {
                let name = n.ident.to_string();
                self.use_leaf(prefix, &name, &name, n.ident.span());
            }
            syn::UseTree::Rename(r) => {
                self.use_leaf(prefix, &r.ident.to_string(), &r.rename.to_string(), r.ident.span());
            }
            syn::UseTree::Glob(g) => {
                let line = g.star_token.spans[0].start().line;
                self.push(line, prefix.clone(), Some("*".to_string()));
            }
            syn::UseTree::Group(g) => {
                for t in &g.items {
                    self.use_tree(prefix, t);
                }
            }
        }
    }

    fn use_leaf(&mut self, prefix: &[String], ident: &str, alias: &str, span: proc_macro2::Span) {
        let mut w = prefix.to_vec();
        if ident != "self" {
            w.push(ident.to_string());
        }
        let alias = if ident == "self" && alias == "self" {
            prefix.last().cloned().unwrap_or_default()
        } else {
            alias.to_string()
        };
        self.push(span.start().line, w, Some(alias));
    }

    /// `a::b::c` sequences in a macro's or an attribute's tokens.
    fn tokens(&mut self, tokens: TokenStream) {
        let trees: Vec<TokenTree> = tokens.into_iter().collect();
        let mut i = 0;
        while i < trees.len() {
            match &trees[i] {
                TokenTree::Group(g) => {
                    self.tokens(g.stream());
                    i += 1;
                }
                TokenTree::Ident(first) => {
                    let mut segs = vec![first.to_string()];
                    let mut j = i + 1;
                    while let (Some(TokenTree::Punct(a)), Some(TokenTree::Punct(b)), Some(TokenTree::Ident(next))) =
                        (trees.get(j), trees.get(j + 1), trees.get(j + 2))
                    {
                        if a.as_char() == ':' && a.spacing() == Spacing::Joint && b.as_char() == ':' {
                            segs.push(next.to_string());
                            j += 3;
                        } else {
                            break;
                        }
                    }
                    if segs.len() >= 2 {
                        self.push(first.span().start().line, segs, None);
                    }
                    i = j;
                }
                _ => i += 1,
            }
        }
    }

    fn fn_span(&mut self, name: &syn::Ident, sig: &syn::Signature, block: &syn::Block) {
        self.fns.push(FnSpan {
            from: self.at,
            name: name.to_string(),
            first_line: sig.fn_token.span.start().line,
            last_line: block.brace_token.span.close().end().line,
        });
    }
}

impl<'ast> Visit<'ast> for Collector {
    fn visit_item(&mut self, item: &'ast syn::Item) {
        // Child modules are walked as modules of their own; test items are left out.
        if matches!(item, syn::Item::Mod(_)) || is_cfg_test(item_attrs(item)) {
            return;
        }
        syn::visit::visit_item(self, item);
    }

    fn visit_impl_item(&mut self, item: &'ast syn::ImplItem) {
        let attrs = match item {
            syn::ImplItem::Const(i) => &i.attrs,
            syn::ImplItem::Fn(i) => &i.attrs,
            syn::ImplItem::Type(i) => &i.attrs,
            syn::ImplItem::Macro(i) => &i.attrs,
            _ => return syn::visit::visit_impl_item(self, item),
        };
        if !is_cfg_test(attrs) {
            syn::visit::visit_impl_item(self, item);
        }
    }

    fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
        self.use_tree(&mut Vec::new(), &u.tree);
    }

    fn visit_path(&mut self, p: &'ast syn::Path) {
        let segs: Vec<String> = p.segments.iter().map(|s| s.ident.to_string()).collect();
        if let Some(first) = p.segments.first() {
            self.push(first.ident.span().start().line, segs, None);
        }
        syn::visit::visit_path(self, p);
    }

    fn visit_macro(&mut self, m: &'ast syn::Macro) {
        self.tokens(m.tokens.clone());
        syn::visit::visit_macro(self, m);
    }

    fn visit_attribute(&mut self, a: &'ast syn::Attribute) {
        if let syn::Meta::List(l) = &a.meta {
            self.tokens(l.tokens.clone());
        }
        syn::visit::visit_attribute(self, a);
    }

    fn visit_block(&mut self, b: &'ast syn::Block) {
        self.blocks += 1;
        self.scope.push(self.blocks);
        syn::visit::visit_block(self, b);
        self.scope.pop();
    }

    fn visit_visibility(&mut self, _: &'ast syn::Visibility) {}

    fn visit_trait_item_fn(&mut self, f: &'ast syn::TraitItemFn) {
        if is_cfg_test(&f.attrs) {
            return;
        }
        if let Some(block) = &f.default {
            self.fn_span(&f.sig.ident, &f.sig, block);
        }
        syn::visit::visit_trait_item_fn(self, f);
    }

    fn visit_expr_method_call(&mut self, c: &'ast syn::ExprMethodCall) {
        self.method_calls
            .push((self.at, c.method.span().start().line, c.method.to_string()));
        syn::visit::visit_expr_method_call(self, c);
    }

    fn visit_item_fn(&mut self, f: &'ast syn::ItemFn) {
        self.fn_span(&f.sig.ident, &f.sig, &f.block);
        syn::visit::visit_item_fn(self, f);
    }

    fn visit_impl_item_fn(&mut self, f: &'ast syn::ImplItemFn) {
        self.fn_span(&f.sig.ident, &f.sig, &f.block);
        syn::visit::visit_impl_item_fn(self, f);
    }
}
