//! The generator of libpmc's C headers, Rust ABI module and Python ABI module
//! from the one table, `libpmc/abi/headers.toml` (its comment says what each
//! item kind holds). Test code: `tests/header.rs` regenerates every output and
//! compares it with the committed file (`PMC_BLESS_HEADER=1` rewrites them).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use toml::{Table, Value};

/// Every generated file: its path under `libpmc/`, and its text.
pub struct Outputs {
    /// (path relative to `libpmc/`, contents), in a stable order.
    pub files: Vec<(String, String)>,
}

/// What C's preprocessor would make of a name the table uses as a value or
/// an array size: a number, or `PATH_MAX` (the reading system's).
#[derive(Clone, Debug)]
enum Dim {
    Num(i128),
    PathMax,
}

/// A struct field, parsed from `TYPE NAME[DIM]`.
struct Field {
    /// The C type without the name (`const char *`, `struct pmc_info`).
    ty: String,
    name: String,
    /// The array size as written (`None`: not an array; `Some("")`: a
    /// flexible array member).
    dim: Option<String>,
}

struct Gen {
    /// Numeric value of every define and enumerator seen so far.
    values: BTreeMap<String, i128>,
    /// C text per header.
    c: BTreeMap<String, String>,
    /// Rust items.
    rust: String,
    /// Rust name tables (`(value, name)` per enum).
    rust_names: String,
    /// Rust layout table entries.
    rust_layouts: String,
    /// Python items.
    py: String,
    /// Python function signatures.
    py_funcs: String,
    /// Anonymous unions, by tag: their C body, emitted where a field names them.
    anonymous: BTreeMap<String, String>,
}

fn s<'a>(t: &'a Table, key: &str) -> Option<&'a str> {
    t.get(key).and_then(Value::as_str)
}

fn b(t: &Table, key: &str) -> bool {
    t.get(key).and_then(Value::as_bool).unwrap_or(false)
}

fn int(t: &Table, key: &str) -> Result<i128, String> {
    t.get(key)
        .and_then(Value::as_integer)
        .map(i128::from)
        .ok_or_else(|| format!("no integer {key}"))
}

fn lines(text: &str) -> impl Iterator<Item = &str> {
    text.lines().map(str::trim).filter(|l| !l.is_empty())
}

/// A C integer literal (`0x1F`, `12`, `0xEEU`).
fn literal(v: &str) -> Option<i128> {
    let v = v.trim().trim_end_matches(['U', 'u', 'L', 'l']);
    if let Some(h) = v.strip_prefix("0x").or_else(|| v.strip_prefix("0X")) {
        i128::from_str_radix(h, 16).ok()
    } else {
        v.parse().ok()
    }
}

/// Splits `NAME REST`.
fn head(line: &str) -> (&str, &str) {
    match line.split_once(char::is_whitespace) {
        Some((a, r)) => (a, r.trim()),
        None => (line, ""),
    }
}

/// A quoted description at the end of an enum line.
fn quoted(rest: &str) -> (&str, Option<&str>) {
    match rest.find('"') {
        Some(i) => (rest[..i].trim(), Some(rest[i..].trim().trim_matches('"'))),
        None => (rest.trim(), None),
    }
}

fn parse_field(line: &str) -> Field {
    let line = line.trim().trim_end_matches(';');
    let (decl, dim) = match line.split_once('[') {
        Some((d, rest)) => (
            d.trim(),
            Some(rest.trim_end_matches(']').trim().to_string()),
        ),
        None => (line, None),
    };
    let (mut ty, mut name) = match decl.rsplit_once(char::is_whitespace) {
        Some((t, n)) => (t.trim().to_string(), n.trim().to_string()),
        None => (String::new(), decl.to_string()),
    };
    while let Some(rest) = name.strip_prefix('*') {
        ty.push_str(" *");
        name = rest.to_string();
    }
    let ty = ty
        .replace(" *", "*")
        .replace('*', " *")
        .replace("* *", "**");
    Field {
        ty: ty.trim().to_string(),
        name,
        dim,
    }
}

/// The Rust and ctypes spellings of a C type (a field's or a parameter's).
fn map_type(ty: &str) -> Result<(String, String), String> {
    let stars = ty.matches('*').count();
    let base = ty
        .replace('*', " ")
        .split_whitespace()
        .filter(|w| *w != "const")
        .collect::<Vec<_>>()
        .join(" ");
    let (r, p): (String, String) = match base.as_str() {
        "void" => ("c_void".into(), "None".into()),
        "char" => ("c_char".into(), "ctypes.c_char".into()),
        "int" => ("c_int".into(), "ctypes.c_int".into()),
        "unsigned int" => ("c_uint".into(), "ctypes.c_uint".into()),
        "uint8_t" => ("u8".into(), "ctypes.c_uint8".into()),
        "uint16_t" => ("u16".into(), "ctypes.c_uint16".into()),
        "uint32_t" => ("u32".into(), "ctypes.c_uint32".into()),
        "int32_t" => ("i32".into(), "ctypes.c_int32".into()),
        "uint64_t" => ("u64".into(), "ctypes.c_uint64".into()),
        "pid_t" => ("libc::pid_t".into(), "ctypes.c_int".into()),
        "off_t" => ("libc::off_t".into(), "ctypes.c_int64".into()),
        "size_t" | "uintptr_t" | "uintfptr_t" => ("usize".into(), "ctypes.c_size_t".into()),
        "pmc_id_t" | "pmc_value_t" | "pmc_measure_t" => (base.clone(), base.clone()),
        "struct timespec" => ("timespec".into(), "timespec".into()),
        b if b.starts_with("enum ") => ("u32".into(), "ctypes.c_uint".into()),
        b if b.starts_with("struct ") || b.starts_with("union ") => {
            let tag = b.split_whitespace().nth(1).unwrap_or("").to_string();
            (tag.clone(), tag)
        }
        other => return Err(format!("no Rust/ctypes spelling for C type {other:?}")),
    };
    if stars == 0 {
        return Ok((r, p));
    }
    let konst = ty.trim_start().starts_with("const");
    let mut rust = r;
    for i in 0..stars {
        rust = if i == 0 && konst {
            format!("*const {rust}")
        } else {
            format!("*mut {rust}")
        };
    }
    // ctypes: char * is c_char_p, void * c_void_p; then POINTER per level.
    let (mut py, rest) = match base.as_str() {
        "char" => ("ctypes.c_char_p".to_string(), stars - 1),
        "void" => ("ctypes.c_void_p".to_string(), stars - 1),
        _ => (p, stars),
    };
    for _ in 0..rest {
        py = format!("ctypes.POINTER({py})");
    }
    Ok((rust, py))
}

impl Gen {
    fn new() -> Gen {
        let mut values = BTreeMap::new();
        values.insert("MAXCOMLEN".to_string(), 19);
        values.insert("_PMCLOG_PATH_MAX".to_string(), 1024);
        Gen {
            values,
            c: BTreeMap::new(),
            rust: String::new(),
            rust_names: String::new(),
            rust_layouts: String::new(),
            py: String::new(),
            py_funcs: String::new(),
            anonymous: BTreeMap::new(),
        }
    }

    fn c(&mut self, header: &str) -> &mut String {
        self.c.entry(header.to_string()).or_default()
    }

    /// The value of `NAME`, `NUMBER` or `A + B` (dimensions).
    fn dim(&self, text: &str) -> Result<Dim, String> {
        let mut total = 0i128;
        for term in text.split('+') {
            let term = term.trim();
            if term == "PATH_MAX" {
                return Ok(Dim::PathMax);
            }
            total += literal(term)
                .or_else(|| self.values.get(term).copied())
                .ok_or_else(|| format!("unknown value {term:?}"))?;
        }
        Ok(Dim::Num(total))
    }

    fn value(&mut self, name: &str, v: i128) {
        self.values.insert(name.to_string(), v);
    }

    fn define(&mut self, t: &Table) -> Result<(), String> {
        let header = s(t, "header").ok_or("define without header")?;
        let rust = s(t, "rust").unwrap_or("u32");
        for line in lines(s(t, "lines").unwrap_or("")) {
            let (name, rest) = head(line);
            let (ctext, num) = match rest.split_once(" = ") {
                Some((c, n)) => (c.trim(), Some(literal(n).ok_or(format!("{name}: {n}"))?)),
                None => (rest, None),
            };
            writeln!(self.c(header), "#define {name} {ctext}").ok();
            if rust == "none" {
                continue;
            }
            let v = match num {
                Some(v) => v,
                None => literal(ctext)
                    .or_else(|| self.values.get(ctext).copied())
                    .ok_or_else(|| format!("{name}: no value for {ctext:?}"))?,
            };
            self.value(name, v);
            let shown = if v < 0 {
                v.to_string()
            } else {
                format!("{v:#x}")
            };
            writeln!(self.rust, "pub const {name}: {rust} = {shown};").ok();
            writeln!(self.py, "{name} = {shown}").ok();
        }
        self.c(header).push('\n');
        Ok(())
    }

    fn enumeration(&mut self, t: &Table) -> Result<(), String> {
        let header = s(t, "header").ok_or("enum without header")?;
        let tag = s(t, "tag").ok_or("enum without tag")?;
        let prefix = s(t, "prefix").unwrap_or("");
        let bits = b(t, "bits");
        let mut items = Vec::new();
        for (list, extra) in [(s(t, "items"), false), (s(t, "extra"), true)] {
            for line in lines(list.unwrap_or("")) {
                let (suffix, rest) = head(line);
                let (vtext, desc) = quoted(rest);
                let v = literal(vtext).ok_or_else(|| format!("{tag}: {line}"))?;
                items.push((
                    suffix.to_string(),
                    vtext.to_string(),
                    v,
                    desc.map(str::to_string),
                    extra,
                ));
            }
        }
        let mut c = String::new();
        if let (Some(xm), Some(xi)) = (s(t, "xmacro"), s(t, "xitem")) {
            let args = s(t, "xargs").unwrap_or("s");
            let body: Vec<String> = items
                .iter()
                .filter(|i| !i.4)
                .map(|(suffix, vtext, _, desc, _)| {
                    let parts: Vec<String> = args
                        .chars()
                        .map(|a| match a {
                            's' => suffix.clone(),
                            'v' => vtext.clone(),
                            _ => format!("\"{}\"", desc.clone().unwrap_or_default()),
                        })
                        .collect();
                    format!("\t{xi}({})", parts.join(", "))
                })
                .collect();
            writeln!(c, "#define {xm} \\\n{}\n", body.join(" \\\n")).ok();
        }
        writeln!(c, "enum {tag} {{").ok();
        for (suffix, vtext, _, _, _) in &items {
            let value = if bits {
                format!("(1 << {vtext})")
            } else {
                vtext.clone()
            };
            writeln!(c, "\t{prefix}{suffix} = {value},").ok();
        }
        c.push_str("};\n\n");
        for (key, which) in [("first", "FIRST"), ("last", "LAST")] {
            if let Some(n) = s(t, key) {
                writeln!(c, "#define {prefix}{which} {prefix}{n}").ok();
            }
        }
        if s(t, "first").is_some() {
            c.push('\n');
        }
        self.c(header).push_str(&c);
        let mut names = String::new();
        for (suffix, _, v, _, _) in &items {
            let v = if bits { 1i128 << v } else { *v };
            let name = format!("{prefix}{suffix}");
            self.value(&name, v);
            writeln!(self.rust, "pub const {name}: u32 = {v:#x};").ok();
            writeln!(self.py, "{name} = {v:#x}").ok();
            writeln!(names, "    ({v:#x}, c\"{suffix}\"),").ok();
        }
        for (key, which) in [("first", "FIRST"), ("last", "LAST")] {
            if let Some(n) = s(t, key) {
                let v = self.values[&format!("{prefix}{n}")];
                self.value(&format!("{prefix}{which}"), v);
                writeln!(self.rust, "pub const {prefix}{which}: u32 = {v:#x};").ok();
                writeln!(self.py, "{prefix}{which} = {v:#x}").ok();
            }
        }
        writeln!(
            self.rust_names,
            "/// `enum {tag}`'s names, as `pmc_name_of_*` gives them: each enumerator without \
             `{prefix}`, in the header's order.\npub static NAMES_{}: &[(u32, &CStr)] = &[\n{names}];\n",
            tag.to_ascii_uppercase()
        )
        .ok();
        Ok(())
    }

    fn events(&mut self, t: &Table) -> Result<(), String> {
        let header = s(t, "header").ok_or("events without header")?;
        let blocks = t
            .get("block")
            .and_then(Value::as_array)
            .ok_or("events without blocks")?;
        let mut c = String::from("enum pmc_event {\n");
        let mut defs = String::new();
        let mut names = String::new();
        for blk in blocks {
            let blk = blk.as_table().ok_or("block is not a table")?;
            let class = s(blk, "class").ok_or("block without class")?;
            let start = int(blk, "start")?;
            if b(blk, "first_only") {
                writeln!(defs, "#define PMC_EV_{class}_FIRST {start:#x}").ok();
                self.value(&format!("PMC_EV_{class}_FIRST"), start);
                writeln!(
                    self.rust,
                    "pub const PMC_EV_{class}_FIRST: u32 = {start:#x};"
                )
                .ok();
                writeln!(self.py, "PMC_EV_{class}_FIRST = {start:#x}").ok();
                continue;
            }
            let list: Vec<String> = if let Some(p) = s(blk, "pattern") {
                let count = int(blk, "count")?;
                (0..count)
                    .map(|i| {
                        assert_eq!(p, "EVENT_%02XH", "the one pattern pmc_events.h uses");
                        format!("EVENT_{i:02X}H")
                    })
                    .collect()
            } else {
                s(blk, "names")
                    .unwrap_or("")
                    .split_whitespace()
                    .map(str::to_string)
                    .collect()
            };
            writeln!(c, "\tPMC_EV_{class}__BLOCK_START = {:#x},", start - 1).ok();
            for (i, n) in list.iter().enumerate() {
                let v = start + i as i128;
                let name = format!("PMC_EV_{class}_{n}");
                writeln!(c, "\t{name} = {v:#x},").ok();
                self.value(&name, v);
                writeln!(self.rust, "pub const {name}: u32 = {v:#x};").ok();
                writeln!(self.py, "{name} = {v:#x}").ok();
                writeln!(names, "    ({v:#x}, c\"{n}\"),").ok();
            }
            let (first, last) = (&list[0], &list[list.len() - 1]);
            writeln!(defs, "#define PMC_EV_{class}_FIRST PMC_EV_{class}_{first}").ok();
            writeln!(defs, "#define PMC_EV_{class}_LAST PMC_EV_{class}_{last}").ok();
            for (which, n) in [("FIRST", first), ("LAST", last)] {
                let v = self.values[&format!("PMC_EV_{class}_{n}")];
                self.value(&format!("PMC_EV_{class}_{which}"), v);
                writeln!(self.rust, "pub const PMC_EV_{class}_{which}: u32 = {v:#x};").ok();
                writeln!(self.py, "PMC_EV_{class}_{which} = {v:#x}").ok();
            }
        }
        c.push_str("};\n\n");
        c.push_str(&defs);
        for (key, which) in [("first", "FIRST"), ("last", "LAST")] {
            let n = s(t, key).ok_or("events without first/last")?;
            writeln!(c, "#define PMC_EVENT_{which} PMC_EV_{n}").ok();
            let v = self.values[&format!("PMC_EV_{n}")];
            writeln!(self.rust, "pub const PMC_EVENT_{which}: u32 = {v:#x};").ok();
            writeln!(self.py, "PMC_EVENT_{which} = {v:#x}").ok();
        }
        c.push('\n');
        self.c(header).push_str(&c);
        writeln!(
            self.rust_names,
            "/// `enum pmc_event`'s names, as FreeBSD's libpmc gives them (each event without \
             its class), by code.\npub static NAMES_PMC_EVENT: &[(u32, &CStr)] = &[\n{names}];\n"
        )
        .ok();
        Ok(())
    }

    fn typedef(&mut self, t: &Table) -> Result<(), String> {
        let header = s(t, "header").ok_or("typedef without header")?;
        writeln!(self.c(header), "{}\n", s(t, "c").unwrap_or("").trim()).ok();
        writeln!(self.rust, "{}", s(t, "rust").unwrap_or("")).ok();
        writeln!(self.py, "{}", s(t, "py").unwrap_or("")).ok();
        Ok(())
    }

    fn fields(&self, t: &Table) -> Vec<Field> {
        let mut out = Vec::new();
        for line in lines(s(t, "fields").unwrap_or("")) {
            if line == "PMCLOG_ENTRY_HEADER" {
                for (ty, name) in [
                    ("uint32_t", "pl_header"),
                    ("uint32_t", "pl_spare"),
                    ("uint64_t", "pl_tsc"),
                ] {
                    out.push(Field {
                        ty: ty.into(),
                        name: name.into(),
                        dim: None,
                    });
                }
            } else {
                out.push(parse_field(line));
            }
        }
        out
    }

    fn c_struct_body(&self, t: &Table) -> String {
        let mut body = String::new();
        for line in lines(s(t, "fields").unwrap_or("")) {
            if line == "PMCLOG_ENTRY_HEADER" {
                body.push_str("\tPMCLOG_ENTRY_HEADER\n");
                continue;
            }
            let f = parse_field(line);
            let anon =
                f.ty.strip_prefix("union ")
                    .and_then(|tag| self.anonymous.get(tag));
            let dim = f.dim.as_ref().map(|d| format!("[{d}]")).unwrap_or_default();
            match anon {
                Some(inner) => {
                    let inner = inner.replace('\n', "\n\t");
                    let inner = inner.trim_end_matches('\t');
                    writeln!(body, "\tunion {{\n\t{inner}\t}} {}{dim};", f.name).ok();
                }
                None => {
                    let sep = if f.ty.ends_with('*') { "" } else { " " };
                    writeln!(body, "\t{}{sep}{}{dim};", f.ty, f.name).ok();
                }
            }
        }
        body
    }

    fn rust_dim(&self, d: &str) -> Result<String, String> {
        if d.is_empty() {
            return Ok("0".into());
        }
        Ok(match self.dim(d)? {
            Dim::Num(n) => n.to_string(),
            Dim::PathMax => "PATH_MAX".into(),
        })
    }

    fn structure(&mut self, t: &Table) -> Result<(), String> {
        let header = s(t, "header").ok_or("struct without header")?;
        let tag = s(t, "tag").ok_or("struct without tag")?;
        let union = b(t, "union");
        let packed = b(t, "packed");
        let kw = if union { "union" } else { "struct" };
        let body = self.c_struct_body(t);
        if b(t, "anonymous") {
            self.anonymous.insert(tag.to_string(), body);
        } else {
            let attr = if packed { " __packed" } else { "" };
            writeln!(self.c(header), "{kw} {tag} {{\n{body}}}{attr};\n").ok();
        }
        // Rust.
        let cfg = match s(t, "arch") {
            Some("aarch64") => "#[cfg(target_arch = \"aarch64\")]\n",
            Some("x86") => "#[cfg(not(target_arch = \"aarch64\"))]\n",
            _ => "",
        };
        let doc = s(t, "doc")
            .map(str::to_string)
            .unwrap_or_else(|| format!("`{kw} {tag}` of `<{header}>`."));
        let repr = if packed { "C, packed" } else { "C" };
        let fields = self.fields(t);
        let mut rust =
            format!("/// {doc}\n{cfg}#[repr({repr})]\n#[derive(Clone, Copy)]\npub {kw} {tag} {{\n");
        let mut py = String::new();
        let mut layout = Vec::new();
        for f in &fields {
            let (rty, pty) = map_type(&f.ty)?;
            let (rty, pty) = match &f.dim {
                Some(d) => {
                    let rd = self.rust_dim(d)?;
                    let pd = if rd == "0" && d.is_empty() {
                        "0".to_string()
                    } else {
                        rd.clone()
                    };
                    (format!("[{rty}; {rd}]"), format!("{pty} * {pd}"))
                }
                None => (rty, pty),
            };
            writeln!(rust, "    pub {}: {rty},", f.name).ok();
            writeln!(py, "    (\"{}\", {pty}),", f.name).ok();
            layout.push(f.name.clone());
        }
        rust.push_str("}\n\n");
        self.rust.push_str(&rust);
        // Layout entries (structs only: a union's fields are all at 0).
        let offsets = if union {
            String::new()
        } else {
            layout
                .iter()
                .map(|n| format!("(\"{n}\", core::mem::offset_of!({tag}, {n}))"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let visible = if b(t, "anonymous") { "false" } else { "true" };
        writeln!(
            self.rust_layouts,
            "    {cfg}(\"{kw} {tag}\", {visible}, core::mem::size_of::<{tag}>(), &[{offsets}]),"
        )
        .ok();
        // Python.
        let base = if union {
            "ctypes.Union"
        } else {
            "ctypes.Structure"
        };
        let pack = if packed { "    _pack_ = 1\n" } else { "" };
        let class = format!(
            "class {tag}({base}):\n    \"\"\"{doc}\"\"\"\n{pack}    _fields_ = [\n{py}    ]\n\n"
        );
        match s(t, "arch") {
            Some("aarch64") => {
                writeln!(self.py, "if _AARCH64:\n{}", indent(&class)).ok();
            }
            Some(_) => {
                writeln!(self.py, "if not _AARCH64:\n{}", indent(&class)).ok();
            }
            None => self.py.push_str(&class),
        }
        Ok(())
    }

    fn function(&mut self, t: &Table) -> Result<(), String> {
        let header = s(t, "header").ok_or("function without header")?;
        let mut c = String::new();
        for line in lines(s(t, "lines").unwrap_or("")) {
            writeln!(c, "{line}").ok();
            let (decl, params) = line
                .trim_end_matches(';')
                .split_once('(')
                .ok_or_else(|| format!("not a prototype: {line}"))?;
            let params = params.trim_end_matches(')');
            let decl = decl.trim();
            let split = decl.rfind([' ', '*']).ok_or(line)?;
            let (ret, name) = (decl[..=split].trim(), decl[split + 1..].trim());
            let (_, pret) = map_type(ret)?;
            let mut args = Vec::new();
            if params.trim() != "void" {
                for p in params.split(',') {
                    let p = p.trim();
                    args.push(map_type(param_type(p))?.1);
                }
            }
            writeln!(
                self.py_funcs,
                "    \"{name}\": ({pret}, [{}]),",
                args.join(", ")
            )
            .ok();
        }
        c.push('\n');
        self.c(header).push_str(&c);
        Ok(())
    }
}

/// A parameter's type: `p` less its name, if it has one (`const char *` has
/// none; `enum pmc_mode _mode`, `int idx` have).
fn param_type(p: &str) -> &str {
    let p = p.trim();
    if p.ends_with('*') {
        return p;
    }
    let words: Vec<&str> = p
        .split([' ', '*'])
        .filter(|w| !w.is_empty() && *w != "const")
        .collect();
    let n = words.len();
    let unnamed = n <= 1
        || matches!(words[n - 2], "struct" | "enum" | "union")
        || matches!(
            words[n - 1],
            "int"
                | "char"
                | "void"
                | "uint32_t"
                | "uint64_t"
                | "pmc_id_t"
                | "pmc_value_t"
                | "pid_t"
        );
    if unnamed {
        p
    } else {
        p[..p.len() - words[n - 1].len()].trim()
    }
}

fn indent(text: &str) -> String {
    text.lines()
        .map(|l| {
            if l.is_empty() {
                String::new()
            } else {
                format!("    {l}")
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// A Rust declaration of hwpmc's ABI the table is tied to: the path the
/// generated ties name it by, and its source text (read for its names).
pub struct Owner<'a> {
    /// `pmc_freebsd::sys::abi`, `pmc_log::hwpmc`.
    pub path: &'a str,
    /// The file that declares the items.
    pub source: &'a str,
}

/// A struct or union of a Rust source: its `#[cfg(...)]` line if it has
/// one, its public fields.
type Struct = (Option<String>, Vec<String>);

/// The integer constants a Rust source declares (`pub const NAME: TYPE =`,
/// integer types only), and its structs and unions.
fn owner_items(source: &str) -> (BTreeMap<String, ()>, BTreeMap<String, Struct>) {
    const INTS: &[&str] = &[
        "u8",
        "u16",
        "u32",
        "u64",
        "i32",
        "i64",
        "usize",
        "c_int",
        "c_uint",
        "pmc_id_t",
        "pmc_value_t",
    ];
    let mut consts = BTreeMap::new();
    let mut structs: BTreeMap<String, Struct> = BTreeMap::new();
    let mut open: Option<String> = None;
    let mut cfg: Option<String> = None;
    for line in source.lines() {
        let t = line.trim();
        if let Some(name) = &open {
            if t == "}" {
                open = None;
            } else if let Some((field, _)) = t.strip_prefix("pub ").and_then(|f| f.split_once(':'))
            {
                if let Some(s) = structs.get_mut(name) {
                    s.1.push(field.trim().to_string());
                }
            }
            continue;
        }
        if t.starts_with("#[cfg(") {
            cfg = Some(t.to_string());
        } else if !t.starts_with('#')
            && !t.starts_with("///")
            && !t.starts_with("pub struct ")
            && !t.starts_with("pub union ")
        {
            cfg = None;
        }
        if let Some(rest) = t.strip_prefix("pub const ") {
            if let Some((name, ty)) = rest.split_once(':') {
                let ty = ty.split('=').next().unwrap_or("").trim();
                if INTS.contains(&ty) {
                    consts.insert(name.trim().to_string(), ());
                }
            }
        }
        for kw in ["pub struct ", "pub union "] {
            if let Some(rest) = t.strip_prefix(kw) {
                if let Some(name) = rest.strip_suffix(" {") {
                    structs.insert(name.to_string(), (cfg.take(), Vec::new()));
                    open = Some(name.to_string());
                }
            }
        }
    }
    (consts, structs)
}

/// Compile-time ties of the generated Rust module to the Rust owners of
/// hwpmc's ABI: every integer constant both declare has the same value
/// (the owner's cast to the table's type), every struct and union both
/// declare the same size and alignment, and every field both name the same
/// offset. Compiled with libpmc's unit tests (the owners are
/// dev-dependencies), on LP64 as the owners' own pins.
fn owner_ties(rust: &str, owners: &[Owner<'_>]) -> String {
    let (mine_consts, mine_structs) = owner_items(rust);
    let types: BTreeMap<&str, &str> = rust
        .lines()
        .filter_map(|l| l.strip_prefix("pub const "))
        .filter_map(|r| r.split_once(':'))
        .map(|(n, t)| (n.trim(), t.split('=').next().unwrap_or("").trim()))
        .collect();
    let mut out = String::new();
    for o in owners {
        let (consts, structs) = owner_items(o.source);
        for name in consts.keys().filter(|n| mine_consts.contains_key(*n)) {
            let ty = types.get(name.as_str()).copied().unwrap_or("u32");
            writeln!(
                out,
                "    const _: () = assert!({}::{name} as {ty} == super::{name});",
                o.path
            )
            .ok();
        }
        for (name, (_, fields)) in &structs {
            let Some((cfg, mine)) = mine_structs.get(name) else {
                continue;
            };
            let cfg = cfg
                .as_ref()
                .map(|c| format!("    {c}\n"))
                .unwrap_or_default();
            let p = o.path;
            writeln!(
                out,
                "{cfg}    const _: () = assert!(size_of::<{p}::{name}>() == size_of::<super::{name}>() \
                 && align_of::<{p}::{name}>() == align_of::<super::{name}>());"
            )
            .ok();
            for f in fields.iter().filter(|f| mine.contains(f)) {
                writeln!(
                    out,
                    "{cfg}    const _: () = assert!(offset_of!({p}::{name}, {f}) == \
                     offset_of!(super::{name}, {f}));"
                )
                .ok();
            }
        }
    }
    format!(
        "/// The table tied to the Rust owners of hwpmc's ABI (values, sizes, alignments,\n\
         /// offsets), checked when the unit tests compile.\n\
         #[cfg(all(test, target_pointer_width = \"64\"))]\n\
         #[allow(clippy::unnecessary_cast)]\n\
         mod owner_ties {{\n    use std::mem::{{align_of, offset_of, size_of}};\n\n{out}}}\n"
    )
}

/// Generates every output from the table's text, the Rust module tied to
/// `owners`.
pub fn generate(table: &str, owners: &[Owner<'_>]) -> Result<Outputs, String> {
    let doc: Table = table.parse().map_err(|e| format!("headers.toml: {e}"))?;
    let mut g = Gen::new();
    let headers = doc
        .get("header")
        .and_then(Value::as_array)
        .ok_or("no [[header]]")?;
    for item in doc
        .get("item")
        .and_then(Value::as_array)
        .ok_or("no [[item]]")?
    {
        let t = item.as_table().ok_or("item is not a table")?;
        match s(t, "kind") {
            Some("raw") => {
                let h = s(t, "header").ok_or("raw without header")?;
                let text = s(t, "text")
                    .unwrap_or("")
                    .trim_start_matches('\n')
                    .to_string();
                g.c(h).push_str(&text);
                g.c(h).push('\n');
            }
            Some("define") => g.define(t)?,
            Some("enum") => g.enumeration(t)?,
            Some("events") => g.events(t)?,
            Some("typedef") => g.typedef(t)?,
            Some("struct") => g.structure(t)?,
            Some("function") => g.function(t)?,
            other => return Err(format!("unknown item kind {other:?}")),
        }
    }
    let mut files = Vec::new();
    for h in headers {
        let h = h.as_table().ok_or("header is not a table")?;
        let path = s(h, "path").ok_or("header without path")?;
        let guard = s(h, "guard").ok_or("header without guard")?;
        let body = g.c.get(path).cloned().unwrap_or_default();
        let text = format!(
            "#ifndef {guard}\n#define {guard}\n{}\n\n{}{}#endif /* {guard} */\n",
            s(h, "prologue").unwrap_or("").trim_end(),
            body.trim_end().to_string() + "\n",
            s(h, "epilogue")
                .map(|e| e.trim_start_matches('\n').to_string())
                .unwrap_or_default()
        );
        files.push((format!("include/{path}"), text));
    }
    let rust = format!(
        "// @generated by libpmc/tests/header.rs from libpmc/abi/headers.toml: do not edit.\n\
         // Regenerate with PMC_BLESS_HEADER=1 cargo test -p pmc-capi --test header.\n\
         //! The C ABI of `<pmc.h>`, `<pmclog.h>`, `<sys/pmc.h>` and `<sys/pmclog.h>`, from the\n\
         //! table the headers are generated from: every define and enumerator (C enums are\n\
         //! `u32` here), typedef, struct and union, and `pmc_name_of_*`'s name tables. The\n\
         //! headers document each item.\n\
         #![allow(non_camel_case_types, non_upper_case_globals, missing_docs, dead_code)]\n\
         #![allow(clippy::unreadable_literal, clippy::type_complexity)]\n\n\
         use std::ffi::{{c_char, c_int, c_uint, c_void, CStr}};\n\n\
         /// The reading system's `PATH_MAX` (`<limits.h>`), the size of `pmclog_ev`'s paths.\n\
         pub const PATH_MAX: usize = libc::PATH_MAX as usize;\n\
         /// FreeBSD's `MAXCOMLEN`.\n\
         pub const MAXCOMLEN: u32 = 19;\n\
         /// FreeBSD's `PATH_MAX`: the size of the on-disk records' paths.\n\
         pub const _PMCLOG_PATH_MAX: u32 = 1024;\n\n\
         /// `struct timespec` (64-bit Linux and FreeBSD).\n\
         #[repr(C)]\n#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]\n\
         pub struct timespec {{\n    pub tv_sec: i64,\n    pub tv_nsec: i64,\n}}\n\n\
         {}\n{}\
         /// Every struct and union of the headers: its C name, whether C declares it under that\n\
         /// name, its size, and its fields' offsets (for the layout test against the compiler).\n\
         pub static LAYOUTS: &[(&str, bool, usize, &[(&str, usize)])] = &[\n{}];\n\n\
         #[allow(unused_imports)]\nuse {{c_char as _, c_int as _, c_uint as _, c_void as _}};\n\n{}",
        g.rust, g.rust_names, g.rust_layouts, owner_ties(&g.rust, owners)
    );
    files.push(("src/abi/generated.rs".into(), rust));
    let py = format!(
        "# @generated by libpmc/tests/header.rs from libpmc/abi/headers.toml: do not edit.\n\
         \"\"\"The C ABI of libpmc's headers for ctypes: every define and enumerator, typedef,\n\
         struct and union, and every function's signature (FUNCTIONS: name -> (restype,\n\
         argtypes)), from the one table the C headers are generated from.\"\"\"\n\n\
         import ctypes\nimport platform\nimport sys\n\n\
         _AARCH64 = platform.machine().lower() in (\"aarch64\", \"arm64\")\n\
         PATH_MAX = 1024 if sys.platform.startswith(\"freebsd\") else 4096\n\
         MAXCOMLEN = 19\n_PMCLOG_PATH_MAX = 1024\n\n\n\
         class timespec(ctypes.Structure):\n    \"\"\"struct timespec.\"\"\"\n    \
         _fields_ = [(\"tv_sec\", ctypes.c_int64), (\"tv_nsec\", ctypes.c_int64)]\n\n\n\
         {}\n\nFUNCTIONS = {{\n{}}}\n",
        g.py.trim_end(),
        g.py_funcs
    );
    files.push(("python/libpmc/_abi.py".into(), py));
    Ok(Outputs { files })
}
