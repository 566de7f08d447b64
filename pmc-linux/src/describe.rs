//! `perf_event_attr` field by field, as `perf stat -vv` prints it.

use perf_event_open_sys::bindings as b;
use perf_event_open_sys::bindings::perf_event_attr;
use pmc_core::NativeField;

fn names(bits: u64, table: &[(u64, &str)]) -> String {
    let mut parts: Vec<String> = table
        .iter()
        .filter(|(bit, _)| bits & bit != 0)
        .map(|(_, n)| (*n).to_owned())
        .collect();
    let known: u64 = table.iter().map(|(b, _)| b).fold(0, |a, b| a | b);
    if bits & !known != 0 {
        parts.push(format!("{:#x}", bits & !known));
    }
    parts.join("|")
}

/// Every non-zero field of `attr`, by its C name.
pub fn attr_fields(attr: &perf_event_attr) -> Vec<NativeField> {
    let mut v = Vec::new();
    let mut push = |name: &str, value: String| {
        v.push(NativeField {
            name: name.to_owned(),
            value,
        })
    };
    push("type", attr.type_.to_string());
    push("size", attr.size.to_string());
    if attr.config != 0 {
        push("config", format!("{:#x}", attr.config));
    }
    let (period, c1, c2) = crate::sys::attr_unions(attr);
    if period != 0 {
        push(
            if attr.freq() != 0 {
                "sample_freq"
            } else {
                "sample_period"
            },
            period.to_string(),
        );
    }
    if attr.sample_type != 0 {
        push("sample_type", sample_type_names(attr.sample_type));
    }
    if attr.read_format != 0 {
        push("read_format", read_format_names(attr.read_format));
    }
    for (name, val) in flag_bits(attr) {
        if val != 0 {
            push(name, val.to_string());
        }
    }
    if c1 != 0 {
        push("config1", format!("{c1:#x}"));
    }
    if c2 != 0 {
        push("config2", format!("{c2:#x}"));
    }
    v
}

/// `sample_type`'s `PERF_SAMPLE_*` bits by name.
fn sample_type_names(bits: u64) -> String {
    names(
        bits,
        &[
            (b::PERF_SAMPLE_IP.into(), "IP"),
            (b::PERF_SAMPLE_TID.into(), "TID"),
            (b::PERF_SAMPLE_TIME.into(), "TIME"),
            (b::PERF_SAMPLE_ADDR.into(), "ADDR"),
            (b::PERF_SAMPLE_READ.into(), "READ"),
            (b::PERF_SAMPLE_CALLCHAIN.into(), "CALLCHAIN"),
            (b::PERF_SAMPLE_ID.into(), "ID"),
            (b::PERF_SAMPLE_CPU.into(), "CPU"),
            (b::PERF_SAMPLE_PERIOD.into(), "PERIOD"),
            (b::PERF_SAMPLE_STREAM_ID.into(), "STREAM_ID"),
            (b::PERF_SAMPLE_RAW.into(), "RAW"),
            (b::PERF_SAMPLE_IDENTIFIER.into(), "IDENTIFIER"),
        ],
    )
}

/// `read_format`'s `PERF_FORMAT_*` bits by name.
fn read_format_names(bits: u64) -> String {
    names(
        bits,
        &[
            (
                b::PERF_FORMAT_TOTAL_TIME_ENABLED.into(),
                "TOTAL_TIME_ENABLED",
            ),
            (
                b::PERF_FORMAT_TOTAL_TIME_RUNNING.into(),
                "TOTAL_TIME_RUNNING",
            ),
            (b::PERF_FORMAT_ID.into(), "ID"),
            (b::PERF_FORMAT_GROUP.into(), "GROUP"),
            (b::PERF_FORMAT_LOST.into(), "LOST"),
        ],
    )
}

/// The single-bit flags of `attr`, by C name, in the order printed: every
/// flag of `perf_event_attr` (as `perf stat -vv` prints them), so that what
/// was opened is read whole. `inherit` alone would hide that a PMC of the
/// process alone is inherited by its threads only (`inherit_thread`).
fn flag_bits(attr: &perf_event_attr) -> [(&'static str, u64); 37] {
    [
        ("disabled", attr.disabled()),
        ("inherit", attr.inherit()),
        ("pinned", attr.pinned()),
        ("exclusive", attr.exclusive()),
        ("exclude_user", attr.exclude_user()),
        ("exclude_kernel", attr.exclude_kernel()),
        ("exclude_hv", attr.exclude_hv()),
        ("exclude_idle", attr.exclude_idle()),
        ("mmap", attr.mmap()),
        ("comm", attr.comm()),
        ("freq", attr.freq()),
        ("inherit_stat", attr.inherit_stat()),
        ("enable_on_exec", attr.enable_on_exec()),
        ("task", attr.task()),
        ("precise_ip", attr.precise_ip()),
        ("sample_id_all", attr.sample_id_all()),
        ("exclude_host", attr.exclude_host()),
        ("exclude_guest", attr.exclude_guest()),
        ("watermark", attr.watermark()),
        ("mmap_data", attr.mmap_data()),
        ("exclude_callchain_kernel", attr.exclude_callchain_kernel()),
        ("exclude_callchain_user", attr.exclude_callchain_user()),
        ("mmap2", attr.mmap2()),
        ("comm_exec", attr.comm_exec()),
        ("use_clockid", attr.use_clockid()),
        ("context_switch", attr.context_switch()),
        ("write_backward", attr.write_backward()),
        ("namespaces", attr.namespaces()),
        ("ksymbol", attr.ksymbol()),
        ("bpf_event", attr.bpf_event()),
        ("aux_output", attr.aux_output()),
        ("cgroup", attr.cgroup()),
        ("text_poke", attr.text_poke()),
        ("build_id", attr.build_id()),
        ("inherit_thread", attr.inherit_thread()),
        ("remove_on_exec", attr.remove_on_exec()),
        ("sigtrap", attr.sigtrap()),
    ]
}
