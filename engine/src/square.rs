//! Cells named like chess squares: file letter from `a`, then rank from `1`.

use std::fmt;

/// A cell of a rectangular board: file (`a` = 0) and rank (`1` = 0).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Square {
    /// Column from 0 (`a`).
    pub file: u8,
    /// Row from 0 (`1`).
    pub rank: u8,
}

impl fmt::Display for Square {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut out = String::with_capacity(4);
        self.push_to(&mut out);
        f.write_str(&out)
    }
}

impl Square {
    /// Appends the name (`d4`) to `out`, without the formatting machinery: move
    /// lists and observations write hundreds of squares per request.
    pub fn push_to(self, out: &mut String) {
        let mut name = [0u8; 3];
        let len = self.put_ascii(&mut name, 0);
        for &b in &name[..len] {
            out.push(char::from(b));
        }
    }

    /// Writes the name into `buf` at `at` and returns where it ends, for writers
    /// that build ASCII text a byte at a time (see
    /// [`Game::write_move_list`](crate::Game::write_move_list)).
    ///
    /// # Panics
    /// If `buf` has fewer than three bytes from `at`.
    pub fn put_ascii(self, buf: &mut [u8], at: usize) -> usize {
        let rank = self.rank + 1;
        buf[at] = b'a' + self.file;
        if rank >= 10 {
            buf[at + 1] = b'0' + rank / 10;
            buf[at + 2] = b'0' + rank % 10;
            at + 3
        } else {
            buf[at + 1] = b'0' + rank;
            at + 2
        }
    }

    /// The square of a cell index on a board `width` files wide.
    pub fn from_index(width: usize, cell: usize) -> Square {
        Square {
            file: (cell % width) as u8,
            rank: (cell / width) as u8,
        }
    }

    /// The cell index on a `width` × `height` board, if the square is on it.
    pub fn index(self, width: usize, height: usize) -> Option<usize> {
        let (f, r) = (usize::from(self.file), usize::from(self.rank));
        (f < width && r < height).then_some(r * width + f)
    }

    /// Reads `d4`-style text for a `width` × `height` board; `None` if it is not a
    /// cell of that board.
    pub fn parse(text: &str, width: usize, height: usize) -> Option<Square> {
        let mut chars = text.chars();
        let file = chars.next().filter(char::is_ascii_lowercase)? as usize - usize::from(b'a');
        let rank: usize = crate::notation::parse_natural(chars.as_str()).ok()?;
        (file < width && (1..=height).contains(&rank)).then(|| Square {
            file: file as u8,
            rank: (rank - 1) as u8,
        })
    }

    /// The last cell's name of a board, for error messages (`h8`).
    pub fn last(width: usize, height: usize) -> Square {
        Square {
            file: (width - 1) as u8,
            rank: (height - 1) as u8,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for (w, h) in [(8, 8), (26, 30), (3, 12)] {
            for cell in 0..w * h {
                let sq = Square::from_index(w, cell);
                assert_eq!(Square::parse(&sq.to_string(), w, h), Some(sq));
                assert_eq!(sq.index(w, h), Some(cell));
            }
        }
        assert_eq!(Square::parse("i1", 8, 8), None);
        assert_eq!(Square::parse("a9", 8, 8), None);
        assert_eq!(Square::parse("a0", 8, 8), None);
        assert_eq!(Square::parse("A1", 8, 8), None);
    }
}
