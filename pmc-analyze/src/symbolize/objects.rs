//! The object cache: each object opened once (keyed by path and build-id),
//! at most [`MAX_OPEN_OBJECTS`](super::MAX_OPEN_OBJECTS) open, the least recently used closed;
//! its debug file found by build-id.

use super::{ObjSlot, ObjState, Symbolizer, MAX_OPEN_OBJECTS};
use crate::object::{build_id_hex, ElfObject};
use crate::Warning;
use std::path::{Path, PathBuf};
use std::sync::Arc;

impl Symbolizer {
    pub(super) fn object_id(&mut self, path: &[u8], build_id: &[u8]) -> u32 {
        let key = (path.to_vec(), build_id.to_vec());
        if let Some(&id) = self.by_path.get(&key) {
            return id;
        }
        let text = String::from_utf8_lossy(path).into_owned();
        let pseudo = text.is_empty()
            || text.starts_with('[')
            || text.starts_with("//")
            || text.starts_with("anon_inode:")
            || text.starts_with("/memfd:");
        let id = u32::try_from(self.objects.len()).unwrap_or(u32::MAX);
        self.objects.push(ObjSlot {
            path: PathBuf::from(&text),
            display: Arc::from(text.as_str()),
            expected_build_id: build_id.to_vec(),
            state: if pseudo {
                ObjState::Pseudo
            } else {
                ObjState::Unloaded
            },
            text: None,
            last_used: 0,
        });
        self.by_path.insert(key, id);
        id
    }

    pub(super) fn loaded(&mut self, obj: u32) -> Option<Arc<ElfObject>> {
        self.tick = self.tick.wrapping_add(1);
        let tick = self.tick;
        let slot = self.objects.get_mut(obj as usize)?;
        match &slot.state {
            ObjState::Loaded(e) => {
                slot.last_used = tick;
                return Some(e.clone());
            }
            ObjState::Pseudo | ObjState::Failed => return None,
            ObjState::Unloaded => {}
        }
        let (state, warning) = self.load(obj as usize);
        if let Some(w) = warning {
            self.warnings.push(w);
        }
        let slot = self.objects.get_mut(obj as usize)?;
        slot.state = state;
        slot.last_used = tick;
        let elf = match &slot.state {
            ObjState::Loaded(e) => e.clone(),
            _ => return None,
        };
        for section in elf.skipped_debug_sections() {
            // Once per object and section, however often the object is reopened.
            if self.refused_links.insert((obj, format!("\0{section}"))) {
                self.warnings.push(Warning::DebugSectionSkipped {
                    path: slot.display.to_string(),
                    section: section.clone(),
                });
            }
        }
        for named in elf.refused_debug_links() {
            // Once per object and name, however often the object is reopened.
            if self.refused_links.insert((obj, named.clone())) {
                let path = slot.display.to_string();
                self.warnings.push(Warning::OutsideRoot {
                    path,
                    named: named.clone(),
                });
            }
        }
        slot.text = elf.text_extent();
        self.open.push(obj);
        if self.open.len() > MAX_OPEN_OBJECTS {
            self.close_least_recently_used(obj);
        }
        Some(elf)
    }

    /// Closes (unmaps) the open object used longest ago, other than `keep`; it is read again
    /// when next needed.
    fn close_least_recently_used(&mut self, keep: u32) {
        let objects = &self.objects;
        let oldest = self
            .open
            .iter()
            .enumerate()
            .filter(|(_, &o)| o != keep)
            .min_by_key(|(_, &o)| objects.get(o as usize).map_or(0, |s| s.last_used))
            .map(|(i, &o)| (i, o));
        if let Some((i, o)) = oldest {
            self.check_cut(o);
            self.open.swap_remove(i);
            if let Some(slot) = self.objects.get_mut(o as usize) {
                slot.state = ObjState::Unloaded;
            }
        }
    }

    fn load(&self, obj: usize) -> (ObjState, Option<Warning>) {
        let Some(slot) = self.objects.get(obj) else {
            return (ObjState::Failed, None);
        };
        let root = self.opts.root.as_deref();
        let on_disk = match root {
            Some(root) => match pmc_filemap::under_root(root, &slot.path) {
                Some(p) => p,
                None => {
                    let w = Warning::OutsideRoot {
                        path: slot.display.to_string(),
                        named: slot.display.to_string(),
                    };
                    return (ObjState::Failed, Some(w));
                }
            },
            None => slot.path.clone(),
        };
        let want = &slot.expected_build_id;
        let mut mismatch = None;
        let mut unreadable = None;
        match ElfObject::open_in(&on_disk, root, self.opts.debug_info) {
            Ok(elf) => match elf.build_id() {
                Some(got) if !want.is_empty() && got != want.as_slice() => {
                    mismatch = Some(build_id_hex(got));
                }
                got => {
                    let warning =
                        (!want.is_empty() && got.is_none()).then(|| Warning::BuildIdUnverified {
                            path: slot.display.to_string(),
                            expected: build_id_hex(want),
                        });
                    return (ObjState::Loaded(Arc::new(elf)), warning);
                }
            },
            Err(e) => unreadable = Some(e.to_string()),
        }
        // Missing or different file: look for the right build in the
        // build-id caches (perf's ~/.debug, the distribution's debug files).
        for cand in build_id_candidates(want, root) {
            if let Ok(elf) = ElfObject::open_in(&cand, root, self.opts.debug_info) {
                if elf.build_id() == Some(want.as_slice()) {
                    return (ObjState::Loaded(Arc::new(elf)), None);
                }
            }
        }
        let warning = match (mismatch, unreadable) {
            (Some(found), _) => Warning::BuildIdMismatch {
                path: slot.display.to_string(),
                expected: build_id_hex(want),
                found,
            },
            (None, reason) => Warning::ObjectUnreadable {
                path: slot.display.to_string(),
                reason: reason.unwrap_or_default(),
            },
        };
        (ObjState::Failed, Some(warning))
    }
}

fn build_id_candidates(id: &[u8], root: Option<&Path>) -> Vec<PathBuf> {
    if id.len() < 2 {
        return Vec::new();
    }
    let h = build_id_hex(id);
    let (dir, rest) = h.split_at(2);
    let mut v = Vec::new();
    if let Some(home) = std::env::var_os("HOME") {
        v.push(PathBuf::from(home).join(format!(".debug/.build-id/{dir}/{rest}/elf")));
    }
    let debug = format!("usr/lib/debug/.build-id/{dir}/{rest}.debug");
    // Under -r DIR, the root's debug directory (as perf's --symfs); the user's own cache
    // (~/.debug, named by build-id, never by the log) stays where it is.
    v.push(match root {
        Some(r) => r.join(debug),
        None => Path::new("/").join(debug),
    });
    v
}
