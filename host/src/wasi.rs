//! The WASI preview 1 calls a Rust waPC policy for `wasm32-wasip1` imports, answered as
//! `wasmtime-wasi` answers them for the policy server's context: no arguments, no environment,
//! the host's stdout and stderr, random bytes from the operating system, and an exit that ends
//! the call. A module that imports any other WASI call is refused when it is linked.

use wasmtime::{Caller, Linker};

use crate::store::{State, read, write};

/// WASI's `errno`: success, a bad file descriptor, an I/O error.
const SUCCESS: i32 = 0;
const BADF: i32 = 8;
const IO: i32 = 29;

const WASI: &str = "wasi_snapshot_preview1";

pub(crate) fn link(linker: &mut Linker<State>) -> wasmtime::Result<()> {
    linker.func_wrap(
        WASI,
        "environ_sizes_get",
        |mut caller: Caller<'_, State>, count_ptr: i32, size_ptr: i32| {
            write(&mut caller, count_ptr, &0u32.to_le_bytes())?;
            write(&mut caller, size_ptr, &0u32.to_le_bytes())?;
            Ok(SUCCESS)
        },
    )?;
    // An empty environment: there is nothing to write.
    linker.func_wrap(WASI, "environ_get", |_environ: i32, _buffer: i32| SUCCESS)?;
    linker.func_wrap(
        WASI,
        "random_get",
        |mut caller: Caller<'_, State>, ptr: i32, len: i32| {
            let mut bytes = vec![0; usize::try_from(len)?];
            if getrandom::fill(&mut bytes).is_err() {
                return Ok(IO);
            }
            write(&mut caller, ptr, &bytes)?;
            Ok(SUCCESS)
        },
    )?;
    linker.func_wrap(WASI, "fd_write", fd_write)?;
    linker.func_wrap(WASI, "proc_exit", |status: i32| -> wasmtime::Result<()> {
        wasmtime::bail!("the guest exited with status {status}")
    })?;
    Ok(())
}

/// Writes the buffers of the `iovs_len` (pointer, length) pairs at `iovs` to stdout (1) or
/// stderr (2), and how many bytes that was at `written_ptr`.
fn fd_write(
    mut caller: Caller<'_, State>,
    fd: i32,
    iovs: i32,
    iovs_len: i32,
    written_ptr: i32,
) -> wasmtime::Result<i32> {
    use std::io::Write;
    let mut out: Box<dyn Write> = match fd {
        1 => Box::new(std::io::stdout().lock()),
        2 => Box::new(std::io::stderr().lock()),
        _ => return Ok(BADF),
    };
    let pairs = read(&mut caller, iovs, iovs_len.saturating_mul(8))?;
    let mut written: u32 = 0;
    for pair in pairs.chunks_exact(8) {
        let (ptr, len) = pair.split_at(4);
        let ptr = u32::from_le_bytes(ptr.try_into()?);
        let len = u32::from_le_bytes(len.try_into()?);
        let bytes = read(&mut caller, i32::try_from(ptr)?, i32::try_from(len)?)?;
        if out.write_all(&bytes).is_err() {
            return Ok(IO);
        }
        written = written.saturating_add(len);
    }
    write(&mut caller, written_ptr, &written.to_le_bytes())?;
    Ok(SUCCESS)
}
