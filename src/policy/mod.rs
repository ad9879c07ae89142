//! Placements that are not the kernel's: the ideal bound any algorithm is measured against,
//! and proposals to compare with the kernel variants. Nothing here changes a `kernel` model.
//!
//! A proposal is named like a kernel variant and is frozen the same way once named, so a
//! permalink that names one reproduces; it is never a `kernel::Variant`.

pub(crate) mod ideal;
pub(crate) mod offset_by_probed;

/// The named proposals. A proposal's behaviour never changes once named.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Proposal {
    OffsetByProbed,
}

impl Proposal {
    pub(crate) const ALL: [Proposal; 1] = [Proposal::OffsetByProbed];

    pub(crate) fn name(self) -> &'static str {
        match self {
            Proposal::OffsetByProbed => "offset-by-probed",
        }
    }

    pub(crate) fn from_name(name: &str) -> Option<Proposal> {
        Proposal::ALL.into_iter().find(|p| p.name() == name)
    }

    /// One line saying what the proposal does.
    pub(crate) fn describe(self) -> &'static str {
        match self {
            Proposal::OffsetByProbed => {
                "PROPOSAL, not kernel code: node-local groups whose single-CPU slots go to the \
                 CPUs least loaded by the devices already probed"
            }
        }
    }

    /// What the proposal needs to know that the kernel's `group_cpus_evenly` does not.
    pub(crate) fn cost(self) -> &'static str {
        match self {
            Proposal::OffsetByProbed => {
                "needs, at each probe, how many managed IRQs (and single-CPU ones) each CPU \
                 already carries from the devices probed before (the vector matrix's \
                 per-CPU state); group_cpus_evenly knows only the topology and the group count"
            }
        }
    }
}
