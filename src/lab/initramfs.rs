//! The guest's initramfs: a gzip'd `newc` cpio archive holding busybox, the init script, the
//! agent (with the shared libraries it needs) and the kernel modules in load order.
//!
//! Module order follows each module's `depends=` field of `.modinfo` (what `modinfo -F
//! depends` prints), dependencies first, plus the `pre:` soft dependencies the CRC libraries
//! look up by name at init (6.1's nvme needs nvme-core, t10-pi, crc-t10dif, crc64-rocksoft and
//! their generic implementations).

use flate2::write::GzEncoder;
use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Most modules the initramfs loads (the nvme stack needs about eight).
pub(crate) const MODULES_MAX: usize = 64;
/// Largest file put into the initramfs.
pub(crate) const FILE_BYTES_MAX: u64 = 256 << 20;

/// One archive member.
#[derive(Debug, Clone)]
pub(crate) enum Entry {
    Dir(String),
    File { path: String, mode: u32, data: Vec<u8> },
    Symlink { path: String, target: String },
}

/// The gzip'd newc archive of the entries, in order (directories before their contents).
pub(crate) fn cpio_gz(entries: &[Entry]) -> std::io::Result<Vec<u8>> {
    let mut out = GzEncoder::new(Vec::new(), flate2::Compression::fast());
    let mut ino = 1u32;
    let mut member = |out: &mut GzEncoder<Vec<u8>>, name: &str, mode: u32, data: &[u8]| -> std::io::Result<()> {
        let nlink = if mode & 0o170000 == 0o040000 { 2 } else { 1 };
        let header = format!(
            "070701{ino:08x}{mode:08x}{:08x}{:08x}{nlink:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}",
            0,
            0,
            0,
            data.len(),
            0,
            0,
            0,
            0,
            name.len() + 1,
            0
        );
        ino += 1;
        out.write_all(header.as_bytes())?;
        out.write_all(name.as_bytes())?;
        out.write_all(&[0])?;
        pad(out, 110 + name.len() + 1)?;
        out.write_all(data)?;
        pad(out, data.len())
    };
    for e in entries {
        match e {
            Entry::Dir(p) => member(&mut out, p, 0o040755, &[])?,
            Entry::File { path, mode, data } => member(&mut out, path, 0o100000 | mode, data)?,
            Entry::Symlink { path, target } => member(&mut out, path, 0o120777, target.as_bytes())?,
        }
    }
    member(&mut out, "TRAILER!!!", 0, &[])?;
    out.finish()
}

fn pad(out: &mut impl Write, len: usize) -> std::io::Result<()> {
    let n = (4 - len % 4) % 4;
    out.write_all(&[0u8; 3][..n])
}

/// The `.modinfo` values of a key in a module file (`depends`, `softdep`, ...).
pub(crate) fn modinfo(ko: &[u8], key: &str) -> Vec<String> {
    let prefix = format!("{key}=");
    ko.split(|&b| b == 0)
        .filter_map(|s| std::str::from_utf8(s).ok())
        .filter_map(|s| s.strip_prefix(prefix.as_str()))
        .map(str::to_string)
        .collect()
}

/// Index of a module tree: module name (dashes as underscores) → path of its `.ko` (possibly
/// compressed: `.ko.xz`, `.ko.zst`, `.ko.gz`).
pub(crate) fn index_modules(moddir: &Path) -> std::io::Result<std::collections::BTreeMap<String, PathBuf>> {
    let mut map = std::collections::BTreeMap::new();
    let mut stack = vec![moddir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir)? {
            let entry = entry?;
            let path = entry.path();
            if entry.file_type()?.is_dir() {
                stack.push(path);
            } else if let Some(name) = path.file_name().and_then(|n| n.to_str()) {
                if let Some(stem) = [".ko", ".ko.xz", ".ko.zst", ".ko.gz"]
                    .iter()
                    .find_map(|suffix| name.strip_suffix(suffix))
                {
                    map.entry(stem.replace('-', "_")).or_insert(path);
                }
            }
        }
    }
    Ok(map)
}

/// Names, dependencies first, of the modules to load for `wanted`; `read` gives a module's bytes.
pub(crate) fn module_order(
    wanted: &[String],
    index: &std::collections::BTreeMap<String, PathBuf>,
    read: &mut dyn FnMut(&Path) -> std::io::Result<Vec<u8>>,
) -> Result<Vec<PathBuf>, String> {
    fn visit(
        name: &str,
        required: bool,
        index: &std::collections::BTreeMap<String, PathBuf>,
        read: &mut dyn FnMut(&Path) -> std::io::Result<Vec<u8>>,
        seen: &mut BTreeSet<String>,
        out: &mut Vec<PathBuf>,
    ) -> Result<(), String> {
        let key = name.replace('-', "_");
        if seen.contains(&key) {
            return Ok(());
        }
        let Some(path) = index.get(&key) else {
            return if required {
                Err(format!("module {name} not found in the module tree"))
            } else {
                Ok(())
            };
        };
        seen.insert(key);
        let bytes = read(path).map_err(|e| format!("{}: {e}", path.display()))?;
        for deps in modinfo(&bytes, "depends") {
            for d in deps.split(',').filter(|d| !d.is_empty()) {
                visit(d, true, index, read, seen, out)?;
            }
        }
        // `softdep=pre: crct10dif` names an algorithm; its generic implementation is a module.
        for soft in modinfo(&bytes, "softdep") {
            let pre = soft.split("post:").next().unwrap_or("");
            for d in pre.trim_start_matches("pre:").split_whitespace() {
                visit(d, false, index, read, seen, out)?;
                visit(&format!("{d}_generic"), false, index, read, seen, out)?;
            }
        }
        out.push(path.clone());
        if out.len() > MODULES_MAX {
            return Err(format!("more than {MODULES_MAX} modules to load"));
        }
        Ok(())
    }
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for w in wanted {
        visit(w, true, index, read, &mut seen, &mut out)?;
    }
    // The CRC libraries of 6.1 look their algorithms up by name when they load.
    for (lib, generic) in [
        ("crc_t10dif", "crct10dif_generic"),
        ("crc64_rocksoft", "crc64_rocksoft_generic"),
    ] {
        if seen.contains(lib) && !seen.contains(generic) {
            if let Some(pos) = out.iter().position(|p| module_name(p).as_deref() == Some(lib)) {
                let mut extra = Vec::new();
                visit(generic, false, index, read, &mut seen, &mut extra)?;
                for (i, p) in extra.into_iter().enumerate() {
                    out.insert(pos + i, p);
                }
            }
        }
    }
    Ok(out)
}

/// The module name of a `.ko` path, dashes as underscores.
pub(crate) fn module_name(path: &Path) -> Option<String> {
    let name = path.file_name()?.to_str()?;
    let stem = name.split(".ko").next()?;
    Some(stem.replace('-', "_"))
}

/// Shared libraries a dynamically linked binary needs, from `ldd`'s output (absolute paths).
pub(crate) fn ldd_paths(ldd_output: &str) -> Vec<String> {
    ldd_output
        .split_whitespace()
        .filter(|w| w.starts_with('/'))
        .map(str::to_string)
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect()
}

/// Every parent directory of the paths, shortest first (as the archive needs them).
pub(crate) fn parent_dirs<'a>(paths: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let mut dirs = BTreeSet::new();
    for p in paths {
        let mut cur = Path::new(p.trim_start_matches('/'));
        while let Some(parent) = cur.parent() {
            if parent.as_os_str().is_empty() {
                break;
            }
            dirs.insert(parent.to_string_lossy().into_owned());
            cur = parent;
        }
    }
    let mut v: Vec<String> = dirs.into_iter().collect();
    v.sort_by_key(|d| (d.matches('/').count(), d.clone()));
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn newc_header_and_alignment() {
        let gz = cpio_gz(&[Entry::File {
            path: "init".into(),
            mode: 0o755,
            data: b"abc".to_vec(),
        }])
        .unwrap();
        let mut raw = Vec::new();
        std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&gz[..]), &mut raw).unwrap();
        assert!(raw.starts_with(b"070701"));
        assert_eq!(&raw[110..115], b"init\0");
        // 110 + 5 = 115 → padded to 116, then the 3 data bytes padded to 4.
        assert_eq!(&raw[116..119], b"abc");
        assert_eq!(&raw[120..126], b"070701");
        assert_eq!(raw.len() % 4, 0);
        assert!(raw.windows(10).any(|w| w == b"TRAILER!!!"));
    }

    #[test]
    fn dependencies_come_first_and_softdeps_resolve() {
        let files: std::collections::BTreeMap<&str, &[u8]> = [
            ("nvme", &b"x\0depends=nvme-core\0"[..]),
            ("nvme_core", b"depends=t10-pi\0"),
            ("t10_pi", b"depends=crc-t10dif\0"),
            ("crc_t10dif", b"depends=\0softdep=pre: crct10dif\0"),
            ("crct10dif_generic", b"depends=\0"),
        ]
        .into_iter()
        .collect();
        let index = files
            .keys()
            .map(|k| (k.to_string(), PathBuf::from(format!("/m/{k}.ko"))))
            .collect();
        let mut read = |p: &Path| Ok(files[p.file_stem().unwrap().to_str().unwrap()].to_vec());
        let order = module_order(&["nvme".into()], &index, &mut read).unwrap();
        let names: Vec<_> = order.iter().map(|p| p.file_stem().unwrap().to_str().unwrap()).collect();
        assert_eq!(
            names,
            ["crct10dif_generic", "crc_t10dif", "t10_pi", "nvme_core", "nvme"]
        );
        let missing = module_order(&["nvme-tcp".into()], &index, &mut read).unwrap_err();
        assert!(missing.contains("nvme-tcp"), "{missing}");
    }

    #[test]
    fn ldd_output_gives_library_paths() {
        let out = "\tlinux-vdso.so.1 (0x00007ffc)\n\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x7f)\n\t/lib64/ld-linux-x86-64.so.2 (0x7f)\n";
        assert_eq!(
            ldd_paths(out),
            ["/lib/x86_64-linux-gnu/libc.so.6", "/lib64/ld-linux-x86-64.so.2"]
        );
        assert_eq!(
            parent_dirs(["/lib/x86_64-linux-gnu/libc.so.6"]),
            ["lib", "lib/x86_64-linux-gnu"]
        );
    }
}
