//! One module per game.

pub mod cuatto;
pub mod spartan;
pub mod uptick;
pub mod ur;
pub mod utara;
