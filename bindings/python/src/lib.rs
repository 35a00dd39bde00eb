//! `memdb._native`: the engine behind a PyO3 module, the native half of the
//! `memdb` Python package (`bindings/python/python/memdb/` is the other).
//!
//! It owns one class, [`store::Store`] (an open data directory seen from one
//! namespace, with Sekha's, Memorg's, KuraDB's and the vector operations), the
//! exception classes that mirror `memdb::Error` ([`errors`]), and the
//! conversion of arguments and results between Python objects and the
//! engine's serde types ([`convert`]). Every call that touches storage, the
//! indexes or the embedding model releases the GIL. Results cross as plain
//! Python values (dicts, lists, strings, numbers); the pure-Python layer
//! turns them into typed objects (`uuid.UUID`, `datetime`, dataclasses).
//! No ranking or validation lives here: the engine does both.

mod convert;
mod errors;
mod store;

use pyo3::prelude::*;

/// The native module. Its classes and functions are private to the
/// `memdb` package, which wraps them.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<store::Store>()?;
    errors::register(m)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
