//! Namespace handles: every record belongs to a namespace, and a [`Memdb`]
//! sees one. [`Memdb::namespace`] gives a handle on another namespace of the
//! same open directory (sharing the engine); reads of a namespace that does
//! not exist yet see nothing, and its first write creates it.
//!
//! Names: 1 to 64 bytes of ASCII letters, digits, `-`, `_`, `.` and `@`,
//! starting with a letter or digit. `default` always exists (id 0).

use std::sync::Arc;
use std::sync::OnceLock;
use std::sync::atomic::Ordering;

use crate::store::WriteTxn;
use serde::{Deserialize, Serialize};

use crate::db::Memdb;
use crate::error::{Error, Result};
use crate::store::{Store, namespaces};
use crate::util::time::{now, to_micros};

/// Longest namespace name, in bytes.
pub const MAX_NAMESPACE_BYTES: usize = 64;

/// The id reads use for a namespace that does not exist: no record has it.
pub(crate) const ABSENT: u32 = u32::MAX;

/// The namespace a handle sees: its name and, once known, its id.
#[derive(Clone, Debug)]
pub(crate) struct Ns {
    name: Arc<str>,
    id: Arc<OnceLock<u32>>,
}

impl Ns {
    pub(crate) fn default_namespace() -> Ns {
        let id = OnceLock::new();
        let _ = id.set(0);
        Ns {
            name: Arc::from(namespaces::DEFAULT),
            id: Arc::new(id),
        }
    }

    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    /// This namespace's id in a write, creating the namespace if needed.
    pub(crate) fn write_id(&self, txn: &WriteTxn) -> Result<u32> {
        if let Some(&id) = self.id.get() {
            return Ok(id);
        }
        namespaces::ensure(txn, &self.name, to_micros(now()))
    }
}

/// One namespace of the store, as [`Memdb::namespaces`] lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NamespaceInfo {
    /// Its name.
    pub name: String,
    /// Conversations in it.
    pub conversations: u64,
}

/// Checks a namespace name (see the module docs for the rule).
pub fn validate_namespace(name: &str) -> Result<()> {
    let ok_char = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '@');
    if name.is_empty() || name.len() > MAX_NAMESPACE_BYTES {
        return Err(Error::invalid(
            "namespace",
            format!("must be 1 to {MAX_NAMESPACE_BYTES} bytes"),
        ));
    }
    if !name.chars().all(ok_char) || !name.starts_with(|c: char| c.is_ascii_alphanumeric()) {
        return Err(Error::invalid(
            "namespace",
            "may hold ASCII letters, digits, '-', '_', '.' and '@', starting with a letter or digit",
        ));
    }
    Ok(())
}

/// How many namespaces the store has.
pub(crate) fn count(store: &Store) -> Result<usize> {
    Ok(namespaces::list(&*store.read()?)?.len())
}

impl Memdb {
    /// A handle on namespace `name` of the same open directory (sharing the
    /// engine, the write lock and the indexes). The namespace is created by
    /// its first write; until then reads see nothing in it.
    pub fn namespace(&self, name: &str) -> Result<Memdb> {
        validate_namespace(name)?;
        let id = OnceLock::new();
        if let Some(found) = namespaces::lookup(&*self.store.read()?, name)? {
            let _ = id.set(found);
        }
        Ok(Memdb {
            engine: self.engine.clone(),
            ns: Ns {
                name: Arc::from(name),
                id: Arc::new(id),
            },
        })
    }

    /// The name of the namespace this handle sees.
    pub fn namespace_name(&self) -> &str {
        self.ns.name()
    }

    /// Every namespace of the store with its conversation count, by name.
    pub fn namespaces(&self) -> Result<Vec<NamespaceInfo>> {
        Ok(namespaces::list(&*self.store.read()?)?
            .into_iter()
            .map(|(name, _, conversations)| NamespaceInfo {
                name,
                conversations,
            })
            .collect())
    }

    /// The namespace id reads filter by: its id, or an id no record has
    /// when the namespace does not exist (yet).
    pub(crate) fn ns_read(&self) -> Result<u32> {
        if let Some(&id) = self.ns.id.get() {
            return Ok(id);
        }
        // A write through another handle may have created it since.
        match namespaces::lookup(&*self.store.read()?, &self.ns.name)? {
            Some(found) => {
                let _ = self.ns.id.set(found);
                Ok(found)
            }
            None => Ok(ABSENT),
        }
    }

    /// The namespace id a write stores, creating the namespace inside
    /// `txn` if it is new. The id is remembered only once the write has
    /// committed ([`Memdb::ns_committed`]), so an aborted write leaves no
    /// trace.
    pub(crate) fn ns_write(&self, txn: &WriteTxn) -> Result<u32> {
        self.ns.write_id(txn)
    }

    /// After a write that may have created this handle's namespace.
    pub(crate) fn ns_committed(&self) -> Result<()> {
        if self.ns.id.get().is_none()
            && let Some(found) = namespaces::lookup(&*self.store.read()?, &self.ns.name)?
        {
            let _ = self.ns.id.set(found);
            self.namespace_count.fetch_add(1, Ordering::SeqCst);
        }
        Ok(())
    }

    /// The namespace clause searches need: `None` when the store has one
    /// namespace (every record is in it), else this handle's id.
    pub(crate) fn ns_clause(&self) -> Result<Option<u32>> {
        if self.namespace_count.load(Ordering::SeqCst) <= 1 && self.ns.name() == namespaces::DEFAULT
        {
            return Ok(None);
        }
        Ok(Some(self.ns_read()?))
    }

    /// `NotFound` unless conversation row `rec` is in this handle's
    /// namespace: a record of another namespace does not exist here.
    pub(crate) fn ns_check(
        &self,
        what: &'static str,
        id: uuid::Uuid,
        rec_namespace: u32,
    ) -> Result<()> {
        if rec_namespace == self.ns_read()? {
            Ok(())
        } else {
            Err(Error::NotFound {
                what,
                id: id.to_string(),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_rule() {
        for ok in ["default", "a", "user@example.com", "kb.notes-2", "A_1"] {
            assert!(validate_namespace(ok).is_ok(), "{ok}");
        }
        let long = "x".repeat(MAX_NAMESPACE_BYTES + 1);
        for bad in ["", "-a", ".a", "a b", "a/b", "é", long.as_str()] {
            assert!(
                matches!(validate_namespace(bad), Err(Error::InvalidInput { .. })),
                "{bad}"
            );
        }
    }
}
