//! Compiles `proto/` with protox (pure Rust, no protoc) and generates prost + tonic code.

use std::{env, fs, path::PathBuf};

use prost::Message;

const PROTOS: &[&str] = &[
    "fedsearch/types/v1/types.proto",
    "fedsearch/adapter/v1/adapter.proto",
    "fedsearch/adapter/v1/diagnostics.proto",
    "fedsearch/fusion/v1/fusion.proto",
    "fedsearch/v1/search.proto",
];

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let root = PathBuf::from(env::var("CARGO_MANIFEST_DIR")?).join("../../proto");
    println!("cargo:rerun-if-changed={}", root.display());
    let mut compiler = protox::Compiler::new([&root])?;
    compiler.include_imports(true).include_source_info(true);
    compiler.open_files(PROTOS)?;
    let fds = compiler.file_descriptor_set();
    let out = PathBuf::from(env::var("OUT_DIR")?);
    fs::write(out.join("fedsearch_descriptor.bin"), fds.encode_to_vec())?;
    tonic_prost_build::configure()
        // Secrets get a hand-written redacting Debug impl (see lib.rs).
        .skip_debug([".fedsearch.types.v1.Secret"])
        .include_file("_includes.rs")
        .compile_fds(fds)?;
    Ok(())
}
