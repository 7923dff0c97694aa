//! Generates include/offlab_engine.h with cbindgen (and a copy in OUT_DIR, which the
//! header test compares with the committed file).
use std::path::PathBuf;

fn main() {
    let dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    let out_dir = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets it"));
    println!("cargo:rerun-if-changed=src");
    println!("cargo:rerun-if-changed=cbindgen.toml");
    println!("cargo:rerun-if-changed=build.rs");
    // A packaged crate (crates.io, `cargo publish` verification; cargo adds
    // Cargo.toml.orig) ships the header as committed: cbindgen would run `cargo
    // metadata` on it, which resolves the engine from the registry, and a build script
    // must not rewrite a package's sources.
    if dir.join("Cargo.toml.orig").exists() {
        std::fs::copy(
            dir.join("include/offlab_engine.h"),
            out_dir.join("offlab_engine.h"),
        )
        .expect("the packaged header");
        return;
    }
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
