//! Arguments in, results out: Python values to the engine's serde types and
//! back (through `pythonize`), and ids parsed with the argument's name in the
//! error.

use pyo3::prelude::*;
use serde::Serialize;
use serde::de::DeserializeOwned;
use uuid::Uuid;

use crate::errors;

/// A Python value (dict, list, str, number, None) read as `T`; a value of
/// the wrong shape is an `InvalidInput` naming `field`.
pub fn arg<T: DeserializeOwned>(field: &str, value: &Bound<'_, PyAny>) -> PyResult<T> {
    pythonize::depythonize(value).map_err(|e| errors::invalid(field, e))
}

/// An engine result as plain Python values.
pub fn out<T: Serialize>(py: Python<'_>, value: &T) -> PyResult<Py<PyAny>> {
    pythonize::pythonize(py, value)
        .map(Bound::unbind)
        .map_err(|e| errors::StorageError::new_err(format!("cannot convert a result: {e}")))
}

/// An id argument: a `uuid.UUID` or its string form.
pub fn id(field: &str, value: &Bound<'_, PyAny>) -> PyResult<Uuid> {
    let text = value.str()?.to_string();
    Uuid::parse_str(text.trim())
        .map_err(|_| errors::invalid(field, format!("{text:?} is not a UUID")))
}
