//! ARCHITECTURE.md's invariants, checked over the crate's parsed module graph
//! (`common::module_graph`: every file under `src/` read with `syn`, `#[cfg(test)]` left out,
//! every path resolved to the module it names): which part may name which ([`RULES`], each
//! failure naming its rule, the file and the line), no cycle between the top-level rooms or
//! between `render`'s modules, where directories are walked and clocks read, that `kernel`
//! stays pure, and that `main.rs` stays a thin command line.

use crate::common::fs::Scratch;
use crate::common::module_graph::{Edge, Graph, Krate};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn graph() -> &'static Graph {
    static GRAPH: OnceLock<Graph> = OnceLock::new();
    GRAPH.get_or_init(|| Graph::parse(&src()))
}

/// Whether `place` (`render::view::scenario`, `bin`) is `within` or inside it.
fn inside(place: &str, within: &str) -> bool {
    place == within || place.strip_prefix(within).is_some_and(|rest| rest.starts_with("::"))
}

/// Whether a named path (below the library's root) lies in one of `places`; `scenario::run`
/// is a place as good as `kernel`.
fn names_any(path: &[String], places: &[&str]) -> bool {
    places.iter().any(|p| inside(&path.join("::"), p))
}

/// What one rule says, over places: a module path of the library (`kernel_c`,
/// `render::columns`, `scenario::run`) or `bin`, the binaries' side (`src/main.rs`,
/// `src/*_cmd.rs`, `src/bin/*.rs`). What a place names inside itself is never checked.
enum Says {
    /// The places in this order: each names none at its own step or after it.
    Layers(&'static [&'static [&'static str]]),
    /// `from` names nothing outside `names`.
    ReadsOnly {
        from: &'static str,
        names: &'static [&'static str],
    },
    /// `from` names none of `names`.
    Never {
        from: &'static str,
        names: &'static [&'static str],
    },
    /// Only `by` name `named` (of the places `among`, or anywhere).
    OnlyFrom {
        named: &'static str,
        by: &'static [&'static str],
        among: Option<&'static str>,
    },
}

/// ARCHITECTURE.md's dependency rules (its "Dependencies point one way" invariant and the code
/// map), each with the name a failure gives.
const RULES: &[(&str, Says)] = &[
    (
        "dependencies point one way: topology <- kernel/policy <- scenario <- metrics <- render \
         <- web",
        Says::Layers(&[
            &["topology"],
            &["kernel", "policy"],
            &["scenario"],
            &["metrics"],
            &["render"],
            &["web"],
        ]),
    ),
    (
        "policy takes plain numbers, not scenario types",
        Says::Never {
            from: "policy",
            names: &["scenario"],
        },
    ),
    (
        "live reads topology and metrics only",
        Says::ReadsOnly {
            from: "live",
            names: &["topology", "metrics"],
        },
    ),
    (
        "analysis reads live and scenario; render reads both",
        Says::Layers(&[&["live", "scenario"], &["analysis"], &["render"]]),
    ),
    (
        "web reaches the models, the scenario run and the metrics only through render::view",
        Says::Never {
            from: "web",
            names: &["kernel", "policy", "metrics", "scenario::run", "scenario::try_run"],
        },
    ),
    (
        "nothing in the library imports web",
        Says::OnlyFrom {
            named: "web",
            by: &["bin"],
            among: None,
        },
    ),
    (
        "render never reads golden or web",
        Says::Never {
            from: "render",
            names: &["golden", "web"],
        },
    ),
    (
        "golden is read only from the top",
        Says::OnlyFrom {
            named: "golden",
            by: &["bin", "kernel_c_tools"],
            among: None,
        },
    ),
    (
        "kernel_c_tools::verify is the tools' only use of golden",
        Says::OnlyFrom {
            named: "golden",
            by: &["kernel_c_tools::verify"],
            among: Some("kernel_c_tools"),
        },
    ),
    (
        "kernel_c (the engine) reads only kernel, topology and the catalogue",
        Says::ReadsOnly {
            from: "kernel_c",
            names: &["kernel", "topology", "catalogue"],
        },
    ),
    (
        "kernel_c_tools read kernel_c, kernel, topology and golden",
        Says::ReadsOnly {
            from: "kernel_c_tools",
            names: &["kernel_c", "kernel", "topology", "golden"],
        },
    ),
    (
        "nothing in the library reads kernel_c_tools but review",
        Says::OnlyFrom {
            named: "kernel_c_tools",
            by: &["bin", "review"],
            among: None,
        },
    ),
    (
        "review reads the tools, the engine, analysis, render and the models below them",
        Says::ReadsOnly {
            from: "review",
            names: &[
                "kernel_c_tools",
                "kernel_c",
                "analysis",
                "render",
                "scenario",
                "catalogue",
                "metrics",
                "topology",
                "policy",
                "kernel",
            ],
        },
    ),
    (
        "nothing in the library reads review",
        Says::OnlyFrom {
            named: "review",
            by: &["bin"],
            among: None,
        },
    ),
    (
        "lab::run, with lab::fetch, is called only by main.rs",
        Says::OnlyFrom {
            named: "lab::run",
            by: &["bin", "lab::fetch"],
            among: None,
        },
    ),
    (
        "lab::run, with lab::fetch, is called only by main.rs",
        Says::OnlyFrom {
            named: "lab::fetch",
            by: &["bin", "lab::run"],
            among: None,
        },
    ),
    (
        "render::columns imports no other part of render",
        Says::Never {
            from: "render::columns",
            names: &["render"],
        },
    ),
];

/// `rule 'NAME': src/FILE names crate::PATH (line N)`.
fn breach(rule: &str, g: &Graph, e: &Edge) -> String {
    format!(
        "rule '{rule}': src/{} names {} (line {})",
        g.modules[e.from].file,
        e.shown(),
        e.line
    )
}

/// Every breach of one rule in `g`.
fn breaches(rule: &str, says: &Says, g: &Graph) -> Vec<String> {
    let mut out = Vec::new();
    for e in g.lib_edges() {
        let from = g.modules[e.from].place();
        let to = e.path.join("::");
        let broken = match says {
            Says::Layers(steps) => {
                let step = |p: &str| steps.iter().position(|s| s.iter().any(|x| inside(p, x)));
                let own = steps.iter().flat_map(|s| s.iter()).find(|x| inside(&from, x));
                match (step(&from), step(&to), own) {
                    (Some(a), Some(b), Some(own)) => !inside(&to, own) && b >= a,
                    _ => false,
                }
            }
            Says::ReadsOnly { from: f, names } => inside(&from, f) && !inside(&to, f) && !names_any(&e.path, names),
            Says::Never { from: f, names } => inside(&from, f) && !inside(&to, f) && names_any(&e.path, names),
            Says::OnlyFrom { named, by, among } => {
                inside(&to, named)
                    && !inside(&from, named)
                    && among.is_none_or(|a| inside(&from, a))
                    && !by.iter().any(|b| inside(&from, b))
            }
        };
        if broken {
            out.push(breach(rule, g, &e));
        }
    }
    out
}

#[test]
fn dependencies_follow_the_rules_architecture_md_states() {
    let g = graph();
    let found: Vec<String> = RULES.iter().flat_map(|(rule, says)| breaches(rule, says, g)).collect();
    assert!(found.is_empty(), "{}", found.join("\n"));
}

/// The graph holds every file under `src/`: each is a module reached from a crate root, or a
/// `#[cfg(test)]` module's file.
#[test]
fn the_module_graph_reads_every_file_under_src() {
    let g = graph();
    let mut read: BTreeSet<String> = g.modules.iter().map(|m| m.file.clone()).collect();
    read.extend(g.test_files.iter().cloned());
    let mut todo = vec![src()];
    let mut missed = Vec::new();
    while let Some(dir) = todo.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let p = entry.unwrap().path();
            if p.is_dir() {
                todo.push(p);
            } else if p.extension().is_some_and(|e| e == "rs") {
                let rel = p.strip_prefix(src()).unwrap().to_string_lossy().into_owned();
                if !read.contains(&rel) {
                    missed.push(rel);
                }
            }
        }
    }
    assert!(
        missed.is_empty(),
        "files under src/ the module walk does not reach: {missed:?}"
    );
    assert!(
        read.contains("kernel/group_cpus_external.rs"),
        "a #[path] module is missed"
    );
}

/// A rule over a place that does not exist would hold for nothing.
#[test]
fn every_rule_names_places_that_exist() {
    let g = graph();
    let places: BTreeSet<String> = g.modules.iter().map(|m| m.place()).collect();
    let exists = |p: &str| {
        places.iter().any(|q| inside(q, p)) || p.rsplit_once("::").is_some_and(|(module, _)| places.contains(module))
    };
    for (rule, says) in RULES {
        let named: Vec<&str> = match says {
            Says::Layers(steps) => steps.iter().flat_map(|s| s.iter().copied()).collect(),
            Says::ReadsOnly { from, names } | Says::Never { from, names } => {
                std::iter::once(*from).chain(names.iter().copied()).collect()
            }
            Says::OnlyFrom { named, by, among } => std::iter::once(*named)
                .chain(by.iter().copied())
                .chain(among.iter().copied())
                .collect(),
        };
        for p in named {
            assert!(exists(p), "rule '{rule}' names {p}, which is no module of src/");
        }
    }
}

/// The cycles of `graph`: each set of two or more places that all reach each other (a
/// strongly connected component), smallest first.
fn cycles(graph: &PlaceGraph) -> Vec<BTreeSet<String>> {
    let reach = |from: &str| {
        let mut seen = BTreeSet::new();
        let mut todo = vec![from.to_string()];
        while let Some(n) = todo.pop() {
            for d in graph.get(&n).into_iter().flatten() {
                if seen.insert(d.clone()) {
                    todo.push(d.clone());
                }
            }
        }
        seen
    };
    let reached: BTreeMap<&String, BTreeSet<String>> = graph.keys().map(|n| (n, reach(n))).collect();
    let mut out: Vec<BTreeSet<String>> = Vec::new();
    for (n, r) in &reached {
        if !r.contains(*n) || out.iter().any(|c| c.contains(*n)) {
            continue;
        }
        let scc: BTreeSet<String> = r
            .iter()
            .filter(|m| reached.get(m).is_some_and(|back| back.contains(*n)))
            .cloned()
            .collect();
        out.push(scc);
    }
    out.sort_by_key(|c| c.len());
    out
}

/// Which places each place names.
type PlaceGraph = BTreeMap<String, BTreeSet<String>>;

/// For each edge (from, to) of a [`PlaceGraph`], the first line that makes it.
type EdgeLines = BTreeMap<(String, String), String>;

/// The graph between the places `place_of` gives (`None`: left out).
fn place_graph(g: &Graph, place_of: impl Fn(usize) -> Option<String>) -> (PlaceGraph, EdgeLines) {
    let mut graph = PlaceGraph::new();
    let mut first = BTreeMap::new();
    for e in g.lib_edges() {
        let (Some(a), Some(b)) = (place_of(e.from), place_of(e.to)) else {
            continue;
        };
        if a != b {
            graph.entry(a.clone()).or_default().insert(b.clone());
            first
                .entry((a, b))
                .or_insert_with(|| format!("src/{} names {} (line {})", g.modules[e.from].file, e.shown(), e.line));
        }
    }
    (graph, first)
}

/// The shortest loop through the places of `cycle` (the first place repeated at the end).
fn shortest_loop(graph: &PlaceGraph, cycle: &BTreeSet<String>) -> Vec<String> {
    let mut best: Option<Vec<String>> = None;
    for start in cycle {
        // Breadth first from `start` back to it, inside the cycle.
        let mut back: BTreeMap<String, String> = BTreeMap::new();
        let mut todo = std::collections::VecDeque::from([start.clone()]);
        'search: while let Some(n) = todo.pop_front() {
            for d in graph.get(&n).into_iter().flatten().filter(|d| cycle.contains(*d)) {
                if d == start {
                    let mut path = vec![n.clone()];
                    while path.last() != Some(start) {
                        let parent = back[path.last().unwrap()].clone();
                        path.push(parent);
                    }
                    path.reverse();
                    path.push(start.clone());
                    if best.as_ref().is_none_or(|b| path.len() < b.len()) {
                        best = Some(path);
                    }
                    break 'search;
                }
                if !back.contains_key(d) && d != start {
                    back.insert(d.clone(), n.clone());
                    todo.push_back(d.clone());
                }
            }
        }
    }
    best.unwrap_or_default()
}

/// A cycle as its rule names it: the places that reach each other, and the shortest loop
/// between them with the line that makes each step.
fn cycle_message(rule: &str, graph: &PlaceGraph, cycle: &BTreeSet<String>, first: &EdgeLines) -> String {
    let names: Vec<&str> = cycle.iter().map(String::as_str).collect();
    let path = shortest_loop(graph, cycle);
    let steps: Vec<String> = path
        .windows(2)
        .map(|w| format!("  {} -> {}: {}", w[0], w[1], first[&(w[0].clone(), w[1].clone())]))
        .collect();
    format!(
        "rule '{rule}': {} reach each other; the shortest loop: {}\n{}",
        names.join(", "),
        path.join(" -> "),
        steps.join("\n")
    )
}

#[test]
fn no_cycle_between_top_level_rooms() {
    let g = graph();
    let lib_room = |m: usize| {
        let m = &g.modules[m];
        (m.krate == Krate::Lib && !m.path.is_empty()).then(|| m.room())
    };
    let (rooms, first) = place_graph(g, lib_room);
    assert!(
        rooms.contains_key("render") && rooms["golden"].contains("render"),
        "the room graph lacks edges it has: {rooms:?}"
    );
    let found: Vec<String> = cycles(&rooms)
        .iter()
        .map(|c| cycle_message("no cycle between top-level rooms", &rooms, c, &first))
        .collect();
    assert!(found.is_empty(), "{}", found.join("\n"));
}

/// The one cycle between `render`'s modules that src/ has today: each page's view names
/// `seeds::seed_of` (a page opened from a seed link leads with the seed's sentence) and
/// `seeds` names the pages' query types (`BlkMqQuery`, `ManaQuery`, `SchedQuery`) to build
/// the seed links. Listed so that no new module joins it and so that the test says when it is
/// gone (then this list is emptied).
const RENDER_CYCLE_TODAY: &[&str] = &[
    "render::view::blkmq",
    "render::view::mana",
    "render::view::scenario",
    "render::view::sched",
    "render::view::seeds",
];

/// `render`'s modules, `render/view/*` each on its own, import each other without a cycle
/// (but the one listed in [`RENDER_CYCLE_TODAY`]).
#[test]
fn render_modules_import_each_other_without_a_cycle() {
    let g = graph();
    let render_module = |m: usize| {
        let m = &g.modules[m];
        (m.krate == Krate::Lib && m.room() == "render").then(|| m.place())
    };
    let (modules, first) = place_graph(g, render_module);
    assert!(
        modules.contains_key("render::view::scenario") && modules.contains_key("render::text"),
        "render's module graph lacks modules: {modules:?}"
    );
    let today: BTreeSet<String> = RENDER_CYCLE_TODAY.iter().map(|s| s.to_string()).collect();
    let found = cycles(&modules);
    let new: Vec<String> = found
        .iter()
        .filter(|c| **c != today)
        .map(|c| {
            cycle_message(
                "render's modules import each other without a cycle",
                &modules,
                c,
                &first,
            )
        })
        .collect();
    assert!(new.is_empty(), "{}", new.join("\n"));
    assert!(
        today.is_empty() || found.contains(&today),
        "the cycle between {RENDER_CYCLE_TODAY:?} is gone: empty RENDER_CYCLE_TODAY"
    );
}

/// The parser itself, on a small crate of its own: `crate::`, `super::super::`, child
/// modules, `use … as`, `#[path]`, paths in macros and types are found and resolved; test
/// modules and items are not; and the rules name what breaks them.
#[test]
fn the_module_graph_resolves_what_a_module_names() {
    let dir = Scratch::new("module-graph");
    let files = [
        ("lib.rs", "pub mod a;\npub mod b;\n#[cfg(test)]\nmod tests;\n"),
        (
            "a/mod.rs",
            "pub mod deep;\n#[path = \"other.rs\"]\nmod elsewhere;\npub use deep::f;\n",
        ),
        (
            "a/deep.rs",
            "pub fn f() -> crate::b::T {\n    super::super::b::g();\n    \
             let _ = vec![crate::b::h()];\n    crate::b::T\n}\n\
             #[cfg(test)]\nfn t() { crate::b::only_in_tests(); }\n",
        ),
        (
            "a/other.rs",
            "use crate::b as bee;\npub fn o() { bee::g(); }\n\
             pub fn p() {\n    use crate::a as bee;\n    bee::f();\n}\n",
        ),
        ("b.rs", "pub struct T;\npub fn g() {}\npub fn h() {}\n"),
        ("tests.rs", "use crate::a::elsewhere::o;\n"),
        ("main.rs", "use irqscope::b;\nfn main() { b::g(); }\n"),
    ];
    for (name, text) in files {
        let p = dir.join(name);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    let g = Graph::parse(&dir);
    let edges: BTreeSet<String> = g
        .lib_edges()
        .iter()
        .map(|e| format!("{} {}:{}", g.modules[e.from].place(), e.shown(), e.line))
        .collect();
    let want: BTreeSet<String> = [
        "a crate::a::deep::f:4",
        "a::deep crate::b::T:1",
        "a::deep crate::b::T:4",
        "a::deep crate::b::g:2",
        "a::deep crate::b::h:3",
        "a::elsewhere crate::a:4",
        "a::elsewhere crate::a::f:5",
        "a::elsewhere crate::b:1",
        "a::elsewhere crate::b::g:2",
        "bin crate::b:1",
        "bin crate::b::g:2",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    assert_eq!(edges, want);
    let rule = Says::Never {
        from: "a",
        names: &["b"],
    };
    let found = breaches("a never names b", &rule, &g);
    assert_eq!(found.len(), 6, "{found:?}");
    assert!(
        found.contains(&"rule 'a never names b': src/a/other.rs names crate::b::g (line 2)".to_string()),
        "{found:?}"
    );
    let layers = Says::Layers(&[&["a"], &["b"]]);
    assert_eq!(breaches("b above a", &layers, &g).len(), 6);
    assert!(breaches("a above b", &Says::Layers(&[&["b"], &["a"]]), &g).is_empty());
}

/// Where a room of the library names one of `crates` (a path outside the crate, as written:
/// `std::fs`, `serde`), as `src/FILE:LINE: PATH`.
fn outside_paths(room: &str, crates: &[&str]) -> Vec<String> {
    let g = graph();
    g.named
        .iter()
        .filter(|n| {
            let m = &g.modules[n.from];
            m.krate == Krate::Lib && m.room() == room && n.target.is_none() && names_any(&n.written, crates)
        })
        .map(|n| format!("src/{}:{}: {}", g.modules[n.from].file, n.line, n.written.join("::")))
        .collect()
}

/// `kernel` is pure: no I/O, clock, randomness, serde or async runtime.
#[test]
fn kernel_is_pure() {
    let found = outside_paths(
        "kernel",
        &[
            "std::fs",
            "std::io",
            "std::time",
            "std::env",
            "std::process",
            "std::net",
            "std::thread",
            "rand",
            "serde",
            "serde_json",
            "tokio",
        ],
    );
    assert!(found.is_empty(), "kernel is not pure:\n{}", found.join("\n"));
    assert!(
        !outside_paths("kernel", &["std"]).is_empty(),
        "the search finds no std path in kernel"
    );
}

/// `scenario` speaks no HTTP.
#[test]
fn scenario_speaks_no_http() {
    let found = outside_paths("scenario", &["axum", "hyper", "http", "tower", "tower_http"]);
    assert!(found.is_empty(), "scenario speaks HTTP:\n{}", found.join("\n"));
}

/// Models read the kernel's view of the machine, never the drawing (`drawn_*`).
#[test]
fn kernel_models_never_read_the_drawing() {
    let g = graph();
    let in_kernel = |m: usize| g.modules[m].krate == Krate::Lib && g.modules[m].room() == "kernel";
    let mut found: Vec<String> = g
        .method_calls
        .iter()
        .filter(|(m, _, name)| in_kernel(*m) && name.starts_with("drawn_"))
        .map(|(m, line, name)| format!("src/{}:{line}: .{name}()", g.modules[*m].file))
        .collect();
    found.extend(
        g.named
            .iter()
            .filter(|n| in_kernel(n.from) && n.written.last().is_some_and(|s| s.starts_with("drawn_")))
            .map(|n| format!("src/{}:{}: {}", g.modules[n.from].file, n.line, n.written.join("::"))),
    );
    assert!(
        found.is_empty(),
        "a kernel model reads the drawing:\n{}",
        found.join("\n")
    );
    // The drawing is read elsewhere, so the search finds what it looks for.
    assert!(g.method_calls.iter().any(|(_, _, name)| name.starts_with("drawn_")));
}

/// The files (relative to `src/`) where a path or a method call ends in one of `names`, or
/// (with `whole`) a path contains one of them.
fn files_naming(names: &[&str], whole: &[&str]) -> BTreeSet<String> {
    let g = graph();
    let mut out: BTreeSet<String> = g
        .named
        .iter()
        .filter(|n| {
            let w = n.written.join("::");
            names.iter().any(|x| w == *x || w.ends_with(&format!("::{x}")))
                || n.written.iter().any(|s| whole.contains(&s.as_str()))
        })
        .map(|n| g.modules[n.from].file.clone())
        .collect();
    out.extend(
        g.method_calls
            .iter()
            .filter(|(_, _, name)| names.contains(&name.as_str()))
            .map(|(m, _, _)| g.modules[*m].file.clone()),
    );
    out
}

/// Directories are walked in the places ARCHITECTURE.md names, and no other.
#[test]
fn directories_are_walked_in_the_named_places_only() {
    let found = files_naming(&["read_dir"], &[]);
    let named: BTreeSet<String> = [
        "golden/mod.rs",
        "topology/import/sysfs.rs",
        "live/collect/mod.rs",
        "lab/fetch.rs",
        "lab/initramfs.rs",
        "kernel_c_tools/source.rs",
        "kernel_c/exec.rs",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    assert_eq!(found, named, "read_dir outside the places ARCHITECTURE.md names");
    let arch = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("ARCHITECTURE.md")).unwrap();
    for f in [
        "golden::collect_files",
        "sysfs::read_tree",
        "collect::read_proc",
        "lab::fetch",
        "lab::initramfs",
        "kernel_c_tools::source",
        "kernel_c::exec",
    ] {
        assert!(arch.contains(f), "ARCHITECTURE.md does not name {f}");
    }
}

/// Clocks are read where ARCHITECTURE.md says, and no other: `kernel`, `scenario`, `metrics`,
/// `render` and `analysis` never.
#[test]
fn clocks_are_read_in_the_named_places_only() {
    let found = files_naming(&["Instant::now", "SystemTime::now"], &["UNIX_EPOCH"]);
    let named: BTreeSet<String> = [
        "bin/agent.rs",
        "kernel_c_cmd.rs",
        "review_cmd.rs",
        "kernel_c/runner.rs",
        "kernel_c_tools/build.rs",
        "lab/console.rs",
        "lab/run/boot.rs",
        "lab/run/mod.rs",
        "live/hub.rs",
        "web/live/mod.rs",
        "web/server.rs",
        "web/work.rs",
        "web/review_queue.rs",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let extra: Vec<_> = found.difference(&named).collect();
    assert!(extra.is_empty(), "a clock read outside the named places: {extra:?}");
    assert!(
        found.contains("live/hub.rs"),
        "the search misses the hub's clock: {found:?}"
    );
    for pure in [
        "kernel/",
        "scenario/",
        "render/",
        "analysis/",
        "metrics.rs",
        "policy/",
        "topology/",
    ] {
        assert!(!found.iter().any(|f| f.starts_with(pure)), "{pure} reads a clock");
    }
}

/// `main.rs` parses arguments and dispatches: short, and neither it nor `model_cmd.rs` runs a
/// model itself (they go through `render::view`).
#[test]
fn main_rs_is_a_thin_command_line() {
    let main = std::fs::read_to_string(src().join("main.rs")).unwrap();
    let lines = main.lines().count();
    assert!(lines < 400, "main.rs has {lines} lines");
    let g = graph();
    let runs = [
        "scenario::run",
        "scenario::try_run",
        "scenario::Scenario::new",
        "metrics::compute",
        "kernel::blk_mq_cpumap::blk_mq_map_queues",
    ];
    let found: Vec<String> = g
        .lib_edges()
        .iter()
        .filter(|e| ["main.rs", "model_cmd.rs"].contains(&g.modules[e.from].file.as_str()))
        .filter(|e| names_any(&e.path, &runs))
        .map(|e| format!("src/{}:{}: {}", g.modules[e.from].file, e.line, e.shown()))
        .collect();
    assert!(
        found.is_empty(),
        "the command line runs a model itself instead of render::view:\n{}",
        found.join("\n")
    );
}

/// Longest function allowed anywhere under `src/` but for those ARCHITECTURE.md's "Long on
/// purpose" lists (kernel ports as long as the kernel function they mirror): a longer one is a
/// job for named steps.
const FN_LINES_MAX: usize = 80;

/// ARCHITECTURE.md's "Long on purpose" entries, split at the file's closing backtick:
/// (file under `src/`, the rest of the line). A function's rest is `` `NAME`: ...``, a
/// file's `: ...`.
fn long_on_purpose_entries() -> Vec<(String, String)> {
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("ARCHITECTURE.md")).unwrap();
    let section = text
        .split("\n## ")
        .find(|s| s.starts_with("Long on purpose"))
        .expect("ARCHITECTURE.md has a 'Long on purpose' section");
    section
        .lines()
        .filter_map(|l| l.strip_prefix("- `src/"))
        .filter_map(|l| l.split_once('`'))
        .map(|(file, rest)| (file.to_string(), rest.to_string()))
        .collect()
}

/// The functions ARCHITECTURE.md lists as long on purpose: (file under `src/`, name).
fn long_on_purpose() -> Vec<(String, String)> {
    long_on_purpose_entries()
        .into_iter()
        .filter_map(|(file, rest)| {
            let name = rest.strip_prefix(" `")?.split('`').next()?.to_string();
            Some((file, name))
        })
        .collect()
}

/// Most lines of a file under `src/`.
const FILE_LINES_MAX: usize = 1000;

/// The files ARCHITECTURE.md lists as over [`FILE_LINES_MAX`] lines on purpose.
fn long_files_on_purpose() -> BTreeSet<String> {
    long_on_purpose_entries()
        .into_iter()
        .filter(|(_, rest)| rest.starts_with(':'))
        .map(|(file, _)| file)
        .collect()
}

/// No file under `src/` is over [`FILE_LINES_MAX`] lines but the kernel mirrors ARCHITECTURE.md
/// lists, and each listed file still is.
#[test]
fn files_stay_short() {
    let listed = long_files_on_purpose();
    let g = graph();
    let long: BTreeSet<String> = g
        .modules
        .iter()
        .map(|m| m.file.clone())
        .filter(|file| {
            let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("src").join(file)).unwrap();
            text.lines().count() > FILE_LINES_MAX
        })
        .collect();
    let unlisted: Vec<_> = long.difference(&listed).collect();
    assert!(
        unlisted.is_empty(),
        "files over {FILE_LINES_MAX} lines that ARCHITECTURE.md does not list as long on purpose: {unlisted:?}"
    );
    let stale: Vec<_> = listed.difference(&long).collect();
    assert!(
        stale.is_empty(),
        "ARCHITECTURE.md lists as long files that are not (any more) over {FILE_LINES_MAX} lines: {stale:?}"
    );
    assert!(!listed.is_empty(), "the list was read");
}

#[test]
fn functions_stay_short() {
    let g = graph();
    let listed = long_on_purpose();
    let long: BTreeMap<(String, String), usize> = g
        .fns
        .iter()
        .map(|f| {
            let key = (g.modules[f.from].file.clone(), f.name.clone());
            (key, f.last_line + 1 - f.first_line)
        })
        .filter(|(_, lines)| *lines > FN_LINES_MAX)
        .collect();
    let unlisted: Vec<String> = long
        .iter()
        .filter(|(key, _)| !listed.contains(key))
        .map(|((file, name), lines)| format!("src/{file}: {name}: {lines} lines"))
        .collect();
    assert!(
        unlisted.is_empty(),
        "functions over {FN_LINES_MAX} lines that ARCHITECTURE.md does not list as long on \
         purpose:\n{}",
        unlisted.join("\n")
    );
    let stale: Vec<String> = listed
        .iter()
        .filter(|key| !long.contains_key(*key))
        .map(|(file, name)| format!("src/{file}: {name}"))
        .collect();
    assert!(
        stale.is_empty(),
        "ARCHITECTURE.md lists as long functions that are not (any more) over {FN_LINES_MAX} \
         lines:\n{}",
        stale.join("\n")
    );
    assert!(g
        .fns
        .iter()
        .any(|f| g.modules[f.from].file == "main.rs" && f.name == "main"));
}
