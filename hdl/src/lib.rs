//! spotagg aggregation engine in rust-hdl.
