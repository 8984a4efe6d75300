//! The store through the component boundary: the host ([`execstore_component_host`]) runs
//! the wasm32-wasip2 component in wasmtime, and every call of these tests crosses into it
//! and back.
//!
//! One test binary on purpose: compiling the component to machine code is the slow part
//! of these tests (about a minute for the SQLite build with a debug-built wasmtime on two
//! busy cores), and it is done once per binary.
//!
//! The component is built by the first test that needs it (a no-op when it is up to date);
//! it fails every test, saying how to fix it, when it cannot be built. Set
//! `EXECSTORE_SKIP_COMPONENT=<reason>` to compile these tests out on such a machine: they
//! are then reported as ignored.

#[cfg(not(execstore_skip_component))]
mod boundary;
#[cfg(not(execstore_skip_component))]
mod conformance;
#[cfg(not(execstore_skip_component))]
mod support;
#[cfg(not(execstore_skip_component))]
mod workspace;

#[cfg(execstore_skip_component)]
#[test]
#[ignore = "EXECSTORE_SKIP_COMPONENT is set: the component is not built on this machine"]
fn component_tests() {}
