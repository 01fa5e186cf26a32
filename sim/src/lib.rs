//! spotagg reference switch and simulation harnesses.
