//! Fuzz harnesses for the parsers outside pmc-log: the event-string parser
//! (pmc-core), the perf record parser over ring bytes (pmc-linux) and the
//! ELF/DWARF symbolizer (pmc-analyze). Shared by the cargo-fuzz targets in
//! `fuzz_targets/` and by the fixed-iteration run in
//! `tests/tests/e2e/fuzz_targets.rs` (included there with `#[path]`), so
//! `cargo test --workspace` exercises what the fuzzer runs.

use std::path::Path;
use std::sync::Arc;

/// Event strings: whatever parses prints (`Display`) a form that parses back
/// to an equal spec, and prints the same again; so does every event list
/// (perf's `-e a,{b,c}:u`).
pub fn event_spec(data: &[u8]) {
    let Ok(s) = std::str::from_utf8(data) else {
        return;
    };
    // What fails as a list fails as one event too (the list of one event is that event's
    // parse), so the spec is parsed again only for a list of several.
    let Ok(list) = s.parse::<pmc_core::EventList>() else {
        return;
    };
    let shown = list.to_string();
    let again: pmc_core::EventList = match shown.parse() {
        Ok(a) => a,
        Err(e) => panic!("{s:?} parsed as a list, but its display {shown:?} does not: {e}"),
    };
    assert_eq!(
        again, list,
        "{s:?} -> {shown:?} re-parses to a different list"
    );
    assert_eq!(
        again.to_string(),
        shown,
        "{s:?}: list display is not stable"
    );
    let spec = match list.items.as_slice() {
        [pmc_core::EventItem::Event(one)] => one.clone(),
        _ => match s.parse::<pmc_core::EventSpec>() {
            Ok(spec) => spec,
            Err(_) => return,
        },
    };
    let shown = spec.to_string();
    let again: pmc_core::EventSpec = match shown.parse() {
        Ok(a) => a,
        Err(e) => panic!("{s:?} parsed, but its display {shown:?} does not: {e}"),
    };
    assert_eq!(
        again, spec,
        "{s:?} -> {shown:?} re-parses to a different event"
    );
    assert_eq!(again.to_string(), shown, "{s:?}: display is not stable");
}

/// An in-memory ring: the data area holds the input, `data_head` is past it.
struct Mem {
    data: Vec<u8>,
    cells: pmc_linux::internals::ring::ControlCells,
}

impl pmc_linux::internals::ring::RingStorage for Mem {
    fn data_size(&self) -> usize {
        self.data.len()
    }
    fn load_head(&self) -> u64 {
        self.cells.load_head()
    }
    fn load_tail(&self) -> u64 {
        self.cells.tail.load(std::sync::atomic::Ordering::Relaxed)
    }
    fn store_tail(&mut self, tail: u64) {
        self.cells.store_tail(tail);
    }
    fn data(&self, offset: usize, len: usize) -> Option<&[u8]> {
        self.data.get(offset..offset.checked_add(len)?)
    }
}

/// Perf ring bytes: the first 17 input bytes are the layout (`sample_type`,
/// `read_format`, `sample_id_all`; `sample_regs_user` is derived from `sample_type`) and where the window starts (wrapping
/// records around the end of the area); the rest is what the kernel wrote.
/// Every record the ring reader lends is parsed; nothing may panic, and a
/// record that parses is fully formatted (every lazy view walked).
pub fn perf_ring(data: &[u8]) {
    use pmc_linux::internals::record::ParseConfig;
    use pmc_linux::internals::ring::RingReader;
    let Some((cfg, rest)) = data.split_first_chunk::<17>() else {
        return;
    };
    let config = ParseConfig {
        sample_type: u64::from_le_bytes(cfg[..8].try_into().unwrap_or_default()),
        read_format: u64::from_le_bytes(cfg[8..16].try_into().unwrap_or_default()),
        sample_id_all: cfg[16] & 1 != 0,
        // Which user registers PERF_SAMPLE_REGS_USER carries: derived from the same
        // bytes, so the corpus keeps its layout and every mask weight gets exercised.
        sample_regs_user: u64::from_le_bytes(cfg[..8].try_into().unwrap_or_default())
            .rotate_left(17),
    };
    // The records alone, without the ring.
    let _ = format!("{:?}", config.parse(rest));
    let size = rest.len().next_power_of_two().max(64);
    let start = u64::from(cfg[16] >> 1) * 8 % size as u64;
    let mut mem = Mem {
        data: vec![0; size],
        cells: pmc_linux::internals::ring::ControlCells::default(),
    };
    for (i, b) in rest.iter().enumerate() {
        mem.data[(start as usize + i) % size] = *b;
    }
    mem.cells
        .tail
        .store(start, std::sync::atomic::Ordering::Relaxed);
    mem.cells.head.store(
        start + rest.len() as u64,
        std::sync::atomic::Ordering::Relaxed,
    );
    let Ok(mut reader) = RingReader::new(mem) else {
        return;
    };
    let mut batch = reader.batch();
    let mut n = 0;
    while let Some(r) = batch.next_record() {
        n += 1;
        assert!(n <= rest.len() / 8 + 1, "more records than 8-byte headers");
        if let Ok(rec) = r {
            let _ = format!("{:?}", config.parse(rec.bytes));
        }
    }
}

/// ELF/DWARF objects: parsing hostile bytes never panics, and every lookup
/// on what parses (symbols, inlined frames, file:line, segments) returns.
pub fn elf_object(data: &[u8]) {
    let path = Path::new("/nonexistent/pmc-fuzz/object");
    for debug_info in [false, true] {
        let Ok(obj) = pmc_analyze::ElfObject::parse(path, Arc::from(data), debug_info) else {
            continue;
        };
        let mut probes = vec![0u64, 1, u64::MAX, 0x40_1000];
        if let Some((lo, hi)) = obj.svma_extent() {
            probes.extend([lo, hi, lo / 2 + hi / 2, hi.wrapping_sub(1)]);
        }
        probes.extend(obj.text_svma(4096));
        probes.push(obj.base_svma(4096));
        for s in obj.segments() {
            let _ = format!("{s:?}");
        }
        for off in [0u64, 4096, u64::MAX] {
            probes.extend(obj.file_offset_to_svma(off));
        }
        for a in probes {
            let _ = obj.symbol(a).map(|h| format!("{h:?}"));
            let _ = obj.inlined_at(a);
            let _ = obj.location(a);
        }
        let _ = (
            obj.build_id(),
            obj.interpreter(),
            obj.symbol_count(),
            obj.object_type(),
        );
        let _ = (obj.has_debug_info(), obj.debug_file());
    }
}
