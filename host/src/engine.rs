//! The lean engine: the waPC protocol of the `wapc` crate bound to a wasmtime instance, as
//! `wasmtime-provider` (the policy server's engine) binds it, with no more of wasmtime than
//! its runtime and Cranelift.
//!
//! The host calls the guest's `__guest_call(operation_len, payload_len)`; the guest fetches the
//! operation and payload with `wapc.__guest_request`, answers with `__guest_response` or
//! `__guest_error`, and may call the host with `__host_call`, whose answer or error it then
//! reads with `__host_response(_len)` or `__host_error(_len)`. Every one of these is answered
//! from the [`ModuleState`] that `wapc::WapcHost` keeps, so the protocol's bookkeeping is the
//! crate's, not this file's.

use std::error::Error;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use anyhow::{Context, Result};
use wapc::{ModuleState, WebAssemblyEngineProvider, wapc_functions as wapc_fn};
use wasmtime::{Caller, Engine, InstancePre, Linker, Memory, Module, Store, TypedFunc};

use crate::store::{State, host, read, text, write};
use crate::wasi;

type BoxError = Box<dyn Error + Send + Sync>;

/// The module compiled and linked once; each [`LeanEngine`] instantiates it in a store of its own.
#[derive(Clone)]
pub struct LeanModule {
    engine: Engine,
    pre: InstancePre<State>,
}

/// One instance of the module, driven by `wapc::WapcHost`.
pub struct LeanEngine {
    pre: InstancePre<State>,
    store: Store<State>,
    guest_call: Option<TypedFunc<(i32, i32), i32>>,
    memory: Option<Memory>,
    /// The size of the guest's linear memory after its last call, for whoever holds a clone.
    memory_size: Arc<AtomicUsize>,
}

impl LeanModule {
    /// Compiles `bytes` with wasmtime's default configuration, as `wasmtime-provider` does, and
    /// links the waPC and WASI imports; an import neither provides is an error here.
    pub fn new(bytes: &[u8]) -> Result<LeanModule> {
        let engine = Engine::default();
        let module = Module::new(&engine, bytes).map_err(wasm_error)?;
        let mut linker = Linker::new(&engine);
        link_wapc(&mut linker).map_err(wasm_error)?;
        wasi::link(&mut linker).map_err(wasm_error)?;
        let pre = linker.instantiate_pre(&module).map_err(wasm_error)?;
        Ok(LeanModule { engine, pre })
    }

    /// A fresh instance, for `wapc::WapcHost::new` to initialise.
    pub fn engine(&self) -> LeanEngine {
        LeanEngine {
            pre: self.pre.clone(),
            store: Store::new(&self.engine, State::default()),
            guest_call: None,
            memory: None,
            memory_size: Arc::default(),
        }
    }
}

impl LeanEngine {
    /// Where this instance tells the size of its linear memory after each call, in bytes.
    pub fn memory_size(&self) -> Arc<AtomicUsize> {
        Arc::clone(&self.memory_size)
    }

    fn note_memory_size(&mut self) {
        if let Some(memory) = self.memory {
            let size = memory.data_size(&self.store);
            self.memory_size.store(size, Ordering::Relaxed);
        }
    }
}

impl WebAssemblyEngineProvider for LeanEngine {
    /// Instantiates the module and runs its initialisers (`_start`, then `wapc_init`, where
    /// exported), as `wasmtime-provider` does.
    fn init(&mut self, host: Arc<ModuleState>) -> Result<(), BoxError> {
        self.store.data_mut().host = Some(host);
        let instance = self.pre.instantiate(&mut self.store)?;
        for start in wapc_fn::REQUIRED_STARTS {
            if instance.get_export(&mut self.store, start).is_some() {
                let init = instance.get_typed_func::<(), ()>(&mut self.store, start)?;
                init.call(&mut self.store, ())
                    .map_err(wasm_error)
                    .with_context(|| format!("{start} failed"))?;
            }
        }
        let guest_call = instance
            .get_typed_func(&mut self.store, wapc_fn::GUEST_CALL)
            .map_err(wasm_error)
            .context("the module exports no __guest_call")?;
        self.guest_call = Some(guest_call);
        self.memory = instance.get_memory(&mut self.store, "memory");
        self.note_memory_size();
        Ok(())
    }

    /// A trap is the guest's error, as `wasmtime-provider` reports it: the call answers 0 and
    /// the host reads the error from the protocol's state.
    fn call(&mut self, operation_len: i32, payload_len: i32) -> Result<i32, BoxError> {
        let guest_call = self
            .guest_call
            .as_ref()
            .ok_or("the module was not initialised")?;
        let answer = match guest_call.call(&mut self.store, (operation_len, payload_len)) {
            Ok(answer) => answer,
            Err(trap) => {
                if let Some(host) = &self.store.data().host {
                    host.set_guest_error(trap.to_string());
                }
                0
            }
        };
        self.note_memory_size();
        Ok(answer)
    }

    fn replace(&mut self, _bytes: &[u8]) -> Result<(), BoxError> {
        Err("the lean engine does not replace its module".into())
    }
}

fn wasm_error(e: wasmtime::Error) -> anyhow::Error {
    anyhow::anyhow!("{e:?}")
}

fn link_wapc(linker: &mut Linker<State>) -> wasmtime::Result<()> {
    let wapc = wapc::HOST_NAMESPACE;
    linker.func_wrap(
        wapc,
        wapc_fn::GUEST_REQUEST_FN,
        |mut caller: Caller<'_, State>, operation_ptr: i32, payload_ptr: i32| {
            if let Some(invocation) = host(&caller)?.get_guest_request() {
                write(&mut caller, payload_ptr, &invocation.msg)?;
                write(&mut caller, operation_ptr, invocation.operation.as_bytes())?;
            }
            Ok(())
        },
    )?;
    linker.func_wrap(
        wapc,
        wapc_fn::GUEST_RESPONSE_FN,
        |mut caller: Caller<'_, State>, ptr: i32, len: i32| {
            let response = read(&mut caller, ptr, len)?;
            host(&caller)?.set_guest_response(response);
            Ok(())
        },
    )?;
    linker.func_wrap(
        wapc,
        wapc_fn::GUEST_ERROR_FN,
        |mut caller: Caller<'_, State>, ptr: i32, len: i32| {
            let error = text(&mut caller, ptr, len)?;
            host(&caller)?.set_guest_error(error);
            Ok(())
        },
    )?;
    linker.func_wrap(
        wapc,
        wapc_fn::HOST_CALL,
        |mut caller: Caller<'_, State>,
         binding_ptr: i32,
         binding_len: i32,
         namespace_ptr: i32,
         namespace_len: i32,
         operation_ptr: i32,
         operation_len: i32,
         payload_ptr: i32,
         payload_len: i32| {
            let binding = text(&mut caller, binding_ptr, binding_len)?;
            let namespace = text(&mut caller, namespace_ptr, namespace_len)?;
            let operation = text(&mut caller, operation_ptr, operation_len)?;
            let payload = read(&mut caller, payload_ptr, payload_len)?;
            let answer = host(&caller)?.do_host_call(&binding, &namespace, &operation, &payload);
            Ok(answer.unwrap_or(0))
        },
    )?;
    linker.func_wrap(
        wapc,
        wapc_fn::HOST_RESPONSE_LEN_FN,
        |caller: Caller<'_, State>| -> wasmtime::Result<i32> {
            Ok(i32::try_from(host(&caller)?.host_response_len())?)
        },
    )?;
    linker.func_wrap(
        wapc,
        wapc_fn::HOST_RESPONSE_FN,
        |mut caller: Caller<'_, State>, ptr: i32| {
            let host = host(&caller)?;
            let written = host.with_host_response(|response| write(&mut caller, ptr, response));
            written.unwrap_or(Ok(()))
        },
    )?;
    linker.func_wrap(
        wapc,
        wapc_fn::HOST_ERROR_LEN_FN,
        |caller: Caller<'_, State>| -> wasmtime::Result<i32> {
            let error = host(&caller)?.get_host_error().unwrap_or_default();
            Ok(i32::try_from(error.len())?)
        },
    )?;
    linker.func_wrap(
        wapc,
        wapc_fn::HOST_ERROR_FN,
        |mut caller: Caller<'_, State>, ptr: i32| {
            let error = host(&caller)?.get_host_error().unwrap_or_default();
            write(&mut caller, ptr, error.as_bytes())
        },
    )?;
    linker.func_wrap(
        wapc,
        wapc_fn::HOST_CONSOLE_LOG,
        |mut caller: Caller<'_, State>, ptr: i32, len: i32| {
            let message = text(&mut caller, ptr, len)?;
            host(&caller)?.do_console_log(&message);
            Ok(())
        },
    )?;
    Ok(())
}
