//! The `io.kubewarden.metadata` custom section: found with `wasmparser`, as the policy server
//! finds it, and written with `wasm-encoder`.
//!
//! The section is appended after the module's last section: custom sections may stand anywhere,
//! the policy server reads the first one of that name wherever it is, and appending leaves every
//! byte of the module as the build wrote it (kwctl re-encodes the whole module with walrus).

use anyhow::{Context, Result, bail, ensure};
use wasm_encoder::{CustomSection, Section};
use wasmparser::{Encoding, Parser, Payload};

/// The name of the custom section Kubewarden reads a policy's metadata from.
pub const METADATA_SECTION: &str = "io.kubewarden.metadata";

/// What a WebAssembly binary starts with.
const WASM_MAGIC: &[u8] = b"\0asm";

/// The data of every `io.kubewarden.metadata` section of `module`, in order, after checking that
/// `module` is a WebAssembly core module whose sections all parse.
pub fn metadata_sections(module: &[u8]) -> Result<Vec<&[u8]>> {
    ensure!(
        module.starts_with(WASM_MAGIC),
        "the file is not a WebAssembly module (it does not start with \\0asm)"
    );
    let mut found = Vec::new();
    for payload in Parser::new(0).parse_all(module) {
        match payload.context("the WebAssembly module is malformed")? {
            Payload::Version {
                encoding: Encoding::Component,
                ..
            } => bail!("the file is a WebAssembly component; Kubewarden policies are core modules"),
            Payload::CustomSection(reader) if reader.name() == METADATA_SECTION => {
                found.push(reader.data());
            }
            _ => {}
        }
    }
    Ok(found)
}

/// The module's size without its `io.kubewarden.metadata` sections: the code the policy server
/// runs, which the annotation does not change.
pub fn size_without_metadata(module: &[u8]) -> Result<usize> {
    let mut metadata = 0;
    for payload in Parser::new(0).parse_all(module) {
        if let Payload::CustomSection(reader) =
            payload.context("the WebAssembly module is malformed")?
            && reader.name() == METADATA_SECTION
        {
            // The section's contents (name and data), after its id byte and LEB128 size.
            let contents = reader.range().len();
            metadata += 1 + leb128_len(contents) + contents;
        }
    }
    Ok(module.len() - metadata)
}

fn leb128_len(mut n: usize) -> usize {
    let mut bytes = 1;
    while n >= 0x80 {
        n >>= 7;
        bytes += 1;
    }
    bytes
}

/// The data of the module's one `io.kubewarden.metadata` section, or `None` if it has none.
pub fn metadata_section(module: &[u8]) -> Result<Option<&[u8]>> {
    match metadata_sections(module)?.as_slice() {
        [] => Ok(None),
        [data] => Ok(Some(data)),
        more => bail!(
            "the module has {} {METADATA_SECTION} sections; the policy server reads only the first, so rebuild it and annotate it once",
            more.len()
        ),
    }
}

/// Refuses a module that has an `io.kubewarden.metadata` section already: a second would be
/// ignored by the policy server, which reads the first.
pub fn ensure_not_annotated(module: &[u8]) -> Result<()> {
    ensure!(
        metadata_sections(module)?.is_empty(),
        "the module already has an {METADATA_SECTION} section; annotate the module the build wrote (policy.wasm), not an annotated one"
    );
    Ok(())
}

/// `module` with an `io.kubewarden.metadata` section holding `data` appended, unless it has one.
pub fn with_metadata_section(module: &[u8], data: &[u8]) -> Result<Vec<u8>> {
    ensure_not_annotated(module)?;
    // The section's size is a u32 in the binary format.
    ensure!(
        u32::try_from(data.len() + METADATA_SECTION.len() + 5).is_ok(),
        "the metadata is {} bytes, more than a WebAssembly section can hold; shorten the usage text",
        data.len()
    );
    let mut annotated = module.to_vec();
    CustomSection {
        name: METADATA_SECTION.into(),
        data: data.into(),
    }
    .append_to(&mut annotated);
    Ok(annotated)
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasm_encoder::{
        CodeSection, ExportKind, ExportSection, Function, FunctionSection, Instruction, Module,
        TypeSection,
    };

    #[test]
    fn the_size_without_metadata_is_the_plain_modules() {
        let plain = module();
        for data in [&b"{}"[..], &[b'x'; 300][..], &[b'y'; 70_000][..]] {
            let annotated = with_metadata_section(&plain, data).unwrap();
            assert_eq!(size_without_metadata(&annotated).unwrap(), plain.len());
        }
        assert_eq!(size_without_metadata(&plain).unwrap(), plain.len());
    }

    /// A small module with a custom section before and after its code.
    fn module() -> Vec<u8> {
        let mut module = Module::new();
        let mut types = TypeSection::new();
        types.ty().function([], []);
        module.section(&types);
        module.section(&CustomSection {
            name: "producers".into(),
            data: b"x".as_slice().into(),
        });
        let mut functions = FunctionSection::new();
        functions.function(0);
        module.section(&functions);
        let mut exports = ExportSection::new();
        exports.export("f", ExportKind::Func, 0);
        module.section(&exports);
        let mut code = CodeSection::new();
        let mut body = Function::new([]);
        body.instruction(&Instruction::End);
        code.function(&body);
        module.section(&code);
        module.section(&CustomSection {
            name: "name".into(),
            data: b"".as_slice().into(),
        });
        module.finish()
    }

    /// Every section as (id, custom section name, bytes of its content), in order, read with
    /// wasmparser's generic section view.
    fn sections(module: &[u8]) -> Vec<(u8, Option<String>, Vec<u8>)> {
        Parser::new(0)
            .parse_all(module)
            .filter_map(|payload| {
                let payload = payload.unwrap();
                let name = match &payload {
                    Payload::CustomSection(reader) => Some(reader.name().to_string()),
                    _ => None,
                };
                payload
                    .as_section()
                    .map(|(id, range)| (id, name, module[range].to_vec()))
            })
            .collect()
    }

    #[test]
    fn appends_one_section_and_keeps_the_rest() {
        let plain = module();
        wasmparser::validate(&plain).unwrap();
        assert_eq!(metadata_section(&plain).unwrap(), None);

        let annotated = with_metadata_section(&plain, br#"{"a":1}"#).unwrap();
        wasmparser::validate(&annotated).unwrap();
        assert_eq!(
            metadata_section(&annotated).unwrap(),
            Some(br#"{"a":1}"#.as_slice())
        );
        let before = sections(&plain);
        let after = sections(&annotated);
        assert_eq!(after.len(), before.len() + 1);
        assert_eq!(
            after[..before.len()],
            before[..],
            "the sections of the module changed"
        );
        assert_eq!(
            after[before.len()],
            (0, Some(METADATA_SECTION.to_string()), {
                // A custom section's content: its name as a length-prefixed string, then the data.
                let mut content = vec![METADATA_SECTION.len() as u8];
                content.extend(METADATA_SECTION.as_bytes());
                content.extend(br#"{"a":1}"#);
                content
            })
        );
        assert!(annotated.starts_with(&plain));
    }

    #[test]
    fn refuses_a_module_annotated_already_and_what_is_not_a_module() {
        let annotated = with_metadata_section(&module(), b"{}").unwrap();
        let again = format!(
            "{:#}",
            with_metadata_section(&annotated, b"{}").unwrap_err()
        );
        assert!(
            again.contains("already has an io.kubewarden.metadata section"),
            "{again}"
        );

        // One written twice by other tools: inspecting it says so.
        let mut twice = annotated.clone();
        CustomSection {
            name: METADATA_SECTION.into(),
            data: b"{}".as_slice().into(),
        }
        .append_to(&mut twice);
        let message = format!("{:#}", metadata_section(&twice).unwrap_err());
        assert!(
            message.contains("has 2 io.kubewarden.metadata sections"),
            "{message}"
        );

        let not_wasm = format!("{:#}", metadata_sections(b"hello").unwrap_err());
        assert!(not_wasm.contains("not a WebAssembly module"), "{not_wasm}");
        let mut truncated = module();
        truncated.truncate(truncated.len() - 3);
        let malformed = format!("{:#}", metadata_sections(&truncated).unwrap_err());
        assert!(malformed.contains("malformed"), "{malformed}");
    }
}
