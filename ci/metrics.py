#!/usr/bin/env python3
"""Shape metrics of the workspace (issue 12's before/after numbers).

    python3 ci/metrics.py [--json]

Prints, per library crate:
  - functions of 100 lines or more in src/ (non-test code: `#[cfg(test)]`
    modules and `tests.rs`/`*_tests.rs` files are left out);
  - `cfg(target_os` sites in src/ outside `sys/` directories;
  - public items reachable from the crate root, from rustdoc's JSON
    (`paths` entries of the local crate; needs nightly, skipped without it);
and the dependency tree of a user of the facade, with its default features
and without them (`cargo tree -p pmc -e normal [--no-default-features]`).
"""
import json, os, re, subprocess, sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LIBS = ["pmc-core", "pmc-process", "pmc-log", "pmc-linux", "pmc-freebsd", "pmc-unsupported", "pmc-unwind",
        "pmc-analyze", "pmc-events", "pmc", "pmc-selftest", "pmc-filemap", "pmcstat"]

FN_RE = re.compile(r"^\s*(?:pub(?:\([^)]*\))?\s+)?(?:const\s+)?(?:async\s+)?(?:unsafe\s+)?(?:extern\s+\"C\"\s+)?fn\s+([A-Za-z_][A-Za-z0-9_]*)")

def strip(src):
    """Blank out comments, strings and char literals, keeping line structure."""
    out, i, n = [], 0, len(src)
    while i < n:
        c = src[i]
        if src.startswith("//", i):
            j = src.find("\n", i)
            j = n if j < 0 else j
            i = j
            continue
        if src.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if src.startswith("/*", j): depth += 1; j += 2
                elif src.startswith("*/", j): depth -= 1; j += 2
                else: j += 1
            out.append("\n" * src.count("\n", i, j)); i = j
            continue
        m = re.match(r'b?r(#*)"', src[i:i+10])
        if m and (i == 0 or not (src[i-1].isalnum() or src[i-1] == "_")):
            hashes = m.group(1)
            end = src.find('"' + hashes, i + len(m.group(0)))
            end = n if end < 0 else end + 1 + len(hashes)
            out.append("\n" * src.count("\n", i, end)); i = end
            continue
        if c == '"' or (c == 'b' and src.startswith('b"', i)):
            j = i + (2 if c == 'b' else 1)
            while j < n and src[j] != '"':
                j += 2 if src[j] == "\\" else 1
            out.append("\n" * src.count("\n", i, j + 1)); i = j + 1
            continue
        if c == "'":
            m = re.match(r"'(\\.|\\u\{[0-9a-fA-F]+\}|\\x..|[^\\'])'", src[i:i+12])
            if m:
                i += len(m.group(0)); continue
        out.append(c); i += 1
    return "".join(out)

def long_fns(path):
    src = strip(open(path, encoding="utf-8").read())
    lines = src.split("\n")
    res, depth, test_depth = [], 0, None
    pending_test = False
    i = 0
    # line-based scan with brace depth
    starts = []  # (name, start line, depth at start)
    for ln, line in enumerate(lines, 1):
        if re.match(r"\s*#\[cfg\(test\)\]", line):
            pending_test = True
        m = FN_RE.match(line)
        if m and test_depth is None:
            starts.append((m.group(1), ln, depth))
        if pending_test and re.match(r"\s*(pub(\([^)]*\))?\s+)?mod\s+\w+\s*\{", line):
            test_depth = depth
            pending_test = False
        elif pending_test and line.strip() and not line.strip().startswith("#"):
            pending_test = False
        for ch in line:
            if ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
                if test_depth is not None and depth == test_depth:
                    test_depth = None
                while starts and depth == starts[-1][2] and ch == "}":
                    name, s, _ = starts.pop()
                    if ln - s + 1 >= 100:
                        res.append((name, s, ln - s + 1))
                    break
        # a fn declaration without a body (trait method) ends with ';'
        if starts and starts[-1][1] == ln and line.rstrip().endswith(";") and "{" not in line:
            starts.pop()
    return res

def rs_files(crate):
    src = os.path.join(ROOT, crate, "src")
    for d, _, fs in os.walk(src):
        for f in fs:
            if f.endswith(".rs") and f != "tests.rs" and not f.endswith("_tests.rs"):
                yield os.path.join(d, f)

def cfg_sites(path):
    rel = os.path.relpath(path, ROOT)
    if "/sys/" in rel:
        return 0
    return sum(1 for l in strip(open(path, encoding="utf-8").read()).split("\n") if "cfg(target_os" in l or "cfg!(target_os" in l)

def public_items(crate):
    lib = crate.replace("-", "_")
    target = os.environ.get("METRICS_TARGET_DIR", os.path.join(ROOT, "target", "metrics"))
    try:
        subprocess.run(["cargo", "+nightly", "rustdoc", "-q", "-p", crate, "--lib", "--target-dir", target,
                        "--", "-Z", "unstable-options", "--output-format", "json"],
                       cwd=ROOT, check=True, capture_output=True)
    except Exception:
        return None
    doc = json.load(open(os.path.join(target, "doc", lib + ".json")))
    return sum(1 for p in doc["paths"].values() if p.get("crate_id") == 0)

def main():
    as_json = "--json" in sys.argv
    rows, total_long = {}, []
    for c in LIBS:
        if not os.path.isdir(os.path.join(ROOT, c, "src")):
            continue
        longs, cfgs = [], 0
        for f in sorted(rs_files(c)):
            for name, s, n in long_fns(f):
                longs.append((os.path.relpath(f, ROOT), name, s, n))
            cfgs += cfg_sites(f)
        rows[c] = {"fns_ge_100_lines": len(longs), "long_fns": longs, "cfg_target_os_outside_sys": cfgs,
                   "public_items": None if c == "pmcstat" else public_items(c)}
    def tree(*extra):
        out = subprocess.run(["cargo", "tree", "-q", "-p", "pmc", "-e", "normal", "--prefix", "none", *extra],
                             cwd=ROOT, capture_output=True, text=True).stdout
        return sorted({l.replace(" (*)", "").split(" (")[0] for l in out.splitlines() if l.strip()})
    deps = tree()
    lean = tree("--no-default-features")
    if as_json:
        json.dump({"crates": rows, "counting_user_deps": deps, "counting_user_deps_no_default": lean},
                  sys.stdout, indent=1)
        return
    print(f"{'crate':<12} {'fns>=100':>8} {'cfg(os) outside sys':>20} {'public items':>13}")
    for c, r in rows.items():
        pi = "-" if r["public_items"] is None else r["public_items"]
        print(f"{c:<12} {r['fns_ge_100_lines']:>8} {r['cfg_target_os_outside_sys']:>20} {pi:>13}")
    print(f"total fns>=100 lines: {sum(r['fns_ge_100_lines'] for r in rows.values())}")
    for c, r in rows.items():
        for f, name, s, n in r["long_fns"]:
            print(f"  {n:4} lines  {f}:{s} {name}")
    print(f"a user of `pmc` with default features: {len(deps)} crates")
    print("  " + ", ".join(deps))
    print(f"a counting-only user (`default-features = false`): {len(lean)} crates")
    print("  " + ", ".join(lean))

if __name__ == "__main__":
    main()
