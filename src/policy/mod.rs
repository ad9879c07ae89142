//! Placements that are not the kernel's: the ideal bound any algorithm is measured against,
//! and proposals to compare with the kernel variants. Nothing here changes a `kernel` model.

pub mod ideal;
