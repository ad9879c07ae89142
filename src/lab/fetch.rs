//! Kernels from Debian packages (`apt-get download`, `dpkg-deb -x`, cached under the work
//! directory), and what a kernel holds: its image, its module tree, its config and
//! `modules.builtin`, from which [`nvme_in_kernel`] tells before any boot whether the guest will
//! have an NVMe driver.
//!
//! Since 7.x Debian splits a kernel: `linux-binary(-unsigned)-VERSION` holds the image,
//! `linux-base-VERSION` the config and `modules.builtin`, `linux-modules-VERSION` the modules.
//! Naming the image package fetches its base package too; the modules package is named with
//! `--modules-package`. arm64 kernels come through multiarch (`NAME:arm64`).

use super::run::LabError;
use crate::topology::Arch;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

fn input(msg: impl Into<String>) -> LabError {
    LabError::Input(msg.into())
}

fn run_tool(cmd: &mut Command, what: &str) -> Result<String, LabError> {
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .map_err(|e| input(format!("{what}: {e} (is it installed?)")))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let line = err.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("failed");
        return Err(input(format!("{what}: {line}")));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// A Debian package name as apt accepts it (no options, no paths).
fn valid_package_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 128
        && name.as_bytes()[0].is_ascii_alphanumeric()
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"+-.~:".contains(&b))
}

/// Does `name` match `pattern`, where each `*` stands for a version number (a digit, then digits
/// and dots)? On a match, the version numbers the stars took, in order.
fn match_version_pattern(pattern: &str, name: &str) -> Option<Vec<String>> {
    fn go(pattern: &[u8], name: &[u8], taken: &mut Vec<String>) -> bool {
        let Some(star) = pattern.iter().position(|&b| b == b'*') else {
            return pattern == name;
        };
        let (literal, rest) = (&pattern[..star], &pattern[star + 1..]);
        let Some(tail) = name.strip_prefix(literal) else {
            return false;
        };
        if !tail.first().is_some_and(u8::is_ascii_digit) {
            return false;
        }
        let run = tail
            .iter()
            .position(|b| !(b.is_ascii_digit() || *b == b'.'))
            .unwrap_or(tail.len());
        // Longest version first; a shorter one when the rest of the pattern needs its digits.
        for len in (1..=run).rev() {
            taken.push(String::from_utf8_lossy(&tail[..len]).into_owned());
            if go(rest, &tail[len..], taken) {
                return true;
            }
            taken.pop();
        }
        false
    }
    let mut taken = Vec::new();
    go(pattern.as_bytes(), name.as_bytes(), &mut taken).then_some(taken)
}

/// A version number as numbers, for ordering (`6.12.117` after `6.12.99`).
fn version_key(version: &str) -> Vec<u64> {
    version.split('.').map(|p| p.parse().unwrap_or(0)).collect()
}

/// The package a name stands for: itself, or for a pattern (`linux-image-6.1.0-*-amd64`, each
/// `*` a version number) the newest match the apt index has (`apt-cache search`, with the given
/// apt options). Debian replaces kernel ABIs every few weeks, so a pinned name stops
/// downloading; a pattern keeps working.
pub(crate) fn resolve_package(pattern: &str, apt_options: &[String]) -> Result<String, LabError> {
    if !pattern.contains('*') {
        return Ok(pattern.to_string());
    }
    if !valid_package_name(&pattern.replace('*', "0")) {
        return Err(input(format!(
            "{pattern:?} is not a package pattern (a package name where each * stands for a version number)"
        )));
    }
    // apt's search takes a POSIX extended regular expression over package names.
    let mut regex = String::from("^");
    for c in pattern.chars() {
        match c {
            '*' => regex.push_str("[0-9][0-9.]*"),
            '.' | '+' => {
                regex.push('\\');
                regex.push(c);
            }
            c => regex.push(c),
        }
    }
    regex.push('$');
    let mut apt = Command::new("apt-cache");
    for o in apt_options {
        apt.arg("-o").arg(o);
    }
    apt.args(["search", "--names-only", &regex]);
    let listed = run_tool(&mut apt, &format!("apt-cache search {pattern}"))?;
    let newest = listed
        .lines()
        .filter_map(|l| l.split(' ').next())
        .filter_map(|name| {
            match_version_pattern(pattern, name).map(|v| (v.iter().map(|s| version_key(s)).collect::<Vec<_>>(), name))
        })
        .max();
    match newest {
        Some((_, name)) => Ok(name.to_string()),
        None => Err(input(format!(
            "no package in the apt index matches {pattern} (run apt-get update{})",
            if apt_options.is_empty() {
                ""
            } else {
                " with the same --apt-option values"
            }
        ))),
    }
}

/// Where and how Debian packages are fetched: the work directory they are cached in, the
/// architecture (`arm64`: a foreign one, through multiarch), apt's `-o` options.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Packages<'a> {
    pub(crate) work_dir: &'a Path,
    pub(crate) arch: Option<&'a str>,
    pub(crate) apt_options: &'a [String],
}

impl Packages<'_> {
    /// Download and unpack a package (cached under `work_dir/kernels/NAME`); the root it was
    /// unpacked into.
    pub(crate) fn fetch(&self, name: &str, progress: &mut dyn FnMut(&str)) -> Result<PathBuf, LabError> {
        if !valid_package_name(name) {
            return Err(input(format!(
                "{name:?} is neither a kernel image file nor a package name"
            )));
        }
        let apt_name = match self.arch {
            Some(a) if !name.contains(':') => format!("{name}:{a}"),
            _ => name.to_string(),
        };
        let dir = self.work_dir.join("kernels").join(apt_name.replace(':', "_"));
        let root = dir.join("root");
        if !root.is_dir() {
            std::fs::create_dir_all(&dir).map_err(|e| input(format!("{}: {e}", dir.display())))?;
            progress(&format!("downloading {apt_name}"));
            let mut apt = Command::new("apt-get");
            apt.current_dir(&dir).arg("-q");
            for o in self.apt_options {
                apt.arg("-o").arg(o);
            }
            apt.arg("download").arg(&apt_name);
            run_tool(&mut apt, &format!("apt-get download {apt_name}")).map_err(|e| match (self.arch, e) {
                (Some(a), LabError::Input(m)) => input(format!(
                    "{m} ({a} packages need `dpkg --add-architecture {a}` and `apt-get update`)"
                )),
                (_, e) => e,
            })?;
            let deb = std::fs::read_dir(&dir)
                .map_err(|e| input(format!("{}: {e}", dir.display())))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .find(|p| p.extension().is_some_and(|x| x == "deb"))
                .ok_or_else(|| input(format!("apt-get download {apt_name} wrote no .deb")))?;
            let tmp = dir.join("root.tmp");
            let _ = std::fs::remove_dir_all(&tmp);
            run_tool(
                Command::new("dpkg-deb").arg("-x").arg(&deb).arg(&tmp),
                &format!("dpkg-deb -x {}", deb.display()),
            )?;
            std::fs::rename(&tmp, &root).map_err(|e| input(format!("{}: {e}", root.display())))?;
            let _ = std::fs::remove_file(&deb);
        }
        Ok(root)
    }

    /// The files of a kernel package (and, for a split 7.x kernel, its base package with the
    /// config and `modules.builtin`; `modules_package` adds a module tree).
    pub(crate) fn kernel(
        &self,
        name: &str,
        modules_package: Option<&str>,
        progress: &mut dyn FnMut(&str),
    ) -> Result<KernelFiles, LabError> {
        let root = self.fetch(name, progress)?;
        let (image, mut modules) = find_kernel(&root).ok_or_else(|| {
            input(format!(
                "{name} holds no kernel image (since 7.x Debian splits a kernel: the image is in \
                 linux-binary-unsigned-VERSION, usr/lib/modules/VERSION/vmlinuz.unsigned)"
            ))
        })?;
        let mut roots = vec![root];
        let modules_hint = match split_version(name) {
            Some(version) => {
                roots.push(self.fetch(&format!("linux-base-{version}"), progress)?);
                format!("add --modules-package linux-modules-{version}")
            }
            None => "add --modules-package with the package of its modules".to_string(),
        };
        if let Some(m) = modules_package {
            modules = Some(self.modules(m, progress)?);
        }
        let mut files = KernelFiles {
            image,
            modules,
            modules_hint,
            ..KernelFiles::default()
        };
        for root in &roots {
            for d in module_dirs(root) {
                files.config = files
                    .config
                    .take()
                    .or_else(|| Some(d.join("config")).filter(|p| p.is_file()));
                files.builtin = files
                    .builtin
                    .take()
                    .or_else(|| Some(d.join("modules.builtin")).filter(|p| p.is_file()));
            }
            files.config = files.config.take().or_else(|| {
                list(root.join("boot")).into_iter().find(|p| {
                    p.file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(|n| n.starts_with("config-"))
                })
            });
        }
        Ok(files)
    }

    /// The module tree (`lib/modules/VERSION`, with `kernel/`) of a modules package.
    pub(crate) fn modules(&self, name: &str, progress: &mut dyn FnMut(&str)) -> Result<PathBuf, LabError> {
        let root = self.fetch(name, progress)?;
        module_dirs(&root)
            .into_iter()
            .find(|d| d.join("kernel").is_dir())
            .ok_or_else(|| input(format!("{name} holds no module tree (lib/modules/VERSION/kernel)")))
    }
}

/// What a kernel brings: the image to boot and the files that say what it holds.
#[derive(Debug, Clone, Default)]
pub(crate) struct KernelFiles {
    pub(crate) image: PathBuf,
    /// `lib/modules/VERSION` with its `kernel/` modules.
    pub(crate) modules: Option<PathBuf>,
    /// The build's `.config`.
    pub(crate) config: Option<PathBuf>,
    /// `modules.builtin` (the modules built into the image).
    pub(crate) builtin: Option<PathBuf>,
    /// How to give the modules when NVMe is one and they are missing.
    pub(crate) modules_hint: String,
}

/// The split 7.x package that holds a kernel's image, as (prefix, VERSION).
fn split_version(name: &str) -> Option<&str> {
    let bare = name.split(':').next().unwrap_or(name);
    ["linux-binary-unsigned-", "linux-binary-"]
        .iter()
        .find_map(|p| bare.strip_prefix(p))
}

/// The files of a kernel image given as a file: `modules` (`--modules-dir`) with its
/// `modules.builtin`, and a config found beside the image (`config-VERSION` next to
/// `vmlinuz-VERSION` as in /boot, `config` next to a 7.x `vmlinuz`, a build tree's `.config`
/// three levels above `arch/ARCH/boot/IMAGE`) or in the module tree.
pub(crate) fn image_kernel(image: &Path, modules: Option<&Path>) -> KernelFiles {
    let dir = image.parent().unwrap_or(Path::new("."));
    let name = image.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let mut candidates = Vec::new();
    if let Some(version) = name.strip_prefix("vmlinuz-").or_else(|| name.strip_prefix("vmlinux-")) {
        candidates.push(dir.join(format!("config-{version}")));
    }
    candidates.push(dir.join("config"));
    candidates.push(dir.join("../../../.config"));
    if let Some(m) = modules {
        candidates.push(m.join("config"));
        candidates.push(m.join("build/.config"));
    }
    KernelFiles {
        image: image.to_path_buf(),
        modules: modules.map(Path::to_path_buf),
        config: candidates.into_iter().find(|p| p.is_file()),
        builtin: modules.map(|m| m.join("modules.builtin")).filter(|p| p.is_file()),
        modules_hint: "give --modules-dir with the lib/modules/VERSION tree of the same build".into(),
    }
}

/// How the guest gets its NVMe driver.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Nvme {
    /// Built into the image (what says so).
    BuiltIn(String),
    /// `nvme.ko` of the module tree, loaded by the init.
    Module,
    /// Nothing tells (an image without config or module tree): boot and see.
    Unknown,
}

/// Whether a kernel has NVMe, from its config (`CONFIG_BLK_DEV_NVME`), its `modules.builtin`
/// (`…/nvme.ko`) and whether the module tree given has `nvme`; `Err` says why it has none.
pub(crate) fn nvme_in_kernel(
    config: Option<&str>,
    builtin: Option<&str>,
    module_in_tree: bool,
) -> Result<Nvme, String> {
    if builtin.is_some_and(|b| b.lines().any(|l| l.trim_end().ends_with("/nvme.ko"))) {
        return Ok(Nvme::BuiltIn("modules.builtin lists nvme.ko".into()));
    }
    let setting = config.and_then(|c| {
        c.lines().find_map(|l| {
            let l = l.trim();
            if l == "# CONFIG_BLK_DEV_NVME is not set" {
                Some("n")
            } else {
                l.strip_prefix("CONFIG_BLK_DEV_NVME=")
            }
        })
    });
    let none = || -> Result<Nvme, String> {
        Err(match (setting, config.is_some(), builtin.is_some()) {
            (Some("m"), _, _) => {
                "NVMe is a module (CONFIG_BLK_DEV_NVME=m) and no module tree given holds nvme.ko".into()
            }
            (Some(_), _, _) | (None, true, _) => {
                "the kernel has no NVMe driver (CONFIG_BLK_DEV_NVME is not set)".into()
            }
            (None, false, _) => "nvme.ko is neither in modules.builtin nor in a module tree given".into(),
        })
    };
    match setting {
        Some("y") => Ok(Nvme::BuiltIn("CONFIG_BLK_DEV_NVME=y".into())),
        _ if module_in_tree => Ok(Nvme::Module),
        None if config.is_none() && builtin.is_none() => Ok(Nvme::Unknown),
        _ => none(),
    }
}

/// Bytes of a kernel image read to tell its architecture.
const IMAGE_HEAD_BYTES: u64 = 64 << 10;

/// The architecture a kernel image is built for, from its header: an x86 boot image
/// (`HdrS` at 0x202), an arm64 `Image` (`ARM\x64` at 0x38), a PE file (an EFI stub or an
/// EFI zboot image: its machine field), an ELF `vmlinux` (`e_machine`), or any of these
/// gzip'd. `None` when the header is none of them.
pub(crate) fn image_arch(head: &[u8]) -> Option<Arch> {
    let at = |off: usize, len: usize| head.get(off..off + len);
    let u16_at = |off: usize| at(off, 2).map(|b| u16::from_le_bytes([b[0], b[1]]));
    if at(0x202, 4) == Some(b"HdrS") {
        return Some(Arch::X86_64);
    }
    if at(0x38, 4) == Some(b"ARM\x64") {
        return Some(Arch::Arm64);
    }
    let machine = if head.starts_with(b"MZ") {
        let pe = at(0x3c, 4).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize);
        pe.filter(|&pe| at(pe, 4) == Some(b"PE\0\0"))
            .and_then(|pe| u16_at(pe + 4))
    } else if head.starts_with(b"\x7fELF") {
        u16_at(0x12)
    } else if head.starts_with(&[0x1f, 0x8b]) {
        let mut inner = Vec::new();
        let gz = flate2::read::GzDecoder::new(head);
        let _ = std::io::Read::read_to_end(&mut std::io::Read::take(gz, 4096), &mut inner);
        // One level only: a gzip inside a gzip is no kernel image.
        return if inner.starts_with(&[0x1f, 0x8b]) {
            None
        } else {
            image_arch(&inner)
        };
    } else {
        None
    };
    match machine? {
        0x8664 | 0x3e => Some(Arch::X86_64),
        0xaa64 | 0xb7 => Some(Arch::Arm64),
        _ => None,
    }
}

/// The architecture of a kernel image file, from its first bytes (`None`: unknown format or
/// unreadable; the boot will tell).
pub(crate) fn image_file_arch(path: &Path) -> Option<Arch> {
    let mut head = Vec::new();
    let file = std::fs::File::open(path).ok()?;
    std::io::Read::read_to_end(&mut std::io::Read::take(file, IMAGE_HEAD_BYTES), &mut head).ok()?;
    image_arch(&head)
}

/// The Debian architecture a package name ends in (`…-amd64`, `…-cloud-arm64`, `…:arm64`),
/// as the machine architecture it builds for; `None` when the name names neither.
pub(crate) fn package_arch(name: &str) -> Option<Arch> {
    name.split(['-', ':', '+']).rev().find_map(|word| match word {
        "amd64" => Some(Arch::X86_64),
        "arm64" => Some(Arch::Arm64),
        _ => None,
    })
}

/// Entries of a directory, sorted (none when it cannot be read).
fn list(d: PathBuf) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(d)
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    v.sort();
    v
}

/// `lib/modules/*` and `usr/lib/modules/*` of an unpacked package.
fn module_dirs(root: &Path) -> Vec<PathBuf> {
    ["lib/modules", "usr/lib/modules"]
        .iter()
        .flat_map(|d| list(root.join(d)))
        .filter(|p| p.is_dir())
        .collect()
}

/// The image and module tree of an unpacked kernel package: `boot/vmlinuz-*` with
/// `lib/modules/*`, or the split layout's `usr/lib/modules/*/vmlinuz*`.
fn find_kernel(root: &Path) -> Option<(PathBuf, Option<PathBuf>)> {
    let moddirs = module_dirs(root);
    let is_image = |p: &PathBuf| {
        p.file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with("vmlinuz"))
            && p.is_file()
    };
    let image = list(root.join("boot"))
        .into_iter()
        .find(is_image)
        .or_else(|| moddirs.iter().flat_map(|d| list(d.clone())).find(is_image))?;
    let modules = moddirs.into_iter().find(|d| d.join("kernel").is_dir());
    Some((image, modules))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The architecture of a kernel image, from the headers of each format, and of a package,
    /// from the Debian architecture its name ends in.
    #[test]
    fn images_and_packages_tell_their_architecture() {
        let with = |at: usize, bytes: &[u8]| {
            let mut v = vec![0u8; 0x400];
            v[at..at + bytes.len()].copy_from_slice(bytes);
            v
        };
        let bzimage = with(0x202, b"HdrS");
        let image = with(0x38, b"ARM\x64");
        assert_eq!(image_arch(&bzimage), Some(Arch::X86_64));
        assert_eq!(image_arch(&image), Some(Arch::Arm64));
        // A PE file (EFI zboot): its machine field.
        let mut pe = with(0x80, b"PE\0\0\x64\xaa");
        pe[..2].copy_from_slice(b"MZ");
        pe[0x3c] = 0x80;
        assert_eq!(image_arch(&pe), Some(Arch::Arm64));
        pe[0x84..0x86].copy_from_slice(&0x8664u16.to_le_bytes());
        assert_eq!(image_arch(&pe), Some(Arch::X86_64));
        let mut elf = with(0x12, &[0xb7, 0]);
        elf[..4].copy_from_slice(b"\x7fELF");
        assert_eq!(image_arch(&elf), Some(Arch::Arm64));
        let gzip = |data: &[u8]| {
            let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            std::io::Write::write_all(&mut gz, data).unwrap();
            gz.finish().unwrap()
        };
        assert_eq!(image_arch(&gzip(&image)), Some(Arch::Arm64));
        assert_eq!(image_arch(&gzip(&gzip(&image))), None);
        assert_eq!(image_arch(b"not a kernel"), None);
        assert_eq!(image_arch(&[]), None);
        for (name, arch) in [
            ("linux-image-6.12.*+deb12-cloud-amd64", Some(Arch::X86_64)),
            ("linux-image-6.1.0-57-amd64-unsigned", Some(Arch::X86_64)),
            ("linux-binary-unsigned-7.2.13+deb14-arm64", Some(Arch::Arm64)),
            ("linux-image-6.12.117+deb12-cloud-arm64:arm64", Some(Arch::Arm64)),
            ("linux-modules-7.2.*+deb*-arm64", Some(Arch::Arm64)),
            ("busybox-static", None),
        ] {
            assert_eq!(package_arch(name), arch, "{name}");
        }
    }

    #[test]
    fn package_names_are_checked() {
        assert!(valid_package_name("linux-image-6.12.107+deb12-cloud-amd64"));
        assert!(!valid_package_name("-o=evil"));
        assert!(!valid_package_name("../x"));
        assert!(!valid_package_name(""));
    }

    #[test]
    fn version_patterns_match_only_version_numbers() {
        let p = "linux-image-6.1.0-*-amd64";
        assert_eq!(
            match_version_pattern(p, "linux-image-6.1.0-57-amd64"),
            Some(vec!["57".to_string()])
        );
        // `*` is a version number: the cloud, rt and unsigned flavours are other packages.
        for other in [
            "linux-image-6.1.0-57-cloud-amd64",
            "linux-image-6.1.0-57-rt-amd64",
            "linux-image-6.1.0-57-amd64-unsigned",
            "linux-image-6.1.0--amd64",
            "linux-image-6.1.0-57-amd64-dbg",
        ] {
            assert_eq!(match_version_pattern(p, other), None, "{other}");
        }
        let p = "linux-image-6.12.*+deb12-cloud-amd64";
        assert_eq!(
            match_version_pattern(p, "linux-image-6.12.117+deb12-cloud-amd64"),
            Some(vec!["117".to_string()])
        );
        // A star followed by digits gives them back.
        assert_eq!(
            match_version_pattern(
                "linux-binary-unsigned-7.*3+deb*-cloud-amd64",
                "linux-binary-unsigned-7.2.13+deb14-cloud-amd64"
            ),
            Some(vec!["2.1".to_string(), "14".to_string()])
        );
        assert!(version_key("6.12.117") > version_key("6.12.99"));
        assert!(version_key("57") > version_key("9"));
    }

    #[test]
    fn a_name_without_a_star_is_taken_as_it_is() {
        // No apt call is made for a plain name (this runs on machines without apt).
        assert_eq!(
            resolve_package("linux-image-6.1.0-57-amd64", &[]).unwrap(),
            "linux-image-6.1.0-57-amd64"
        );
        assert!(matches!(resolve_package("-o=x*", &[]), Err(LabError::Input(_))));
    }

    #[test]
    fn split_layout_is_found() {
        let root = std::env::temp_dir().join(format!("irqscope-lab-find-{}", std::process::id()));
        let v = root.join("usr/lib/modules/7.2.13+deb14-cloud-amd64");
        std::fs::create_dir_all(v.join("kernel")).unwrap();
        std::fs::write(v.join("vmlinuz.unsigned"), b"x").unwrap();
        let (image, modules) = find_kernel(&root).unwrap();
        assert_eq!(image, v.join("vmlinuz.unsigned"));
        assert_eq!(modules, Some(v));
        std::fs::remove_dir_all(&root).unwrap();
        assert!(find_kernel(&root).is_none());
    }

    #[test]
    fn nvme_is_found_built_in_or_as_a_module_or_refused() {
        let y = "CONFIG_NVME_CORE=y\nCONFIG_BLK_DEV_NVME=y\n";
        let m = "CONFIG_BLK_DEV_NVME=m\n";
        let n = "# CONFIG_BLK_DEV_NVME is not set\n";
        assert!(matches!(nvme_in_kernel(Some(y), None, false), Ok(Nvme::BuiltIn(_))));
        let builtin = "kernel/drivers/nvme/host/nvme-core.ko\nkernel/drivers/nvme/host/nvme.ko\n";
        assert!(matches!(
            nvme_in_kernel(None, Some(builtin), false),
            Ok(Nvme::BuiltIn(_))
        ));
        assert_eq!(nvme_in_kernel(Some(m), None, true), Ok(Nvme::Module));
        let e = nvme_in_kernel(Some(m), Some("kernel/fs/ext4/ext4.ko\n"), false).unwrap_err();
        assert!(e.contains("CONFIG_BLK_DEV_NVME=m"), "{e}");
        assert!(nvme_in_kernel(Some(n), None, false).unwrap_err().contains("not set"));
        assert!(nvme_in_kernel(None, Some("kernel/fs/ext4/ext4.ko\n"), false).is_err());
        assert_eq!(nvme_in_kernel(None, None, false), Ok(Nvme::Unknown));
        assert_eq!(nvme_in_kernel(None, None, true), Ok(Nvme::Module));
    }

    #[test]
    fn split_packages_and_image_configs() {
        assert_eq!(
            split_version("linux-binary-unsigned-7.2.13+deb14-arm64"),
            Some("7.2.13+deb14-arm64")
        );
        assert_eq!(
            split_version("linux-binary-7.2.13+deb14-cloud-amd64:amd64"),
            Some("7.2.13+deb14-cloud-amd64")
        );
        assert_eq!(split_version("linux-image-6.12.117+deb12-cloud-arm64"), None);
        // A Debian /boot layout: config-VERSION beside vmlinuz-VERSION.
        let root = std::env::temp_dir().join(format!("irqscope-lab-image-{}", std::process::id()));
        std::fs::create_dir_all(root.join("boot")).unwrap();
        std::fs::write(root.join("boot/vmlinuz-6.1.0-57-amd64"), b"x").unwrap();
        std::fs::write(root.join("boot/config-6.1.0-57-amd64"), b"CONFIG_BLK_DEV_NVME=m\n").unwrap();
        let k = image_kernel(&root.join("boot/vmlinuz-6.1.0-57-amd64"), None);
        assert_eq!(k.config, Some(root.join("boot/config-6.1.0-57-amd64")));
        assert!(k.modules_hint.contains("--modules-dir"));
        std::fs::remove_dir_all(&root).unwrap();
    }
}
