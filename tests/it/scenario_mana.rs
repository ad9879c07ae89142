//! MANA devices inside a scenario: placed by `kernel::mana` on the vector load the devices
//! probed before it left, counted in the metrics like any non-managed device, and written
//! in the device grammar and the JSON spec without disturbing specs that have no MANA device.

use irqscope::catalogue;
use irqscope::kernel::mana::{self, DriverVersion, MsixMode};
use irqscope::metrics;
use irqscope::scenario::spec::{self, parse_device_token, DeviceSpec, ScenarioSpec, TopologyRef};
use irqscope::scenario::{self, Driver};

fn spec(preset: &str, tokens: &[&str]) -> ScenarioSpec {
    ScenarioSpec::new(
        TopologyRef::Preset(preset.into()),
        tokens.iter().map(|t| parse_device_token(t).unwrap()).collect(),
    )
}

fn resolve(s: &ScenarioSpec) -> Result<scenario::Scenario, String> {
    s.resolve(catalogue::get).map_err(|e| e.0)
}

#[test]
fn grammar_reads_and_writes_mana_devices() {
    let d = parse_device_token("4:driver=mana,patched=yes,msix=static,node=0,name=eth").unwrap();
    assert_eq!(d.driver.as_deref(), Some("mana"));
    assert!(d.patched && !d.managed);
    assert_eq!(d.msix.as_deref(), Some("static"));
    let s = spec(
        "azure-4vcpu-smt2",
        &[
            "4:driver=mana,patched=yes,msix=static,node=0,name=eth",
            "2x3:driver=mana",
        ],
    );
    let sc = resolve(&s).unwrap();
    assert_eq!(
        sc.devices()[0].driver,
        Driver::Mana {
            patched: true,
            mode: MsixMode::Static
        }
    );
    assert_eq!(sc.devices()[0].vectors, 5, "HWC + 4 queue vectors");
    assert_eq!(sc.devices()[1].name, "dev1");
    let tokens = spec::format_device_tokens(sc.devices());
    assert_eq!(
        tokens,
        [
            "4:name=eth,driver=mana,patched=yes,msix=static,node=0",
            "2x3:driver=mana"
        ]
    );
    let again: Vec<DeviceSpec> = tokens.iter().map(|t| parse_device_token(t).unwrap()).collect();
    assert_eq!(spec::expand_devices(&again).unwrap(), sc.devices());
    // JSON spec round trip through spec_of.
    let back = spec::spec_of(&sc, s.topology.clone());
    let json = serde_json::to_string(&back).unwrap();
    assert!(json.contains("\"driver\":\"mana\""), "{json}");
    assert_eq!(resolve(&serde_json::from_str(&json).unwrap()).unwrap(), sc);
}

#[test]
fn grammar_rejects_bad_mana_devices() {
    for bad in [
        "4:driver=mana,managed=yes",
        "4:driver=nic",
        "4:patched=yes",
        "4:msix=static",
        "4:driver=mana,msix=fast",
        "4:driver=mana,patched=maybe",
    ] {
        assert!(parse_device_token(bad).is_err(), "{bad:?}");
    }
    let cases = [
        ("0:driver=mana", "at least 1 queue vector"),
        ("4:driver=mana,pre=1", "pre, post and sets"),
        ("4:driver=mana,blkmq=irq", "no blk-mq map"),
        ("4:driver=mana,node=3", "node 3 does not exist"),
    ];
    for (token, why) in cases {
        let s = spec("azure-4vcpu-smt2", &[token]);
        let e = resolve(&s).unwrap_err();
        assert!(e.contains(why), "{token}: {e}");
    }
    let mut s = spec("azure-4vcpu-smt2", &["4:driver=mana"]);
    s.effective = "first-cpu".into();
    assert!(resolve(&s).unwrap_err().contains("x86-matrix"));
    // JSON: unknown driver names are errors, never a fallback.
    let json = r#"{"topology":"azure-4vcpu-smt2","devices":[{"queues":4,"driver":"mlx5"}]}"#;
    let s: ScenarioSpec = serde_json::from_str(json).unwrap();
    assert!(resolve(&s).unwrap_err().contains("unknown driver"));
}

#[test]
fn mana_starts_from_the_load_earlier_devices_left() {
    // Three non-managed vectors take CPUs 0, 1, 2 (most free vectors, ties to the lowest).
    let s = spec(
        "azure-4vcpu-smt2",
        &["3:managed=no,name=other", "4:driver=mana,name=eth"],
    );
    let sc = resolve(&s).unwrap();
    let out = scenario::run(&sc);
    let other: Vec<u32> = out.devices[0]
        .vectors
        .iter()
        .map(|v| v.effective_cpu.unwrap())
        .collect();
    assert_eq!(other, [0, 1, 2]);
    let topo = catalogue::get("azure-4vcpu-smt2").unwrap();
    let input = scenario::mana_input(&topo, None, MsixMode::Dynamic, 5, vec![1, 1, 1, 0]);
    let direct = mana::run(&input, DriverVersion::Unpatched).unwrap();
    let got = out.devices[1].mana.as_ref().unwrap();
    assert_eq!(got, &direct);
    let eff: Vec<u32> = out.devices[1]
        .vectors
        .iter()
        .map(|v| v.effective_cpu.unwrap())
        .collect();
    assert_eq!(eff, direct.effective_cpus);
    assert!(out.devices[1].vectors.iter().all(|v| !v.managed));
    assert_eq!(out.devices[1].vectors[1].mask.to_cpulist(), "0-1");
    // Counted like any other non-managed device.
    let m = metrics::compute(&sc, &out);
    assert_eq!(m.irqs_total, 3 + 5);
}

#[test]
fn two_mana_devices_probe_in_order() {
    let s = spec("azure-4vcpu-smt2", &["4:driver=mana", "4:driver=mana,patched=yes"]);
    let out = scenario::run(&resolve(&s).unwrap());
    let u = out.devices[0].mana.as_ref().unwrap();
    assert_eq!(u.effective_cpus, [0, 1, 2, 1, 2], "empty machine, spec A.8");
    // The patched device probes second, on the load the first MANA device holds (its
    // left-behind vectors released).
    let p = out.devices[1].mana.as_ref().unwrap();
    let pre: Vec<u32> = p.load_breakdown.iter().map(|b| b.pre_existing).collect();
    let held: Vec<u32> = u.load_breakdown.iter().map(|b| b.pre_existing + b.mana_held).collect();
    assert_eq!(pre, held);
    assert_eq!(p.effective_cpus[1..], [0, 1, 2, 3]);
}

#[test]
fn devices_after_mana_see_its_vectors() {
    // MANA on an empty 4-vCPU machine fires on 0,1,2,1,2, so CPU 3 holds no vector
    // afterwards and a later non-managed vector goes there.
    let s = spec("azure-4vcpu-smt2", &["4:driver=mana", "1:managed=no,name=late"]);
    let out = scenario::run(&resolve(&s).unwrap());
    let u = out.devices[0].mana.as_ref().unwrap();
    let held: Vec<u32> = u.load_breakdown.iter().map(|b| b.pre_existing + b.mana_held).collect();
    let least = (0..4).min_by_key(|&c| (held[c], c)).unwrap() as u32;
    assert_eq!(out.devices[1].vectors[0].effective_cpu, Some(least));
    assert_eq!(least, 3);
}

#[test]
fn specs_without_mana_encode_as_before() {
    let s = spec("azure-l96as-v4", &["6x62:pre=1,name=nvme", "4:managed=no"]);
    let json = serde_json::to_string(&s).unwrap();
    for key in ["driver", "patched", "msix"] {
        assert!(!json.contains(key), "{key} written for a generic device: {json}");
    }
}

#[test]
fn mana_runs_on_every_preset_and_fires_on_online_cpus() {
    for name in catalogue::names() {
        let topo = catalogue::get(name).unwrap();
        let s = spec(
            name,
            &[
                "8:managed=no,name=pre",
                "8:driver=mana,name=a",
                "64:driver=mana,patched=yes,msix=static,name=b",
            ],
        );
        let sc = match resolve(&s) {
            Ok(sc) => sc,
            Err(e) => {
                assert!(e.contains("at most"), "{name}: {e}");
                continue;
            }
        };
        let out = scenario::run(&sc);
        for d in &out.devices[1..] {
            let o = d
                .mana
                .as_ref()
                .unwrap_or_else(|| panic!("{name}: {} has no MANA outcome", d.name));
            assert_eq!(d.vectors.len() as u32, o.num_msix_usable, "{name}");
            for v in &d.vectors {
                let cpu = v.effective_cpu.unwrap();
                assert!(
                    topo.online().contains(cpu),
                    "{name}: {} fires on offline CPU {cpu}",
                    d.name
                );
                assert!(v.mask.contains(cpu), "{name}: effective CPU outside the mask");
            }
        }
        let m = metrics::compute(&sc, &out);
        let total: usize = out.devices.iter().map(|d| d.vectors.len()).sum();
        assert_eq!(m.irqs_total as usize, total, "{name}");
    }
}
