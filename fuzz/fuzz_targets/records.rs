//! Fuzzes the record (conversation, message, generic item) and oplog decoders: decoding any bytes never panics,
//! and whatever decodes re-encodes to something that decodes to the same
//! value.

#![no_main]

use libfuzzer_sys::fuzz_target;
use memdb_format::{ConversationRecord, ItemRecord, MessageRecord, OplogEntry};

fuzz_target!(|data: &[u8]| {
    if let Ok(c) = ConversationRecord::decode(data) {
        assert_eq!(ConversationRecord::decode(&c.encode()).as_ref(), Ok(&c));
    }
    if let Ok(m) = MessageRecord::decode(data) {
        assert_eq!(MessageRecord::decode(&m.encode()).as_ref(), Ok(&m));
    }
    // Generic records hold an f32 (NaN != NaN): compare the bytes.
    if let Ok(r) = ItemRecord::decode(data) {
        let bytes = r.encode();
        assert_eq!(ItemRecord::decode(&bytes).map(|x| x.encode()), Ok(bytes));
    }
    if let Ok(o) = OplogEntry::decode(data) {
        assert_eq!(OplogEntry::decode(&o.encode()).as_ref(), Ok(&o));
    }
});
