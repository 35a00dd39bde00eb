//! A schema-2 store (before namespaces), written at test time.
//!
//! Binary fixtures are not committed, so this module writes, through redb
//! and `memdb-format` directly, the store that memdb at commit 0b4cec5 wrote
//! for the README's walkthrough (`memdb --embedder none store` of the three
//! `examples/conversations/*.json`, `pin` on "Rust lifetimes", `archive` on
//! "Spring trip"): the same 17 tables with the same key and value types, the
//! same rows (ids, timestamps, counters, content variants) and the same
//! `meta` keys. The content was read out of the store that build wrote (the
//! binary fixture committed in 2d893cd and removed in a162bdd); the two
//! agree table by table.
//!
//! The table definitions below are frozen copies of schema 2's: do not
//! "update" them when the engine's change. Conversation rows are layout
//! version 1 (every field of today's `ConversationRecord` but the trailing
//! namespace); message rows have not changed layout since.

use std::path::Path;

use memdb_format::{ContentRecord, ConversationRecord, MessageRecord, Op, OplogEntry};
use redb::{Database, TableDefinition};

const META: TableDefinition<&str, u64> = TableDefinition::new("meta");
const CONVERSATIONS: TableDefinition<u128, &[u8]> = TableDefinition::new("conversations");
const MESSAGES: TableDefinition<u128, &[u8]> = TableDefinition::new("messages");
const CONV_MESSAGES: TableDefinition<(u128, i64, u32), u128> =
    TableDefinition::new("conv_messages");
const CONV_BY_UPDATED: TableDefinition<(i64, u128), ()> = TableDefinition::new("conv_by_updated");
const CONV_BY_FOLDER: TableDefinition<(&str, u128), ()> = TableDefinition::new("conv_by_folder");
const CONV_BY_LABEL: TableDefinition<(&str, u128), ()> = TableDefinition::new("conv_by_label");
const CONV_BY_STATUS: TableDefinition<(u8, u128), ()> = TableDefinition::new("conv_by_status");
const CONV_BY_IMPORTANCE: TableDefinition<(u8, u128), ()> =
    TableDefinition::new("conv_by_importance");
const OPLOG: TableDefinition<u64, &[u8]> = TableDefinition::new("oplog");
const VECTOR_SPACES: TableDefinition<&str, &[u8]> = TableDefinition::new("vector_spaces");
const VECTORS: TableDefinition<(u32, u128), &[u8]> = TableDefinition::new("vectors");
const VECTOR_TOMBSTONES: TableDefinition<(u32, u128), u64> =
    TableDefinition::new("vector_tombstones");
const EMBED_QUEUE: TableDefinition<(u32, u128), ()> = TableDefinition::new("embed_queue");
const QUERY_CACHE: TableDefinition<&str, &[u8]> = TableDefinition::new("query_cache");
const QUERY_CACHE_ORDER: TableDefinition<u64, &str> = TableDefinition::new("query_cache_order");
const SUMMARIES: TableDefinition<(u128, u8, i64, u128), &[u8]> = TableDefinition::new("summaries");

pub const TRAVEL: u128 = 0x6599022a_bf75_4342_a3f8_540a2a4e1854;
pub const RUST: u128 = 0x1b5ed57e_f7e0_43be_9d5d_ce6be1c16baa;
pub const BREAD: u128 = 0x2c6ce1f7_5e0a_4fc2_b319_1032359b6eff;

struct Conv {
    id: u128,
    rec: ConversationRecord,
    messages: Vec<(u128, MessageRecord)>,
}

fn message(conv: u128, seq: u32, role: &str, content: ContentRecord, ts: i64) -> MessageRecord {
    MessageRecord {
        conversation_id: conv.to_le_bytes(),
        seq,
        role: role.into(),
        content,
        timestamp: ts,
        embedding_id: None,
        metadata_json: "{}".into(),
    }
}

#[allow(clippy::too_many_arguments)]
fn conversation(
    label: &str,
    folder: &str,
    status: u8,
    importance: u8,
    word_count: u64,
    created_at: i64,
    updated_at: i64,
    metadata_json: &str,
) -> ConversationRecord {
    ConversationRecord {
        label: label.into(),
        folder: folder.into(),
        status,
        importance,
        word_count,
        session_count: 1,
        message_count: 2,
        next_seq: 2,
        created_at,
        updated_at,
        metadata_json: metadata_json.into(),
        namespace: 0,
    }
}

fn walkthrough() -> Vec<Conv> {
    let text = |s: &str| ContentRecord::Text(s.into());
    vec![
        Conv {
            id: BREAD,
            rec: conversation(
                "Sourdough",
                "/home/cooking",
                0,
                7,
                27,
                1_796_113_404_865_974,
                1_796_113_404_865_974,
                "{}",
            ),
            messages: vec![
                (
                    0xb59bd63a_61a7_4a2a_b18e_8232ccae89eb,
                    message(
                        BREAD,
                        0,
                        "user",
                        text("My sourdough starter smells like acetone. Is it dead?"),
                        1_796_113_404_865_974,
                    ),
                ),
                (
                    0x02e692fa_0c55_4ddc_8482_9fc6d4ca5413,
                    message(
                        BREAD,
                        1,
                        "assistant",
                        ContentRecord::PartsJson(
                            "[{\"text\":\"No: it is hungry. Feed the starter twice a day at a \
                             1:1:1 ratio and keep it warm.\",\"type\":\"text\"}]"
                                .into(),
                        ),
                        1_796_113_404_865_974,
                    ),
                ),
            ],
        },
        Conv {
            id: RUST,
            rec: conversation(
                "Rust lifetimes",
                "/work/rust",
                0,
                10,
                40,
                1_796_113_404_891_997,
                1_796_113_412_756_302,
                "{}",
            ),
            messages: vec![
                (
                    0x1fcb342d_b9cb_4b36_b0ab_8599edf091c9,
                    message(
                        RUST,
                        0,
                        "user",
                        text(
                            "Why does the borrow checker reject my function that returns a \
                             reference to a local?",
                        ),
                        1_795_166_100_000_000,
                    ),
                ),
                (
                    0xac1611fd_eb10_4f4b_95d3_972c4331415e,
                    message(
                        RUST,
                        1,
                        "assistant",
                        text(
                            "The local is dropped when the function returns, so the reference \
                             would dangle. Return an owned String instead, or take the buffer \
                             as a parameter.",
                        ),
                        1_795_166_120_000_000,
                    ),
                ),
            ],
        },
        Conv {
            id: TRAVEL,
            rec: conversation(
                "Spring trip",
                "/home/travel",
                1,
                5,
                22,
                1_796_113_404_924_425,
                1_796_113_412_788_778,
                "{\"source\":\"example\"}",
            ),
            messages: vec![
                (
                    0xb705739c_65bc_498d_99b4_c80b6c7cedb5,
                    message(
                        TRAVEL,
                        0,
                        "user",
                        text("Is Lisbon a good city to visit in March?"),
                        1_796_113_404_924_425,
                    ),
                ),
                (
                    0xc0c1a0ff_5ccf_481f_bc4d_a64b810563bf,
                    message(
                        TRAVEL,
                        1,
                        "assistant",
                        text(
                            "Yes: mild weather, few crowds, and flights from most of Europe \
                             are cheap.",
                        ),
                        1_796_113_404_924_425,
                    ),
                ),
            ],
        },
    ]
}

/// A conversation row in layout version 1: today's encoding with the
/// version byte set to 1 and the trailing namespace varint (0, one byte)
/// removed.
fn encode_v1(rec: &ConversationRecord) -> Vec<u8> {
    assert_eq!(rec.namespace, 0, "version 1 rows have no namespace");
    let mut bytes = rec.encode();
    bytes[0] = 1;
    assert_eq!(bytes.pop(), Some(0));
    bytes
}

/// Writes the schema-2 walkthrough store at `path` (which must not exist).
pub fn write(path: &Path) {
    let db = Database::create(path).expect("create schema-2 store");
    let txn = db.begin_write().expect("begin");
    {
        // Every table schema 2 creates on open, even the empty ones.
        txn.open_table(VECTOR_SPACES).unwrap();
        txn.open_table(VECTORS).unwrap();
        txn.open_table(VECTOR_TOMBSTONES).unwrap();
        txn.open_table(EMBED_QUEUE).unwrap();
        txn.open_table(QUERY_CACHE).unwrap();
        txn.open_table(QUERY_CACHE_ORDER).unwrap();
        txn.open_table(SUMMARIES).unwrap();
        let mut convs = txn.open_table(CONVERSATIONS).unwrap();
        let mut msgs = txn.open_table(MESSAGES).unwrap();
        let mut conv_msgs = txn.open_table(CONV_MESSAGES).unwrap();
        let mut by_updated = txn.open_table(CONV_BY_UPDATED).unwrap();
        let mut by_folder = txn.open_table(CONV_BY_FOLDER).unwrap();
        let mut by_label = txn.open_table(CONV_BY_LABEL).unwrap();
        let mut by_status = txn.open_table(CONV_BY_STATUS).unwrap();
        let mut by_importance = txn.open_table(CONV_BY_IMPORTANCE).unwrap();
        for c in walkthrough() {
            convs.insert(c.id, encode_v1(&c.rec).as_slice()).unwrap();
            by_updated.insert((c.rec.updated_at, c.id), ()).unwrap();
            by_folder.insert((c.rec.folder.as_str(), c.id), ()).unwrap();
            by_label.insert((c.rec.label.as_str(), c.id), ()).unwrap();
            by_status.insert((c.rec.status, c.id), ()).unwrap();
            by_importance.insert((c.rec.importance, c.id), ()).unwrap();
            for (id, m) in &c.messages {
                msgs.insert(*id, m.encode().as_slice()).unwrap();
                conv_msgs.insert((c.id, m.timestamp, m.seq), *id).unwrap();
            }
        }
        // The oplog as that build left it: entries at or below the text
        // index's watermark (4) trimmed, the archive (LSN 5) kept.
        let entry = OplogEntry {
            ops: vec![Op::PutConversation(TRAVEL.to_le_bytes())],
        };
        txn.open_table(OPLOG)
            .unwrap()
            .insert(5, entry.encode().as_slice())
            .unwrap();
        let mut meta = txn.open_table(META).unwrap();
        meta.insert("schema_version", 2).unwrap();
        meta.insert("last_lsn", 5).unwrap();
        meta.insert("text_index_lsn", 4).unwrap();
    }
    txn.commit().expect("commit schema-2 store");
}
