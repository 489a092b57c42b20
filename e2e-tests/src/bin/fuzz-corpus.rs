//! Writes the seed corpus of the fuzz targets (`make fuzz-corpus`) from the end-to-end cases:
//! every case's request as a `validate` payload, every settings block as a `validate_settings`
//! input, and every pod (and every expected mutated pod) with its case's settings as an
//! `opted_in` input (settings, a NUL byte, the pod). File names are
//! content hashes, so running it again adds nothing new.
//!
//! Usage: `fuzz-corpus [DIR]`, DIR defaulting to `fuzz/corpus`.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use e2e_tests::cases::{self, Case, SettingsCase};

fn main() -> Result<()> {
    let out = PathBuf::from(
        std::env::args()
            .nth(1)
            .unwrap_or_else(|| "fuzz/corpus".into()),
    );
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut written = 0;
    for (_, case) in cases::load::<Case>(&root.join("cases"))? {
        written += write(&out.join("validate"), &case.payload())?;
        // A case given as a whole payload has no settings or pod of its own.
        if case.payload.is_some() {
            continue;
        }
        written += write(
            &out.join("validate_settings"),
            &serde_json::to_vec(&case.settings)?,
        )?;
        for pod in std::iter::once(&case.object).chain(case.expect.pod.as_ref()) {
            let mut input = serde_json::to_vec(&case.settings)?;
            input.push(0);
            input.extend(serde_json::to_vec(pod)?);
            written += write(&out.join("opted_in"), &input)?;
        }
    }
    for (_, case) in cases::load::<SettingsCase>(&root.join("settings-cases"))? {
        written += write(&out.join("validate_settings"), &case.payload())?;
    }
    println!("{written} new seed inputs under {}", out.display());
    Ok(())
}

/// Writes `bytes` under a name from their FNV-1a hash; 1 if the file is new.
fn write(dir: &Path, bytes: &[u8]) -> Result<usize> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let hash = bytes.iter().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    });
    let path = dir.join(format!("{hash:016x}"));
    if path.exists() {
        return Ok(0);
    }
    std::fs::write(&path, bytes).with_context(|| format!("cannot write {}", path.display()))?;
    Ok(1)
}
