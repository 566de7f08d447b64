//! Symbol sources of `-R`: pmcstat(8)'s `-k KERNELDIR` for kernel frames,
//! and PLT stubs named `func@plt` as perf names them.
#![cfg(target_os = "linux")]

use std::path::PathBuf;
use std::process::Command;

fn pmcstat() -> Command {
    Command::new(env!("CARGO_BIN_EXE_pmcstat"))
}

fn workdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("pmcstat-sym-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Runs pmcstat; (status, stdout, stderr).
fn run(args: &[&std::ffi::OsStr]) -> (i32, String, String) {
    let out = pmcstat().args(args).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
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
/// address (the one the kallsyms reader keeps: the first text symbol there,
/// else the first symbol), functions for text symbols. None if kallsyms has
/// no addresses.
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
        if text && !e.0 {
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
    let same = kbase.iter().zip(&kelf).filter(|(a, b)| a == b).count();
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
