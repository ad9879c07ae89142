//! Build-time inputs of the binary, all written to OUT_DIR:
//! - `presets.rs`: every `topologies/*.toml` preset embedded, so the dashboard and the CLI need
//!   no files at run time and a new preset needs no code change.
//! - `static_assets.rs`: every file of `static/` embedded with its gzip and brotli encodings,
//!   compressed once here at the best level and quality instead of on every request.
//! - `IRQSCOPE_MODEL_VERSION`: the crate version and a hash of everything that can change a
//!   rendered page (sources, templates, presets, static files). Permalink ETags carry it, so a
//!   strong validator never outlives the bytes it names.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};

fn main() {
    let root = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    let out = PathBuf::from(std::env::var("OUT_DIR").unwrap());
    presets(&root, &out);
    static_assets(&root, &out);
    model_version(&root);
}

fn sorted_files(dir: &Path, ext: Option<&str>) -> Vec<PathBuf> {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file() && ext.is_none_or(|ext| p.extension().is_some_and(|e| e == ext)))
        .collect();
    entries.sort();
    entries
}

fn presets(root: &Path, out: &Path) {
    let dir = root.join("topologies");
    println!("cargo:rerun-if-changed={}", dir.display());
    let mut text = String::from("pub(crate) static PRESET_FILES: &[(&str, &str)] = &[\n");
    for path in sorted_files(&dir, Some("toml")) {
        println!("cargo:rerun-if-changed={}", path.display());
        let stem = path.file_stem().unwrap().to_str().unwrap();
        writeln!(text, "    ({stem:?}, include_str!({:?})),", path.display().to_string()).unwrap();
    }
    text.push_str("];\n");
    std::fs::write(out.join("presets.rs"), text).unwrap();
}

/// 64-bit FNV-1a: a content tag, not a security boundary.
fn fnv1a(state: u64, bytes: &[u8]) -> u64 {
    bytes
        .iter()
        .fold(state, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3))
}
const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;

fn static_assets(root: &Path, out: &Path) {
    let dir = root.join("static");
    println!("cargo:rerun-if-changed={}", dir.display());
    let gz_dir = out.join("static-encoded");
    std::fs::create_dir_all(&gz_dir).unwrap();
    let mut text = String::from(
        "/// Every file under `static/`.\n\
         static STATIC_ASSETS: &[StaticAsset] = &[\n",
    );
    for path in sorted_files(&dir, None) {
        println!("cargo:rerun-if-changed={}", path.display());
        let name = path.file_name().unwrap().to_str().unwrap();
        let bytes = std::fs::read(&path).unwrap();
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        gz.write_all(&bytes).unwrap();
        let gz_path = gz_dir.join(format!("{name}.gz"));
        std::fs::write(&gz_path, gz.finish().unwrap()).unwrap();
        let br_path = gz_dir.join(format!("{name}.br"));
        std::fs::write(&br_path, brotli_best(&bytes)).unwrap();
        writeln!(
            text,
            "    StaticAsset {{ name: {name:?}, bytes: include_bytes!({:?}), gzip: include_bytes!({:?}), \
             brotli: include_bytes!({:?}), tag: {:#x} }},",
            path.display().to_string(),
            gz_path.display().to_string(),
            br_path.display().to_string(),
            fnv1a(FNV_OFFSET, &bytes)
        )
        .unwrap();
    }
    text.push_str("];\n");
    std::fs::write(out.join("static_assets.rs"), text).unwrap();
}

/// Brotli at quality 11 with the largest standard window (24 bits): build time, so the best.
fn brotli_best(bytes: &[u8]) -> Vec<u8> {
    let params = brotli::enc::BrotliEncoderParams {
        quality: 11,
        lgwin: 24,
        size_hint: bytes.len(),
        mode: brotli::enc::backward_references::BrotliEncoderMode::BROTLI_MODE_TEXT,
        ..Default::default()
    };
    let mut out = Vec::new();
    brotli::BrotliCompress(&mut &bytes[..], &mut out, &params).unwrap();
    out
}

fn hash_tree(dir: &Path, h: &mut u64) {
    let mut entries: Vec<_> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            hash_tree(&path, h);
        } else {
            *h = fnv1a(*h, path.strip_prefix(dir).unwrap().to_string_lossy().as_bytes());
            *h = fnv1a(*h, &std::fs::read(&path).unwrap());
        }
    }
}

fn model_version(root: &Path) {
    let mut h = FNV_OFFSET;
    for dir in ["src", "templates", "topologies", "static"] {
        let dir = root.join(dir);
        println!("cargo:rerun-if-changed={}", dir.display());
        hash_tree(&dir, &mut h);
    }
    let version = std::env::var("CARGO_PKG_VERSION").unwrap();
    println!("cargo:rustc-env=IRQSCOPE_MODEL_VERSION={version}+{h:016x}");
}
