//! Gives the shared library the name it is installed under
//! (`libcorecast.so.0`, see scripts/install-c.sh), so programs linked
//! against the installed library load it by that name.

fn main() {
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libcorecast.so.0");
}
