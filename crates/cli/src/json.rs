//! `--json` output that a terminal cannot be tricked by: serde_json escapes only C0 controls, so
//! DEL, C1 controls and the characters [`style::hidden`] names are written as `\uXXXX` too.

use std::io::{self, Write};

use serde::Serialize;
use serde_json::ser::{CompactFormatter, Formatter, PrettyFormatter};

use crate::style;

/// `value` as indented JSON.
pub fn pretty<T: Serialize>(value: &T) -> String {
    to_string(value, PrettyFormatter::new())
}

/// `value` as JSON on one line, for streams of records.
pub fn line<T: Serialize>(value: &T) -> String {
    to_string(value, CompactFormatter)
}

fn to_string<T: Serialize, F: Formatter>(value: &T, formatter: F) -> String {
    let mut out = Vec::new();
    let mut serializer = serde_json::Serializer::with_formatter(&mut out, Escaping(formatter));
    match value.serialize(&mut serializer) {
        // Only escapes and ASCII punctuation are added to valid UTF-8 strings.
        Ok(()) => String::from_utf8(out).unwrap_or_default(),
        Err(e) => {
            serde_json::json!({"error": {"code": "internal", "message": e.to_string()}}).to_string()
        }
    }
}

fn escaped(c: char) -> bool {
    c.is_control() || style::hidden(c)
}

/// Delegates layout to `F`; only string contents are written differently.
struct Escaping<F>(F);

impl<F: Formatter> Formatter for Escaping<F> {
    fn write_string_fragment<W: ?Sized + Write>(
        &mut self,
        writer: &mut W,
        fragment: &str,
    ) -> io::Result<()> {
        let mut start = 0;
        for (i, c) in fragment.char_indices() {
            if escaped(c) {
                writer.write_all(&fragment.as_bytes()[start..i])?;
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    write!(writer, "\\u{unit:04x}")?;
                }
                start = i + c.len_utf8();
            }
        }
        writer.write_all(&fragment.as_bytes()[start..])
    }

    fn begin_array<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.begin_array(w)
    }

    fn end_array<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_array(w)
    }

    fn begin_array_value<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        self.0.begin_array_value(w, first)
    }

    fn end_array_value<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_array_value(w)
    }

    fn begin_object<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.begin_object(w)
    }

    fn end_object<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_object(w)
    }

    fn begin_object_key<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        self.0.begin_object_key(w, first)
    }

    fn begin_object_value<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.begin_object_value(w)
    }

    fn end_object_value<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_object_value(w)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_output_escapes_what_could_hide_or_drive_a_terminal() {
        let hostile = "a\u{1b}[2J\u{7f}\u{85}\u{9b}31m\u{202e}\u{2028}\u{2029}\u{2060}\u{2064}\u{ad}\u{200b}\u{e0041}\u{feff}z é";
        for out in [
            pretty(&serde_json::json!({"k\u{202e}": [hostile]})),
            line(&hostile),
        ] {
            assert!(out.chars().all(|c| c == '\n' || !escaped(c)), "{out:?}");
            assert!(out.contains("\\u001b") && out.contains("\\u009b"));
            assert!(
                out.contains("\\u202e") && out.contains("\\udb40\\udc41"),
                "{out:?}"
            );
            assert!(out.contains("z é"), "ordinary text is kept: {out:?}");
        }
        let back: String = serde_json::from_str(&line(&hostile)).unwrap();
        assert_eq!(back, hostile, "the JSON still means the same string");
        let nested: serde_json::Value =
            serde_json::from_str(&pretty(&serde_json::json!({"k\u{202e}": [hostile]}))).unwrap();
        assert_eq!(nested["k\u{202e}"][0], hostile);
    }
}
