//! The protobuf wire format, as far as [`super::int8`] needs it to edit an
//! ONNX model: split a message into its fields (kept as byte slices, so a
//! field that is not edited is copied exactly), and write varint, string,
//! bytes and nested-message fields. No schema: callers name field numbers.
//!
//! Strict: a truncated varint or length, a length past the end, or a wire
//! type this reader does not know (the deprecated groups) is an error.

/// A field's value on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Value<'a> {
    /// Wire type 0.
    Varint(u64),
    /// Wire type 1 (8 bytes) or 5 (4 bytes), little-endian, as read.
    Fixed(&'a [u8]),
    /// Wire type 2: a string, bytes, a nested message or a packed array.
    Bytes(&'a [u8]),
}

/// One field of a message.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Field<'a> {
    /// The field number.
    pub number: u32,
    /// Its value.
    pub value: Value<'a>,
    /// The whole field as encoded (tag included), for a verbatim copy.
    pub raw: &'a [u8],
}

impl<'a> Field<'a> {
    /// The value of a length-delimited field.
    pub fn bytes(&self) -> Option<&'a [u8]> {
        match self.value {
            Value::Bytes(b) => Some(b),
            _ => None,
        }
    }

    /// The value of a length-delimited field read as UTF-8.
    pub fn str(&self) -> Option<&'a str> {
        self.bytes().and_then(|b| std::str::from_utf8(b).ok())
    }

    /// The value of a varint field.
    pub fn varint(&self) -> Option<u64> {
        match self.value {
            Value::Varint(v) => Some(v),
            _ => None,
        }
    }
}

/// Reads one varint at `*pos`, moving `pos` past it.
pub(crate) fn read_varint(buf: &[u8], pos: &mut usize) -> Result<u64, String> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let b = *buf
            .get(*pos)
            .ok_or_else(|| format!("a varint is cut short at byte {pos}"))?;
        *pos += 1;
        v |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return Ok(v);
        }
    }
    Err(format!("a varint runs past 10 bytes at byte {pos}"))
}

/// The fields of a message, in order.
pub(crate) fn fields(buf: &[u8]) -> Result<Vec<Field<'_>>, String> {
    let mut out = Vec::new();
    let mut pos = 0;
    while pos < buf.len() {
        let start = pos;
        let tag = read_varint(buf, &mut pos)?;
        let number = u32::try_from(tag >> 3)
            .ok()
            .filter(|&n| n > 0)
            .ok_or_else(|| format!("field number {} at byte {start}", tag >> 3))?;
        let take = |pos: &mut usize, n: usize| -> Result<&[u8], String> {
            let end = pos
                .checked_add(n)
                .filter(|&e| e <= buf.len())
                .ok_or_else(|| format!("field {number} at byte {start} runs past the end"))?;
            let s = &buf[*pos..end];
            *pos = end;
            Ok(s)
        };
        let value = match tag & 7 {
            0 => Value::Varint(read_varint(buf, &mut pos)?),
            1 => Value::Fixed(take(&mut pos, 8)?),
            2 => {
                let len = read_varint(buf, &mut pos)?;
                let len = usize::try_from(len).map_err(|_| format!("length {len} too large"))?;
                Value::Bytes(take(&mut pos, len)?)
            }
            5 => Value::Fixed(take(&mut pos, 4)?),
            w => return Err(format!("field {number} at byte {start} has wire type {w}")),
        };
        out.push(Field {
            number,
            value,
            raw: &buf[start..pos],
        });
    }
    Ok(out)
}

/// Appends `v` as a varint (no field tag).
pub(crate) fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8 & 0x7f) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Appends a varint field.
pub(crate) fn put_uint(out: &mut Vec<u8>, number: u32, v: u64) {
    put_varint(out, u64::from(number) << 3);
    put_varint(out, v);
}

/// Appends a length-delimited field (a string, bytes or a nested message).
pub(crate) fn put_bytes(out: &mut Vec<u8>, number: u32, bytes: &[u8]) {
    put_varint(out, (u64::from(number) << 3) | 2);
    put_varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_round_trip_and_keep_their_bytes() {
        let mut m = Vec::new();
        put_uint(&mut m, 1, 300);
        put_bytes(&mut m, 2, b"name");
        put_uint(&mut m, 20, 7);
        m.extend_from_slice(&[0x1d, 1, 2, 3, 4]); // field 3, fixed32
        let f = fields(&m).unwrap();
        assert_eq!(f.len(), 4);
        assert_eq!((f[0].number, f[0].varint()), (1, Some(300)));
        assert_eq!((f[1].number, f[1].str()), (2, Some("name")));
        assert_eq!((f[2].number, f[2].varint()), (20, Some(7)));
        assert_eq!(f[3].value, Value::Fixed(&[1, 2, 3, 4]));
        let copied: Vec<u8> = f.iter().flat_map(|x| x.raw.iter().copied()).collect();
        assert_eq!(copied, m);
    }

    #[test]
    fn malformed_messages_are_errors() {
        let long_varint: Vec<u8> = std::iter::once(0x08).chain([0xff; 11]).collect();
        for bad in [
            &[0x0a, 5, b'a'][..], // length past the end
            &[0x08, 0x80][..],    // varint cut short
            &[0x0b][..],          // wire type 3 (group)
            &[0x00, 1][..],       // field number 0
            &[0x09, 1, 2, 3][..], // fixed64 cut short
            &long_varint[..],     // varint too long
        ] {
            assert!(fields(bad).is_err(), "{bad:?}");
        }
    }
}
