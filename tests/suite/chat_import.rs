//! Chat-export import through the library (SPEC.md §11.1): export files
//! written on disk in the shapes ChatGPT, Claude (JSON and XML), Markdown
//! and text transcripts have, imported into a real store and searched;
//! malformed files of each format fail with an error naming the file and
//! the problem and store nothing; the watched import folder imports and
//! moves a good file and leaves a bad one in place.

use memdb::Systems;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use memdb::import::watch::{FileOutcome, ImportFolder, ImportWatcher, PassMemory, import_folder};
use memdb::import::{ChatFormat, parse_file};
use memdb::{Filter, Memdb, Page, TextQuery};

use crate::{eventually, tmp};

/// A ChatGPT export of two conversations: the first with a branched tree
/// (the user edited a question: two answers under it, and a follow-up
/// under the second), hidden empty system messages, a multimodal part.
pub const CHATGPT: &str = r#"[
 {
  "title": "Sourdough starter",
  "create_time": 1714557600.5,
  "update_time": 1714558200.0,
  "conversation_id": "6632a1f0-1111-4c0e-9a51-0f1f2a3b4c5d",
  "mapping": {
   "aaa1": {"id": "aaa1", "message": null, "parent": null, "children": ["sys1"]},
   "sys1": {"id": "sys1", "parent": "aaa1", "children": ["u1"],
    "message": {"id": "sys1", "author": {"role": "system", "name": null, "metadata": {}},
     "create_time": null, "content": {"content_type": "text", "parts": [""]},
     "status": "finished_successfully", "weight": 0.0, "metadata": {"is_visually_hidden_from_conversation": true}}},
   "u1": {"id": "u1", "parent": "sys1", "children": ["a1", "a2"],
    "message": {"id": "u1", "author": {"role": "user"}, "create_time": 1714557601.25,
     "content": {"content_type": "text", "parts": ["How often should I feed a rye starter?"]}}},
   "a1": {"id": "a1", "parent": "u1", "children": [],
    "message": {"id": "a1", "author": {"role": "assistant"}, "create_time": 1714557605.0,
     "content": {"content_type": "text", "parts": ["Feed it twice a day at room temperature."]}}},
   "a2": {"id": "a2", "parent": "u1", "children": ["u2"],
    "message": {"id": "a2", "author": {"role": "assistant"}, "create_time": 1714557700.0,
     "content": {"content_type": "text", "parts": ["Once a day is enough if you keep it in the fridge."]}}},
   "u2": {"id": "u2", "parent": "a2", "children": ["a3"],
    "message": {"id": "u2", "author": {"role": "user"}, "create_time": 1714557800.0,
     "content": {"content_type": "multimodal_text", "parts": [
       {"content_type": "image_asset_pointer", "asset_pointer": "file-service://file-x", "width": 10, "height": 10},
       "What about this jar?"]}}},
   "a3": {"id": "a3", "parent": "u2", "children": [],
    "message": {"id": "a3", "author": {"role": "assistant"}, "create_time": 1714557810.0,
     "content": {"content_type": "text", "parts": ["That jar is fine; leave the lid loose."]}}}
  }
 },
 {
  "title": null,
  "create_time": 1714600000.0,
  "update_time": 1714600010.0,
  "mapping": {
   "r": {"id": "r", "message": null, "parent": null, "children": ["q"]},
   "q": {"id": "q", "parent": "r", "children": [],
    "message": {"id": "q", "author": {"role": "user"}, "create_time": 1714600001.0,
     "content": {"content_type": "text", "parts": ["Translate quokka to French"]}}}
  }
 }
]"#;

/// Sekha's Claude JSON shape.
pub const CLAUDE_JSON: &str = r#"{
  "conversations": [
    {
      "title": "Tide tables",
      "created_at": "2024-03-10T08:00:00Z",
      "updated_at": "2024-03-10T08:05:00Z",
      "messages": [
        {"role": "user", "content": "When is high tide in Brest tomorrow?", "timestamp": "2024-03-10T08:00:00Z"},
        {"role": "assistant", "content": "High tide in Brest is at 06:12 and 18:40.", "timestamp": "2024-03-10T08:00:04Z"}
      ]
    }
  ]
}"#;

/// Claude XML.
pub const CLAUDE_XML: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<conversation>
  <title>Knots &amp; hitches</title>
  <created_at>2024-02-01T12:00:00Z</created_at>
  <message>
    <role>user</role>
    <content>Which knot holds a boat to a bollard?</content>
    <timestamp>2024-02-01T12:00:00Z</timestamp>
  </message>
  <message>
    <role>assistant</role>
    <content><![CDATA[A cleat hitch, or a bowline <loop> over the bollard.]]></content>
    <timestamp>2024-02-01T12:00:09Z</timestamp>
  </message>
</conversation>
"#;

pub const MARKDOWN: &str = "# Garden planning\n\n## User\nWhen do I plant garlic cloves?\n\n## Assistant\nPlant garlic in autumn, about six weeks before the ground freezes.\n\nPoint the tip up.\n\n**User:** And harvest?\n\n**Assistant:** Early summer, when the lower leaves brown.\n";

pub const TEXT: &str = "User: What is the capital of Mongolia?\nAssistant: Ulaanbaatar.\nIt is also the coldest capital.\nUser: Thanks!\n";

fn write(dir: &Path, name: &str, body: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, body).unwrap();
    p
}

fn count(db: &Memdb) -> u64 {
    db.sekha().count_conversations(&Filter::default()).unwrap()
}

fn hits(db: &Memdb, q: &str) -> Vec<(String, String)> {
    db.sekha()
        .search_text(&TextQuery::new(q))
        .unwrap()
        .into_iter()
        .map(|h| (h.label.clone(), h.message.content.text()))
        .collect()
}

#[test]
fn a_chatgpt_export_keeps_every_branch_and_its_times() {
    let d = tmp();
    let files = tmp();
    let db = Memdb::open(d.path()).unwrap();
    let path = write(files.path(), "conversations.json", CHATGPT);
    let r = db.sekha().import_chat_file(&path, None).unwrap();
    assert_eq!(r.format, ChatFormat::ChatGpt);
    assert_eq!((r.conversations, r.messages, r.skipped), (2, 6, 0));
    assert_eq!(r.skipped_messages, 1, "the hidden empty system message");
    // The import ended with a text commit: nothing waits in the text
    // writer's memory through the embedding drain that follows.
    let text = db.text_index_status();
    assert_eq!(text.committed_lsn, text.store_lsn, "{text:?}");
    let c = db.sekha().get_conversation_with_messages(r.ids[0]).unwrap();
    assert_eq!(c.conversation.label, "Sourdough starter");
    assert_eq!(c.conversation.folder, "/imports/chatgpt");
    assert_eq!(c.conversation.importance_score, 5);
    assert_eq!(
        c.conversation.created_at.timestamp_micros(),
        1_714_557_600_500_000
    );
    assert_eq!(c.conversation.updated_at.timestamp(), 1_714_558_200);
    assert_eq!(
        c.conversation.metadata["export_id"],
        "6632a1f0-1111-4c0e-9a51-0f1f2a3b4c5d"
    );
    // Both answers to the edited question, then the second one's follow-up.
    let texts: Vec<String> = c.messages.iter().map(|m| m.content.text()).collect();
    assert_eq!(
        texts,
        [
            "How often should I feed a rye starter?",
            "Feed it twice a day at room temperature.",
            "Once a day is enough if you keep it in the fridge.",
            "What about this jar?",
            "That jar is fine; leave the lid loose.",
        ]
    );
    let m = &c.messages[2];
    assert_eq!(m.role, "assistant");
    assert_eq!(m.timestamp.timestamp(), 1_714_557_700);
    assert_eq!(m.metadata["source"], "chatgpt");
    assert!(m.metadata["imported_at"].is_string());
    assert_eq!(m.metadata["chatgpt_parent"], "u1");
    assert_eq!(m.metadata["chatgpt_node"], "a2");
    let untitled = db.sekha().get_conversation(r.ids[1]).unwrap();
    assert_eq!(untitled.label, "Untitled ChatGPT Conversation");
    // Both branches are searchable.
    assert_eq!(hits(&db, "twice").len(), 1);
    assert_eq!(hits(&db, "fridge")[0].0, "Sourdough starter");
    assert_eq!(hits(&db, "quokka")[0].0, "Untitled ChatGPT Conversation");
    // A single conversation object (not an array) reads the same way.
    let one: serde_json::Value = serde_json::from_str(CHATGPT).unwrap();
    let single = write(
        files.path(),
        "one.json",
        &serde_json::to_string(&one[1]).unwrap(),
    );
    let r = db.sekha().import_chat_file(&single, None).unwrap();
    assert_eq!((r.format, r.conversations), (ChatFormat::ChatGpt, 1));
}

#[test]
fn claude_markdown_and_text_exports_are_imported_and_searchable() {
    let d = tmp();
    let files = tmp();
    let db = Memdb::open(d.path()).unwrap();
    let cases = [
        (
            "claude.json",
            CLAUDE_JSON,
            ChatFormat::Claude,
            "Tide tables",
            2,
        ),
        (
            "claude.xml",
            CLAUDE_XML,
            ChatFormat::Claude,
            "Knots & hitches",
            2,
        ),
        (
            "garden-notes.md",
            MARKDOWN,
            ChatFormat::Markdown,
            "garden-notes",
            4,
        ),
        ("mongolia.txt", TEXT, ChatFormat::Text, "mongolia", 3),
    ];
    for (name, body, format, label, messages) in cases {
        let path = write(files.path(), name, body);
        let r = db.sekha().import_chat_file(&path, None).unwrap();
        assert_eq!(
            (r.format, r.conversations, r.messages),
            (format, 1, messages),
            "{name}"
        );
        let c = db.sekha().get_conversation_with_messages(r.ids[0]).unwrap();
        assert_eq!(c.conversation.label, label, "{name}");
        assert_eq!(c.conversation.folder, format!("/imports/{format}"));
        assert!(
            c.messages
                .iter()
                .all(|m| m.metadata["source"] == format.as_str())
        );
    }
    let tide = hits(&db, "Brest");
    assert_eq!(tide.len(), 2);
    let c = db
        .sekha()
        .list_conversations(
            &Filter {
                label: Some("Tide tables".into()),
                ..Filter::default()
            },
            Page {
                offset: 0,
                limit: 10,
            },
        )
        .unwrap();
    let c = db
        .sekha()
        .get_conversation_with_messages(c.conversations[0].id)
        .unwrap();
    assert_eq!(
        c.messages[1].timestamp.to_rfc3339(),
        "2024-03-10T08:00:04+00:00"
    );
    assert_eq!(hits(&db, "bollard")[0].0, "Knots & hitches");
    assert!(hits(&db, "cleat")[0].1.contains("<loop>"));
    let garlic = hits(&db, "freezes");
    assert_eq!(
        garlic[0].1,
        "Plant garlic in autumn, about six weeks before the ground freezes.\n\nPoint the tip up."
    );
    assert_eq!(
        hits(&db, "coldest")[0].1,
        "Ulaanbaatar.\nIt is also the coldest capital."
    );
    // A named format is used as given: this text file read as Markdown
    // has no Markdown message lines.
    let e = db
        .sekha()
        .import_chat_file(
            &files.path().join("mongolia.txt"),
            Some(ChatFormat::Markdown),
        )
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("mongolia.txt") && e.contains("no messages found"),
        "{e}"
    );
}

/// One malformed file per format (and a few ways of being malformed):
/// each error names the file and the problem, and nothing is stored.
#[test]
fn malformed_exports_store_nothing_and_say_why() {
    let d = tmp();
    let files = tmp();
    let db = Memdb::open(d.path()).unwrap();
    let long_role = format!(
        r#"{{"conversations": [{{"title": "ok", "messages": [{{"role": "user", "content": "fine"}}]}},
            {{"title": "bad", "messages": [{{"role": "{}", "content": "x"}}]}}]}}"#,
        "r".repeat(40)
    );
    let cases: Vec<(&str, String, &str)> = vec![
        ("truncated.json", CHATGPT[..CHATGPT.len() / 2].to_string(), "not valid JSON"),
        (
            "no-mapping.json",
            r#"[{"title": "a", "mapping": {}}, {"title": "b"}]"#.into(),
            "neither a ChatGPT export",
        ),
        (
            "wrong-type.json",
            r#"[{"title": "a", "mapping": {"n": {"children": "oops"}}}]"#.into(),
            "conversation [0]: invalid type",
        ),
        (
            "cycle.json",
            r#"{"mapping": {"a": {"parent": "b", "children": ["b"]}, "b": {"parent": "a", "children": ["a"]}}}"#.into(),
            "no root node",
        ),
        (
            "bad-time.json",
            r#"{"conversations": [{"title": "t", "messages": [{"role": "user", "content": "x", "timestamp": "yesterday"}]}]}"#.into(),
            "\"yesterday\" is not a time",
        ),
        ("long-role.json", long_role, "conversation 2"),
        (
            "mismatched.xml",
            "<conversation>\n<title>t</title>\n<message><role>user</role><content>hi</message>\n</conversation>".into(),
            "not well-formed XML at line 3",
        ),
        (
            "unclosed.xml",
            "<?xml version=\"1.0\"?>\n<conversation><message><content>hi</content></message>".into(),
            "<conversation> is not closed",
        ),
        ("no-roles.md", "# Notes\n\nJust some notes, no dialogue.\n".into(), "no messages found"),
        ("no-roles.txt", "a shopping list\neggs\nmilk\n".into(), "no messages found"),
        ("empty.txt", String::new(), "no messages found"),
        ("notes.log", "User: hi\n".into(), "unknown export format"),
    ];
    for (name, body, want) in &cases {
        let path = write(files.path(), name, body);
        let e = db.sekha().import_chat_file(&path, None).unwrap_err();
        assert!(
            matches!(e, memdb::Error::InvalidInput { .. }),
            "{name}: {e:?}"
        );
        let msg = e.to_string();
        assert!(
            msg.contains(name),
            "{name}: the error names the file: {msg}"
        );
        assert!(msg.contains(want), "{name}: {msg}");
        assert!(path.exists(), "{name} is left in place");
    }
    assert_eq!(count(&db), 0, "nothing stored from any malformed file");
    assert!(hits(&db, "fine").is_empty());
    // Not UTF-8, and a missing file.
    let bin = files.path().join("binary.json");
    std::fs::write(&bin, [0xff, 0xfe, 0x00, 0x41]).unwrap();
    assert!(
        db.sekha()
            .import_chat_file(&bin, None)
            .unwrap_err()
            .to_string()
            .contains("not UTF-8")
    );
    assert!(matches!(
        db.sekha()
            .import_chat_file(&files.path().join("missing.json"), None),
        Err(memdb::Error::Io { .. })
    ));
    assert!(parse_file(&files.path().join("missing.json"), None).is_err());
    assert_eq!(count(&db), 0);
}

/// One pass over an import folder: the good files are imported and moved
/// to `imported/` as `<YYYYMMDD_HHMMSS>_<name>`, the bad one is left with
/// its error, and is not tried again until it changes.
#[test]
fn an_import_folder_pass_moves_good_files_and_leaves_bad_ones() {
    let d = tmp();
    let inbox = tmp();
    let db = Memdb::open(d.path()).unwrap();
    write(inbox.path(), "chatgpt.json", CHATGPT);
    write(inbox.path(), "tides.json", CLAUDE_JSON);
    write(inbox.path(), "broken.xml", "<conversation><message>");
    write(
        inbox.path(),
        "ignored.csv",
        "User: not an import extension\n",
    );
    // Written "long ago", so the pass does not wait for them to settle.
    let old = std::time::SystemTime::now() - std::time::Duration::from_secs(60);
    for e in std::fs::read_dir(inbox.path()).unwrap() {
        let f = std::fs::File::options()
            .write(true)
            .open(e.unwrap().path())
            .unwrap();
        f.set_modified(old).unwrap();
    }
    let folder = ImportFolder::new(inbox.path());
    folder.create().unwrap();
    let mut memory = PassMemory::default();
    let (outcomes, unsettled) = import_folder(&db, &folder, &mut memory).unwrap();
    assert!(!unsettled);
    assert_eq!(outcomes.len(), 3);
    let mut moved = Vec::new();
    for o in &outcomes {
        match o {
            FileOutcome::Imported {
                moved_to: Some(to),
                move_error: None,
                ..
            } => moved.push(to.clone()),
            FileOutcome::Failed { file, error } => {
                assert!(file.ends_with("broken.xml"));
                assert!(
                    error.contains("broken.xml") && error.contains("not closed"),
                    "{error}"
                );
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(moved.len(), 2);
    for to in &moved {
        assert_eq!(to.parent().unwrap(), inbox.path().join("imported"));
        let name = to.file_name().unwrap().to_string_lossy().into_owned();
        let (stamp, rest) = name.split_at(16);
        assert!(
            stamp.as_bytes()[8] == b'_'
                && stamp.ends_with('_')
                && stamp[..8].bytes().all(|b| b.is_ascii_digit()),
            "{name}"
        );
        assert!(rest == "chatgpt.json" || rest == "tides.json", "{name}");
        assert!(to.is_file());
    }
    assert!(!inbox.path().join("chatgpt.json").exists());
    assert!(inbox.path().join("broken.xml").exists());
    assert!(inbox.path().join("ignored.csv").exists());
    assert_eq!(count(&db), 3);
    // The bad file is not read again while unchanged...
    let (again, _) = import_folder(&db, &folder, &mut memory).unwrap();
    assert!(again.is_empty());
    // ...and is once fixed.
    write(inbox.path(), "broken.xml", CLAUDE_XML);
    let f = std::fs::File::options()
        .write(true)
        .open(inbox.path().join("broken.xml"))
        .unwrap();
    f.set_modified(old).unwrap();
    let (fixed, _) = import_folder(&db, &folder, &mut memory).unwrap();
    assert!(
        matches!(&fixed[..], [FileOutcome::Imported { report, .. }] if report.conversations == 1)
    );
    assert_eq!(count(&db), 4);
    // A file written a moment ago is left to settle.
    write(inbox.path(), "fresh.txt", TEXT);
    let (none, unsettled) = import_folder(&db, &folder, &mut memory).unwrap();
    assert!(none.is_empty() && unsettled);
    // One stamped in the future is read, not waited for forever.
    std::fs::remove_file(inbox.path().join("fresh.txt")).unwrap();
    let future = write(inbox.path(), "future.txt", TEXT);
    let f = std::fs::File::options().write(true).open(&future).unwrap();
    f.set_modified(std::time::SystemTime::now() + std::time::Duration::from_secs(3600))
        .unwrap();
    let (read, unsettled) = import_folder(&db, &folder, &mut memory).unwrap();
    assert!(!unsettled);
    assert!(
        matches!(&read[..], [FileOutcome::Imported { .. }]),
        "{read:?}"
    );
    assert_eq!(count(&db), 5);
}

/// The watcher, polling at one hour: a file already in the folder is
/// imported by the first pass; files dropped in later by change events
/// alone; a good file is moved to the named imported folder, a bad one
/// stays, and its messages are searchable.
#[test]
fn the_import_watcher_imports_new_files_and_leaves_bad_ones() {
    let d = tmp();
    let inbox = tmp();
    let done = tmp();
    let db = Memdb::open(d.path()).unwrap();
    write(inbox.path(), "early.txt", TEXT);
    let outcomes: Arc<Mutex<Vec<FileOutcome>>> = Arc::default();
    let seen = outcomes.clone();
    let folder = ImportFolder {
        dir: inbox.path().to_path_buf(),
        imported_dir: Some(done.path().join("archive")),
        format: None,
    };
    let watcher = ImportWatcher::spawn(
        db.clone(),
        folder,
        std::time::Duration::from_secs(3600),
        Some(Box::new(move |o| seen.lock().unwrap().push(o.clone()))),
    )
    .unwrap();
    let stats = watcher.stats();
    eventually("the early file is imported", || {
        stats.parsed.load(Ordering::Relaxed) == 1
    });
    assert!(
        stats.events.load(Ordering::Acquire),
        "no change events here"
    );
    write(inbox.path(), "knots.xml", CLAUDE_XML);
    write(
        inbox.path(),
        "bad.json",
        "{\"conversations\": [{\"title\": 1}",
    );
    eventually("the dropped files are handled", || {
        stats.parsed.load(Ordering::Relaxed) == 2 && stats.failures.load(Ordering::Relaxed) == 1
    });
    assert!(!inbox.path().join("knots.xml").exists());
    assert!(
        inbox.path().join("bad.json").exists(),
        "a bad file is left in place"
    );
    let archived: Vec<String> = std::fs::read_dir(done.path().join("archive"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(archived.len(), 2);
    assert!(archived.iter().any(|n| n.ends_with("_knots.xml")));
    assert!(archived.iter().any(|n| n.ends_with("_early.txt")));
    assert_eq!(hits(&db, "bollard")[0].0, "Knots & hitches");
    assert_eq!(hits(&db, "Mongolia")[0].0, "early");
    assert_eq!(
        stats.passes.load(Ordering::Acquire),
        1,
        "events did the rest"
    );
    let got = outcomes.lock().unwrap();
    assert!(
        got.iter()
            .any(|o| matches!(o, FileOutcome::Failed { error, .. } if error.contains("bad.json")))
    );
    drop(got);
    drop(watcher);
    assert_eq!(count(&db), 2);
}
