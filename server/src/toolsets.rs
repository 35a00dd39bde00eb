//! The tool sets an MCP server serves (`--tools sekha,memorg,kuradb`): one
//! per system memdb reproduces. A leaf: the configuration parses them and
//! the contract ([`crate::contract::served_tools`]) lists their tools.

/// The families of tools, each a system memdb reproduces. Clients with a
/// tool-count limit serve only some (`memdb mcp --tools sekha`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ToolSet {
    /// Sekha's seven memory tools.
    Sekha,
    /// Memorg's tools (hierarchy, search_context, optimizer, memory items).
    Memorg,
    /// KuraDB's two read-only tools (`list_rag`, `search_rag`).
    Kuradb,
}

impl ToolSet {
    /// The set's name in `--tools`.
    pub fn as_str(self) -> &'static str {
        match self {
            ToolSet::Sekha => "sekha",
            ToolSet::Memorg => "memorg",
            ToolSet::Kuradb => "kuradb",
        }
    }
}

/// Which tool sets an MCP server lists and calls (all by default).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ToolSets {
    sekha: bool,
    memorg: bool,
    kuradb: bool,
}

impl Default for ToolSets {
    fn default() -> Self {
        ToolSets::ALL
    }
}

impl ToolSets {
    /// Every set.
    pub const ALL: ToolSets = ToolSets {
        sekha: true,
        memorg: true,
        kuradb: true,
    };

    /// Parses a comma-separated list of set names (`sekha,memorg,kuradb`,
    /// or `all`).
    pub fn parse(s: &str) -> Result<ToolSets, String> {
        let mut out = ToolSets {
            sekha: false,
            memorg: false,
            kuradb: false,
        };
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            match part.to_ascii_lowercase().as_str() {
                "all" => out = ToolSets::ALL,
                "sekha" => out.sekha = true,
                "memorg" => out.memorg = true,
                "kuradb" => out.kuradb = true,
                other => {
                    return Err(format!(
                        "unknown tool set {other:?}; the sets are sekha, memorg and kuradb (or all)"
                    ));
                }
            }
        }
        if !out.sekha && !out.memorg && !out.kuradb {
            return Err("name at least one tool set: sekha, memorg, kuradb or all".into());
        }
        Ok(out)
    }

    /// Whether `set` is served.
    pub fn contains(self, set: ToolSet) -> bool {
        match set {
            ToolSet::Sekha => self.sekha,
            ToolSet::Memorg => self.memorg,
            ToolSet::Kuradb => self.kuradb,
        }
    }
}
