//! A small JSON writer for observations, which the referee writes once per request.
//!
//! The games' observation types derive `Serialize`, and that stays the definition
//! of what a seat sees. Serializing them, though, first builds the structure (a
//! string per cell name, a vector per list) and was most of the referee's own work
//! per decision. [`Game::write_observation`](crate::Game::write_observation) writes
//! the same text straight from the state with these helpers; the conformance suite
//! checks it is byte for byte what serde writes, at every state of every game.

use crate::Square;

/// Writes a JSON object: `{`, then fields, then `}` on [`Object::end`].
#[derive(Debug)]
pub struct Object<'a> {
    out: &'a mut String,
    first: bool,
}

impl<'a> Object<'a> {
    /// Opens an object at the end of `out`.
    pub fn new(out: &'a mut String) -> Object<'a> {
        out.push('{');
        Object { out, first: true }
    }

    /// Starts field `name` (plain ASCII, written as is) and returns the buffer to
    /// write its value into.
    pub fn key(&mut self, name: &str) -> &mut String {
        if !self.first {
            self.out.push(',');
        }
        self.first = false;
        self.out.push('"');
        self.out.push_str(name);
        self.out.push_str("\":");
        self.out
    }

    /// A field holding an integer.
    pub fn int(&mut self, name: &str, value: impl itoa::Integer) -> &mut Self {
        int(self.key(name), value);
        self
    }

    /// A field holding text that needs no escaping (words of the games' notations).
    pub fn word(&mut self, name: &str, value: &str) -> &mut Self {
        word(self.key(name), value);
        self
    }

    /// A field holding a cell name.
    pub fn square(&mut self, name: &str, sq: Square) -> &mut Self {
        square(self.key(name), sq);
        self
    }

    /// A field holding `true` or `false`.
    pub fn bool(&mut self, name: &str, value: bool) -> &mut Self {
        self.key(name).push_str(if value { "true" } else { "false" });
        self
    }

    /// A field holding an integer or `null`.
    pub fn opt_int(&mut self, name: &str, value: Option<impl itoa::Integer>) -> &mut Self {
        match value {
            Some(v) => int(self.key(name), v),
            None => self.key(name).push_str("null"),
        }
        self
    }

    /// A field holding a list of integers.
    pub fn ints<I: itoa::Integer>(&mut self, name: &str, values: impl IntoIterator<Item = I>) -> &mut Self {
        let out = self.key(name);
        array(out, values, |out, v| int(out, v));
        self
    }

    /// Closes the object.
    pub fn end(self) {
        self.out.push('}');
    }
}

/// Writes an integer.
pub fn int(out: &mut String, value: impl itoa::Integer) {
    out.push_str(itoa::Buffer::new().format(value));
}

/// Writes `value` as a JSON string. Only for text that needs no escaping: the words
/// of the games' notations (phases, faces), never free text.
pub fn word(out: &mut String, value: &str) {
    debug_assert!(
        !value.bytes().any(|b| b < 0x20 || b == b'"' || b == b'\\'),
        "a JSON word needs escaping: {value}"
    );
    out.push('"');
    out.push_str(value);
    out.push('"');
}

/// Writes a cell name as a JSON string.
pub fn square(out: &mut String, sq: Square) {
    out.push('"');
    sq.push_to(out);
    out.push('"');
}

/// Writes a JSON array of `items`, each with `each`.
pub fn array<T>(out: &mut String, items: impl IntoIterator<Item = T>, mut each: impl FnMut(&mut String, T)) {
    out.push('[');
    for (i, item) in items.into_iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        each(out, item);
    }
    out.push(']');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Serialize)]
    struct Sample {
        seat: usize,
        cells: Vec<String>,
        pips: Vec<i64>,
        phase: &'static str,
        face: char,
        sun: Option<String>,
        none: Option<String>,
        yes: bool,
        no: bool,
        some: Option<u8>,
        nothing: Option<u8>,
    }

    #[test]
    fn writes_what_serde_writes() {
        let sample = Sample {
            seat: 2,
            cells: vec!["a1".into(), "h12".into()],
            pips: vec![-3, 0, i64::MAX],
            phase: "block",
            face: 'N',
            sun: Some("c3".into()),
            none: None,
            yes: true,
            no: false,
            some: Some(7),
            nothing: None,
        };
        let mut out = String::from("x");
        let mut o = Object::new(&mut out);
        o.int("seat", 2usize);
        array(o.key("cells"), ["a1", "h12"], word);
        o.ints("pips", [-3i64, 0, i64::MAX])
            .word("phase", "block")
            .word("face", "N");
        o.word("sun", "c3");
        o.key("none").push_str("null");
        o.bool("yes", true).bool("no", false);
        o.opt_int("some", Some(7u8)).opt_int("nothing", None::<u8>);
        o.end();
        assert_eq!(out, format!("x{}", serde_json::to_string(&sample).unwrap()));
    }

    #[test]
    fn empty_object_and_array() {
        let mut out = String::new();
        Object::new(&mut out).end();
        array(&mut out, Vec::<u8>::new(), int);
        assert_eq!(out, "{}[]");
    }
}
