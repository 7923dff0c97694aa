fn main() {
    eprintln!("offlab-fwd: not built yet");
    std::process::exit(2);
}
