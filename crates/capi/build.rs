//! Generates include/offlab_engine.h with cbindgen (and a copy in OUT_DIR, which the
//! header test compares with the committed file).
use std::path::PathBuf;

/// The ABI major version: the SONAME's number (`OFL_ABI_MAJOR` in the header).
const ABI_MAJOR: u32 = 1;

fn main() {
    let dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    let out_dir = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets it"));
    println!("cargo:rerun-if-changed=src");
    println!("cargo:rerun-if-changed=cbindgen.toml");
    println!("cargo:rerun-if-changed=build.rs");
    // The shared library's ABI contract: a SONAME that changes only with the ABI major
    // version. Symbol versions are not set: rustc links a cdylib with its own anonymous
    // version script, which GNU ld refuses to combine with a named one ("anonymous
    // version tag cannot be combined with other version tags") and rust-lld lets
    // override it (the symbols stay unversioned).
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libofflab_engine_c.so.{ABI_MAJOR}");
    let config = cbindgen::Config::from_file(dir.join("cbindgen.toml")).expect("cbindgen.toml");
    let bindings = cbindgen::Builder::new()
        .with_crate(&dir)
        .with_config(config)
        .generate()
        .expect("cbindgen could not generate the C header");
    bindings.write_to_file(out_dir.join("offlab_engine.h"));
    // Only rewritten when the contents change, so an unchanged API leaves it alone.
    bindings.write_to_file(dir.join("include").join("offlab_engine.h"));
}
