//! redb's errors as the engine's [`Error::Backend`]: the one place a redb
//! error type meets the error model, so nothing outside `store/` names one.

use crate::error::Error;

macro_rules! backend_error {
    ($($t:ty),*) => {$(
        impl From<$t> for Error {
            fn from(e: $t) -> Self {
                Error::Backend(Box::new(redb::Error::from(e)))
            }
        }
    )*};
}
backend_error!(
    redb::Error,
    redb::DatabaseError,
    redb::TransactionError,
    redb::TableError,
    redb::StorageError,
    redb::CommitError
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backend_errors_keep_their_source() {
        let e: Error = redb::StorageError::Corrupted("page 7".into()).into();
        assert!(matches!(e, Error::Backend(_)));
        assert!(e.to_string().starts_with("store error: "), "{e}");
        let source = std::error::Error::source(&e).expect("a source");
        assert!(source.to_string().contains("page 7"), "{source}");
    }
}
