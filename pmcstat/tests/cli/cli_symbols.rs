//! Symbol sources of `-R`: pmcstat(8)'s `-k KERNELDIR` for kernel frames,
//! and PLT stubs named `func@plt` as perf names them.
#![cfg(target_os = "linux")]

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common;
use common::pmcstat as run;

fn workdir(name: &str) -> PathBuf {
    pmc_testkit::workdir(&format!("pmcstat-sym-{name}"))
}

macro_rules! os {
    ($($a:expr),* $(,)?) => { [$(std::ffi::OsStr::new($a)),*] };
}

/// `--script` frame lines: (address, symbol, object).
fn frames(script: &str) -> Vec<(String, String, String)> {
    script
        .lines()
        .filter(|l| l.starts_with('\t'))
        .filter_map(|l| {
            let mut it = l.trim().splitn(2, ' ');
            let addr = it.next()?.to_owned();
            let rest = it.next()?;
            let (sym, obj) = rest.rsplit_once(" (")?;
            let sym = sym.split("+0x").next()?.to_owned();
            Some((addr, sym, obj.trim_end_matches(')').to_owned()))
        })
        .collect()
}

fn kernel_frames(script: &str) -> Vec<(String, String)> {
    frames(script)
        .into_iter()
        .filter(|f| f.2 == "[kernel.kallsyms]")
        .map(|f| (f.0, f.1))
        .collect()
}

/// The kernel image's symbols as `as` input: one absolute symbol per
/// address (the one the kallsyms reader keeps, as perf: the last text symbol
/// there, else the first symbol), functions for text symbols. None if kallsyms
/// has no addresses.
fn vmlinux_asm(kallsyms: &str) -> Option<String> {
    let mut by_addr: std::collections::BTreeMap<u64, (bool, &str)> = Default::default();
    for l in kallsyms.lines() {
        let mut it = l.split_ascii_whitespace();
        let (Some(a), Some(t), Some(n)) = (it.next(), it.next(), it.next()) else {
            continue;
        };
        let Ok(a) = u64::from_str_radix(a, 16) else {
            continue;
        };
        if a == 0
            || !n
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"_.".contains(&b))
        {
            continue;
        }
        let text = matches!(t, "t" | "T" | "w" | "W");
        let e = by_addr.entry(a).or_insert((text, n));
        if text {
            *e = (text, n);
        }
    }
    if by_addr.is_empty() {
        return None;
    }
    let mut s = String::new();
    for (a, (text, n)) in by_addr {
        let ty = if text { "function" } else { "object" };
        s.push_str(&format!(
            ".globl \"{n}\"\n.type \"{n}\", @{ty}\n.set \"{n}\", {a:#x}\n"
        ));
    }
    Some(s)
}

#[test]
fn kernel_dir_gives_the_kernel_symbols() {
    let kallsyms = std::fs::read_to_string("/proc/kallsyms").unwrap_or_default();
    if !kallsyms.lines().any(|l| !l.starts_with("0000000000000000")) {
        pmc_testkit::skip!("/proc/kallsyms shows no addresses here (kptr_restrict, not root)");
        return;
    }
    let dir = workdir("kdir");
    let log = dir.join("dd.pmclog");
    let (code, _, err) = run(&os![
        "-P",
        "cpu-clock",
        "--freq",
        "2000",
        "-O",
        log.as_os_str(),
        "--",
        "dd",
        "if=/dev/zero",
        "of=/dev/null",
        "bs=1",
        "count=300000",
    ]);
    if code != 0 {
        pmc_testkit::skip!("sampling not permitted here: {err}");
        return;
    }
    let script = |extra: &[&std::ffi::OsStr]| {
        let mut a = os!["-R", log.as_os_str(), "--script"].to_vec();
        a.extend_from_slice(extra);
        let (code, out, err) = run(&a);
        assert_eq!(code, 0, "{err}");
        (out, err)
    };
    // Without -k: this machine's /proc/kallsyms (the log was taken here).
    let (base, _) = script(&[]);
    let kbase = kernel_frames(&base);
    let named = kbase.iter().filter(|f| f.1 != "[unknown]").count();
    eprintln!("{} kernel frames, {named} named", kbase.len());
    assert!(named >= 20, "a syscall loop has kernel frames: {kbase:?}");

    // Issue 34: -m lists the kernel PCs that kallsyms names (as -G names them), at their
    // run-time address with the symbol's bounds, and does not count them as "no symbol".
    // Judged by the kernel's own table: each listed kernel symbol is at its start address
    // in /proc/kallsyms, and the PC lies in [start, end).
    let (code, pcs, err) = run(&os!["-R", log.as_os_str(), "-m", "-"]);
    assert_eq!(code, 0, "{err}");
    let ktable: std::collections::HashSet<(u64, &str)> = kallsyms
        .lines()
        .filter_map(|l| {
            let mut w = l.split_ascii_whitespace();
            let a = u64::from_str_radix(w.next()?, 16).ok()?;
            Some((a, w.nth(1)?))
        })
        .collect();
    let mut klisted = 0;
    for l in pcs.lines() {
        let w: Vec<&str> = l.split(' ').collect();
        let hex = |s: &str| u64::from_str_radix(s.trim_start_matches("0x"), 16).unwrap();
        let (pc, start, end) = (hex(w[0]), hex(w[2]), hex(w[3]));
        if pc >= 0xffff_8000_0000_0000 {
            klisted += 1;
            assert!(
                ktable.contains(&(start, w[1])),
                "{l}: not in /proc/kallsyms"
            );
            assert!((start..end).contains(&pc), "{l}");
        }
    }
    let samples = base
        .lines()
        .filter(|l| !l.starts_with('\t') && !l.is_empty())
        .count();
    let kleaves = base
        .split("\n\n")
        .filter_map(|s| s.lines().nth(1))
        .filter(|l| l.contains("[kernel.kallsyms]") && !l.contains("[unknown]"))
        .count();
    eprintln!(
        "-m: {klisted} kernel PCs listed; --script: {kleaves} named kernel leaves of {samples}"
    );
    assert_eq!(klisted, kleaves, "{err}");
    let unresolved = err
        .lines()
        .find_map(|l| l.strip_prefix("pmcstat: -m: "))
        .and_then(|l| l.split(' ').next())
        .map_or(0, |n| n.parse::<usize>().unwrap());
    assert!(
        unresolved + kleaves <= samples,
        "kernel samples counted as unresolved: {err}"
    );

    // -k DIR with a copy of kallsyms: the same report.
    let kdir = dir.join("kernel");
    std::fs::create_dir_all(&kdir).unwrap();
    std::fs::write(kdir.join("kallsyms"), &kallsyms).unwrap();
    let (with_dir, _) = script(&os!["-k", kdir.as_os_str()]);
    assert_eq!(with_dir, base);

    // -k FILE is read, not /proc/kallsyms: every text symbol renamed k_NAME.
    let renamed: String = kallsyms
        .lines()
        .map(|l| {
            let mut w: Vec<&str> = l.splitn(3, ' ').collect();
            let k;
            if w.len() == 3 && matches!(w[1], "t" | "T" | "w" | "W") {
                k = format!("k_{}", w[2]);
                w[2] = &k;
                w.join(" ") + "\n"
            } else {
                format!("{l}\n")
            }
        })
        .collect();
    let file = dir.join("kallsyms.renamed");
    std::fs::write(&file, renamed).unwrap();
    let (with_file, _) = script(&os!["-k", file.as_os_str()]);
    let kfile = kernel_frames(&with_file);
    assert_eq!(kfile.len(), kbase.len());
    for (b, f) in kbase.iter().zip(&kfile) {
        if b.1 != "[unknown]" {
            assert_eq!(f.1, format!("k_{}", b.1), "{b:?} {f:?}");
        }
    }

    // An empty directory: a warning naming where it looked; kernel frames
    // unresolved, user frames as before.
    let empty = dir.join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let (none, err) = script(&os!["-k", empty.as_os_str()]);
    let looked = format!("looked for {}", empty.join("kallsyms").display());
    assert!(err.contains(&looked), "{err}");
    assert!(
        err.contains(&empty.join("vmlinux").display().to_string()),
        "{err}"
    );
    let knone = kernel_frames(&none);
    assert_eq!(knone.len(), kbase.len());
    assert!(knone.iter().all(|f| f.1 == "[unknown]"), "{knone:?}");
    let user = |s: &str| -> Vec<(String, String, String)> {
        frames(s)
            .into_iter()
            .filter(|f| f.2 != "[kernel.kallsyms]")
            .collect()
    };
    assert_eq!(user(&none), user(&base));

    // A directory with a vmlinux (here an ELF object with the same symbols,
    // absolute, at kallsyms' addresses: this kernel's are as linked or not,
    // the test only checks the ELF path): the same kernel names.
    let asm = vmlinux_asm(&kallsyms).unwrap();
    let vdir = dir.join("vmlinux-dir");
    std::fs::create_dir_all(&vdir).unwrap();
    std::fs::write(dir.join("vmlinux.s"), asm).unwrap();
    let built = Command::new("as")
        .arg("-o")
        .arg(vdir.join("vmlinux"))
        .arg(dir.join("vmlinux.s"))
        .status()
        .is_ok_and(|s| s.success());
    if !built {
        pmc_testkit::skip!(
            "no assembler (as) to build a vmlinux-like ELF; the kallsyms part passed"
        );
        return;
    }
    let (with_elf, err) = script(&os!["-k", vdir.as_os_str()]);
    assert!(!err.contains("warning"), "{err}");
    let kelf = kernel_frames(&with_elf);
    // A local name the kernel uses twice (`set_ptes.isra.0` in two objects) can be only one
    // symbol of the assembled stand-in (`.set` redefines it): frames in such functions are
    // not judged.
    let mut seen = std::collections::HashSet::new();
    let dups: std::collections::HashSet<&str> = kallsyms
        .lines()
        .filter_map(|l| l.split_ascii_whitespace().nth(2))
        .filter(|n| !seen.insert(*n))
        .collect();
    let same = kbase
        .iter()
        .zip(&kelf)
        .filter(|(a, b)| a == b || dups.contains(a.1.as_str()))
        .count();
    assert_eq!(
        same,
        kbase.len(),
        "{:?}",
        kbase
            .iter()
            .zip(&kelf)
            .filter(|(a, b)| a != b)
            .take(5)
            .collect::<Vec<_>>()
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A libc call in a tight loop: `-fno-builtin` keeps `toupper` a call, lazy
/// binding keeps it going through the PLT stub, so samples land there.
const PLT_PROG: &str = r#"
#include <ctype.h>
#include <stdlib.h>
volatile long sink;
int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 60000000;
    for (long i = 0; i < n; i++) sink += toupper((int)(i & 0x7f));
    return 0;
}
"#;

/// `objdump -d`'s `<name@plt>` labels in `section`: name -> address.
fn objdump_plt(exe: &Path, section: &str) -> std::collections::BTreeMap<String, u64> {
    let out = Command::new("objdump")
        .args(["-d", "-j", section])
        .arg(exe)
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let (addr, rest) = l.split_once(" <")?;
            let name = rest.strip_suffix(">:")?;
            name.ends_with("@plt")
                .then(|| Some((name.to_owned(), u64::from_str_radix(addr, 16).ok()?)))?
        })
        .collect()
}

/// `nm`'s address of every symbol.
fn nm(exe: &Path) -> std::collections::HashMap<String, u64> {
    let out = Command::new("nm").arg(exe).output().unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            let a = u64::from_str_radix(w.next()?, 16).ok()?;
            let _ty = w.next()?;
            Some((w.next()?.to_owned(), a))
        })
        .collect()
}

/// Each sample's leaf frame in `--script` output: (ip, symbol, offset).
fn script_leaves(script: &str) -> Vec<(u64, String, u64)> {
    let mut out = Vec::new();
    let mut want = false;
    for l in script.lines() {
        if !l.starts_with('\t') {
            want = !l.trim().is_empty();
            continue;
        }
        if !want {
            continue;
        }
        want = false;
        let mut it = l.split_whitespace();
        let ip = it.next().and_then(|a| u64::from_str_radix(a, 16).ok());
        let sym = it.next().unwrap_or_default();
        let (name, off) = sym.rsplit_once("+0x").unwrap_or((sym, "0"));
        if let (Some(ip), Ok(off)) = (ip, u64::from_str_radix(off, 16)) {
            out.push((ip, name.to_owned(), off));
        }
    }
    out
}

/// `perf script -G -F ip,sym,symoff`: (ip, symbol, offset) per sample.
fn perf_leaves(data: &Path) -> Option<Vec<(u64, String, u64)>> {
    let out = Command::new("perf")
        .args(["script", "-G", "-F", "ip,sym,symoff", "-i"])
        .arg(data)
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    Some(
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| {
                let mut it = l.split_whitespace();
                let ip = u64::from_str_radix(it.next()?, 16).ok()?;
                let sym = it.next().unwrap_or("[unknown]");
                let (name, off) = sym.rsplit_once("+0x").unwrap_or((sym, "0"));
                Some((ip, name.to_owned(), u64::from_str_radix(off, 16).ok()?))
            })
            .collect(),
    )
}

#[test]
fn plt_stubs_are_named_as_perf_and_objdump_name_them() {
    let dir = workdir("plt");
    if !pmc_testkit::cli::works("perf", &["--version"]) {
        pmc_testkit::skip!("perf is not installed: no oracle for the PLT stubs");
        return;
    }
    // Classic `.plt` (16-byte header), and IBT's `.plt.sec` where the linker makes one.
    let variants: [(&str, &[&str], &str); 2] = [
        ("plt", &["-fcf-protection=none"], ".plt"),
        (
            "pltsec",
            &["-fcf-protection=full", "-Wl,-z,ibtplt"],
            ".plt.sec",
        ),
    ];
    let mut checked = 0;
    for (name, flags, section) in variants {
        let common = [
            "-O0",
            "-fno-builtin",
            "-fno-omit-frame-pointer",
            "-Wl,-z,lazy",
        ];
        let flags = [&common[..], flags].concat();
        let built = pmc_testkit::cc::compile(&dir, name, PLT_PROG, &flags);
        if let Err(why) = &built {
            if name == "plt" {
                pmc_testkit::skip!("no C compiler (cc) to build the PLT test program: {why}");
                return;
            }
        }
        let exe = dir.join(name);
        let stubs = objdump_plt(&exe, section);
        let Some(&stub) = stubs.get("toupper@plt") else {
            eprintln!("{name}: no {section} with toupper@plt from this toolchain ({stubs:?}); not checked");
            continue;
        };
        let log = dir.join(format!("{name}.pmclog"));
        let (code, _, err) = run(&os![
            "-P",
            "cpu-clock",
            "--freq",
            "4000",
            "-O",
            log.as_os_str(),
            "--",
            exe.as_os_str(),
        ]);
        if code != 0 {
            pmc_testkit::skip!("sampling not permitted here: {err}");
            return;
        }
        // -m: each sampled PC (object-relative) with its function's bounds.
        let (code, pcs, err) = run(&os!["-R", log.as_os_str(), "-m", "-"]);
        assert_eq!(code, 0, "{err}");
        let in_stub: Vec<&str> = pcs
            .lines()
            .filter(|l| l.contains(" toupper@plt "))
            .collect();
        let bounds = format!("toupper@plt {stub:#x} {:#x}", stub + 16);
        assert!(
            in_stub.len() >= 10,
            "{name}: {} samples in the stub\n{pcs}",
            in_stub.len()
        );
        assert!(
            in_stub.iter().all(|l| l.ends_with(&bounds)),
            "{name}: {in_stub:?} vs objdump {bounds}"
        );
        // --summary names it.
        let (code, summary, err) = run(&os!["-R", log.as_os_str(), "--summary"]);
        assert_eq!(code, 0, "{err}");
        assert!(summary.contains(" toupper@plt "), "{summary}");

        // perf, on the same samples exported to perf.data: the same stub.
        let data = dir.join(format!("{name}.data"));
        let (code, _, err) = run(&os!["-R", log.as_os_str(), "--perf-data", data.as_os_str()]);
        assert_eq!(code, 0, "{err}");
        let (code, script, err) = run(&os!["-R", log.as_os_str(), "--script"]);
        assert_eq!(code, 0, "{err}");
        let ours = script_leaves(&script);
        let Some(theirs) = perf_leaves(&data) else {
            pmc_testkit::skip!("perf script cannot read the exported perf.data");
            return;
        };
        assert_eq!(ours.len(), theirs.len(), "{name}: samples");
        let syms = nm(&exe);
        let mut agree = 0;
        for (o, t) in ours.iter().zip(&theirs) {
            assert_eq!(o.0, t.0, "{name}: the same sample");
            if o.1 != "toupper@plt" && t.1 != "toupper@plt" {
                continue;
            }
            if t.1 == "toupper@plt" {
                // perf 6.2 and later synthesize PLT symbols the same way.
                assert_eq!((&o.1, o.2), (&t.1, t.2), "{name}: {o:?} vs perf {t:?}");
            } else {
                // Older perf names the stub after the symbol before `.plt`
                // (`_init+0x30`): the same address all the same.
                let at = syms.get(&t.1).map(|a| a + t.2);
                assert_eq!(at, Some(stub + o.2), "{name}: {o:?} vs perf {t:?}");
            }
            agree += 1;
        }
        eprintln!(
            "{name}: {} samples in toupper@plt ({section} {stub:#x}), perf agrees on {agree}",
            in_stub.len()
        );
        assert_eq!(agree, in_stub.len(), "{name}");
        checked += 1;
    }
    assert!(checked >= 1, "no PLT variant checked");
    let _ = std::fs::remove_dir_all(&dir);
}
