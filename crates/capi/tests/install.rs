//! `make install PREFIX=…` puts the header, the static and the shared library (with its
//! SONAME links and symbol versions) and a pkg-config file under the prefix, and a C program built with
//! `pkg-config --cflags --libs offlab-engine` links against it and runs.
use std::path::Path;
use std::process::Command;

fn run(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn make_install_gives_a_pkg_config_package_a_c_program_builds_against() {
    if Command::new("pkg-config").arg("--version").output().is_err() {
        eprintln!("make_install: SKIPPED — pkg-config is not installed");
        return;
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let prefix = std::env::temp_dir().join(format!("offlab-install-{}", std::process::id()));
    run(Command::new("make").arg("-C").arg(&root).arg("--no-print-directory").arg("install").arg(format!("PREFIX={}", prefix.display())));
    let lib = prefix.join("lib");
    for file in ["libofflab_engine_c.a", "libofflab_engine_c.so", "libofflab_engine_c.so.1", "pkgconfig/offlab-engine.pc"] {
        assert!(lib.join(file).exists(), "{file} not installed");
    }
    assert!(prefix.join("include/offlab_engine.h").exists());
    // The real file is the versioned library; the SONAME and dev names are links to it.
    let real = format!("libofflab_engine_c.so.{}", env!("CARGO_PKG_VERSION"));
    assert!(lib.join(&real).symlink_metadata().unwrap().file_type().is_file(), "{real}");
    for link in ["libofflab_engine_c.so", "libofflab_engine_c.so.1"] {
        assert!(lib.join(link).symlink_metadata().unwrap().file_type().is_symlink(), "{link}");
    }
    let symbols = run(Command::new("readelf").args(["--dyn-syms", "-W"]).arg(lib.join(&real)));
    assert!(symbols.contains("ofl_gro_new@@OFL_1.0") && symbols.contains("ofl_gro_new_ex@@OFL_1.2"), "{symbols}");
    let flags = run(Command::new("pkg-config")
        .args(["--cflags", "--libs", "offlab-engine"])
        .env("PKG_CONFIG_PATH", lib.join("pkgconfig")));
    let exe = prefix.join("example");
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    run(Command::new(&cc)
        .args(["-O2", "-std=c11"])
        .arg(root.join("crates/capi/examples/c/example.c"))
        .args(flags.split_whitespace())
        .arg("-o")
        .arg(&exe));
    let out = run(Command::new(&exe).env("LD_LIBRARY_PATH", &lib));
    // A bad prefix: one line, non-zero exit, nothing created.
    let bad = Command::new("make").arg("-C").arg(&root).args(["--no-print-directory", "install", "PREFIX=relative"]).output().unwrap();
    let _ = std::fs::remove_dir_all(&prefix);
    assert!(out.contains("all checks passed"), "{out}");
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("PREFIX must be an absolute path"));
    assert!(!root.join("relative").exists());
}
