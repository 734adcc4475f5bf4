//! Gives the shared library the name it is installed under
//! (`libcorecast.so.0`, see scripts/install-c.sh), so programs linked
//! against the installed library load it by that name, and limits its
//! exports to `corecast_*` (`corecast.map`, a version script as liburing's).

fn main() {
    let dir = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=corecast.map");
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libcorecast.so.0");
    println!("cargo:rustc-cdylib-link-arg=-Wl,--version-script={dir}/corecast.map");
}
