//! A minimal waPC host written directly over wasmtime, for the tests that need what
//! `wasmtime-provider` keeps private: the module's linear memory. It uses the wasmtime and
//! wasmtime-wasi that `wasmtime-provider` re-exports, so there is one wasmtime in the build.
//!
//! The waPC guest protocol, as the provider implements it: the host calls the guest's
//! `__guest_call(operation_len, payload_len)`; the guest asks for the bytes with
//! `wapc.__guest_request(operation_ptr, payload_ptr)`, answers with `__guest_response(ptr, len)`
//! or `__guest_error(ptr, len)`, and `__guest_call` returns 1 on success. `__host_call` and its
//! companions serve guest-to-host calls (this policy makes none; they fail here), and
//! `__console_log` prints. WASI preview 1 is linked as the policy server links it.

use anyhow::{Context, Result, anyhow, bail};
use wasmtime_provider::wasmtime::{
    self, AsContextMut, Caller, Engine, Extern, Linker, Memory, Module, Store, TypedFunc,
};
use wasmtime_provider::wasmtime_wasi::WasiCtxBuilder;
use wasmtime_provider::wasmtime_wasi::p1::WasiP1Ctx;

/// What the host keeps for the guest between imports of one call.
struct State {
    wasi: WasiP1Ctx,
    operation: Vec<u8>,
    payload: Vec<u8>,
    response: Option<Vec<u8>>,
    error: Option<Vec<u8>>,
    host_error: Vec<u8>,
}

/// The compiled module.
pub struct BareModule {
    engine: Engine,
    module: Module,
}

/// One instance of the module, called as many times as the test likes.
pub struct BareInstance {
    store: Store<State>,
    memory: Memory,
    guest_call: TypedFunc<(i32, i32), i32>,
}

fn wasm_error(e: wasmtime::Error) -> anyhow::Error {
    anyhow!("{e:?}")
}

fn memory_of(caller: &mut Caller<'_, State>) -> wasmtime::Result<Memory> {
    match caller.get_export("memory") {
        Some(Extern::Memory(memory)) => Ok(memory),
        _ => wasmtime::bail!("the guest exports no memory"),
    }
}

fn read(caller: &mut Caller<'_, State>, ptr: i32, len: i32) -> wasmtime::Result<Vec<u8>> {
    let memory = memory_of(caller)?;
    let mut bytes = vec![0; usize::try_from(len)?];
    memory.read(&*caller, usize::try_from(ptr)?, &mut bytes)?;
    Ok(bytes)
}

fn write(caller: &mut Caller<'_, State>, ptr: i32, bytes: &[u8]) -> wasmtime::Result<()> {
    let memory = memory_of(caller)?;
    memory.write(caller.as_context_mut(), usize::try_from(ptr)?, bytes)?;
    Ok(())
}

fn link_wapc(linker: &mut Linker<State>) -> wasmtime::Result<()> {
    linker.func_wrap(
        "wapc",
        "__guest_request",
        |mut caller: Caller<'_, State>, operation_ptr: i32, payload_ptr: i32| {
            let payload = std::mem::take(&mut caller.data_mut().payload);
            let operation = std::mem::take(&mut caller.data_mut().operation);
            write(&mut caller, payload_ptr, &payload)?;
            write(&mut caller, operation_ptr, &operation)?;
            Ok(())
        },
    )?;
    linker.func_wrap(
        "wapc",
        "__guest_response",
        |mut caller: Caller<'_, State>, ptr: i32, len: i32| {
            let bytes = read(&mut caller, ptr, len)?;
            caller.data_mut().response = Some(bytes);
            Ok(())
        },
    )?;
    linker.func_wrap(
        "wapc",
        "__guest_error",
        |mut caller: Caller<'_, State>, ptr: i32, len: i32| {
            let bytes = read(&mut caller, ptr, len)?;
            caller.data_mut().error = Some(bytes);
            Ok(())
        },
    )?;
    linker.func_wrap(
        "wapc",
        "__host_call",
        |mut caller: Caller<'_, State>,
         _binding_ptr: i32,
         _binding_len: i32,
         _namespace_ptr: i32,
         _namespace_len: i32,
         _operation_ptr: i32,
         _operation_len: i32,
         _payload_ptr: i32,
         _payload_len: i32|
         -> i32 {
            caller.data_mut().host_error = b"this test host serves no host calls".to_vec();
            0
        },
    )?;
    linker.func_wrap("wapc", "__host_response", |_ptr: i32| {})?;
    linker.func_wrap("wapc", "__host_response_len", || -> i32 { 0 })?;
    linker.func_wrap(
        "wapc",
        "__host_error_len",
        |caller: Caller<'_, State>| -> i32 {
            i32::try_from(caller.data().host_error.len()).unwrap_or(i32::MAX)
        },
    )?;
    linker.func_wrap(
        "wapc",
        "__host_error",
        |mut caller: Caller<'_, State>, ptr: i32| {
            let error = caller.data().host_error.clone();
            write(&mut caller, ptr, &error)
        },
    )?;
    linker.func_wrap(
        "wapc",
        "__console_log",
        |mut caller: Caller<'_, State>, ptr: i32, len: i32| {
            let bytes = read(&mut caller, ptr, len)?;
            eprintln!("guest: {}", String::from_utf8_lossy(&bytes));
            Ok(())
        },
    )?;
    Ok(())
}

impl BareModule {
    pub fn from_bytes(bytes: &[u8]) -> Result<BareModule> {
        let engine = Engine::default();
        let module = Module::new(&engine, bytes)
            .map_err(wasm_error)
            .context("cannot compile the policy module")?;
        Ok(BareModule { engine, module })
    }

    /// Instantiates the module and runs its waPC initialisation (`_start`, then `wapc_init`).
    pub fn instance(&self) -> Result<BareInstance> {
        let mut linker = Linker::new(&self.engine);
        wasmtime_provider::wasmtime_wasi::p1::add_to_linker_sync(&mut linker, |s: &mut State| {
            &mut s.wasi
        })
        .map_err(wasm_error)?;
        link_wapc(&mut linker).map_err(wasm_error)?;
        let state = State {
            wasi: WasiCtxBuilder::new().inherit_stderr().build_p1(),
            operation: Vec::new(),
            payload: Vec::new(),
            response: None,
            error: None,
            host_error: Vec::new(),
        };
        let mut store = Store::new(&self.engine, state);
        let instance = linker
            .instantiate(&mut store, &self.module)
            .map_err(wasm_error)?;
        for start in ["_start", "wapc_init"] {
            if let Ok(init) = instance.get_typed_func::<(), ()>(&mut store, start) {
                init.call(&mut store, ())
                    .map_err(wasm_error)
                    .with_context(|| format!("{start} failed"))?;
            }
        }
        let memory = instance
            .get_memory(&mut store, "memory")
            .context("the module exports no memory")?;
        let guest_call = instance
            .get_typed_func::<(i32, i32), i32>(&mut store, "__guest_call")
            .map_err(wasm_error)?;
        Ok(BareInstance {
            store,
            memory,
            guest_call,
        })
    }
}

impl BareInstance {
    /// Calls a waPC function; a trap or a guest error is an `Err`.
    pub fn call(&mut self, operation: &str, payload: &[u8]) -> Result<Vec<u8>> {
        let state = self.store.data_mut();
        state.operation = operation.as_bytes().to_vec();
        state.payload = payload.to_vec();
        state.response = None;
        state.error = None;
        let operation_len = i32::try_from(operation.len())?;
        let payload_len = i32::try_from(payload.len())?;
        let ok = self
            .guest_call
            .call(&mut self.store, (operation_len, payload_len))
            .map_err(wasm_error)
            .with_context(|| format!("`{operation}` trapped"))?;
        let state = self.store.data_mut();
        if let Some(error) = state.error.take() {
            bail!("`{operation}` failed: {}", String::from_utf8_lossy(&error));
        }
        match (ok, state.response.take()) {
            (1, Some(response)) => Ok(response),
            (code, _) => bail!("`{operation}` returned {code} without a response"),
        }
    }

    /// The size of the module's linear memory, in bytes.
    pub fn memory_size(&self) -> usize {
        self.memory.data_size(&self.store)
    }
}
