//! KuraDB's two MCP tools with its names, arguments and result keys
//! (`list_rag`, `search_rag`; KuraDB v0.5.1's `internal/mcp`), over the
//! engine's knowledge bases (`memdb::kuradb`). Both read only. As in
//! KuraDB, `search_rag` leaves out a branch that found nothing.

use memdb::Memdb;
use memdb::Systems;
use memdb::kuradb::{RagTarget, SourceGroup};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::error::ApiError;
use crate::memorg_tools::NoArgs;

/// One registered knowledge base, as `list_rag` lists it.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Registered {
    /// Its name.
    pub db: String,
    /// When it was registered (RFC 3339, UTC).
    #[serde(rename = "createAt")]
    pub create_at: String,
}

/// `list_rag` result.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ListRagData {
    /// The names searchable now (every registered base is live at once).
    pub loaded: Vec<String>,
    /// Every registered base.
    pub registered: Vec<Registered>,
}

/// Lists the knowledge bases.
pub fn list_rag(db: &Memdb, _args: NoArgs) -> Result<ListRagData, ApiError> {
    let all = db.kuradb().list()?;
    Ok(ListRagData {
        loaded: all.iter().map(|k| k.name.clone()).collect(),
        registered: all
            .iter()
            .map(|k| Registered {
                db: k.name.clone(),
                create_at: k
                    .created_at
                    .to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            })
            .collect(),
    })
}

fn default_limit() -> i64 {
    10
}

/// `search_rag` arguments.
#[derive(Debug, Clone, Deserialize, ToSchema, JsonSchema)]
pub struct SearchRagArgs {
    /// Narrow to a single search mode. Omit to run both keyword and
    /// semantic search together.
    #[serde(default)]
    #[schemars(extend("enum" = ["keyword", "semantic"]))]
    pub mode: Option<String>,
    /// Target RAG database name.
    pub db: String,
    /// Search query.
    pub q: String,
    /// Max chunks to return (1-100). Invalid values fall back to 10.
    #[serde(default = "default_limit")]
    #[schema(default = 10)]
    pub limit: i64,
}

/// `search_rag` (and `GET /api/search`) result: the branches given; an
/// absent one is left out of the JSON.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct SearchRagData {
    /// Keyword hits grouped by source file.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Vec<Object>>)]
    pub keyword: Option<Vec<SourceGroup>>,
    /// Semantic hits grouped by source file.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Vec<Object>>)]
    pub semantic: Option<Vec<SourceGroup>>,
}

/// Searches one knowledge base.
pub fn search_rag(db: &Memdb, args: SearchRagArgs) -> Result<SearchRagData, ApiError> {
    let target = RagTarget::parse(args.mode.as_deref().unwrap_or_default())?;
    let limit = usize::try_from(args.limit).unwrap_or(0);
    let r = db.kuradb().search(args.db.trim(), &args.q, target, limit)?;
    let nonempty = |g: Option<Vec<SourceGroup>>| g.filter(|v| !v.is_empty());
    Ok(SearchRagData {
        keyword: nonempty(r.keyword),
        semantic: nonempty(r.semantic),
    })
}
