//! What a store holds for its instance, and the guest's memory as the imports read and write it.

use std::sync::Arc;

use wapc::ModuleState;
use wasmtime::{AsContextMut, Caller, Extern, Memory};

/// What a store holds for its instance: the protocol's state, once `WapcHost` hands it over.
#[derive(Default)]
pub(crate) struct State {
    pub(crate) host: Option<Arc<ModuleState>>,
}

/// The protocol's state; an import the guest calls before `init` has handed it over traps.
pub(crate) fn host(caller: &Caller<'_, State>) -> wasmtime::Result<Arc<ModuleState>> {
    match &caller.data().host {
        Some(host) => Ok(Arc::clone(host)),
        None => wasmtime::bail!("the waPC host is not set before the guest runs"),
    }
}

fn memory(caller: &mut Caller<'_, State>) -> wasmtime::Result<Memory> {
    match caller.get_export("memory") {
        Some(Extern::Memory(memory)) => Ok(memory),
        _ => wasmtime::bail!("the guest exports no memory"),
    }
}

/// `len` bytes of the guest's memory at `ptr`; out of bounds traps the guest.
pub(crate) fn read(
    caller: &mut Caller<'_, State>,
    ptr: i32,
    len: i32,
) -> wasmtime::Result<Vec<u8>> {
    let memory = memory(caller)?;
    let mut bytes = vec![0; usize::try_from(len)?];
    memory.read(&*caller, usize::try_from(ptr)?, &mut bytes)?;
    Ok(bytes)
}

pub(crate) fn write(
    caller: &mut Caller<'_, State>,
    ptr: i32,
    bytes: &[u8],
) -> wasmtime::Result<()> {
    let memory = memory(caller)?;
    memory.write(caller.as_context_mut(), usize::try_from(ptr)?, bytes)?;
    Ok(())
}

pub(crate) fn text(caller: &mut Caller<'_, State>, ptr: i32, len: i32) -> wasmtime::Result<String> {
    Ok(String::from_utf8(read(caller, ptr, len)?)?)
}
