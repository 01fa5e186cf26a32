//! spotagg board definitions (the board issue fills this crate).
