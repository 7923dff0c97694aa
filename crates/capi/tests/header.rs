//! The committed C header is what cbindgen generates from the current source.
use std::path::Path;
use std::process::Command;

#[test]
fn committed_header_is_up_to_date() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let generated = std::fs::read_to_string(concat!(env!("OUT_DIR"), "/offlab_engine.h"))
        .expect("build.rs writes the generated header into OUT_DIR");
    let in_tree = std::fs::read_to_string(dir.join("include/offlab_engine.h"))
        .expect("include/offlab_engine.h exists");
    assert_eq!(
        in_tree, generated,
        "include/offlab_engine.h differs from cbindgen's output"
    );
    // build.rs rewrites the file when the API changes; this catches a rewrite that was
    // never committed (skipped outside a git checkout).
    let head = Command::new("git")
        .args(["show", "HEAD:./include/offlab_engine.h"])
        .current_dir(dir)
        .output();
    if let Ok(head) = head {
        if head.status.success() {
            assert!(
                String::from_utf8_lossy(&head.stdout) == generated,
                "the committed include/offlab_engine.h is stale: commit the regenerated header"
            );
        }
    }
}
