//! Helpers shared by the pmc-linux integration tests.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

/// Two threads that keep creating and joining short-lived threads until dropped, so that
/// threads of this process exit at any moment (as libtest's do).
pub struct ThreadChurn {
    stop: Arc<AtomicBool>,
    churners: Vec<JoinHandle<()>>,
}

impl ThreadChurn {
    pub fn start() -> ThreadChurn {
        let stop = Arc::new(AtomicBool::new(false));
        let churners = (0..2)
            .map(|_| {
                let stop = Arc::clone(&stop);
                std::thread::spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        let _ = std::thread::spawn(|| std::hint::black_box(0u64)).join();
                    }
                })
            })
            .collect();
        ThreadChurn { stop, churners }
    }
}

impl Drop for ThreadChurn {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for c in self.churners.drain(..) {
            let _ = c.join();
        }
    }
}
