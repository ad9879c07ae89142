//! What the fuzz targets (`fuzz/`) rely on, pinned as ordinary tests: the sysfs export that every
//! importer target re-imports writes each mask as the same set as its list, and the hwloc XML
//! importer names the right line however large the file (it finds lines from one index of the
//! newlines; asking the XML parser per node made large files quadratic). The two importer crash
//! inputs fuzzing found are kept in `import_errors.rs` (`tests/data/import-asymmetric-*.toml`);
//! the `live_interrupts` one in `tests/data/fuzz/`, below.

use irqscope::catalogue;
use irqscope::topology::import::{export, hwloc};
use irqscope::topology::{format_hex_mask, parse_cpulist, CPUS_MAX};

#[test]
fn sysfs_export_masks_name_the_same_sets_as_the_lists() {
    for (name, loaded) in catalogue::all() {
        let t = loaded.as_ref().unwrap_or_else(|e| panic!("preset {name}: {e}"));
        if t.possible().weight() > 1024 {
            continue; // the 8192-CPU presets' masks are ~100 MB; 1024 covers multi-word masks
        }
        let files = export::sysfs_files(t);
        let mut masks = 0;
        for (path, list) in files.iter().filter(|(p, _)| p.ends_with("_list")) {
            let mask_path = path.trim_end_matches("_list");
            let Some(mask) = files.get(mask_path) else { continue };
            let set = parse_cpulist(list.trim_end(), CPUS_MAX).unwrap_or_else(|e| panic!("{name} {path}: {e}"));
            assert_eq!(
                mask.trim_end(),
                format_hex_mask(&set, t.nr_cpu_ids()),
                "{name}: {mask_path} is not {path}"
            );
            masks += 1;
        }
        // Six masks per CPU: thread_siblings, core_cpus, cluster_cpus, package_cpus,
        // core_siblings, die_cpus.
        assert_eq!(masks, 6 * t.possible().weight() as usize, "{name}");
    }
}

#[test]
fn hwloc_xml_errors_name_the_line_in_a_large_file() {
    const PUS: usize = 4000;
    let mut xml = String::from("<topology>\n<object type=\"Machine\" os_index=\"0\">\n");
    for cpu in 0..PUS {
        xml.push_str(&format!("<object type=\"PU\" os_index=\"{cpu}\"/>\n"));
    }
    // Line 2 + PUS + 1: PU 17 again.
    xml.push_str("<object type=\"PU\" os_index=\"17\"/>\n</object>\n</topology>\n");
    let err = hwloc::parse_xml(&xml).unwrap_err().to_string();
    let want = format!("line {}", PUS + 3);
    assert!(err.contains(&want) && err.contains("appears twice"), "{err}");
    // The same file without the repeat imports every PU.
    let good = xml.replace("<object type=\"PU\" os_index=\"17\"/>\n</object>", "</object>");
    let spec = hwloc::parse_xml(&good).unwrap();
    let t = irqscope::topology::Topology::new(&spec).unwrap();
    assert_eq!(t.possible().weight() as usize, PUS);
}

/// The `live_interrupts` crash (`tests/data/fuzz/live_interrupts-block-of-spaces`): a row whose
/// counters start after a run of 64 spaces. It parses the same whole, read in pieces of any
/// size, and as text; in a build with overflow checks (the debug test build, the fuzz build)
/// it panicked before.
#[test]
fn live_interrupts_block_of_spaces() {
    use irqscope::live::parse::{
        parse_interrupts, parse_interrupts_bytes_into, parse_interrupts_read_into, Interrupts,
    };
    let data = std::fs::read(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/fuzz/live_interrupts-block-of-spaces"),
    )
    .unwrap();
    let mut whole = Interrupts::default();
    let whole_result = parse_interrupts_bytes_into(&data, &mut whole).map_err(|e| e.to_string());
    for chunk in [1, 7, 64, 65, 4096, data.len() + 1] {
        let (mut buf, mut out) = (Vec::new(), Interrupts::default());
        let r = parse_interrupts_read_into(&data[..], chunk, 64 << 20, &mut buf, &mut out).map_err(|e| e.to_string());
        assert_eq!(r, whole_result, "chunk {chunk}");
        if r.is_ok() {
            assert_eq!(out, whole, "chunk {chunk}");
        }
    }
    if let Ok(text) = std::str::from_utf8(&data) {
        assert_eq!(
            parse_interrupts(text).map_err(|e| e.to_string()),
            whole_result.clone().map(|()| whole.clone())
        );
    }
}
