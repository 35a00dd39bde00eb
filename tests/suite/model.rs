//! Model-based property test: random sequences of create / append / update /
//! delete / reopen leave redb and tantivy agreeing with each other and with a
//! `BTreeMap` model.

use std::collections::BTreeMap;

use memdb::*;
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Action {
    Create { messages: usize, folder: u8 },
    Append { pick: usize, messages: usize },
    Relabel { pick: usize, label: u8 },
    Move { pick: usize, folder: u8 },
    Archive { pick: usize },
    Delete { pick: usize },
    Search,
    Reopen,
}

fn action() -> impl Strategy<Value = Action> {
    prop_oneof![
        4 => (1usize..4, 0u8..3).prop_map(|(messages, folder)| Action::Create { messages, folder }),
        2 => (any::<usize>(), 1usize..3).prop_map(|(pick, messages)| Action::Append { pick, messages }),
        1 => (any::<usize>(), 0u8..3).prop_map(|(pick, label)| Action::Relabel { pick, label }),
        1 => (any::<usize>(), 0u8..3).prop_map(|(pick, folder)| Action::Move { pick, folder }),
        1 => any::<usize>().prop_map(|pick| Action::Archive { pick }),
        1 => any::<usize>().prop_map(|pick| Action::Delete { pick }),
        1 => Just(Action::Search),
        1 => Just(Action::Reopen),
    ]
}

#[derive(Debug, Clone)]
struct ModelConv {
    label: String,
    folder: String,
    messages: usize,
    archived: bool,
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn store_and_index_agree_with_the_model(actions in proptest::collection::vec(action(), 1..40)) {
        let d = crate::tmp();
        let mut db = Some(Memdb::open(d.path()).unwrap());
        let mut model: BTreeMap<uuid::Uuid, ModelConv> = BTreeMap::new();
        let folder = |f: u8| format!("/f{f}");
        for a in actions {
            let h = db.as_ref().unwrap();
            let pick = |p: usize| model.keys().nth(p % model.len().max(1)).copied();
            match a {
                Action::Create { messages, folder: f } => {
                    let msgs = (0..messages).map(|i| NewMessage::new("user", format!("common word{i}"))).collect();
                    let c = h.sekha().create_conversation(NewConversation::new("l0", msgs).in_folder(folder(f))).unwrap();
                    model.insert(c.conversation.id, ModelConv { label: "l0".into(), folder: folder(f), messages, archived: false });
                }
                Action::Append { pick: p, messages } => if let Some(id) = pick(p) {
                    let msgs = (0..messages).map(|_| NewMessage::new("assistant", "common appended")).collect();
                    h.sekha().append_messages(id, msgs).unwrap();
                    model.get_mut(&id).unwrap().messages += messages;
                },
                Action::Relabel { pick: p, label } => if let Some(id) = pick(p) {
                    h.sekha().update_conversation(id, ConversationUpdate { label: Some(format!("l{label}")), ..Default::default() }).unwrap();
                    model.get_mut(&id).unwrap().label = format!("l{label}");
                },
                Action::Move { pick: p, folder: f } => if let Some(id) = pick(p) {
                    h.sekha().update_conversation(id, ConversationUpdate { folder: Some(folder(f)), ..Default::default() }).unwrap();
                    model.get_mut(&id).unwrap().folder = folder(f);
                },
                Action::Archive { pick: p } => if let Some(id) = pick(p) {
                    h.sekha().archive(id).unwrap();
                    model.get_mut(&id).unwrap().archived = true;
                },
                Action::Delete { pick: p } => if let Some(id) = pick(p) {
                    h.sekha().delete_conversation(id).unwrap();
                    model.remove(&id);
                },
                Action::Search => {
                    let mut q = TextQuery::new("common");
                    q.limit = MAX_LIMIT;
                    let n = h.sekha().search_text(&q).unwrap().len();
                    prop_assert_eq!(n, model.values().map(|c| c.messages).sum::<usize>().min(MAX_LIMIT));
                }
                Action::Reopen => {
                    db.take().unwrap().close().unwrap();
                    db = Some(Memdb::open(d.path()).unwrap_or_else(|e| panic!("reopen: {e:?}")));
                }
            }
        }
        let h = db.as_ref().unwrap();
        let report = h.check().unwrap();
        prop_assert!(report.is_consistent(), "{:?}", report);
        prop_assert_eq!(report.conversations as usize, model.len());
        prop_assert_eq!(report.messages as usize, model.values().map(|c| c.messages).sum::<usize>());
        // Scope fields in the index follow the store: per label, folder and status.
        for label in ["l0", "l1", "l2"] {
            let mut q = TextQuery::new("common");
            q.limit = MAX_LIMIT;
            q.filter.label = Some(label.into());
            let want: usize = model.values().filter(|c| c.label == label).map(|c| c.messages).sum();
            prop_assert_eq!(h.sekha().search_text(&q).unwrap().len(), want.min(MAX_LIMIT));
        }
        for f in 0..3u8 {
            let filter = Filter { folder: Some(folder(f)), ..Default::default() };
            let want = model.values().filter(|c| c.folder == folder(f)).count() as u64;
            prop_assert_eq!(h.sekha().count_conversations(&filter).unwrap(), want);
            let mut q = TextQuery::new("common");
            q.limit = MAX_LIMIT;
            q.filter = Filter { folder: Some(folder(f)), status: Some(Status::Archived), ..Default::default() };
            let want: usize = model.values().filter(|c| c.folder == folder(f) && c.archived).map(|c| c.messages).sum();
            prop_assert_eq!(h.sekha().search_text(&q).unwrap().len(), want.min(MAX_LIMIT));
        }
    }
}
