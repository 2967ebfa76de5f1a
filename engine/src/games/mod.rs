//! One module per game.

pub mod uptick;
pub mod ur;
