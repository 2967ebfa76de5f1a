//! One module per game.

pub mod spartan;
pub mod uptick;
pub mod ur;
