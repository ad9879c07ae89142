//! Fuzz snapshot ingestion (the JSON an agent pushes, which also carries the sysfs topology as
//! cpulists): any body is accepted or refused with an error, never a panic, and a refused one
//! leaves the store unchanged.
#![no_main]

use irqscope::live::protocol::Snapshot;
use irqscope::live::store::{Arrival, LiveStore};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(snap) = serde_json::from_slice::<Snapshot>(data) else {
        return;
    };
    let mut store = LiveStore::new();
    let host = snap.host.clone();
    if store.ingest(&host, snap.clone(), Arrival::default()).is_ok() {
        let mut later = snap;
        later.taken_unix_ms = later.taken_unix_ms.saturating_add(1000);
        let at = Arrival {
            received_ms: 1000,
            unbound: None,
        };
        let _ = store.ingest(&host, later, at);
        assert!(store.host(&host).is_some());
    } else {
        assert!(store.is_empty());
    }
});
