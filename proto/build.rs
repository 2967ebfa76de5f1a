// Compiles the .proto files with protox (pure Rust): building needs no system protoc.
fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed=astragal/v1/bot.proto");
    let fds = protox::compile(["astragal/v1/bot.proto"], ["."])?;
    tonic_prost_build::compile_fds(fds)?;
    Ok(())
}
