//! Object files as the unwinder needs them: their unwind sections and load segments, opened
//! safely (regular files only, without blocking, within a size limit) and mapped, not read.

use std::ops::{Deref, Range};
use std::path::Path;

use object::{Object as _, ObjectSection as _, ObjectSegment as _};

use pmc_filemap::Bytes;

/// The largest object file whose unwind tables are used: 4 GiB. Larger files are refused
/// (their frames end the unwind as truncated). A mapped file costs the pages touched, so the
/// limit bounds address space and parse time, not memory.
pub const MAX_OBJECT_SIZE: u64 = 4 << 30;

/// A byte range of an object's image, handed to framehop as section data.
#[derive(Clone)]
pub struct Section {
    image: Bytes,
    range: Range<usize>,
}

impl Deref for Section {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        self.image.get(self.range.clone()).unwrap_or_default()
    }
}

/// One section's stated addresses and where its bytes are in the file.
#[derive(Clone, Debug, Default)]
struct SectionPlace {
    svma: Range<u64>,
    file: Option<Range<usize>>,
}

/// A parsed object: where its unwind sections are, and its `PT_LOAD` segments.
pub(crate) struct Object {
    image: Bytes,
    text: Option<SectionPlace>,
    eh_frame: Option<SectionPlace>,
    eh_frame_hdr: Option<SectionPlace>,
    debug_frame: Option<SectionPlace>,
    got: Option<SectionPlace>,
    /// (vaddr, file offset, file size, executable) of each loadable segment.
    segments: Vec<(u64, u64, u64, bool)>,
}

/// Why an object was not used.
pub(crate) type Refusal = String;

/// Opens `path` without blocking, refuses anything but a regular file of at most
/// [`MAX_OBJECT_SIZE`] bytes, and maps it (pmc-filemap's, as pmc-analyze does).
/// With `root` (`-r DIR`), refuses a file that, symbolic links followed, is outside it.
fn map_regular(path: &Path, root: Option<&Path>) -> Result<Bytes, Refusal> {
    let real_root = root.and_then(|r| std::fs::canonicalize(r).ok());
    let outside = |real: &Path| {
        format!(
            "it resolves to {}, outside the root {}; refused",
            real.display(),
            root.unwrap_or(Path::new("/")).display()
        )
    };
    if let Some(real_root) = &real_root {
        if let Ok(real) = std::fs::canonicalize(path) {
            if !real.starts_with(real_root) {
                return Err(outside(&real));
            }
        }
    }
    let (file, meta) =
        pmc_filemap::open_regular(path, MAX_OBJECT_SIZE).map_err(|e| e.to_string())?;
    // Inside the root once links are followed, on the descriptor itself (no race).
    if let Some(real) = real_root.and_then(|r| pmc_filemap::outside_root(&file, &r)) {
        return Err(outside(&real));
    }
    let len = usize::try_from(meta.len()).map_err(|_| "too large to map".to_string())?;
    Bytes::map(&file, len).map_err(|e| e.to_string())
}

impl Object {
    /// Opens and parses the object at `path`; with `build_id`, refuses a file whose build-id
    /// differs (it was replaced after the process mapped it).
    pub(crate) fn open(
        path: &Path,
        root: Option<&Path>,
        build_id: Option<&[u8]>,
    ) -> Result<Object, Refusal> {
        let image = map_regular(path, root)?;
        let o = Object::parse(image)?;
        if let Some(want) = build_id.filter(|b| !b.is_empty()) {
            let f = object::File::parse(&*o.image).map_err(|e| e.to_string())?;
            if let Ok(Some(have)) = f.build_id() {
                if have != want {
                    return Err("its build-id differs from the mapped one (file replaced)".into());
                }
            }
        }
        Ok(o)
    }

    /// Parses an ELF image held in memory (the vdso).
    pub(crate) fn from_bytes(bytes: Vec<u8>) -> Result<Object, Refusal> {
        Object::parse(Bytes::from(bytes))
    }

    fn parse(image: Bytes) -> Result<Object, Refusal> {
        let f = object::File::parse(&*image).map_err(|e| format!("not an object file: {e}"))?;
        let place = |name: &str| {
            let s = f.section_by_name(name)?;
            let file = s.file_range().and_then(|(off, len)| {
                let start = usize::try_from(off).ok()?;
                let end = start.checked_add(usize::try_from(len).ok()?)?;
                (end <= image.len()).then_some(start..end)
            });
            Some(SectionPlace {
                svma: s.address()..s.address().saturating_add(s.size()),
                file,
            })
        };
        let segments = f
            .segments()
            .map(|s| {
                let (off, size) = s.file_range();
                let exec = match s.flags() {
                    object::SegmentFlags::Elf { p_flags } => p_flags & object::elf::PF_X != 0,
                    _ => false,
                };
                (s.address(), off, size, exec)
            })
            .collect();
        Ok(Object {
            text: place(".text"),
            eh_frame: place(".eh_frame"),
            eh_frame_hdr: place(".eh_frame_hdr"),
            debug_frame: place(".debug_frame"),
            got: place(".got"),
            segments,
            image,
        })
    }

    /// Whether the object has call-frame information at all.
    pub(crate) fn has_cfi(&self) -> bool {
        self.eh_frame.as_ref().is_some_and(|s| s.file.is_some())
            || self.debug_frame.as_ref().is_some_and(|s| s.file.is_some())
    }

    /// The load bias of a mapping of this object that starts at `start` with file offset
    /// `pgoff`: the address where stated address 0 lands (framehop's `base_avma`; ELF's
    /// `base_svma` is 0). `None` when no segment holds that offset.
    ///
    /// The mapping is executable, so its segment is the executable `PT_LOAD` whose file
    /// range the mapping covers: the kernel maps a segment from its offset rounded down to a
    /// page, so `pgoff` may lie up to a page (64 KiB at most) before the segment's offset
    /// (as with lld's layouts, where that page also holds the end of the previous segment).
    pub(crate) fn bias(&self, start: u64, pgoff: u64) -> Option<u64> {
        const MAX_PAGE: u64 = 64 << 10;
        let covers = |&&(_, off, size, _): &&(u64, u64, u64, bool)| {
            pgoff < off.saturating_add(size.max(1)) && off.saturating_sub(pgoff) < MAX_PAGE
        };
        let &(vaddr, off, _, _) = self
            .segments
            .iter()
            .filter(|s| s.3)
            .find(covers)
            .or_else(|| self.segments.iter().find(covers))?;
        // The stated address at the mapping's start (before the segment's own start when
        // pgoff is rounded down).
        let svma_at_start = vaddr.wrapping_add(pgoff).wrapping_sub(off);
        Some(start.wrapping_sub(svma_at_start))
    }

    fn data(&self, p: &Option<SectionPlace>) -> Option<Section> {
        let r = p.as_ref()?.file.clone()?;
        Some(Section {
            image: self.image.clone(),
            range: r,
        })
    }

    /// framehop's description of this object's sections.
    pub(crate) fn section_info(&self) -> framehop::ExplicitModuleSectionInfo<Section> {
        let svma = |p: &Option<SectionPlace>| p.as_ref().map(|p| p.svma.clone());
        framehop::ExplicitModuleSectionInfo {
            base_svma: 0,
            text_svma: svma(&self.text),
            text: self.data(&self.text),
            got_svma: svma(&self.got),
            eh_frame_svma: svma(&self.eh_frame),
            eh_frame: self.data(&self.eh_frame),
            eh_frame_hdr_svma: svma(&self.eh_frame_hdr),
            eh_frame_hdr: self.data(&self.eh_frame_hdr),
            debug_frame: self.data(&self.debug_frame),
            stubs_svma: None,
            stub_helper_svma: None,
            unwind_info: None,
            text_segment_svma: None,
            text_segment: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[inline(never)]
    fn bias_marker_fn() -> u64 {
        std::hint::black_box(7)
    }

    /// The load bias of this test binary's executable mapping puts a function's stated
    /// address at its real one, whatever the linker's segment layout (lld puts the text
    /// segment at a file offset one page below its address, so the mapping's offset falls
    /// inside the previous segment's last page).
    #[test]
    fn bias_maps_stated_addresses_to_real_ones() {
        let exe = std::env::current_exe().unwrap();
        let o = Object::open(&exe, None, None).unwrap();
        assert!(o.has_cfi());
        let addr = bias_marker_fn as fn() -> u64 as usize as u64;
        assert_eq!(bias_marker_fn(), 7);
        let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
        let (start, pgoff) = maps
            .lines()
            .find_map(|l| {
                let mut it = l.split_whitespace();
                let (a, b) = it.next()?.split_once('-')?;
                let perms = it.next()?;
                let off = u64::from_str_radix(it.next()?, 16).ok()?;
                let (a, b) = (
                    u64::from_str_radix(a, 16).ok()?,
                    u64::from_str_radix(b, 16).ok()?,
                );
                (perms.contains('x') && (a..b).contains(&addr)).then_some((a, off))
            })
            .unwrap();
        let bias = o.bias(start, pgoff).unwrap();
        let data = std::fs::read(&exe).unwrap();
        let f = object::File::parse(&*data).unwrap();
        use object::ObjectSymbol as _;
        let sym = f
            .symbols()
            .find(|s| s.name().is_ok_and(|n| n.contains("bias_marker_fn")))
            .expect("the marker's symbol");
        assert_eq!(bias.wrapping_add(sym.address()), addr);
    }

    #[test]
    fn only_regular_files_are_opened() {
        let err = Object::open(Path::new("/dev/zero"), None, None)
            .err()
            .unwrap();
        assert!(err.contains("character device"), "{err}");
        assert!(Object::open(Path::new("/"), None, None).is_err());
        assert!(Object::open(Path::new("/nonexistent/x"), None, None).is_err());
    }
}
