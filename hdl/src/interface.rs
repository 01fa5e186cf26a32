//! One declaration for both ends of a rust-hdl interface.
//!
//! rust-hdl 0.46 wants each end of an interface as its own `#[derive(LogicInterface)]` struct,
//! the same fields with every direction reversed, each naming the other in `#[join]`.
//! [`interface_pair!`] writes both from one field list, so that a port set is written once:
//!
//! ```ignore
//! interface_pair! {
//!     /// The sending end.
//!     pub struct ByteSource join "ByteSink";
//!     /// The taking end.
//!     pub struct ByteSink join "ByteSource";
//!     {
//!         /// Byte valid.
//!         valid: Out Bit,
//!         /// The sink takes the byte.
//!         ready: In Bit,
//!     }
//! }
//! ```
//!
//! The directions are the first end's; the second gets each reversed. Const generics (`<const
//! D: usize>`) go on the first end and apply to both. Interfaces nested in both ends follow in
//! `nested { name: FirstEndType => SecondEndType, }`.

/// `In` for `Out` and `Out` for `In` (the second end's direction of a field).
macro_rules! flip_direction {
    (In) => {
        rust_hdl::prelude::Out
    };
    (Out) => {
        rust_hdl::prelude::In
    };
}

/// Both ends of an interface from one field list (module doc).
macro_rules! interface_pair {
    (
        $(#[$am:meta])* pub struct $a:ident $(<$(const $g:ident : $gt:ty),+>)? join $ajoin:tt;
        $(#[$bm:meta])* pub struct $b:ident join $bjoin:tt;
        { $( $(#[$fm:meta])* $f:ident : $d:ident $t:ty ),+ $(,)? }
        $( nested { $( $(#[$nm:meta])* $n:ident : $na:ty => $nb:ty ),+ $(,)? } )?
    ) => {
        $(#[$am])*
        #[derive(LogicInterface, Default)]
        #[join = $ajoin]
        pub struct $a $(<$(const $g: $gt),+>)? {
            $( $(#[$fm])* pub $f: Signal<$d, $t>, )+
            $( $( $(#[$nm])* pub $n: $na, )+ )?
        }

        $(#[$bm])*
        #[derive(LogicInterface, Default)]
        #[join = $bjoin]
        pub struct $b $(<$(const $g: $gt),+>)? {
            $( $(#[$fm])* pub $f: Signal<flip_direction!($d), $t>, )+
            $( $( $(#[$nm])* pub $n: $nb, )+ )?
        }
    };
}
