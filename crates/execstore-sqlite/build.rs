//! On 64-bit Linux, compiles the variadic `fcntl` trampoline of `src/db/ofd` (see its module).

fn main() {
    println!("cargo:rerun-if-changed=src/db/ofd/fcntl.c");
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let width = std::env::var("CARGO_CFG_TARGET_POINTER_WIDTH").unwrap_or_default();
    if os == "linux" && width == "64" {
        cc::Build::new()
            .file("src/db/ofd/fcntl.c")
            .compile("execstore_ofd");
    }
}
