//! The committed header is what the code generates: a C user never reads a
//! declaration the library does not have.

#[test]
fn committed_header_matches_the_code() {
    let dir = env!("CARGO_MANIFEST_DIR");
    let config = cbindgen::Config::from_file(format!("{dir}/cbindgen.toml")).expect("cbindgen.toml");
    let generated = cbindgen::Builder::new().with_crate(dir).with_config(config).generate().expect("cbindgen");
    let mut fresh = Vec::new();
    generated.write(&mut fresh);
    let path = format!("{dir}/include/corecast.h");
    if std::env::var_os("CORECAST_BLESS_HEADER").is_some() {
        std::fs::write(&path, &fresh).expect("write the header");
    }
    let committed = std::fs::read(&path).unwrap_or_default();
    assert!(
        committed == fresh,
        "{path} differs from what the code generates; regenerate it with \
         `CORECAST_BLESS_HEADER=1 cargo test -p corecast-c --test header` and commit it"
    );
}
