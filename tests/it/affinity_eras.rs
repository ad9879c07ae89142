//! The two eras of `irq_create_affinity_masks()` against the kernel's own C: every vector in
//! `tests/data/affinity-eras/` was written by Debian's kernel/irq/affinity.c, lib/group_cpus.c
//! and lib/sort.c (6.12: `numgrps`; 7.2: `nummasks`) built in user space (`gen.sh` there). Each
//! case compares every descriptor's mask and managed flag, the NULL answer and the kernel's
//! WARNs; then the scenario built from the same request says the allocation fails exactly where
//! the C left a managed mask empty (`alloc_descs()`, -EINVAL).

use irqscope::kernel::irq_affinity::{irq_create_affinity_masks, AffinityEra, AffinityRequest};
use irqscope::kernel::{KernelWarn, SortGen, Variant};
use irqscope::scenario::spec::{DeviceSpec, ScenarioSpec, TopologyRef};
use irqscope::scenario::{self, AllocFailure};
use serde_json::Value;
use std::path::PathBuf;

fn cases() -> Vec<(String, Value)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/affinity-eras");
    let mut out: Vec<(String, Value)> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .map(|p| {
            let v: Value = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
            (p.file_name().unwrap().to_string_lossy().into_owned(), v)
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

fn u(v: &Value) -> u32 {
    v.as_u64().unwrap() as u32
}

#[test]
fn both_eras_match_the_kernel_c_field_for_field() {
    let cases = cases();
    assert_eq!(cases.len(), 28, "14 requests x 2 eras");
    let mut empty_seen = [0, 0];
    for (file, case) in &cases {
        let input = &case["input"];
        let expected = &case["expected"];
        let topo = irqscope::catalogue::get(input["topology"].as_str().unwrap()).unwrap();
        let era = AffinityEra::from_name(input["era"].as_str().unwrap()).unwrap();
        let variant = Variant::from_name(input["variant"].as_str().unwrap()).unwrap();
        let sort = SortGen::from_name(input["sort"].as_str().unwrap()).unwrap();
        let sets: Option<Vec<u32>> = input["sets"].as_array().map(|s| s.iter().map(u).collect());
        let req = AffinityRequest {
            nvecs: u(&input["nvecs"]),
            pre_vectors: u(&input["pre_vectors"]),
            post_vectors: u(&input["post_vectors"]),
            sets: sets.clone(),
        };
        let (mut counter, mut warnings) = (0, Vec::new());
        // The vectors were made without irqaffinity=: irq_default_affinity is every CPU.
        let default = irqscope::topology::CpuSet::full(topo.nr_cpu_ids());
        let got = irq_create_affinity_masks(&topo, &req, variant, sort, era, &default, &mut counter, &mut warnings);
        assert_eq!(got.is_none(), expected["null"].as_bool().unwrap(), "{file}: NULL");
        let want = expected["descs"].as_array().unwrap();
        let descs = got.map(|m| m.descs).unwrap_or_default();
        assert_eq!(descs.len(), want.len(), "{file}: descriptors");
        for (i, (d, w)) in descs.iter().zip(want).enumerate() {
            assert_eq!(
                d.mask.to_cpulist(),
                w["mask"].as_str().unwrap(),
                "{file}: vector {i} mask"
            );
            assert_eq!(
                d.is_managed,
                w["is_managed"].as_bool().unwrap(),
                "{file}: vector {i} managed"
            );
        }
        // 6.12's group_cpus_evenly() WARNs when fewer groups than asked got CPUs; 7.2 reports
        // nummasks instead (the model names the condition either way).
        let warns = warnings
            .iter()
            .filter(|w| era == AffinityEra::NumGrps || !matches!(w, KernelWarn::GroupsUnfilled { .. }))
            .count() as u64;
        assert_eq!(
            warns,
            expected["warnings"].as_u64().unwrap(),
            "{file}: WARNs {warnings:?}"
        );

        // The same request as a device: the allocation fails at the first empty mask.
        let first_empty = want.iter().position(|w| w["mask"] == "").map(|i| i as u32);
        empty_seen[era as usize] += usize::from(first_empty.is_some());
        let (pre, post) = (req.pre_vectors, req.post_vectors);
        let spec = ScenarioSpec {
            variant: variant.name().into(),
            sort: sort.name().into(),
            affinity: Some(era.name().into()),
            ..ScenarioSpec::new(
                TopologyRef::Preset(input["topology"].as_str().unwrap().into()),
                vec![DeviceSpec {
                    pre,
                    post,
                    sets,
                    ..DeviceSpec::new(1, req.nvecs - pre - post)
                }],
            )
        };
        let s = spec.resolve(irqscope::catalogue::get).unwrap();
        let o = scenario::run(&s);
        assert_eq!(
            o.devices[0].alloc_failed,
            first_empty.map(|vector| AllocFailure::EmptyMask { vector }),
            "{file}: allocation"
        );
    }
    // The numgrps era leaves masks empty in several cases; nummasks never does.
    assert!(empty_seen[AffinityEra::NumGrps as usize] >= 6, "{empty_seen:?}");
    assert_eq!(empty_seen[AffinityEra::NumMasks as usize], 0);
}
