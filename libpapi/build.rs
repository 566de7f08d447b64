//! Gives the shared library PAPI's soname, `libpapi.so.7.0`, so that a
//! program linked against Debian's libpapi (which records that soname)
//! loads this one from `LD_LIBRARY_PATH`, and one linked against this one
//! records the same name.
fn main() {
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    if matches!(os.as_str(), "linux" | "freebsd") {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libpapi.so.7.0");
    }
    println!("cargo:rerun-if-changed=build.rs");
}
