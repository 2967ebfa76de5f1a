// Compiles the .proto files with protox (pure Rust): building needs no system protoc.
fn main() -> Result<(), Box<dyn std::error::Error>> {
    const PROTOS: [&str; 2] = ["astragal/v1/bot.proto", "astragal/ladder/v1/ladder.proto"];
    for p in PROTOS {
        println!("cargo:rerun-if-changed={p}");
    }
    let fds = protox::compile(PROTOS, ["."])?;
    tonic_prost_build::compile_fds(fds)?;
    Ok(())
}
