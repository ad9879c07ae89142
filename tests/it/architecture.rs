//! ARCHITECTURE.md's invariants that a grep can check, checked: which layer may name which
//! (dependencies point one way; `web` reaches the models only through `render::view`; nothing
//! below `web` imports it), that `render`'s modules import each other without a cycle, where
//! directories are walked and clocks read, and that `main.rs` stays a thin command line. A
//! new import that breaks a rule fails here with the file and line.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Every `.rs` file under `dir`, as (path relative to `src/`, text).
fn files(dir: &Path) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let p = entry.unwrap().path();
            if p.is_dir() {
                todo.push(p);
            } else if p.extension().is_some_and(|e| e == "rs") {
                let rel = p.strip_prefix(src()).unwrap().to_string_lossy().into_owned();
                out.push((rel, std::fs::read_to_string(&p).unwrap()));
            }
        }
    }
    // Modules declared `#[cfg(test)] mod NAME;` are tests in files of their own: left out
    // like the `#[cfg(test)]` tail of a file.
    let test_files: BTreeSet<String> = out
        .iter()
        .flat_map(|(path, text)| {
            let dir = Path::new(path).parent().map(Path::to_path_buf).unwrap_or_default();
            let stem = Path::new(path).file_stem().unwrap().to_string_lossy().into_owned();
            let dir = if stem == "mod" || stem == "lib" || stem == "main" {
                dir
            } else {
                dir.join(stem)
            };
            text.split("#[cfg(test)]\nmod ")
                .skip(1)
                .filter_map(|rest| rest.split_once(";\n").map(|(name, _)| name.to_string()))
                .filter(|name| !name.contains(['{', ' ']))
                .map(move |name| dir.join(format!("{name}.rs")).to_string_lossy().into_owned())
                .collect::<Vec<_>>()
        })
        .collect();
    out.retain(|(path, _)| !test_files.contains(path));
    out.sort();
    out
}

/// Lines of code (comments and the unit tests at the bottom of a file left out).
fn code_lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    let end = text.find("#[cfg(test)]").unwrap_or(text.len());
    text[..end]
        .lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l))
        .filter(|(_, l)| !l.trim_start().starts_with("//"))
}

/// `file:line: text` of every code line under `dir` that contains one of `needles`.
fn uses(dir: &str, needles: &[&str]) -> Vec<String> {
    files(&src().join(dir))
        .iter()
        .flat_map(|(path, text)| {
            code_lines(text)
                .filter(|(_, l)| needles.iter().any(|n| l.contains(n)))
                .map(move |(n, l)| format!("{path}:{n}: {}", l.trim()))
                .collect::<Vec<_>>()
        })
        .collect()
}

#[test]
fn dependencies_point_one_way() {
    let rules: [(&str, &[&str]); 8] = [
        // The engine of built C sits below render: it reads kernel and topology (and the
        // preset catalogue), never golden, so render -> kernel_c -> golden -> render cannot
        // close a loop.
        (
            "kernel_c",
            &[
                "crate::render",
                "crate::web",
                "crate::live",
                "crate::analysis",
                "crate::golden",
                "crate::scenario",
                "crate::metrics",
                "crate::policy",
                "crate::lab",
                "crate::kernel_c_tools",
            ],
        ),
        // golden sits at the top beside the tools; render never reads it.
        ("golden", &["crate::kernel_c_tools", "crate::web"]),
        (
            "topology",
            &[
                "crate::kernel",
                "crate::scenario",
                "crate::metrics",
                "crate::render",
                "crate::web",
                "crate::live",
                "crate::analysis",
            ],
        ),
        (
            "kernel",
            &[
                "crate::scenario",
                "crate::metrics",
                "crate::render",
                "crate::web",
                "crate::live",
                "crate::policy",
                "crate::analysis",
            ],
        ),
        (
            "policy",
            &[
                "crate::kernel",
                "crate::scenario",
                "crate::metrics",
                "crate::render",
                "crate::web",
            ],
        ),
        (
            "scenario",
            &[
                "crate::metrics",
                "crate::render",
                "crate::web",
                "crate::live",
                "crate::analysis",
            ],
        ),
        ("render", &["crate::web", "crate::golden"]),
        (
            "live",
            &[
                "crate::render",
                "crate::web",
                "crate::scenario",
                "crate::kernel",
                "crate::analysis",
            ],
        ),
    ];
    for (dir, banned) in rules {
        let found = uses(dir, banned);
        assert!(
            found.is_empty(),
            "src/{dir} may not name {banned:?}:\n{}",
            found.join("\n")
        );
    }
    // The tools of built C (build, verify) sit at the top: only the binaries read them.
    let below_tools: Vec<String> = files(&src())
        .into_iter()
        .filter(|(p, _)| {
            !p.starts_with("kernel_c_tools/") && !p.starts_with("bin/") && !p.ends_with("_cmd.rs") && p != "main.rs"
        })
        .flat_map(|(p, t)| {
            code_lines(&t)
                .filter(|(_, l)| l.contains("crate::kernel_c_tools"))
                .map(|(n, l)| format!("{p}:{n}: {}", l.trim()))
                .collect::<Vec<_>>()
        })
        .collect();
    assert!(
        below_tools.is_empty(),
        "the library below the tools reads kernel_c_tools:\n{}",
        below_tools.join("\n")
    );
    let metrics = std::fs::read_to_string(src().join("metrics.rs")).unwrap();
    let found: Vec<_> = code_lines(&metrics)
        .filter(|(_, l)| ["crate::render", "crate::web"].iter().any(|n| l.contains(n)))
        .collect();
    assert!(found.is_empty(), "metrics.rs names render or web: {found:?}");
}

/// `web` routes and fills templates: it reaches the kernel models, the scenario run and the
/// metrics only through `render::view`, and nothing outside `web` imports it.
#[test]
fn web_reaches_models_only_through_render_view() {
    let found = uses(
        "web",
        // `crate::kernel_c` (built C's registry, for `/kernel-c`) is not the models.
        &[
            "crate::kernel::",
            "crate::kernel;",
            "kernel::",
            "scenario::run(",
            "scenario::try_run(",
            "metrics::compute",
            "crate::metrics",
            "crate::policy",
        ],
    );
    assert!(found.is_empty(), "web names a model directly:\n{}", found.join("\n"));
    let outside: Vec<String> = files(&src())
        .into_iter()
        .filter(|(p, _)| !p.starts_with("web/") && !p.starts_with("bin/") && !p.ends_with("_cmd.rs") && p != "main.rs")
        .flat_map(|(p, t)| {
            code_lines(&t)
                .filter(|(_, l)| l.contains("crate::web"))
                .map(|(n, l)| format!("{p}:{n}: {}", l.trim()))
                .collect::<Vec<_>>()
        })
        .collect();
    assert!(outside.is_empty(), "the library imports web:\n{}", outside.join("\n"));
}

/// The modules directly under `src/render/` and what each imports of its siblings.
fn render_graph() -> BTreeMap<String, BTreeSet<String>> {
    let dir = src().join("render");
    let names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| {
            let p = e.unwrap().path();
            let stem = p.file_stem()?.to_string_lossy().into_owned();
            (stem != "mod").then_some(stem)
        })
        .collect();
    let mut graph = BTreeMap::new();
    for name in &names {
        let texts: Vec<(String, String)> = if dir.join(name).is_dir() {
            files(&dir.join(name))
        } else {
            vec![(
                name.clone(),
                std::fs::read_to_string(dir.join(format!("{name}.rs"))).unwrap(),
            )]
        };
        let mut deps = BTreeSet::new();
        for (_, text) in &texts {
            for (_, line) in code_lines(text) {
                for other in names.iter().filter(|o| *o != name) {
                    let pats = [
                        format!("super::{other}"),
                        format!("render::{other}"),
                        format!("super::{{{other}"),
                        format!("super::super::{other}"),
                    ];
                    if pats.iter().any(|p| {
                        line.match_indices(p.as_str()).any(|(i, _)| {
                            let next = line[i + p.len()..].chars().next();
                            !next.is_some_and(|c| c.is_alphanumeric() || c == '_')
                        })
                    }) {
                        deps.insert(other.clone());
                    }
                }
            }
        }
        graph.insert(name.clone(), deps);
    }
    graph
}

#[test]
fn render_modules_import_each_other_without_a_cycle() {
    let graph = render_graph();
    assert!(
        graph.contains_key("text") && graph.contains_key("vector_space"),
        "{graph:?}"
    );
    assert!(
        !(graph["text"].contains("vector_space") && graph["vector_space"].contains("text")),
        "text and vector_space import each other"
    );
    // Depth-first search for any cycle.
    fn visit<'a>(
        n: &'a str,
        g: &'a BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<&'a str>,
        done: &mut BTreeSet<&'a str>,
    ) {
        if let Some(at) = path.iter().position(|p| *p == n) {
            panic!("render import cycle: {}", path[at..].join(" -> "));
        }
        if done.contains(n) {
            return;
        }
        path.push(n);
        for d in &g[n] {
            visit(d, g, path, done);
        }
        path.pop();
        done.insert(n);
    }
    let mut done = BTreeSet::new();
    for n in graph.keys() {
        visit(n, &graph, &mut Vec::new(), &mut done);
    }
    assert!(graph["columns"].is_empty(), "columns imports {:?}", graph["columns"]);
}

/// `kernel` is pure: no I/O, clock, randomness, serde or async runtime.
#[test]
fn kernel_is_pure() {
    let found = uses(
        "kernel",
        &[
            "std::fs",
            "std::time",
            "std::env",
            "std::process",
            "rand::",
            "serde",
            "tokio",
            "std::net",
        ],
    );
    assert!(found.is_empty(), "kernel is not pure:\n{}", found.join("\n"));
}

/// Directories are walked in the places ARCHITECTURE.md names, and no other.
#[test]
fn directories_are_walked_in_the_named_places_only() {
    let found: BTreeSet<String> = uses("", &["read_dir("])
        .into_iter()
        .map(|l| l.split(':').next().unwrap().to_string())
        .collect();
    let named: BTreeSet<String> = [
        "golden/mod.rs",
        "topology/import/sysfs.rs",
        "live/collect.rs",
        "lab/fetch.rs",
        "lab/initramfs.rs",
        "kernel_c_tools/source.rs",
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
    ] {
        assert!(arch.contains(f), "ARCHITECTURE.md does not name {f}");
    }
}

/// Clocks are read where ARCHITECTURE.md says, and no other: `kernel`, `scenario`, `metrics`,
/// `render` and `analysis` never.
#[test]
fn clocks_are_read_in_the_named_places_only() {
    let found: BTreeSet<String> = uses("", &["Instant::now", "SystemTime::now", "UNIX_EPOCH"])
        .into_iter()
        .map(|l| l.split(':').next().unwrap().to_string())
        .collect();
    let named: BTreeSet<String> = [
        "bin/agent.rs",
        "kernel_c_cmd.rs",
        "kernel_c/runner.rs",
        "kernel_c_tools/build.rs",
        "lab/console.rs",
        "lab/run.rs",
        "live/hub.rs",
        "web/live/mod.rs",
        "web/server.rs",
        "web/work.rs",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let extra: Vec<_> = found.difference(&named).collect();
    assert!(extra.is_empty(), "a clock read outside the named places: {extra:?}");
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

/// `main.rs` parses arguments and dispatches: short, and it runs no model itself.
#[test]
fn main_rs_is_a_thin_command_line() {
    let main = std::fs::read_to_string(src().join("main.rs")).unwrap();
    let lines = main.lines().count();
    assert!(lines < 400, "main.rs has {lines} lines");
    for cmd in ["model_cmd.rs", "main.rs"] {
        let text = std::fs::read_to_string(src().join(cmd)).unwrap();
        let found: Vec<_> = code_lines(&text)
            .filter(|(_, l)| {
                [
                    "scen::run(",
                    "scenario::run(",
                    "metrics::compute",
                    "Scenario::new(",
                    "blk_mq_map_queues",
                ]
                .iter()
                .any(|n| l.contains(n))
            })
            .collect();
        assert!(
            found.is_empty(),
            "{cmd} runs a model itself instead of render::view: {found:?}"
        );
    }
}

/// Longest function body allowed in the top layers (`render`, `web`, the binary): a longer one
/// is a job for a helper. (The kernel ports follow the length of the kernel's own functions.)
const FN_LINES_MAX: usize = 80;

/// Every `fn` of `text` (its unit tests left out) longer than [`FN_LINES_MAX`] lines, as
/// "name: lines".
fn long_functions(text: &str) -> Vec<String> {
    let end = text.find("#[cfg(test)]").unwrap_or(text.len());
    let lines: Vec<&str> = text[..end].lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let l = lines[i].trim_start();
        let is_fn = [
            "fn ",
            "pub fn ",
            "pub(crate) fn ",
            "pub(super) fn ",
            "async fn ",
            "pub(crate) async fn ",
            "pub async fn ",
        ]
        .iter()
        .any(|p| l.starts_with(p));
        if !is_fn || l.ends_with(';') {
            i += 1;
            continue;
        }
        let (mut depth, mut started, mut j) = (0i32, false, i);
        while j < lines.len() {
            for c in lines[j].chars() {
                match c {
                    '{' => {
                        depth += 1;
                        started = true;
                    }
                    '}' => depth -= 1,
                    _ => {}
                }
            }
            if started && depth <= 0 {
                break;
            }
            j += 1;
        }
        if j + 1 - i > FN_LINES_MAX {
            let name = l
                .split("fn ")
                .nth(1)
                .unwrap_or("")
                .split(['(', '<'])
                .next()
                .unwrap_or("");
            out.push(format!("{name}: {} lines", j + 1 - i));
        }
        i = j + 1;
    }
    out
}

#[test]
fn top_layer_functions_stay_short() {
    let mut found = Vec::new();
    let mut texts = files(&src().join("render"));
    texts.extend(files(&src().join("web")));
    for f in [
        "main.rs",
        "model_cmd.rs",
        "serve_cmd.rs",
        "lab_cmd.rs",
        "topology_cmd.rs",
    ] {
        texts.push((f.to_string(), std::fs::read_to_string(src().join(f)).unwrap()));
    }
    for (path, text) in texts {
        found.extend(long_functions(&text).into_iter().map(|f| format!("{path}: {f}")));
    }
    assert!(
        found.is_empty(),
        "functions over {FN_LINES_MAX} lines:\n{}",
        found.join("\n")
    );
}
