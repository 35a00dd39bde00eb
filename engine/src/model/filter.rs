//! Conversation-scope filters: normalization, importance bounds, folder
//! prefixes and the predicate every listing, search and export applies; and
//! the page-size limit every call shares.

use memdb_format::ConversationRecord;

use crate::error::{Error, Result};
use crate::model::types::{Filter, PINNED_IMPORTANCE};
use crate::model::validate;
use crate::util::time::to_micros;

/// Largest page or hit count any call returns.
pub const MAX_LIMIT: usize = 1000;
pub(crate) fn check_limit(field: &str, limit: usize) -> Result<()> {
    if limit == 0 || limit > MAX_LIMIT {
        return Err(Error::invalid(
            field,
            format!("{limit} is outside 1..={MAX_LIMIT}"),
        ));
    }
    Ok(())
}

/// Normalizes a folder filter value the same way stored folders are.
pub(crate) fn normalize_folder(folder: &str) -> String {
    validate::folder("filter.folder", folder).unwrap_or_else(|_| folder.to_string())
}

pub(crate) fn normalize_filter(f: &Filter) -> Result<Filter> {
    let mut f = f.clone();
    if let Some(folder) = &f.folder {
        f.folder = Some(validate::folder("filter.folder", folder)?);
    }
    if let Some(i) = f.min_importance {
        validate::importance("filter.min_importance", i)?;
    }
    if let Some(i) = f.max_importance {
        validate::importance("filter.max_importance", i)?;
    }
    if let (Some(a), Some(b)) = (f.since, f.until)
        && a > b
    {
        return Err(Error::invalid("filter.since", "since is after until"));
    }
    Ok(f)
}

/// Inclusive importance bounds implied by a filter.
pub(crate) fn importance_bounds(f: &Filter) -> (u8, u8) {
    let mut lo = f.min_importance.unwrap_or(0);
    let mut hi = f.max_importance.unwrap_or(10);
    match f.pinned {
        Some(true) => lo = lo.max(PINNED_IMPORTANCE),
        Some(false) => hi = hi.min(PINNED_IMPORTANCE - 1),
        None => {}
    }
    (lo, hi)
}

pub(crate) fn folder_matches(prefix: &str, folder: &str) -> bool {
    prefix == "/"
        || folder == prefix
        || (folder.starts_with(prefix) && folder.as_bytes().get(prefix.len()) == Some(&b'/'))
}

pub(crate) fn matches_filter(f: &Filter, r: &ConversationRecord) -> bool {
    let (lo, hi) = importance_bounds(f);
    f.folder
        .as_deref()
        .is_none_or(|p| folder_matches(p, &r.folder))
        && f.label.as_deref().is_none_or(|l| l == r.label)
        && f.status.is_none_or(|s| s.code() == r.status)
        && r.importance >= lo
        && r.importance <= hi
        && f.since.is_none_or(|t| r.updated_at >= to_micros(t))
        && f.until.is_none_or(|t| r.updated_at < to_micros(t))
}
