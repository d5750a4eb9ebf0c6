//! Enums with wire names: the one spelling a value has in JSON, in the database and in
//! query strings, declared once per enum with `wire_names!`.

use std::fmt;

/// A name that is none of an enum's wire names (a client's value, or a stored one no code
/// wrote).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownValue(pub String);

impl fmt::Display for UnknownValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unknown value '{}'", self.0)
    }
}

impl std::error::Error for UnknownValue {}

/// `ALL`, `as_str`, `FromStr`, `Display` and `TryFrom<String>` (for decoding a stored
/// column with `#[sqlx(try_from = "String")]`) over the wire names of a fieldless enum.
#[macro_export]
macro_rules! wire_names {
    ($ty:ty { $($variant:ident => $name:literal),+ $(,)? }) => {
        impl $ty {
            /// Every value, in the order of the declaration.
            pub const ALL: &'static [$ty] = &[$(<$ty>::$variant),+];

            /// The name on the wire and in the database.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $(<$ty>::$variant => $name),+
                }
            }
        }

        impl ::std::str::FromStr for $ty {
            type Err = $crate::wire::UnknownValue;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                match s {
                    $($name => Ok(<$ty>::$variant),)+
                    other => Err($crate::wire::UnknownValue(other.to_owned())),
                }
            }
        }

        impl TryFrom<String> for $ty {
            type Error = $crate::wire::UnknownValue;
            fn try_from(s: String) -> Result<Self, Self::Error> {
                s.parse()
            }
        }

        impl ::std::fmt::Display for $ty {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}
pub use crate::wire_names;
