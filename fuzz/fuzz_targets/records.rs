//! Fuzzes the record and oplog decoders: decoding any bytes never panics,
//! and whatever decodes re-encodes to something that decodes to the same
//! value.

#![no_main]

use libfuzzer_sys::fuzz_target;
use memdb_format::{ConversationRecord, MessageRecord, OplogEntry};

fuzz_target!(|data: &[u8]| {
    if let Ok(c) = ConversationRecord::decode(data) {
        assert_eq!(ConversationRecord::decode(&c.encode()).as_ref(), Ok(&c));
    }
    if let Ok(m) = MessageRecord::decode(data) {
        assert_eq!(MessageRecord::decode(&m.encode()).as_ref(), Ok(&m));
    }
    if let Ok(o) = OplogEntry::decode(data) {
        assert_eq!(OplogEntry::decode(&o.encode()).as_ref(), Ok(&o));
    }
});
