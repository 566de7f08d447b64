use super::parent::Parent;
use super::temp::start_time;
use super::temp::Temp;
use super::*;
use nix::sys::stat::Mode;
use std::io::Write;

fn tmpdir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("pmc-output-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Issue 24: logs and private outputs are the owner's only (0600), as perf.data;
/// other outputs 0666 minus the umask.
#[test]
fn logs_and_private_outputs_are_0600() {
    use std::os::unix::fs::PermissionsExt;
    let d = tmpdir("modes");
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    let log = d.join("new.log");
    drop(create_log(&log, &Options::default()).unwrap());
    assert_eq!(mode(&log), 0o600);
    let old = d.join("old.log");
    std::fs::write(&old, b"x").unwrap();
    std::fs::set_permissions(&old, std::fs::Permissions::from_mode(0o644)).unwrap();
    drop(create_log(&old, &Options::default()).unwrap());
    assert_eq!(mode(&old), 0o600);
    let private = Options {
        private: true,
        ..Options::default()
    };
    let p = d.join("profile");
    Output::create(&p, &private).unwrap().commit().unwrap();
    assert_eq!(mode(&p), 0o600);
    let q = d.join("report");
    Output::create(&q, &Options::default())
        .unwrap()
        .commit()
        .unwrap();
    assert_ne!(mode(&q) & 0o044, 0, "{:o}", mode(&q));
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn commit_renames_and_drop_leaves_nothing() {
    let d = tmpdir("commit");
    let p = d.join("out");
    std::fs::write(&p, b"previous").unwrap();
    let mut o = Output::create(&p, &Options::default()).unwrap();
    o.write_all(b"half").unwrap();
    drop(o);
    assert_eq!(std::fs::read(&p).unwrap(), b"previous");
    assert_eq!(
        std::fs::read_dir(&d).unwrap().count(),
        1,
        "a temporary file was left"
    );
    let mut o = Output::create(&p, &Options::default()).unwrap();
    o.write_all(b"new").unwrap();
    o.commit().unwrap();
    assert_eq!(std::fs::read(&p).unwrap(), b"new");
    assert_eq!(std::fs::read_dir(&d).unwrap().count(), 1);
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn links_and_inputs_are_refused() {
    let d = tmpdir("links");
    let victim = d.join("victim");
    std::fs::write(&victim, b"precious").unwrap();
    std::os::unix::fs::symlink(&victim, d.join("link")).unwrap();
    let e = Output::create(&d.join("link"), &Options::default()).unwrap_err();
    assert!(e.to_string().contains("symbolic link"), "{e}");
    let e = create_log(&d.join("link"), &Options::default()).unwrap_err();
    assert!(e.to_string().contains("symbolic link"), "{e}");
    let dir = Dir::open(&d).unwrap();
    std::os::unix::fs::symlink(&d, d.join("sub")).unwrap();
    let e = dir.subdir("sub".as_ref()).unwrap_err();
    assert!(e.to_string().contains("symbolic link"), "{e}");
    let opts = Options {
        inputs: vec![FileId::of_path(&victim).unwrap()],
        ..Options::default()
    };
    std::fs::hard_link(&victim, d.join("hard")).unwrap();
    let e = Output::create(&d.join("hard"), &opts).unwrap_err();
    assert!(e.to_string().contains("log being read"), "{e}");
    assert_eq!(std::fs::read(&victim).unwrap(), b"precious");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn a_second_log_writer_is_refused() {
    let d = tmpdir("lock");
    let p = d.join("log");
    let mut first = create_log(&p, &Options::default()).unwrap();
    first.write_all(b"first").unwrap();
    let e = create_log(&p, &Options::default()).unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::WouldBlock, "{e}");
    assert_eq!(std::fs::read(&p).unwrap(), b"first");
    drop(first);
    create_log(&p, &Options::default()).unwrap();
    assert_eq!(std::fs::read(&p).unwrap(), b"");
    let _ = std::fs::remove_dir_all(&d);
}

/// Issue 32 item 3: the last link is followed only in the system's directories of
/// links, judged by the directory opened, not by the spelling: `/dev/stdout` is
/// followed, a link reached as `/dev/../DIR/link` is not.
#[test]
fn only_the_systems_links_are_followed() {
    let d = tmpdir("sysdirs");
    let victim = d.join("victim");
    std::fs::write(&victim, b"precious").unwrap();
    std::os::unix::fs::symlink(&victim, d.join("link")).unwrap();
    let dotdot = Path::new("/dev/..")
        .join(d.strip_prefix("/").unwrap())
        .join("link");
    let e = Output::create(&dotdot, &Options::default()).unwrap_err();
    assert!(e.to_string().contains("symbolic link"), "{e}");
    let e = create_log(&dotdot, &Options::default()).unwrap_err();
    assert!(e.to_string().contains("symbolic link"), "{e}");
    assert_eq!(std::fs::read(&victim).unwrap(), b"precious");
    assert!(Parent::open(Path::new("/dev")).unwrap().system);
    assert!(!Parent::open(&d).unwrap().system);
    if Path::new("/dev/shm").is_dir() {
        assert!(!Parent::open(Path::new("/dev/shm")).unwrap().system);
    }
    Output::create(Path::new("/dev/null"), &Options::default())
        .unwrap()
        .commit()
        .unwrap();
    let _ = std::fs::remove_dir_all(&d);
}

/// Issue 32 item 4: an output does not replace a file another process holds locked
/// (a recording), and while an output holds a file, a recorder is refused it.
#[test]
fn a_log_being_recorded_is_not_replaced() {
    let d = tmpdir("replace-log");
    let p = d.join("rec.log");
    let mut rec = create_log(&p, &Options::default()).unwrap();
    rec.write_all(b"recording").unwrap();
    let e = Output::create(&p, &Options::default()).unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::WouldBlock, "{e}");
    drop(rec);
    assert_eq!(std::fs::read(&p).unwrap(), b"recording");
    let out = Output::create(&p, &Options::default()).unwrap();
    let e = create_log(&p, &Options::default()).unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::WouldBlock, "{e}");
    out.commit().unwrap();
    // A recorder that created the name after the output was opened: the commit refuses.
    let q = d.join("late.log");
    let out = Output::create(&q, &Options::default()).unwrap();
    let rec = create_log(&q, &Options::default()).unwrap();
    let e = out.commit().unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::WouldBlock, "{e}");
    drop(rec);
    assert_eq!(
        std::fs::read_dir(&d).unwrap().count(),
        2,
        "no temporary left"
    );
    let _ = std::fs::remove_dir_all(&d);
}

/// Issue 32 item 11: an output's temporary file has no name (O_TMPFILE) where the file
/// system allows it; a named one a dead process left is removed by the next output of
/// the name, and nothing else: not a live process's, not another user's, not another
/// name's.
#[test]
fn stale_temporaries_are_removed_and_nothing_else() {
    let d = tmpdir("stale");
    let out = Output::create(&d.join("out"), &Options::default()).unwrap();
    let named: Vec<_> = std::fs::read_dir(&d).unwrap().collect();
    if matches!(out.rename.as_ref().map(|r| &r.tmp), Some(Temp::Unnamed)) {
        assert!(named.is_empty(), "an unnamed temporary file has no name");
    }
    drop(out);
    let me = std::process::id();
    let mine = start_time("self").unwrap_or(0);
    let dead = ".out.pmc-4194305-12345-1.tmp"; // above the kernel's pid_max
    let live = format!(".out.pmc-1-{}-1.tmp", start_time("1").unwrap_or(0));
    let reused = format!(".out.pmc-{me}-{}-1.tmp", mine + 1);
    let other = ".other.pmc-4194305-12345-1.tmp";
    let odd = ".out.pmc-x.tmp";
    for n in [dead, &live, &reused, other, odd] {
        std::fs::write(d.join(n), b"x").unwrap();
    }
    Output::create(&d.join("out"), &Options::default())
        .unwrap()
        .commit()
        .unwrap();
    let left: std::collections::BTreeSet<String> = std::fs::read_dir(&d)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert!(!left.contains(dead), "{left:?}");
    assert!(left.contains(&live) && left.contains(other) && left.contains(odd));
    // This process's own pid is never judged (its own temporaries are its own).
    assert!(left.contains(&reused), "{left:?}");
    let _ = std::fs::remove_dir_all(&d);
}

/// Issue 32 item 2 (as root): in a sticky directory others may write to, a file or
/// FIFO another user made is neither written into nor replaced, and what is created
/// there is 0600.
#[test]
fn another_users_file_in_a_shared_directory_is_refused() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    if !nix::unistd::geteuid().is_root() {
        return; // The unprivileged case: pmc-tests' faults_cli runs it as nobody.
    }
    let d = tmpdir("sticky");
    std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o1777)).unwrap();
    let planted = d.join("planted");
    std::fs::write(&planted, b"nobody's").unwrap();
    std::os::unix::fs::chown(&planted, Some(65534), Some(65534)).unwrap();
    let fifo = d.join("fifo");
    nix::unistd::mkfifo(&fifo, Mode::from_bits_truncate(0o666)).unwrap();
    std::os::unix::fs::chown(&fifo, Some(65534), Some(65534)).unwrap();
    for p in [&planted, &fifo] {
        let e = Output::create(p, &Options::default()).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::PermissionDenied, "{e}");
        let e = create_log(p, &Options::default()).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::PermissionDenied, "{e}");
    }
    assert_eq!(std::fs::read(&planted).unwrap(), b"nobody's");
    assert_eq!(std::fs::metadata(&planted).unwrap().uid(), 65534);
    let mine = d.join("mine");
    Output::create(&mine, &Options::default())
        .unwrap()
        .commit()
        .unwrap();
    let mode = std::fs::metadata(&mine).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn a_fifo_without_reader_does_not_block() {
    let d = tmpdir("fifo");
    let p = d.join("fifo");
    nix::unistd::mkfifo(&p, Mode::from_bits_truncate(0o600)).unwrap();
    let e = Output::create(&p, &Options::default()).unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::WouldBlock, "{e}");
    let opts = Options {
        keep_waiting: Some(|| false),
        ..Options::default()
    };
    let e = create_log(&p, &opts).unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::Interrupted, "{e}");
    let _ = std::fs::remove_dir_all(&d);
}
