//! The two channels a listing is sold in: a leaf, so that the money rules (commission by
//! channel) and the listing rules both name it without naming each other.

use crate::wire::wire_names;

/// Where a listing is sold: overstock (`clearance`, commission charged) or pre-loved
/// trade-ins (`exchange`, free, always a single unit).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Channel {
    Clearance,
    Exchange,
}

wire_names!(Channel { Clearance => "clearance", Exchange => "exchange" });

impl Channel {
    /// The channel as people read it (the dashboard's pages).
    pub fn words(self) -> &'static str {
        match self {
            Self::Clearance => "Clearance (overstock)",
            Self::Exchange => "Exchange (trade-in)",
        }
    }
}
