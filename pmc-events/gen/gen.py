#!/usr/bin/env python3
"""Generates pmc-events/src/generated.rs from the Linux kernel's pmu-events JSON.

Usage: gen.py ARCH_DIR [OUT]
  ARCH_DIR is tools/perf/pmu-events/arch of a kernel source tree (see fetch.sh,
  which takes it from Debian's linux-source-6.12 package).

Stdlib only. The output is deterministic: same input, same bytes.
Licensing (see SOURCES.md): Intel descriptions are kept (Intel perfmon data,
BSD-3-Clause); AMD and Arm descriptions are GPL-2.0 text in the kernel tree
and are NOT copied: only event names and encodings (facts) are.
"""
import glob
import json
import os
import re
import struct
import sys

# (table name, arch dir, kind, keep descriptions)
TABLES = [
    ("skylake", "x86/skylake", "intel", True),
    ("icelake", "x86/icelake", "intel", True),
    ("sapphirerapids", "x86/sapphirerapids", "intel", True),
    ("alderlake", "x86/alderlake", "intel", True),
    ("amdzen2", "x86/amdzen2", "amd", False),
    ("amdzen3", "x86/amdzen3", "amd", False),
    ("amdzen4", "x86/amdzen4", "amd", False),
    ("cortex-a57-a72", "arm64/arm/cortex-a57-a72", "arm", False),
    ("cortex-a76", "arm64/arm/cortex-a76", "arm", False),
    ("neoverse-n1", "arm64/arm/neoverse-n1", "arm", False),
    ("neoverse-v1", "arm64/arm/neoverse-v1", "arm", False),
    ("neoverse-n2-v2", "arm64/arm/neoverse-n2-v2", "arm", False),
    # Arm's architected common events (PMUv3), for any Arm core without a
    # table of its own (QEMU's -cpu max, unknown MIDRs).
    ("armv8-common", "arm64/common-and-microarch.json", "arm", False),
    # The CPUs FreeBSD servers and desktops run that the first tables missed
    # (pmc_intel_initialize() and pmc_amd_initialize() support them all).
    # Appended, so that the earlier tables keep their indices.
    ("skylakex", "x86/skylakex", "intel", True),
    ("cascadelakex", "x86/cascadelakex", "intel", True),
    ("icelakex", "x86/icelakex", "intel", True),
    ("haswell", "x86/haswell", "intel", True),
    ("haswellx", "x86/haswellx", "intel", True),
    ("broadwell", "x86/broadwell", "intel", True),
    ("broadwellx", "x86/broadwellx", "intel", True),
    ("broadwellde", "x86/broadwellde", "intel", True),
    ("tigerlake", "x86/tigerlake", "intel", True),
    ("rocketlake", "x86/rocketlake", "intel", True),
    ("meteorlake", "x86/meteorlake", "intel", True),
    ("emeraldrapids", "x86/emeraldrapids", "intel", True),
    ("graniterapids", "x86/graniterapids", "intel", True),
    ("amdzen1", "x86/amdzen1", "amd", False),
    ("amdzen5", "x86/amdzen5", "amd", False),
    # The rest of FreeBSD's pmu-events mapfile (lib/libpmc/pmu-events/arch/x86
    # and CheriBSD's arm64 one, freebsd-audit-3 section 4): older servers,
    # Atom and pre-Haswell clients, and the Arm cores FreeBSD/arm64 runs on.
    # FreeBSD's "tremontx" is the kernel's snowridgex (both Snow Ridge,
    # GenuineIntel-6-86). Appended, so the earlier tables keep their indices.
    ("ivytown", "x86/ivytown", "intel", True),
    ("jaketown", "x86/jaketown", "intel", True),
    ("knightslanding", "x86/knightslanding", "intel", True),
    ("snowridgex", "x86/snowridgex", "intel", True),
    ("nehalemex", "x86/nehalemex", "intel", True),
    ("westmereex", "x86/westmereex", "intel", True),
    ("nehalemep", "x86/nehalemep", "intel", True),
    ("westmereep-dp", "x86/westmereep-dp", "intel", True),
    ("westmereep-sp", "x86/westmereep-sp", "intel", True),
    ("sandybridge", "x86/sandybridge", "intel", True),
    ("ivybridge", "x86/ivybridge", "intel", True),
    ("bonnell", "x86/bonnell", "intel", True),
    ("silvermont", "x86/silvermont", "intel", True),
    ("goldmont", "x86/goldmont", "intel", True),
    ("goldmontplus", "x86/goldmontplus", "intel", True),
    ("elkhartlake", "x86/elkhartlake", "intel", True),
    ("alderlaken", "x86/alderlaken", "intel", True),
    ("cortex-a53", "arm64/arm/cortex-a53", "arm", False),
    ("cortex-a55", "arm64/arm/cortex-a55", "arm", False),
    ("cortex-a35", "arm64/arm/cortex-a35", "arm", False),
    ("cortex-a73", "arm64/arm/cortex-a73", "arm", False),
    ("cortex-a75", "arm64/arm/cortex-a75", "arm", False),
    ("cortex-a77", "arm64/arm/cortex-a77", "arm", False),
    ("cortex-a78", "arm64/arm/cortex-a78", "arm", False),
    ("cortex-x1", "arm64/arm/cortex-x1", "arm", False),
    ("cortex-x2", "arm64/arm/cortex-x2", "arm", False),
    ("cortex-a510", "arm64/arm/cortex-a510", "arm", False),
    ("cortex-a710", "arm64/arm/cortex-a710", "arm", False),
    ("cortex-a65-e1", "arm64/arm/cortex-a65-e1", "arm", False),
    ("thunderx2", "arm64/cavium/thunderx2", "arm", False),
    ("a64fx", "arm64/fujitsu/a64fx", "arm", False),
    ("hip08", "arm64/hisilicon/hip08", "arm", False),
    ("emag", "arm64/ampere/emag", "arm", False),
]

# Rows of FreeBSD's x86 mapfile the kernel's lacks (lib/libpmc/pmu-events/arch/
# x86/mapfile.csv, freebsd-audit-3 section 4: "HygonGenuine-24 -> amdzen1"):
# Hygon's family 0x18 (Dhyana, a Zen 1 derivative) takes amdzen1's table there.
# (vendor 1 = AMD/Hygon, family, table dir) for every model and stepping.
EXTRA_X86 = [(1, 24, "amdzen1")]

FLAG_EDGE, FLAG_INV, FLAG_ANY = 1, 2, 4
# MSRs whose value goes to config1 (perf's `ldlat`/`frontend` formats).
CONFIG1_MSRS = {"0x3f6": 8, "0x3f7": 16}  # flag bit telling which


def num(s, default=0):
    if s is None:
        return default
    s = str(s).strip()
    return int(s, 16) if s.lower().startswith("0x") else int(s)


def short(desc):
    d = " ".join((desc or "").split())
    if len(d) > 160:
        cut = d.rfind(" ", 0, 157)
        d = d[: cut if cut > 80 else 157] + "..."
    return d


def load(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def arm_std(arch):
    std = {}
    for f in ("arm64/common-and-microarch.json", "arm64/recommended.json"):
        for e in load(os.path.join(arch, f)):
            if "EventName" in e and "EventCode" in e:
                std.setdefault(e["EventName"], e)
    return std


def load_corrections():
    """The kernel JSON's known-stale encodings (corrections.json): each names the
    value the kernel's file has, so that a newer kernel that fixed it (or changed it
    otherwise) fails generation here, for a person to review, instead of being
    overwritten silently."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corrections.json")
    return {(c["table"], c["event"].lower()): c for c in load(path)}


def events_of(tname, arch, rel, kind, keep_desc, std, skipped, corrections, applied):
    path = os.path.join(arch, rel)
    files = [path] if path.endswith(".json") else sorted(glob.glob(path + "/*.json"))
    out = {}
    for f in files:
        data = load(f)
        if not isinstance(data, list):
            continue
        for e in data:
            if "ArchStdEvent" in e:
                base = std.get(e["ArchStdEvent"])
                if base is None:
                    skipped["no ArchStdEvent"] = skipped.get("no ArchStdEvent", 0) + 1
                    continue
                e = dict(base, **e)
                e["EventName"] = e["ArchStdEvent"]
            name = e.get("EventName")
            if not name or "MetricExpr" in e:
                continue
            fix = corrections.get((tname, name.lower()))
            if fix is not None and (tname, name.lower()) not in applied:
                have = str(e.get(fix["field"]))
                if num(have) != num(fix["kernel"]):
                    raise SystemExit(
                        f"corrections.json: {tname} {name} {fix['field']} is {have} in the kernel "
                        f"JSON, not {fix['kernel']}: review the correction (the kernel may have fixed it)")
                e = dict(e, **{fix["field"]: fix["corrected"]})
                applied.add((tname, name.lower()))
            if "EventCode" not in e:
                # Intel's fixed-counter events (INST_RETIRED.ANY, REF_TSC) have
                # no EventCode: perf encodes them as event=0 with the umask,
                # the kernel's fixed-counter pseudo-encoding.
                if kind != "intel" or "UMask" not in e:
                    continue
                e = dict(e, EventCode="0x00")
            unit = e.get("Unit")
            if unit is not None and unit != "cpu_core":
                skipped["uncore"] = skipped.get("uncore", 0) + 1
                continue
            if e.get("Deprecated") == "1":
                skipped["deprecated"] = skipped.get("deprecated", 0) + 1
                continue
            if "," in e["EventCode"]:
                skipped["offcore"] = skipped.get("offcore", 0) + 1
                continue
            flags = 0
            config1 = 0
            msr = str(e.get("MSRIndex", "0")).lower().replace(" ", "")
            if msr not in ("0", "0x0", "0x00"):
                if msr in CONFIG1_MSRS:
                    flags |= CONFIG1_MSRS[msr]
                    config1 = num(e.get("MSRValue"))
                else:
                    skipped["offcore"] = skipped.get("offcore", 0) + 1
                    continue
            code = num(e["EventCode"])
            umask = num(e.get("UMask"))
            cmask = num(e.get("CounterMask"))
            if num(e.get("EdgeDetect")):
                flags |= FLAG_EDGE
            if num(e.get("Invert")):
                flags |= FLAG_INV
            if num(e.get("AnyThread")):
                flags |= FLAG_ANY
            assert code <= 0xFFFF and umask <= 0xFF and cmask <= 0xFF, e
            assert config1 <= 0xFFFFFFFF, e
            desc = short(e.get("BriefDescription") or e.get("PublicDescription")) if keep_desc else ""
            key = name.lower()
            if key in out:
                continue
            out[key] = (name, desc, code, umask, cmask, flags, config1)
    return sorted(out.values(), key=lambda v: v[0].lower())


def x86_models(arch, chosen):
    rows = []
    with open(os.path.join(arch, "x86/mapfile.csv")) as f:
        for line in f:
            if line.startswith("#") or not line.strip() or line.startswith("Family"):
                continue
            cpuid, _ver, d, typ = line.strip().split(",")[:4]
            if typ != "core":
                continue
            rx = cpuid.replace("[[:xdigit:]]", "[0-9A-Fa-f]")
            dashes = re.sub(r"\[[^\]]*\]", "", rx).count("-")
            rows.append((re.compile(rx), dashes >= 3, d))
    found = {}
    for vendor, families in (("GenuineIntel", [6]), ("AuthenticAMD", [23, 25, 26])):
        for fam in families:
            for model in range(256):
                for step in range(16):
                    short_id = f"{vendor}-{fam}-{model:X}"
                    full = f"{short_id}-{step:X}"
                    for rx, has_step, d in rows:
                        if rx.fullmatch(full) or (not has_step and rx.fullmatch(short_id)):
                            if d in chosen:
                                k = (0 if vendor == "GenuineIntel" else 1, fam, model, chosen[d])
                                found[k] = found.get(k, 0) | (1 << step)
                            break
    for v, fam, d in EXTRA_X86:
        if d in chosen:
            for model in range(256):
                found.setdefault((v, fam, model, chosen[d]), 0xFFFF)
    ranges = []  # merge consecutive models with the same table and steppings
    for (v, fam, model, t), mask in sorted(found.items()):
        if ranges and tuple(ranges[-1][:2]) == (v, fam) and ranges[-1][3] == model - 1 \
                and tuple(ranges[-1][4:]) == (mask, t):
            ranges[-1][3] = model
        else:
            ranges.append([v, fam, model, model, mask, t])
    return ranges


def arm_parts(arch, chosen):
    out = []
    with open(os.path.join(arch, "arm64/mapfile.csv")) as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            midr, _v, d, typ = line.strip().split(",")[:4]
            if typ != "core" or d not in chosen:
                continue
            m = int(midr, 16)
            out.append(((m >> 24) & 0xFF, (m >> 4) & 0xFFF, chosen[d]))
    return sorted(set(out))


def rust_str(s):
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


# One event row of `EVENTS` (src/lib.rs, `EVENT_ROW`): name offset u32, name length u8,
# description offset u32, description length u16, code u16, umask u8, cmask u8, flags u8,
# config1 u32, little-endian. One byte-string literal instead of 7,000 struct expressions:
# rustc lexes it in a few milliseconds, where the struct array took about a third of a second
# of every build of this crate.
EVENT_ROW = 20


def event_rows(events):
    """The `EVENTS` static: one row per line of a byte-string literal."""
    o = [f"pub(crate) static EVENTS: &[u8; {len(events) * EVENT_ROW}] = b\"\\"]
    for (n, nl, d, dl, code, umask, cmask, flags, config1) in events:
        row = struct.pack("<IBIHHBBBI", n, nl, d, dl, code, umask, cmask, flags, config1)
        assert len(row) == EVENT_ROW
        o.append("    " + "".join(f"\\x{b:02x}" for b in row) + "\\")
    o.append('";')
    return o


def main():
    arch = sys.argv[1]
    out_path = sys.argv[2] if len(sys.argv) > 2 else os.path.join(
        os.path.dirname(__file__), "..", "src", "generated.rs")
    std = arm_std(arch)
    strings = []
    str_index = {}

    def intern(s):
        if s not in str_index:
            str_index[s] = sum(len(x) for x in strings)
            strings.append(s)
        return str_index[s]

    events, tables, skipped = [], [], {}
    corrections, applied = load_corrections(), set()
    for tname, rel, kind, keep in TABLES:
        evs = events_of(tname, arch, rel, kind, keep, std, skipped, corrections, applied)
        start = len(events)
        for (name, desc, code, umask, cmask, flags, config1) in evs:
            assert len(name) < 256 and len(desc) < 65536
            events.append((intern(name), len(name), intern(desc) if desc else 0, len(desc),
                           code, umask, cmask, flags, config1))
        tables.append((tname, rel, kind, start, len(events)))
    chosen = {rel.split("/", 1)[1]: i for i, (_, rel, _, _, _) in enumerate(tables) if rel.startswith("x86/")}
    chosen_arm = {rel.split("/", 1)[1]: i for i, (_, rel, _, _, _) in enumerate(tables)
                  if rel.startswith("arm64/") and not rel.endswith(".json")}
    unused = sorted(set(corrections) - applied)
    if unused:
        raise SystemExit(f"corrections.json: no such event in the kernel JSON: {unused}")
    models = x86_models(arch, chosen)
    parts = arm_parts(arch, chosen_arm)
    blob = "".join(strings)
    assert blob.isascii()
    o = []
    w = o.append
    w("// @generated by pmc-events/gen/gen.py from the Linux kernel's")
    w("// tools/perf/pmu-events/arch JSON (see pmc-events/gen/SOURCES.md). Do not edit.")
    w("// Corrected (gen/corrections.json): " + ", ".join(f"{t} {corrections[(t, n)]['event']}"
                                                        for t, n in sorted(applied)))
    w("// Skipped while generating: " + ", ".join(f"{k}: {v}" for k, v in sorted(skipped.items())))
    w("")
    w("//! The generated event data: `STRINGS` (every name and description), `EVENTS` (one row")
    w("//! per event), `TABLES` (a CPU's slice of `EVENTS`), and the CPU maps `X86_MODELS`,")
    w("//! `ARM_PARTS` and `ARM_COMMON` that choose a table.")
    w("")
    w("use crate::{Kind, RawTable};")
    w("")
    w("/// Every name and description, concatenated (ASCII).")
    w(f"pub(crate) static STRINGS: &str = {rust_str(blob)};")
    w("")
    w(f"/// Every event, {EVENT_ROW} bytes each (`crate::EVENT_ROW`).")
    o.extend(event_rows(events))
    w("")
    kinds = {"intel": "Kind::IntelCore", "amd": "Kind::AmdZen", "arm": "Kind::ArmV8"}
    w(f"pub(crate) static TABLES: [RawTable; {len(tables)}] = [")
    for (tname, rel, kind, s, e) in tables:
        w(f"    RawTable {{ name: {rust_str(tname)}, source: {rust_str(rel)}, kind: {kinds[kind]}, start: {s}, end: {e} }},")
    w("];")
    w("")
    w("/// (vendor 0=Intel 1=AMD, family, first model, last model, stepping bit mask, table index):")
    w("/// for each model, the first row of perf's x86 mapfile.csv that matches it.")
    w(f"pub(crate) static X86_MODELS: [(u8, u8, u8, u8, u16, u8); {len(models)}] = [")
    for v, fam, lo, hi, mask, t in models:
        w(f"    ({v}, {fam}, {lo:#04x}, {hi:#04x}, {mask:#06x}, {t}),")
    w("];")
    w("")
    common = [i for i, t in enumerate(tables) if t[0] == "armv8-common"]
    assert len(common) == 1
    w("/// The index of the Arm architected events' table (any other Arm core's).")
    w(f"pub(crate) static ARM_COMMON: u8 = {common[0]};")
    w("")
    w("/// (MIDR implementer, MIDR part number, table index), from perf's arm64 mapfile.csv.")
    w(f"pub(crate) static ARM_PARTS: [(u8, u16, u8); {len(parts)}] = [")
    for (imp, part, t) in parts:
        w(f"    ({imp:#04x}, {part:#05x}, {t}),")
    w("];")
    w("")
    with open(out_path, "w", encoding="ascii") as f:
        f.write("\n".join(o))
    print(f"{len(events)} events in {len(tables)} tables, {len(blob)} string bytes, "
          f"{len(models)} x86 models, {len(parts)} Arm parts; skipped {skipped}", file=sys.stderr)


if __name__ == "__main__":
    main()
