//! Typed record kinds over the generic record store (SPEC.md §13): a
//! [`Kind`] is the Rust type of a record kind's body, naming its kind (its
//! code, name and vector-sum rule), and [`Records`] reads and writes that kind
//! with the body as that type. The stored body is the type's JSON (serde),
//! so the on-disk format is the generic record's; what changes is that a
//! field is named once, in a struct, and a renamed field fails to compile
//! instead of reading `null` at run time.
//!
//! A body that does not decode is [`Error::Corrupted`], naming the record
//! and the field: a store is written by this code only, so that is damage,
//! not input to tolerate silently. Fields added later carry
//! `#[serde(default)]`, so rows written before them still decode.

use std::marker::PhantomData;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use uuid::Uuid;

use crate::db::Memdb;
use crate::db::records::{NewRecord, Record, RecordChange, RecordKind};
use crate::error::{Error, Result};

/// A record kind's body type: the kind's own fields, stored as the
/// record's JSON `body`, and the kind they belong to.
pub trait Kind: Serialize + DeserializeOwned {
    /// The kind: its stored code, name and vector-sum rule.
    const KIND: RecordKind;
}

/// A stored record of some kind with its body decoded.
#[derive(Debug, Clone, PartialEq)]
pub struct Typed<B> {
    /// The record (its `body` as stored, JSON).
    pub record: Record,
    /// The body, decoded.
    pub body: B,
}

impl<B> Typed<B> {
    /// The record's id.
    pub fn id(&self) -> Uuid {
        self.record.id
    }
}

/// Decodes record `r`'s body as kind `K`'s (the kind must match).
pub fn decode<K: Kind>(r: &Record) -> Result<K> {
    if r.kind != K::KIND.code {
        return Err(Error::Corrupted {
            what: format!("record {}", r.id),
            reason: format!(
                "kind {} where a {} (kind {}) was expected",
                r.kind,
                K::KIND.name,
                K::KIND.code
            ),
        });
    }
    K::deserialize(&r.body).map_err(|e| Error::Corrupted {
        what: format!("{} {}", K::KIND.name, r.id),
        reason: format!("body: {e}"),
    })
}

/// Kind `K`'s body as the JSON object stored.
pub fn encode<K: Kind>(body: &K) -> Result<Value> {
    serde_json::to_value(body).map_err(|e| Error::Store(format!("{} body: {e}", K::KIND.name)))
}

/// Record `r` with its body decoded as kind `K`'s.
pub fn typed<K: Kind>(r: Record) -> Result<Typed<K>> {
    let body = decode::<K>(&r)?;
    Ok(Typed { record: r, body })
}

/// Kind `K`'s records in one namespace ([`Memdb::records`]).
pub struct Records<'a, K> {
    db: &'a Memdb,
    kind: PhantomData<K>,
}

impl Memdb {
    /// The records of kind `K` in this handle's namespace, with typed bodies.
    pub fn records<K: Kind>(&self) -> Records<'_, K> {
        Records {
            db: self,
            kind: PhantomData,
        }
    }
}

impl<K: Kind> Records<'_, K> {
    /// Every record of the kind, oldest first.
    pub fn all(&self) -> Result<Vec<Typed<K>>> {
        self.db
            .records_of_kind(K::KIND)?
            .into_iter()
            .map(typed::<K>)
            .collect()
    }

    /// Record `id` (`NotFound` naming the kind when it is not one).
    pub fn get(&self, id: Uuid) -> Result<Typed<K>> {
        typed::<K>(self.db.get_record(K::KIND, id)?)
    }

    /// The records of the kind among `ids` that exist, in `ids` order;
    /// records of other kinds are left out.
    pub fn get_many(&self, ids: &[Uuid]) -> Result<Vec<Typed<K>>> {
        self.db
            .get_records(ids)?
            .into_iter()
            .filter(|r| r.kind == K::KIND.code)
            .map(typed::<K>)
            .collect()
    }

    /// The children of kind `K` of record `parent`.
    pub fn children_of(&self, parent: Uuid) -> Result<Vec<Typed<K>>> {
        self.db
            .record_children(parent, Some(K::KIND))?
            .into_iter()
            .map(typed::<K>)
            .collect()
    }

    /// Writes a record of the kind with id `id` (created, or replaced when
    /// it exists): `base` gives everything but the body.
    pub fn put_as(&self, id: Uuid, base: NewRecord, body: &K) -> Result<Typed<K>> {
        let new = NewRecord {
            body: encode::<K>(body)?,
            ..base
        };
        typed::<K>(self.db.put_record_as(K::KIND, id, new)?)
    }

    /// Replaces record `id`'s body (and whatever else `change` sets).
    pub fn update(&self, id: Uuid, change: RecordChange, body: &K) -> Result<Typed<K>> {
        let change = RecordChange {
            body: Some(encode::<K>(body)?),
            ..change
        };
        typed::<K>(self.db.update_record(id, change)?)
    }

    /// A new record of the kind for a batch write ([`Memdb::replace_children`]).
    pub fn new_record(base: NewRecord, body: &K) -> Result<NewRecord> {
        Ok(NewRecord {
            body: encode::<K>(body)?,
            ..base
        })
    }
}
