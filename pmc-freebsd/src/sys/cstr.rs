//! C strings in the ABI's fixed buffers (`pm_name`, `pm_ev_name`), as
//! the kernel writes them (the simulator's writer is `sim::set_c_str`).

/// Reads a NUL-terminated C string out of a fixed buffer, lossily.
pub fn c_str(buf: &[u8]) -> String {
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn c_strings() {
        assert_eq!(c_str(b"CLOCK.H\0\xFF"), "CLOCK.H");
        assert_eq!(c_str(b"abc"), "abc");
    }
}
