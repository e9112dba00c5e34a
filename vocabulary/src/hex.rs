//! Bytes as lowercase hexadecimal: how a digest is written where people
//! read it (a scenario set's version in reports, the install inputs an
//! adapter's marker was built from).

/// `bytes` as two lowercase hex digits each.
pub fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut text = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        text.push(DIGITS[usize::from(b >> 4)] as char);
        text.push(DIGITS[usize::from(b & 0x0f)] as char);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::hex;

    #[test]
    fn two_lowercase_digits_per_byte() {
        assert_eq!(hex(&[]), "");
        assert_eq!(hex(&[0x00, 0x0f, 0xa5, 0xff]), "000fa5ff");
    }
}
