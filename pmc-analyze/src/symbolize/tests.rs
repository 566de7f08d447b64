use super::*;
use pmc_log::record::{Exit, Fork, Map, Record};

fn map(pid: i32, start: u64, path: &str) -> Record<'static> {
    Record::Map(Map {
        time: 0,
        pid,
        start,
        len: 0x1000,
        pgoff: 0,
        build_id: Vec::new().into(),
        path: path.to_string().into(),
    })
}

/// A fork shares the parent's table until one side changes it; an exit drops the child.
#[test]
fn forks_copy_on_write_and_exits_free() {
    let mut s = Symbolizer::new(SymbolizeOptions {
        kernel: KernelSymbols::Disabled,
        ..SymbolizeOptions::default()
    });
    s.observe(&map(1, 0x1000, "/nonexistent/a"));
    s.observe(&Record::Fork(Fork {
        time: 0,
        parent_pid: 1,
        parent_tid: 1,
        child_pid: 2,
        child_tid: 2,
    }));
    assert!(Arc::ptr_eq(&s.procs[&1].maps, &s.procs[&2].maps), "shared");
    s.observe(&map(2, 0x9000, "/nonexistent/b"));
    assert!(!Arc::ptr_eq(&s.procs[&1].maps, &s.procs[&2].maps), "copied");
    assert!(s.mapping_at(2, 0x1004, false, false).is_some());
    assert!(s.mapping_at(2, 0x9004, false, false).is_some());
    assert!(
        s.mapping_at(1, 0x9004, false, false).is_none(),
        "parent unchanged"
    );
    s.observe(&Record::Exit(Exit {
        time: 1,
        pid: 2,
        tid: 2,
    }));
    assert!(!s.procs.contains_key(&2));
    assert!(s.mapping_at(1, 0x1004, false, false).is_some());
}
