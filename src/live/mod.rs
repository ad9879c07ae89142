//! Live mode: what `irqscope-agent` reads on a host and what the server keeps of it.
//!
//! * [`parse`]: pure `&str -> T` parsers for `/proc/interrupts` and `/proc/irq/N/*` (the sysfs
//!   topology reuses `topology::import::sysfs`).
//! * [`protocol`]: the versioned wire types, the only format agent and server share.
//! * [`collect`]: read a host's files under a root directory (the one place here that touches
//!   files, like `sysfs::read_tree`) and build a [`protocol::Snapshot`] from them without I/O.
//! * [`store`]: the bounded per-host store: latest snapshot, rates, a ring of history.
//! * [`persist`]: the store on disk (redb), so a restart loses no history.
//! * [`devices`]: group a snapshot's IRQs into devices by their names (the comparison with
//!   the model is `analysis::live_vs_model`).
//! * [`imports`]: imported captures kept under content ids, so an import has a link; what an
//!   imported text is (capture, snapshot or bare `/proc/interrupts`).
//! * [`auth`]: bearer tokens, compared in constant time, optionally bound to one host.
//! * [`hub`]: store + imports + persistence + tokens + SSE broadcast + ingestion policy, the
//!   one object the web layer calls.
//!
//! A leaf: nothing here runs the model or knows routing and templates (the hub is handed the
//! function that renders an SSE event).

pub mod auth;
pub mod collect;
pub mod devices;
pub mod export;
pub mod hub;
pub mod imports;
pub mod parse;
pub mod persist;
pub mod prometheus;
pub mod protocol;
pub mod source;
pub mod store;

/// Named limits of the live path (STYLE habit 12). Every size a host or a pasted file can
/// choose is bounded by one of these.
pub mod limits {
    /// Largest snapshot body accepted by `POST /api/live/{host}/snapshots` and the import form.
    pub const SNAPSHOT_BYTES_MAX: usize = 16 << 20;
    /// Most hosts the server keeps.
    pub(crate) const HOSTS_MAX: usize = 256;
    /// Most IRQ rows in one snapshot.
    pub(crate) const IRQS_MAX: usize = 16_384;
    /// History samples kept per host (one hour at 1 Hz).
    pub(crate) const HISTORY_LEN_MAX: usize = 3_600;
    /// Shortest push interval: the agent will not go faster; the server answers 429 to pushes
    /// for one host that come faster by its own clock (see `store`).
    pub const AGENT_INTERVAL_MS_MIN: u64 = 100;
    /// How early against its host's schedule (one push per [`AGENT_INTERVAL_MS_MIN`], by the
    /// server's clock) a push is still accepted: a late push followed by an early one, each up
    /// to 25 ms off (reading time, network, scheduling), passes.
    pub const PUSH_EARLY_MS_MAX: u64 = 50;
    /// Longest host name.
    pub(crate) const HOST_NAME_BYTES_MAX: usize = 64;
    /// Longest device name made from IRQ names (the scenario's device-name limit; the analysis
    /// module checks at compile time that the two agree).
    pub(crate) const DEVICE_NAME_BYTES_MAX: usize = 64;
    /// Most snapshots in one capture file.
    pub const CAPTURE_SNAPSHOTS_MAX: usize = 64;
    /// Most hosts one unbound token may hold at once (less when many unbound tokens are
    /// configured: together they never fill [`HOSTS_MAX`], see `store::LiveStore`); a token
    /// bound to a host names its one host.
    pub const UNBOUND_TOKEN_HOSTS_MAX: usize = 64;
    /// A host that has not pushed for this long (by the server's clock) is dropped, unless
    /// `serve --live-host-idle` says otherwise; restored hosts count from the start.
    pub const HOST_IDLE_MS_DEFAULT: u64 = 24 * 60 * 60 * 1000;
    /// Most tokens configured.
    pub(crate) const TOKENS_MAX: usize = 1_024;
    /// Shortest token accepted in a token file (weak tokens are refused at startup).
    pub(crate) const TOKEN_BYTES_MIN: usize = 16;
    /// Longest token accepted.
    pub(crate) const TOKEN_BYTES_MAX: usize = 256;
}
