//! The exception classes of `memdb` (one per `memdb::Error` family, all
//! under `MemdbError`) and the mapping from an engine error to one of them.
//! `InvalidInput` carries the offending `.field` (`messages[0].content`),
//! `NotFound` the `.what` and `.id`; every exception's message is the
//! engine's own one line.

use pyo3::exceptions::PyException;
use pyo3::prelude::*;

pyo3::create_exception!(
    memdb,
    MemdbError,
    PyException,
    "Base class of every memdb error."
);
pyo3::create_exception!(
    memdb,
    NotFound,
    MemdbError,
    "A conversation, message, record, knowledge base or space that does not exist (`.what`, `.id`)."
);
pyo3::create_exception!(
    memdb,
    InvalidInput,
    MemdbError,
    "An argument the engine refused; `.field` names it."
);
pyo3::create_exception!(
    memdb,
    Conflict,
    MemdbError,
    "A write that conflicts with what is stored (a name already taken, ...)."
);
pyo3::create_exception!(
    memdb,
    Locked,
    MemdbError,
    "The data directory is held by another memdb process."
);
pyo3::create_exception!(
    memdb,
    Corrupted,
    MemdbError,
    "Stored data failed a check; the store refuses to guess."
);
pyo3::create_exception!(
    memdb,
    ModelError,
    MemdbError,
    "The embedding model is missing, mismatched or failed."
);
pyo3::create_exception!(
    memdb,
    RemoteError,
    MemdbError,
    "A remote provider (an OpenAI-compatible endpoint) failed."
);
pyo3::create_exception!(
    memdb,
    Cancelled,
    MemdbError,
    "A long call stopped because its progress callback raised."
);
pyo3::create_exception!(
    memdb,
    StorageError,
    MemdbError,
    "An I/O, store or index failure."
);
pyo3::create_exception!(memdb, Closed, MemdbError, "The store handle was closed.");

/// Adds the exception classes to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("MemdbError", py.get_type::<MemdbError>())?;
    m.add("NotFound", py.get_type::<NotFound>())?;
    m.add("InvalidInput", py.get_type::<InvalidInput>())?;
    m.add("Conflict", py.get_type::<Conflict>())?;
    m.add("Locked", py.get_type::<Locked>())?;
    m.add("Corrupted", py.get_type::<Corrupted>())?;
    m.add("ModelError", py.get_type::<ModelError>())?;
    m.add("RemoteError", py.get_type::<RemoteError>())?;
    m.add("Cancelled", py.get_type::<Cancelled>())?;
    m.add("StorageError", py.get_type::<StorageError>())?;
    m.add("Closed", py.get_type::<Closed>())?;
    Ok(())
}

/// The Python exception for an engine error, with its attributes set.
pub fn to_py(e: memdb::Error) -> PyErr {
    use memdb::Error as E;
    let message = e.to_string();
    let err = match &e {
        E::NotFound { .. } => NotFound::new_err(message),
        E::InvalidInput { .. } => InvalidInput::new_err(message),
        E::Conflict(_) => Conflict::new_err(message),
        E::Locked { .. } => Locked::new_err(message),
        E::Corrupted { .. } | E::Incompatible { .. } => Corrupted::new_err(message),
        E::Embedding(_) | E::ModelMissing { .. } | E::ModelMismatch { .. } => {
            ModelError::new_err(message)
        }
        E::Remote { .. } => RemoteError::new_err(message),
        E::Cancelled => Cancelled::new_err(message),
        _ => StorageError::new_err(message),
    };
    Python::attach(|py| {
        let value = err.value(py);
        let set = match &e {
            E::NotFound { what, id } => value
                .setattr("what", *what)
                .and_then(|()| value.setattr("id", id.as_str())),
            E::InvalidInput { field, reason } => value
                .setattr("field", field.as_str())
                .and_then(|()| value.setattr("reason", reason.as_str())),
            _ => Ok(()),
        };
        // An attribute that cannot be set leaves the message, which says it all.
        let _unset = set;
    });
    err
}

/// An `InvalidInput` for an argument that failed before reaching the engine
/// (a malformed id, a dict that does not fit the request's shape).
pub fn invalid(field: &str, reason: impl std::fmt::Display) -> PyErr {
    to_py(memdb::Error::InvalidInput {
        field: field.to_string(),
        reason: reason.to_string(),
    })
}

/// The error of a call on a closed handle.
pub fn closed() -> PyErr {
    Closed::new_err("the store is closed")
}
