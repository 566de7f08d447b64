//! gprof profiles, one per executable object and PMC, as FreeBSD
//! `pmcstat -g` writes them (usr.sbin/pmcstat/pmcpl_gprof.c).
//!
//! [`write_gmon`] writes the tree a [`GmonOptions`] names and returns a [`GmonReport`] of
//! [`GmonFile`]s; [`gmon_bytes`] encodes one file. Below: the layout, and where it differs
//! from FreeBSD's so that GNU gprof reads it.
//!
//! Layout: `<dir>/<pmc name>/<object basename>.gmon`; when two objects share
//! a basename the later ones get `<basename>~NNN.gmon`
//! (`pmcpl_gmon_initimage`). Each file is a 4.4BSD `gmon.out`:
//!
//! - a header: `lpc` and `hpc` (the object's executable segments, as
//!   addresses of the object itself), `ncnt` (bytes of header plus
//!   histogram), the version `0x00051879`, the profiling rate, and
//!   padding;
//! - the histogram: one 16-bit counter per [`BUCKET_SIZE`] bytes of text
//!   (`FUNCTION_ALIGNMENT`), saturating at 65535 (`pmcpl_gmon_process`);
//! - call arcs `{from_pc, self_pc, count}`: for each caller -> callee edge
//!   of the sampled stacks within one object, from the caller's function
//!   start to the callee's, counting the samples through that edge
//!   (`pmcstat_cgnode_do_gmon_arcs`).
//!
//! Differences from FreeBSD's writer, each so that GNU gprof (the reader
//! on Linux) reads the file right:
//!
//! - the header is GNU gprof's 4.4BSD header for 64-bit objects (40 bytes,
//!   `GMON_HDRSIZE_BSD44_64` in binutils' gprof/gmon.h), where FreeBSD's
//!   `struct gmonhdr` is 48 bytes (its extra `histcounter_type` and
//!   alignment): GNU gprof would read FreeBSD's histogram 4 bins off;
//! - the profiling rate is the sampling frequency when the PMC had one
//!   (so gprof's "seconds" are seconds), else 1 (gprof's "seconds" are then
//!   sample counts). FreeBSD writes 0 ("ticks"), which GNU gprof replaces
//!   with the host's profiling-timer rate;
//! - arcs are written for every function with callers, where FreeBSD
//!   skips sampled functions that have a single caller.
//!
//! Samples outside any object file (kernel addresses symbolized through
//! kallsyms, `[vdso]`, unmapped addresses) have no gmon file; they are
//! counted in [`GmonReport::unattributed`].

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::profile::{Profile, SampledPc};
use crate::symbolize::basename;

/// Bytes of text per histogram counter (FreeBSD amd64's
/// `FUNCTION_ALIGNMENT`, from `<machine/profile.h>`).
pub const BUCKET_SIZE: u64 = 4;

/// 4.4BSD gmon version (`GMONVERSION` in `<sys/gmon.h>`).
pub const GMON_VERSION: u32 = 0x0005_1879;

/// Header size GNU gprof expects for a 64-bit 4.4BSD file.
pub const HEADER_SIZE: usize = 8 + 8 + 4 + 4 + 4 + 3 * 4;

/// Largest histogram written (counters); a bigger text segment is an error
/// for that object rather than an unbounded allocation.
pub const MAX_BUCKETS: u64 = 1 << 25;

/// One gmon file written.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct GmonFile {
    /// Its path.
    pub path: PathBuf,
    /// The object it profiles.
    pub object: String,
    /// The PMC's name.
    pub pmc: String,
    /// Samples in the histogram.
    pub samples: u64,
    /// Some counter saturated at 65535.
    pub overflowed: bool,
    /// Call arcs written.
    pub arcs: usize,
}

/// What [`write_gmon`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct GmonReport {
    /// The files written.
    pub files: Vec<GmonFile>,
    /// Samples not in any object file (no gmon file can hold them).
    pub unattributed: u64,
    /// Objects skipped, with the reason.
    pub skipped: Vec<(String, String)>,
}

/// The gmon bytes of one object: header, histogram, arcs.
///
/// `lpc` must be [`BUCKET_SIZE`]-aligned; the histogram covers
/// `lpc .. lpc + counters.len() * BUCKET_SIZE`.
pub fn gmon_bytes(lpc: u64, counters: &[u16], profrate: u32, arcs: &[(u64, u64, u64)]) -> Vec<u8> {
    let hist = counters.len().saturating_mul(2);
    let mut v = Vec::with_capacity(HEADER_SIZE + hist + arcs.len() * 24);
    let hpc = lpc.saturating_add((counters.len() as u64).saturating_mul(BUCKET_SIZE));
    v.extend_from_slice(&lpc.to_le_bytes());
    v.extend_from_slice(&hpc.to_le_bytes());
    let ncnt = u32::try_from(HEADER_SIZE + hist).unwrap_or(u32::MAX);
    v.extend_from_slice(&ncnt.to_le_bytes());
    v.extend_from_slice(&GMON_VERSION.to_le_bytes());
    v.extend_from_slice(&profrate.to_le_bytes());
    v.extend_from_slice(&[0u8; 12]);
    for c in counters {
        v.extend_from_slice(&c.to_le_bytes());
    }
    for &(from, to, count) in arcs {
        v.extend_from_slice(&from.to_le_bytes());
        v.extend_from_slice(&to.to_le_bytes());
        v.extend_from_slice(&count.to_le_bytes());
    }
    v
}

/// Options of [`write_gmon`].
#[derive(Clone, Debug)]
pub struct GmonOptions {
    /// The samples directory (`pmcstat -D`, default `.`).
    pub dir: PathBuf,
    /// Deepest caller level used for arcs (`pmcstat -z`; 0: unlimited).
    /// FreeBSD writes no arcs when it is 1.
    pub max_depth: usize,
    /// What creating the files respects besides [`crate::output`]'s rules (every file and
    /// directory below `dir` is created without following links): the logs read, which no
    /// gmon file may replace.
    pub output: crate::output::Options,
}

impl Default for GmonOptions {
    fn default() -> Self {
        GmonOptions {
            dir: PathBuf::from("."),
            max_depth: 16,
            output: crate::output::Options::default(),
        }
    }
}

/// A PMC name as a directory name: `/` and NUL would change the path.
fn dir_name(name: &str) -> String {
    let s: String = name
        .chars()
        .map(|c| if c == '/' || c == '\0' { '_' } else { c })
        .collect();
    match s.as_str() {
        "" | "." | ".." => format!("pmc{s}"),
        _ => s,
    }
}

/// Write the gmon files of a profile built with
/// [`crate::AnalyzeOptions::keep_pcs`]. Existing files are replaced.
/// The profiling rate of a file is its PMC's sampling frequency when it had
/// one, else 1.
pub fn write_gmon(profile: &Profile, opts: &GmonOptions) -> std::io::Result<GmonReport> {
    let mut report = GmonReport::default();
    // Sample names per object, unique by basename as pmcpl_gmon_initimage.
    let mut names: HashMap<u32, String> = HashMap::new();
    let mut taken: HashSet<String> = HashSet::new();
    // (pmc, object) -> its sampled PCs.
    let mut groups: BTreeMap<(u32, u32), Vec<&SampledPc>> = BTreeMap::new();
    // Opened once: the per-PMC directories and the files are created below it with
    // mkdirat/openat, never through a link (their names come from the log).
    let mut top: Option<crate::output::Dir> = None;
    for pc in &profile.pcs {
        let text = pc
            .object
            .and_then(|o| profile.objects.get(o as usize))
            .and_then(|o| o.text);
        match (pc.object, pc.svma, text) {
            (Some(o), Some(_), Some(_)) => groups.entry((pc.pmc_id, o)).or_default().push(pc),
            _ => report.unattributed = report.unattributed.saturating_add(pc.samples),
        }
    }
    let mut arcs_all = arcs_by_group(profile, opts.max_depth);
    let pmc_of: HashMap<u32, &crate::profile::PmcInfo> =
        profile.pmcs.iter().map(|p| (p.pmc_id, p)).collect();
    for (&(pmc_id, obj), pcs) in &groups {
        let Some(info) = profile.objects.get(obj as usize) else {
            continue;
        };
        let Some((lo, hi)) = info.text else { continue };
        let lpc = lo - lo % BUCKET_SIZE;
        let buckets = hi.saturating_sub(lpc).div_ceil(BUCKET_SIZE);
        if buckets > MAX_BUCKETS {
            report.skipped.push((
                info.path.to_string(),
                format!(
                    "text segment of {} bytes is too large for a gmon histogram",
                    hi - lo
                ),
            ));
            continue;
        }
        let mut counters = vec![0u16; usize::try_from(buckets).unwrap_or(0)];
        let mut samples = 0u64;
        let mut overflowed = false;
        for pc in pcs {
            let Some(a) = pc.svma else { continue };
            let slot = a
                .checked_sub(lpc)
                .map(|d| d / BUCKET_SIZE)
                .and_then(|b| usize::try_from(b).ok())
                .and_then(|b| counters.get_mut(b));
            match slot {
                Some(c) => {
                    let add = u16::try_from(pc.samples).unwrap_or(u16::MAX);
                    let (sum, over) = c.overflowing_add(add);
                    *c = if over || pc.samples > u64::from(u16::MAX) {
                        overflowed = true;
                        u16::MAX
                    } else {
                        sum
                    };
                    samples = samples.saturating_add(pc.samples);
                }
                // Sampled outside the object's text (data, PLT quirks).
                None => report.unattributed = report.unattributed.saturating_add(pc.samples),
            }
        }
        let arcs = arcs_all.remove(&(pmc_id, obj)).unwrap_or_default();
        let pmc = pmc_of.get(&pmc_id).copied();
        let pmc_name = pmc.map_or_else(|| format!("pmc{pmc_id}"), |p| p.name.clone());
        let rate = pmc
            .and_then(|p| p.frequency)
            .and_then(|f| u32::try_from(f).ok())
            .filter(|&r| r > 0)
            .unwrap_or(1);
        let name = names
            .entry(obj)
            .or_insert_with(|| sample_name(&info.path, &mut taken))
            .clone();
        let top = match &mut top {
            Some(d) => d,
            None => top
                .insert(crate::output::Dir::open(&opts.dir).map_err(|e| with_path(&opts.dir, e))?),
        };
        let sub = dir_name(&pmc_name);
        let dir = top
            .subdir(sub.as_ref())
            .map_err(|e| with_path(&top.path().join(&sub), e))?;
        let path = dir.path().join(&name);
        let bytes = gmon_bytes(lpc, &counters, rate, &arcs);
        write_file(&dir, &name, &path, &bytes, &opts.output)?;
        report.files.push(GmonFile {
            path,
            object: info.path.to_string(),
            pmc: pmc_name,
            samples,
            overflowed,
            arcs: arcs.len(),
        });
    }
    Ok(report)
}

fn with_path(p: &Path, e: std::io::Error) -> std::io::Error {
    std::io::Error::new(e.kind(), format!("{}: {e}", p.display()))
}

/// Writes `bytes` to `name` in `dir`, whole or not at all (see [`crate::output`]).
fn write_file(
    dir: &crate::output::Dir,
    name: &str,
    path: &Path,
    bytes: &[u8],
    opts: &crate::output::Options,
) -> std::io::Result<()> {
    let mut f = dir
        .create(name.as_ref(), opts)
        .map_err(|e| with_path(path, e))?;
    f.write_all(bytes).map_err(|e| with_path(path, e))?;
    f.commit().map_err(|e| with_path(path, e))
}

/// `basename.gmon`, or `basename~NNN.gmon` when taken (pmcpl_gmon_initimage).
fn sample_name(path: &str, taken: &mut HashSet<String>) -> String {
    let base = match basename(path) {
        "" => "unknown",
        b => b,
    };
    let base = dir_name(base);
    let mut name = format!("{base}.gmon");
    let mut n = 0u32;
    while taken.contains(&name) {
        n += 1;
        name = format!("{base}~{n:03}.gmon");
    }
    taken.insert(name.clone());
    name
}

/// A gmon arc: caller start, callee start, samples.
type GmonArc = (u64, u64, u64);

/// Caller -> callee arcs within each object, per PMC: `(pmc_id, object)` ->
/// `(caller start, callee start, samples)`, each edge counted once per stack, up to
/// `max_depth` frames from the leaf. One pass over the stacks, however many PMCs and
/// objects the log names (one pass per PMC and object was their product).
fn arcs_by_group(profile: &Profile, max_depth: usize) -> HashMap<(u32, u32), Vec<GmonArc>> {
    let mut objects_of: HashMap<&str, Vec<u32>> = HashMap::new();
    for (i, o) in profile.objects.iter().enumerate() {
        if let Ok(i) = u32::try_from(i) {
            objects_of.entry(&*o.path).or_default().push(i);
        }
    }
    let depth = if max_depth == 0 {
        usize::MAX
    } else {
        max_depth
    };
    let mut arcs: HashMap<(u32, u32), BTreeMap<(u64, u64), u64>> = HashMap::new();
    let mut seen: HashSet<(&str, u64, u64)> = HashSet::new();
    for s in &profile.stacks {
        seen.clear();
        // Leaf last in `frames`; walk pairs from the leaf up.
        for (k, pair) in s.frames.windows(2).rev().enumerate() {
            if k + 1 >= depth {
                break;
            }
            let (Some(caller), Some(callee)) =
                (profile.function(pair[0]), profile.function(pair[1]))
            else {
                continue;
            };
            let (Some(path), Some(callee_path)) =
                (caller.object.as_deref(), callee.object.as_deref())
            else {
                continue;
            };
            if path != callee_path || caller.kernel != callee.kernel {
                continue;
            }
            let (Some(from), Some(to)) = (caller.address, callee.address) else {
                continue;
            };
            if !seen.insert((path, from, to)) {
                continue;
            }
            for &obj in objects_of.get(path).into_iter().flatten() {
                let e = arcs
                    .entry((s.pmc_id, obj))
                    .or_default()
                    .entry((from, to))
                    .or_insert(0);
                *e = e.saturating_add(s.samples);
            }
        }
    }
    arcs.into_iter()
        .map(|(k, a)| (k, a.into_iter().map(|((f, t), c)| (f, t, c)).collect()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_is_gnu_gprofs_bsd44_64() {
        let b = gmon_bytes(0x1000, &[1, 2, 3], 100, &[(0x1004, 0x1008, 5)]);
        assert_eq!(b.len(), 40 + 6 + 24);
        assert_eq!(&b[0..8], &0x1000u64.to_le_bytes());
        assert_eq!(&b[8..16], &0x100cu64.to_le_bytes());
        assert_eq!(&b[16..20], &46u32.to_le_bytes());
        assert_eq!(&b[20..24], &GMON_VERSION.to_le_bytes());
        assert_eq!(&b[24..28], &100u32.to_le_bytes());
        assert_eq!(&b[40..42], &1u16.to_le_bytes());
        assert_eq!(&b[46..54], &0x1004u64.to_le_bytes());
        assert_eq!(&b[62..70], &5u64.to_le_bytes());
    }

    fn profile_with(text: (u64, u64), svma: u64, samples: u64) -> Profile {
        Profile {
            functions: Vec::new(),
            comms: Vec::new(),
            stacks: Vec::new(),
            pmcs: Vec::new(),
            stats: Default::default(),
            warnings: Vec::new(),
            pcs: vec![SampledPc {
                pmc_id: 0,
                object: Some(0),
                svma: Some(svma),
                ip: svma,
                function: 0,
                bounds: None,
                kernel: false,
                samples,
            }],
            objects: vec![crate::ObjectInfo {
                path: "/bin/x".into(),
                text: Some(text),
            }],
        }
    }

    #[test]
    fn counters_saturate_and_huge_text_is_refused() {
        let dir = std::env::temp_dir().join(format!("pmc-gmon-unit-{}", std::process::id()));
        let opts = GmonOptions {
            dir: dir.clone(),
            max_depth: 16,
            ..Default::default()
        };
        let r = write_gmon(&profile_with((0x1000, 0x1100), 0x1010, 70_000), &opts).expect("write");
        assert_eq!(r.files.len(), 1);
        assert!(r.files[0].overflowed);
        let b = std::fs::read(dir.join("pmc0").join("x.gmon")).expect("read");
        // Bucket (0x1010 - 0x1000) / 4 = 4, after the 40-byte header.
        assert_eq!(
            &b[HEADER_SIZE + 8..HEADER_SIZE + 10],
            &u16::MAX.to_le_bytes()
        );
        let r = write_gmon(&profile_with((0, 1 << 40), 0x10, 1), &opts).expect("write");
        assert!(r.files.is_empty());
        assert_eq!(r.skipped.len(), 1, "{r:?}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn sample_names_are_unique_by_basename() {
        let mut t = HashSet::new();
        assert_eq!(sample_name("/usr/lib/libc.so.7", &mut t), "libc.so.7.gmon");
        assert_eq!(
            sample_name("/other/libc.so.7", &mut t),
            "libc.so.7~001.gmon"
        );
        assert_eq!(dir_name("cpu/event=0x3c/"), "cpu_event=0x3c_");
        assert_eq!(dir_name(".."), "pmc..");
    }
}
